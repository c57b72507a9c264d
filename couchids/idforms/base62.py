"""Fixed-width base62 in kuuid's alphabet."""

from __future__ import annotations

from functools import lru_cache

from couchids.idforms import radix
from couchids.idforms.constants import ALPHABET, BASE, PREFIX_LEN

_PAIR = BASE * BASE
# Two characters a lookup: an 8-character prefix is four table reads instead of eight divisions.
_PAIRS = tuple(a + b for a in ALPHABET for b in ALPHABET)
#: Each base62 character to its value, for ``bytes.translate``.
_DIGIT_VALUES = bytes.maketrans(ALPHABET.encode("ascii"), bytes(range(BASE)))


def encode(value: int, width: int) -> str:
    """Encode ``0 <= value < 62**width`` as exactly ``width`` characters, zero-padded."""
    return radix.encode(value, width, ALPHABET)


@lru_cache(maxsize=512)
def encode_prefix(value: int) -> str:
    """Encode a time value (``0 <= value <= 62**8 - 1``) as kuuid's 8-character prefix.

    Cached: ids made in one second (or millisecond) share their prefix.
    """
    rest, d = divmod(value, _PAIR)
    rest, c = divmod(rest, _PAIR)
    a, b = divmod(rest, _PAIR)
    if a >= _PAIR or value < 0:
        raise ValueError(f"{value} does not fit in {PREFIX_LEN} base62 characters")
    return _PAIRS[a] + _PAIRS[b] + _PAIRS[c] + _PAIRS[d]


def decode_prefix(text: str) -> int:
    """The number that ``text``, 8 base62 characters, stores: what :func:`decode` gives,
    without a loop over the characters (for :func:`couchids.decode`).

    ``text`` is not checked: callers have matched it with a pattern first. Other characters
    give a wrong number (or raise ``UnicodeEncodeError``, ``ValueError``).

    >>> decode_prefix("001eVnWK") == decode("001eVnWK")
    True
    """
    # Each character becomes a byte holding its value; unpacking the 8 bytes and the sum
    # written out cost less than a loop.
    a, b, c, d, e, f, g, h = text.encode("ascii").translate(_DIGIT_VALUES)
    return (
        (((((a * BASE + b) * BASE + c) * BASE + d) * BASE + e) * BASE + f) * BASE + g
    ) * BASE + h


def decode(text: str) -> int:
    """Decode base62 ``text``; raises ``ValueError`` naming the first character outside it."""
    try:
        return radix.decode(text, ALPHABET)
    except ValueError:
        bad = next(ch for ch in text if ch not in ALPHABET)
        raise ValueError(f"{bad!r} is not a base62 character (0-9, A-Z, a-z)") from None
