"""Helpers for the id tests: checking random blocks against kuuid's distribution.

A kuuid random block is one uniform unsigned 32-bit integer written as 6 base62 characters.
The checks here compare observed blocks with that distribution by chi-square tests whose
bounds (a tail probability near 1e-9) essentially never fail by chance but reject a wrong
distribution, such as a lead character uniform over 0-4 or a modulo bias.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from couchids.idforms.base62 import decode as base62_decode
from couchids.idforms.constants import ALPHABET

UINT32 = 2**32
MAX_BLOCK = "4gfFC3"
BLOCK_LEN = 6
#: About one chance in 1e9 that a right distribution lands past the bound.
Z_BOUND = 6.0


def blocks_of(random_part: str) -> list[str]:
    """Split the random part of an id into its 6-character blocks."""
    if len(random_part) % BLOCK_LEN:
        raise AssertionError(f"{random_part!r} is not a whole number of 6-character blocks")
    return [random_part[i : i + BLOCK_LEN] for i in range(0, len(random_part), BLOCK_LEN)]


def check_block(block: str) -> int:
    """Assert ``block`` is a valid kuuid block and return its value."""
    assert len(block) == BLOCK_LEN, block
    assert all(ch in ALPHABET for ch in block), block
    assert block <= MAX_BLOCK, block
    value = base62_decode(block)
    assert value < UINT32
    return value


def chi_square(observed: Sequence[int], probabilities: Sequence[float]) -> float:
    total = sum(observed)
    return sum(
        (o - total * p) ** 2 / (total * p) for o, p in zip(observed, probabilities, strict=True)
    )


def chi_square_bound(degrees: int, z: float = Z_BOUND) -> float:
    """The chi-square value with upper tail about that of ``z`` (Wilson-Hilferty)."""
    k = float(degrees)
    return k * (1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3


#: Lead character of a uniform uint32 block: '0'-'3' each cover 62**5 values, '4' the rest.
LEAD_PROBABILITIES = [62**5 / UINT32] * 4 + [(UINT32 - 4 * 62**5) / UINT32]
#: Last character: value % 62 over a uniform uint32, counted exactly.
LAST_PROBABILITIES = [(UINT32 // 62 + (r < UINT32 % 62)) / UINT32 for r in range(62)]
HIGH_BINS = 64  # value >> 26: each bin is exactly 1/64 of the uint32 range
#: Blocks from "4g0000" up: the only ones whose validity needs more than two characters.
TOP_START = base62_decode("4g0000")
TOP_PROBABILITIES = [(UINT32 - TOP_START) / UINT32, TOP_START / UINT32]


def block_statistics(values: Iterable[int]) -> dict[str, tuple[float, float]]:
    """For each test, ``(statistic, bound)``; a uniform uint32 source stays under every bound."""
    lead: Counter[int] = Counter()
    last: Counter[int] = Counter()
    high: Counter[int] = Counter()
    top = 0
    for v in values:
        lead[v // 62**5] += 1
        last[v % 62] += 1
        high[v >> 26] += 1
        top += v >= TOP_START
    return {
        "lead character": (
            chi_square([lead[d] for d in range(5)], LEAD_PROBABILITIES),
            chi_square_bound(4),
        ),
        "last character": (
            chi_square([last[r] for r in range(62)], LAST_PROBABILITIES),
            chi_square_bound(61),
        ),
        "high 6 bits": (
            chi_square([high[b] for b in range(HIGH_BINS)], [1 / HIGH_BINS] * HIGH_BINS),
            chi_square_bound(HIGH_BINS - 1),
        ),
        "4g0000 and above": (
            chi_square([top, sum(lead.values()) - top], TOP_PROBABILITIES),
            chi_square_bound(1),
        ),
    }


def failed_statistics(values: Iterable[int]) -> list[str]:
    """Names of the tests the values fail, with their statistic and bound."""
    return [
        f"{name}: chi-square {stat:.1f} > {bound:.1f}"
        for name, (stat, bound) in block_statistics(values).items()
        if stat > bound
    ]


#: kuuid's recorded known answers, copied into the repo so the suite stands alone (they were
#: first recorded in ../shared/vectors; test_kuuid_crosscheck checks the copies still match).
VECTORS = Path(__file__).resolve().parent / "vectors"


def load_vectors(name: str) -> dict[str, Any]:
    """One recorded vector file, ``kuuid-legacy.json`` or ``kuuid-v7.json``."""
    loaded: dict[str, Any] = json.loads((VECTORS / name).read_text(encoding="utf-8"))
    return loaded
