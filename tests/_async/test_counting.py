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
    NOISE_FORMS,
    SCOPES,
    START,
    FormDb,
    build,
    by_offset,
    in_key_range,
)
from test_query import insert
from windowtable import SECOND, T0, TIME_FORMS, make_id

import couchids
from couchids import KUUID, KUUID_MS, DatabaseNotFoundError, IdForm
from couchids.core.keys import window_keys
from couchids.core.pages import DEFAULT_PARALLEL
from couchids.drivers.aio import AsyncClient
from couchids.idforms.times import MAX_MS, to_ms

from .helpers import database, listed

MINUTE = 60 * SECOND


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
async def test_histogram_equals_the_truth_at_every_edge(
    async_client: AsyncClient, data: FormDb, form: IdForm
) -> None:
    spans = list(itertools.pairwise(EDGES))
    for doc_type in (*SCOPES, "mix"):
        truth = [data.truth(doc_type, a, b) for a, b in spans]
        assert all(truth), truth
        # Index-only: every id of each bucket's key range, the foreign ids of mix too.
        in_range = [data.in_range(doc_type, a, b) for a, b in spans]
        assert (in_range == truth) is (doc_type != "mix")
        for index_only in (False, True):
            buckets = await database(async_client, data.db).histogram(
                START, END, type=doc_type, form=form, index_only=index_only
            )
            assert [to_ms(b.start) for b in buckets] == EDGES[:-1]
            want = in_range if index_only and by_offset(data.client) else truth
            assert [b.count for b in buckets] == want, (doc_type, index_only)


@pytest.mark.parametrize("form", TIME_FORMS, ids=str)
async def test_count_equals_the_truth(
    async_client: AsyncClient, data: FormDb, form: IdForm
) -> None:
    for doc_type in (*SCOPES, "mix"):
        for start, end in COUNTED:
            truth = data.truth(doc_type, start, end)
            for index_only in (False, True):
                got = await database(async_client, data.db, form=form).count(
                    start, end, type=doc_type, index_only=index_only
                )
                if index_only and by_offset(data.client):
                    truth = data.in_range(doc_type, start, end)
                assert got == truth, (doc_type, start - T0, end - T0, index_only)


@pytest.mark.parametrize("form", [KUUID], ids=str)
async def test_histogram_with_unaligned_window_and_days(
    async_client: AsyncClient, data: FormDb, form: IdForm
) -> None:
    start, end = START - HOUR // 2, END + HOUR // 3
    midnight = T0 - T0 % (24 * HOUR) + 24 * HOUR
    assert start < midnight < end
    buckets = await database(async_client, data.db).histogram(start, end, every="1d", type="ord")
    assert [(to_ms(b.start), to_ms(b.end)) for b in buckets] == [(start, midnight), (midnight, end)]
    assert [b.count for b in buckets] == [
        data.truth("ord", start, midnight),
        data.truth("ord", midnight, end),
    ]
    hourly = await database(async_client, data.db).histogram(start, end, every="1h", type="ord")
    assert to_ms(hourly[1].start) == start - start % HOUR + HOUR
    assert sum(b.count for b in hourly) == sum(b.count for b in buckets)


@pytest.mark.parametrize("form", TIME_FORMS, ids=str)
async def test_count_is_the_window_among_child_ids_lookalikes_and_design_documents(
    async_client: AsyncClient, client: CloudantV1, db: str, form: IdForm
) -> None:
    """count and histogram are what window returns: not the child documents of an id
    (``ord:<id>:line1``, a common CouchDB pattern), nor ids of other forms, ids one character
    short or long, or design documents, which sort inside the window's key range (an untyped
    one running to the end of time reaches ``_design/``). index_only counts them all, by offset
    on CouchDB; PouchDB Server reads the ids there too."""
    at = [T0 + k * 7 * MINUTE for k in range(8)]  # inside T0 .. T0 + 1h
    made = [make_id(form, t, scope) for scope in SCOPES for t in at]
    children = [f"{i}:line{n}" for i in made for n in (1, 2)]
    alike = [i[:-1] for i in made] + [i + "x" for i in made]
    alike += [
        g.new(t, type=scope) for g in NOISE_FORMS if g != form for scope in SCOPES for t in at
    ]
    insert(client, db, [*made, *children, *alike, "_design/app", "_design/ord", "_design/~"])
    handle = database(async_client, db, form=form)
    offsets = by_offset(client)
    for scope in SCOPES:
        for start, end in ((T0 - HOUR, T0 + HOUR), (T0 + 10 * MINUTE, T0 + 40 * MINUTE)):
            window = await listed(handle.window(start, end, type=scope, include_docs=False))
            assert len(window) == sum(1 for t in at if start <= t < end)
            in_range = in_key_range(client, db, form, scope, start, end)
            assert in_range > 2 * len(window)  # the children alone double it
            assert await handle.count(start, end, type=scope) == len(window)
            quarters = await handle.histogram(start, end, every="15m", type=scope)
            assert [b.count for b in quarters] == [
                sum(1 for t in at if to_ms(b.start) <= t < to_ms(b.end)) for b in quarters
            ]
            fast = await handle.count(start, end, type=scope, index_only=True)
            assert fast == (in_range if offsets else len(window))
    # Untyped ids to the end of time: the key range of many forms holds _design/.
    # (Other forms' ids that read as ids of this one, some years away, are its ids there.)
    window = await listed(handle.window(T0 - HOUR, MAX_MS, include_docs=False))
    assert len(window) >= len(at)
    assert await handle.count(T0 - HOUR, MAX_MS) == len(window)
    in_range = in_key_range(client, db, form, None, T0 - HOUR, MAX_MS)
    keys = window_keys(form, None, T0 - HOUR, MAX_MS)
    assert keys is not None
    if keys.low < "_design/" < keys.high:
        assert in_range >= 3 * len(window) + 3
    fast = await handle.count(T0 - HOUR, MAX_MS, index_only=True)
    assert fast == (in_range if offsets else len(window))


async def test_a_scan_reads_time_slices_in_parallel(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    couch_url: str,
    db: str,
) -> None:
    # A count scans on every server. Each _all_docs request waits at the proxy for a
    # second one: read page after page, none would ever have company.
    n = 6000
    insert(client, db, [KUUID_MS.new(START + k * 1000, type="ord") for k in range(n)])
    with FaultProxy(couch_url) as proxy:
        proxy.hold_for_company("_all_docs", seconds=0.5)
        fresh = async_client_for(client_for(proxy.url))
        assert await database(fresh, db).count(START, END, type="ord", form=KUUID_MS) == n
        assert 1 < proxy.most_in_flight <= DEFAULT_PARALLEL + 1
        buckets = await database(fresh, db).histogram(START, END, type="ord", form=KUUID_MS)
    seconds = [(b.start, b.end) for b in buckets]
    assert [b.count for b in buckets] == [
        sum(to_ms(a) <= START + k * 1000 < to_ms(b) for k in range(n)) for a, b in seconds
    ]


async def test_a_weekly_histogram_splits_at_monday_midnight(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    sunday, monday = to_ms("2024-05-05T23:59:59Z"), to_ms("2024-05-06")
    thursday = to_ms("2024-05-02")
    insert(client, db, [KUUID.new(t, type="w") for t in (thursday, sunday, monday, monday + DAY)])
    for index_only in (False, True):
        buckets = await database(async_client, db).histogram(
            thursday, to_ms("2024-05-13"), every="1w", type="w", index_only=index_only
        )
        assert [(to_ms(b.start), to_ms(b.end), b.count) for b in buckets] == [
            (thursday, monday, 2),
            (monday, to_ms("2024-05-13"), 2),
        ]


async def test_all_types_counts_every_type_present(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    at = to_ms("2024-05-01T12:00:00Z")
    ids = [KUUID.new(at + k * SECOND, type=t) for t in ("a", "b", "order") for k in range(3)]
    ids += [KUUID.new(at, type="b"), KUUID.new(at + 2 * DAY, type="a")]  # the last: outside
    ids += [KUUID.new(at), KUUID.new(at + SECOND), "_design/app", "b:not-an-id"]
    insert(client, db, ids)
    start, end = at - HOUR, at + HOUR
    every = [
        await database(async_client, db).count(start, end, type=t) for t in ("a", "b", "order")
    ]
    assert every == [3, 4, 3]
    for index_only in (False, True):
        handle = database(async_client, db)
        assert await handle.count(start, end, type=couchids.ALL_TYPES, index_only=index_only) == 10
    # Untyped ids are no type: they are counted with type=None alone.
    assert await database(async_client, db).count(start, end) == 2
    with pytest.raises(DatabaseNotFoundError):
        await database(async_client, db + "_gone").count(start, end, type=couchids.ALL_TYPES)


#: Ids of type e, one every 3 minutes for 10 hours: 20 an hour.
BUSY_HOURS, BUSY_EVERY = 10, 3 * 60_000


@pytest.mark.parametrize("other", ["writes", "deletes"])
async def test_count_and_histogram_are_the_window_while_others_write_and_delete(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    couch_url: str,
    db: str,
    other: str,
) -> None:
    """Before each _all_docs request of the client under test reaches the server, another
    client stores ids of type a, or deletes ids of type b (both sort before e, so they move
    every offset of e's keys): a write or delete lands between any two requests, every time.
    count and histogram, index-only or not, answer what window returns; an index-only count
    whose offsets were read in different states of the database reads the ids instead, never
    blaming the server."""
    day = to_ms("2024-05-01")
    made = [KUUID.new(day + k * BUSY_EVERY, type="e") for k in range(BUSY_HOURS * 20)]
    doomed = [KUUID.new(day + k * SECOND, type="b") for k in range(1200)]
    insert(client, db, made + doomed)
    other_client = client_for(couch_url)
    listing = other_client.post_all_docs(db=db, start_key="b:", end_key="b;").get_result()
    revs = [(row["id"], row["value"]["rev"]) for row in listing["rows"]]
    written = itertools.count()

    def write() -> None:
        docs = [{"_id": KUUID.new(day + next(written), type="a")} for _ in range(3)]
        other_client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()

    def delete() -> None:
        gone = [{"_id": i, "_rev": rev, "_deleted": True} for i, rev in revs[:3]]
        del revs[:3]
        if gone:
            other_client.post_bulk_docs(db=db, bulk_docs={"docs": gone}).get_result()

    end = day + BUSY_HOURS * HOUR
    with FaultProxy(couch_url) as proxy:
        proxy.meanwhile(write if other == "writes" else delete, method="POST", path="_all_docs")
        handle = database(async_client_for(client_for(proxy.url)), db)
        window = await listed(handle.window(day, end, type="e", include_docs=False))
        assert len(window) == len(made)
        for index_only in (False, True):
            assert await handle.count(day, end, type="e", index_only=index_only) == len(made)
            hours = await handle.histogram(day, end, type="e", index_only=index_only)
            assert [b.count for b in hours] == [20] * BUSY_HOURS, index_only
    assert revs or other == "writes"  # deletes went on to the end


@pytest.mark.needs("couchdb")
async def test_an_index_only_count_reads_again_the_offsets_a_write_moved(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    couch_url: str,
    db: str,
) -> None:
    """A write lands between the first offset request and the second (sent one after the
    other): the offsets read before it are read again, until all name one update_seq, and
    counted; no id is read."""
    day = to_ms("2024-05-01")
    made = [KUUID.new(day + k * BUSY_EVERY, type="e") for k in range(BUSY_HOURS * 20)]
    insert(client, db, [*made, *(i + ":line1" for i in made[::2])])
    other_client = client_for(couch_url)

    def write() -> None:
        doc = {"_id": KUUID.new(day, type="a")}
        other_client.post_bulk_docs(db=db, bulk_docs={"docs": [doc]}).get_result()

    end = day + BUSY_HOURS * HOUR
    with FaultProxy(couch_url) as proxy:
        pages: list[None] = []
        marks: list[None] = []
        proxy.meanwhile(lambda: pages.append(None), method="POST", containing="include_docs")
        proxy.meanwhile(lambda: marks.append(None), method="POST", containing="update_seq")
        handle = database(async_client_for(client_for(proxy.url)), db, parallel=1)
        proxy.meanwhile(write, method="POST", containing="update_seq", after=1, times=1)
        assert await handle.count(day, end, type="e", index_only=True) == 300
        assert len(marks) >= 3  # two keys, one of them read again
        marks.clear()
        proxy.meanwhile(write, method="POST", containing="update_seq", after=1, times=1)
        hours = await handle.histogram(day, end, type="e", index_only=True)
        assert [b.count for b in hours] == [30] * BUSY_HOURS
        assert len(marks) >= BUSY_HOURS + 2
        assert pages == []
