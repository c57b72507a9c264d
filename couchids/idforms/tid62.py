"""tid62: the default id of the SimpleDB id specification.

``seconds << 64 | random`` (4 bytes of seconds since 2020-01-01T00:00:00Z, 8 random bytes)
as 17 base62 characters, zero-padded, so ids sort by their second. Times run from 2020-01-01
to 2156-02-07T06:28:15Z. The specification writes ``user-<tid62>``:
``TID62.with_separator("-")``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from couchids.errors import InvalidTimeError
from couchids.idforms import radix
from couchids.idforms.constants import (
    ALPHABET,
    MS_PER_SECOND,
    TID62_EPOCH_S,
    TID62_LEN,
    TID62_RANDOM_BITS,
    TID62_TIME_BITS,
    US_PER_MS,
)
from couchids.idforms.entropy import WORDS
from couchids.idforms.idform import NOT_READ, IdForm, ReadAttempt, at_most_pattern
from couchids.idforms.times import TimeLike, now_ms, to_datetime, to_ms

__all__ = ["TID62", "Tid62Form"]

_LAST_S = TID62_EPOCH_S + (1 << TID62_TIME_BITS) - 1
_MAX_TEXT = radix.encode((1 << (TID62_TIME_BITS + TID62_RANDOM_BITS)) - 1, TID62_LEN, ALPHABET)
_BODY = at_most_pattern(_MAX_TEXT, ALPHABET)
_LIMIT = len(ALPHABET) ** TID62_LEN
_TEXT = re.compile(f"[0-9A-Za-z]{{{TID62_LEN}}}")
#: Five base62 digits: a chunk below 62**5 is below 2**30, one machine digit to CPython.
_CHUNK = 62**5
_PAIRS = tuple(a + b for a in ALPHABET for b in ALPHABET)


def tid62_text(value: int) -> str:
    """``radix.encode(value, 17, ALPHABET)`` in less than half the time.

    Raises:
        ValueError: ``value`` is negative or needs more than 17 characters.

    >>> tid62_text(189_259_200 << 64)
    '04XVaYIDfO3SmYAds'
    """
    if not 0 <= value < _LIMIT:
        raise ValueError(f"{value} does not fit in {TID62_LEN} base62 characters")
    # A pair and three chunks of five digits, written out as base36.uuid_text is.
    pairs, digits, chunk = _PAIRS, ALPHABET, _CHUNK
    value, d = divmod(value, chunk)
    value, c = divmod(value, chunk)
    a, b = divmod(value, chunk)
    return "".join(
        (
            pairs[a],
            pairs[b // 62**3], pairs[b // 62 % 62**2], digits[b % 62],
            pairs[c // 62**3], pairs[c // 62 % 62**2], digits[c % 62],
            pairs[d // 62**3], pairs[d // 62 % 62**2], digits[d % 62],
        )
    )  # fmt: skip


@dataclass(frozen=True)
class Tid62Form(IdForm):
    """17 base62 characters: seconds since 2020 and 64 random bits (the specification's tid62).

    >>> TID62.new("2025-12-30T12:00:00Z")[:6]
    '04XVaY'
    >>> TID62.parse("04XVaYIDfO3SmYAds")
    1767096000000
    """

    kind = "tid62"
    length = TID62_LEN
    unit_ms = MS_PER_SECOND
    min_unit = TID62_EPOCH_S
    max_unit = _LAST_S
    random_bits = TID62_RANDOM_BITS

    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        ms = now_ms() if timestamp is None else to_ms(timestamp)
        body = self.compose(ms * US_PER_MS, WORDS.bits(TID62_RANDOM_BITS))
        return body if type is None else self.type_prefix(type) + body

    def compose(self, us: int, random: int) -> str:
        seconds = us // (MS_PER_SECOND * US_PER_MS)
        if not TID62_EPOCH_S <= seconds <= _LAST_S:
            raise InvalidTimeError(
                f"{to_datetime(seconds * MS_PER_SECOND).isoformat()} is outside the tid62 "
                f"runway: tid62 ids hold times from {to_datetime(TID62_EPOCH_S * 1000)} to "
                f"{to_datetime(_LAST_S * 1000)}"
            )
        return tid62_text(((seconds - TID62_EPOCH_S) << TID62_RANDOM_BITS) | random)

    def key(self, unit: int) -> str:
        return radix.encode((unit - TID62_EPOCH_S) << TID62_RANDOM_BITS, TID62_LEN, ALPHABET)

    def body_pattern(self) -> str:
        return _BODY

    def try_read(self, body: str) -> ReadAttempt:
        if len(body) != TID62_LEN or _TEXT.fullmatch(body) is None or body > _MAX_TEXT:
            return NOT_READ
        seconds = TID62_EPOCH_S + (radix.decode(body, ALPHABET) >> TID62_RANDOM_BITS)
        return seconds * MS_PER_SECOND * US_PER_MS

    def _why(self, body: str) -> str | None:
        if _TEXT.fullmatch(body) is None:
            return f"{body!r} is not a tid62 id: 17 base62 characters (0-9, A-Z, a-z)"
        if body <= _MAX_TEXT:
            return None
        return f"{body!r} is not a tid62 id: above {_MAX_TEXT}, the largest 12-byte number"


#: tid62 ids (seconds since 2020 and 64 random bits, 17 base62 characters).
#:
#: >>> couchids.TID62.new("2024-01-01")[:6], len(couchids.TID62.new())
#: ('031l2N', 17)
TID62 = Tid62Form()
