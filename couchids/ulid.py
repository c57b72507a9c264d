"""ULID: 48 bits of Unix milliseconds and 80 random bits, as 26 Crockford base32 characters.

The layout of the ULID specification (github.com/ulid/spec): the first 10 characters are
the time, the last 16 the randomness, in Crockford's alphabet ``0-9A-Z`` without ``I``,
``L``, ``O`` and ``U``, which is in byte order, so ULIDs sort by their millisecond in
``_all_docs``. couchids makes upper-case ULIDs and reads only those: a lower-case ULID is
valid to the specification, but would not sort among upper-case ones.

Within one process, ULIDs of one millisecond strictly increase (the specification's
monotonic mode); their 80 bits are the 74 of :mod:`couchids.v7`'s sequence and 6 random
bits.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import radix
from .constants import ULID_ALPHABET, ULID_LEN, ULID_RANDOM_BITS, ULID_TIME_LEN, US_PER_MS
from .entropy import WORDS
from .errors import InvalidArgumentError, InvalidIdError, InvalidTimeError
from .idform import IdForm
from .times import MAX_MS, TimeLike, to_ms
from .v7 import SEQUENCER

__all__ = ["ULID", "UlidForm"]

_CHAR = f"[{ULID_ALPHABET}]"
#: 26 characters hold 130 bits; a ULID has 128, so the first character is at most 7.
_BODY = f"[0-7]{_CHAR}{{{ULID_LEN - 1}}}"
_SPARE_BITS = ULID_RANDOM_BITS - 74
_PAIRS = tuple(a + b for a in ULID_ALPHABET for b in ULID_ALPHABET)
_SHIFTS = tuple(range(ULID_LEN * 5 - 10, -1, -10))


@dataclass(frozen=True)
class UlidForm(IdForm):
    """ULIDs, upper-case, millisecond precision.

    >>> ULID.new(1469918176385)[:10]
    '01ARYZ6S41'
    """

    kind = "ulid"

    @property
    def length(self) -> int:
        return ULID_LEN

    @property
    def max_unit(self) -> int:
        return MAX_MS

    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        ms, value = SEQUENCER.next(None if timestamp is None else to_ms(timestamp))
        spare = WORDS.bits(_SPARE_BITS)
        body = self.compose(ms * US_PER_MS, (value << _SPARE_BITS) | spare)
        return body if type is None else self.type_prefix(type) + body

    @property
    def random_bits(self) -> int:
        return ULID_RANDOM_BITS

    def compose(self, us: int, random: int) -> str:
        ms = us // US_PER_MS
        if ms > MAX_MS:
            raise InvalidTimeError(f"{ms} ms is after 9999-12-31, the last time couchids writes")
        number = (ms << ULID_RANDOM_BITS) | random
        if number >> 128:
            raise InvalidArgumentError(f"random={random!r}: a ULID holds 80 random bits")
        # Two characters (10 bits) per table look-up: 13 look-ups, no division.
        return "".join([_PAIRS[(number >> shift) & 1023] for shift in _SHIFTS])

    def key(self, unit: int) -> str:
        return radix.encode(unit, ULID_TIME_LEN, ULID_ALPHABET)

    def body_pattern(self) -> str:
        return _BODY

    def read(self, body: str) -> int:
        if not isinstance(body, str) or len(body) != ULID_LEN:
            raise self.wrong_length(body)
        bad = next((ch for ch in body if ch not in ULID_ALPHABET), None)
        if bad is not None:
            hint = " (couchids reads upper-case ULIDs only)" if bad.upper() in ULID_ALPHABET else ""
            raise InvalidIdError(
                f"{body!r} is not a ulid id: {bad!r} is not a Crockford base32 character "
                f"({ULID_ALPHABET}){hint}"
            )
        if body[0] > "7":
            raise InvalidIdError(f"{body!r} is not a ulid id: above 7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
        ms = radix.decode(body[:ULID_TIME_LEN], ULID_ALPHABET)
        if ms > MAX_MS:
            raise InvalidIdError(f"{body!r} holds a time after 9999-12-31 (ulid)")
        return ms * US_PER_MS


#: ULIDs (Crockford base32, 26 characters, 48-bit milliseconds).
ULID = UlidForm()
