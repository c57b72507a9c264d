"""One deadline per call, through couchids.aio's handles and, in the generated twin, the
blocking ones: a server that stops answering one endpoint ends every call that polls or retries
it by the ``timeout`` the caller gave (see tests/test_hung_server.py, which holds the proxy's
setups and the command's case).

Replication (``_scheduler/docs``, ``_replicator/{id}``) needs CouchDB; the rest runs on every
server.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from concurrently import each_at_once_on_loops
from faultproxy import FaultProxy, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_hung_server import (
    ALWAYS,
    MARGIN,
    SLOW,
    TIMEOUT,
    Setup,
    a_series_prefix,
    a_started_replication,
    hang,
)

import couchids
from couchids.core import replication as core
from couchids.drivers.aio import AsyncClient

from .helpers import close, database, listed, numbers, replication_of, series_of

#: A call of a case: what it sends through the client it is given.
Call = Callable[[AsyncClient], Any]


@pytest.fixture
def series_prefix(client: CloudantV1) -> Iterator[str]:
    yield from a_series_prefix(client)


@pytest.fixture
def started(client: CloudantV1, db: str, couch_server: Any) -> Iterator[list[core.ReplicationPlan]]:
    yield from a_started_replication(client, db, couch_server)


def ends_by_its_deadline(
    name: str,
    upstream: str,
    setup: Setup,
    call: Call,
    client_over: Callable[[CloudantV1], AsyncClient],
) -> Callable[[], Any]:
    """A case: ``call`` through a proxy set up by ``setup`` raises ``ServerTimeoutError``
    within :data:`TIMEOUT` + :data:`MARGIN` seconds."""

    async def case() -> None:
        with FaultProxy(upstream) as proxy:
            setup(proxy)
            client = client_over(client_for(proxy.url))
            started = time.monotonic()
            try:
                outcome: object = await call(client)
            except Exception as exc:
                outcome = exc
            took = time.monotonic() - started
            held = [entry for entry in proxy.log if entry.outcome in ("hang", "slow")]
            await close(client)
        assert isinstance(outcome, couchids.ServerTimeoutError), f"{name}: {outcome!r}"
        assert took < TIMEOUT + MARGIN, f"{name} took {took:.1f} s: {outcome}"
        assert held, f"{name}: the proxy held no request"

    return case


async def test_calls_that_poll_or_retry_end_by_their_deadline_when_an_endpoint_hangs(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    couch_url: str,
    client: CloudantV1,
    db: str,
    series_prefix: str,
) -> None:
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"n": n} for n in range(3)]})
    docs, changes = f"^/{db}/[^_]", f"^/{db}/_changes"
    this_db = f"^/{db}(\\?|$)"
    # The series that make databases have a prefix each: one that prepare's proxy let
    # through would otherwise meet create's first write, which then succeeds at once.
    prepared, created = f"{series_prefix}_prepared", f"{series_prefix}_created"
    t = TIMEOUT

    def claim_then(mode: Any, method: str, path: str) -> Setup:
        def setup(proxy: FaultProxy) -> None:
            proxy.fail(mode, method="PUT", path=docs, times=ALWAYS)
            proxy.fail("hang", method=method, path=path, times=ALWAYS)

        return setup

    def slow(method: str, path: str, *, after: int = 0) -> Setup:
        return lambda proxy: proxy.fail(
            "slow", method=method, path=path, times=ALWAYS, after=after, seconds=SLOW
        )

    def months(prefix: str) -> str:
        return f"^/{prefix}-[^/]+(\\?|$)"

    def slow_make_and_write(proxy: FaultProxy) -> None:
        slow("PUT", months(created))(proxy)
        # The first write meets no database (404, at once); the one sent again is slow.
        slow("PUT", f"^/{created}-[^/]+/", after=1)(proxy)

    now = datetime.now(UTC)
    cases: dict[str, tuple[Setup, Call]] = {
        "follow _changes": (
            hang("POST", changes),
            lambda c: listed(database(c, db, timeout=t).follow(since_seq=0, wait=False)),
        ),
        # A long poll may take poll seconds on top of the timeout: 0.5 s here.
        "follow long poll": (
            hang("POST", changes),
            lambda c: listed(database(c, db, timeout=t).follow(since_seq=0, poll=0.5)),
        ),
        "follow now": (
            hang("POST", changes),
            lambda c: listed(database(c, db, timeout=t).follow(wait=False)),
        ),
        "follow GET /db": (
            hang("GET", this_db),
            lambda c: listed(database(c, db, timeout=t).follow()),
        ),
        "create_short PUT": (
            hang("PUT", docs),
            lambda c: database(c, db, timeout=t).create_short({"n": 1}),
        ),
        "create_short read after 409": (
            claim_then("409-after", "GET", docs),
            lambda c: database(c, db, timeout=t).create_short({"n": 1}),
        ),
        "create_short delete after 202": (
            claim_then("202-after", "POST", f"^/{db}/_bulk_docs"),
            lambda c: database(c, db, timeout=t).create_short({"n": 1}),
        ),
        "Sequence.next PUT": (
            hang("PUT", docs),
            lambda c: numbers(database(c, db, timeout=t).sequence("n"), 1),
        ),
        "Sequence.next _all_docs": (
            hang("POST", f"^/{db}/_all_docs"),
            lambda c: numbers(database(c, db, timeout=t).sequence("n"), 1),
        ),
        "Series.databases": (
            hang("GET", "^/_all_dbs"),
            lambda c: series_of(c, series_prefix, timeout=t).databases(),
        ),
        "Series.replicate": (
            hang("GET", "^/_all_dbs"),
            lambda c: series_of(c, series_prefix, timeout=t).replicate("x", "2024-01-01"),
        ),
        "Series.prepare slow": (
            slow("PUT", months(prepared)),
            lambda c: series_of(c, prepared, timeout=t).prepare(2),
        ),
        "Series.create slow": (
            slow_make_and_write,
            lambda c: series_of(c, created, timeout=t).create({"n": 1}, timestamp=now),
        ),
    }
    each_at_once_on_loops(
        {
            name: ends_by_its_deadline(name, couch_url, setup, call, async_client_for)
            for name, (setup, call) in cases.items()
        }
    )


async def test_a_call_of_several_steps_keeps_one_deadline_when_each_step_is_slow(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    couch_url: str,
    client: CloudantV1,
    db: str,
    series_prefix: str,
) -> None:
    # Each step is shorter than the timeout, the two together longer: a call that started the
    # clock again for its second step would succeed.
    made = couchids.Database(client, db).create({"n": 1}, type="reading")
    # An id of the type's range but of no form: the newest row, read and dropped by latest,
    # which reads a second page for the document.
    client.put_document(db=db, doc_id=made.id + "x", document={"n": 2})
    t = TIMEOUT

    def slow(method: str, path: str, **rule: Any) -> Callable[[FaultProxy], None]:
        return lambda proxy: proxy.fail("slow", method=method, path=path, seconds=SLOW, **rule)

    def types_then_query(proxy: FaultProxy) -> None:
        # The types walk's first request, then each type's query (newest first).
        slow("POST", f"^/{db}/_all_docs")(proxy)
        slow("POST", f"^/{db}/_all_docs", times=ALWAYS, containing='"descending"')(proxy)

    def make_then_count(proxy: FaultProxy) -> None:
        slow("PUT", f"^/{series_prefix}-[^/]+(\\?|$)", times=ALWAYS)(proxy)
        slow("GET", "^/_all_dbs", times=ALWAYS)(proxy)

    def lookup_then_endpoint(proxy: FaultProxy) -> None:
        slow("GET", f"^/{db}(\\?|$)")(proxy)
        slow("GET", f"^/{db}/_auto_purge")(proxy)

    bulk = f"{series_prefix}_bulk"
    two_months = [{"at": "2025-01-15T00:00:00Z"}, {"at": "2025-02-15T00:00:00Z"}]

    cases: dict[str, tuple[Setup, Call]] = {
        "latest, a page then the next": (
            slow("POST", f"^/{db}/_all_docs", times=ALWAYS),
            lambda c: database(c, db, timeout=t).latest(1, type="reading"),
        ),
        "latest ALL_TYPES": (
            types_then_query,
            lambda c: database(c, db, timeout=t).latest(1, type=couchids.ALL_TYPES),
        ),
        "explain_empty, two of its samples": (
            slow("POST", f"^/{db}/_all_docs", times=2),
            lambda c: database(c, db, timeout=t).explain_empty(type="other"),
        ),
        "set_deleted_retention, the lookup then the check of the endpoint": (
            lookup_then_endpoint,
            lambda c: database(c, db, timeout=t).set_deleted_retention(60),
        ),
        "Series.bulk_create, its two periods' databases made": (
            slow("PUT", f"^/{bulk}-[^/]+(\\?|$)", times=ALWAYS),
            lambda c: series_of(c, bulk, timeout=t, every="month").bulk_create(
                two_months, time_of=lambda d: d["at"]
            ),
        ),
        "Series.prepare, then its count of databases": (
            make_then_count,
            lambda c: series_of(c, series_prefix, timeout=t, max_databases=10_000).prepare(0),
        ),
    }
    each_at_once_on_loops(
        {
            name: ends_by_its_deadline(name, couch_url, setup, call, async_client_for)
            for name, (setup, call) in cases.items()
        }
    )


@pytest.mark.needs("couchdb")
async def test_replication_calls_end_by_their_deadline_when_an_endpoint_hangs(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    couch_url: str,
    db: str,
    started: list[core.ReplicationPlan],
    couch_server: Any,
) -> None:
    (doc_id,) = (plan.doc_id for plan in started)
    scheduler = f"^/_scheduler/docs/_replicator/{doc_id}"
    document = f"^/_replicator/{doc_id}"
    t = TIMEOUT

    def unscheduled(proxy: FaultProxy) -> None:
        # The scheduler does not list it: its document says how it ended.
        proxy.fail("404-before", method="GET", path=scheduler, times=ALWAYS)
        proxy.fail("hang", method="GET", path=document, times=ALWAYS)

    def replicate(c: AsyncClient) -> Any:
        target = f"test_{uuid.uuid4().hex}"
        handle = database(c, db, timeout=t)
        return handle.replicate(target, "2024-01-01", server_url=couch_server.url)

    cases: dict[str, tuple[Setup, Call]] = {
        "wait _scheduler/docs": (
            hang("GET", scheduler),
            lambda c: replication_of(c, started, timeout=t).wait(),
        ),
        "wait _replicator/{id}": (
            unscheduled,
            lambda c: replication_of(c, started, timeout=t).wait(),
        ),
        "status _scheduler/docs": (
            hang("GET", scheduler),
            lambda c: replication_of(c, started, timeout=t).status(),
        ),
        "status _replicator/{id}": (
            unscheduled,
            lambda c: replication_of(c, started, timeout=t).status(),
        ),
        "cancel GET _replicator/{id}": (
            hang("GET", document),
            lambda c: replication_of(c, started, timeout=t).cancel(),
        ),
        "cancel DELETE _replicator/{id}": (
            hang("DELETE", document),
            lambda c: replication_of(c, started, timeout=t).cancel(),
        ),
        "replicate PUT _replicator/{id}": (hang("PUT", "^/_replicator/"), replicate),
    }
    each_at_once_on_loops(
        {
            name: ends_by_its_deadline(name, couch_url, setup, call, async_client_for)
            for name, (setup, call) in cases.items()
        }
    )
