"""The headers both drivers send: a server on this machine is asked for answers as they are
(``Accept-Encoding: identity``), any other gets the HTTP client's usual offer of compression,
and a client's own default headers win over couchids'. Pinned with ``responses`` and an
``httpx`` mock transport: nothing leaves the process."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest
import responses
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import aio

LOCAL = ("http://127.0.0.1:5984", "http://localhost:5984", "http://[::1]:5984")
REMOTE = ("http://couch.example.com", "https://10.1.2.3:6984")
NO_ROWS = {"total_rows": 0, "offset": 0, "rows": []}
DB_INFO = {"db_name": "db", "doc_count": 0, "props": {}}


def cloudant(url: str, defaults: dict[str, str] | None = None) -> CloudantV1:
    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url(url)
    if defaults:
        client.set_default_headers(defaults)
    return client


def sent_blocking(url: str, defaults: dict[str, str] | None = None) -> str | None:
    """The Accept-Encoding of each request ``Database.latest`` sends to ``url`` (all the same)."""
    with responses.RequestsMock() as mock:
        mock.get(f"{url}/db", json=DB_INFO)
        mock.post(f"{url}/db/_all_docs", json=NO_ROWS)
        assert couchids.Database(cloudant(url, defaults), "db").latest(1) == []
        (offered,) = {call.request.headers.get("Accept-Encoding") for call in mock.calls}
        return offered


def sent_async(url: str, defaults: dict[str, str] | None = None) -> str | None:
    """The same through :mod:`couchids.aio` and its ``httpx`` client."""
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Accept-Encoding"))
        reply = NO_ROWS if request.url.path.endswith("/_all_docs") else DB_INFO
        return httpx.Response(200, json=reply)

    async def main() -> None:
        http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        async with http, aio.AsyncClient(cloudant(url, defaults), http) as client:
            assert await aio.AsyncDatabase(client, "db").latest(1) == []

    asyncio.run(main())
    (offered,) = set(seen)
    return offered


Sender = Callable[..., str | None]
SENDERS = pytest.mark.parametrize("sent", [sent_blocking, sent_async], ids=["blocking", "aio"])


@SENDERS
@pytest.mark.parametrize("url", LOCAL)
def test_a_server_on_this_machine_is_asked_for_uncompressed_answers(sent: Sender, url: str) -> None:
    assert sent(url) == "identity"


@SENDERS
@pytest.mark.parametrize("url", REMOTE)
def test_any_other_server_is_offered_compression(sent: Sender, url: str) -> None:
    offered = sent(url)
    assert offered is not None and "gzip" in offered


@SENDERS
def test_the_clients_own_default_header_wins(sent: Sender) -> None:
    assert sent(LOCAL[0], {"Accept-Encoding": "gzip"}) == "gzip"
