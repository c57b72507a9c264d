"""Shared fixtures: the servers the integration tests run against, a client, and kuuid.

Every test that uses ``couch_url`` (directly or through ``client``/``db``) is an integration
test: it runs once against each configured server, and its id names the server
(``test_x[couchdb]``). The servers come from the environment:

- ``COUCHIDS_TEST_SERVERS``: a comma-separated list of ``pouchdb``, ``couchdb``, ``cluster`` and
  ``url``. Default: ``pouchdb``, plus ``couchdb,cluster`` when ``COUCHIDS_COUCHDB`` names a
  CouchDB launcher, plus ``url`` when ``COUCHIDS_TEST_URL`` is set.
- ``COUCHIDS_COUCHDB``: the launcher that starts Apache CouchDB nodes (scripts/localserver.py).
- ``COUCHIDS_TEST_URL``: a CouchDB or Cloudant you run, e.g. ``http://admin:pass@127.0.0.1:5984``
  (it is used as an Apache CouchDB; tests create and delete databases named ``test_...``).

A test that depends on one server's behaviour says so with ``@pytest.mark.needs(...)``: it runs
only on servers with every named trait (``pouchdb``; ``couchdb``, which a user's URL and the
cluster have too; ``cluster``, the local 3-node cluster whose nodes can be paused; ``node``,
the local single CouchDB node, where a test may name databases as a user would). When no
configured server has them the test is skipped with the reason, except under ``CI=true``, where
it fails: CI runs every server and skips nothing.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from apis import APIS, Async, Blocking
from cloudantproxy import CloudantProxy
from faultproxy import FaultProxy, client_for
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1
from kuuid_node import KuuidNode
from localserver import KINDS, LAUNCHER_VARIABLE, CouchDBCluster, Server, start

SERVERS_VARIABLE = "COUCHIDS_TEST_SERVERS"
URL_VARIABLE = "COUCHIDS_TEST_URL"
#: What each server kind has, for ``@pytest.mark.needs``.
TRAITS = {
    "pouchdb": {"pouchdb"},
    "couchdb": {"couchdb", "node"},
    "cluster": {"couchdb", "cluster"},
    "url": {"couchdb"},
}


@dataclass
class UserServer:
    """The CouchDB named by ``COUCHIDS_TEST_URL``, run by the user."""

    url: str
    kind: str = "url"


def configured_servers() -> list[str]:
    names = os.environ.get(SERVERS_VARIABLE, "").replace(" ", "")
    if names:
        chosen = names.split(",")
    else:
        chosen = ["pouchdb"]
        if os.environ.get(LAUNCHER_VARIABLE):
            chosen += ["couchdb", "cluster"]
        if os.environ.get(URL_VARIABLE):
            chosen.append("url")
    unknown = [name for name in chosen if name not in TRAITS]
    if unknown:
        raise pytest.UsageError(
            f"{SERVERS_VARIABLE}: unknown server {unknown[0]!r}; use {', '.join(TRAITS)}"
        )
    return list(dict.fromkeys(chosen))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs(*traits): run only on servers with these traits (see conftest.py)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "couch_server" not in metafunc.fixturenames:
        return
    needed = set()
    for marker in metafunc.definition.iter_markers("needs"):
        needed.update(marker.args)
    unknown = needed - set().union(*TRAITS.values())
    if unknown:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: unknown trait {unknown}")
    servers = [name for name in configured_servers() if needed <= TRAITS[name]]
    if not servers:
        # Not configured here: the fixture skips it (or fails it under CI) with the reason.
        servers = [next(kind for kind in (*KINDS, "url") if needed <= TRAITS[kind])]
    metafunc.parametrize("couch_server", servers, indirect=True, scope="session")


#: The server a test runs on, by its id: ``[cluster]``, ``[blocking-pouchdb-kuuid]``, ...
SERVER_IN_ID = re.compile(r"[\[-](" + "|".join(TRAITS) + r")[\]-]")
#: Where the second unit of the cluster's tests begins, by module path.
CLUSTER_SPLIT = "tests/test_f"
#: How a module says that its tests share something costly (a site, a seeded database, a
#: batch of cases run together): a fixture of the module's scope.
MODULE_FIXTURE = re.compile(r"""@pytest\.fixture\(\s*scope\s*=\s*["']module["']""")


def unit_of(nodeid: str, shares_fixtures: Callable[[str], bool]) -> str:
    """The unit of work a test belongs to in a parallel run, by its id; ``shares_fixtures``
    tells whether a module (its path) has a module-scoped fixture.

    - the tests of the 3-node cluster are two units, by module (before and from
      :data:`CLUSTER_SPLIT`; about half the cluster's time each), so that two processes share
      them, each starting one cluster (one process alone took longer than the other two with
      everything else);
    - the tests of a module with a module-scoped fixture are one unit per server, so that
      what they share is built once (a process builds its own copy of each module fixture it
      needs, and a batched module runs all its cases of a server on the first demand);
    - every other test is a unit of its own, handed to whichever process is free.
    """
    found = SERVER_IN_ID.search(nodeid)
    server = found.group(1) if found else ""
    module = nodeid.split("::", 1)[0]
    if server == "cluster":
        return "cluster" if module < CLUSTER_SPLIT else "cluster-2"
    return f"{module}[{server}]" if shares_fixtures(module) else nodeid


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (``scripts/test`` runs ``-n 3 --dist loadscope``): the tests go to
    the processes in the units of :func:`unit_of`. (xdist's own ``loadgroup`` marks do not
    reach its scheduler under pytest 9: it renames the items through an attribute pytest no
    longer reads.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    @functools.cache
    def shares_fixtures(module: str) -> bool:
        path = config.rootpath / module
        return path.is_file() and MODULE_FIXTURE.search(path.read_text("utf-8")) is not None

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid, shares_fixtures)

    return Units(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "couch_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def couch_server(request: pytest.FixtureRequest) -> Iterator[Server | UserServer]:
    """One server of the kind the test is parametrised with, for the whole session."""
    name: str = request.param
    if name not in configured_servers():
        reason = (
            f"needs a {name} server, which is not configured: set {SERVERS_VARIABLE} "
            f"(and {LAUNCHER_VARIABLE} or {URL_VARIABLE}); see tests/conftest.py"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    if name == "url":
        yield UserServer(os.environ[URL_VARIABLE].rstrip("/"))
        return
    with start(name) as server:  # type: ignore[arg-type]
        yield server


@pytest.fixture(scope="session")
def couch_url(couch_server: Server | UserServer) -> Iterator[str]:
    """Base URL of the server under test; it carries the credentials when there are any.

    On the local cluster it is a proxy that writes to every copy (``w=3``, see
    :class:`~faultproxy.FaultProxy`), so that tests read their own writes; the cluster's own
    tests talk to its nodes directly (:attr:`~localserver.CouchDBCluster.node_urls`).
    """
    if not isinstance(couch_server, CouchDBCluster):
        yield couch_server.url
        return
    with FaultProxy(couch_server.url, every_copy=True) as proxy:
        yield proxy.url


@pytest.fixture
def cloudant_proxy(couch_url: str) -> Iterator[Callable[..., CloudantProxy]]:
    """Starts Cloudant-rules servers in front of the server under test (see
    tests/cloudantproxy.py): ``cloudant_proxy(plan="lite", max_databases=3)`` answers a
    running :class:`~cloudantproxy.CloudantProxy`, stopped when the test ends."""
    with contextlib.ExitStack() as stack:

        def start(**options: Any) -> CloudantProxy:
            return stack.enter_context(CloudantProxy(couch_url, **options))

        yield start


@pytest.fixture
def cloudant_url(cloudant_proxy: Callable[..., CloudantProxy]) -> Callable[..., str]:
    """``cloudant_url(plan="lite", ...)``: the URL of a new Cloudant-rules server in front of
    the server under test (the options of :class:`~cloudantproxy.CloudantProxy`)."""
    return lambda **options: cloudant_proxy(**options).url


@pytest.fixture(scope="session")
def cluster(couch_server: Server | UserServer) -> CouchDBCluster:
    """The local 3-node cluster (tests using it are marked ``needs("cluster")``)."""
    assert isinstance(couch_server, CouchDBCluster), "mark the test @pytest.mark.needs('cluster')"
    return couch_server


@pytest.fixture
def client(couch_url: str) -> CloudantV1:
    """An ibmcloudant client for the server under test."""
    return client_for(couch_url)


def fresh_database(client: CloudantV1, **options: object) -> str:
    """Create a database with a unique name (``options`` such as ``partitioned=True``)."""
    # CouchDB database names must start with a lower-case letter: ^[a-z][a-z0-9_$()+/-]*$
    name = f"test_{uuid.uuid4().hex}"
    client.put_database(db=name, **options)
    return name


def drop_database(client: CloudantV1, name: str) -> None:
    try:
        client.delete_database(db=name)
    except ApiException as error:
        if error.status_code != 404:  # the test may have deleted it itself
            raise


@pytest.fixture
def db(client: CloudantV1) -> Iterator[str]:
    """Name of a fresh, empty database, deleted after the test."""
    name = fresh_database(client)
    yield name
    drop_database(client, name)


@pytest.fixture
def partitioned_db(client: CloudantV1) -> Iterator[str]:
    """Name of a fresh, empty partitioned database (CouchDB 3 and Cloudant only)."""
    name = fresh_database(client, partitioned=True)
    yield name
    drop_database(client, name)


@pytest.fixture(params=APIS, ids=lambda api: api.name)
def api(request: pytest.FixtureRequest) -> Blocking | Async:
    """Each API in turn: the blocking functions, then the coroutines of couchids.aio."""
    api: Blocking | Async = request.param
    return api


@pytest.fixture(scope="session")
def kuuid_node() -> KuuidNode:
    """The real kuuid package (Node), for cross-checks; see tests/kuuid_node.py."""
    return KuuidNode()
