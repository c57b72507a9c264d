"""The listings couchids reads are checked like the rows of ``_all_docs``, through
couchids.aio's handles and, in the generated twin, the blocking ones, through tests/bendproxy.py:
a server whose ``_all_dbs`` repeats a name, lists them out of order or ignores the keys (a
series' ``databases``, ``window`` and ``count``); whose ``_changes`` repeats a change, lists them
out of order, ignores ``since`` or ``limit`` (``follow``); whose ``_scheduler/docs`` answers the
listing of every replication (``status``, ``wait``). Each is refused with a
:class:`couchids.ServerError` naming the operation, on the servers that promise otherwise, and
read as it is where the server makes no such promise. (The check itself and the proxy are tested
in tests/test_listings.py.)"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any, Final

import pytest
from bendproxy import BendProxy, Mode
from conftest import drop_database
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import CouchDBCluster
from test_listings import BUDGET, TIMEOUT, a_changed_database, a_series, is_couchdb

from couchids import ServerError, ServerTimeoutError
from couchids.core.replication import STATES
from couchids.drivers.aio import AsyncClient

from .helpers import database, listed, series_of


@pytest.fixture(scope="module")
def series(couch_url: str) -> Iterator[tuple[str, list[str], list[str]]]:
    yield from a_series(couch_url)


@pytest.fixture(scope="module")
def changed(couch_url: str, couch_server: Any) -> Iterator[tuple[str, list[str]]]:
    yield from a_changed_database(couch_url, couch_server)


async def refused(call: Callable[[], Any], operation: str, listing: str) -> ServerError:
    """The ServerError ``call`` raises, checked to name ``operation`` and the ``listing``
    (not a timeout: the answer itself was refused)."""
    with pytest.raises(ServerError) as caught:
        await call()
    message = str(caught.value)
    assert message.startswith(f"{operation} on "), message
    assert f"not a CouchDB answer: {listing} listed" in message, message
    assert not isinstance(caught.value, ServerTimeoutError), message
    return caught.value


# -- _all_dbs: a series ----------------------------------------------------------------------------

START: Final = "2024-01-01T00:00:00Z"
END: Final = "2024-05-01T00:00:00Z"
#: The bends of ``_all_dbs``; each runs unbent too, as a control.
ALL_DBS_BENDS: Final[tuple[Mode, ...]] = (
    "honest",
    "duplicate",
    "reverse",
    "shuffle",
    "ignore-start",
    "ignore-end",
)


async def series_call(client: AsyncClient, prefix: str, operation: str) -> Any:
    """``operation`` (``databases``, ``window`` (its ids, sorted) or ``count``) of the
    series ``prefix`` through ``client``."""
    series = series_of(client, prefix, every="month", timeout=TIMEOUT)
    if operation == "databases":
        return await series.databases()
    if operation == "window":
        return sorted(doc["_id"] for doc in await listed(series.window(START, END, type="t")))
    return await series.count(START, END, type="t")


@pytest.mark.parametrize("operation", ["databases", "window", "count"])
@pytest.mark.parametrize("mode", ALL_DBS_BENDS)
async def test_a_bent_all_dbs_is_refused_where_the_server_promised_otherwise(
    mode: Mode,
    operation: str,
    async_client_for: Callable[[CloudantV1], AsyncClient],
    series: tuple[str, list[str], list[str]],
    couch_url: str,
    couch_server: Any,
) -> None:
    prefix, names, ids = series
    truth = {"databases": names, "window": ids, "count": len(ids)}[operation]
    # Each name once, from every server; CouchDB also promises them sorted, inside the keys.
    promised = mode == "duplicate" or (is_couchdb(couch_server) and mode != "honest")
    with BendProxy(couch_url, mode, reads=("_all_dbs",), budget=BUDGET) as proxy:
        through = async_client_for(client_for(proxy.url))
        if promised:
            await refused(lambda: series_call(through, prefix, operation), operation, "_all_dbs")
        else:
            assert await series_call(through, prefix, operation) == truth
        assert proxy.bent >= 1 and not proxy.runaway


# -- _changes: follow -----------------------------------------------------------------------------

#: The bends of ``_changes``; each runs unbent too, as a control.
CHANGES_BENDS: Final[tuple[Mode, ...]] = (
    "honest",
    "duplicate",
    "reverse",
    "shuffle",
    "ignore-start",
    "ignore-limit",
    "reset-last-seq",
)
#: Changes per request of follow: the 12 documents take three.
BATCH: Final = 5


@pytest.mark.parametrize("mode", CHANGES_BENDS)
async def test_a_bent_changes_feed_is_refused_where_the_server_promised_otherwise(
    mode: Mode,
    async_client_for: Callable[[CloudantV1], AsyncClient],
    changed: tuple[str, list[str]],
    couch_url: str,
    couch_server: Any,
) -> None:
    db, ids = changed
    # A change at most once, no more than the limit, none at the since asked from, a last_seq
    # that moved on from it: every server. Sequences in order from since, a last_seq not
    # before them: PouchDB Server's (numbers); CouchDB's are opaque.
    promised = mode in ("duplicate", "ignore-start", "ignore-limit", "reset-last-seq") or (
        not is_couchdb(couch_server) and mode != "honest"
    )
    options = {"type": "t", "since_seq": 0, "wait": False}
    with BendProxy(couch_url, mode, reads=("_changes",), budget=BUDGET) as proxy:
        through = async_client_for(client_for(proxy.url))

        async def follow() -> list[str]:
            handle = database(through, db, timeout=TIMEOUT, batch_size=BATCH)
            return sorted(doc["_id"] for doc in await listed(handle.follow(**options)))

        if promised:
            await refused(follow, "follow", "_changes")
        else:
            assert await follow() == ids
        assert proxy.bent >= 1 and not proxy.runaway


# -- _scheduler/docs: a replication's status ------------------------------------------------------

#: The bends of ``_scheduler/docs``: each answers the listing of every replication, bent,
#: instead of the entry asked for; and the control.
SCHEDULER_BENDS: Final[tuple[Mode, ...]] = ("honest", "duplicate", "reverse", "shuffle")


async def replication_call(
    client: AsyncClient, db: str, target: str, server_url: str, operation: str
) -> Any:
    """Start a replication of ``db`` into ``target`` through ``client``, then its
    ``status()`` or ``wait()``; it is cancelled after."""
    window = ("2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z")
    handle = database(client, db, timeout=TIMEOUT)
    job = await handle.replicate(target, *window, type="t", server_url=server_url)
    try:
        return await (job.status() if operation == "status" else job.wait(TIMEOUT))
    finally:
        await job.cancel()


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("operation", ["status", "wait"])
@pytest.mark.parametrize("mode", SCHEDULER_BENDS)
async def test_a_scheduler_answer_for_another_document_is_refused(
    mode: Mode,
    operation: str,
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    changed: tuple[str, list[str]],
    couch_url: str,
    couch_server: Any,
) -> None:
    db, _ = changed
    # Where the server reaches itself: a node (the cluster's couch_url is a proxy of the test).
    server_url = couch_server.url if isinstance(couch_server, CouchDBCluster) else couch_url
    target = f"test_{uuid.uuid4().hex}_copy"
    try:
        with BendProxy(couch_url, mode, reads=("_scheduler/docs",), budget=BUDGET) as proxy:
            through = async_client_for(client_for(proxy.url))

            async def call() -> Any:
                return await replication_call(through, db, target, server_url, operation)

            if mode == "honest":
                done = await call()
                assert done.state == "completed" if operation == "wait" else done.state in STATES
            else:
                await refused(call, operation, "_scheduler/docs")
            assert proxy.bent >= 1 and not proxy.runaway
    finally:
        drop_database(client, target)
