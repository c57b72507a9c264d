"""Random blocks for kuuid ids, drawn from the operating system's CSPRNG in batches.

A kuuid random block is one uniformly random unsigned 32-bit integer in 6 base62 characters.
Encoding four integers per id in Python costs more than the rest of ``id()`` together, so
blocks are made a batch at a time with byte-level operations that run in C:

1. bytes from ``os.urandom`` become base62 characters by rejection (a byte below
   ``4 * 62`` maps to ``byte % 62``; the rest are dropped), so each character is uniform;
2. each block's first character is drawn uniformly from ``0-4`` the same way, giving a uniform
   number in ``[0, 5 * 62**5)``;
3. blocks above ``4gfFC3`` (``2**32 - 1``) are dropped, which leaves each surviving block
   uniform in ``[0, 2**32)``: exactly the distribution kuuid draws from.

The pool is per process: a forked child drops what it inherited, so it never repeats its
parent's blocks.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator

from .constants import ALPHABET, BLOCK_LEN, MAX_BLOCKS

_DIGITS = ALPHABET.encode()
_BASE62_LIMIT = 4 * 62  # the largest multiple of 62 that fits in a byte
_TO_BASE62 = bytes(_DIGITS[b % 62] if b < _BASE62_LIMIT else 0 for b in range(256))
_NOT_BASE62 = bytes(range(_BASE62_LIMIT, 256))
_LEAD_LIMIT = 255  # the largest multiple of 5 that fits in a byte
_TO_LEAD = bytes(_DIGITS[b % 5] if b < _LEAD_LIMIT else 0 for b in range(256))
_NOT_LEAD = bytes([255])

# One alternative per possible block: group 1 captures a block <= "4gfFC3", an invalid block
# matches the bare ".{6}" and contributes an empty group. Every alternative is 6 characters
# long, so matching stays aligned to block boundaries.
_BLOCKS = re.compile(
    rb"((?:[0-3].{5}"
    rb"|4(?:[0-9A-Za-f].{4}|g(?:[0-9A-Za-e].{3}|f(?:[0-9A-E].{2}|F(?:[0-9AB].|C[0-3]))))))"
    rb"|.{6}",
    re.DOTALL,
)
_SUFFIX = re.compile(f".{{{BLOCK_LEN * MAX_BLOCKS}}}", re.DOTALL)

BATCH_BLOCKS = 4096


def _uniform(count: int, table: bytes, rejected: bytes, limit: int) -> bytes:
    """``count`` characters, each uniform over the characters ``table`` maps to."""
    out = b""
    while len(out) < count:
        need = count - len(out)
        # Ask for enough that one read almost always suffices.
        out += os.urandom(need * 256 // limit + 64).translate(table, rejected)
    return out[:count]


def _make_suffixes(blocks: int = BATCH_BLOCKS) -> list[str]:
    """A batch of random 24-character suffixes: four valid blocks each."""
    raw = bytearray(blocks * BLOCK_LEN)
    raw[0::BLOCK_LEN] = _uniform(blocks, _TO_LEAD, _NOT_LEAD, _LEAD_LIMIT)
    rest = _uniform(blocks * (BLOCK_LEN - 1), _TO_BASE62, _NOT_BASE62, _BASE62_LIMIT)
    for i in range(1, BLOCK_LEN):
        raw[i::BLOCK_LEN] = rest[(i - 1) * blocks : i * blocks]
    valid = b"".join(_BLOCKS.findall(raw))
    return _SUFFIX.findall(valid.decode("ascii"))


class SuffixPool:
    """Hands out each random suffix once, across threads; refills when empty."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._suffixes: Iterator[str] = iter(())

    def take(self) -> str:
        """A fresh 24-character random suffix (four blocks)."""
        # next() on a list iterator is atomic under the GIL: two threads never get one item.
        suffix = next(self._suffixes, None)
        if suffix is None:
            with self._lock:
                suffix = next(self._suffixes, None)
                if suffix is None:
                    self._suffixes = iter(_make_suffixes())
                    suffix = next(self._suffixes)
        return suffix

    def forget(self) -> None:
        """Drop every suffix made so far (called in a forked child)."""
        self._lock = threading.Lock()
        self._suffixes = iter(())


POOL = SuffixPool()
os.register_at_fork(after_in_child=POOL.forget)
