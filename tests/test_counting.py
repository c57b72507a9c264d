"""Database.count and Database.histogram against ground truth kept while inserting, for every
form whose ids hold a sortable time, typed and untyped.

Each form gets a small database (made when a test first asks for it). For the type ``ord``
and for untyped ids it holds ids one unit before, one millisecond before, at and one
millisecond after every bucket edge of the histogram's window (the window's own edges too),
ids at second edges and spread over weeks (for the windows of tests/windowtable.py), and noise
near them that the count must not take: types whose names start alike, other forms at the same
times (those that sort outside every range counted there), typed ids for the untyped count and
untyped ones for the typed count, design documents. The count and the index-only count
(offsets on CouchDB) must equal the truth.

The type ``mix`` of each database holds foreign ids inside its key ranges: one at the start of
every bucket, and ids of other forms made at the same times, some of which sort among its ids.
The count leaves them out; the index-only count counts every id of the range, them too.

The tests that count through the handles of both APIs are written once, in
tests/_async/test_counting.py; this module holds the ground truth and the tests of one API alone.
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from faultproxy import FaultProxy, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import answer, body_of, intercepted, path_of
from test_query import insert
from windowtable import SECOND, T0, WEEK, WINDOWS, make_id

import couchids
from couchids import (
    KUUID,
    SHORT,
    TID62,
    ULID,
    UTC_RANDOM,
    V7,
    V7S,
    DatabaseNotFoundError,
    IdForm,
    InvalidArgumentError,
    InvalidTimeError,
    ServerError,
)
from couchids.core.counting import SAME_SEQ_ROUNDS, bucket_edges, counts_by_offset, parse_every
from couchids.core.keys import KeyRange, window_keys
from couchids.core.periods import period_of
from couchids.core.policy import RetryPolicy
from couchids.core.windows import DEFAULT_PAGE_SIZE
from couchids.drivers.blocking import known_facts, run
from couchids.idforms.times import to_datetime, to_ms

HOUR = 3_600_000
#: The histogram's window: T0 is no hour edge, so its first and last buckets are partial, and
#: a UTC midnight lies inside it.
START, END = T0 - 2 * HOUR, T0 + 2 * HOUR
EDGES = [START, *range(START - START % HOUR + HOUR, END, HOUR), END]
#: The count's windows: windowtable's and the histogram's (whose buckets it counts too).
COUNTED = [(T0 + a, T0 + b) for a, b in WINDOWS] + [(START, END)]
SCOPES = ("ord", None)
#: Forms whose ids are made at the same times as noise.
NOISE_FORMS = (KUUID, SHORT, V7, V7S, TID62, ULID, UTC_RANDOM)


@dataclass(frozen=True)
class Made:
    """An id of the database's form: what it was made as."""

    id: str
    type: str | None
    #: The time it holds: the time it was made at, at its form's precision.
    time: int


@dataclass
class FormDb:
    client: CloudantV1
    db: str
    form: IdForm
    made: list[Made]

    def truth(self, doc_type: str | None, start: int, end: int) -> int:
        return sum(1 for m in self.made if m.type == doc_type and start <= m.time < end)

    def in_range(self, doc_type: str | None, start: int, end: int) -> int:
        return in_key_range(self.client, self.db, self.form, doc_type, start, end)


def by_offset(client: CloudantV1) -> bool:
    """Whether the server counts rows by ``offset`` (where index_only reads offsets)."""
    policy = RetryPolicy.within(None, "count")
    return run(client, counts_by_offset(known_facts(client), policy, "the server"))


def in_key_range(
    client: CloudantV1, db: str, form: IdForm, doc_type: str | None, start: int, end: int
) -> int:
    """How many ids of any kind ``db`` holds in the key range of the window ``[start, end)``
    of ``form`` and ``doc_type``: what an index-only count counts."""
    keys = window_keys(form, doc_type, start, end)
    if keys is None:
        return 0
    rows = client.post_all_docs(db=db, start_key=keys.low).get_result()["rows"]
    return sum(1 for row in rows if keys.low <= row["id"] < keys.high)


def edge_times(form: IdForm) -> list[int]:
    """One unit before, one millisecond before, at and one millisecond after every edge of the
    histogram's window, and of the buckets just outside it."""
    edges = [START - HOUR, *EDGES, END + HOUR]
    return sorted({e + d for e in edges for d in (-form.unit_ms, -1, 0, 1)})


def times(rng: random.Random, form: IdForm) -> list[int]:
    seconds = [T0 + k * SECOND + d for k in range(5) for d in (0, 1, 999)]
    inside = [START + rng.randrange(END - START) for _ in range(8)]
    spread = [T0 + rng.randrange(-3 * WEEK, 4 * WEEK) for _ in range(6)]
    return [*edge_times(form), *seconds, *inside, *spread, T0 - 53 * WEEK]


def counted_ranges(form: IdForm, doc_type: str | None) -> list[KeyRange]:
    return [r for a, b in COUNTED if (r := window_keys(form, doc_type, a, b)) is not None]


def build(client: CloudantV1, db: str, form: IdForm) -> list[Made]:
    """Fill ``db`` for ``form``; return the ids of the form, the truth."""
    rng = random.Random(str(form))
    made = [
        Made(make_id(form, ms, t), t, ms - ms % form.unit_ms)
        for t in SCOPES
        for ms in times(rng, form)
    ]
    ranges = [r for t in SCOPES for r in counted_ranges(form, t)]
    noise = [make_id(form, ms, t) for t in ("ordx", "or", "ord-1") for ms in times(rng, form)[::3]]
    others = [
        g.new(to_datetime(ms), type=t)
        for g in NOISE_FORMS
        if g != form
        for t in SCOPES
        for ms in times(rng, form)[::4]
    ]
    # Only the type ``mix`` holds foreign ids inside the ranges counted: here they sort outside.
    noise += [i for i in others if not any(r.low <= i < r.high for r in ranges)]
    noise += ["_design/ord", "_design/x", "ord", "ord:", "ord;"]
    made += mixed(form)
    stubs = [
        r.low + "!" for a, b in itertools.pairwise(EDGES) if (r := window_keys(form, "mix", a, b))
    ]
    mix_noise = [g.new(T0, type="mix") for g in NOISE_FORMS if g != form]
    ids = [m.id for m in made] + noise + stubs + mix_noise
    assert len(set(ids)) == len(ids)
    insert(client, db, ids)
    return made


def mixed(form: IdForm) -> list[Made]:
    """The ids of the form of type ``mix``: one millisecond before and at every inner bucket
    edge."""
    return [
        Made(make_id(form, ms, "mix"), "mix", ms - ms % form.unit_ms)
        for e in EDGES[1:-1]
        for ms in (e - 1, e)
    ]


def test_offset_counting_is_used_where_the_server_has_it(
    couch_server: object, client: CloudantV1
) -> None:
    policy = RetryPolicy.within(None, "count")
    by_offset = run(client, counts_by_offset(known_facts(client), policy, "the server"))
    assert by_offset is (getattr(couch_server, "kind", "") != "pouchdb")


def test_a_missing_database_is_an_error_not_zero(client: CloudantV1) -> None:
    with pytest.raises(DatabaseNotFoundError):
        couchids.Database(client, "test_no_such_db").count(START, END, type="t0")
    with pytest.raises(DatabaseNotFoundError):
        couchids.Database(client, "test_no_such_db").histogram(START, START, type="t0")


def test_bad_arguments(client: CloudantV1, db: str) -> None:
    with pytest.raises(InvalidTimeError):
        couchids.Database(client, db).count(END, START)
    for every in ("0h", "hourly", 5, "1y"):
        with pytest.raises(InvalidArgumentError):
            couchids.Database(client, db).histogram(START, END, every=every)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        couchids.Database(client, db).with_options(parallel=0).histogram(START, END)


def test_bucket_edges_align_to_utc() -> None:
    assert bucket_edges(START, END, HOUR) == EDGES
    aligned = to_ms("2024-05-01")
    assert bucket_edges(aligned, aligned + 2 * HOUR, HOUR) == [
        aligned,
        aligned + HOUR,
        aligned + 2 * HOUR,
    ]
    assert parse_every("1d") == 24 * HOUR
    assert parse_every(" 15m ") == 15 * 60_000


@pytest.mark.needs("couchdb")
def test_an_index_only_count_of_20000_documents_reads_no_rows(couch_url: str) -> None:
    # A scan reads them in 10 pages of DEFAULT_PAGE_SIZE (bench/bench_count.py counts
    # 100,000); offsets are a request a key (two; another for a key read again when the
    # shards' update_seq came back in another order).
    assert 20_000 // DEFAULT_PAGE_SIZE >= 10
    setup = client_for(couch_url)
    db = f"test_count_big_{uuid.uuid4().hex}"
    setup.put_database(db=db)
    try:
        base = to_ms("2024-01-01")
        ids = [KUUID.new(base + n * 1000, type="e") for n in range(20_000)]
        ids += [KUUID.new(base + n * 1000, type="f") for n in range(0, 20_000, 100)]
        for chunk in range(0, len(ids), 10_000):
            body = {"docs": [{"_id": i} for i in ids[chunk : chunk + 10_000]]}
            setup.post_bulk_docs(db=db, bulk_docs=body).get_result()
        with FaultProxy(couch_url) as proxy:
            pages: list[None] = []
            proxy.meanwhile(lambda: pages.append(None), method="POST", containing="include_docs")
            fresh = couchids.Database(client_for(proxy.url), db)
            assert fresh.count(base, base + 20_000_000, type="e", index_only=True) == 20_000
            assert fresh.count(base, base + 10_000_000, type="e", index_only=True) == 10_000
            assert pages == []
            marks = proxy.requests("POST", "_all_docs")
            assert 4 <= len(marks) <= 4 * SAME_SEQ_ROUNDS
            # The count reads the ids: every row of the window.
            assert fresh.count(base, base + 10_000_000, type="e") == 10_000
            assert len(pages) >= 10_000 // DEFAULT_PAGE_SIZE
    finally:
        setup.delete_database(db=db)


# -- weeks start on Monday; every type at once -----------------------------------------------

DAY = 24 * HOUR


def test_weekly_buckets_start_on_monday_as_a_series_weeks_do() -> None:
    # 1970-01-01 was a Thursday: edges counted from it put weeks on Thursdays.
    start, end = to_ms("2024-04-25T10:00:00Z"), to_ms("2024-06-30")  # a Thursday, a Sunday
    for every in ("1w", "2w"):
        edges = bucket_edges(start, end, parse_every(every))
        inner = edges[1:-1]
        assert [to_datetime(e).strftime("%a %H:%M") for e in inner] == ["Mon 00:00"] * len(inner)
        # The same Mondays as the ISO weeks of a weekly Series.
        assert inner[0] == period_of("week", start).end_ms
        assert all(period_of("week", e).start_ms == e for e in inner)
    assert bucket_edges(start, end, parse_every("1w"))[1] == to_ms("2024-04-29")
    # Hours and days keep their edges: whole hours and UTC midnights.
    assert bucket_edges(start, end, DAY)[1] == to_ms("2024-04-26")
    assert bucket_edges(start, end, HOUR)[1] == to_ms("2024-04-25T11:00:00Z")


def test_all_types_counts_every_type_of_a_series(client: CloudantV1, db: str) -> None:
    series = couchids.Series(client, db, every="day")
    at = to_ms("2024-05-01T12:00:00Z")
    docs = [{"at": at + k * DAY, "t": t} for k in range(2) for t in ("a", "b")]
    for t in ("a", "b"):
        series.bulk_create([d for d in docs if d["t"] == t], type=t, time_of=lambda d: d["at"])
    try:
        assert series.count(at - DAY, at + 3 * DAY, type=couchids.ALL_TYPES) == 4
        assert series.count(at, at + HOUR, type=couchids.ALL_TYPES) == 2
    finally:
        for name in series.databases():
            client.delete_database(db=name)


@pytest.mark.needs("couchdb")
def test_offsets_that_do_not_count_rows_are_an_error_not_a_count(
    client: CloudantV1, db: str
) -> None:
    # Offsets read at one update_seq were read in one state of the database: a lower second
    # one is a server whose offset is no row count, and its difference is no count.
    keys = window_keys(KUUID, "t0", START, END)
    assert keys is not None
    offsets = {keys.low: 10, keys.high: 5}

    def backwards(request: dict[str, Any], send: Callable[[], Any]) -> Any:
        body = body_of(request) if path_of(request).endswith("/_all_docs") else None
        if isinstance(body, dict) and body.get("start_key") in offsets:
            offset = offsets[body["start_key"]]
            return answer(
                200, {"total_rows": 20, "offset": offset, "update_seq": "7-g1", "rows": []}
            )
        return send()

    with intercepted(client, backwards), pytest.raises(ServerError, match="do not count rows"):
        couchids.Database(client, db).count(START, END, type="t0", index_only=True)


@pytest.mark.needs("couchdb")
def test_an_index_only_count_without_update_seq_reads_the_ids(client: CloudantV1, db: str) -> None:
    # A server that does not say which state of the database an offset was read in proves
    # nothing about two of them: the ids are read instead.
    made = [KUUID.new(START + k * SECOND, type="t0") for k in range(30)]
    insert(client, db, [*made, *(i + ":line1" for i in made)])

    def unsequenced(request: dict[str, Any], send: Callable[[], Any]) -> Any:
        body = body_of(request) if path_of(request).endswith("/_all_docs") else None
        if isinstance(body, dict) and body.get("update_seq"):
            found = send().get_result().json()
            found.pop("update_seq")
            return answer(200, found)
        return send()

    assert couchids.Database(client, db).count(START, END, type="t0", index_only=True) == 60
    with intercepted(client, unsequenced):
        assert couchids.Database(client, db).count(START, END, type="t0", index_only=True) == 30
