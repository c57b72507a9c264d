"""couchids.aio's client: credentials in the server URL never reach httpx's URL (which httpx
logs), a closed client says so in couchids' words, and requests go through the proxies its
``CloudantV1`` client sends through."""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest
from emptycouch import empty_database_handler
from faultproxy import client_for
from localserver import Server

from couchids import InvalidArgumentError, UnauthorizedError, aio
from couchids.core.urls import parse_url

USER = "admin"
PASSWORD = "Zq9-aio-S3cret"
#: A password that must be percent-encoded in a URL.
ODD_PASSWORD = "Zq9/aio@S3c:ret"


class Recorder:
    """A loopback server that answers like an empty CouchDB database and keeps the
    ``Authorization`` header of each request."""

    def __init__(self) -> None:
        self.authorizations: list[str | None] = []
        #: Each request's target: a path, or a URL when the recorder is the proxy.
        self.paths: list[str] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), empty_database_handler(self._seen))
        self.httpd.daemon_threads = True
        self.host = f"127.0.0.1:{self.httpd.server_address[1]}"

    def _seen(self, handler: BaseHTTPRequestHandler) -> None:
        self.authorizations.append(handler.headers.get("Authorization"))
        self.paths.append(handler.path)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.mark.parametrize("password", [PASSWORD, ODD_PASSWORD], ids=["plain", "encoded"])
def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_logged(
    password: str,
    recorder: Recorder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    in_url = quote(password, safe="")
    monkeypatch.setenv("CLOUDANT_URL", f"http://{USER}:{in_url}@{recorder.host}")
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    # Made before logging goes to DEBUG: ibmcloudant then turns on http.client's printing.
    client = aio.new_instance(trust_env=False)

    async def main() -> list[object]:
        async with client:
            return await aio.AsyncDatabase(client, "shop").latest(3)

    with caplog.at_level(logging.DEBUG):
        assert asyncio.run(main()) == []
    expected = "Basic " + base64.b64encode(f"{USER}:{password}".encode()).decode()
    assert recorder.authorizations and set(recorder.authorizations) == {expected}
    assert any("HTTP Request" in record.getMessage() for record in caplog.records), "no log"
    for record in caplog.records:
        for text in (record.getMessage(), str(record.msg), repr(record.args)):
            for secret in (password, in_url, f"{USER}:"):
                assert secret not in text, text


def test_a_url_without_credentials_sends_no_authorization(recorder: Recorder) -> None:
    async def main() -> list[object]:
        async with aio.AsyncClient(client_for(f"http://{recorder.host}")) as client:
            return await aio.AsyncDatabase(client, "shop").latest(3)

    assert asyncio.run(main()) == []
    assert recorder.authorizations and set(recorder.authorizations) == {None}


def test_a_closed_client_says_so() -> None:
    async def main() -> None:
        # Nothing is sent: the port is never reached.
        client = aio.AsyncClient(client_for("http://127.0.0.1:9"))
        sequence = aio.AsyncSequence(client, "shop", "n")
        await client.aclose()

        async def window() -> list[object]:
            return [
                doc
                async for doc in aio.AsyncDatabase(client, "shop").window(
                    "2020-01-01", "2030-01-01"
                )
            ]

        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "latest": lambda: aio.AsyncDatabase(client, "shop").latest(),
            "count": lambda: aio.AsyncDatabase(client, "shop").count("2020-01-01", "2030-01-01"),
            "window": window,
            "Sequence.next": sequence.next,
        }
        for name, call in calls.items():
            with pytest.raises(InvalidArgumentError) as caught:
                await call()
            message = str(caught.value)
            assert "is closed" in message and "aio.connect()" in message, (name, message)

    asyncio.run(main())


@pytest.mark.parametrize("where", ["http_config", "session"])
def test_an_async_client_sends_through_its_cloudant_clients_proxy(
    recorder: Recorder, where: str
) -> None:
    # Nothing listens on port 9: only through the proxy (the recorder) is there an answer.
    client = client_for("http://127.0.0.1:9")
    proxies = {"http": f"http://{recorder.host}"}
    if where == "http_config":
        client.set_http_config({"proxies": proxies})
    else:
        client.set_http_config({})  # client_for's proxies of None would take its place
        client.get_http_client().proxies = proxies

    async def main() -> list[object]:
        async with aio.AsyncClient(client) as async_client:
            return await aio.AsyncDatabase(async_client, "shop").latest(3)

    assert asyncio.run(main()) == []
    assert recorder.paths and all(p.startswith("http://127.0.0.1:9/shop") for p in recorder.paths)


def test_a_scheme_the_cloudant_client_sends_directly_goes_around_the_environments_proxy(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    client = client_for(f"http://{recorder.host}")
    client.set_http_config({"proxies": {"http": None}})

    async def main() -> list[object]:
        async with aio.AsyncClient(client) as async_client:
            return await aio.AsyncDatabase(async_client, "shop").latest(3)

    assert asyncio.run(main()) == []
    assert recorder.paths and all(p.startswith("/shop") for p in recorder.paths)


def refused_as_other(server: Server, monkeypatch: pytest.MonkeyPatch, **settings: str) -> str:
    """The message of ``new_instance("other")`` of ``settings`` (``OTHER_*``) refused a read."""
    root = parse_url(server.url, "url", role="server").root
    for name, value in {"URL": root, **settings}.items():
        monkeypatch.setenv(f"OTHER_{name}", value)

    async def main() -> None:
        async with aio.new_instance("other", trust_env=False) as client:
            await aio.AsyncDatabase(client, "_users").latest(1)

    with pytest.raises(UnauthorizedError) as caught:
        asyncio.run(main())
    message = str(caught.value)
    assert "CLOUDANT_" not in message, message
    return message


def test_a_refused_client_of_another_service_names_its_credentials_by_its_settings(
    couch_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = f"nobody-{uuid.uuid4().hex[:10]}"  # CouchDB locks out a user after failed logins
    message = refused_as_other(
        couch_server, monkeypatch, AUTH_TYPE="basic", USERNAME=user, PASSWORD="Zq9-wr0ng"
    )
    assert f"user {user!r} with its password (OTHER_USERNAME and OTHER_PASSWORD)" in message


@pytest.mark.needs("couchdb")  # CouchDB 3 keeps _users to its admins: an anonymous read is refused
def test_a_client_of_another_service_sending_no_credentials_is_told_that_service_s_settings(
    couch_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = refused_as_other(couch_server, monkeypatch, AUTH_TYPE="noauth")
    advice = "set OTHER_AUTH_TYPE to basic or couchdb_session with OTHER_USERNAME and"
    assert f"(OTHER_AUTH_TYPE=noauth): {advice} OTHER_PASSWORD" in message, message
