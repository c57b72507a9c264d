"""ULID: 48 bits of Unix milliseconds and 80 random bits, as 26 Crockford base32 characters.

The layout of github.com/ulid/spec: 10 characters of time, 16 of randomness, in Crockford's
alphabet (in byte order, so ULIDs sort by millisecond). couchids makes and reads upper-case
ULIDs only: lower-case ones would not sort among them. ULIDs of one millisecond strictly
increase within a process (monotonic mode): 74 bits of :mod:`couchids.idforms.v7`'s sequence
and 6 random bits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from couchids.errors import InvalidArgumentError, InvalidTimeError
from couchids.idforms import radix
from couchids.idforms.constants import (
    ULID_ALPHABET,
    ULID_LEN,
    ULID_RANDOM_BITS,
    ULID_TIME_LEN,
    US_PER_MS,
)
from couchids.idforms.entropy import WORDS
from couchids.idforms.idform import NOT_READ, IdForm, ReadAttempt
from couchids.idforms.times import MAX_MS, TimeLike, to_ms
from couchids.idforms.v7 import SEQUENCER

__all__ = ["ULID", "UlidForm"]

_CHAR = f"[{ULID_ALPHABET}]"
#: 26 characters hold 130 bits; a ULID has 128, so the first character is at most 7.
_BODY = f"[0-7]{_CHAR}{{{ULID_LEN - 1}}}"
_PATTERN = re.compile(_BODY)
#: Crockford's alphabet to the digits int() reads in base 32, in the same order.
_TO_BASE32 = str.maketrans(ULID_ALPHABET, "0123456789abcdefghijklmnopqrstuv")
_SPARE_BITS = ULID_RANDOM_BITS - 74
_PAIRS = tuple(a + b for a in ULID_ALPHABET for b in ULID_ALPHABET)
_30_BITS = (1 << 30) - 1


def ulid_text(number: int) -> str:
    """``0 <= number < 2**130`` as 26 Crockford base32 characters: a ULID's text.

    >>> ulid_text(0x01563DF3_6481_D676_4C61_EFB99302BD5B)
    '01ARYZ6S41TSV4RRFFQ69G5FAV'
    """
    # Four 30-bit pieces (one machine digit each) and 10 bits, as pairs from a table; written
    # out, as a loop takes 70% longer on CPython 3.11 and base64.b32encode four times as long.
    pairs = _PAIRS
    a = number >> 100
    b = number >> 70 & _30_BITS
    c = number >> 40 & _30_BITS
    d = number >> 10 & _30_BITS
    return "".join(
        (
            pairs[a >> 20], pairs[a >> 10 & 1023], pairs[a & 1023],
            pairs[b >> 20], pairs[b >> 10 & 1023], pairs[b & 1023],
            pairs[c >> 20], pairs[c >> 10 & 1023], pairs[c & 1023],
            pairs[d >> 20], pairs[d >> 10 & 1023], pairs[d & 1023],
            pairs[number & 1023],
        )
    )  # fmt: skip


def _text(ms: int, random: int) -> str:
    """The ULID of millisecond ``ms`` whose 80 random bits are ``random``."""
    if ms > MAX_MS:
        raise InvalidTimeError(f"{ms} ms is after 9999-12-31, the last time couchids writes")
    number = (ms << ULID_RANDOM_BITS) | random
    if number >> 128:
        raise InvalidArgumentError(f"random={random!r}: a ULID holds 80 random bits")
    return ulid_text(number)


@dataclass(frozen=True)
class UlidForm(IdForm):
    """ULIDs, upper-case, millisecond precision.

    >>> ULID.new(1469918176385)[:10]
    '01ARYZ6S41'
    """

    kind = "ulid"
    length = ULID_LEN
    max_unit = MAX_MS

    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        ms, value = SEQUENCER.next(None if timestamp is None else to_ms(timestamp))
        body = _text(ms, (value << _SPARE_BITS) | WORDS.bits(_SPARE_BITS))
        return body if type is None else self.type_prefix(type) + body

    random_bits = ULID_RANDOM_BITS

    def compose(self, us: int, random: int) -> str:
        return _text(us // US_PER_MS, random)

    def key(self, unit: int) -> str:
        return radix.encode(unit, ULID_TIME_LEN, ULID_ALPHABET)

    def body_pattern(self) -> str:
        return _BODY

    def try_read(self, body: str) -> ReadAttempt:
        if len(body) != ULID_LEN or _PATTERN.fullmatch(body) is None:
            return NOT_READ
        ms = int(body[:ULID_TIME_LEN].translate(_TO_BASE32), 32)
        return NOT_READ if ms > MAX_MS else ms * US_PER_MS

    def _why(self, body: str) -> str | None:
        bad = next((ch for ch in body if ch not in ULID_ALPHABET), None)
        if bad is not None:
            hint = " (couchids reads upper-case ULIDs only)" if bad.upper() in ULID_ALPHABET else ""
            return (
                f"{body!r} is not a ulid id: {bad!r} is not a Crockford base32 character "
                f"({ULID_ALPHABET}){hint}"
            )
        if body[0] > "7":
            return f"{body!r} is not a ulid id: above 7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
        if self.try_read(body) is not NOT_READ:
            return None
        return f"{body!r} holds a time after 9999-12-31 (ulid)"


#: ULIDs (Crockford base32, 26 characters, 48-bit milliseconds).
#:
#: >>> couchids.ULID.new("2024-01-01")[:10], len(couchids.ULID.new())
#: ('01HK153X00', 26)
ULID = UlidForm()
