"""What every id form does: the one description that ids, decoding, keys, queries and typed ids use.

An id form is a fixed-width layout of an id's body (the part after an optional prefix such as
``user:``), a frozen dataclass subclassing :class:`IdForm` that makes ids (:meth:`~IdForm.new`,
:meth:`~IdForm.compose`), reads them strictly (:meth:`~IdForm.try_read`, which builds no
error, and :meth:`~IdForm.refusal`, the message of one it refuses, make :meth:`~IdForm.read`),
writes the key of a time (:meth:`~IdForm.key`, all :mod:`couchids.core.keys` needs) and the
regex of a body (:meth:`~IdForm.body_pattern`, the filter of query rows). Times in the key
arithmetic count :attr:`~IdForm.unit_ms` milliseconds.
"""

from __future__ import annotations

import dataclasses
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Final, Literal, Self, TypeAlias

from couchids.errors import InvalidArgumentError, InvalidIdError
from couchids.idforms.constants import MS_PER_SECOND, SEPARATORS, TYPE_SEPARATOR, US_PER_MS
from couchids.idforms.doctypes import scope_prefix
from couchids.idforms.times import TimeLike

__all__ = ["NOT_READ", "IdForm", "NotRead", "ReadAttempt", "at_most_pattern"]


class NotRead(Enum):
    """The type of :data:`NOT_READ` (an enum of one member, so type checkers know it)."""

    NOT_READ = "not read"

    def __repr__(self) -> str:
        return "couchids.idforms.idform.NOT_READ"


#: What :meth:`IdForm.try_read` answers for a body that is not of the form.
NOT_READ: Final = NotRead.NOT_READ
#: What :meth:`IdForm.try_read` answers: microseconds, ``None`` (no time) or :data:`NOT_READ`.
ReadAttempt: TypeAlias = "int | Literal[NotRead.NOT_READ] | None"


def at_most_pattern(bound: str, alphabet: str) -> str:
    """A regex for the strings of ``len(bound)`` characters of ``alphabet`` (in byte order)
    that are at most ``bound``.

    >>> re.fullmatch(at_most_pattern("19", "0123456789"), "20") is None
    True
    """
    any_char = f"[{re.escape(alphabet)}]"
    alternatives = [re.escape(bound)]
    for i, char in enumerate(bound):
        smaller = alphabet[: alphabet.index(char)]
        if smaller:
            rest = len(bound) - i - 1
            alternatives.append(f"{re.escape(bound[:i])}[{re.escape(smaller)}]{any_char}{{{rest}}}")
    return "(?:" + "|".join(alternatives) + ")"


@dataclass(frozen=True)
class IdForm(ABC):
    """One id layout: makes ids, reads them strictly, and writes the key of a time.

    Forms are frozen dataclasses, compared and hashed by value. ``IdForm(...)`` itself builds
    a kuuid-family form (``IdForm(reverse=True)`` is :data:`couchids.KUUID_REVERSE`).

    >>> from couchids import TID62
    >>> TID62.length, TID62.unit_ms
    (17, 1000)
    >>> TID62.with_separator("-").new("2025-01-01", type="user")[:5]
    'user-'
    """

    #: What goes between a type and the id: ``:`` (``user:<id>``), ``-`` or ``_``.
    separator: str = field(default=TYPE_SEPARATOR, kw_only=True)

    @property
    def kind(self) -> str:
        """A short name of the layout, such as ``"kuuid"``, ``"tid62"`` or ``"ulid"``."""
        return ""

    @property
    def reverse(self) -> bool:
        """Newest-first ids: later times have smaller keys."""
        return False

    @property
    def has_time(self) -> bool:
        """Whether the ids hold a time at all."""
        return True

    @property
    def structured(self) -> bool:
        """Whether a string fits the form only by chance (UUID version and variant bits):
        :func:`couchids.decode` prefers its reading to looser ones."""
        return False

    @property
    def loose(self) -> bool:
        """Whether nearly every string of the form's alphabet is an id of it with some time
        (CouchDB's hex ``utc_random``)."""
        return False

    @property
    def sortable(self) -> bool:
        """Whether ids sort by time in ``_all_docs`` byte order, so a time query is a range."""
        return self.has_time

    #: What ``IdForm(...)`` builds: the family declared with ``default=True``.
    _default_family: ClassVar[type[IdForm]]

    def __init_subclass__(cls, *, default: bool = False, **kwargs: Any) -> None:
        """``class KuuidForm(IdForm, default=True)`` makes ``IdForm(...)`` build that family."""
        super().__init_subclass__(**kwargs)
        if default:
            IdForm._default_family = cls

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is IdForm:
            return IdForm._default_family(*args, **kwargs)
        return super().__new__(cls)

    def __post_init__(self) -> None:
        if self.separator not in SEPARATORS:
            raise InvalidArgumentError(
                f"separator={self.separator!r}: a type and an id are joined by one of "
                f"{', '.join(map(repr, SEPARATORS))}"
            )

    def with_separator(self, separator: str) -> Self:
        """This form with ids written ``<type><separator><id>``.

        Raises:
            InvalidArgumentError: ``separator`` is not ``:``, ``-`` or ``_``.

        >>> from couchids import BASE36_V7
        >>> BASE36_V7.with_separator("_").separator
        '_'
        """
        return dataclasses.replace(self, separator=separator)

    @property
    @abstractmethod
    def length(self) -> int:
        """The length of an id of this form, without a type."""

    @property
    def unit_ms(self) -> int:
        """The milliseconds one step of :meth:`key` counts (1000 or 1)."""
        return 1

    @property
    def precision_us(self) -> int:
        """The precision of the time in an id, in microseconds."""
        return self.unit_ms * US_PER_MS

    @property
    def millisecond(self) -> bool:
        """Whether the time is finer than seconds."""
        return self.precision_us < MS_PER_SECOND * US_PER_MS

    @property
    def min_unit(self) -> int:
        """The earliest time a key range of this form reaches, in units of :attr:`unit_ms`."""
        return 0

    @property
    @abstractmethod
    def max_unit(self) -> int:
        """The latest time an id of this form can hold, in units of :attr:`unit_ms`."""

    @abstractmethod
    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        """Make an id of this form for ``timestamp`` (default now), after ``type`` and the
        separator when a type is given."""

    @property
    def random_bits(self) -> int:
        """How many random bits an id of this form holds beside its time."""
        return 0

    def compose(self, us: int, random: int) -> str:
        """The body of the id made at ``us`` (microseconds since 1970, kept at the form's
        precision) whose random part is ``random`` (below ``2**random_bits``): what
        :meth:`new` and :func:`couchids.idforms.keyed.keyed_id` write.

        Raises:
            InvalidArgumentError: the form makes no ids from a time (it holds none).
            InvalidTimeError: ``us`` is outside the times the form holds.

        >>> from couchids import TID62
        >>> TID62.compose(1767096000_000000, 0)
        '04XVaYIDfO3SmYAds'
        """
        raise InvalidArgumentError(f"{self} ids hold no time, so none is made from one")

    @abstractmethod
    def key(self, unit: int) -> str:
        """The text every id made at time ``unit`` sorts at or above, and every id made
        before it below (reverse forms: the other way round)."""

    def key_fits(self, unit: int) -> bool:
        """Whether :meth:`key` can write ``unit`` in the width of this form."""
        return self.min_unit <= unit <= self.max_unit

    @abstractmethod
    def body_pattern(self) -> str:
        """A regex (text) for the body of an id of this form."""

    def read(self, body: str) -> int | None:
        """Check that ``body`` (an id without its type) is of this form; return the time it
        holds in microseconds since 1970, or ``None`` if it holds none.

        Raises:
            InvalidIdError: ``body`` is not an id of this form; the message says why.
        """
        us = self.try_read(body) if isinstance(body, str) else NOT_READ
        if us is NOT_READ:
            raise InvalidIdError(self.refusal(body))
        return us

    @abstractmethod
    def try_read(self, body: str) -> ReadAttempt:
        """What :meth:`read` returns for ``body``, or :data:`NOT_READ` where it raises: for
        :func:`couchids.decode`, which tries many forms without building an error."""

    def refusal(self, body: str) -> str:
        """The message of the error :meth:`read` raises for ``body``, a string it refuses
        (which :func:`couchids.decode` quotes).

        Raises:
            ValueError: ``read`` accepts ``body``.
        """
        if not isinstance(body, str):
            return f"{body!r} is not an id: ids are strings"
        if len(body) != self.length:
            return str(self.wrong_length(body))
        why = self._why(body)
        if why is None:
            raise ValueError(f"{body!r} is a {self} id: read refuses nothing")
        return why

    @abstractmethod
    def _why(self, body: str) -> str | None:
        """Why :meth:`try_read` refuses ``body`` (of the form's length); ``None`` if it reads it."""

    def id_pattern(self, prefix: str = "") -> re.Pattern[str]:
        """A regex whose ``fullmatch`` accepts ``prefix`` followed by an id of this form."""
        return re.compile(re.escape(prefix) + self.body_pattern())

    def matcher(self, prefix: str = "") -> Callable[[str], bool]:
        """Whether a whole id is ``prefix`` followed by an id of this form: the filter of
        query rows."""
        pattern = self.id_pattern(prefix).fullmatch
        return lambda doc_id: pattern(doc_id) is not None

    def parse(self, body: str) -> int:
        """Check ``body`` as :meth:`IdForm.read` does; return its time in ms (rounded down).

        Raises:
            InvalidIdError: ``body`` is not of this form, or the form holds no time.
        """
        us = self.read(body)
        if us is None:
            raise InvalidIdError(f"{body!r} is a {self} id, which holds no time")
        return us // US_PER_MS

    def type_prefix(self, doc_type: str | None) -> str:
        """The text an id of ``doc_type`` starts with: ``type + separator``, or ``""``.

        Raises:
            InvalidTypeError: ``doc_type`` breaks the type rule.
        """
        return scope_prefix(doc_type, self.separator)

    def __str__(self) -> str:
        return self.kind

    def wrong_length(self, body: str) -> InvalidIdError:
        """The error for a body of the wrong length."""
        return InvalidIdError(f"{body!r} has {len(body)} characters; a {self} id has {self.length}")
