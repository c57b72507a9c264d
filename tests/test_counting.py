"""couchids.count and couchids.histogram against ground truth kept while inserting.

Ids of every form sit one unit before, one millisecond before, at and one millisecond after
every bucket edge (the window's own edges too), among noise: other types whose names start
alike, untyped ids, other forms of the same type, and foreign ids inside the key ranges (which
the fast count counts and ``exact=True`` leaves out).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from apis import Api
from faultproxy import FaultProxy, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_query import insert

import couchids
from couchids import (
    KUUID,
    KUUID_MS,
    KUUID_MS_REVERSE,
    KUUID_REVERSE,
    SHORT,
    SHORT_REVERSE,
    V7,
    V7S,
    DatabaseNotFoundError,
    IdForm,
    InvalidArgumentError,
    InvalidTimeError,
)
from couchids.core.counting import bucket_edges, counts_by_offset, parse_every
from couchids.core.scan import read_policy
from couchids.server import known_facts, run
from couchids.times import to_ms

FORMS = (KUUID, KUUID_REVERSE, KUUID_MS, KUUID_MS_REVERSE, SHORT, SHORT_REVERSE, V7, V7S)
T0 = to_ms("2024-05-01T00:00:00Z")
HOUR = 3_600_000
#: The histogram's window: four hourly buckets.
START, END = T0, T0 + 4 * HOUR


def type_of(form: IdForm) -> str:
    return f"t{FORMS.index(form)}"


@dataclass
class Data:
    client: CloudantV1
    db: str
    #: (form, type, time) of every id made with a form.
    made: list[tuple[IdForm, str | None, int]]
    #: (form, time) of foreign ids placed inside a form's key range for that time.
    stubs: list[tuple[IdForm, int]]

    def truth(self, form: IdForm, start: int, end: int, *, exact: bool) -> int:
        unit = form.unit_ms
        wanted = sum(
            1
            for f, t, ms in self.made
            if f == form and t == type_of(form) and start <= ms - ms % unit < end
        )
        if exact:
            return wanted
        return wanted + sum(1 for f, ms in self.stubs if f == form and start <= ms < end)


def edge_times(rng: random.Random, form: IdForm) -> list[int]:
    edges = range(START - HOUR, END + 2 * HOUR, HOUR)
    near = [e + d for e in edges for d in (-form.unit_ms, -1, 0, 1)]
    return near + [START + rng.randrange(4 * HOUR) for _ in range(20)]


@pytest.fixture(scope="module")
def data(couch_url: str) -> Iterator[Data]:
    client = client_for(couch_url)
    db = f"test_count_{uuid.uuid4().hex}"
    client.put_database(db=db)
    rng = random.Random(11)
    made: list[tuple[IdForm, str | None, int]] = []
    ids: list[str] = []
    stubs: list[tuple[IdForm, int]] = []
    for form in FORMS:
        doc_type = type_of(form)
        other = FORMS[(FORMS.index(form) + 3) % len(FORMS)]
        for ms in edge_times(rng, form):
            for t, f in ((doc_type, form), (doc_type + "x", form), (None, form), (doc_type, other)):
                ids.append(f.new(ms, type=t))
                made.append((f, t, ms))
        for ms in range(START, END + HOUR, HOUR // 2):
            unit = ms // form.unit_ms
            ids.append(f"{doc_type}:{form.key(unit)}~stub")
            stubs.append((form, ms))
    ids += ["_design/x", "t0", "t0:", "t0;", "t1:zz"]
    assert len(set(ids)) == len(ids)
    insert(client, db, ids)
    yield Data(client, db, made, stubs)
    client.delete_database(db=db)


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize("form", FORMS, ids=str)
def test_histogram_equals_the_truth_at_every_edge(
    api: Api, data: Data, form: IdForm, exact: bool
) -> None:
    buckets = api.histogram(
        data.client, data.db, START, END, every="1h", type=type_of(form), form=form, exact=exact
    )
    assert [to_ms(b.start) for b in buckets] == list(range(START, END, HOUR))
    assert [b.count for b in buckets] == [
        data.truth(form, to_ms(b.start), to_ms(b.end), exact=exact) for b in buckets
    ]
    assert all(b.count > 0 for b in buckets)


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize("form", FORMS, ids=str)
def test_count_equals_the_truth(api: Api, data: Data, form: IdForm, exact: bool) -> None:
    windows = [
        (START, END),
        (START - 1, START + 1),
        (START + HOUR - form.unit_ms, START + HOUR + form.unit_ms),
        (START + 1, END - 1),
        (START, START),
        (0, to_ms("2100-01-01")),
    ]
    for start, end in windows:
        got = api.count(
            data.client, data.db, start, end, type=type_of(form), form=form, exact=exact
        )
        assert got == data.truth(form, start, end, exact=exact), (start, end)


def test_histogram_with_unaligned_window_and_days(data: Data) -> None:
    start, end = START - HOUR // 2, END + HOUR // 3
    buckets = couchids.histogram(data.client, data.db, start, end, every="1d", type="t0")
    # START is a UTC midnight: the day buckets break there.
    assert [(to_ms(b.start), to_ms(b.end)) for b in buckets] == [(start, START), (START, end)]
    assert [b.count for b in buckets] == [
        data.truth(KUUID, start, START, exact=False),
        data.truth(KUUID, START, end, exact=False),
    ]
    hourly = couchids.histogram(data.client, data.db, start, end, every="1h", type="t0")
    assert to_ms(hourly[1].start) == START
    assert sum(b.count for b in hourly) == sum(b.count for b in buckets)


def test_offset_counting_is_used_where_the_server_has_it(
    couch_server: object, client: CloudantV1
) -> None:
    policy = read_policy(None, "count")
    by_offset = run(client, counts_by_offset(known_facts(client), policy, "the server"))
    assert by_offset is (getattr(couch_server, "kind", "") != "pouchdb")


def test_a_missing_database_is_an_error_not_zero(client: CloudantV1) -> None:
    with pytest.raises(DatabaseNotFoundError):
        couchids.count(client, "test_no_such_db", START, END, type="t0")
    with pytest.raises(DatabaseNotFoundError):
        couchids.histogram(client, "test_no_such_db", START, START, type="t0")


def test_bad_arguments(client: CloudantV1, db: str) -> None:
    with pytest.raises(InvalidTimeError):
        couchids.count(client, db, END, START)
    for every in ("0h", "hourly", 5, "1y"):
        with pytest.raises(InvalidArgumentError):
            couchids.histogram(client, db, START, END, every=every)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        couchids.histogram(client, db, START, END, workers=0)


def test_bucket_edges_align_to_utc() -> None:
    assert bucket_edges(START, START + 2 * HOUR, HOUR) == [START, START + HOUR, START + 2 * HOUR]
    assert bucket_edges(START + 5, START + HOUR + 5, HOUR) == [
        START + 5,
        START + HOUR,
        START + HOUR + 5,
    ]
    assert parse_every("1d") == 24 * HOUR
    assert parse_every(" 15m ") == 15 * 60_000


@pytest.mark.needs("couchdb")
def test_a_count_of_100000_documents_takes_at_most_4_requests(couch_url: str) -> None:
    setup = client_for(couch_url)
    db = f"test_count_big_{uuid.uuid4().hex}"
    setup.put_database(db=db)
    try:
        base = to_ms("2024-01-01")
        ids = [KUUID.new(base + n * 1000, type="e") for n in range(100_000)]
        ids += [KUUID.new(base + n * 1000, type="f") for n in range(0, 100_000, 100)]
        for chunk in range(0, len(ids), 10_000):
            body = {"docs": [{"_id": i} for i in ids[chunk : chunk + 10_000]]}
            setup.post_bulk_docs(db=db, bulk_docs=body).get_result()
        with FaultProxy(couch_url) as proxy:
            fresh = client_for(proxy.url)
            got = couchids.count(fresh, db, base, base + 100_000_000, type="e")
            assert got == 100_000
            assert len(proxy.log) <= 4, [(e.method, e.path) for e in proxy.log]
            half = couchids.count(fresh, db, base, base + 50_000_000, type="e")
            assert half == 50_000
            assert len(proxy.log) <= 6
    finally:
        setup.delete_database(db=db)
