"""seq10 / seq36: zero-padded ordinals (the SimpleDB id specification).

10 decimal digits or 7 lower-case base36 characters, so ids sort by ordinal; they hold no
time. This is the pure part (``form.encode(n)``, ``form.ordinal(body)``) that an allocator
keeping its counter in the database (:meth:`couchids.Database.sequence`) builds on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from couchids.errors import InvalidArgumentError
from couchids.idforms import radix
from couchids.idforms.constants import BASE36_ALPHABET, SEQ10_LEN, SEQ36_LEN
from couchids.idforms.idform import NOT_READ, IdForm, ReadAttempt
from couchids.idforms.times import TimeLike

__all__ = ["SEQ10", "SEQ36", "SeqForm"]

_DIGITS = "0123456789"


@dataclass(frozen=True)
class SeqForm(IdForm):
    """Ordinals in a fixed width: ``base=10`` (seq10) or ``base=36`` (seq36).

    >>> SEQ10.encode(42), SEQ36.encode(42), SEQ36.ordinal("0000016")
    ('0000000042', '0000016', 42)
    """

    base: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.base not in (10, 36) or isinstance(self.base, bool):
            raise InvalidArgumentError(f"base={self.base!r}: seq ids are base 10 or 36")

    @property
    def kind(self) -> str:
        return f"seq{self.base}"

    has_time = False

    @property
    def alphabet(self) -> str:
        """The characters of a body, in byte order."""
        return _DIGITS if self.base == 10 else BASE36_ALPHABET

    @property
    def length(self) -> int:
        return SEQ10_LEN if self.base == 10 else SEQ36_LEN

    @property
    def max_ordinal(self) -> int:
        """The largest ordinal the width holds."""
        return int(self.base**self.length) - 1

    max_unit = -1

    def encode(self, ordinal: int) -> str:
        """The body of ordinal ``ordinal``: zero-padded to the form's width.

        Raises:
            InvalidArgumentError: not an int from 0 to :attr:`max_ordinal`.
        """
        if (
            isinstance(ordinal, bool)
            or not isinstance(ordinal, int)
            or not 0 <= ordinal <= self.max_ordinal
        ):
            raise InvalidArgumentError(
                f"{ordinal!r}: a {self} ordinal is an int from 0 to {self.max_ordinal}"
            )
        return radix.encode(ordinal, self.length, self.alphabet)

    def ordinal(self, body: str) -> int:
        """The ordinal a body holds, checked as :meth:`read` does."""
        self.read(body)
        return radix.decode(body, self.alphabet)

    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        raise InvalidArgumentError(
            f"{self} ids are ordinals that need a counter: write one with "
            f"{self.kind.upper()}.encode(n), or take it from an allocator that keeps the "
            "counter in the database"
        )

    def key(self, unit: int) -> str:
        raise InvalidArgumentError(f"{self} ids hold no time, so no time has a key")

    def body_pattern(self) -> str:
        return f"[0-9]{{{SEQ10_LEN}}}" if self.base == 10 else f"[0-9a-z]{{{SEQ36_LEN}}}"

    def try_read(self, body: str) -> ReadAttempt:
        """``None`` (an ordinal holds no time) for a body of the form, else ``NOT_READ``."""
        return None if re.fullmatch(self.body_pattern(), body) else NOT_READ

    def _why(self, body: str) -> str | None:
        if re.fullmatch(self.body_pattern(), body):
            return None
        what = "decimal digits" if self.base == 10 else "lower-case base36 characters (0-9, a-z)"
        return f"{body!r} is not a {self} id: {self.length} {what}"


#: Ordinals as 10 decimal digits (see :meth:`couchids.Database.sequence`).
#:
#: >>> couchids.SEQ10.encode(42), couchids.SEQ10.ordinal("0000000042")
#: ('0000000042', 42)
SEQ10 = SeqForm(10)
#: Ordinals as 7 lower-case base36 characters.
#:
#: >>> couchids.SEQ36.encode(42), couchids.SEQ36.ordinal("0000016")
#: ('0000016', 42)
SEQ36 = SeqForm(36)
