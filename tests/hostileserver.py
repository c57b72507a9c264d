"""A loopback HTTP server that is not a good CouchDB, for testing what couchids does with bad
answers.

Every mode answers ``GET /{db}`` as CouchDB would (a plain database), unless the mode is about
every request, and then answers the requests that matter in its own wrong way:

- ``html``: an HTML page with 200, as a proxy's login page or ``python3 -m http.server``;
- ``html-404``: an HTML 404 page for everything, ``GET /{db}`` too;
- ``text``: a line of plain text (``text/plain``) with 200, as a proxy or a load balancer's;
- ``truncated``: JSON cut off in the middle (the length is honest);
- ``wrong-types``: JSON objects whose fields have the wrong types (``rows`` an object, ``rev``
  a number, a list where an object belongs);
- ``null-docs``: ``_all_docs`` rows with ``"doc": null`` that are not deleted documents
  (writes succeed);
- ``error-200``: ``200`` with ``{"error": ..., "reason": ...}`` for everything;
- ``silent``: accept the connection and never answer;
- ``close-mid-body``: promise a body, send part of it, close the connection;
- ``echo``: answer 403 with a reason repeating the request line, ``Authorization`` and
  ``Cookie`` headers (a server that puts what it was sent into its errors); a session login
  gets the cookie ``AuthSession={cookie}``;
- ``session-refused``: answer ``POST /_session`` with 401, as CouchDB does for a wrong password.

With ``couchdb=True`` every mode but ``silent`` answers ``GET /`` with Apache CouchDB's welcome
and ``GET /{db}`` as a database, so that what asks which server it is (``replicate``) goes on
to the requests the mode spoils; ``echo`` then repeats the request's body too.

    with HostileServer("html") as server:
        client = client_for(server.url)

:class:`TokenService` plays an IAM token service, for IAM authentication without leaving
loopback: it answers each token request with a token, or, while ``silent``, never answers.
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Final

import certifi
import pytest
import requests.certs

MODES: Final = (
    "html",
    "html-404",
    "text",
    "truncated",
    "wrong-types",
    "null-docs",
    "error-200",
    "silent",
    "close-mid-body",
    "echo",
    "session-refused",
)
#: How often a server's loop looks for a request to stop (socketserver's default, 0.5 s, is
#: what leaving every ``with HostileServer(...)`` block would cost).
POLL: Final = 0.05
PAGE: Final = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>" + b"x" * 5000


class _Server(ThreadingHTTPServer):
    """Keeps the errors of its handlers in :attr:`errors` instead of printing them, but for a
    client that went away (which the clients of these servers do)."""

    # Tests connect many clients at once; with socketserver's backlog of 5 the ones beyond it
    # would wait for the kernel to resend their connection request, a second or more later.
    request_queue_size = 128

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.errors: list[str] = []

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            self.errors.append(traceback.format_exc())

    def stop(self, failing: bool) -> None:
        """Stop; unless the test is ``failing`` already, fail if a handler failed."""
        self.shutdown()
        self.server_close()
        assert failing or not self.errors, "the server failed:\n" + "\n".join(self.errors)


class HostileServer:
    """One mode, on a free loopback port, in a thread."""

    def __init__(self, mode: str, cookie: str = "c00kie", *, couchdb: bool = False) -> None:
        assert mode in MODES, mode
        self.mode, self.cookie, self.couchdb = mode, cookie, couchdb
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Content-Encoding") == "gzip":
                    # ibmcloudant's new_instance() compresses what it sends, as CouchDB accepts.
                    body = gzip.decompress(body)
                server.answer(self, body)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        self.httpd = _Server(Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(POLL,), daemon=True)

    def __enter__(self) -> HostileServer:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stopping.set()
        self.httpd.stop(failing=kind is not None)

    def answer(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        mode, path, method = self.mode, handler.path.split("?")[0], handler.command
        is_db = method == "GET" and path.count("/") == 1 and not path.startswith("/_")
        if mode == "silent":
            self.stopping.wait(600)
            return
        if self.couchdb and method == "GET" and path == "/":
            return _send_json(handler, 200, COUCHDB_WELCOME)
        if self.couchdb and is_db:
            return _send_json(handler, 200, {"db_name": path[1:], "props": {}})
        if mode == "html-404":
            return _send(handler, 404, PAGE, "text/html")
        if mode == "session-refused":
            if path == "/_session":
                body = {"error": "unauthorized", "reason": "Name or password is incorrect."}
                return _send_json(handler, 401, body)
            return _send_json(handler, 200, {"db_name": "x", "props": {}})
        if mode == "error-200":
            return _send_json(handler, 200, {"error": "internal", "reason": "went wrong"})
        if mode == "echo":
            if path == "/_session":
                handler.send_response(200)
                handler.send_header("Set-Cookie", f"AuthSession={self.cookie}; Path=/; HttpOnly")
                handler.send_header("Content-Type", JSON_TYPE)
                handler.send_header("Content-Length", "11")
                handler.end_headers()
                handler.wfile.write(b'{"ok":true}')
                return None
            said = (
                f"{method} {handler.path} authorization={handler.headers.get('Authorization')} "
                f"cookie={handler.headers.get('Cookie')}"
            )
            if self.couchdb:
                said += f" body={body.decode('utf-8', 'replace')}"
            return _send_json(handler, 403, {"error": "forbidden", "reason": said})
        if is_db:
            return _send_json(handler, 200, {"db_name": path[1:], "props": {}})
        if mode == "html":
            return _send(handler, 200, PAGE, "text/html")
        if mode == "text":
            return _send(handler, 200, TEXT, "text/plain; charset=utf-8")
        if mode == "truncated":
            return _send(handler, 200, TRUNCATED, JSON_TYPE)
        if mode == "close-mid-body":
            handler.send_response(200)
            handler.send_header("Content-Type", JSON_TYPE)
            handler.send_header("Content-Length", "1000")
            handler.end_headers()
            handler.wfile.write(b'{"rows":[')
            handler.wfile.flush()
            time.sleep(0.05)
            handler.close_connection = True
            return None
        if mode == "wrong-types":
            if path.endswith("/_all_docs"):
                return _send_json(handler, 200, {"rows": {"id": "a"}})
            if path.endswith("/_bulk_docs"):
                return _send_json(handler, 201, {"ok": True})
            if method == "PUT":
                return _send_json(handler, 201, {"ok": True, "id": path, "rev": 12})
            return _send_json(handler, 200, [1, 2, 3])
        if mode == "null-docs":
            if path.endswith("/_all_docs"):
                row = {"id": "001xUban2Ohyyo1gWAZC3AhOxN1sNQeO", "value": {"rev": "1-a"}}
                return _send_json(handler, 200, {"rows": [{**row, "doc": None}]})
            # Writes succeed: only reads meet the null documents.
            if path.endswith("/_bulk_docs"):
                docs = json.loads(body)["docs"]
                return _send_json(handler, 201, [{"id": d["_id"], "rev": "1-a"} for d in docs])
            if method == "PUT":
                return _send_json(handler, 201, {"ok": True, "id": path, "rev": "1-a"})
            return _send_json(handler, 200, {"rows": []})
        raise AssertionError(mode)


JSON_TYPE: Final = "application/json"
#: The answer of mode ``truncated``.
TRUNCATED: Final = b'{"rows":[{"id":"a","key":"a","value":{"re'
#: The answer of a :class:`TokenService` that cuts its token short.
CUT_SHORT_TOKEN: Final = b'{"access_token":"ey'
#: The answer of mode ``text``.
TEXT: Final = b"upstream busy\n"
#: ``GET /`` of Apache CouchDB (``couchdb=True``).
COUCHDB_WELCOME: Final = {
    "couchdb": "Welcome",
    "version": "3.4.3",
    "vendor": {"name": "The Apache Software Foundation"},
}


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _send_json(handler: BaseHTTPRequestHandler, status: int, body: object) -> None:
    _send(handler, status, json.dumps(body).encode(), JSON_TYPE)


class TokenService:
    """A loopback IAM token service: ``POST /identity/token`` answers a token good for
    ``lifetime`` seconds (an unsigned JWT, which ibmcloudant reads without checking), unless
    :attr:`silent`; then the request is accepted and never answered; with :attr:`cut_short`, it
    is answered with a token's JSON cut short. :attr:`requests` counts
    the token requests that arrived, :attr:`tokens` holds the tokens given.

        with TokenService() as iam:
            client = CloudantV1(authenticator=IAMAuthenticator(apikey, url=iam.url))
    """

    def __init__(
        self, *, silent: bool = False, lifetime: int = 3600, cut_short: bool = False
    ) -> None:
        self.silent, self.lifetime, self.requests = silent, lifetime, 0
        self.cut_short = cut_short
        self.tokens: list[str] = []
        self.stopping = threading.Event()
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                service.requests += 1
                if service.silent:
                    service.stopping.wait(600)
                    self.close_connection = True  # the waiting client learns it at once
                    return
                if self.path.split("?")[0] != "/identity/token":
                    return _send_json(self, 404, {"errorMessage": "not a token request"})
                if service.cut_short:
                    return _send(self, 200, CUT_SHORT_TOKEN, JSON_TYPE)
                now = int(time.time())
                token = _jwt({"iat": now, "exp": now + service.lifetime, "n": service.requests})
                service.tokens.append(token)
                answer = {"access_token": token, "token_type": "Bearer", "expires_in": 3600}
                _send_json(self, 200, {**answer, "refresh_token": "not-used"})

        self.httpd = _Server(Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(POLL,), daemon=True)

    def __enter__(self) -> TokenService:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stopping.set()
        self.httpd.stop(failing=kind is not None)


def _jwt(claims: dict[str, int]) -> str:
    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def trust_one_certificate(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """Until ``monkeypatch`` undoes it, every client made loads a trust store of one certificate
    (certifi's first, written into ``directory``) instead of certifi's 117.

    The clients of these servers speak plain HTTP on loopback and never use it, but ibmcloudant
    (each ``CloudantV1``) and httpx (each ``AsyncClient``) parse it for every client they make,
    40 ms each: most of the time of tests that make a client or two for every case. Not for a
    client of a server that may speak HTTPS (``COUCHIDS_TEST_URL``).
    """
    bundle = directory / "one-certificate.pem"
    if not bundle.exists():
        end = "-----END CERTIFICATE-----"
        text = certifi.contents()
        first = text[text.index("-----BEGIN CERTIFICATE-----") : text.index(end) + len(end)]
        bundle.write_text(first + "\n")
    # httpx asks certifi.where(); ibmcloudant's adapter asks requests.certs.where().
    monkeypatch.setattr(certifi, "where", lambda: str(bundle))
    monkeypatch.setattr(requests.certs, "where", lambda: str(bundle))
