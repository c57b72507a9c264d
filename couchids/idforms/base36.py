"""UUIDv7s in base36: the typed ids of the Identifiers article, and CouchDB's ``base_36`` format.

The 128-bit UUIDv7 (:mod:`couchids.idforms.v7`) as a lower-case base36 number zero-padded to
25 characters (the width of ``2**128 - 1``), exactly what CouchDB's ``[uuids] format =
base_36`` makes, so ids sort by their millisecond. The article's ``BaseID`` writes it
unpadded, 24 characters from 1986 to 2556: :data:`BASE36_V7_UNPADDED` reads those (never
makes them); they sort by time only among themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from couchids.errors import InvalidArgumentError, InvalidTimeError
from couchids.idforms import radix
from couchids.idforms.constants import (
    BASE36_ALPHABET,
    BASE36_UUID_LEN,
    US_PER_MS,
    UUID_BITS,
    V7_RANDOM_BITS,
    V7_TIME_BITS,
    V7_VERSION,
)
from couchids.idforms.idform import NOT_READ, IdForm, ReadAttempt, at_most_pattern
from couchids.idforms.times import MAX_MS, TimeLike, to_ms
from couchids.idforms.v7 import SEQUENCER, uuid7_from

__all__ = ["BASE36_V7", "BASE36_V7_UNPADDED", "Base36V7Form", "uuid7_time"]

_TIME_SHIFT = UUID_BITS - V7_TIME_BITS
_MAX_TEXT = radix.encode((1 << UUID_BITS) - 1, BASE36_UUID_LEN, BASE36_ALPHABET)
_LIMIT = len(BASE36_ALPHABET) ** BASE36_UUID_LEN
_TEXT = re.compile("[0-9a-z]+")
#: Five base36 digits: a chunk below 36**5 is below 2**30, one machine digit to CPython.
_CHUNK = 36**5
_PAIRS = tuple(a + b for a in BASE36_ALPHABET for b in BASE36_ALPHABET)


def uuid_text(value: int) -> str:
    """``radix.encode(value, 25, BASE36_ALPHABET)`` in less than half the time.

    Raises:
        ValueError: ``value`` is negative or needs more than 25 characters.

    >>> uuid_text(0x018CC251F400_7000_8000_000000000000)
    '03awvyp9xoayogohoeqqhhlhc'
    """
    if not 0 <= value < _LIMIT:
        raise ValueError(f"{value} does not fit in {BASE36_UUID_LEN} base36 characters")
    # Five chunks of five digits, each two pairs from a table and a digit; written out, as a
    # loop takes about 70% longer on CPython 3.11.
    pairs, digits, chunk = _PAIRS, BASE36_ALPHABET, _CHUNK
    value, e = divmod(value, chunk)
    value, d = divmod(value, chunk)
    value, c = divmod(value, chunk)
    a, b = divmod(value, chunk)
    return "".join(
        (
            pairs[a // 36**3], pairs[a // 36 % 36**2], digits[a % 36],
            pairs[b // 36**3], pairs[b // 36 % 36**2], digits[b % 36],
            pairs[c // 36**3], pairs[c // 36 % 36**2], digits[c % 36],
            pairs[d // 36**3], pairs[d // 36 % 36**2], digits[d % 36],
            pairs[e // 36**3], pairs[e // 36 % 36**2], digits[e % 36],
        )
    )  # fmt: skip


def _text(ms: int, value: int) -> str:
    """The body of the UUIDv7 of millisecond ``ms`` whose 74 other bits are ``value``."""
    if ms > MAX_MS:
        raise InvalidTimeError(f"{ms} ms is after 9999-12-31, the last time couchids writes")
    return uuid_text(uuid7_from(ms, value))


def uuid7_time(value: int) -> int | None:
    """The milliseconds of a 128-bit UUIDv7, or ``None`` if ``value`` is not one (version 7,
    variant ``10``, a time up to 9999-12-31).

    >>> uuid7_time(0x018CC251F400_7000_8000_000000000000)
    1704067200000
    """
    if (value >> 76) & 0xF != V7_VERSION or (value >> 62) & 0b11 != 0b10:
        return None
    ms = value >> _TIME_SHIFT
    return ms if ms <= MAX_MS else None


@dataclass(frozen=True)
class Base36V7Form(IdForm):
    """A UUIDv7 as lower-case base36: 25 characters (padded), or 24 as the article writes it.

    >>> body = BASE36_V7.new("2024-01-01")
    >>> len(body), BASE36_V7.parse(body)
    (25, 1704067200000)
    """

    padded: bool = True

    @property
    def kind(self) -> str:
        return "base36_v7" if self.padded else "base36_v7_unpadded"

    structured = True

    @property
    def length(self) -> int:
        return BASE36_UUID_LEN if self.padded else BASE36_UUID_LEN - 1

    @property
    def max_unit(self) -> int:
        return min(MAX_MS, (int(len(BASE36_ALPHABET) ** self.length) - 1) >> _TIME_SHIFT)

    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        if not self.padded:
            raise InvalidArgumentError(
                "couchids makes base36 UUIDv7s padded to 25 characters (BASE36_V7), which "
                "sort by time for every time; the unpadded form is read, not made"
            )
        ms, value = SEQUENCER.next(None if timestamp is None else to_ms(timestamp))
        body = _text(ms, value)
        return body if type is None else self.type_prefix(type) + body

    random_bits = V7_RANDOM_BITS

    def compose(self, us: int, random: int) -> str:
        if not self.padded:
            raise InvalidArgumentError("couchids makes base36 UUIDv7s padded (BASE36_V7)")
        return _text(us // US_PER_MS, random)

    def key(self, unit: int) -> str:
        return radix.encode(unit << _TIME_SHIFT, self.length, BASE36_ALPHABET)

    def body_pattern(self) -> str:
        if self.padded:
            return at_most_pattern(_MAX_TEXT, BASE36_ALPHABET)
        return f"[1-9a-z][0-9a-z]{{{self.length - 1}}}"

    def matcher(self, prefix: str = "") -> Callable[[str], bool]:
        """The regex, and the version and variant bits it cannot see."""
        pattern = self.id_pattern(prefix).fullmatch
        start = len(prefix)

        def match(doc_id: str) -> bool:
            return (
                pattern(doc_id) is not None
                and uuid7_time(int(doc_id[start:], len(BASE36_ALPHABET))) is not None
            )

        return match

    def try_read(self, body: str) -> ReadAttempt:
        if len(body) != self.length or _TEXT.fullmatch(body) is None:
            return NOT_READ
        if (self.padded and body > _MAX_TEXT) or (not self.padded and body[0] == "0"):
            return NOT_READ
        # The pattern has kept out the spaces, signs and underscores int() would also take.
        ms = uuid7_time(int(body, len(BASE36_ALPHABET)))
        return NOT_READ if ms is None else ms * US_PER_MS

    def _why(self, body: str) -> str | None:
        if _TEXT.fullmatch(body) is None:
            why = "lower-case base36 characters (0-9, a-z)"
        elif self.padded and body > _MAX_TEXT:
            why = "above 2**128 - 1"
        elif not self.padded and body[0] == "0":
            why = "an unpadded number has no leading 0"
        elif uuid7_time(int(body, len(BASE36_ALPHABET))) is not None:
            return None
        else:
            why = (
                "the number is not a UUIDv7 (version 7, the RFC 9562 variant, a time up to "
                "9999-12-31)"
            )
        return f"{body!r} is not a {self} id: {why}"


#: UUIDv7s as 25 lower-case base36 characters (CouchDB's ``uuid_v7`` ``base_36`` format).
#:
#: >>> couchids.BASE36_V7.new("2024-01-01")[:10], len(couchids.BASE36_V7.new())
#: ('03awvyp9xo', 25)
BASE36_V7 = Base36V7Form()
#: The same, unpadded (24 characters for times from 1986 to 2556), as the Identifiers article
#: writes them: read and queried, never made.
BASE36_V7_UNPADDED = Base36V7Form(padded=False)
