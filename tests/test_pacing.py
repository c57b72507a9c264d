"""Keeping to IBM Cloudant's rate limits: the pure :class:`~couchids.core.pacing.Pacer`, and
every operation that has several requests in flight run through the Cloudant-rules server
(tests/cloudantproxy.py) at 5 requests a second of each class, both APIs, with the SDK's own
retries off and on: no error, every document once, although the server answered 429s.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import responses
from cloudantproxy import CloudantProxy, Plan
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import aio
from couchids.core.effects import Request
from couchids.core.pacing import (
    MAX_PROBE_AFTER,
    PATIENCE,
    PROBE_AFTER,
    WINDOW,
    Pacer,
    Rate,
    request_class,
)
from couchids.drivers.blocking import pacer
from couchids.errors import InvalidArgumentError

QUERY = Request("POST", "/db/_all_docs")
READ = Request("POST", "/db/_partition/click/_all_docs")
WRITE = Request("POST", "/db/_bulk_docs")

# -- the pacer, pure ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        ("POST", "/db/_all_docs", "query"),
        ("GET", "/db/_all_docs", "query"),
        ("POST", "/db/_changes", "query"),
        ("POST", "/db/_bulk_get", "query"),
        ("GET", "/db/_design/d/_view/v", "query"),
        ("POST", "/db/_partition/p/_all_docs", "read"),
        ("GET", "/db/a%3Ab", "read"),
        ("GET", "/db/_local/x", "read"),
        ("PUT", "/db/a%3Ab", "write"),
        ("DELETE", "/db/a", "write"),
        ("POST", "/db", "write"),
        ("POST", "/db/_bulk_docs", "write"),
        ("GET", "/db", "other"),
        ("PUT", "/db", "other"),
        ("GET", "/", "other"),
        ("GET", "/_all_dbs", "other"),
        ("POST", "/_replicate", "other"),
    ],
)
def test_request_classes_are_the_proxys(method: str, path: str, kind: str) -> None:
    """The same classes as the Cloudant-rules server's (IBM's table and the blog's list)."""
    from urllib.parse import unquote

    from cloudantproxy import request_class as proxys

    assert request_class(Request(method, path)) == kind
    segments = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
    assert (proxys(method, segments) or "other") == kind


def test_an_unknown_budget_holds_nothing_back() -> None:
    pacer = Pacer()
    assert all(pacer.take(QUERY, 0.0) is not None for _ in range(100))
    assert pacer.budget("query") is None


def test_a_429_teaches_the_budget_the_window_held() -> None:
    pacer = Pacer()
    tickets = [pacer.take(QUERY, 0.01 * n) for n in range(7)]
    for ticket in tickets[:5]:
        pacer.answered(ticket, 0.1, 200)  # type: ignore[arg-type]
    pacer.answered(tickets[5], 0.1, 429)  # type: ignore[arg-type]
    assert pacer.budget("query") == 5
    pacer.answered(tickets[6], 0.1, 429)  # type: ignore[arg-type]
    assert pacer.budget("query") == 5 and pacer.refusals("query") == 2
    # Five in the window: the next waits until the first is a window (and a margin) old.
    assert pacer.take(QUERY, 0.2) is None
    assert 0.8 < pacer.delay(QUERY, 0.2) <= WINDOW
    assert pacer.take(QUERY, 1.06) is not None
    # Other classes are their own.
    assert pacer.budget("read") is None and pacer.take(READ, 0.2) is not None


def test_in_flight_requests_refused_later_lower_the_budget_further() -> None:
    """A burst sent before any answer: each 429 counts only the requests sent before it
    that were not refused (yet), so the budget comes down to what the server took."""
    pacer = Pacer()
    tickets = [pacer.take(QUERY, 0.0) for _ in range(12)]
    for ticket in reversed(tickets[5:]):
        pacer.answered(ticket, 0.05, 429)  # type: ignore[arg-type]
    assert pacer.budget("query") == 5


def test_a_given_rate_paces_from_the_start_and_is_never_exceeded() -> None:
    pacer = Pacer(Rate(queries=3))
    sent = 0
    now = 0.0
    while now < 10.0:
        ticket = pacer.take(QUERY, now)
        if ticket is not None:
            sent += 1
            pacer.answered(ticket, now, 200)
        now += 0.01
    assert pacer.budget("query") == 3
    assert 3 * 9 <= sent <= 3 * 10  # 3 a window of 1.05 s, never a probe past the rate


def test_the_budget_grows_by_one_when_no_429_came_and_backs_off_after_a_failed_probe() -> None:
    pacer = Pacer()
    tickets = [pacer.take(QUERY, 0.0) for _ in range(4)]
    for t in tickets[:3]:
        pacer.answered(t, 0.0, 200)  # type: ignore[arg-type]
    pacer.answered(tickets[3], 0.0, 429)  # type: ignore[arg-type]
    assert pacer.budget("query") == 3
    # Demand past the budget for PROBE_AFTER seconds: it grows by one.
    now = 0.0
    while now < PROBE_AFTER + 0.5:
        ticket = pacer.take(QUERY, now)
        if ticket is not None:
            pacer.answered(ticket, now, 200)
        now += 0.01
    assert pacer.budget("query") == 4
    # The probe fails: back to what the window held, and twice as long before the next.
    probe = None
    while probe is None:
        probe = pacer.take(QUERY, now)
        now += 0.01
    pacer.answered(probe, now, 429)
    assert pacer.budget("query") == 3
    grown_at = None
    while now < 30:
        ticket = pacer.take(QUERY, now)
        if ticket is not None:
            pacer.answered(ticket, now, 200)
        if pacer.budget("query") == 4 and grown_at is None:
            grown_at = now
        now += 0.01
    assert grown_at is not None and grown_at - probe.sent >= 2 * PROBE_AFTER - 0.1
    assert MAX_PROBE_AFTER >= 2 * PROBE_AFTER


def test_retry_after_closes_the_class_until_then() -> None:
    pacer = Pacer()
    ticket = pacer.take(WRITE, 0.0)
    assert ticket is not None
    pacer.answered(ticket, 0.1, 429, "3")
    assert pacer.take(WRITE, 2.0) is None
    assert pacer.delay(WRITE, 2.0) == pytest.approx(1.1)
    assert pacer.take(WRITE, 3.2) is not None
    assert pacer.take(QUERY, 0.2) is not None  # another class is not closed


def test_a_429_with_none_of_the_clients_requests_in_its_window_waits_longer_each_time() -> None:
    pacer = Pacer()
    waits = []
    now = 0.0
    for _ in range(5):
        ticket = pacer.force(QUERY, now)
        pacer.answered(ticket, now, 429)
        waits.append(pacer.delay(QUERY, now))
        now += waits[-1]
    assert waits == [0.25, 0.5, 1.0, 2.0, 2.0]


def test_a_429_is_sent_again_while_the_deadline_or_the_patience_allows() -> None:
    pacer = Pacer(Rate(queries=1))
    first = pacer.take(QUERY, 0.0)
    assert first is not None
    assert pacer.again(QUERY, 0.1, 0.1, remaining=5.0) == pytest.approx(0.95)
    assert pacer.again(QUERY, 0.1, 0.1, remaining=0.5) is None
    assert pacer.again(QUERY, 0.1, 0.1, remaining=None) == pytest.approx(0.95)
    assert pacer.again(QUERY, PATIENCE, 0.0, remaining=None) is None


def test_the_sdks_retried_429s_teach_the_pacer_too() -> None:
    pacer = Pacer()
    tickets = [pacer.take(QUERY, 0.0) for _ in range(3)]
    pacer.answered(tickets[0], 0.0, 200)  # type: ignore[arg-type]
    pacer.answered(tickets[1], 0.0, 200)  # type: ignore[arg-type]
    pacer.answered(tickets[2], 0.5, 200, refused_before=2)  # type: ignore[arg-type]
    assert pacer.budget("query") == 2 and pacer.refusals("query") == 2


@pytest.mark.parametrize(
    ("rate", "expected"),
    [
        ("lite", Rate(20, 10, 5)),
        ("standard", Rate(100, 50, 5)),
        ({"reads": 200, "queries": 10}, Rate(200, None, 10)),
        (None, None),
    ],
)
def test_a_rate_is_a_plan_or_a_mapping(rate: Any, expected: Rate | None) -> None:
    assert Rate.of(rate) == expected


@pytest.mark.parametrize(
    ("rate", "words"),
    [
        ("gold", "a plan's name"),
        ({"lookups": 5}, "unknown request class"),
        ({"reads": 0}, "from 1"),
        ({"reads": True}, "from 1"),
        (5, "a plan's name"),
    ],
)
def test_a_bad_rate_says_what_is_accepted(rate: Any, words: str) -> None:
    with pytest.raises(InvalidArgumentError, match=words):
        couchids.connect("http://127.0.0.1:5984", auth_type="noauth", rate=rate)


def test_connect_keeps_the_client_to_its_rate() -> None:
    client = couchids.connect("http://127.0.0.1:5984", auth_type="noauth", rate="lite")
    assert [pacer(client).budget(k) for k in ("read", "write", "query")] == [20, 10, 5]
    assert pacer(client_for("http://127.0.0.1:5984")).budget("query") is None
    async_client = aio.AsyncClient(client, rate={"queries": 7})
    assert async_client.pacer.budget("query") == 7


# -- Retry-After, obeyed by both drivers ----------------------------------------------------

URL = "http://couch.test"


@responses.activate
def test_the_blocking_driver_obeys_retry_after() -> None:
    sent: list[float] = []

    def answer(request: Any) -> tuple[int, dict[str, str], str]:
        sent.append(time.monotonic())
        if len(sent) == 1:
            return 429, {"Retry-After": "1"}, json.dumps({"error": "too_many_requests"})
        return 200, {}, json.dumps({"rows": []})

    responses.get(f"{URL}/db", json={"db_name": "db", "props": {}})
    responses.add_callback(responses.POST, f"{URL}/db/_all_docs", callback=answer)
    shop = couchids.Database(client_for(URL), "db").with_options(backoff=0)
    assert shop.latest(1, type="click") == []
    assert len(sent) == 2 and sent[1] - sent[0] >= 1.0


def test_the_asyncio_driver_obeys_retry_after() -> None:
    sent: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"db_name": "db", "props": {}})
        sent.append(time.monotonic())
        if len(sent) == 1:
            return httpx.Response(429, headers={"Retry-After": "1"}, json={"error": "x"})
        return httpx.Response(200, json={"rows": []})

    async def main() -> Any:
        http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        async with aio.AsyncClient(client_for(URL), http) as client:
            shop = aio.AsyncDatabase(client, "db").with_options(backoff=0)
            return await shop.latest(1, type="click")

    assert asyncio.run(main()) == []
    assert len(sent) == 2 and sent[1] - sent[0] >= 1.0


# -- every multi-request operation, through the Cloudant-rules server -----------------------

#: 5 requests a second of each class: small, so that the operations below meet 429s.
SMALL = Plan(reads=5, writes=5, queries=5)
N = 120
T0 = datetime(2024, 5, 1, 23, 0, tzinfo=UTC)  # the data crosses midnight (the series)
END = T0 + timedelta(minutes=N)
CUT = T0 + timedelta(minutes=N // 2)
#: Small pages and batches: each operation sends a dozen or more requests of its class.
OPTIONS: dict[str, Any] = {"batch_size": 10, "parallel": 3, "timeout": 120}


def made_at(doc: Mapping[str, Any]) -> datetime:
    return T0 + timedelta(minutes=doc["n"])


def docs() -> list[dict[str, Any]]:
    return [{"n": n} for n in range(N)]


async def done(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def listed(rows: Any) -> list[Any]:
    if hasattr(rows, "__aiter__"):
        return [row async for row in rows]
    return list(rows)


def stored_ids(client: CloudantV1, db: str) -> list[str]:
    rows = client.post_all_docs(db=db).get_result()["rows"]
    return [r["id"] for r in rows if not r["id"].startswith("_design/")]


def handle(api: str, url: str, db: str, retries: bool) -> Any:
    cloudant = client_for(url)
    if retries:
        cloudant.enable_retries(max_retries=3, retry_interval=1.0)
    if api == "blocking":
        return couchids.Database(cloudant, db).with_options(**OPTIONS)
    return aio.AsyncDatabase(aio.AsyncClient(cloudant), db).with_options(**OPTIONS)


async def closed(shop: Any) -> None:
    if isinstance(shop, aio.AsyncDatabase | aio.AsyncSeries):
        await shop.client.aclose()


async def op_bulk_create(shop: Any, client: CloudantV1, db: str, ids: list[str]) -> None:
    results = await done(shop.bulk_create(docs(), type="click", time_of=made_at))
    assert all(r.ok for r in results) and len(results) == N
    stored = stored_ids(client, db)
    assert sorted(stored) == sorted(r.id for r in results)  # each once, none missing


async def op_window(shop: Any, client: CloudantV1, db: str, ids: list[str]) -> None:
    got = [doc["_id"] for doc in await listed(shop.window(T0, END, type="click"))]
    assert got == sorted(ids, reverse=True)


async def op_export(shop: Any, client: CloudantV1, db: str, ids: list[str]) -> None:
    out = io.StringIO()
    await done(shop.export(T0, END, out, type="click"))
    got = [json.loads(line)["_id"] for line in out.getvalue().splitlines()]
    assert sorted(got) == sorted(ids) and len(set(got)) == N


async def op_histogram(shop: Any, client: CloudantV1, db: str, ids: list[str]) -> None:
    buckets = await done(shop.histogram(T0, END, every="10m", type="click"))
    assert [b.count for b in buckets] == [10] * (N // 10)


async def op_expire(shop: Any, client: CloudantV1, db: str, ids: list[str]) -> None:
    await done(shop.expire(CUT, type="click", dry_run=False))
    assert sorted(stored_ids(client, db)) == sorted(ids)[N // 2 :]


async def op_archive(shop: Any, client: CloudantV1, db: str, ids: list[str]) -> None:
    target = f"pacing{uuid.uuid4().hex[:12]}"
    client.put_database(db=target)
    try:
        report = await done(shop.archive(target, T0, END, type="click"))
        assert report.copied == N and not report.failed
        assert sorted(stored_ids(client, target)) == sorted(ids)
    finally:
        client.delete_database(db=target)


async def op_rekey(shop: Any, client: CloudantV1, db: str, ids: list[str]) -> None:
    """Copies N documents of plain ids, their time in a field, into the test's database."""
    source = f"pacing{uuid.uuid4().hex[:12]}"
    client.put_database(db=source)
    try:
        legacy = [{"_id": f"legacy{n:04d}", "at": made_at({"n": n}).isoformat()} for n in range(N)]
        client.post_bulk_docs(db=source, bulk_docs={"docs": legacy}).get_result()
        handle = type(shop)(shop.client, source).with_options(**OPTIONS)
        # The secret's name (``key`` before): keyword-only either way.
        name = "secret" if "secret" in inspect.signature(handle.rekey).parameters else "key"
        report = await done(handle.rekey(db, time_field="at", type="click", **{name: b"k"}))
        assert report.copied == N
        copied = [client.get_document(db=db, doc_id=i).get_result() for i in stored_ids(client, db)]
        assert sorted(d["at"] for d in copied) == sorted(d["at"] for d in legacy)  # each once
    finally:
        client.delete_database(db=source)


OPERATIONS: dict[str, Callable[..., Any]] = {
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
COUNTING: dict[str, Callable[..., Any]] = {
    "histogram": op_histogram,
    "partitioned window": op_window,
}


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("retries", [False, True], ids=["sdk-retries-off", "sdk-retries-on"])
@pytest.mark.parametrize("api", ["blocking", "asyncio"])
@pytest.mark.parametrize("name", COUNTING)
def test_on_couchdb_histogram_and_partition_reads_keep_to_the_rate(
    name: str,
    api: str,
    retries: bool,
    cloudant_proxy: Callable[..., CloudantProxy],
    client: CloudantV1,
    db: str,
) -> None:
    if name == "partitioned window":
        db = f"pacing{uuid.uuid4().hex[:12]}"
        client.put_database(db=db, partitioned=True)
    try:
        test_an_operation_keeps_to_the_rate_with_no_error(
            name, api, retries, cloudant_proxy, client, db, COUNTING
        )
    finally:
        if name == "partitioned window":
            client.delete_database(db=db)


@pytest.mark.needs("pouchdb")
@pytest.mark.parametrize("retries", [False, True], ids=["sdk-retries-off", "sdk-retries-on"])
@pytest.mark.parametrize("api", ["blocking", "asyncio"])
@pytest.mark.parametrize("name", OPERATIONS)
def test_an_operation_keeps_to_the_rate_with_no_error(
    name: str,
    api: str,
    retries: bool,
    cloudant_proxy: Callable[..., CloudantProxy],
    client: CloudantV1,
    db: str,
    operations: dict[str, Callable[..., Any]] = OPERATIONS,
) -> None:
    ids: list[str] = []
    if name not in ("bulk_create", "rekey"):
        results = couchids.Database(client, db).bulk_create(docs(), type="click", time_of=made_at)
        ids = [r.id for r in results]
    proxy = cloudant_proxy(plan=SMALL)
    shop = handle(api, proxy.url, db, retries)

    async def main() -> None:
        try:
            await operations[name](shop, client, db, ids)
        finally:
            await closed(shop)

    asyncio.run(main())
    # The server did refuse requests past its rate, and none of them became an error.
    assert sum(proxy.refused.values()) > 0, proxy.counted
    assert set(proxy.refused) <= {"read", "write", "query"}


@pytest.mark.needs("pouchdb")
@pytest.mark.parametrize("api", ["blocking", "asyncio"])
def test_a_series_window_keeps_to_the_rate(
    api: str, cloudant_proxy: Callable[..., CloudantProxy], client: CloudantV1
) -> None:
    prefix = f"pacing{uuid.uuid4().hex[:12]}"
    try:
        made = couchids.Series(client, prefix, every="day").bulk_create(
            docs(), type="click", time_of=made_at
        )
        ids = sorted(r.id for r in made)
        proxy = cloudant_proxy(plan=SMALL, retry_after=True)
        cloudant = client_for(proxy.url)

        async def main() -> list[str]:
            if api == "blocking":
                series: Any = couchids.Series(cloudant, prefix, every="day")
            else:
                series = aio.AsyncSeries(aio.AsyncClient(cloudant), prefix, every="day")
            series = series.with_options(**OPTIONS)
            try:
                return [d["_id"] for d in await listed(series.window(T0, END, type="click"))]
            finally:
                await closed(series)

        assert asyncio.run(main()) == ids[::-1]
        assert proxy.refused["query"] > 0
    finally:
        for name in client.get_all_dbs().get_result():
            if name.startswith(prefix):
                client.delete_database(db=name)


@pytest.mark.needs("pouchdb")
@pytest.mark.parametrize("api", ["blocking", "asyncio"])
def test_retry_after_is_obeyed_through_the_cloudant_rules_server(
    api: str, cloudant_proxy: Callable[..., CloudantProxy], client: CloudantV1, db: str
) -> None:
    """A 429 that says when to come back (here 1 s) closes its class until then: the window
    is read whole, and the 429s are few (each closes the class for a window)."""
    ids = [
        r.id
        for r in couchids.Database(client, db).bulk_create(docs(), type="click", time_of=made_at)
    ]
    proxy = cloudant_proxy(plan=SMALL, retry_after=True)
    shop = handle(api, proxy.url, db, False)

    async def main() -> None:
        try:
            await op_window(shop, client, db, ids)
        finally:
            await closed(shop)

    asyncio.run(main())
    assert 0 < proxy.refused["query"] <= 6


@pytest.mark.needs("pouchdb")
def test_a_given_rate_meets_few_429s(
    cloudant_proxy: Callable[..., CloudantProxy], client: CloudantV1, db: str
) -> None:
    """A client kept to the server's rate from the start: at most a few 429s (the client's
    clock and the server's differ by a request's way there), and no error."""
    ids = [
        r.id
        for r in couchids.Database(client, db).bulk_create(docs(), type="click", time_of=made_at)
    ]
    proxy = cloudant_proxy(plan=SMALL)
    cloudant = client_for(proxy.url)
    couchids.drivers.blocking.set_rate(cloudant, {"queries": 5})
    shop = couchids.Database(cloudant, db).with_options(**OPTIONS)
    assert [d["_id"] for d in shop.window(T0, END, type="click")] == sorted(ids, reverse=True)
    assert proxy.counted["query"] >= N // 10
    assert proxy.refused["query"] <= 3
