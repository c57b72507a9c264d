"""A loopback HTTP proxy that loses answers on purpose, for testing retries against a real server.

The proxy forwards every request to the upstream server (a local test server). Told to,
it makes the next N matching requests fail in one of these ways:

- ``"503-after"``: forward the request (the server carries it out), then answer 503;
- ``"drop-after"``: forward the request, then close the connection without answering;
- ``"503-before"``/``"drop-before"``: the same without forwarding (the request is lost).

The ``-after`` modes are the hard case for a writer: the write happened, the answer did not
arrive. Two more play a cluster on a single server: ``"202-after"`` forwards and turns the
server's 201 into ``202 Accepted`` (a write fewer copies than a quorum took), ``"409-after"``
forwards and answers ``409 Conflict`` (the majority refused the write, but a copy that lagged
behind took it), and ``"404-before"`` answers 404 without forwarding (a read that reached a
copy the write has not reached yet). ``"html-404-before"`` answers a proxy's own HTML 404 page
without forwarding (a route the proxy lacks: no word from CouchDB), and ``"shape-after"``
forwards and answers with the server's status and JSON of no shape a request is answered in (a
string). ``"unrevised-after"`` forwards and answers the server's listing with no revision in
its rows (each row's ``value`` without ``rev``, its ``doc`` without ``_rev``). Every request
and what the proxy did with it is kept in :attr:`FaultProxy.log`.

Two play a server that stops answering: ``"hang"`` holds the request without forwarding it and
never answers (the connection closes when the proxy stops), and ``"slow"`` holds it for the
``seconds`` given, then forwards it and answers (a server taking that long to answer).
``"429-before"`` answers ``429 too_many_requests`` without forwarding, with the
``Retry-After`` given to :meth:`FaultProxy.fail`, if any (a rate limit saying when to come back).

Told to (:meth:`FaultProxy.meanwhile`), it also calls a function before forwarding matching
requests: another client's write landing between two requests of the one under test, every
time, with no reliance on timing.

    with FaultProxy(couch_url) as proxy:
        proxy.fail("503-after", method="PUT", times=1)
        client.set_service_url(proxy.url)
"""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

Mode = Literal[
    "503-after",
    "drop-after",
    "503-before",
    "drop-before",
    "202-after",
    "409-after",
    "404-before",
    "html-404-before",
    "shape-after",
    "unrevised-after",
    "hang",
    "slow",
    "429-before",
]
MODES: tuple[Mode, ...] = (
    "503-after",
    "drop-after",
    "503-before",
    "drop-before",
    "202-after",
    "409-after",
    "404-before",
    "html-404-before",
    "shape-after",
    "unrevised-after",
    "hang",
    "slow",
    "429-before",
)
_CONFLICT = b'{"error":"conflict","reason":"Document update conflict. (the test proxy)"}'

# Headers that belong to one connection, not to the message (RFC 9110 section 7.6.1); the
# proxy sets its own framing.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "host",
    }
)
#: The answer of ``"shape-after"``: JSON, but of no shape any request is answered in.
_SHAPE = b'"bent by the test proxy"'


def _unrevised(answer: bytes) -> bytes:
    """A listing's JSON ``answer`` (gzipped or not) with no revision in its rows."""
    if answer[:2] == b"\x1f\x8b":
        answer = gzip.decompress(answer)
    listing = json.loads(answer)
    for row in listing.get("rows", []):
        if isinstance(row.get("value"), dict):
            row["value"].pop("rev", None)
        if isinstance(row.get("doc"), dict):
            row["doc"].pop("_rev", None)
    return json.dumps(listing).encode()


_NOT_FOUND = b'{"error":"not_found","reason":"missing (the test proxy)"}'
_PROXY_404 = b"<html><head><title>404 Not Found</title></head><body>nginx</body></html>"
_UNAVAILABLE = b'{"error":"service_unavailable","reason":"answer lost by the test proxy"}'
_TOO_MANY = b'{"error":"too_many_requests","reason":"rate limited by the test proxy"}'
#: How long :meth:`FaultProxy.hold_for_company` holds a request for its crowd: a margin a loaded
#: machine cannot miss, paid in full only by a client that never sends that many at once.
CROWD_WAIT = 10.0


@dataclass
class _Rule:
    mode: Mode
    method: str
    path: re.Pattern[str] | None
    remaining: int
    #: Matching requests still to let through before failing.
    skip: int
    #: Text the request's body must hold, if any.
    containing: bytes | None = None
    #: How long a ``"slow"`` request is held before it is forwarded.
    seconds: float = 0.0
    #: The ``Retry-After`` of a ``"429-before"`` answer.
    retry_after: str | None = None

    def matches(self, method: str, path: str, body: bytes) -> bool:
        return (
            self.remaining > 0
            and method == self.method
            and (self.path is None or self.path.search(path) is not None)
            and (self.containing is None or self.containing in body)
        )


@dataclass(frozen=True)
class Entry:
    """One request the proxy saw: its method, path and what happened (``"forwarded"`` or a mode)."""

    method: str
    path: str
    outcome: str


class FaultProxy:
    """A threaded proxy on a free port of 127.0.0.1 in front of ``upstream`` (an http URL).

    With ``every_copy=True`` each document write (``PUT``/``DELETE`` of a document,
    ``_bulk_docs``) is sent with ``w=3``, so a 3-node cluster answers only once every copy has
    it: a read that follows, whichever copy answers it, sees the write.
    """

    def __init__(self, upstream: str, *, every_copy: bool = False) -> None:
        self.every_copy = every_copy
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError(f"the test proxy forwards to loopback http only, not {upstream!r}")
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port or 80
        # The upstream's credentials (a CouchDB's admin) go on every forwarded request, so a
        # client of the proxy needs none.
        self.upstream_auth = (
            "Basic " + base64.b64encode(f"{parts.username}:{parts.password}".encode()).decode()
            if parts.username is not None
            else None
        )
        self.log: list[Entry] = []
        #: The most requests the proxy has had in hand at once (of those whose path matches
        #: :meth:`hold_for_company`'s, once it is called).
        self.most_in_flight = 0
        self._in_flight = 0
        self._company: re.Pattern[str] | None = None
        self._company_wait = 0.0
        self._crowd = 2
        self._rules: list[_Rule] = []
        self._meanwhile: list[tuple[_Rule, Callable[[], None]]] = []
        #: Set when the proxy stops: the requests it holds are let go of.
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._acting = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        """The class that handles each request: a subclass of the proxy may extend it."""
        return _handler_for(self)

    @property
    def url(self) -> str:
        """The proxy's base URL, e.g. ``http://127.0.0.1:50123``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def fail(
        self,
        mode: Mode,
        *,
        method: str,
        path: str | None = None,
        times: int = 1,
        after: int = 0,
        containing: str | None = None,
        seconds: float = 0.0,
        retry_after: str | None = None,
    ) -> None:
        """Make ``times`` requests with ``method`` (and a path matching the regex ``path``, and
        a body holding the text ``containing``, if given) fail in ``mode``, after letting the
        next ``after`` such requests through. ``containing`` picks one of requests sent
        concurrently, such as one batch of a bulk write, whatever their order of arrival.
        ``seconds`` is how long a ``"slow"`` request is held, ``retry_after`` the header of a
        ``"429-before"`` answer."""
        if mode not in MODES:
            raise ValueError(f"mode={mode!r}: one of {MODES}")
        pattern = re.compile(path) if path is not None else None
        wanted = containing.encode() if containing is not None else None
        with self._lock:
            rule = _Rule(mode, method.upper(), pattern, times, after, wanted, seconds, retry_after)
            self._rules.append(rule)

    def meanwhile(
        self,
        action: Callable[[], None],
        *,
        method: str,
        path: str | None = None,
        times: int = 1_000_000,
        after: int = 0,
        containing: str | None = None,
    ) -> None:
        """Call ``action()`` before forwarding each of ``times`` requests with ``method`` (and
        a path matching the regex ``path``, and a body holding the text ``containing``, if
        given), after letting the next ``after`` such requests through; one at a time: what
        another client does between them."""
        pattern = re.compile(path) if path is not None else None
        wanted = containing.encode() if containing is not None else None
        rule = _Rule("slow", method.upper(), pattern, times, after, wanted)  # its mode unused
        with self._lock:
            self._meanwhile.append((rule, action))

    def hold_for_company(self, path: str, *, seconds: float, crowd: int = 2) -> None:
        """From now on, hold each request whose path matches the regex ``path`` until another
        such request is in hand too, or ``seconds`` have passed; then go on with it. Shows
        whether a client sends such requests concurrently (see :attr:`most_in_flight`, which
        from now on counts only these).

        With a ``crowd`` over 2, the requests are first held until that many were in hand at
        once (up to :data:`CROWD_WAIT` seconds each): a client that sends that many together
        shows it however slowly a loaded machine lets it send them."""
        with self._lock:
            self._company, self._company_wait, self._crowd = re.compile(path), seconds, crowd

    def pending(self) -> int:
        """How many planned failures have not happened yet."""
        with self._lock:
            return sum(rule.remaining for rule in self._rules)

    def requests(self, method: str, path: str | None = None) -> list[Entry]:
        """The logged requests with ``method`` (and ``path`` matching the regex, if given)."""
        with self._lock:
            return [
                entry
                for entry in self.log
                if entry.method == method and (path is None or re.search(path, entry.path))
            ]

    def _decide(self, method: str, path: str, body: bytes) -> _Rule | None:
        """The rule to fail a request by; ``None``: forward it."""
        with self._lock:
            for rule in self._rules:
                if rule.matches(method, path, body):
                    if rule.skip > 0:
                        rule.skip -= 1
                        return None
                    rule.remaining -= 1
                    return rule
            return None

    def _act(self, method: str, path: str, body: bytes) -> None:
        """Calls the :meth:`meanwhile` actions the request matches, one request at a time."""
        with self._acting:
            for rule, action in self._meanwhile:
                if not rule.matches(method, path, body):
                    continue
                if rule.skip > 0:
                    rule.skip -= 1
                else:
                    rule.remaining -= 1
                    action()

    def _enter(self, path: str) -> bool:
        """Counts a request in hand (one of those :meth:`hold_for_company` is about, once it
        is called), holding it as that asks; whether it was counted."""
        with self._arrived:
            if self._company is not None and not self._company.search(path):
                return False
            self._in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self._in_flight)
            self._arrived.notify_all()
            if self._company is not None:
                if self._crowd > 2:
                    self._arrived.wait_for(lambda: self.most_in_flight >= self._crowd, CROWD_WAIT)
                self._arrived.wait_for(lambda: self._in_flight > 1, self._company_wait)
            return True

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _record(self, method: str, path: str, outcome: str) -> None:
        with self._lock:
            self.log.append(Entry(method, path, outcome))


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Keep-alive, like the real server: the SDK reuses its connections.
        protocol_version = "HTTP/1.1"
        # An answer goes out as two writes (head, then body): with Nagle's algorithm the body
        # waits for the client's delayed ACK of the head, about 40 ms a request.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output clean; the proxy's own log records every request

        def do_GET(self) -> None:
            self._relay()

        do_PUT = do_POST = do_DELETE = do_HEAD = do_COPY = do_GET

        def _relay(self) -> None:
            body = self._read_body()
            self.in_hand = proxy._enter(self.path)
            try:
                self._handle(body)
            finally:
                self._let_go()

        def _let_go(self) -> None:
            """The request is no longer in hand: before its answer goes out, so that a client
            that sends its next request on receiving this answer is never counted as having
            two in flight."""
            if self.in_hand:
                self.in_hand = False
                proxy._leave()

        def _handle(self, body: bytes) -> None:
            plain = body
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                plain = gzip.decompress(body)
            proxy._act(self.command, self.path, plain)
            rule = proxy._decide(self.command, self.path, plain)
            mode, seconds = (None, 0.0) if rule is None else (rule.mode, rule.seconds)
            if mode == "hang":
                proxy._record(self.command, self.path, mode)
                proxy._stopping.wait()
                self.close_connection = True
                return
            if mode == "slow":
                # Recorded as the hold begins: a caller whose deadline ends during it met it.
                proxy._record(self.command, self.path, mode)
                if proxy._stopping.wait(seconds):
                    self.close_connection = True
                    return
            if mode is None or mode == "slow" or mode.endswith("-after"):
                status, headers, answer = self._forward(body)
            if mode is None or mode == "slow":
                if mode is None:
                    proxy._record(self.command, self.path, "forwarded")
                self._answer(status, headers, answer)
                return
            proxy._record(self.command, self.path, mode)
            if mode == "202-after":
                self._answer(202 if status == 201 else status, headers, answer)
                return
            if mode == "shape-after":
                self._answer(status, [("Content-Type", "application/json")], _SHAPE)
                return
            if mode == "unrevised-after":
                self._answer(status, [("Content-Type", "application/json")], _unrevised(answer))
                return
            if mode == "409-after":
                self._answer(409, [("Content-Type", "application/json")], _CONFLICT)
                return
            if mode == "404-before":
                self._answer(404, [("Content-Type", "application/json")], _NOT_FOUND)
                return
            if mode == "html-404-before":
                self._answer(404, [("Content-Type", "text/html")], _PROXY_404)
                return
            if mode == "429-before":
                after = [] if rule is None or rule.retry_after is None else [rule.retry_after]
                headers = [
                    ("Content-Type", "application/json"),
                    *(("Retry-After", a) for a in after),
                ]
                self._answer(429, headers, _TOO_MANY)
                return
            if mode.startswith("drop"):
                # No status line at all: the client sees the connection close under it.
                self.close_connection = True
                return
            self._answer(503, [("Content-Type", "application/json")], _UNAVAILABLE)

        def _read_body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                # The SDK streams gzip-compressed bodies in chunks (RFC 9112 section 7.1).
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailer fields
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            headers["Content-Length"] = str(len(body))
            if proxy.upstream_auth is not None:
                headers["Authorization"] = proxy.upstream_auth
            # A new upstream connection per request: a kept-alive one that the server closed
            # while idle would need a resend, and a resent write could be carried out twice.
            upstream = http.client.HTTPConnection(
                proxy.upstream_host, proxy.upstream_port, timeout=120
            )
            try:
                upstream.request(self.command, self._upstream_path(), body=body, headers=headers)
                response = upstream.getresponse()
                return response.status, response.getheaders(), response.read()
            finally:
                upstream.close()

        def _upstream_path(self) -> str:
            if not proxy.every_copy or not _is_document_write(self.command, self.path):
                return self.path
            return self.path + ("&" if "?" in self.path else "?") + "w=3"

        def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            self._let_go()
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in _HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    return Handler


def _is_document_write(method: str, path: str) -> bool:
    segments = urlsplit(path).path.strip("/").split("/")
    if method in ("PUT", "DELETE"):
        return len(segments) >= 2  # not a whole database
    return method == "POST" and (len(segments) == 1 or segments[-1] == "_bulk_docs")


def client_for(url: str) -> CloudantV1:
    """An ibmcloudant client for ``url`` (the proxy's or a server's), without an authenticator:
    credentials in the URL (``http://admin:pass@...``) are sent by requests itself."""
    service = CloudantV1(authenticator=NoAuthAuthenticator())
    service.set_service_url(url)
    # Loopback only: never send test traffic through a proxy named in the environment.
    service.set_http_config({"proxies": {"http": None, "https": None}})
    return service


def update_count(client: CloudantV1, db: str) -> int:
    """How many updates ``db`` has seen: equal before and after means nothing was written.

    On a cluster ``update_seq`` is a string whose opaque tail depends on which copies answered;
    its leading number is the sum of the shards' update counts."""
    seq = client.get_database_information(db=db).get_result()["update_seq"]
    return int(str(seq).split("-")[0])


def all_docs(client: CloudantV1, db: str) -> dict[str, dict[str, Any]]:
    """Every document of ``db`` (design documents included), by id, read straight from it."""
    rows = client.post_all_docs(db=db, include_docs=True).get_result()["rows"]
    return {row["id"]: row["doc"] for row in rows}
