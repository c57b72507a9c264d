"""Talking to the server through ``ibmcloudant``: every request couchids sends goes through
here. Errors become couchids exceptions, lost answers are retried (:func:`request`), and what
couchids learns about a database is asked once per client (:func:`database_facts`).

Every request goes through the caller's ``CloudantV1`` client, so authentication, retries
(``enable_retries()`` or ``CLOUDANT_ENABLE_RETRIES``) and timeouts are the client's own. An
operation's deadline bounds them all, the token requests of IAM authentication included (see
:func:`check_client`).
"""

from __future__ import annotations

import contextlib
import math
import random
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Final
from urllib.parse import urlsplit

import jwt
import requests
from ibm_cloud_sdk_core import ApiException
from ibm_cloud_sdk_core.token_managers.token_manager import TokenManager
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from requests.adapters import BaseAdapter
from urllib3.exceptions import MaxRetryError, NewConnectionError, ResponseError

from .config import scrub
from .errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    RateLimitedError,
    ServerError,
    ServerTimeoutError,
    UnauthorizedError,
)

#: Seconds before the first retry; each later retry waits twice as long (with jitter).
DEFAULT_BACKOFF: Final = 0.05
#: Retries after a lost answer, on top of the first attempt.
DEFAULT_RETRIES: Final = 4
#: The longest wait between two attempts, whatever the backoff.
MAX_BACKOFF: Final = 2.0
#: The longest ``Retry-After`` (seconds) a 429 answer is obeyed for.
MAX_RETRY_AFTER: Final = 30.0
#: Seconds an operation (a write with its retries, a ``latest``, a page of a ``window``, a
#: batch of a ``bulk_create``) may take by default before it gives up with
#: :class:`~couchids.ServerTimeoutError`.
DEFAULT_TIMEOUT: Final = 60.0
#: The longest ``timeout`` accepted: a day.
MAX_TIMEOUT: Final = 86_400.0
JSON: Final = "application/json"

#: Failures after which the request may or may not have been carried out: a write retries
#: these with the same id. 408 and 429 are answers to a request that was not carried out,
#: but retrying them is safe for the same reason.
TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

# When the client's retries (``enable_retries()``) run out on an error status, urllib3 raises
# ``MaxRetryError(reason=ResponseError("too many 429 error responses"))`` and requests wraps
# it in ``RetryError``: the last status survives only in that message, written from this
# template.
_RETRY_STATUS = re.compile(
    re.escape(ResponseError.SPECIFIC_ERROR).replace(re.escape("{status_code}"), r"(\d{3})")
)


def status_of(exc: BaseException) -> int:
    """The HTTP status a failed request ended with; 0 when no answer came back.

    Reads the status of an ``ApiException``, and of the ``RetryError`` the client raises
    when its retries run out on an error status.
    """
    if isinstance(exc, ApiException):
        return int(exc.status_code or 0)
    if isinstance(exc, requests.exceptions.RetryError):
        cause = exc.args[0] if exc.args else None
        reason = cause.reason if isinstance(cause, MaxRetryError) else cause
        found = _RETRY_STATUS.search(str(reason))
        return int(found.group(1)) if found else 0
    return 0


# -- what went wrong, in words ------------------------------------------------------------------

#: CouchDB's rule for database names (its documentation of ``PUT /{db}``), at most 238 bytes.
DB_NAME: Final = re.compile(r"[a-z][a-z0-9_$()+/-]*")
DB_NAME_MAX: Final = 238
#: Databases whose names start with ``_`` that a client may read and write.
SYSTEM_DBS: Final = frozenset({"_users", "_replicator", "_global_changes"})
#: The longest piece of a server's answer quoted in a message.
QUOTE_LEN: Final = 120


def check_db(db: object) -> str:
    """``db`` if it is a database name CouchDB accepts; else :class:`InvalidArgumentError`."""
    if not isinstance(db, str):
        raise InvalidArgumentError(
            f"db={db!r}: a database name is a str, not a {type(db).__name__}"
        )
    if db in SYSTEM_DBS:
        return db
    if not DB_NAME.fullmatch(db) or len(db.encode()) > DB_NAME_MAX:
        raise InvalidArgumentError(
            f"db={db!r} is not a CouchDB database name: 1-{DB_NAME_MAX} characters, a lower-case "
            "letter first, then lower-case letters, digits and _ $ ( ) + - /"
        )
    return db


def check_client(client: object) -> CloudantV1:
    """``client`` if it is a ``CloudantV1``, with couchids' deadlines able to reach its requests.

    Every request of the client's session (the session login of ``couchdb_session``
    authentication too) passes through an adapter that caps its socket timeouts by the
    deadline of the couchids operation sending it. An authenticator that gets tokens from a
    service of its own (IAM with ``CLOUDANT_APIKEY``, and the container, VPC and Cloud Pak
    ones) sends those requests outside the session: the operation waits for its token until
    the deadline and no longer (:class:`BoundedTokens`). Outside couchids operations neither
    changes anything. Both are put back if replaced since (``enable_retries()``, a new
    authenticator).
    """
    if not isinstance(client, CloudantV1):
        raise InvalidArgumentError(
            f"client={type(client).__name__}: pass an ibmcloudant CloudantV1 client, such as "
            "CloudantV1.new_instance()"
        )
    session = client.get_http_client()
    if isinstance(session, requests.Session):
        for prefix, adapter in list(session.adapters.items()):
            if not isinstance(adapter, _DeadlineAdapter):
                session.adapters[prefix] = _DeadlineAdapter(adapter)
    authenticator = getattr(client, "authenticator", None)
    manager = getattr(authenticator, "token_manager", None)
    if (
        isinstance(manager, TokenManager)
        # Its login goes through the client's session, and so through the adapter.
        and not isinstance(authenticator, CouchDbSessionAuthenticator)
        and not isinstance(vars(manager).get("get_token"), BoundedTokens)
    ):
        manager.get_token = BoundedTokens(manager)
    return client


def describe(body: Any) -> str:
    """A short account of an answer's body for a message: never a whole page."""
    if isinstance(body, requests.Response):
        kind = (body.headers.get("Content-Type") or "no content type").split(";")[0].strip()
        label = "HTML" if "html" in kind else kind
        return f"{label} ({len(body.content)} bytes)"
    if isinstance(body, bytes):
        start = body.lstrip()[:1]
        label = "HTML" if start == b"<" else "JSON cut short" if start in (b"{", b"[") else "text"
        return f"{label} ({len(body)} bytes)"
    text = repr(body)
    return f"{type(body).__name__} {text[:QUOTE_LEN]}{'...' if len(text) > QUOTE_LEN else ''}"


def _sent(exc: BaseException | None) -> str:
    """``METHOD /path`` of the request an exception is about, if it says."""
    request = getattr(exc, "request", None)
    response = getattr(exc, "http_response", None) or getattr(exc, "response", None)
    if request is None and response is not None:
        request = getattr(response, "request", None)
    method, url = getattr(request, "method", None), getattr(request, "url", None)
    if not method or not isinstance(url, str):
        return ""
    return f"{method} {urlsplit(url).path}"


def _error_reason(exc: ApiException) -> str:
    """CouchDB's ``error: reason`` of an error answer, or what the answer was instead."""
    response = exc.http_response
    if response is None:
        return str(exc.message or "no reason given")[:QUOTE_LEN]
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        reason = body.get("reason")
        text: str = body["error"] + (f": {reason}" if isinstance(reason, str) and reason else "")
        return text[:400]
    return f"not a CouchDB answer: {describe(response)}"


def server_error(exc: BaseException, db: str, policy: RetryPolicy | None = None) -> ServerError:
    """The couchids exception for a failure of a request about database ``db``.

    Its message names the operation (``policy.operation``), the database and the request.
    """
    operation = policy.operation if policy is not None else "request"
    sent = _sent(exc) or _last_sent()
    where = f" ({sent})" if sent else ""
    head = f"{operation} on {db!r}{where}"
    if isinstance(exc, StopIteration):
        # ibmcloudant's couchdb_session login looks for the AuthSession cookie with next():
        # no cookie, no session.
        return UnauthorizedError(
            f"{head}: the couchdb_session login (POST /_session) got no session cookie: the "
            "server refused the user name and password (check CLOUDANT_USERNAME and "
            "CLOUDANT_PASSWORD) or is not CouchDB",
            401,
        )
    if isinstance(exc, requests.Timeout) or (
        policy is not None and policy.expired() and not status_of(exc)
    ):
        limit = f"{policy.timeout:g} s" if policy is not None and policy.timeout else "its limit"
        if isinstance(exc, TokenTimeout):
            return ServerTimeoutError(
                f"{head}: the authentication service did not answer the token request within "
                f"{limit}"
            )
        return ServerTimeoutError(f"{head}: the server did not answer within {limit}")
    status = status_of(exc)
    if isinstance(exc, ApiException) and 200 <= status < 300:
        # ibmcloudant could not read a success answer that claimed to be JSON.
        return ServerError(f"{head}: not a CouchDB answer: unreadable JSON (HTTP {status})", status)
    if status:
        reason = _error_reason(exc) if isinstance(exc, ApiException) else str(exc)[:QUOTE_LEN]
        if status == 404:
            return DatabaseNotFoundError(
                f"{head}: database {db!r} does not exist (or the document path is wrong): {reason}",
                status,
            )
        if status in (401, 403):
            return UnauthorizedError(
                f"{head}: the server refused access (HTTP {status}): {reason}; {_check_hint(exc)}",
                status,
            )
        if status == 429:
            return RateLimitedError(
                f"{head}: rate limited (HTTP 429) after the client's retries; enable or "
                "raise retries with client.enable_retries() or CLOUDANT_ENABLE_RETRIES",
                status,
            )
        return ServerError(f"{head}: the server answered HTTP {status}: {reason}", status)
    if not isinstance(exc, ApiException | requests.RequestException):
        return ServerError(
            f"{head}: ibmcloudant could not use an answer (authentication's token request or "
            f"the server's): {type(exc).__name__}: {_network_reason(exc)}"
        )
    if isinstance(
        exc, requests.exceptions.ChunkedEncodingError | requests.exceptions.ContentDecodingError
    ):
        return ServerError(f"{head}: the answer broke off: the connection closed mid-body")
    return ServerError(f"{head}: could not reach the server: {_network_reason(exc)}")


def sanitized(exc: BaseException) -> BaseException | None:
    """A copy of an ``ibmcloudant``/``requests`` exception to chain as a cause, its text masked.

    The original is not chained: its text (and a traceback printing it) can hold the server
    URL with its credentials, or a server's answer echoing them. The copy keeps the type, the
    status and the HTTP response. ``None`` for the ``StopIteration`` of a refused login.
    """
    if isinstance(exc, ApiException):
        masked: BaseException = ApiException(
            exc.status_code, message=scrub(str(exc.message)), http_response=exc.http_response
        )
        return masked
    if isinstance(exc, requests.RequestException):
        text = scrub(str(exc))
        try:
            copy: BaseException = type(exc)(text)
            return copy
        except Exception:  # a subclass with another signature
            return requests.RequestException(text)
    return None


def _check_hint(exc: BaseException) -> str:
    """What to check after a 401/403: the credentials of the URL, or the configured ones."""
    request = getattr(getattr(exc, "http_response", None), "request", None)
    url = getattr(request, "url", None)
    if isinstance(url, str) and urlsplit(url).password is not None:
        return "check the user name and password inside the server URL"
    return "check CLOUDANT_USERNAME/CLOUDANT_PASSWORD or CLOUDANT_APIKEY"


def answer_error(policy: RetryPolicy, db: str, problem: str) -> ServerError:
    """A :class:`ServerError` for an answer of the wrong shape: ``problem`` says what was wrong."""
    sent = _last_sent()
    where = f" ({sent})" if sent else ""
    return ServerError(f"{policy.operation} on {db!r}{where}: not a CouchDB answer: {problem}")


def expect_object(body: Any, policy: RetryPolicy, db: str, *fields: str) -> dict[str, Any]:
    """``body`` if it is a JSON object holding each of ``fields``; else :func:`answer_error`."""
    if not isinstance(body, dict):
        raise answer_error(policy, db, f"expected a JSON object, got {describe(body)}")
    missing = [name for name in fields if name not in body]
    if missing:
        raise answer_error(policy, db, f"no {missing[0]!r} in {describe(body)}")
    return body


def expect_rows(
    body: Any, policy: RetryPolicy, db: str, *, include_docs: bool = False
) -> list[dict[str, Any]]:
    """The rows of an ``_all_docs`` answer for a key range, each an object with a string ``id``
    (and, with ``include_docs``, a document object unless the document was deleted as it was
    read); else :func:`answer_error`."""
    rows = expect_object(body, policy, db, "rows")["rows"]
    if not isinstance(rows, list):
        raise answer_error(policy, db, f"'rows' is {describe(rows)}, not a list")
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise answer_error(policy, db, f"a row without a string id: {describe(row)}")
        doc, value = row.get("doc"), row.get("value")
        deleted = doc is None and isinstance(value, dict) and value.get("deleted") is True
        if include_docs and not isinstance(doc, dict) and not deleted:
            raise answer_error(policy, db, f"row {row['id']!r} has doc {describe(doc)}")
    return rows


def revision(body: Any, policy: RetryPolicy, db: str) -> str:
    """The ``rev`` of a write's answer, checked to be a revision string."""
    rev = expect_object(body, policy, db, "rev")["rev"]
    if not isinstance(rev, str) or not rev:
        raise answer_error(policy, db, f"the rev is {describe(rev)}, not a revision string")
    return rev


# requests wraps the socket error in two layers of urllib3 text; its errno line is the news.
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


def _network_reason(exc: BaseException) -> str:
    """The short cause of a network failure, such as ``Connection refused``."""
    found = _ERRNO.search(str(exc))
    if found:
        return found.group(1).strip()
    text = str(exc)
    return f"{type(exc).__name__}: {text[:QUOTE_LEN]}{'...' if len(text) > QUOTE_LEN else ''}"


def may_have_run(exc: BaseException) -> bool:
    """Whether the server may have carried out a request that failed with ``exc``.

    A 5xx or a lost answer (a timeout, a connection dropped after sending) may follow a
    request the server carried out; a 4xx refusal (429 included) and a connection that was
    never made (refused, unresolvable, a connect timeout) may not.
    """
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return False
    if isinstance(exc, requests.ConnectionError):
        cause = exc.args[0] if exc.args else None
        reason = cause.reason if isinstance(cause, MaxRetryError) else cause
        return not isinstance(reason, NewConnectionError)
    status = status_of(exc)
    return status == 0 or status >= 500


@dataclass
class Attempts:
    """What the failed attempts of some requests tell about the server's side of them."""

    #: Whether any of them may have been carried out (see :func:`may_have_run`).
    maybe_carried_out: bool = False


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` may have lost the answer to a request that was carried out."""
    if isinstance(exc, ApiException | requests.exceptions.RetryError):
        return status_of(exc) in TRANSIENT_STATUSES
    return isinstance(
        exc,
        requests.ConnectionError | requests.Timeout | requests.exceptions.ChunkedEncodingError,
    )


#: What a request can fail with: the SDK's and requests' errors, the ``StopIteration`` of a
#: refused ``couchdb_session`` login, and what ibmcloudant's authenticators raise when a token
#: service's answer is not of the shape they expect.
FAILURES: Final = (
    ApiException,
    requests.RequestException,
    StopIteration,
    AttributeError,
    KeyError,
    TypeError,
    ValueError,
    IndexError,
    jwt.PyJWTError,
)


def call(db: str, request: Callable[[], Any], policy: RetryPolicy | None = None) -> Any:
    """Run ``request`` (an ``ibmcloudant`` call) once and return its JSON result.

    Raises:
        ServerError: or a subclass, for any HTTP error, unreachable server, answer that is not
            JSON, or the end of ``policy``'s time.
    """
    policy = policy or RetryPolicy.checked(0, 0)
    with policy.bounded():
        try:
            result = request().get_result()
        except FAILURES as exc:
            raise server_error(exc, db, policy) from sanitized(exc)
        if isinstance(result, requests.Response):
            raise answer_error(policy, db, describe(result))
        return result


def call_for_bytes(db: str, request: Callable[[], Any], policy: RetryPolicy) -> bytes:
    """Run ``request`` (an ``ibmcloudant`` ``..._as_stream`` call) once; return the body's bytes.

    For callers that decode the answer themselves (:mod:`couchids.pages`).

    Raises:
        ServerError: or a subclass, for any HTTP error, unreachable server, answer cut short,
            or the end of ``policy``'s time.
    """
    with policy.bounded():
        try:
            response = request().get_result()
            if not isinstance(response, requests.Response):
                raise answer_error(policy, db, f"not a stream: {describe(response)}")
            try:
                return response.content
            finally:
                response.close()
        except FAILURES as exc:
            raise server_error(exc, db, policy) from sanitized(exc)


@dataclass(frozen=True, slots=True)
class DatabaseFacts:
    """What couchids needs to know about a database, asked once per client and database.

    Attributes:
        partitioned: whether it is a partitioned database.
        copies: how many copies the server keeps of each document (CouchDB's ``n``; 1 for a
            server that does not say, such as a single node or PouchDB Server).
    """

    partitioned: bool
    copies: int


_facts: weakref.WeakKeyDictionary[CloudantV1, dict[str, DatabaseFacts]] = (
    weakref.WeakKeyDictionary()
)
_facts_lock = threading.Lock()


def database_facts(client: CloudantV1, db: str, policy: RetryPolicy | None = None) -> DatabaseFacts:
    """The :class:`DatabaseFacts` of ``db``, from one ``GET /{db}`` per client and database."""
    with _facts_lock:
        known = _facts.get(client, {}).get(db)
    if known is not None:
        return known
    policy = policy or RetryPolicy.checked(0, 0)
    info = expect_object(
        call(db, lambda: client.get_database_information(db=db), policy), policy, db
    )
    cluster, props = info.get("cluster"), info.get("props")
    copies = cluster.get("n", 1) if isinstance(cluster, dict) else 1
    partitioned = props.get("partitioned", False) if isinstance(props, dict) else False
    facts = DatabaseFacts(
        partitioned=partitioned is True,
        copies=copies
        if isinstance(copies, int) and not isinstance(copies, bool) and copies >= 1
        else 1,
    )
    with _facts_lock:
        _facts.setdefault(client, {})[db] = facts
    return facts


def is_partitioned(client: CloudantV1, db: str, policy: RetryPolicy | None = None) -> bool:
    """Whether ``db`` is a partitioned database, asked once per client and database."""
    return database_facts(client, db, policy).partitioned


# -- deadlines ----------------------------------------------------------------------------------


@dataclass
class _Scope:
    """The couchids operation a thread is sending a request for."""

    policy: RetryPolicy
    sent: str = ""


_scope: ContextVar[_Scope | None] = ContextVar("couchids_scope", default=None)


def _last_sent() -> str:
    scope = _scope.get()
    return scope.sent if scope is not None else ""


class _DeadlineAdapter(BaseAdapter):
    """A transport adapter that caps each request's timeouts by the current deadline."""

    def __init__(self, inner: BaseAdapter) -> None:
        super().__init__()
        self.inner = inner

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        scope = _scope.get()
        if scope is not None:
            scope.sent = f"{request.method} {urlsplit(request.url or '').path}"
            left = scope.policy.remaining()
            if left is not None:
                if left <= 0:
                    raise requests.exceptions.ReadTimeout("no time left", request=request)
                kwargs["timeout"] = _capped(kwargs.get("timeout"), left)
        response: requests.Response = self.inner.send(request, **kwargs)
        return response

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        # Settings of the wrapped adapter (max_retries, ...) stay readable.
        return getattr(self.inner, name)


def _capped(timeout: Any, left: float) -> Any:
    left = max(left, 0.001)
    if isinstance(timeout, tuple):
        return tuple(left if t is None else min(float(t), left) for t in timeout)
    return left if timeout is None else min(float(timeout), left)


class TokenTimeout(requests.exceptions.ConnectTimeout):
    """An authenticator's token request that had not ended by the operation's deadline.

    A ``ConnectTimeout``: the request the token was for was never sent.
    """


#: Seconds a held token must stay usable for ``get_token`` to run without a thread of its
#: own: ibmcloudant compares whole seconds, so its answer may change at the next one.
TOKEN_MARGIN: Final = 2.0


@dataclass
class _TokenRequest:
    """One ``get_token`` of a token manager, run in a thread of its own."""

    done: threading.Event = field(default_factory=threading.Event)
    token: Any = None
    error: BaseException | None = None


class BoundedTokens:
    """A token manager's ``get_token`` that a couchids operation waits for until its deadline.

    ibmcloudant's token managers (IAM, container, VPC, Cloud Pak) send their token requests
    with ``requests`` directly, with the client's timeouts (150 s to read) and not through its
    session, and make every later caller wait up to a minute for a request under way. So when
    ``get_token`` would send a request (no token, an expired one, or one due for renewal), it
    runs in a thread of its own, and the operation waits for it only until its deadline
    (:class:`TokenTimeout`); the thread ends with the client's own timeouts. Operations that
    need a token meanwhile wait for the same request; while a renewal is under way, the token
    held is still used, as ibmcloudant does. After a failed request the next operation asks
    again at once, rather than a minute after the last try. Without a deadline, or when the
    token held will do, it is ``get_token``.
    """

    def __init__(self, manager: TokenManager) -> None:
        self.manager = manager
        self.get_token: Callable[[], Any] = manager.get_token
        self.lock = threading.Lock()
        self.pending: _TokenRequest | None = None

    def __call__(self) -> Any:
        scope = _scope.get()
        left = None if scope is None else scope.policy.remaining()
        if left is None or self._good():
            return self.get_token()
        with self.lock:
            pending = self.pending
            if pending is None or pending.done.is_set():
                pending = self.pending = _TokenRequest()
                threading.Thread(
                    target=self._run, args=(pending,), name="couchids-token", daemon=True
                ).start()
        if not pending.done.wait(max(left, 0.0)):
            raise TokenTimeout("the token request got no answer in time")
        if pending.error is not None:
            raise pending.error
        return pending.token

    def _good(self) -> bool:
        """Whether ``get_token`` will answer with the token held, sending nothing, for
        :data:`TOKEN_MARGIN` seconds yet: it is neither expired (IAM's count 10 s early) nor
        due for renewal."""
        manager = self.manager
        try:
            soon = time.time() + TOKEN_MARGIN
            early = getattr(manager, "IAM_EXPIRATION_WINDOW", 0)
            return bool(
                manager.access_token is not None
                and soon < manager.refresh_time
                and soon + early < manager.expire_time
                and not manager._is_token_expired()
            )
        except (AttributeError, TypeError):
            return False

    def _run(self, pending: _TokenRequest) -> None:
        try:
            pending.token = self.get_token()
        except BaseException as exc:  # kept for the waiting operations, never printed
            pending.error = exc
            # No request is under way any more (ibmcloudant leaves the time of a failed one).
            self.manager.request_time = 0
        finally:
            pending.done.set()


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and after how long, a request whose answer was lost is sent again, and how
    long the whole operation may take.

    Attributes:
        retries, backoff: see :meth:`checked`.
        timeout: the seconds the operation may take, or ``None`` for no limit.
        operation: the public operation's name, for messages (``"create"``).
        deadline: the ``time.monotonic()`` by which it must end.
    """

    retries: int
    backoff: float
    timeout: float | None = None
    operation: str = "request"
    deadline: float | None = field(default=None, compare=False)

    @classmethod
    def checked(
        cls,
        retries: int,
        backoff: float,
        timeout: float | None = None,
        operation: str = "request",
    ) -> RetryPolicy:
        """The policy for the public arguments ``retries``, ``backoff`` and ``timeout``, checked;
        the clock starts now."""
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise InvalidArgumentError(f"retries={retries!r}: must be an int >= 0")
        if (
            isinstance(backoff, bool)
            or not isinstance(backoff, int | float)
            or not 0 <= backoff <= MAX_BACKOFF
        ):
            raise InvalidArgumentError(
                f"backoff={backoff!r}: must be a number of seconds from 0 to {MAX_BACKOFF:g}"
            )
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or not 0 < timeout <= MAX_TIMEOUT
        ):
            raise InvalidArgumentError(
                f"timeout={timeout!r}: must be None or a number of seconds above 0 and at "
                f"most {MAX_TIMEOUT:g}"
            )
        seconds = None if timeout is None else float(timeout)
        return cls(retries, float(backoff), seconds, operation).renewed()

    def renewed(self) -> RetryPolicy:
        """The same policy with its clock started now (for each page or batch)."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        return replace(self, deadline=deadline)

    def remaining(self) -> float | None:
        """Seconds left before the deadline (``None``: no deadline)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        left = self.remaining()
        return left is not None and left <= 0

    @contextlib.contextmanager
    def bounded(self) -> Iterator[None]:
        """Requests sent inside are bounded by this policy's deadline (see :func:`check_client`)."""
        token = _scope.set(_Scope(self))
        try:
            yield
        finally:
            _scope.reset(token)

    def delay(self, exc: BaseException | None, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``exc``: the failure, if any)."""
        after = _retry_after(exc)
        if after is not None:
            return min(after, MAX_RETRY_AFTER)
        # Jitter spreads out writers that lost their answers at the same moment.
        return min(MAX_BACKOFF, self.backoff * 2.0**attempt) * random.uniform(0.5, 1.0)


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful answer: its HTTP status (a write's 201 or 202 matters) and its JSON."""

    status: int
    body: Any


class Refusal:
    """Answers :func:`request` returns instead of raising, when the caller asks for them."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: The server answered 409 Conflict.
CONFLICT: Final = Refusal("CONFLICT")
#: The server answered 404 Not Found.
MISSING: Final = Refusal("MISSING")


def request(
    db: str,
    send: Callable[[], Any],
    policy: RetryPolicy,
    *,
    expect: tuple[Refusal, ...] = (),
    attempts: Attempts | None = None,
) -> Any:
    """Run an ``ibmcloudant`` call, retrying lost answers; return its :class:`Reply`.

    A 409 or 404 comes back as :data:`CONFLICT` / :data:`MISSING` when listed in ``expect``;
    every other failure raises the mapped :class:`~couchids.ServerError`, and so does an answer
    that is not JSON. Every attempt, and the waits between them, end by ``policy``'s deadline
    (:class:`~couchids.ServerTimeoutError`). ``attempts``, when given, learns whether a failed
    attempt may have been carried out.
    """
    attempt = 0
    with policy.bounded():
        while True:
            scope = _scope.get()
            if scope is not None:
                scope.sent = ""
            try:
                response = send()
                result = response.get_result()
                if isinstance(result, requests.Response):
                    raise answer_error(policy, db, describe(result))
                return Reply(int(response.get_status_code() or 0), result)
            except FAILURES as exc:
                status = status_of(exc) if isinstance(exc, ApiException) else 0
                if attempts is not None and may_have_run(exc):
                    attempts.maybe_carried_out = True
                if status == 409 and CONFLICT in expect:
                    return CONFLICT
                if status == 404 and MISSING in expect and _is_couchdb_error(exc):
                    return MISSING
                if attempt >= policy.retries or not is_transient(exc) or _login(exc):
                    raise server_error(exc, db, policy) from sanitized(exc)
                wait = policy.delay(exc, attempt)
                left = policy.remaining()
                if left is not None and wait >= left:
                    raise server_error(exc, db, policy) from sanitized(exc)
                time.sleep(wait)
                attempt += 1


def _login(exc: BaseException) -> bool:
    """Whether ``exc`` ended an authentication login rather than the request itself.

    A login is not retried here: ibmcloudant paces a new login after a failed one (waiting
    up to a minute, beyond any deadline), and retries its own token requests. A failure before
    the request reached the client's session (see :func:`check_client`) came from
    authentication: an IAM token request goes through a session of its own.
    """
    scope = _scope.get()
    if scope is not None and not scope.sent:
        return True
    return any(
        sent.endswith(("/_session", "/identity/token")) for sent in (_sent(exc), _last_sent())
    )


def _is_couchdb_error(exc: ApiException) -> bool:
    """Whether an error answer came from CouchDB (a JSON body with ``error``), not a proxy."""
    response = exc.http_response
    try:
        body = response.json() if response is not None else None
    except ValueError:
        return False
    return isinstance(body, dict) and "error" in body


def live_leaves(
    client: CloudantV1, db: str, doc_id: str, policy: RetryPolicy
) -> list[dict[str, Any]]:
    """Every live (not deleted) leaf revision of ``doc_id``, read from every copy.

    ``GET /{db}/{doc_id}?open_revs=all&r=N`` with ``N`` the database's copies: a revision held
    by only one copy (a cluster write that reached fewer copies than a quorum, or two first
    writes of one id that reached different copies) is seen as long as that copy answers. An
    empty list means no copy that answered holds a live revision.
    """
    copies = database_facts(client, db, policy).copies
    path = "/{}/{}".format(*client.encode_path_vars(db, doc_id))

    def send() -> Any:
        prepared = client.prepare_request(
            method="GET",
            url=path,
            headers={"Accept": JSON},
            # Attachment data too: a compressed one's digest is not the MD5 of its bytes.
            params={"open_revs": "all", "r": copies, "attachments": "true"},
        )
        return client.send(prepared)

    reply = request(db, send, policy, expect=(MISSING,))
    if reply is MISSING:
        return []
    if not isinstance(reply.body, list):
        raise answer_error(
            policy, db, f"open_revs=all of {doc_id!r} answered {describe(reply.body)}, not a list"
        )
    leaves = [entry.get("ok") for entry in reply.body if isinstance(entry, dict)]
    live = [leaf for leaf in leaves if isinstance(leaf, dict) and not leaf.get("_deleted")]
    for leaf in live:
        if not isinstance(leaf.get("_rev"), str):
            raise answer_error(
                policy, db, f"a revision of {doc_id!r} has no _rev: {describe(leaf)}"
            )
    return live


def delete_revision(
    client: CloudantV1, db: str, doc_id: str, rev: str, policy: RetryPolicy
) -> None:
    """Delete revision ``rev`` of ``doc_id`` (one couchids wrote itself).

    A 409 or 404 means it is deleted already (an earlier attempt whose answer was lost).
    """
    request(
        db,
        lambda: client.delete_document(db=db, doc_id=doc_id, rev=rev),
        policy,
        expect=(CONFLICT, MISSING),
    )


def winner(leaves: list[dict[str, Any]]) -> dict[str, Any]:
    """The leaf CouchDB shows as the document: the longest history, then the highest rev."""

    def rank(leaf: dict[str, Any]) -> tuple[int, str]:
        pos, _, digest = str(leaf["_rev"]).partition("-")
        return (int(pos) if pos.isdigit() else 0, digest)

    return max(leaves, key=rank)


def _retry_after(exc: BaseException | None) -> float | None:
    if not isinstance(exc, ApiException) or exc.status_code != 429 or exc.http_response is None:
        return None
    value = exc.http_response.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        # An HTTP date instead of seconds: fall back to the backoff.
        return None
