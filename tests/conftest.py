"""Shared fixtures: the local CouchDB-compatible server, a client for it, and the kuuid bridge.

Any test that uses ``couch_url`` (directly or through ``client``/``db``) is marked
``integration``. Integration tests are never skipped: if the server cannot start they error.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from ibm_cloud_sdk_core import ApiException
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from kuuid_node import KuuidNode
from localserver import LocalServer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "couch_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def couch_url() -> Iterator[str]:
    """URL of one PouchDB Server for the whole session, started on first use."""
    with LocalServer() as server:
        yield server.url


@pytest.fixture
def client(couch_url: str) -> CloudantV1:
    """An ibmcloudant client for the local server (no authentication)."""
    service = CloudantV1(authenticator=NoAuthAuthenticator())
    service.set_service_url(couch_url)
    # Loopback only: never send test traffic through a proxy named in the environment.
    service.set_http_config({"proxies": {"http": None, "https": None}})
    return service


@pytest.fixture
def db(client: CloudantV1) -> Iterator[str]:
    """Name of a fresh, empty database, deleted after the test."""
    # CouchDB database names must start with a lower-case letter: ^[a-z][a-z0-9_$()+/-]*$
    name = f"test_{uuid.uuid4().hex}"
    client.put_database(db=name)
    yield name
    try:
        client.delete_database(db=name)
    except ApiException as error:
        if error.status_code != 404:  # the test may have deleted it itself
            raise


@pytest.fixture(scope="session")
def kuuid_node() -> KuuidNode:
    """The real kuuid package (Node), for cross-checks; see tests/kuuid_node.py."""
    return KuuidNode()
