"""Fixed-width numbers in any alphabet that is in byte order (base36, Crockford base32, ...).

Fixed width and an alphabet in byte order together make the text sort like the number in
``_all_docs``, which is what every sortable id form relies on.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=16)
def _pairs(alphabet: str) -> tuple[str, ...]:
    return tuple(a + b for a in alphabet for b in alphabet)


def encode(value: int, width: int, alphabet: str) -> str:
    """``0 <= value < len(alphabet)**width`` as exactly ``width`` characters, zero-padded.

    Raises:
        ValueError: ``value`` does not fit.

    >>> encode(35, 3, "0123456789abcdefghijklmnopqrstuvwxyz")
    '00z'
    """
    base = len(alphabet)
    if not 0 <= value < base**width:
        raise ValueError(f"{value} does not fit in {width} base{base} characters")
    pairs, pair = _pairs(alphabet), base * base
    chunks = []
    for _ in range(width // 2):
        value, rest = divmod(value, pair)
        chunks.append(pairs[rest])
    if width % 2:
        chunks.append(alphabet[value])
    return "".join(reversed(chunks))


def decode(text: str, alphabet: str) -> int:
    """The number ``text`` writes in ``alphabet``.

    Raises:
        ValueError: a character outside the alphabet (named in the message).

    >>> decode("00z", "0123456789abcdefghijklmnopqrstuvwxyz")
    35
    """
    values = _values(alphabet)
    base = len(alphabet)
    value = 0
    for ch in text:
        digit = values.get(ch)
        if digit is None:
            raise ValueError(f"{ch!r} is not in the alphabet {alphabet}")
        value = value * base + digit
    return value


@lru_cache(maxsize=16)
def _values(alphabet: str) -> dict[str, int]:
    return {c: i for i, c in enumerate(alphabet)}
