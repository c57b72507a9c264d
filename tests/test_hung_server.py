"""One deadline per call: a server that stops answering one endpoint ends every call that
polls or retries it by the ``timeout`` the caller gave, in both APIs.

A proxy (tests/faultproxy.py) in front of the real server holds the requests of one endpoint
without answering (``"hang"``), or answers them only after a while (``"slow"``): each call
below raises ``ServerTimeoutError`` within its ``timeout`` plus a generous margin. The slow
cases tell one deadline from a deadline per step: a call that started the clock again for
each step (a poll, a database of ``prepare``, the write a series sends again once it made
the period's database) would have succeeded there, each step being shorter than the
``timeout``, all of them together longer. The calls of both APIs are written once, in
tests/_async/test_hung_server.py.

Replication (``_scheduler/docs``, ``_replicator/{id}``) needs CouchDB; the rest runs on every
server.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import drop_database
from faultproxy import FaultProxy
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids.cli.main import EXIT_SERVER, main
from couchids.core import replication as core
from couchids.core.facts import FactsCache
from couchids.core.policy import RetryPolicy
from couchids.drivers.access import server_access
from couchids.drivers.blocking import run as couchids_run

#: The timeout every call below is given.
TIMEOUT = 3.0
#: How much later than its deadline a call may end: room for a loaded two-core machine
#: running the cases at once (3 s was missed under heavy load). A call that does not keep to
#: one deadline takes at least a minute (a poll's own 60 s), or succeeds (the slow cases).
MARGIN = 20.0
#: How long a ``"slow"`` request is held: shorter than the timeout, two of them longer.
SLOW = 2.0
#: Enough failures for every request a case sends.
ALWAYS = 10_000

Setup = Callable[[FaultProxy], None]


def hang(method: str, path: str) -> Setup:
    """A setup that hangs every ``method`` request whose path matches ``path``."""
    return lambda proxy: proxy.fail("hang", method=method, path=path, times=ALWAYS)


# -- follow, claims, database lookups and series: every server ------------------------------------


@pytest.fixture
def series_prefix(client: CloudantV1) -> Iterator[str]:
    yield from a_series_prefix(client)


def a_series_prefix(client: CloudantV1) -> Iterator[str]:
    """A prefix for the series of a test; its databases are dropped after it (a fixture's
    body)."""
    prefix = f"test_{uuid.uuid4().hex}"
    yield prefix
    for name in client.get_all_dbs().get_result():
        if name.startswith(prefix):
            drop_database(client, name)


# -- replication: CouchDB --------------------------------------------------------------------------


@pytest.fixture
def started(client: CloudantV1, db: str, couch_server: Any) -> Iterator[list[core.ReplicationPlan]]:
    yield from a_started_replication(client, db, couch_server)


def a_started_replication(
    client: CloudantV1, db: str, couch_server: Any
) -> Iterator[list[core.ReplicationPlan]]:
    """The plans of a one-shot replication started from ``db``; cancelled after the test,
    and its target dropped (a fixture's body)."""
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


def test_a_command_that_ran_out_of_its_timeout_says_it_can_be_given_more(
    couch_url: str, db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FaultProxy(couch_url) as proxy:
        hang("GET", f"^/{db}")(proxy)
        monkeypatch.setenv("CLOUDANT_URL", proxy.url)
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
        assert main(["latest", db, "--timeout", "0.5"]) == EXIT_SERVER
    err = capsys.readouterr().err
    assert "within 0.5 s" in err and err.rstrip().endswith("more time than --timeout 0.5"), err
