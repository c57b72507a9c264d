"""A loopback server that keeps IBM Cloudant's documented rules, for testing couchids against
them without Cloudant: a proxy in front of the suite's CouchDB or PouchDB Server.

Every rule it keeps is one row of :data:`RULES`, with the IBM Cloudant page (or the source)
that states it; the proxy refuses a request exactly as that row says, and forwards every other
request to the real server behind it:

=================  ======  =====================================================================
row                status  when
=================  ======  =====================================================================
read               429     more reads than the plan's in any 1,000 ms
write              429     more writes than the plan's in any 1,000 ms
query              429     more global queries than the plan's in any 1,000 ms
request-body       413     a request body over ``max_request_bytes`` (64 MB)
document-size      413     a document over ``max_document_bytes`` (1 MB), alone or in a
                           ``_bulk_docs``: the whole request is refused, its reason the id
database-cap       403     ``PUT /{db}`` when ``max_databases`` databases exist
no-purge           501     ``POST /{db}/_purge``
partition-limit    400     a partition query with ``limit`` over 2000 (none given: 2000)
partition-timeout  500     a partition query the server took over 5 s to answer
iam-only           401     with ``iam_only``: basic credentials, ``_session``, or no token
login              401     with ``users``: a wrong or missing name or password
lockout            403     a user name after ``lockout_after`` failed logins, for a while
=================  ======  =====================================================================

Request classes (:func:`request_class`) follow IBM's lists: reads are documents by id and
every partition-scoped request; writes are document writes and ``_bulk_docs``; global queries
are ``_all_docs``, ``_bulk_get``, ``_find``, views, search and ``_changes`` outside a partition;
the rest (``GET /``, ``_all_dbs``, database info, creating and deleting databases, the
replicator) is not counted. Each request counts one unit of its class (Cloudant counts bulk
requests as several, by a formula it does not publish), and a refused request counts none;
``proxy.counted`` holds the units admitted, by class.
Each answer names its class in ``X-Cloudant-Request-Class``, as Cloudant's do.

The databases the cap counts are those made through the proxy and not deleted through it: a
fresh instance in front of a shared test server. Logins (``users=``, ``iam_only=``) are checked
by the proxy itself; the requests it forwards carry the upstream's own credentials (those in
its URL), as :class:`~faultproxy.FaultProxy`'s do. It serves IBM's token endpoint too
(``POST /identity/token``): ``IAMAuthenticator(APIKEY, url=proxy.url)`` gets a token from it.

    with CloudantProxy(couch_url, plan="lite", max_document_bytes=100_000) as proxy:
        client = client_for(proxy.url)

From a shell: ``python tests/cloudantproxy.py --upstream http://admin:pass@127.0.0.1:5984
--plan lite`` prints the proxy's URL and serves until interrupted.
"""

from __future__ import annotations

import argparse
import base64
import collections
import contextlib
import gzip
import json
import math
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, Final, Literal
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from faultproxy import FaultProxy

#: IBM Cloudant's pages the rules come from.
LIMITS: Final = "https://cloud.ibm.com/docs/Cloudant?topic=Cloudant-limits"
PLANS: Final = "https://cloud.ibm.com/docs/Cloudant?topic=Cloudant-ibm-cloud-public"
CAPACITY_FAQ: Final = (
    "https://cloud.ibm.com/docs/Cloudant?topic=Cloudant-faq-provisioned-throughput-capacity-model"
)
USAGE: Final = "https://cloud.ibm.com/docs/Cloudant?topic=Cloudant-usage-and-charges"
#: IBM's Cloudant blog lists the endpoints of each class by name (_bulk_get is a query there).
CLASSES_BLOG: Final = "https://blog.cloudant.com/2023/03/27/HTTP-429.html"
IAM_FAQ: Final = "https://cloud.ibm.com/docs/Cloudant?topic=Cloudant-faq-authenticating-cloudant"
#: CouchDB 3.4.3, whose answers Cloudant gives where IBM's pages name only the status.
COUCHDB_ERRORS: Final = "apache/couchdb 3.4.3 src/chttpd/src/chttpd.erl error_info/1"
COUCHDB_LIMIT: Final = "apache/couchdb 3.4.3 src/couch_mrview/src/couch_mrview_util.erl apply_limit"
COUCHDB_LOCKOUT: Final = "apache/couchdb 3.4.3 src/couch/src/couch_httpd_auth.erl LOCKOUT_MSG"

Class = Literal["read", "write", "query"]


@dataclass(frozen=True)
class Rule:
    """One rule Cloudant keeps: its name, the answer to a request that breaks it, the rule in
    words, and where it is documented."""

    name: str
    status: int
    error: str
    what: str
    source: str


#: Every rule the proxy keeps (see the module docstring).
RULES: Final[tuple[Rule, ...]] = (
    Rule(
        "read",
        429,
        "too_many_requests",
        "reads (a document by id; every request scoped to a partition) past the plan's "
        "reads per second in any 1,000 ms; the reason as Cloudant words it",
        f"{CAPACITY_FAQ}; {USAGE}; {CLASSES_BLOG}; reason: cloudant/nodejs-cloudant#184",
    ),
    Rule(
        "write",
        429,
        "too_many_requests",
        "writes (PUT/POST/DELETE/COPY of a document, POST /{db}, _bulk_docs) past the plan's "
        "writes per second in any 1,000 ms",
        f"{CAPACITY_FAQ}; {USAGE}; {CLASSES_BLOG}",
    ),
    Rule(
        "query",
        429,
        "too_many_requests",
        "global queries (_all_docs, _bulk_get, _find, views, search, _changes outside a "
        "partition) past the plan's queries per second in any 1,000 ms",
        f"{CAPACITY_FAQ}; {USAGE}; {CLASSES_BLOG}",
    ),
    Rule(
        "request-body",
        413,
        "too_large",
        "a request body over 64 MB (max_request_bytes), refused whole",
        f"{LIMITS} (Request payload); body: {COUCHDB_ERRORS}",
    ),
    Rule(
        "document-size",
        413,
        "document_too_large",
        "a JSON document over 1 MB (max_document_bytes), alone or among the documents of a "
        "_bulk_docs: the whole request is refused, nothing stored, the reason the document's id",
        f"{LIMITS} (Request payload); body: {COUCHDB_ERRORS}, raised by couch_doc "
        "from_json_obj_validate while the request is read",
    ),
    Rule(
        "database-cap",
        403,
        "forbidden",
        "PUT /{db} when the instance has max_databases databases (Lite 20, Standard 200)",
        f"{LIMITS} (Databases); {PLANS}",
    ),
    Rule(
        "no-purge",
        501,
        "not_implemented",
        "POST /{db}/_purge: Cloudant has no purge",
        f"{LIMITS} and the Cloudant API reference list no _purge; body: CouchDB's answer "
        "before clustered purge (apache/couchdb#1378)",
    ),
    Rule(
        "partition-limit",
        400,
        "query_parse_error",
        "a partition query (/{db}/_partition/{p}/...) with limit over 2000; without a limit "
        "it answers at most 2000 rows",
        f"{LIMITS} (Query); body: {COUCHDB_LIMIT}",
    ),
    Rule(
        "partition-timeout",
        500,
        "timeout",
        "a partition query that takes the server over 5 s",
        f"{LIMITS} (Request timeouts)",
    ),
    Rule(
        "iam-only",
        401,
        "unauthorized",
        "an instance that takes IAM only (iam_only=True): basic credentials, a _session "
        "login or a request without a bearer token are refused",
        IAM_FAQ,
    ),
    Rule(
        "login",
        401,
        "unauthorized",
        "with users= (legacy credentials): a wrong or missing name or password; each wrong "
        "one counts towards the lockout",
        f"{IAM_FAQ}; body: {COUCHDB_ERRORS}",
    ),
    Rule(
        "lockout",
        403,
        "forbidden",
        "a user name after lockout_after failed logins is refused, the right password too, "
        "for lockout_seconds",
        f"{PLANS} (legacy credentials); body: {COUCHDB_LOCKOUT}",
    ),
)
RULE: Final[Mapping[str, Rule]] = {rule.name: rule for rule in RULES}


@dataclass(frozen=True)
class Plan:
    """Requests per second of each class."""

    reads: int
    writes: int
    queries: int

    def of(self, kind: Class) -> int:
        return {"read": self.reads, "write": self.writes, "query": self.queries}[kind]


#: The plans by name (Plans and provisioning; Cloudant blog "HTTP 429" for a Standard block).
PLAN_NAMED: Final[Mapping[str, Plan]] = {
    "lite": Plan(20, 10, 5),
    "standard": Plan(100, 50, 5),
}
#: Cloudant's limits (Limits page), in the stricter (decimal) reading of "MB".
MAX_REQUEST_BYTES: Final = 64_000_000
MAX_DOCUMENT_BYTES: Final = 1_000_000
PARTITION_LIMIT: Final = 2000
PARTITION_TIMEOUT: Final = 5.0
#: The API key the proxy's token endpoint takes by default.
APIKEY: Final = "cloudantproxy-test-apikey"
#: The fields of a document that are not its body (CouchDB measures the body alone).
_SPECIAL: Final = frozenset(
    {"_id", "_rev", "_deleted", "_attachments", "_revisions", "_revs_info", "_conflicts"}
)
#: Classes of requests to a database's own sub-resources (``/{db}/_xxx``).
_DB_ENDPOINTS: Final[Mapping[str, Class]] = {
    "_all_docs": "query",
    "_bulk_get": "query",
    "_find": "query",
    "_changes": "query",
    "_design_docs": "query",
    "_bulk_docs": "write",
    "_revs_diff": "read",
    "_missing_revs": "read",
}


def request_class(method: str, segments: list[str]) -> Class | None:
    """The request class of a request to the path ``segments`` (unquoted), or ``None`` for a
    request Cloudant does not count."""
    if not segments or segments[0].startswith("_"):
        return None  # GET /, _all_dbs, _session, _replicate, _scheduler, ...
    if len(segments) == 1:
        return "write" if method == "POST" else None  # POST /{db} writes a document
    if segments[1] == "_partition":
        return "read"
    if segments[1] == "_design" and len(segments) >= 4 and segments[3].startswith("_"):
        return "query"  # views, search, show/list: indexes outside a partition
    if segments[1] in ("_design", "_local") or not segments[1].startswith("_"):
        return "read" if method in ("GET", "HEAD") else "write"
    return _DB_ENDPOINTS.get(segments[1])


@dataclass(frozen=True)
class Refusal:
    """An answer the proxy gives instead of forwarding: by the rule broken."""

    rule: Rule
    reason: str
    headers: tuple[tuple[str, str], ...] = ()

    def body(self) -> bytes:
        return json.dumps({"error": self.rule.error, "reason": self.reason}).encode()


class _Window:
    """A request class's sliding one-second window: the times of the requests it took."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.times: collections.deque[float] = collections.deque()

    def admit(self, now: float) -> bool:
        while self.times and now - self.times[0] >= 1.0:
            self.times.popleft()
        if len(self.times) >= self.limit:
            return False
        self.times.append(now)
        return True


class CloudantProxy(FaultProxy):
    """A proxy on a free port of 127.0.0.1 in front of ``upstream`` (an http URL) that keeps
    Cloudant's rules (:data:`RULES`).

    ``plan``: ``"lite"``, ``"standard"`` (one block), a :class:`Plan`, or ``None`` for no
    rate limit. ``max_request_bytes``, ``max_document_bytes`` and ``max_databases`` (``None``:
    no cap) can be set small for tests; ``partition_limit`` and ``partition_timeout`` too.
    ``iam_only``: only bearer tokens from the proxy's token endpoint (for ``apikey``) are
    taken. ``users``: legacy credentials (name to password) the proxy checks in basic
    authentication and ``_session`` logins; ``lockout_after`` failed logins of a name lock it
    out for ``lockout_seconds``. ``clock`` (seconds, monotonic) can be fixed for tests.
    ``retry_after``: a 429 carries ``Retry-After``, the whole seconds until its class's window
    has room again (IBM's pages document no such header; off by default).
    """

    def __init__(
        self,
        upstream: str,
        *,
        plan: str | Plan | None = "standard",
        max_request_bytes: int = MAX_REQUEST_BYTES,
        max_document_bytes: int = MAX_DOCUMENT_BYTES,
        max_databases: int | None = None,
        purge: bool = False,
        partition_limit: int = PARTITION_LIMIT,
        partition_timeout: float = PARTITION_TIMEOUT,
        iam_only: bool = False,
        apikey: str = APIKEY,
        users: Mapping[str, str] | None = None,
        lockout_after: int | None = None,
        lockout_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        retry_after: bool = False,
    ) -> None:
        if isinstance(plan, str):
            if plan not in PLAN_NAMED:
                raise ValueError(f"plan={plan!r}: one of {sorted(PLAN_NAMED)}, a Plan or None")
            plan = PLAN_NAMED[plan]
        self.plan = plan
        self.max_request_bytes = max_request_bytes
        self.max_document_bytes = max_document_bytes
        self.max_databases = max_databases
        self.purge = purge
        self.partition_limit = partition_limit
        self.partition_timeout = partition_timeout
        self.iam_only = iam_only
        self.apikey = apikey
        self.users = dict(users) if users is not None else None
        self.lockout_after = lockout_after
        self.lockout_seconds = lockout_seconds
        self.clock = clock
        self.retry_after = retry_after
        #: The databases made through the proxy and not deleted through it.
        self.databases: set[str] = set()
        #: The requests refused, by rule name.
        self.refused: collections.Counter[str] = collections.Counter()
        #: The requests admitted, by request class (one unit each, as the rate limits count).
        self.counted: collections.Counter[Class] = collections.Counter()
        #: The bearer tokens the token endpoint gave.
        self.tokens: set[str] = set()
        self._windows: dict[Class, _Window] = (
            {kind: _Window(plan.of(kind)) for kind in ("read", "write", "query")}
            if plan is not None
            else {}
        )
        self._failures: dict[str, list[float]] = {}
        self._locked: dict[str, float] = {}
        self._sessions: dict[str, str] = {}
        super().__init__(upstream)

    def __enter__(self) -> CloudantProxy:
        super().__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        super().__exit__(exc_type, exc, tb)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _keeping_rules(self, super()._handler_class())

    # -- the rules, in the order a request meets them --------------------------------------

    def admit(
        self, method: str, segments: list[str], query: str, headers: Any, body: bytes
    ) -> Refusal | None:
        """The refusal a request meets, or ``None``: it is forwarded."""
        with self._lock:
            return (
                self._login(method, segments, headers, body)
                or self._rate(method, segments)
                or self._sizes(method, segments, body)
                or self._purge(method, segments)
                or self._cap(method, segments)
                or self._partition(method, segments, query, body)
            )

    def _login(self, method: str, segments: list[str], headers: Any, body: bytes) -> Refusal | None:
        auth = headers.get("Authorization", "") or ""
        cookie = headers.get("Cookie", "") or ""
        is_session = segments == ["_session"]
        if self.iam_only:
            if auth.startswith("Bearer ") and auth[7:] in self.tokens and not is_session:
                return None
            what = (
                "_session logins are not accepted by this IAM-only instance"
                if is_session
                else "basic credentials are not accepted by this IAM-only instance"
                if auth.startswith("Basic ")
                else "a valid IAM bearer token is required"
            )
            return Refusal(RULE["iam-only"], what)
        if self.users is None:
            return None
        session = _cookie(cookie, "AuthSession")
        if session is not None and session in self._sessions and not is_session:
            return None
        name, password = None, None
        if is_session and method == "POST":
            name, password = _login_form(headers.get("Content-Type", ""), body)
        elif auth.startswith("Basic "):
            try:
                name, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            except ValueError:
                name, password = "", None
        if name is None:
            if is_session:
                return None  # GET /_session: who am I, answered by the server behind
            return Refusal(RULE["login"], "Name or password is incorrect.")
        now = self.clock()
        until = self._locked.get(name)
        if until is not None and now < until:
            return Refusal(
                RULE["lockout"],
                "Account is temporarily locked due to multiple authentication failures",
            )
        if self.users.get(name) == password:
            return None
        self._failures.setdefault(name, []).append(now)
        failures = [t for t in self._failures[name] if now - t < self.lockout_seconds]
        self._failures[name] = failures
        if self.lockout_after is not None and len(failures) >= self.lockout_after:
            self._locked[name] = now + self.lockout_seconds
            self._failures[name] = []
        return Refusal(RULE["login"], "Name or password is incorrect.")

    def _rate(self, method: str, segments: list[str]) -> Refusal | None:
        kind = request_class(method, segments)
        if kind is None or kind not in self._windows:
            return None
        window = self._windows[kind]
        now = self.clock()
        if window.admit(now):
            return None
        headers: tuple[tuple[str, str], ...] = ()
        if self.retry_after:
            room = window.times[len(window.times) - window.limit] + 1.0 - now
            headers = (("Retry-After", str(max(1, math.ceil(room)))),)
        return Refusal(
            RULE[kind],
            f"You've exceeded your current limit of {window.limit} requests per second for "
            f"{kind} class. Please try later.",
            headers,
        )

    def _sizes(self, method: str, segments: list[str], body: bytes) -> Refusal | None:
        if len(body) > self.max_request_bytes:
            return Refusal(RULE["request-body"], "the request entity is too large")
        if method not in ("PUT", "POST") or not body or not segments:
            return None
        if segments[0].startswith("_") or request_class(method, segments) != "write":
            return None
        try:
            parsed = json.loads(body)
        except ValueError:
            return None  # the server answers that
        docs: list[Any]
        if len(segments) == 2 and segments[1] == "_bulk_docs":
            found = parsed.get("docs") if isinstance(parsed, dict) else None
            docs = found if isinstance(found, list) else []
        else:
            docs = [parsed]
        for doc in docs:
            if isinstance(doc, dict) and document_bytes(doc) > self.max_document_bytes:
                doc_id = doc.get("_id")
                if doc_id is None and len(segments) >= 2 and segments[1] != "_bulk_docs":
                    doc_id = segments[-1]
                return Refusal(RULE["document-size"], str(doc_id or ""))
        return None

    def _purge(self, method: str, segments: list[str]) -> Refusal | None:
        if self.purge or len(segments) != 2 or segments[1] != "_purge":
            return None
        return Refusal(RULE["no-purge"], "this feature is not yet implemented")

    def _cap(self, method: str, segments: list[str]) -> Refusal | None:
        if method != "PUT" or len(segments) != 1 or segments[0].startswith("_"):
            return None
        if self.max_databases is None or segments[0] in self.databases:
            return None
        if len(self.databases) < self.max_databases:
            return None
        return Refusal(
            RULE["database-cap"],
            f"The maximum number of databases for this instance ({self.max_databases}) has "
            "been reached; delete a database or ask IBM Cloudant support for more",
        )

    def _partition(
        self, method: str, segments: list[str], query: str, body: bytes
    ) -> Refusal | None:
        if len(segments) < 4 or segments[1] != "_partition":
            return None
        limit = partition_limit_asked(query, body)
        if limit is not None and limit > self.partition_limit:
            return Refusal(
                RULE["partition-limit"],
                f"Limit is too large, must not exceed {self.partition_limit}",
            )
        return None

    # -- after the server answered ---------------------------------------------------------

    def answered(self, method: str, segments: list[str], status: int) -> None:
        """Keeps count of the databases made and deleted through the proxy."""
        if len(segments) != 1 or segments[0].startswith("_"):
            return
        with self._lock:
            if method == "PUT" and status in (201, 202):
                self.databases.add(segments[0])
            elif method == "DELETE" and status in (200, 202):
                self.databases.discard(segments[0])

    def token(self, form: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
        """The token endpoint's answer to a form (IBM IAM's ``POST /identity/token``)."""
        if form.get("apikey") != self.apikey:
            return 400, {
                "errorCode": "BXNIM0415E",
                "errorMessage": "Provided API key could not be found.",
            }
        now = int(time.time())
        token = _jwt({"iat": now, "exp": now + 3600, "n": secrets.token_hex(4)})
        with self._lock:
            self.tokens.add(token)
        return 200, {
            "access_token": token,
            "refresh_token": "not-used",
            "token_type": "Bearer",
            "expires_in": 3600,
            "expiration": now + 3600,
        }

    def session(self, name: str) -> str:
        """A new ``AuthSession`` cookie value for ``name``."""
        value = secrets.token_hex(16)
        with self._lock:
            self._sessions[value] = name
        return value


def document_bytes(doc: Mapping[str, Any]) -> int:
    """A document's size as CouchDB measures it: its body (without ``_id``, ``_rev`` and the
    other special fields) as compact UTF-8 JSON."""
    body = {k: v for k, v in doc.items() if k not in _SPECIAL}
    return len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())


def partition_limit_asked(query: str, body: bytes) -> int | None:
    """The ``limit`` a request asks for, in its query string or JSON body."""
    for name, value in parse_qsl(query):
        if name == "limit":
            try:
                return int(value)
            except ValueError:
                return None
    if body:
        try:
            parsed = json.loads(body)
        except ValueError:
            return None
        if isinstance(parsed, dict) and isinstance(parsed.get("limit"), int):
            return int(parsed["limit"])
    return None


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name and value:
            return value
    return None


def _login_form(content_type: str, body: bytes) -> tuple[str | None, str | None]:
    if "json" in content_type:
        try:
            parsed = json.loads(body)
        except ValueError:
            return "", None
        if isinstance(parsed, dict):
            return str(parsed.get("name", "")), str(parsed.get("password", ""))
        return "", None
    form = dict(parse_qsl(body.decode("utf-8", "replace")))
    return form.get("name", ""), form.get("password", "")


def _jwt(claims: dict[str, Any]) -> str:
    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def _keeping_rules(proxy: CloudantProxy, base: type[Any]) -> type[BaseHTTPRequestHandler]:
    class Handler(base):  # type: ignore[misc]
        def _handle(self, body: bytes) -> None:
            plain = body
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                plain = gzip.decompress(body)
            parts = urlsplit(self.path)
            trimmed = parts.path.strip("/")
            segments = [unquote(s) for s in trimmed.split("/")] if trimmed else []
            if self.command == "POST" and segments == ["identity", "token"]:
                status, reply = proxy.token(dict(parse_qsl(plain.decode("utf-8", "replace"))))
                proxy._record(self.command, parts.path, f"token {status}")
                self._json(status, json.dumps(reply).encode())
                return
            refusal = proxy.admit(self.command, segments, parts.query, self.headers, plain)
            kind = request_class(self.command, segments)
            if refusal is not None:
                with proxy._lock:
                    proxy.refused[refusal.rule.name] += 1
                proxy._record(self.command, self.path, refusal.rule.name)
                self._json(refusal.rule.status, refusal.body(), kind, [*refusal.headers])
                return
            if kind is not None:
                with proxy._lock:
                    proxy.counted[kind] += 1
            if segments == ["_session"] and self.command == "POST" and proxy.users is not None:
                name = _login_form(self.headers.get("Content-Type", ""), plain)[0] or ""
                proxy._record(self.command, self.path, "session")
                cookie = f"AuthSession={proxy.session(name)}; Version=1; Path=/; HttpOnly"
                answer = json.dumps({"ok": True, "name": name, "roles": []}).encode()
                self._json(200, answer, None, [("Set-Cookie", cookie)])
                return
            if proxy.iam_only or proxy.users is not None:
                # The proxy took the login; the server behind gets its own credentials only.
                del self.headers["Authorization"]
                del self.headers["Cookie"]
            partitioned = len(segments) >= 4 and segments[1] == "_partition"
            unlimited = partitioned and partition_limit_asked(parts.query, plain) is None
            if unlimited and (segments[-1] == "_all_docs" or "_view" in segments):
                # Without a limit a partition query answers at most partition_limit rows.
                body = self._limited(parts, plain)
            started = proxy.clock()
            status, headers, answer = self._forward(body)
            if partitioned and proxy.clock() - started > proxy.partition_timeout:
                refusal = Refusal(
                    RULE["partition-timeout"],
                    "The request could not be processed in a reasonable amount of time.",
                )
                with proxy._lock:
                    proxy.refused["partition-timeout"] += 1
                proxy._record(self.command, self.path, "partition-timeout")
                self._json(500, refusal.body(), kind)
                return
            proxy.answered(self.command, segments, status)
            proxy._record(self.command, self.path, "forwarded")
            if kind is not None:
                headers = [*headers, ("X-Cloudant-Request-Class", _CLASS_HEADER[kind])]
            self._answer(status, headers, answer)

        def _limited(self, parts: Any, plain: bytes) -> bytes:
            """The request with ``limit`` set to the partition limit; its body, plain."""
            if self.command == "POST" and plain:
                try:
                    options = json.loads(plain)
                except ValueError:
                    options = None
                if isinstance(options, dict):
                    options["limit"] = proxy.partition_limit
                    del self.headers["Content-Encoding"]
                    return json.dumps(options).encode()
            pairs = [*parse_qsl(parts.query, keep_blank_values=True)]
            pairs.append(("limit", str(proxy.partition_limit)))
            self.path = parts.path + "?" + urlencode(pairs)
            del self.headers["Content-Encoding"]
            return plain

        def _json(
            self,
            status: int,
            body: bytes,
            kind: Class | None = None,
            extra: list[tuple[str, str]] | None = None,
        ) -> None:
            headers = [("Content-Type", "application/json"), *(extra or [])]
            if kind is not None:
                headers.append(("X-Cloudant-Request-Class", _CLASS_HEADER[kind]))
            self._answer(status, headers, body)

    return Handler


#: How Cloudant names each class in ``X-Cloudant-Request-Class``.
_CLASS_HEADER: Final[Mapping[Class, str]] = {"read": "read", "write": "write", "query": "query"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Serve Cloudant's rules in front of a local CouchDB or PouchDB Server."
    )
    parser.add_argument("--upstream", required=True, help="http://[user:pass@]127.0.0.1:PORT")
    parser.add_argument(
        "--plan", default="standard", help="lite, standard, none, or READS,WRITES,QUERIES"
    )
    parser.add_argument("--max-request-bytes", type=int, default=MAX_REQUEST_BYTES)
    parser.add_argument("--max-document-bytes", type=int, default=MAX_DOCUMENT_BYTES)
    parser.add_argument("--max-databases", type=int, default=None)
    parser.add_argument("--iam-only", action="store_true")
    parser.add_argument(
        "--retry-after", action="store_true", help="a 429 says when its class has room"
    )
    args = parser.parse_args(argv)
    plan: str | Plan | None = None if args.plan == "none" else args.plan
    if plan is not None and "," in plan:
        plan = Plan(*(int(n) for n in plan.split(",")))  # reads,writes,queries a second
    stop = threading.Event()
    with CloudantProxy(
        args.upstream,
        plan=plan,
        max_request_bytes=args.max_request_bytes,
        max_document_bytes=args.max_document_bytes,
        max_databases=args.max_databases,
        iam_only=args.iam_only,
        retry_after=args.retry_after,
    ) as proxy:
        print(proxy.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()


if __name__ == "__main__":
    main()
