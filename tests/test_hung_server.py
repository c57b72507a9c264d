"""One deadline per call: a server that stops answering one endpoint ends every call that
polls or retries it by the ``timeout`` the caller gave, in both APIs.

A proxy (tests/faultproxy.py) in front of the real server holds the requests of one endpoint
without answering (``"hang"``), or answers them only after a while (``"slow"``): each call
below raises ``ServerTimeoutError`` within its ``timeout`` plus a generous margin. The slow
cases tell one deadline from a deadline per step: a call that started the clock again for
each step (a poll, a database of ``prepare``, the write a series sends again once it made
the period's database) would have succeeded there, each step being shorter than the
``timeout``, all of them together longer.

Replication (``_scheduler/docs``, ``_replicator/{id}``) needs CouchDB; the rest runs on every
server.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from apis import APIS, Api
from conftest import drop_database
from faultproxy import FaultProxy, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_hostile import each_at_once

import couchids
from couchids import aio
from couchids.cli.main import EXIT_SERVER, main
from couchids.core import replication as core
from couchids.core.facts import FactsCache
from couchids.core.policy import RetryPolicy
from couchids.drivers.access import server_access
from couchids.drivers.blocking import run as couchids_run

#: The timeout every call below is given.
TIMEOUT = 2.0
#: How much later than its deadline a call may end: room for a loaded two-core machine
#: running the cases at once. A call that does not keep to one deadline takes at least a
#: minute (a poll's own 60 s), or succeeds (the slow cases).
MARGIN = 3.0
#: How long a ``"slow"`` request is held: shorter than the timeout, two of them longer.
SLOW = 1.5
#: Enough failures for every request a case sends.
ALWAYS = 10_000

Setup = Callable[[FaultProxy], None]


def hang(method: str, path: str) -> Setup:
    """A setup that hangs every ``method`` request whose path matches ``path``."""
    return lambda proxy: proxy.fail("hang", method=method, path=path, times=ALWAYS)


def ends_by_its_deadline(
    name: str, upstream: str, setup: Setup, call: Callable[[CloudantV1], object]
) -> Callable[[], None]:
    """A case: ``call`` through a proxy set up by ``setup`` raises ``ServerTimeoutError``
    within :data:`TIMEOUT` + :data:`MARGIN` seconds."""

    def case() -> None:
        with FaultProxy(upstream) as proxy:
            setup(proxy)
            started = time.monotonic()
            try:
                outcome: object = call(client_for(proxy.url))
            except Exception as exc:
                outcome = exc
            took = time.monotonic() - started
            held = [entry for entry in proxy.log if entry.outcome in ("hang", "slow")]
        assert isinstance(outcome, couchids.ServerTimeoutError), f"{name}: {outcome!r}"
        assert took < TIMEOUT + MARGIN, f"{name} took {took:.1f} s: {outcome}"
        assert held, f"{name}: the proxy held no request"

    return case


# -- follow, claims, database lookups and series: every server ------------------------------------


@pytest.fixture
def series_prefix(client: CloudantV1) -> Iterator[str]:
    """A prefix for the series of a test; its databases are dropped after it."""
    prefix = f"test_{uuid.uuid4().hex}"
    yield prefix
    for name in client.get_all_dbs().get_result():
        if name.startswith(prefix):
            drop_database(client, name)


def on_series(api: Api, client: CloudantV1, prefix: str, method: str, *args: Any, **kw: Any) -> Any:
    """``method`` of the series ``prefix`` (of months) through ``api``."""
    if api.name == "blocking":
        return getattr(couchids.Series(client, prefix), method)(*args, **kw)

    async def call() -> Any:
        async with aio.AsyncClient(client) as ac:
            return await getattr(aio.AsyncSeries(ac, prefix), method)(*args, **kw)

    return asyncio.run(call())


@pytest.mark.parametrize("api", APIS, ids=lambda api: api.name)
def test_calls_that_poll_or_retry_end_by_their_deadline_when_an_endpoint_hangs(
    api: Api, couch_url: str, client: CloudantV1, db: str, series_prefix: str
) -> None:
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"n": n} for n in range(3)]})
    docs, changes = f"^/{db}/[^_]", f"^/{db}/_changes"
    this_db = f"^/{db}(\\?|$)"
    months = f"^/{series_prefix}-[^/]+(\\?|$)"
    month_docs = f"^/{series_prefix}-[^/]+/"
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

    def slow_make_and_write(proxy: FaultProxy) -> None:
        slow("PUT", months)(proxy)
        # The first write meets no database (404, at once); the one sent again is slow.
        slow("PUT", month_docs, after=1)(proxy)

    now = datetime.now(UTC)
    cases: dict[str, tuple[Setup, Callable[[CloudantV1], object]]] = {
        "follow _changes": (
            hang("POST", changes),
            lambda c: api.follow(c, db, since_seq=0, wait=False, timeout=t),
        ),
        # A long poll may take wait_ms on top of the timeout: 0.5 s here.
        "follow long poll": (
            hang("POST", changes),
            lambda c: api.follow(c, db, since_seq=0, wait_ms=500, timeout=t),
        ),
        "follow now": (hang("POST", changes), lambda c: api.follow(c, db, wait=False, timeout=t)),
        "follow GET /db": (hang("GET", this_db), lambda c: api.follow(c, db, timeout=t)),
        "create_short PUT": (
            hang("PUT", docs),
            lambda c: api.create_short(c, db, {"n": 1}, timeout=t),
        ),
        "create_short read after 409": (
            claim_then("409-after", "GET", docs),
            lambda c: api.create_short(c, db, {"n": 1}, timeout=t),
        ),
        "create_short delete after 202": (
            claim_then("202-after", "POST", f"^/{db}/_bulk_docs"),
            lambda c: api.create_short(c, db, {"n": 1}, timeout=t),
        ),
        "Sequence.next PUT": (
            hang("PUT", docs),
            lambda c: api.numbers(c, db, "n", 1, timeout=t),
        ),
        "Sequence.next _all_docs": (
            hang("POST", f"^/{db}/_all_docs"),
            lambda c: api.numbers(c, db, "n", 1, timeout=t),
        ),
        "Series.databases": (
            hang("GET", "^/_all_dbs"),
            lambda c: on_series(api, c, series_prefix, "databases", timeout=t),
        ),
        "Series.replicate": (
            hang("GET", "^/_all_dbs"),
            lambda c: on_series(api, c, series_prefix, "replicate", "x", "2024-01-01", timeout=t),
        ),
        "Series.prepare slow": (
            slow("PUT", months),
            lambda c: on_series(api, c, series_prefix, "prepare", 2, timeout=t),
        ),
        "Series.create slow": (
            slow_make_and_write,
            lambda c: on_series(
                api, c, series_prefix, "create", {"n": 1}, timestamp=now, timeout=t
            ),
        ),
    }
    each_at_once(
        {
            name: ends_by_its_deadline(name, couch_url, setup, call)
            for name, (setup, call) in cases.items()
        }
    )


# -- replication: CouchDB --------------------------------------------------------------------------


def on_replication(
    api: Api, client: CloudantV1, plans: list[core.ReplicationPlan], method: str, **kw: Any
) -> Any:
    """``method`` of the handle of ``plans`` through ``api``."""
    if api.name == "blocking":
        return getattr(couchids.Replication(client, plans), method)(**kw)

    async def call() -> Any:
        async with aio.AsyncClient(client) as ac:
            return await getattr(aio.AsyncReplication(ac, plans), method)(**kw)

    return asyncio.run(call())


@pytest.fixture
def started(client: CloudantV1, db: str, couch_server: Any) -> Iterator[list[core.ReplicationPlan]]:
    """The plans of a one-shot replication started from ``db``; cancelled after the test,
    and its target dropped."""
    target = f"test_{uuid.uuid4().hex}_copy"
    url, credentials = server_access(client)
    # The replicator reaches the server directly, not through the tests' proxies.
    ends = core.endpoints(url, credentials, db, target, couch_server.url)
    plan = core.plan(
        db,
        *ends,
        "2024-01-01",
        None,
        type=None,
        form=couchids.KUUID,
        continuous=False,
        create_target=True,
    )
    policy = RetryPolicy.within(60, "replicate")
    couchids_run(client, core.start(FactsCache(), [plan], policy))
    yield [plan]
    couchids.Replication(client, [plan]).cancel()
    with contextlib.suppress(Exception):
        client.delete_database(db=target)


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("api", APIS, ids=lambda api: api.name)
def test_replication_calls_end_by_their_deadline_when_an_endpoint_hangs(
    api: Api,
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

    def replicate(c: CloudantV1) -> object:
        options: dict[str, Any] = {"server_url": couch_server.url, "timeout": t}
        if api.name == "blocking":
            return couchids.Database(c, db).replicate(
                f"test_{uuid.uuid4().hex}", "2024-01-01", **options
            )

        async def call() -> object:
            async with aio.AsyncClient(c) as ac:
                target = f"test_{uuid.uuid4().hex}"
                return await aio.AsyncDatabase(ac, db).replicate(target, "2024-01-01", **options)

        return asyncio.run(call())

    cases: dict[str, tuple[Setup, Callable[[CloudantV1], object]]] = {
        "wait _scheduler/docs": (
            hang("GET", scheduler),
            lambda c: on_replication(api, c, started, "wait", timeout=t),
        ),
        "wait _replicator/{id}": (
            unscheduled,
            lambda c: on_replication(api, c, started, "wait", timeout=t),
        ),
        "status _scheduler/docs": (
            hang("GET", scheduler),
            lambda c: on_replication(api, c, started, "status", timeout=t),
        ),
        "status _replicator/{id}": (
            unscheduled,
            lambda c: on_replication(api, c, started, "status", timeout=t),
        ),
        "cancel GET _replicator/{id}": (
            hang("GET", document),
            lambda c: on_replication(api, c, started, "cancel", timeout=t),
        ),
        "cancel DELETE _replicator/{id}": (
            hang("DELETE", document),
            lambda c: on_replication(api, c, started, "cancel", timeout=t),
        ),
        "replicate PUT _replicator/{id}": (hang("PUT", "^/_replicator/"), replicate),
    }
    each_at_once(
        {
            name: ends_by_its_deadline(name, couch_url, setup, call)
            for name, (setup, call) in cases.items()
        }
    )


@pytest.mark.needs("couchdb")
def test_the_replication_command_ends_by_its_timeout_when_an_endpoint_hangs(
    couch_url: str,
    started: list[core.ReplicationPlan],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (doc_id,) = (plan.doc_id for plan in started)
    with FaultProxy(couch_url) as proxy:
        hang("GET", f"^/_scheduler/docs/_replicator/{doc_id}")(proxy)
        hang("GET", f"^/_replicator/{doc_id}")(proxy)
        monkeypatch.setenv("CLOUDANT_URL", proxy.url)
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
        for extra in ([], ["--cancel"]):
            started_at = time.monotonic()
            code = main(["replication", doc_id, "--timeout", f"{TIMEOUT:g}", *extra])
            took = time.monotonic() - started_at
            err = capsys.readouterr().err
            assert code == EXIT_SERVER, (extra, err)
            assert took < TIMEOUT + MARGIN, (extra, took, err)
            assert f"within {TIMEOUT:g} s" in err, (extra, err)
