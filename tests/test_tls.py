"""couchids/drivers/tls.py: ``https://`` on a port that speaks plain HTTP fails when the
connection is made, saying to write ``http://``, rather than when the deadline passes; and
``https://`` to a server that speaks TLS still works, in both APIs (the first is written once for
both, in tests/_async/test_tls.py).

The TLS server is a loopback one with the self-signed certificate of
``tests/loopback-tls.pem`` (for 127.0.0.1, valid until 2126), which the clients trust."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from emptycouch import empty_database_handler
from localserver import Server

from couchids import Database, aio, connect
from couchids.cli.main import EXIT_SERVER, main
from couchids.core.urls import parse_url
from couchids.drivers.tls import speaks_plain_http

CERTIFICATE = Path(__file__).with_name("loopback-tls.pem")
#: Far beyond the handshake's bound (10 s): a call that ends well before it was not kept
#: waiting for a handshake answer until its deadline.
DEADLINE = 120.0


class TlsServer:
    """A loopback HTTPS server answering like an empty CouchDB database."""

    def __init__(self) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(CERTIFICATE)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), empty_database_handler())
        self.httpd.daemon_threads = True
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"


@pytest.fixture
def tls_server() -> Iterator[TlsServer]:
    server = TlsServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def plain_port(couch_server: Server) -> tuple[str, int]:
    parsed = parse_url(couch_server.url, "url", role="server")
    assert parsed.port is not None
    return parsed.hostname, parsed.port


def test_the_command_says_to_write_http(
    couch_server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    host, port = plain_port(couch_server)
    monkeypatch.setenv("CLOUDANT_URL", f"https://{host}:{port}")
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    assert main(["latest", "shop", "--timeout", str(DEADLINE)]) == EXIT_SERVER
    err = capsys.readouterr().err
    assert f"write http://{host}:{port} as the server's URL (CLOUDANT_URL)" in err
    assert "the server is up" not in err  # it is


def test_a_tls_server_speaks_no_plain_http(tls_server: TlsServer, couch_server: Server) -> None:
    assert not speaks_plain_http("127.0.0.1", tls_server.port)
    assert speaks_plain_http(*plain_port(couch_server))


def test_https_to_a_tls_server_works_in_both_apis(tls_server: TlsServer) -> None:
    client = connect(tls_server.url, auth_type="noauth")
    client.set_http_config({"verify": str(CERTIFICATE), "proxies": {"http": None, "https": None}})
    assert Database(client, "shop").with_options(timeout=DEADLINE).latest(2) == []
    # A second call reuses the connection, whose socket got its own timeout back.
    assert Database(client, "shop").with_options(timeout=DEADLINE).latest(2) == []

    async def latest() -> list[object]:
        context = ssl.create_default_context(cafile=str(CERTIFICATE))
        async with aio.connect(
            tls_server.url, auth_type="noauth", verify=context, trust_env=False
        ) as async_client:
            shop = aio.AsyncDatabase(async_client, "shop").with_options(timeout=DEADLINE)
            return await shop.latest(2)

    assert asyncio.run(latest()) == []


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
@pytest.mark.parametrize(
    "config",
    [{"verify": str(CERTIFICATE)}, "disable", "REQUESTS_CA_BUNDLE"],
    ids=["ca-bundle", "disable_ssl_verification", "environment"],
)
def test_an_async_client_checks_tls_as_its_cloudant_client_does(
    tls_server: TlsServer, config: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The blocking client trusts the certificate (or checks none): so does aio.AsyncClient of it.
    client = connect(tls_server.url, auth_type="noauth")
    client.set_http_config({"proxies": {"http": None, "https": None}})
    if config == "disable":
        client.set_disable_ssl_verification(True)
    elif config == "REQUESTS_CA_BUNDLE":
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(CERTIFICATE))
    else:
        assert isinstance(config, dict)
        client.set_http_config({**client.http_config, **config})
    assert Database(client, "shop").with_options(timeout=DEADLINE).latest(2) == []

    async def latest() -> list[object]:
        async with aio.AsyncClient(client) as async_client:
            shop = aio.AsyncDatabase(async_client, "shop").with_options(timeout=DEADLINE)
            return await shop.latest(2)

    assert asyncio.run(latest()) == []
