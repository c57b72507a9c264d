"""kuuid's layouts (:class:`KuuidForm`: kuuid in its modes, and kuuid 3's UUIDv7 forms), and
every preset of every form module: :data:`ALL_FORMS` (what :func:`couchids.decode` tries) and
``NAMED_FORMS`` (what the command line's ``--form`` takes)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from couchids.errors import InvalidArgumentError
from couchids.idforms import kuuid, v7
from couchids.idforms.base36 import BASE36_V7, BASE36_V7_UNPADDED
from couchids.idforms.base62 import decode_prefix, encode, encode_prefix
from couchids.idforms.constants import (
    ALPHABET,
    BLOCK_BITS,
    BLOCK_LEN,
    DEFAULT_BLOCKS,
    HEX_DIGITS,
    KUUID_MS_RANGE_FROM_MS,
    MAX_BLOCK,
    MAX_BLOCKS,
    MAX_PREFIX_VALUE,
    MIN_BLOCKS,
    MS_PER_SECOND,
    PREFIX_LEN,
    SHORT_BLOCKS,
    US_PER_MS,
    V7_HEX_LEN,
    V7_LEN,
    V7_RANDOM_BITS,
    V7_TIME_BITS,
)
from couchids.idforms.couchid import COUCH_RANDOM, UTC_RANDOM, UtcIdForm
from couchids.idforms.idform import NOT_READ, IdForm, NotRead, at_most_pattern
from couchids.idforms.seq import SEQ10, SEQ36
from couchids.idforms.tid62 import TID62
from couchids.idforms.times import MAX_MS, TimeLike
from couchids.idforms.ulid import ULID
from couchids.idforms.uuid464 import UUID464

__all__ = [
    "ALL_FORMS",
    "KUUID_FORMS",
    "NAMED_FORMS",
    "IdForm",
    "KuuidForm",
    "UtcIdForm",
    "form_named",
]

Kind = Literal["kuuid", "v7", "v7s"]
KINDS: tuple[Kind, ...] = ("kuuid", "v7", "v7s")

_V7S_TEXT = r"[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}"
_V7_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
_V7S = re.compile(_V7S_TEXT)
_B62 = "[0-9A-Za-z]"
#: Bodies of hex digits only, of base62 characters only (for the messages of refusals).
_HEX = re.compile(f"[{HEX_DIGITS}]+")
_BASE62 = re.compile(f"{_B62}+")


#: A random block: 6 base62 characters holding at most ``2**32 - 1``.
_BLOCK = at_most_pattern(MAX_BLOCK, ALPHABET)


@dataclass(frozen=True)
class KuuidForm(IdForm, default=True):
    """The layouts of the kuuid package: kuuid ids in their modes, and kuuid 3's UUIDv7s.

    Args:
        kind: ``"kuuid"`` (8 base62 characters of time, then random blocks), ``"v7"`` (a
            hyphenated UUIDv7) or ``"v7s"`` (a UUIDv7 as 32 hex characters).
        reverse: kuuid only: newest-first ids.
        millisecond: kuuid only: millisecond precision (UUIDv7 forms always have it).
        random: kuuid only: the number of random blocks, 1-4 (2 for kuuid's short ids).

    >>> KuuidForm(reverse=True) == IdForm(reverse=True) == KUUID_REVERSE
    True
    >>> V7S.millisecond
    True
    """

    kind: Kind = "kuuid"
    reverse: bool = False
    millisecond: bool = False
    random: int = DEFAULT_BLOCKS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in KINDS:
            raise InvalidArgumentError(
                f"kind={self.kind!r}: a kuuid form is one of {KINDS}; other layouts have "
                "presets of their own (couchids.TID62, couchids.ULID, ...)"
            )
        for name in ("reverse", "millisecond"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidArgumentError(f"{name}={getattr(self, name)!r}: must be True or False")
        kuuid.check_blocks(self.random)
        if self.kind != "kuuid":
            if self.reverse or self.random != DEFAULT_BLOCKS:
                raise InvalidArgumentError(
                    f"{self.kind} ids have no reverse mode and no random blocks to choose"
                )
            object.__setattr__(self, "millisecond", True)
        object.__setattr__(self, "_name", self._make_name())  # messages name forms often

    def __str__(self) -> str:
        name: str = self.__dict__["_name"]
        return name

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        """:meth:`body_pattern`, compiled at first use."""
        return re.compile(self.body_pattern())

    def _make_name(self) -> str:
        if self.kind != "kuuid":
            return self.kind
        parts = ["kuuid"]
        if self.random == SHORT_BLOCKS:
            parts.append("short")
        elif self.random != DEFAULT_BLOCKS:
            parts.append(f"random{self.random}")
        if self.millisecond:
            parts.append("ms")
        if self.reverse:
            parts.append("reverse")
        return "-".join(parts)

    @property
    def structured(self) -> bool:
        return self.kind != "kuuid"

    @property
    def length(self) -> int:
        if self.kind == "v7":
            return V7_LEN
        if self.kind == "v7s":
            return V7_HEX_LEN
        return PREFIX_LEN + self.random * BLOCK_LEN

    @property
    def unit_ms(self) -> int:
        return 1 if self.millisecond else MS_PER_SECOND

    @property
    def min_unit(self) -> int:
        """1970, but 1980 for millisecond kuuid ids: an id of the second modes reads as a
        millisecond time before 1978-01-12, so their key ranges start in 1980 (their ids of
        before are still made and read)."""
        return KUUID_MS_RANGE_FROM_MS if self.kind == "kuuid" and self.millisecond else 0

    @property
    def max_unit(self) -> int:
        if self.kind == "kuuid" and self.millisecond:
            return MAX_PREFIX_VALUE
        return MAX_MS // self.unit_ms

    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        """Make an id of this form (see :func:`couchids.id` and :func:`couchids.kuuid.v7`)."""
        if self.kind == "v7":
            body = v7.v7(timestamp)
        elif self.kind == "v7s":
            body = v7.v7s(timestamp)
        else:
            body = kuuid.id(
                timestamp, random=self.random, reverse=self.reverse, millisecond=self.millisecond
            )
        return body if type is None else self.type_prefix(type) + body

    @property
    def random_bits(self) -> int:
        return V7_RANDOM_BITS if self.kind != "kuuid" else BLOCK_BITS * self.random

    def compose(self, us: int, random: int) -> str:
        """The id made at ``us`` with random part ``random``: a UUIDv7's 74 bits, or kuuid's
        blocks, 32 bits each from the top (as :meth:`new` writes them, from a pool)."""
        ms = us // US_PER_MS
        if self.kind != "kuuid":
            return v7.v7_hex(ms, random, hyphenated=self.kind == "v7")
        head = encode_prefix(
            kuuid.prefix_value(ms, reverse=self.reverse, millisecond=self.millisecond)
        )
        mask = (1 << BLOCK_BITS) - 1
        return head + "".join(
            encode((random >> (BLOCK_BITS * (self.random - 1 - i))) & mask, BLOCK_LEN)
            for i in range(self.random)
        )

    def key(self, unit: int) -> str:
        """The sortable text at the start of every id made at time ``unit`` (for reverse
        kuuid ids it falls as time rises)."""
        if self.kind == "kuuid":
            return encode_prefix(MAX_PREFIX_VALUE - unit if self.reverse else unit)
        text = f"{unit:012x}"
        return text if self.kind == "v7s" else f"{text[:8]}-{text[8:]}"

    def key_fits(self, unit: int) -> bool:
        if self.kind == "kuuid":
            return 0 <= (MAX_PREFIX_VALUE - unit if self.reverse else unit) <= MAX_PREFIX_VALUE
        return 0 <= unit < 1 << V7_TIME_BITS

    def body_pattern(self) -> str:
        """The regex of a body; it checks everything :meth:`~couchids.IdForm.read` does but
        the 9999-12-31 limit of UUIDv7 times, which the key range of a query already keeps to."""
        if self.kind == "v7":
            body = _V7_TEXT
        elif self.kind == "v7s":
            body = _V7S_TEXT
        else:
            # About 1 in 100 strings of 32 hex digits fits the 4-block kuuid pattern, while a
            # kuuid id is 32 lower-case hex digits with odds near 1e-14: such a string is a
            # hex form's.
            not_hex = rf"(?![0-9a-f]{{{V7_HEX_LEN}}}\Z)" if self.length == V7_HEX_LEN else ""
            body = f"{not_hex}{_B62}{{{PREFIX_LEN}}}{_BLOCK}{{{self.random}}}"
        return body

    def try_read(self, body: str) -> int | NotRead:
        """What :meth:`~couchids.IdForm.read` returns, without building an error. Refused: a
        wrong length or alphabet, a kuuid block above ``2**32 - 1``, a wrong UUID version or
        variant, a time past 9999-12-31, or 32 lower-case hex digits (another form's) for
        4-block kuuid forms."""
        if self.kind == "kuuid":
            return self.time_of_prefix(self.read_prefix(body))
        if self._pattern.fullmatch(body) is None:
            return NOT_READ
        ms = int(body[:8] + body[9:13] if self.kind == "v7" else body[:12], 16)
        return NOT_READ if ms > MAX_MS else ms * US_PER_MS

    def read_prefix(self, body: str) -> int | NotRead:
        """kuuid forms: the number a body's prefix stores, once it passed every check of
        :meth:`~couchids.IdForm.read` but its time's; ``NOT_READ`` if it fails one. The modes
        of one number of blocks differ only in the time they make of it (:meth:`time_of_prefix`)."""
        if self._pattern.fullmatch(body) is None:
            return NOT_READ
        return decode_prefix(body[:PREFIX_LEN])

    def time_of_prefix(self, value: int | NotRead) -> int | NotRead:
        """kuuid forms: the time, in microseconds, of an id of this mode whose prefix stores
        ``value``; ``NOT_READ`` for ``NOT_READ`` or a time past 9999-12-31."""
        if value is NOT_READ:
            return NOT_READ
        if self.reverse:
            value = MAX_PREFIX_VALUE - value
        ms = value if self.millisecond else value * MS_PER_SECOND
        return NOT_READ if ms > MAX_MS else ms * US_PER_MS

    def _why(self, body: str) -> str | None:
        if self._pattern.fullmatch(body) is not None:
            if self.try_read(body) is not NOT_READ:
                return None
            return f"{body!r} holds a time after 9999-12-31 ({self})"
        if self.kind != "kuuid":
            what = "8-4-4-4-12" if self.kind == "v7" else "32"
            return (
                f"{body!r} is not a {self.kind} id: {what} lowercase hex digits with "
                "version 7 and the RFC 9562 variant (8, 9, a or b)"
            )
        if _V7S.fullmatch(body) is not None:
            return f"{body!r} is a v7s id (a UUIDv7), not a {self} id"
        if _HEX.fullmatch(body) is not None:
            return (
                f"{body!r} is not a {self} id: 32 lower-case hex digits are a v7s, utc_random "
                "or CouchDB random id"
            )
        if _BASE62.fullmatch(body) is not None:
            blocks = (body[i : i + BLOCK_LEN] for i in range(PREFIX_LEN, len(body), BLOCK_LEN))
            high = next(block for block in blocks if block > MAX_BLOCK)
            return (
                f"{body!r} is not a {self} id: random block {high!r} is above {MAX_BLOCK} "
                "(2**32 - 1)"
            )
        return (
            f"{body!r} is not a {self} id: 8 base62 characters (0-9, A-Z, a-z) of time "
            f"and {self.random} random block(s) of 6, each at most {MAX_BLOCK}"
        )


#: kuuid's ``id()``: 8 base62 characters of seconds since 1970, then four random blocks of 6
#: (32 characters), the default form of every operation.
#:
#: >>> couchids.KUUID.new("2018-01-01", type="user")[:13], len(couchids.KUUID.new())
#: ('user:001eVnWK', 32)
KUUID = KuuidForm()
#: kuuid's ``idr()``: newest-first ids, whose time counts down from the last second 8
#: characters hold.
#:
#: >>> couchids.KUUID_REVERSE.new("2018-01-01")[:8]
#: 'zzyLUCTf'
KUUID_REVERSE = KuuidForm(reverse=True)
#: kuuid's ``idms()``: milliseconds since 1970 instead of seconds.
#:
#: >>> couchids.KUUID_MS.new("2018-01-01T00:00:00.001Z")[:8]
#: '0QfQsjKb'
KUUID_MS = KuuidForm(millisecond=True)
#: kuuid's ``idmsr()``: milliseconds, newest first.
#:
#: >>> couchids.KUUID_MS_REVERSE.new("2018-01-01T00:00:00.001Z")[:8]
#: 'zZKZ7GfO'
KUUID_MS_REVERSE = KuuidForm(reverse=True, millisecond=True)
#: kuuid's ``ids()``: two random blocks instead of four (20 characters).
#:
#: >>> couchids.SHORT.new("2018-01-01")[:8], len(couchids.SHORT.new())
#: ('001eVnWK', 20)
SHORT = KuuidForm(random=SHORT_BLOCKS)
#: kuuid's ``idsr()``: two random blocks, newest first.
#:
#: >>> couchids.SHORT_REVERSE.new("2018-01-01")[:8], len(couchids.SHORT_REVERSE.new())
#: ('zzyLUCTf', 20)
SHORT_REVERSE = KuuidForm(random=SHORT_BLOCKS, reverse=True)
#: kuuid 3's ``v7``, and CouchDB's ``uuid_v7`` in its ``rfc9562`` format.
#:
#: >>> couchids.V7.new("2024-01-01", type="order")[:21]
#: 'order:018cc251-f400-7'
V7 = KuuidForm("v7")
#: kuuid 3's ``v7s``, and CouchDB's ``uuid_v7`` in its default ``base_16`` format.
#:
#: >>> couchids.V7S.new("2024-01-01")[:13], len(couchids.V7S.new())
#: ('018cc251f4007', 32)
V7S = KuuidForm("v7s")

#: Every kuuid mode and block count, then kuuid 3's UUIDv7 forms.
KUUID_FORMS: tuple[KuuidForm, ...] = (
    *(
        KuuidForm(random=blocks, reverse=reverse, millisecond=millisecond)
        for blocks in range(MIN_BLOCKS, MAX_BLOCKS + 1)
        for millisecond in (False, True)
        for reverse in (False, True)
    ),
    V7,
    V7S,
)

#: :data:`KUUID_FORMS`, then every other preset: what :func:`couchids.decode` tries (``utc_id``
#: and CouchDB's ``random`` ids only with ``form=``).
ALL_FORMS: tuple[IdForm, ...] = (
    *KUUID_FORMS,
    TID62,
    BASE36_V7,
    BASE36_V7_UNPADDED,
    UTC_RANDOM,
    ULID,
    UUID464,
    SEQ10,
    SEQ36,
)

#: The forms the command line names (``--form NAME``), by name.
NAMED_FORMS: dict[str, IdForm] = {
    str(form): form
    for form in (
        KUUID,
        KUUID_REVERSE,
        KUUID_MS,
        KUUID_MS_REVERSE,
        SHORT,
        SHORT_REVERSE,
        V7,
        V7S,
        TID62,
        BASE36_V7,
        UTC_RANDOM,
        ULID,
        UUID464,
        SEQ10,
        SEQ36,
        COUCH_RANDOM,
    )
}


def form_named(name: str) -> IdForm:
    """The form a name stands for: a name of ``NAMED_FORMS``, or ``utc_id:<suffix>``.

    Raises:
        InvalidArgumentError: an unknown name (the message lists the known ones).

    >>> form_named("tid62") is TID62, str(form_named("utc_id:-node1"))
    (True, 'utc_id')
    """
    if name.startswith("utc_id:"):
        return UtcIdForm(name[len("utc_id:") :])
    form = NAMED_FORMS.get(name)
    if form is None:
        raise InvalidArgumentError(
            f"{name!r} is not an id form; known: {', '.join(NAMED_FORMS)}, utc_id:<suffix>"
        )
    return form
