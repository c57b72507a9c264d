"""Keeping to IBM Cloudant's rate limits: the pure :class:`~couchids.core.pacing.Pacer`, and
every operation that has several requests in flight run through the Cloudant-rules server
(tests/cloudantproxy.py) at 5 requests a second of each class, both APIs, with the SDK's own
retries off and on: no error, every document once, although the server answered 429s. Those
operations are written once, in tests/_async/test_pacing.py (and its generated blocking twin),
with the plan and the data set here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import responses
from cloudantproxy import CloudantProxy, Plan
from faultproxy import FaultProxy, client_for
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
from couchids.core.policy import MAX_RETRY_AFTER, retry_after_seconds
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


#: RFC 9110's example of an HTTP date (section 5.6.7), and the epoch seconds of it.
HTTP_DATE, HTTP_DATE_SECONDS = "Sun, 06 Nov 1994 08:49:37 GMT", 784111777.0


@pytest.mark.parametrize(
    ("header", "now", "seconds"),
    [
        ("3", None, 3.0),
        ("0", None, 0.0),
        ("-5", None, 0.0),
        (HTTP_DATE, HTTP_DATE_SECONDS - 12.5, 12.5),
        (HTTP_DATE, HTTP_DATE_SECONDS, 0.0),
        (HTTP_DATE, HTTP_DATE_SECONDS + 3600, 0.0),  # a date past is now
        ("Sunday, 06-Nov-94 08:49:37 GMT", HTTP_DATE_SECONDS - 2, 2.0),  # RFC 850's form
        ("Sun Nov  6 08:49:37 1994", HTTP_DATE_SECONDS - 2, 2.0),  # asctime's form
        ("Fri, 31 Dec 1999 23:59:59 GMT", None, 0.0),
        ("soon", None, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_retry_after_is_read_in_seconds_or_as_an_http_date(
    header: str | None, now: float | None, seconds: float | None
) -> None:
    assert retry_after_seconds(header, now=now) == seconds


def test_a_retry_after_date_closes_the_class_as_its_seconds_do() -> None:
    pacer = Pacer()
    ticket = pacer.take(WRITE, 0.0)
    assert ticket is not None
    pacer.answered(ticket, 0.1, 429, "Fri, 31 Dec 9999 23:59:59 GMT")  # capped
    assert pacer.delay(WRITE, 0.1) == MAX_RETRY_AFTER
    again = pacer.take(QUERY, 0.2)
    assert again is not None
    pacer.answered(again, 0.2, 429, "Fri, 31 Dec 1999 23:59:59 GMT")  # past: room now
    assert pacer.delay(QUERY, 0.2) == 0.0


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


def assert_logged_as_paced(caplog: pytest.LogCaptureFixture) -> None:
    """The 429 sent again once its class has room is logged as what it is: the same attempt
    (its two DEBUG records say attempt 1), not a retry of the call's."""
    records = [r for r in caplog.records if r.name == "couchids.request"]
    sends = [r for r in records if r.levelno == logging.DEBUG and r.couchids_method == "POST"]
    assert [(r.couchids_status, r.couchids_attempt) for r in sends] == [(429, 1), (200, 1)]
    (record,) = [r for r in records if r.levelno == logging.INFO]
    assert record.couchids_reason == "HTTP 429" and record.couchids_attempt == 1
    message = record.getMessage()
    assert message.endswith("(rate limited: attempt 1 again once its class has room)"), message
    assert " of " not in message, message


@responses.activate
def test_the_blocking_driver_obeys_retry_after(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, "couchids")  # no explanation of the empty answer
    caplog.set_level(logging.DEBUG, "couchids.request")
    sent: list[float] = []

    def answer(request: Any) -> tuple[int, dict[str, str], str]:
        sent.append(time.monotonic())
        json_type = {"Content-Type": "application/json"}  # as CouchDB answers
        if len(sent) == 1:
            return (
                429,
                {**json_type, "Retry-After": "1"},
                json.dumps({"error": "too_many_requests"}),
            )
        return 200, json_type, json.dumps({"rows": []})

    responses.get(f"{URL}/db", json={"db_name": "db", "props": {}})
    responses.add_callback(responses.POST, f"{URL}/db/_all_docs", callback=answer)
    shop = couchids.Database(client_for(URL), "db").with_options(backoff=0)
    assert shop.latest(1, type="click") == []
    assert len(sent) == 2 and sent[1] - sent[0] >= 1.0
    assert_logged_as_paced(caplog)


def test_the_asyncio_driver_obeys_retry_after(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, "couchids")  # no explanation of the empty answer
    caplog.set_level(logging.DEBUG, "couchids.request")
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
    assert_logged_as_paced(caplog)


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


def stored_ids(client: CloudantV1, db: str) -> list[str]:
    rows = client.post_all_docs(db=db).get_result()["rows"]
    return [r["id"] for r in rows if not r["id"].startswith("_design/")]


def seeded(client: CloudantV1, db: str) -> list[str]:
    """The ids of the data set, written to ``db`` straight (not through a proxy)."""
    results = couchids.Database(client, db).bulk_create(docs(), type="click", time_of=made_at)
    return [r.id for r in results]


@pytest.mark.needs("pouchdb")
def test_a_given_rate_meets_few_429s(
    cloudant_proxy: Callable[..., CloudantProxy], client: CloudantV1, db: str
) -> None:
    """A client kept to the server's rate from the start: at most a few 429s (the client's
    clock and the server's differ by a request's way there), and no error."""
    ids = seeded(client, db)
    proxy = cloudant_proxy(plan=SMALL)
    cloudant = client_for(proxy.url)
    couchids.drivers.blocking.set_rate(cloudant, {"queries": 5})
    shop = couchids.Database(cloudant, db).with_options(**OPTIONS)
    assert [d["_id"] for d in shop.window(T0, END, type="click")] == sorted(ids, reverse=True)
    assert proxy.counted["query"] >= N // 10
    assert proxy.refused["query"] <= 3


@pytest.mark.needs("pouchdb")
def test_asyncio_requests_waiting_for_a_connection_keep_to_the_rate(
    couch_url: str, client: CloudantV1, db: str
) -> None:
    """Many operations at once on one asyncio client of two connections, kept to the plan's
    rate, the first two answers slow: the pacer counts a request when it leaves, not when its
    class had room while it still waited for a connection (else the requests let go in one
    window reach the server in the next, beside that window's own, and meet 429s). Every
    document is stored once."""

    async def created(url: str) -> list[couchids.WriteResult]:
        async with aio.AsyncClient(client_for(url), connections=2, rate="lite") as cloudant:
            shop = aio.AsyncDatabase(cloudant, db)
            return await asyncio.gather(
                *(
                    shop.create({"n": n}, type="click", timestamp=made_at({"n": n}))
                    for n in range(40)
                )
            )

    with FaultProxy(couch_url) as slow, CloudantProxy(slow.url, plan="lite") as proxy:
        slow.fail("slow", method="PUT", times=2, seconds=0.5)
        results = asyncio.run(created(proxy.url))
    assert sorted(stored_ids(client, db)) == sorted(r.id for r in results)
    assert proxy.counted["write"] == 40
    assert proxy.refused["write"] <= 3, proxy.refused


@pytest.mark.needs("pouchdb")
def test_asyncio_requests_waiting_for_a_connection_of_a_given_httpx_client_keep_to_the_rate(
    couch_url: str, client: CloudantV1, db: str
) -> None:
    """As above, with the default ten connections but an ``httpx`` client of the caller's that
    keeps four: its pool, not couchids, would queue six requests the pacer let go."""

    async def created(url: str) -> list[couchids.WriteResult]:
        four = httpx.AsyncClient(limits=httpx.Limits(max_connections=4), trust_env=False)
        async with four, aio.AsyncClient(client_for(url), four, rate="lite") as cloudant:
            shop = aio.AsyncDatabase(cloudant, db)
            return await asyncio.gather(
                *(
                    shop.create({"n": n}, type="click", timestamp=made_at({"n": n}))
                    for n in range(40)
                )
            )

    with FaultProxy(couch_url) as slow, CloudantProxy(slow.url, plan="lite") as proxy:
        slow.fail("slow", method="PUT", times=4, seconds=0.5)
        results = asyncio.run(created(proxy.url))
    assert sorted(stored_ids(client, db)) == sorted(r.id for r in results)
    assert proxy.counted["write"] == 40
    assert proxy.refused["write"] <= 3, proxy.refused
