# Generated from tests/_async/test_counting.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""couchids.aio.AsyncDatabase.count and .histogram and, in the generated twin,
couchids.Database's, against the ground truth of tests/test_counting.py (its databases, one per
form whose ids hold a sortable time, made when a test first asks for one), and on foreign ids,
weeks, every type at once and parallel scans. (The tests of one API alone, and those that need
no server, are in tests/test_counting.py.)"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator

import pytest
from faultproxy import FaultProxy, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_counting import (
    COUNTED,
    DAY,
    EDGES,
    END,
    HOUR,
    SCOPES,
    START,
    FormDb,
    build,
)
from test_query import insert
from windowtable import SECOND, T0, TIME_FORMS

import couchids
from couchids import KUUID, KUUID_MS, DatabaseNotFoundError, IdForm
from couchids.core.counting import counts_by_offset
from couchids.core.keys import window_keys
from couchids.core.pages import DEFAULT_PARALLEL
from couchids.core.policy import RetryPolicy
from couchids.core.scan import PROBE_ROWS
from couchids.drivers.blocking import known_facts, run
from couchids.idforms.times import to_ms

from .helpers import database


@pytest.fixture(scope="module")
def databases(couch_url: str) -> Iterator[dict[IdForm, FormDb]]:
    client = client_for(couch_url)
    made: dict[IdForm, FormDb] = {}
    yield made
    for found in made.values():
        client.delete_database(db=found.db)


@pytest.fixture
def data(databases: dict[IdForm, FormDb], couch_url: str, form: IdForm) -> FormDb:
    if form not in databases:
        client = client_for(couch_url)
        db = f"test_count_{uuid.uuid4().hex}"
        client.put_database(db=db)
        databases[form] = FormDb(client, db, form, build(client, db, form))
    return databases[form]


@pytest.mark.parametrize("form", TIME_FORMS, ids=str)
def test_histogram_equals_the_truth_at_every_edge(
    blocking_client: CloudantV1, data: FormDb, form: IdForm
) -> None:
    for doc_type in (*SCOPES, "mix"):
        truth = [data.truth(doc_type, a, b) for a, b in itertools.pairwise(EDGES)]
        assert all(truth), truth
        for exact in (False, True):
            buckets = database(blocking_client, data.db).histogram(
                START, END, type=doc_type, form=form, exact=exact
            )
            assert [to_ms(b.start) for b in buckets] == EDGES[:-1]
            assert [b.count for b in buckets] == truth, (doc_type, exact)


@pytest.mark.parametrize("form", TIME_FORMS, ids=str)
def test_count_equals_the_truth(blocking_client: CloudantV1, data: FormDb, form: IdForm) -> None:
    for doc_type in (*SCOPES, "mix"):
        for start, end in COUNTED:
            truth = data.truth(doc_type, start, end)
            for exact in (False, True):
                got = database(blocking_client, data.db, form=form).count(
                    start, end, type=doc_type, exact=exact
                )
                assert got == truth, (doc_type, start - T0, end - T0, exact)


@pytest.mark.parametrize("form", [KUUID], ids=str)
def test_histogram_with_unaligned_window_and_days(
    blocking_client: CloudantV1, data: FormDb, form: IdForm
) -> None:
    start, end = START - HOUR // 2, END + HOUR // 3
    midnight = T0 - T0 % (24 * HOUR) + 24 * HOUR
    assert start < midnight < end
    buckets = database(blocking_client, data.db).histogram(start, end, every="1d", type="ord")
    assert [(to_ms(b.start), to_ms(b.end)) for b in buckets] == [(start, midnight), (midnight, end)]
    assert [b.count for b in buckets] == [
        data.truth("ord", start, midnight),
        data.truth("ord", midnight, end),
    ]
    hourly = database(blocking_client, data.db).histogram(start, end, every="1h", type="ord")
    assert to_ms(hourly[1].start) == start - start % HOUR + HOUR
    assert sum(b.count for b in hourly) == sum(b.count for b in buckets)


def test_foreign_ids_past_the_first_rows_are_counted_by_offset(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    """A count by offset reads the first PROBE_ROWS ids of each range with its offset: a
    foreign id among them has the range scanned, a foreign id further in is counted, as the
    documentation says. A scan (PouchDB Server, exact=True) counts only ids of the form."""
    edges = [EDGES[1] + k * HOUR for k in range(4)]  # whole hours
    n = 2 * PROBE_ROWS
    ids = [KUUID.new(a + k * (HOUR // n), type="ord") for a in edges[:-1] for k in range(n)]
    first = window_keys(KUUID, "ord", edges[0], edges[1])
    assert first is not None
    # The first row the offset request of the first bucket reads, and one past the first
    # rows of the second bucket.
    seen, unseen = first.low + "!", "ord:" + KUUID.key((edges[2] - SECOND) // SECOND) + "~"
    insert(client, db, [*ids, seen, unseen])
    truth = [n, n, n]
    fast = database(blocking_client, db).histogram(edges[0], edges[-1], type="ord")
    exact = database(blocking_client, db).histogram(edges[0], edges[-1], type="ord", exact=True)
    assert [b.count for b in exact] == truth
    by_offset = run(
        client, counts_by_offset(known_facts(client), RetryPolicy.within(None, "count"), db)
    )
    assert [b.count for b in fast] == ([n, n + 1, n] if by_offset else truth)
    assert database(blocking_client, db).count(edges[0], edges[1], type="ord") == n


def test_a_scan_reads_time_slices_in_parallel(
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
    client: CloudantV1,
    couch_url: str,
    db: str,
) -> None:
    # exact=True scans on every server. Each _all_docs request waits at the proxy for a
    # second one: read page after page, none would ever have company.
    n = 6000
    insert(client, db, [KUUID_MS.new(START + k * 1000, type="ord") for k in range(n)])
    with FaultProxy(couch_url) as proxy:
        proxy.hold_for_company("_all_docs", seconds=0.5)
        fresh = blocking_client_for(client_for(proxy.url))
        assert database(fresh, db).count(START, END, type="ord", form=KUUID_MS, exact=True) == n
        assert 1 < proxy.most_in_flight <= DEFAULT_PARALLEL + 1
        buckets = database(fresh, db).histogram(START, END, type="ord", form=KUUID_MS, exact=True)
    seconds = [(b.start, b.end) for b in buckets]
    assert [b.count for b in buckets] == [
        sum(to_ms(a) <= START + k * 1000 < to_ms(b) for k in range(n)) for a, b in seconds
    ]


def test_a_weekly_histogram_splits_at_monday_midnight(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    sunday, monday = to_ms("2024-05-05T23:59:59Z"), to_ms("2024-05-06")
    thursday = to_ms("2024-05-02")
    insert(client, db, [KUUID.new(t, type="w") for t in (thursday, sunday, monday, monday + DAY)])
    for exact in (False, True):
        buckets = database(blocking_client, db).histogram(
            thursday, to_ms("2024-05-13"), every="1w", type="w", exact=exact
        )
        assert [(to_ms(b.start), to_ms(b.end), b.count) for b in buckets] == [
            (thursday, monday, 2),
            (monday, to_ms("2024-05-13"), 2),
        ]


def test_all_types_counts_every_type_present(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    at = to_ms("2024-05-01T12:00:00Z")
    ids = [KUUID.new(at + k * SECOND, type=t) for t in ("a", "b", "order") for k in range(3)]
    ids += [KUUID.new(at, type="b"), KUUID.new(at + 2 * DAY, type="a")]  # the last: outside
    ids += [KUUID.new(at), KUUID.new(at + SECOND), "_design/app", "b:not-an-id"]
    insert(client, db, ids)
    start, end = at - HOUR, at + HOUR
    every = [database(blocking_client, db).count(start, end, type=t) for t in ("a", "b", "order")]
    assert every == [3, 4, 3]
    for exact in (False, True):
        assert (
            database(blocking_client, db).count(start, end, type=couchids.ALL_TYPES, exact=exact)
            == 10
        )
    # Untyped ids are no type: they are counted with type=None alone.
    assert database(blocking_client, db).count(start, end) == 2
    with pytest.raises(DatabaseNotFoundError):
        database(blocking_client, db + "_gone").count(start, end, type=couchids.ALL_TYPES)
