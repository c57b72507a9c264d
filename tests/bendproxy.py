"""A loopback HTTP proxy that bends ``_all_docs`` answers and the other listings a server
gives, for testing that couchids never trusts a server's rows.

In front of a real server (a local test server), the proxy forwards every request, and
bends the listings it is told to (``reads``), by default the range reads of the primary index
(``GET`` with query parameters or ``POST`` with a JSON body, on ``/{db}/_all_docs`` and
``/{db}/_partition/{p}/_all_docs``), in one mode:

- ``"honest"``: not at all (the reads are counted, as in every mode: a control);
- ``"reverse"``: the rows of each page in the opposite order;
- ``"shuffle"``: the rows of each page shuffled (a random source with a fixed seed);
- ``"duplicate"``: every row of each page twice, one after the other;
- ``"ignore-start"``/``"ignore-end"``/``"ignore-limit"``: the request is forwarded without
  its ``start_key``/``startkey`` (and ``startkey_docid``; for ``_changes``, ``since``),
  ``end_key``/``endkey`` (and ``endkey_docid``) or ``limit``: a server that reads from the
  start of the index, to its end, or all of it;
- ``"drip"``: the answer's head goes out at once with an honest ``Content-Length``, then its
  body a byte at a time, every 20 to 50 ms;
- ``"reset-last-seq"``: a ``_changes`` answer's ``last_seq`` is ``0``, whatever it listed: a
  feed that sends its reader back to the start (other listings pass as in ``"honest"``).

The other listings it can bend (``reads``), whose entries the modes bend as they bend rows:

- ``"_all_dbs"``: ``GET /_all_dbs`` (its list of names);
- ``"_changes"``: ``GET`` or ``POST /{db}/_changes`` (its ``results``);
- ``"_scheduler/docs"``: ``GET /_scheduler/docs[/{db}]`` (its ``docs``). A read of one
  document's entry (``/_scheduler/docs/{db}/{id}``) is answered, in the modes that bend
  rows, with the listing of ``{db}`` bent: what a server (or a cache) that ignores the id in
  the path would answer.

Everything else passes through untouched: creating databases, ``GET /{db}``, ``_bulk_docs``,
the listings not in ``reads``, and lookups of ``_all_docs`` by ``keys``, which are no range.
It is a
:class:`~faultproxy.FaultProxy` otherwise: its log, and the failures it can be told to make of
the requests it does not bend.

A client that loops (asks again and again for the same rows) would keep a test busy for
ever, so a proxy given a ``budget`` bends at most that many reads; the next one sets
:attr:`BendProxy.runaway` and :meth:`BendProxy.cut` is called: from then on every connection
is closed without an answer, dripping ones too, so a client still running ends.

    with BendProxy(couch_url, "reverse") as proxy:
        client = client_for(proxy.url)  # and aio.AsyncClient(client) for couchids.aio
"""

from __future__ import annotations

import contextlib
import gzip
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, Final, Literal
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from faultproxy import FaultProxy

Mode = Literal[
    "honest",
    "reverse",
    "shuffle",
    "duplicate",
    "ignore-start",
    "ignore-end",
    "ignore-limit",
    "drip",
    "reset-last-seq",
]
MODES: Final[tuple[Mode, ...]] = (
    "honest",
    "reverse",
    "shuffle",
    "duplicate",
    "ignore-start",
    "ignore-end",
    "ignore-limit",
    "drip",
    "reset-last-seq",
)
#: The listings a proxy can bend (see the module docstring).
Read = Literal["_all_docs", "_all_dbs", "_changes", "_scheduler/docs"]
READS: Final[tuple[Read, ...]] = ("_all_docs", "_all_dbs", "_changes", "_scheduler/docs")
#: The modes that bend the rows of an answer.
_ROW_MODES: Final = frozenset({"reverse", "shuffle", "duplicate"})
#: The options each ``ignore-`` mode leaves out of a request, in both spellings CouchDB takes.
_IGNORED: Final[dict[str, frozenset[str]]] = {
    "ignore-start": frozenset(
        {"start_key", "startkey", "start_key_doc_id", "startkey_docid", "since"}
    ),
    "ignore-end": frozenset({"end_key", "endkey", "end_key_doc_id", "endkey_docid"}),
    "ignore-limit": frozenset({"limit"}),
}
#: The shortest and longest wait between two bytes of a dripped answer, in seconds.
DRIP_DELAY: Final = (0.02, 0.05)


class BendProxy(FaultProxy):
    """A threaded proxy on a free port of 127.0.0.1 in front of ``upstream`` (an http URL)
    that bends the listings of ``reads`` (by default the ``_all_docs`` range reads) in
    ``mode`` (see the module docstring).

    ``seed`` fixes the shuffles; ``budget`` is the most reads it bends before it takes the
    client for a loop (``None``: no limit).
    """

    def __init__(
        self,
        upstream: str,
        mode: Mode,
        *,
        reads: tuple[Read, ...] = ("_all_docs",),
        seed: int = 20240301,
        budget: int | None = None,
        drip_delay: tuple[float, float] = DRIP_DELAY,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode={mode!r}: one of {MODES}")
        unknown = set(reads) - set(READS)
        if unknown:
            raise ValueError(f"reads={reads!r}: each one of {READS}")
        self.mode = mode
        self.reads = frozenset(reads)
        self.budget = budget
        self.drip_delay = drip_delay
        #: The range reads bent so far.
        self.bent = 0
        #: Whether the client asked for more reads than the budget.
        self.runaway = False
        self._random = random.Random(seed)
        self._cut = threading.Event()
        super().__init__(upstream)
        # Stopped within 50 ms rather than the server's default half second: a test makes
        # hundreds of these.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> BendProxy:
        super().__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cut()  # ends the answers still dripping, so that the server's threads end
        super().__exit__(exc_type, exc, tb)

    @property
    def is_cut(self) -> bool:
        """Whether :meth:`cut` was called."""
        return self._cut.is_set()

    def cut(self) -> None:
        """From now on close every connection without an answer, and stop every answer being
        dripped: a client still at work gets errors and ends."""
        self._cut.set()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _bending(self, super()._handler_class())

    def _count_read(self) -> bool:
        """Counts a range read about to be bent; whether it is within the budget (else the
        proxy is cut)."""
        with self._lock:
            self.bent += 1
            over = self.budget is not None and self.bent > self.budget
            if over:
                self.runaway = True
        if over:
            self.cut()
        return not over

    def _bent_rows(self, rows: list[Any]) -> list[Any]:
        if self.mode == "reverse":
            return rows[::-1]
        if self.mode == "shuffle":
            shuffled = list(rows)
            with self._lock:
                self._random.shuffle(shuffled)
            return shuffled
        if self.mode == "duplicate":
            return [row for row in rows for _ in range(2)]
        return rows

    def _drip_pause(self) -> float:
        with self._lock:
            return self._random.uniform(*self.drip_delay)


def _bending(proxy: BendProxy, base: type[Any]) -> type[BaseHTTPRequestHandler]:
    class Handler(base):  # type: ignore[misc, valid-type]
        def handle(self) -> None:
            # A client that went away (a request it timed out or cancelled) needs no answer.
            with contextlib.suppress(ConnectionError):
                super().handle()

        def _handle(self, body: bytes) -> None:
            if proxy.is_cut:
                self._hang_up()
                return
            plain = body
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                plain = gzip.decompress(body)
            read = _listing(self.command, self.path, plain)
            if read not in proxy.reads:
                super()._handle(body)
                return
            if not proxy._count_read():
                self._hang_up()
                return
            proxy._record(self.command, self.path, proxy.mode)
            if read == "_scheduler/docs" and proxy.mode in _ROW_MODES:
                self.path = _scheduler_listing(self.path)
            if proxy.mode in _IGNORED:
                body = self._without(_IGNORED[proxy.mode], plain)
            elif body is not plain:
                body = self._as_plain(plain)
            # The answer is read as it is, so that it can be bent.
            del self.headers["Accept-Encoding"]
            self.headers["Accept-Encoding"] = "identity"
            status, headers, answer = self._forward(body)
            if proxy.mode == "drip":
                self._drip(status, headers, answer)
                return
            self._answer(status, headers, _bent_answer(proxy, status, answer))

        def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            try:
                super()._answer(status, headers, body)
            except OSError:
                # The client stopped reading (it found the answer wanting and closed).
                self.close_connection = True

        def _hang_up(self) -> None:
            proxy._record(self.command, self.path, "cut")
            self.close_connection = True

        def _as_plain(self, plain: bytes) -> bytes:
            del self.headers["Content-Encoding"]
            return plain

        def _without(self, names: frozenset[str], plain: bytes) -> bytes:
            """The request's body (and path) without the options ``names``."""
            parts = urlsplit(self.path)
            if parts.query:
                pairs = parse_qsl(parts.query, keep_blank_values=True)
                query = urlencode([(k, v) for k, v in pairs if k not in names], quote_via=quote)
                self.path = parts.path + (f"?{query}" if query else "")
            if self.command != "POST" or not plain:
                return self._as_plain(plain)
            try:
                options = json.loads(plain)
            except ValueError:
                return self._as_plain(plain)  # the server answers that as it will
            if isinstance(options, dict):
                plain = json.dumps({k: v for k, v in options.items() if k not in names}).encode()
            return self._as_plain(plain)

        def _drip(self, status: int, headers: list[tuple[str, str]], answer: bytes) -> None:
            """Sends the head with the answer's length, then the answer a byte at a time,
            until it is sent, the client has gone or the proxy is cut."""
            # faultproxy's head with the body's length, without the body: as for a HEAD.
            command, self.command = self.command, "HEAD"
            try:
                self._answer(status, headers, answer)
            finally:
                self.command = command
            try:
                for byte in answer:
                    if proxy.is_cut:
                        break
                    self.wfile.write(bytes((byte,)))
                    time.sleep(proxy._drip_pause())
                else:
                    return
            except OSError:
                pass  # the client gave up and closed the connection
            self.close_connection = True

    return Handler


def _listing(method: str, path: str, body: bytes) -> Read | None:
    """The listing a request reads (see :data:`READS`), or ``None``."""
    if method not in ("GET", "POST"):
        return None
    segments = urlsplit(path).path.strip("/").split("/")
    if method == "GET" and segments == ["_all_dbs"]:
        return "_all_dbs"
    if len(segments) == 2 and segments[1] == "_changes":
        return "_changes"
    if method == "GET" and segments[:2] == ["_scheduler", "docs"]:
        return "_scheduler/docs"
    return "_all_docs" if _is_range_read(method, path, body) else None


def _scheduler_listing(path: str) -> str:
    """The path of the scheduler's listing of the database whose entry ``path`` reads (the
    path itself when it reads a listing)."""
    segments = urlsplit(path).path.strip("/").split("/")
    return "/" + "/".join(segments[:3])


def _is_range_read(method: str, path: str, body: bytes) -> bool:
    """Whether a request reads a key range of ``_all_docs`` (not a lookup by ``keys``)."""
    parts = urlsplit(path)
    segments = parts.path.strip("/").split("/")
    all_docs = (len(segments) == 2 and segments[1] == "_all_docs") or (
        len(segments) == 4 and segments[1] == "_partition" and segments[3] == "_all_docs"
    )
    if not all_docs or method not in ("GET", "POST"):
        return False
    if any(name == "keys" for name, _ in parse_qsl(parts.query)):
        return False
    if method == "POST" and body:
        try:
            options = json.loads(body)
        except ValueError:
            return True  # the server answers that as it will
        return not (isinstance(options, dict) and "keys" in options)
    return True


def _bent_answer(proxy: BendProxy, status: int, answer: bytes) -> bytes:
    """``answer`` with its entries bent: the rows of an ``_all_docs`` answer, the results of
    ``_changes``, the documents of ``_scheduler/docs``, the names of ``_all_dbs``."""
    if status != 200 or proxy.mode == "honest" or proxy.mode in _IGNORED:
        return answer
    try:
        parsed = json.loads(answer)
    except ValueError:
        return answer
    if isinstance(parsed, list):
        parsed = proxy._bent_rows(parsed)
    elif isinstance(parsed, dict):
        field = next((f for f in ("rows", "results", "docs") if f in parsed), None)
        if field is None or not isinstance(parsed[field], list):
            return answer
        parsed[field] = proxy._bent_rows(parsed[field])
        if proxy.mode == "reset-last-seq" and "last_seq" in parsed:
            parsed["last_seq"] = 0
    else:
        return answer
    return json.dumps(parsed, ensure_ascii=False, separators=(",", ":")).encode()
