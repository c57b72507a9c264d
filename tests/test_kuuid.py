"""kuuid ids (couchids/idforms/kuuid.py) through couchids.kuuid, the npm package's function set:
its names, kuuid's published answers and recorded vectors, shapes, order and refusals."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kuuid_node import KuuidNode

import couchids
from couchids import InvalidArgumentError, InvalidTimeError, kuuid
from couchids.idforms.base62 import decode as base62_decode
from couchids.idforms.times import MAX_MS, to_datetime

MAX_BLOCK = "4gfFC3"
LAST_MS_PREFIX = 62**8 - 1  # the largest time an 8-character prefix holds


def name(value: object) -> str:
    """Readable test ids: a function's name, else the value's repr."""
    return getattr(value, "__name__", repr(value))


#: What kuuid 3.0.1 exports (the ``export function``s of its index.js; the v7 vectors come from
#: it). kuuid 1.0.3, installed in node/ for the cross-checks, exports all but v7s and v7.
KUUID_EXPORTS = (
    *("id", "idr", "ids", "idsr", "idms", "idmsr", "rand"),
    *("prefix", "prefixms", "prefixReverse", "prefixReverseMs", "v7s", "v7"),
)
#: The Python spelling of kuuid's camelCase names.
SNAKE = {
    "prefixms": "prefix_ms",
    "prefixReverse": "prefix_reverse",
    "prefixReverseMs": "prefix_reverse_ms",
}


def test_couchids_kuuid_has_every_function_kuuid_exports_under_its_name() -> None:
    for npm_name in KUUID_EXPORTS:
        function = getattr(kuuid, npm_name)
        assert callable(function) and npm_name in kuuid.__all__, npm_name
        assert function is getattr(kuuid, SNAKE.get(npm_name, npm_name)), npm_name
    # Nothing else: each Python spelling is the same function as kuuid's name.
    assert sorted(kuuid.__all__) == sorted({*KUUID_EXPORTS, *SNAKE.values()})
    # couchids.id is kuuid's id; the rest live in couchids.kuuid only.
    assert couchids.id is kuuid.id
    assert not [name for name in kuuid.__all__ if name != "id" and hasattr(couchids, name)]


def test_the_installed_kuuid_exports_nothing_couchids_kuuid_lacks(kuuid_node: KuuidNode) -> None:
    exported = kuuid_node.exports()
    assert {"id", "idms", "prefixReverseMs"} <= set(exported)
    assert set(exported) <= set(KUUID_EXPORTS)


# kuuid 1.0.3's index.test.js, copied from its published source.
KUUID_PREFIX_VECTORS: list[tuple[Callable[[Any], str], Any, str]] = [
    (kuuid.prefix, "2018-01-01T00:00:00.000Z", "001eVnWK"),
    (kuuid.prefix, "1970-01-01T00:00:00.000Z", "00000000"),
    (kuuid.prefix, "1971-01-01T00:00:00.000Z", "00028JxA"),
    (kuuid.prefix, "1980-01-01T00:00:00.000Z", "000LLwUi"),
    (kuuid.prefix, "2020-01-01T00:00:00.000Z", "001imRQe"),
    (kuuid.prefix, "2170-01-01T00:00:00.000Z", "006t88C8"),
    (kuuid.prefix, 1514764800000, "001eVnWK"),
    (kuuid.prefix_reverse, "1970-01-01T00:00:00Z", "zzzzzzzz"),
    (kuuid.prefix_reverse, "1970-01-01T00:00:01Z", "zzzzzzzy"),
]


@pytest.mark.parametrize(("make", "timestamp", "expected"), KUUID_PREFIX_VECTORS, ids=name)
def test_kuuid_published_prefixes(
    make: Callable[[Any], str], timestamp: Any, expected: str
) -> None:
    assert make(timestamp) == expected


def test_kuuid_user_supplied_timestamp_vector() -> None:
    doc_id = kuuid.id("2018-01-01T00:00:00.000Z")
    assert doc_id[:8] == "001eVnWK" == kuuid.prefix("2018-01-01T00:00:00.000Z")


def blocks_of(random_part: str) -> list[str]:
    assert len(random_part) % 6 == 0
    return [random_part[i : i + 6] for i in range(0, len(random_part), 6)]


def assert_valid_blocks(random_part: str, count: int) -> None:
    blocks = blocks_of(random_part)
    assert len(blocks) == count
    for block in blocks:
        assert len(block) == 6
        assert block <= MAX_BLOCK
        assert base62_decode(block) < 2**32


# (maker, prefix maker, total length) for each kuuid function.
SHAPES: list[tuple[Callable[..., str], Callable[[Any], str], int]] = [
    (kuuid.id, kuuid.prefix, 32),
    (kuuid.idr, kuuid.prefix_reverse, 32),
    (kuuid.ids, kuuid.prefix, 20),
    (kuuid.idsr, kuuid.prefix_reverse, 20),
    (kuuid.idms, kuuid.prefix_ms, 32),
    (kuuid.idmsr, kuuid.prefix_reverse_ms, 32),
]


@pytest.mark.parametrize(
    ("make", "make_prefix", "length"), SHAPES, ids=lambda x: getattr(x, "__name__", str(x))
)
@pytest.mark.parametrize("timestamp", ["2018-07-20T10:10:34.234Z", 0, 999, 1000, 62**5 * 1000])
def test_shape_of_each_maker(
    make: Callable[..., str], make_prefix: Callable[[Any], str], length: int, timestamp: Any
) -> None:
    doc_id = make(timestamp)
    assert len(doc_id) == length
    assert doc_id[:8] == make_prefix(timestamp)
    assert_valid_blocks(doc_id[8:], (length - 8) // 6)
    typed = make(timestamp, type="user")
    assert typed.startswith("user:" + make_prefix(timestamp))
    assert len(typed) == len("user:") + length


def test_named_makers_are_id_with_options() -> None:
    t = "2018-07-20T10:10:34.234Z"
    pairs = [
        (kuuid.idr(t), kuuid.id(t, reverse=True)),
        (kuuid.ids(t), kuuid.id(t, random=2)),
        (kuuid.idsr(t), kuuid.id(t, random=2, reverse=True)),
        (kuuid.idms(t), kuuid.id(t, millisecond=True)),
        (kuuid.idmsr(t), kuuid.id(t, reverse=True, millisecond=True)),
    ]
    for named, general in pairs:
        assert named[:8] == general[:8] and len(named) == len(general)
    assert kuuid.prefix(t, reverse=True, millisecond=True) == kuuid.prefix_reverse_ms(t)
    assert kuuid.prefix(t, millisecond=True) == kuuid.prefix_ms(t)


def test_prefix_values_are_the_time() -> None:
    t = datetime(2018, 7, 20, 10, 10, 34, 234000, tzinfo=UTC)
    ms = 1532081434234
    assert base62_decode(kuuid.prefix(t)) == ms // 1000
    assert base62_decode(kuuid.prefix_ms(t)) == ms
    assert base62_decode(kuuid.prefix_reverse(t)) == LAST_MS_PREFIX - ms // 1000
    assert base62_decode(kuuid.prefix_reverse_ms(t)) == LAST_MS_PREFIX - ms


def test_zero_is_the_epoch_not_now() -> None:
    # kuuid reads a falsy timestamp as "now"; couchids takes 0 at its word.
    assert kuuid.id(0)[:8] == "00000000"
    assert kuuid.idr(0)[:8] == "zzzzzzzz"
    assert kuuid.idms(0)[:8] == "00000000"


def test_default_is_now() -> None:
    before = kuuid.prefix(int(datetime.now(UTC).timestamp() * 1000))
    doc_id = kuuid.id()
    after = kuuid.prefix(int(datetime.now(UTC).timestamp() * 1000))
    assert before <= doc_id[:8] <= after


@pytest.mark.parametrize("blocks", [1, 2, 3, 4])
def test_random_block_counts(blocks: int) -> None:
    doc_id = kuuid.id("2018-01-01", random=blocks)
    assert len(doc_id) == 8 + 6 * blocks
    assert_valid_blocks(doc_id[8:], blocks)
    assert_valid_blocks(kuuid.rand(blocks), blocks)


def test_rand_blocks_are_fresh_and_valid() -> None:
    samples = [kuuid.rand() for _ in range(20_000)]
    assert len(set(samples)) == len(samples)
    for sample in samples:
        assert_valid_blocks(sample, 4)


@pytest.mark.parametrize("blocks", [0, 5, -1, True, False, 2.0, "2", None])
def test_random_outside_1_to_4_is_refused(blocks: Any) -> None:
    expected = f"random={blocks!r}: the number of random blocks must be an int from 1 to 4"
    with pytest.raises(InvalidArgumentError, match=re.escape(expected)):
        kuuid.id(random=blocks)
    with pytest.raises(InvalidArgumentError, match="must be an int from 1 to 4"):
        kuuid.rand(blocks)


def test_last_millisecond_prefix_and_beyond() -> None:
    assert kuuid.prefix_ms(LAST_MS_PREFIX) == "zzzzzzzz"
    assert kuuid.prefix_reverse_ms(LAST_MS_PREFIX) == "00000000"
    assert kuuid.idms(LAST_MS_PREFIX)[:8] == "zzzzzzzz"
    for make in (kuuid.idms, kuuid.idmsr, kuuid.prefix_ms, kuuid.prefix_reverse_ms):
        with pytest.raises(InvalidTimeError) as info:
            make(LAST_MS_PREFIX + 1)
        message = str(info.value)
        assert "8888-12-02" in message and "use second precision" in message
    # Second precision reaches the end of what a datetime holds.
    assert kuuid.id(LAST_MS_PREFIX + 1)[:8] == kuuid.prefix(LAST_MS_PREFIX + 1)
    assert base62_decode(kuuid.prefix(MAX_MS)) == MAX_MS // 1000


@pytest.mark.parametrize(
    ("timestamp", "match"),
    [
        (-1, "before 1970"),
        ("1969-12-31T23:59:59Z", "before 1970"),
        (MAX_MS + 1, "after 9999-12-31"),
        ("not a date", "not an ISO-8601 date"),
        (1514764800.0, "is a float"),
        (True, "is not a time"),
        ([2018], "is not a time"),
    ],
    ids=repr,
)
def test_bad_times_are_refused_by_every_maker(timestamp: Any, match: str) -> None:
    for make, _, _ in SHAPES:
        with pytest.raises(InvalidTimeError, match=match):
            make(timestamp)
    for make_prefix in (kuuid.prefix, kuuid.prefix_ms, kuuid.prefix_reverse):
        with pytest.raises(InvalidTimeError, match=match):
            make_prefix(timestamp)


MODES = [(False, False), (True, False), (False, True), (True, True)]  # (reverse, millisecond)


@pytest.mark.parametrize(("reverse", "millisecond"), MODES)
@given(data=st.data())
def test_ids_sort_by_time(reverse: bool, millisecond: bool, data: st.DataObject) -> None:
    top = LAST_MS_PREFIX if millisecond else MAX_MS
    times = st.integers(min_value=0, max_value=top)
    t1, t2 = sorted((data.draw(times), data.draw(times)))
    unit = 1 if millisecond else 1000
    blocks = data.draw(st.integers(min_value=1, max_value=4))
    id1, id2 = (
        kuuid.id(
            to_datetime(t), type="log", random=blocks, reverse=reverse, millisecond=millisecond
        )
        for t in (t1, t2)
    )
    p1, p2 = id1[4:12], id2[4:12]
    if t1 // unit == t2 // unit:
        # One second (or millisecond): equal prefixes, order left to the random part.
        assert p1 == p2
    elif reverse:
        assert p1 > p2 and id1 > id2
    else:
        assert p1 < p2 and id1 < id2
