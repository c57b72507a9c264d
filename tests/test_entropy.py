"""Random blocks (couchids/idforms/entropy.py): always valid, distributed exactly like kuuid's."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import pytest
from ids_helpers import (
    TOP_START,
    UINT32,
    block_statistics,
    blocks_of,
    check_block,
    failed_statistics,
)

from couchids import kuuid
from couchids.idforms import entropy
from couchids.idforms.constants import ALPHABET

BLOCKS = 400_000


@pytest.fixture(scope="module")
def block_values() -> list[int]:
    """Values of BLOCKS random blocks drawn through the public ``rand()``."""
    return [check_block(block) for _ in range(BLOCKS // 4) for block in blocks_of(kuuid.rand())]


def test_blocks_are_uniform_uint32(block_values: list[int]) -> None:
    assert failed_statistics(block_values) == []


def test_blocks_reach_both_ends(block_values: list[int]) -> None:
    # 400 000 uniform draws: the smallest is below 2**32 / 1000 and the largest above
    # 2**32 * 0.999 except with probability about e**-400.
    assert min(block_values) < UINT32 // 1000
    assert max(block_values) > UINT32 - UINT32 // 1000


# Plausible ways to get the distribution wrong while every block still looks valid. The check
# above must reject each of them at the same sample size, or it proves nothing.
def lead_uniform_over_0_to_4(rng: random.Random) -> int:
    lead = rng.randrange(5)
    while True:  # only the tail is redrawn: '4' blocks become too common
        value = lead * 62**5 + rng.randrange(62**5)
        if value < UINT32:
            return value


def modulo_bias(rng: random.Random) -> int:
    return rng.randrange(62**6) % UINT32  # six uniform base62 characters, wrapped


def clamped(rng: random.Random) -> int:
    return min(rng.randrange(5 * 62**5), UINT32 - 1)  # over-range blocks become 4gfFC3


def last_character_off_by_one(rng: random.Random) -> int:
    while True:  # an alphabet of 61 characters in the last place
        value = rng.randrange(UINT32)
        if value % 62 != 61:
            return value


def thirty_one_bits(rng: random.Random) -> int:
    return rng.getrandbits(31)


def drops_4g_blocks(rng: random.Random) -> int:
    while True:  # "4g..." blocks rejected wholesale instead of compared exactly
        value = rng.randrange(UINT32)
        if value < TOP_START:
            return value


@pytest.mark.parametrize(
    "wrong",
    [
        lead_uniform_over_0_to_4,
        modulo_bias,
        clamped,
        last_character_off_by_one,
        thirty_one_bits,
        drops_4g_blocks,
    ],
)
def test_the_check_rejects_wrong_distributions(wrong: Callable[[random.Random], int]) -> None:
    rng = random.Random(20180101)  # fixed seed: this test is deterministic
    values = [wrong(rng) for _ in range(BLOCKS)]
    failures = failed_statistics(values)
    assert failures, block_statistics(values)


def test_the_check_accepts_a_true_uint32_source() -> None:
    rng = random.Random(19700101)
    assert failed_statistics(rng.getrandbits(32) for _ in range(BLOCKS)) == []


def test_suffix_batches_are_four_valid_blocks() -> None:
    suffixes = entropy._make_suffixes(2_000)
    # About 6.6% of drawn blocks exceed 4gfFC3; a suffix with one is dropped (about 24%).
    assert 300 < len(suffixes) <= 500
    for suffix in suffixes:
        assert len(suffix) == 24
        for block in blocks_of(suffix):
            check_block(block)


def test_uniform_characters_stay_in_their_table() -> None:
    chars = entropy._uniform(50_000, entropy._TO_BASE62, entropy._NOT_BASE62, 248)
    assert len(chars) == 50_000
    assert set(chars) == set(ALPHABET.encode())
    leads = entropy._uniform(10_000, entropy._TO_LEAD, entropy._NOT_LEAD, 255)
    assert set(leads) == set(b"01234")


def test_pool_hands_each_suffix_out_once_across_threads() -> None:
    pool = entropy.SuffixPool()
    taken: list[list[str]] = [[] for _ in range(4)]

    def work(out: list[str]) -> None:
        out.extend(pool.take() for _ in range(15_000))  # several refills each

    threads = [threading.Thread(target=work, args=(out,)) for out in taken]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    every = [s for out in taken for s in out]
    assert len(every) == 60_000 == len(set(every))


def test_word_pool_hands_each_word_out_once_across_threads() -> None:
    pool = entropy.WordPool(words=64)  # small batches: many refills, some raced
    taken: list[list[int]] = [[] for _ in range(4)]

    def work(out: list[int]) -> None:
        out.extend(pool.bits(64) for _ in range(5_000))
        out.extend(pool.bits(128) for _ in range(5_000))

    threads = [threading.Thread(target=work, args=(out,)) for out in taken]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # 40,000 draws of 64 or 128 random bits: a repeat means a word was handed out twice.
    every = [word for out in taken for word in out]
    assert len(every) == 40_000 == len(set(every))


def test_forget_drops_the_pool() -> None:
    pool = entropy.SuffixPool()
    first = pool.take()
    inherited = list(pool._items)  # what a forked child would start with
    pool._items = iter(inherited)
    pool.forget()
    fresh = [pool.take() for _ in range(len(inherited))]
    assert not set(fresh) & {first, *inherited}
