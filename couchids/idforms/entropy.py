"""Random bits from the operating system's CSPRNG, a batch at a time, for every form.

A kuuid block is a uniform 32-bit integer in 6 base62 characters, made by byte operations in
C: ``os.urandom`` bytes become base62 characters by rejection (uniform), each block's first
character uniform in ``0-4``, and suffixes with a block above ``4gfFC3`` (``2**32 - 1``)
dropped, which leaves each block uniform in ``[0, 2**32)``. A forked child drops the pools it
inherited, so it never repeats its parent's bits.
"""

from __future__ import annotations

import os
import re
import struct
import threading
from collections.abc import Iterable, Iterator
from itertools import compress
from operator import not_
from typing import Generic, TypeVar

from couchids.idforms.constants import ALPHABET, BLOCK_LEN, MAX_BLOCK, MAX_BLOCKS

_DIGITS = ALPHABET.encode()
_BASE62_LIMIT = 4 * 62  # the largest multiple of 62 that fits in a byte
_TO_BASE62 = bytes(_DIGITS[b % 62] if b < _BASE62_LIMIT else 0 for b in range(256))
_NOT_BASE62 = bytes(range(_BASE62_LIMIT, 256))
_LEAD_LIMIT = 255  # the largest multiple of 5 that fits in a byte
_TO_LEAD = bytes(_DIGITS[b % 5] if b < _LEAD_LIMIT else 0 for b in range(256))
_NOT_LEAD = bytes([255])

# Which blocks could be above 4gfFC3, found for a whole batch at once by byte operations:
# per block, its lead is '4' (0xFF mask) AND its second character is 'g' (1) or above (2).
# A block scored 0 is valid, 2 is invalid, 1 ("4g...") needs the full comparison; 1 in 300
# blocks is a "4g" block, so that comparison runs in Python rarely.
_LEAD_IS_4 = bytes(0xFF if b == ord("4") else 0 for b in range(256))
_SECOND_RISK = bytes(2 if b > ord("g") else 1 if b == ord("g") else 0 for b in range(256))
_SUFFIX_LEN = BLOCK_LEN * MAX_BLOCKS
_SUFFIX = re.compile(f".{{{_SUFFIX_LEN}}}", re.DOTALL)
# A suffix's four risk bytes read as one 4-byte word: zero means all four blocks are valid.
assert struct.calcsize("I") == MAX_BLOCKS

BATCH_BLOCKS = 4096
T = TypeVar("T")


def _uniform(count: int, table: bytes, rejected: bytes, limit: int) -> bytes:
    """``count`` characters, each uniform over the characters ``table`` maps to."""
    out = b""
    while len(out) < count:
        need = count - len(out)
        # Ask for enough that one read almost always suffices.
        out += os.urandom(need * 256 // limit + 64).translate(table, rejected)
    return out[:count]


def _make_suffixes(blocks: int = BATCH_BLOCKS) -> list[str]:
    """A batch of random 24-character suffixes of four valid blocks (the blocks are
    independent, so each block of a kept suffix is uniform over ``[0, 2**32)``)."""
    count = blocks // MAX_BLOCKS * MAX_BLOCKS
    raw = bytearray(count * BLOCK_LEN)
    leads = _uniform(count, _TO_LEAD, _NOT_LEAD, _LEAD_LIMIT)
    raw[0::BLOCK_LEN] = leads
    rest = _uniform(count * (BLOCK_LEN - 1), _TO_BASE62, _NOT_BASE62, _BASE62_LIMIT)
    for i in range(1, BLOCK_LEN):
        raw[i::BLOCK_LEN] = rest[(i - 1) * count : i * count]
    risk = (
        int.from_bytes(leads.translate(_LEAD_IS_4), "big")
        & int.from_bytes(raw[1::BLOCK_LEN].translate(_SECOND_RISK), "big")
    ).to_bytes(count, "big")
    suffixes = _SUFFIX.findall(raw.decode("ascii"))
    kept = list(compress(suffixes, map(not_, memoryview(risk).cast("I"))))
    # The rare suffixes with a "4g" block and no block known to be invalid: compare exactly.
    checked = set()
    at = risk.find(1)
    while at != -1:
        index = at // MAX_BLOCKS
        if index not in checked:
            checked.add(index)
            suffix = suffixes[index]
            if 2 not in risk[index * MAX_BLOCKS : (index + 1) * MAX_BLOCKS] and all(
                suffix[j : j + BLOCK_LEN] <= MAX_BLOCK for j in range(0, _SUFFIX_LEN, BLOCK_LEN)
            ):
                kept.append(suffix)
        at = risk.find(1, at + 1)
    return kept


class _Pool(Generic[T]):
    """Hands out each item of the batches :meth:`_batch` makes once, across threads."""

    def __init__(self) -> None:
        self.forget()
        os.register_at_fork(after_in_child=self.forget)

    def forget(self) -> None:
        """Drop every item made so far (called in a forked child)."""
        self._lock = threading.Lock()
        self._items: Iterator[T] = iter(())

    def _batch(self) -> Iterable[T]:
        raise NotImplementedError

    def take(self) -> T:
        """A fresh item, from a new batch when this one is used up."""
        # next() on a batch's iterator is atomic under the GIL: only a refill takes the lock.
        item = next(self._items, None)
        if item is None:
            with self._lock:
                item = next(self._items, None)
                if item is None:
                    self._items = iter(self._batch())
                    item = next(self._items)
        return item


class SuffixPool(_Pool[str]):
    """Random 24-character suffixes (four blocks)."""

    def _batch(self) -> list[str]:
        return _make_suffixes()


POOL = SuffixPool()


class WordPool(_Pool[int]):
    """Random 64-bit words from ``os.urandom``, read a batch at a time (one system call per
    ``words`` words instead of one per id)."""

    def __init__(self, words: int = 512) -> None:
        self._words = words
        super().__init__()

    def _batch(self) -> memoryview:
        return memoryview(os.urandom(8 * self._words)).cast("Q")

    def bits(self, count: int) -> int:
        """A uniformly random number of ``count`` bits (at most 128)."""
        word = next(self._items, None)
        if word is None:
            word = self.take()
        if count > 64:
            return ((word << 64) | self.take()) >> (128 - count)
        return word >> (64 - count)


WORDS = WordPool()
