"""No id repeats across forked processes and threads (couchids/idforms/entropy.py and v7.py fork
hooks)."""

from __future__ import annotations

import multiprocessing
import threading
from multiprocessing.connection import Connection

import couchids
from couchids import kuuid

PER_KIND = 20_000
WORKERS = 4
FORK = multiprocessing.get_context("fork")


def make_ids() -> list[str]:
    made = [couchids.id() for _ in range(PER_KIND)]
    made += [kuuid.ids() for _ in range(PER_KIND)]
    made += [kuuid.v7s() for _ in range(PER_KIND)]
    return made


def child_make_ids(conn: Connection) -> None:
    conn.send(make_ids())
    conn.close()


def child_rand(conn: Connection, count: int) -> None:
    conn.send([kuuid.rand() for _ in range(count)])
    conn.close()


def child_v7s(conn: Connection, timestamp: int, count: int) -> None:
    conn.send([kuuid.v7s(timestamp) for _ in range(count)])
    conn.close()


def test_no_duplicates_across_processes_and_threads() -> None:
    # The parent fills its pool and its UUIDv7 sequence first, so every child inherits both.
    parent_before = make_ids()

    pipes = [FORK.Pipe(duplex=False) for _ in range(WORKERS)]
    children = [FORK.Process(target=child_make_ids, args=(send,)) for _, send in pipes]
    for child in children:
        child.start()

    # Threads start only after the forks: forking while threads hold locks is unsafe.
    from_threads: list[list[str]] = [[] for _ in range(WORKERS)]
    threads = [
        threading.Thread(target=lambda out=out: out.extend(make_ids())) for out in from_threads
    ]
    for th in threads:
        th.start()

    from_children = [recv.recv() for recv, _ in pipes]
    for child in children:
        child.join(timeout=120)
        assert child.exitcode == 0
    for th in threads:
        th.join()

    batches = [parent_before, *from_children, *from_threads]
    assert [len(b) for b in batches] == [3 * PER_KIND] * (1 + 2 * WORKERS)
    every = [doc_id for batch in batches for doc_id in batch]
    assert len(set(every)) == len(every)
    # The random parts of the kuuid ids alone are distinct too: a shared pool would repeat
    # them even where the time prefixes differ.
    for kind in (slice(0, PER_KIND), slice(PER_KIND, 2 * PER_KIND)):
        suffixes = [doc_id[8:] for batch in batches for doc_id in batch[kind]]
        assert len(set(suffixes)) == len(suffixes)


def test_child_forked_after_the_parent_drew_does_not_replay_the_parent() -> None:
    kuuid.rand()  # the parent's pool now holds a batch of unused suffixes
    recv, send = FORK.Pipe(duplex=False)
    child = FORK.Process(target=child_rand, args=(send, 3_000))
    child.start()
    parent_after = [kuuid.rand() for _ in range(3_000)]
    child_draws = recv.recv()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert len(child_draws) == 3_000
    # Without the at-fork hook both would hand out the same inherited suffixes, in order.
    assert not set(child_draws) & set(parent_after)


def test_child_forked_after_the_parent_made_v7s_does_not_replay_the_parent() -> None:
    t = 1_700_000_000_123
    kuuid.v7s(t)  # the parent now has a sequence for t and a batch of random words
    recv, send = FORK.Pipe(duplex=False)
    child = FORK.Process(target=child_v7s, args=(send, t, 2_000))
    child.start()
    parent_after = [kuuid.v7s(t) for _ in range(2_000)]
    child_made = recv.recv()
    child.join(timeout=60)
    assert child.exitcode == 0
    # Same millisecond on both sides: only fresh randomness in the child keeps them apart.
    assert {m[:12] for m in child_made} == {m[:12] for m in parent_after} == {f"{t:012x}"}
    assert not set(child_made) & set(parent_after)
