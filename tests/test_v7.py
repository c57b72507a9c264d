"""UUIDv7 ids (couchids/idforms/v7.py): layout, exact time, strict order within a process,
refusals."""

from __future__ import annotations

import importlib
import itertools
import sys
import threading
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import couchids
from couchids import InvalidTimeError
from couchids.idforms.times import MAX_MS, to_datetime
from couchids.kuuid import v7, v7s

# ``couchids.kuuid.v7`` is the function (re-exported there); the module holds the sequencer.
v7_module = importlib.import_module("couchids.idforms.v7")


def strictly_increasing(items: list[str]) -> bool:
    return all(a < b for a, b in itertools.pairwise(items))


def assert_uuid7(hex32: str, ms: int) -> None:
    """Check the RFC 9562 layout with the standard library's reading of the UUID."""
    u = uuid.UUID(hex=hex32)
    assert u.version == 7
    assert u.variant == uuid.RFC_4122
    assert u.int >> 80 == ms
    assert hex32 == u.hex  # lowercase, 32 characters


@given(st.integers(min_value=0, max_value=MAX_MS))
def test_v7s_layout(ms: int) -> None:
    text = v7s(to_datetime(ms))  # an int before 1980 could be seconds
    assert len(text) == 32
    assert text[:12] == f"{ms:012x}"
    assert text[12] == "7"
    assert text[16] in "89ab"
    assert_uuid7(text, ms)


@given(st.integers(min_value=0, max_value=MAX_MS))
def test_v7_is_the_hyphenated_form(ms: int) -> None:
    text = v7(to_datetime(ms))
    assert len(text) == 36
    assert text == str(uuid.UUID(text))
    assert_uuid7(text.replace("-", ""), ms)
    assert text[:13] == f"{ms:012x}"[:8] + "-" + f"{ms:012x}"[8:]


def test_known_times() -> None:
    assert v7s(0)[:13] == "0000000000007"
    assert v7s("2024-01-01")[:12] == "018cc251f400"  # 1704067200000 ms
    assert v7("2024-01-01")[:15] == "018cc251-f400-7"
    assert v7s(MAX_MS)[:12] == f"{MAX_MS:012x}"


def test_default_is_now() -> None:
    before = couchids.idforms.times.now_ms()
    text = v7s()
    after = couchids.idforms.times.now_ms()
    assert before <= int(text[:12], 16) <= after + 1  # +1: the sequence may move on a millisecond


def test_type_prefix() -> None:
    assert v7s(0, type="user").startswith("user:0000000000007")
    assert v7(0, type="user").startswith("user:00000000-0000-7")


def test_tight_loop_strictly_increases() -> None:
    made = [v7s() for _ in range(12_000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)


def test_v7_and_v7s_share_one_sequence() -> None:
    made = [v7s() if i % 2 else v7().replace("-", "") for i in range(4_000)]
    assert strictly_increasing(made)


def test_repeated_explicit_timestamp_strictly_increases() -> None:
    t = "2021-03-04T05:06:07.089Z"
    made = [v7s(t) for _ in range(10_000)]
    assert strictly_increasing(made)
    assert {m[:13] for m in made} == {v7s(t)[:13]}  # every id keeps exactly that millisecond
    for m in made[:100]:
        assert_uuid7(m, 1614834367089)


@pytest.mark.parametrize(
    "timestamp", ["2021-03-04T05:06:07.089Z", None], ids=["one-explicit-millisecond", "now"]
)
def test_threads_get_distinct_increasing_ids_from_the_sequencer_lock_alone(
    timestamp: str | None,
) -> None:
    """Threads that make ids at once, with no lock of their own: every id is new and each
    thread's ids strictly increase. A tiny switch interval makes the threads interleave inside
    the sequencer: without its lock, threads sharing one explicit millisecond see their ids
    fall every time (100 runs of 100), threads on the clock most times."""
    workers, each = 8, 20_000
    made: list[list[str]] = [[] for _ in range(workers)]
    ready = threading.Barrier(workers)

    def work(out: list[str]) -> None:
        ready.wait()
        for _ in range(each):
            out.append(v7s(timestamp))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(out,)) for out in made]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    every = [m for out in made for m in out]
    assert len(set(every)) == len(every) == workers * each
    for out in made:
        assert strictly_increasing(out)
    if timestamp is not None:
        assert {m[:12] for m in every} == {v7s(timestamp)[:12]}


def test_threads_without_a_shared_lock_never_collide() -> None:
    results: list[list[str]] = [[] for _ in range(4)]

    def work(out: list[str]) -> None:
        out.extend(v7s() for _ in range(5_000))

    threads = [threading.Thread(target=work, args=(out,)) for out in results]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    every = [m for out in results for m in out]
    assert len(set(every)) == len(every) == 20_000
    for out in results:
        assert out == sorted(out)


@given(st.integers(min_value=0, max_value=MAX_MS), st.integers(min_value=0, max_value=MAX_MS))
def test_explicit_times_sort_by_time(t1: int, t2: int) -> None:
    a, b = v7s(to_datetime(t1)), v7s(to_datetime(t2))
    if t1 < t2:
        assert a < b and v7(to_datetime(t1)) < v7(to_datetime(t2))
    elif t1 > t2:
        assert a > b


class FakeClock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def test_clock_stepping_back_holds_the_last_millisecond() -> None:
    # A private sequencer, so the process-wide one never sees the fake clock.
    clock = FakeClock(5_000)
    seq = v7_module.Sequencer(clock=clock)
    ms1, value1 = seq.next(None)
    clock.ms = 4_000  # the clock steps back a second
    ms2, value2 = seq.next(None)
    assert (ms1, ms2) == (5_000, 5_000)
    assert value2 > value1
    clock.ms = 6_000
    assert seq.next(None)[0] == 6_000


def test_exhausted_millisecond() -> None:
    clock = FakeClock(5_000)
    seq = v7_module.Sequencer(clock=clock)
    seq.next(None)
    seq._recent[5_000] = (1 << 74) - 1  # as if the 74 bits of this millisecond were used up
    # For the current time, the next millisecond is taken (RFC 9562 allows it) ...
    assert seq.next(None)[0] == 5_001
    # ... and later calls stay on it while the clock lags behind.
    assert seq.next(None)[0] == 5_001
    # An explicit time must be encoded exactly, so it is refused instead.
    seq._recent[7_000] = (1 << 74) - 1
    with pytest.raises(InvalidTimeError, match="its 74 random bits ran out"):
        seq.next(7_000)


def test_clock_sequence_survives_many_explicit_times() -> None:
    # More explicit milliseconds than the sequencer remembers must not evict the clock's own
    # sequence: ids for "now" in one frozen millisecond keep strictly increasing.
    seq = v7_module.Sequencer(clock=FakeClock(5_000))
    before = [seq.next(None) for _ in range(3)]
    for ms in range(10_000, 10_000 + 2 * v7_module.RECENT):
        seq.next(ms)
    after = [seq.next(None) for _ in range(3)]
    values = [value for ms, value in before + after]
    assert {ms for ms, _ in before + after} == {5_000}
    assert values == sorted(values) and len(set(values)) == len(values)


def test_explicit_time_of_the_clock_millisecond_continues_its_sequence() -> None:
    seq = v7_module.Sequencer(clock=FakeClock(5_000))
    values = [seq.next(None)[1], seq.next(5_000)[1], seq.next(None)[1], seq.next(5_000)[1]]
    assert values == sorted(values) and len(set(values)) == 4


def test_first_value_of_a_millisecond_leaves_headroom() -> None:
    seq = v7_module.Sequencer()
    for _ in range(200):
        _, value = seq.next(123_456_789)
        assert value < 1 << 74


@pytest.mark.parametrize(
    ("timestamp", "match"),
    [
        (-1, "before 1970"),
        (MAX_MS + 1, "after 9999-12-31"),
        ("soon", "not an ISO-8601"),
        (1.5, "is a float"),
        (False, "is not a time"),
        (b"2018", "is not a time"),
    ],
    ids=repr,
)
def test_bad_times_are_refused(timestamp: Any, match: str) -> None:
    for make in (v7, v7s):
        with pytest.raises(InvalidTimeError, match=match):
            make(timestamp)
