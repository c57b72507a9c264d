"""Every operation that has several requests in flight, through couchids.aio's handles and, in
the generated twin, the blocking ones, run through the Cloudant-rules server
(tests/cloudantproxy.py) at 5 requests a second of each class, with the SDK's own retries off
and on: no error, every document once, although the server answered 429s. The plan, the data
and the pacer's own tests are in tests/test_pacing.py.
"""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Awaitable, Callable

import pytest
from cloudantproxy import CloudantProxy
from faultproxy import FaultProxy, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_pacing import CUT, END, OPTIONS, SMALL, T0, N, docs, made_at, seeded, stored_ids

import couchids
from couchids.aio import AsyncDatabase
from couchids.drivers.aio import AsyncClient

from .helpers import database, listed, series_of

#: An operation of the cases: ``operation(shop, client, db, ids)`` checks what it did.
Operation = Callable[[AsyncDatabase, CloudantV1, str, list[str]], Awaitable[None]]


def handle(
    client_over: Callable[[CloudantV1], AsyncClient], url: str, db: str, retries: bool
) -> AsyncDatabase:
    """The handle of ``db`` through the Cloudant-rules server at ``url``, with the SDK's own
    retries on or off."""
    cloudant = client_for(url)
    if retries:
        cloudant.enable_retries(max_retries=3, retry_interval=1.0)
    return database(client_over(cloudant), db, **OPTIONS)


async def op_bulk_create(shop: AsyncDatabase, client: CloudantV1, db: str, ids: list[str]) -> None:
    results = await shop.bulk_create(docs(), type="click", time_of=made_at)
    assert all(r.ok for r in results) and len(results) == N
    stored = stored_ids(client, db)
    assert sorted(stored) == sorted(r.id for r in results)  # each once, none missing


async def op_window(shop: AsyncDatabase, client: CloudantV1, db: str, ids: list[str]) -> None:
    got = [doc["_id"] for doc in await listed(shop.window(T0, END, type="click"))]
    assert got == sorted(ids, reverse=True)


async def op_export(shop: AsyncDatabase, client: CloudantV1, db: str, ids: list[str]) -> None:
    out = io.StringIO()
    await shop.export(T0, END, out=out, type="click")
    got = [json.loads(line)["_id"] for line in out.getvalue().splitlines()]
    assert sorted(got) == sorted(ids) and len(set(got)) == N


async def op_histogram(shop: AsyncDatabase, client: CloudantV1, db: str, ids: list[str]) -> None:
    buckets = await shop.histogram(T0, END, every="10m", type="click")
    assert [b.count for b in buckets] == [10] * (N // 10)


async def op_expire(shop: AsyncDatabase, client: CloudantV1, db: str, ids: list[str]) -> None:
    await shop.expire(CUT, type="click", dry_run=False)
    assert sorted(stored_ids(client, db)) == sorted(ids)[N // 2 :]


async def op_archive(shop: AsyncDatabase, client: CloudantV1, db: str, ids: list[str]) -> None:
    target = f"pacing{uuid.uuid4().hex[:12]}"
    client.put_database(db=target)
    try:
        report = await shop.archive(target, T0, END, type="click")
        assert report.copied == N and not report.failed
        assert sorted(stored_ids(client, target)) == sorted(ids)
    finally:
        client.delete_database(db=target)


async def op_rekey(shop: AsyncDatabase, client: CloudantV1, db: str, ids: list[str]) -> None:
    """Copies N documents of plain ids, their time in a field, into the test's database."""
    source = f"pacing{uuid.uuid4().hex[:12]}"
    client.put_database(db=source)
    try:
        legacy = [{"_id": f"legacy{n:04d}", "at": made_at({"n": n}).isoformat()} for n in range(N)]
        client.post_bulk_docs(db=source, bulk_docs={"docs": legacy}).get_result()
        rekeyed = database(shop.client, source, **OPTIONS)
        report = await rekeyed.rekey(db, time_field="at", type="click", secret=b"k")
        assert report.copied == N
        copied = [client.get_document(db=db, doc_id=i).get_result() for i in stored_ids(client, db)]
        assert sorted(d["at"] for d in copied) == sorted(d["at"] for d in legacy)  # each once
    finally:
        client.delete_database(db=source)


OPERATIONS: dict[str, Operation] = {
    "bulk_create": op_bulk_create,
    "window": op_window,
    "export": op_export,
    "expire": op_expire,
    "archive": op_archive,
    "rekey": op_rekey,
}
#: On CouchDB (and Cloudant) a histogram is one request per bucket edge, ``parallel`` at a
#: time (a count is two: too few to meet a 429); PouchDB Server's are one scan. A typed window
#: of a partitioned database reads its partition (reads).
COUNTING: dict[str, Operation] = {
    "histogram": op_histogram,
    "partitioned window": op_window,
}


async def keeps_to_the_rate(
    operation: Operation,
    retries: bool,
    cloudant_proxy: Callable[..., CloudantProxy],
    client_over: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    db: str,
    *,
    seed: bool,
) -> None:
    """``operation`` through a Cloudant-rules server at 5 requests a second of each class
    (on ``db`` seeded with N documents first, if ``seed``): the server did refuse requests
    past its rate, and none of them became an error."""
    ids = seeded(client, db) if seed else []
    proxy = cloudant_proxy(plan=SMALL)
    await operation(handle(client_over, proxy.url, db, retries), client, db, ids)
    assert sum(proxy.refused.values()) > 0, proxy.counted
    assert set(proxy.refused) <= {"read", "write", "query"}


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("retries", [False, True], ids=["sdk-retries-off", "sdk-retries-on"])
@pytest.mark.parametrize("name", COUNTING)
async def test_on_couchdb_histogram_and_partition_reads_keep_to_the_rate(
    name: str,
    retries: bool,
    cloudant_proxy: Callable[..., CloudantProxy],
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    db: str,
) -> None:
    if name == "partitioned window":
        db = f"pacing{uuid.uuid4().hex[:12]}"
        client.put_database(db=db, partitioned=True)
    try:
        await keeps_to_the_rate(
            COUNTING[name], retries, cloudant_proxy, async_client_for, client, db, seed=True
        )
    finally:
        if name == "partitioned window":
            client.delete_database(db=db)


@pytest.mark.needs("pouchdb")
@pytest.mark.parametrize("retries", [False, True], ids=["sdk-retries-off", "sdk-retries-on"])
@pytest.mark.parametrize("name", OPERATIONS)
async def test_an_operation_keeps_to_the_rate_with_no_error(
    name: str,
    retries: bool,
    cloudant_proxy: Callable[..., CloudantProxy],
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    db: str,
) -> None:
    await keeps_to_the_rate(
        OPERATIONS[name],
        retries,
        cloudant_proxy,
        async_client_for,
        client,
        db,
        seed=name not in ("bulk_create", "rekey"),
    )


@pytest.mark.needs("pouchdb")
async def test_a_series_window_keeps_to_the_rate(
    cloudant_proxy: Callable[..., CloudantProxy],
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
) -> None:
    prefix = f"pacing{uuid.uuid4().hex[:12]}"
    try:
        made = couchids.Series(client, prefix, every="day").bulk_create(
            docs(), type="click", time_of=made_at
        )
        ids = sorted(r.id for r in made)
        proxy = cloudant_proxy(plan=SMALL, retry_after=True)
        series = series_of(async_client_for(client_for(proxy.url)), prefix, every="day", **OPTIONS)
        got = [d["_id"] for d in await listed(series.window(T0, END, type="click"))]
        assert got == ids[::-1]
        assert proxy.refused["query"] > 0
    finally:
        for name in client.get_all_dbs().get_result():
            if name.startswith(prefix):
                client.delete_database(db=name)


@pytest.mark.needs("pouchdb")
async def test_retry_after_is_obeyed_through_the_cloudant_rules_server(
    cloudant_proxy: Callable[..., CloudantProxy],
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    db: str,
) -> None:
    """A 429 that says when to come back (here 1 s) closes its class until then: the window
    is read whole, and the 429s are few (each closes the class for a window)."""
    ids = seeded(client, db)
    proxy = cloudant_proxy(plan=SMALL, retry_after=True)
    await op_window(handle(async_client_for, proxy.url, db, False), client, db, ids)
    assert 0 < proxy.refused["query"] <= 6


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [
        ("Fri, 31 Dec 1999 23:59:59 GMT", 0.0),  # a date past: now
        ("Fri, 31 Dec 9999 23:59:59 GMT", None),  # capped at 30 s: past the call's 5 s
    ],
)
async def test_a_429_whose_retry_after_is_an_http_date_is_obeyed(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    couch_url: str,
    db: str,
    caplog: pytest.LogCaptureFixture,
    retry_after: str,
    wait: float | None,
) -> None:
    """The wait asked for is the date's, where a 429 without a Retry-After waits 0.25 s (a
    quarter of Cloudant's window) and is then sent again."""
    caplog.set_level(logging.INFO, "couchids.request")
    click = {"_id": couchids.KUUID.new(T0, type="click")}
    client.post_bulk_docs(db=db, bulk_docs={"docs": [click]})
    with FaultProxy(couch_url) as proxy:
        for method in ("GET", "POST"):
            proxy.fail(
                "429-before", method=method, path=f"^/{db}/_all_docs", retry_after=retry_after
            )
        shop = database(async_client_for(client_for(proxy.url)), db, timeout=5)
        if wait is None:
            with pytest.raises(couchids.RateLimitedError, match="no room for the request"):
                await shop.latest(1, type="click")
        else:
            assert [doc["_id"] for doc in await shop.latest(1, type="click")] == [click["_id"]]
        reads = [entry.outcome for entry in proxy.log if "_all_docs" in entry.path]
    paced = [r for r in caplog.records if r.name == "couchids.request"]
    if wait is None:
        assert reads == ["429-before"] and paced == []
    else:
        assert reads == ["429-before", "forwarded"]
        assert [(r.couchids_reason, r.couchids_wait) for r in paced] == [("HTTP 429", wait)]
