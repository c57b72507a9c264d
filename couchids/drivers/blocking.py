"""The blocking driver: every request couchids sends through an ``ibmcloudant`` client goes here.

Operations are programs of :mod:`couchids.core.effects` (pure: which request next, and what an
answer means); :func:`run` and :func:`stream` carry out their effects with the caller's
``CloudantV1`` client, so authentication, the client's own retries (``enable_retries()`` or
``CLOUDANT_ENABLE_RETRIES``) and timeouts are the client's. Concurrent sub-programs run on
threads. Failures that are not an HTTP answer (refused connections, timeouts, broken bodies,
failed logins) become couchids exceptions here, their causes masked; HTTP answers of any
status go back to the program. What couchids learns about a database is kept per client.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import io
import math
import re
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

import jwt
import requests
from ibm_cloud_sdk_core import ApiException
from ibm_cloud_sdk_core.token_managers.token_manager import TokenManager
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from requests.adapters import BaseAdapter
from requests.utils import prepend_scheme_if_needed, select_proxy
from urllib3.connection import HTTPSConnection
from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, NewConnectionError, ResponseError

from couchids.core import answers, facts
from couchids.core.answers import QUOTE_LEN, current_request
from couchids.core.asking import TRANSIENT_STATUSES
from couchids.core.effects import (
    Emit,
    Lost,
    Program,
    Request,
    Response,
    Send,
    Sleep,
    Start,
    Wait,
    request_headers,
)
from couchids.core.facts import DatabaseFacts, FactsCache
from couchids.core.pacing import Pacer, Rate, Ticket
from couchids.core.pages import handed_on
from couchids.core.policy import RetryPolicy
from couchids.drivers import log
from couchids.drivers.config import mask_sdk_logs, scrub
from couchids.drivers.credentials import LoginRefused, answer_hint, check_logins
from couchids.drivers.tls import (
    HANDSHAKE_TIMEOUT,
    PROBE_TIMEOUT,
    plain_http_reason,
    speaks_plain_http,
)
from couchids.errors import (
    CouchidsError,
    InvalidArgumentError,
    RateLimitedError,
    ServerError,
    ServerTimeoutError,
    UnauthorizedError,
)

T = TypeVar("T")

# ibmcloudant logs every request's URL at DEBUG, credentials and all.
mask_sdk_logs()

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


def check_client(client: object) -> CloudantV1:
    """``client`` if it is a ``CloudantV1``, with couchids' deadlines able to reach its requests.

    Every request of the client's session (the session login of ``couchdb_session``
    authentication too) passes through an adapter that caps its socket timeouts by the
    deadline of the couchids operation sending it, and reads its whole answer, headers and
    body, by that deadline (a read timeout alone bounds each read from the socket, not the
    answer); the connections the session held before are closed, once. An authenticator
    that gets tokens from a service of its own (IAM with ``CLOUDANT_APIKEY``, and the
    container, VPC and Cloud Pak ones) sends those requests outside the session: the
    operation waits for its token until the deadline and no longer (:class:`BoundedTokens`).
    Outside couchids operations neither changes anything. Both are put back if replaced
    since (``enable_retries()``, a new authenticator).
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
    check_logins(client)
    return client


def describe(body: Any) -> str:
    """A short account of an answer's body (a ``requests.Response`` too) for a message."""
    if isinstance(body, requests.Response):
        return answers.describe(response_of(body))
    return answers.describe(body)


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


def server_error(exc: BaseException, db: str, policy: RetryPolicy | None = None) -> ServerError:
    """The couchids exception for a failure of a request about database ``db``.

    Its message names the operation (``policy.operation``), the database and the request.
    """
    operation = policy.operation if policy is not None else "request"
    sent = _sent(exc) or _last_sent()
    where = f" ({sent})" if sent else ""
    head = f"{operation} on {db!r}{where}"
    if isinstance(exc, LoginRefused):
        return UnauthorizedError(f"{head}: {exc}", exc.status)
    plain = _plain_http(exc)
    if plain is not None:
        return ServerError(f"{head}: could not reach the server: {plain}")
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
        # ibmcloudant could not read a success answer that claimed to be JSON (a token's).
        return ServerError(f"{head}: not a CouchDB answer: unreadable JSON (HTTP {status})", status)
    if isinstance(exc, ApiException) and exc.http_response is not None:
        # A login's own answer (a refused one is a LoginRefused): its status, its words.
        answer = response_of(exc.http_response)
        return answers.status_error(answer, policy or RetryPolicy(0, 0), db, sent)
    if status == 429:
        return RateLimitedError(
            f"{head}: rate limited (HTTP 429) after the client's retries, and no room for "
            "the request before the call's deadline; give the call a longer timeout, keep "
            "the client to a lower rate (couchids.connect(rate=...)), or raise the "
            "instance's capacity",
            status,
        )
    if status:
        return ServerError(
            f"{head}: the server answered HTTP {status}: {str(exc)[:QUOTE_LEN]}", status
        )
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


# requests wraps the socket error in two layers of urllib3 text; its errno line is the news.
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


def _network_reason(exc: BaseException) -> str:
    """The short cause of a network failure, such as ``Connection refused``."""
    found = _ERRNO.search(str(exc))
    if found:
        return found.group(1).strip()
    text = str(exc)
    return f"{type(exc).__name__}: {text[:QUOTE_LEN]}{'...' if len(text) > QUOTE_LEN else ''}"


def _plain_http(exc: BaseException) -> str | None:
    """The reason of a :class:`PlainHttpPort` that ``exc`` (requests' error) wraps, if any."""
    cause = exc.args[0] if isinstance(exc, requests.ConnectionError) and exc.args else None
    reason = cause.reason if isinstance(cause, MaxRetryError) else cause
    return reason.reason if isinstance(reason, PlainHttpPort) else None


def may_have_run(exc: BaseException) -> bool:
    """Whether the server may have carried out a request that failed with ``exc``.

    A 5xx or a lost answer (a timeout, a connection dropped after sending) may follow a
    request the server carried out; a 4xx refusal (429 included) and a connection that was
    never made (refused, unresolvable, a connect timeout) may not.
    """
    if isinstance(exc, requests.exceptions.ConnectTimeout | LoginRefused):
        return False
    if isinstance(exc, requests.ConnectionError):
        cause = exc.args[0] if exc.args else None
        reason = cause.reason if isinstance(cause, MaxRetryError) else cause
        return not isinstance(reason, NewConnectionError)
    status = status_of(exc)
    return status == 0 or status >= 500


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` may have lost the answer to a request that was carried out."""
    if isinstance(exc, ApiException | requests.exceptions.RetryError):
        return status_of(exc) in TRANSIENT_STATUSES
    if _plain_http(exc) is not None:
        return False
    return isinstance(
        exc,
        requests.ConnectionError | requests.Timeout | requests.exceptions.ChunkedEncodingError,
    )


#: What a request can fail with: the SDK's and requests' errors, a refused login
#: (:class:`~couchids.drivers.credentials.LoginRefused`), the ``StopIteration`` of a
#: ``couchdb_session`` login answered without a session cookie, and what ibmcloudant's
#: authenticators raise when a token service's answer is not of the shape they expect.
FAILURES: Final = (
    ApiException,
    LoginRefused,
    requests.RequestException,
    StopIteration,
    AttributeError,
    KeyError,
    TypeError,
    ValueError,
    IndexError,
    jwt.PyJWTError,
)


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
    """A transport adapter that caps each request's timeouts by the current deadline, and
    has the connections it sends through read their answers by it (:class:`_DeadlineAnswer`).
    """

    def __init__(self, inner: BaseAdapter) -> None:
        super().__init__()
        self.inner = inner
        _read_by_deadline(getattr(inner, "poolmanager", None))
        for manager in list(getattr(inner, "proxy_manager", {}).values()):
            _read_by_deadline(manager)

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        scope = _scope.get()
        if scope is not None:
            scope.sent = f"{request.method} {urlsplit(request.url or '').path}"
            current_request.set(scope.sent)
            left = scope.policy.remaining()
            if left is not None:
                if left <= 0:
                    raise requests.exceptions.ReadTimeout("no time left", request=request)
                kwargs["timeout"] = _capped(kwargs.get("timeout"), left)
                self._pools_for(request, kwargs.get("proxies"))
        response: requests.Response = self.inner.send(request, **kwargs)
        return response

    def _pools_for(self, request: requests.PreparedRequest, proxies: Any) -> None:
        """Make sure the pools ``request`` may go through open connections that read by the
        deadline: the adapter's pool manager may have been made anew, and a proxy's is made
        on its first request (requests' ``HTTPAdapter`` picks it the same way)."""
        inner = self.inner
        _read_by_deadline(getattr(inner, "poolmanager", None))
        proxy = select_proxy(request.url or "", proxies) if proxies else None
        manager_for = getattr(inner, "proxy_manager_for", None)
        if proxy and callable(manager_for):
            try:
                manager = manager_for(prepend_scheme_if_needed(proxy, "http"))
            except Exception:  # a bad proxy URL: the adapter's send reports it in its words
                return
            _read_by_deadline(manager)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        # Settings of the wrapped adapter (max_retries, ...) stay readable.
        return getattr(self.inner, name)


class _DeadlineAnswer(http.client.HTTPResponse):
    """``http.client``'s answer, each read from the socket of which (status line, headers,
    body) ends by the deadline of the couchids operation that sent the request.

    A read timeout bounds each read, not the answer: a server sending a byte every 50 ms
    keeps a client reading for as long as it likes. Here no read starts after the deadline and
    none waits past it, whoever reads (requests, ibmcloudant reading an error's body); the
    deadline passed, a read raises the socket's ``TimeoutError``, which urllib3 and requests
    report as a read timeout. Outside a couchids operation it is ``http.client``'s answer.
    """

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        scope = _scope.get()
        deadline = None if scope is None else scope.policy.deadline
        if deadline is not None:
            # Nothing is read yet: the socket's stream can change hands whole.
            stream = _DeadlineReads(self.fp.detach(), sock, deadline)
            self.fp = io.BufferedReader(stream, io.DEFAULT_BUFFER_SIZE)


#: Seconds a read may wait past the deadline: the socket's timeout is lowered to the time left
#: at most this often, not before each of the thousands of reads of a large answer.
READ_SLACK: Final = 0.01


class _DeadlineReads(io.RawIOBase):
    """A socket's reads (``raw``, its ``SocketIO``), each waiting at most until ``deadline``
    (and :data:`READ_SLACK`).

    The socket's own timeout is put back when the answer is closed, for the connection's
    next request.
    """

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self.raw, self.sock, self.deadline = raw, sock, deadline
        self.timeout = sock.gettimeout()
        self.lowered = -math.inf

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.raw.fileno()

    def readinto(self, buffer: Any) -> int | None:
        now = time.monotonic()
        left = self.deadline - now
        if left <= 0:
            raise TimeoutError("the deadline passed while the answer was read")
        if now - self.lowered >= READ_SLACK:
            self.sock.settimeout(left if self.timeout is None else min(self.timeout, left))
            self.lowered = now
        return self.raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(OSError):  # the socket closed first
                self.sock.settimeout(self.timeout)
            self.raw.close()
        super().close()


class _DeadlineConnection:
    """Mixed into a urllib3 connection class: its answers are :class:`_DeadlineAnswer`."""

    response_class = _DeadlineAnswer


class PlainHttpPort(NewConnectionError):
    """An ``https://`` connection to a port that speaks plain HTTP (:mod:`couchids.drivers.tls`):
    never made, and not worth trying again."""

    def __init__(self, conn: Any, reason: str) -> None:
        super().__init__(conn, reason)
        self.reason = reason


class _BoundedHandshake(HTTPSConnection):
    """Mixed into a urllib3 HTTPS connection class: the TLS handshake of a direct connection
    takes :data:`~couchids.drivers.tls.HANDSHAKE_TIMEOUT` at most, and when it fails on a port
    that speaks plain HTTP, :class:`PlainHttpPort` says so."""

    _connect_timeout: float | None = None

    def _direct(self) -> bool:
        return self.proxy is None and self._tunnel_host is None

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        if self._direct():
            self._connect_timeout = timeout = sock.gettimeout()
            sock.settimeout(
                HANDSHAKE_TIMEOUT if timeout is None else min(timeout, HANDSHAKE_TIMEOUT)
            )
        return sock

    def connect(self) -> None:
        if not self._direct():
            super().connect()
            return
        try:
            super().connect()
        except (OSError, ssl.SSLError) as exc:  # the handshake failed (a socket timeout too)
            # The plain-HTTP question gets PROBE_TIMEOUT, within the operation's deadline.
            scope = _scope.get()
            left = None if scope is None else scope.policy.remaining()
            probe = PROBE_TIMEOUT if left is None else min(PROBE_TIMEOUT, left)
            port = self.port or 443
            if probe > 0 and speaks_plain_http(self.host, port, probe):
                raise PlainHttpPort(self, plain_http_reason(self.host, port)) from None
            if isinstance(exc, TimeoutError):
                raise ConnectTimeoutError(
                    self, f"the TLS handshake with {self.host} got no answer in time"
                ) from exc
            raise
        if self.sock is not None:  # the request is sent with the connection's own timeout
            self.sock.settimeout(self._connect_timeout)


_hooking = threading.Lock()


def _read_by_deadline(manager: object) -> None:
    """Have the connections of urllib3 pool manager ``manager`` read by the deadline.

    Its pool classes become subclasses whose connections are :class:`_DeadlineConnection`;
    the pools it holds already are closed (their idle connections would not be), once.
    Anything but a pool manager is left alone.
    """
    classes = getattr(manager, "pool_classes_by_scheme", None)
    if not isinstance(classes, dict):
        return
    with _hooking:
        classes = manager.pool_classes_by_scheme  # type: ignore[attr-defined]
        bounded = {scheme: _bounded_pool(pool) for scheme, pool in classes.items()}
        if bounded == classes:
            return
        manager.pool_classes_by_scheme = bounded  # type: ignore[attr-defined]
        clear = getattr(manager, "clear", None)
        if callable(clear):
            clear()


@functools.cache
def _bounded_pool(pool: type[Any]) -> type[Any]:
    """``pool`` (a urllib3 pool class) opening :class:`_DeadlineConnection` connections."""
    connection = getattr(pool, "ConnectionCls", None)
    if not (isinstance(connection, type) and issubclass(connection, http.client.HTTPConnection)):
        return pool
    if issubclass(connection, _DeadlineConnection):
        return pool
    mixins: tuple[type, ...] = (_DeadlineConnection,)
    if issubclass(connection, HTTPSConnection):
        mixins += (_BoundedHandshake,)
    bounded = type(connection.__name__, (*mixins, connection), {})
    return type(pool.__name__, (pool,), {"ConnectionCls": bounded})


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


@contextlib.contextmanager
def bounded(policy: RetryPolicy) -> Iterator[None]:
    """Requests sent inside are bounded by ``policy``'s deadline (see :func:`check_client`)."""
    token, named = _scope.set(_Scope(policy)), current_request.set("")
    try:
        yield
    finally:
        current_request.reset(named)
        _scope.reset(token)


def _capped(timeout: Any, left: float) -> Any:
    left = max(left, 0.001)
    if isinstance(timeout, tuple):
        return tuple(left if t is None else min(float(t), left) for t in timeout)
    return left if timeout is None else min(float(timeout), left)


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


# -- the driver ---------------------------------------------------------------------------------

#: Threads a program's concurrent sub-programs may use at once (the program decides how many
#: it starts; this only caps a runaway).
_THREADS: Final = 16

_known: weakref.WeakKeyDictionary[CloudantV1, FactsCache] = weakref.WeakKeyDictionary()


class Paced:
    """A client's :class:`~couchids.core.pacing.Pacer`, and the lock its threads share it
    with."""

    def __init__(self, rate: Rate | None) -> None:
        self.pacer = Pacer(rate)
        self.lock = threading.Lock()

    def turn(self, request: Request, policy: RetryPolicy) -> Ticket:
        """A ticket for sending ``request``, once its class's window has room: sleeps until
        then, or sends at the deadline when the room comes after it (the server decides)."""
        while True:
            now = time.monotonic()
            with self.lock:
                ticket = self.pacer.take(request, now)
                if ticket is not None:
                    return ticket
                wait = self.pacer.delay(request, now)
                left = policy.remaining()
                if left is not None and wait >= left:
                    return self.pacer.force(request, now)
            time.sleep(wait)


_pacers: weakref.WeakKeyDictionary[CloudantV1, Paced] = weakref.WeakKeyDictionary()


def _paced(client: CloudantV1) -> Paced:
    paced = _pacers.get(client)
    if paced is None:
        paced = _pacers.setdefault(client, Paced(None))
    return paced


def pacer(client: CloudantV1) -> Pacer:
    """The :class:`~couchids.core.pacing.Pacer` every request of ``client`` waits on (its
    budgets, the 429s it saw); kept while the client lives."""
    return _paced(client).pacer


def set_rate(client: CloudantV1, rate: Rate | str | Mapping[str, int | None] | None) -> None:
    """Pace ``client``'s requests to ``rate`` (see :meth:`Rate.of
    <couchids.core.pacing.Rate.of>`): a plan's name, a mapping of ``reads``/``writes``/
    ``queries`` to requests a second, or ``None`` (learnt from the server's 429s). Requests in
    flight finish as they were paced; what the pacer learnt is forgotten."""
    _pacers[client] = Paced(Rate.of(rate))


def known_facts(client: CloudantV1) -> FactsCache:
    """What couchids has learnt about databases through ``client`` (kept while it lives)."""
    known = _known.get(client)
    if known is None:
        known = _known.setdefault(client, FactsCache())
    return known


def run(client: CloudantV1, program: Program[T]) -> T:
    """Carry out ``program`` (one that emits nothing) with ``client``; return its result."""
    driven = _drive(client, program)
    try:
        value = next(driven)
    except StopIteration as stop:
        result: T = stop.value
        return result
    driven.close()
    raise TypeError(f"a program run for its result emitted {type(value).__name__}")


def stream(client: CloudantV1, program: Program[Any]) -> Generator[Any, None, None]:
    """Carry out ``program`` with ``client``, yielding what it emits as it emits it. Closing
    the iterator stops the program and drops the requests it started."""
    yield from _drive(client, program)


def pages(client: CloudantV1, program: Program[Any]) -> Iterator[list[Any]]:
    """:func:`stream` of a program that emits pages, with the first page read by the call: a
    missing database or a refused request is raised here, not by the first step of the loop
    over the answer."""
    emitted = stream(client, program)
    first = next(emitted, None)
    return _following(first, emitted)


def _following(first: list[Any] | None, rest: Iterator[list[Any]]) -> Iterator[list[Any]]:
    if first is not None:
        yield first
        del first
        yield from rest


def flat(pages: Iterator[list[T]]) -> Iterator[T]:
    """The items of the pages, in order. Each is let go of as it is handed on, so the page
    being worked through holds only the items still to come."""
    for page in pages:
        yield from handed_on(page)


class Rows(Iterator[T]):
    """What a query streams: its rows one at a time, as a ``for`` loop reads them, or a page
    (one request's rows, a list that is the caller's to keep or empty) at a time from
    :meth:`pages`; one or the other. A row handed on is not kept. ``close()`` stops the query
    and drops the requests it started."""

    def __init__(self, pages: Iterator[list[T]]) -> None:
        self._pages: Iterator[list[T]] | None = pages
        self._rows: Iterator[T] | None = None
        self._started: Iterator[Any] = pages

    def __iter__(self) -> Rows[T]:
        return self

    def __next__(self) -> T:
        if self._rows is None:
            self._rows = self._started = flat(self._taken("the rows"))
        return next(self._rows)

    def pages(self) -> Iterator[list[T]]:
        """The rows a page at a time, in the same order."""
        return self._taken("pages()")

    def close(self) -> None:
        """Stop the query; what it started is dropped."""
        close = getattr(self._started, "close", None)
        if close is not None:
            close()

    def _taken(self, how: str) -> Iterator[list[T]]:
        pages, self._pages = self._pages, None
        if pages is None:
            raise InvalidArgumentError(
                f"{how}: this answer is being read already (rows and pages() are one or the "
                "other); ask the query again for another"
            )
        return pages


def after(client: CloudantV1, begin: Program[None], then: Program[Any]) -> Iterator[Any]:
    """What ``then`` emits, once ``begin`` has run (by the call)."""
    run(client, begin)
    return stream(client, then)


def database_facts(client: CloudantV1, db: str, policy: RetryPolicy | None = None) -> DatabaseFacts:
    """:func:`couchids.core.facts.database_facts` through ``client``."""
    policy = policy or RetryPolicy.checked(0, 0)
    return run(client, facts.database_facts(known_facts(client), db, policy))


def _drive(client: CloudantV1, program: Program[T]) -> Generator[Any, None, T]:
    pool: ThreadPoolExecutor | None = None
    outcome: Any = None
    failure: BaseException | None = None
    heard = ""  # what the last request got (``HTTP 503``, ``timeout``), for a retry's record
    try:
        while True:
            try:
                effect = program.throw(failure) if failure is not None else program.send(outcome)
            except StopIteration as stop:
                result: T = stop.value
                return result
            outcome, failure = None, None
            if isinstance(effect, Send):
                outcome, heard = _performed(client, effect)
            elif isinstance(effect, Emit):
                yield effect.value
            elif isinstance(effect, Start):
                if pool is None:
                    pool = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="couchids")
                outcome = pool.submit(run, client, effect.program)
            elif isinstance(effect, Wait):
                handle: Future[Any] = effect.handle  # type: ignore[assignment]
                try:
                    outcome = handle.result()
                except CouchidsError as exc:
                    failure = exc
            elif isinstance(effect, Sleep):
                if effect.retry is not None:
                    log.retrying(effect.retry, effect.seconds, heard)
                time.sleep(effect.seconds)
            else:
                raise TypeError(f"not an effect: {effect!r}")
    finally:
        program.close()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def perform(client: CloudantV1, effect: Send) -> Response | Lost:
    """Send one request through ``client``: its answer, whatever the status, or what was lost.
    Logged at DEBUG on ``couchids.request`` (``couchids.drivers.log``)."""
    return _performed(client, effect)[0]


def _performed(client: CloudantV1, effect: Send) -> tuple[Response | Lost, str]:
    """:func:`perform`'s outcome, logged, and what it was in a few words (``HTTP 503``,
    ``timeout``) for the record of a retry that follows.

    The request waits for room in its class's window (:func:`paced`); a 429 is sent again
    when there is room, while its deadline allows (:meth:`Pacer.again
    <couchids.core.pacing.Pacer.again>`), so a rate limit is no error while time is left."""
    paced = _paced(client)
    request, policy = effect.request, effect.policy
    first_refused: float | None = None
    while True:
        ticket = paced.turn(request, policy)
        started = time.perf_counter()
        outcome, failure = _exchange(client, effect)
        status = outcome.status if isinstance(outcome, Response) else None
        log.sent(effect, status, failure, (time.perf_counter() - started) * 1000)
        heard = f"HTTP {status}" if status is not None else failure or "no answer"
        refused = status == 429 or (isinstance(outcome, Lost) and outcome.error.status == 429)
        now = time.monotonic()
        with paced.lock:
            if isinstance(outcome, Response):
                paced.pacer.answered(
                    ticket,
                    now,
                    outcome.status,
                    outcome.retry_after,
                    refused_before=outcome.refused_before,
                )
            else:
                paced.pacer.answered(ticket, now, 429 if refused else 0)
            if not refused:
                return outcome, heard
            first_refused = now if first_refused is None else first_refused
            wait = paced.pacer.again(request, now, first_refused, policy.remaining())
        if wait is None:
            return outcome, heard
        log.retrying(effect, wait, f"{heard} (rate limited: waiting for room)")


def _exchange(client: CloudantV1, effect: Send) -> tuple[Response | Lost, str | None]:
    """:func:`perform`'s outcome, and when it is :class:`Lost`, what happened
    (:func:`failure_kind`)."""
    sent, policy = effect.request, effect.policy
    headers = request_headers(sent, client.service_url)
    with bounded(policy):
        try:
            prepared = client.prepare_request(
                method=sent.method,
                url=sent.path,
                headers=headers,
                params=dict(sent.params) if sent.params else None,
                data=sent.body,
            )
            answer = client.send(prepared, stream=True)
            raw = answer.get_result()
            if not isinstance(raw, requests.Response):  # 204, or a HEAD
                return Response(int(answer.get_status_code() or 0), b""), None
            try:
                return response_of(raw), None
            finally:
                raw.close()
        except ApiException as exc:
            if exc.http_response is not None and not _login(exc):
                hint = answer_hint(client, exc.http_response.status_code)
                return response_of(exc.http_response, hint=hint, cause=sanitized(exc)), None
            return _lost(exc, effect)
        except FAILURES as exc:
            return _lost(exc, effect)


def _lost(exc: BaseException, effect: Send) -> tuple[Lost, str]:
    error = server_error(exc, effect.db, effect.policy)
    error.__cause__ = sanitized(exc)
    error.__suppress_context__ = True
    lost = Lost(error, may_have_run(exc), is_transient(exc), _login(exc))
    kind = failure_kind(exc, effect.policy)
    return lost, f"login failed ({kind})" if lost.login else kind


def failure_kind(exc: BaseException, policy: RetryPolicy | None = None) -> str:
    """What became of a request that failed with ``exc``, in a few words for a log record:
    ``timeout``, ``connection refused``, ``connection closed``, ``HTTP 503 after the client's
    retries``, ... Never the exception's text, which can quote a URL; ``policy`` tells a
    read cut short by its deadline."""
    if isinstance(exc, TokenTimeout):
        return "token request timeout"
    if isinstance(exc, LoginRefused):
        return f"refused (HTTP {exc.status})"
    if _plain_http(exc) is not None:
        return "plain HTTP port"
    if isinstance(exc, StopIteration):
        return "no session cookie"
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return "connect timeout"
    status = status_of(exc)
    if isinstance(exc, requests.Timeout) or (
        policy is not None and policy.expired() and not status
    ):
        return "timeout"
    if status:
        spent = isinstance(exc, requests.exceptions.RetryError)
        return f"HTTP {status}" + (" after the client's retries" if spent else "")
    if isinstance(
        exc, requests.exceptions.ChunkedEncodingError | requests.exceptions.ContentDecodingError
    ):
        return "answer broke off"
    if isinstance(exc, requests.ConnectionError):
        found = _ERRNO.search(str(exc))
        if found:
            return found.group(1).strip().lower()
        cause = exc.args[0] if exc.args else None
        reason = cause.reason if isinstance(cause, MaxRetryError) else cause
        return (
            "connection failed" if isinstance(reason, NewConnectionError) else "connection closed"
        )
    return type(exc).__name__


#: Bytes read from an answer's body at a time: requests' ``content`` reads 10 KiB at a time,
#: which made reading a 20 MB body from loopback take 1.7 times as long as in 1 MiB chunks.
READ_CHUNK: Final = 1 << 20


def response_of(
    raw: requests.Response, *, hint: str = "", cause: BaseException | None = None
) -> Response:
    """A ``requests`` answer as a :class:`~couchids.core.effects.Response` (its body read, in
    chunks of :data:`READ_CHUNK`, unless read already)."""
    return Response(
        raw.status_code,
        b"".join(raw.iter_content(READ_CHUNK)),
        raw.headers.get("Content-Type") or "",
        raw.headers.get("Retry-After"),
        hint,
        cause,
        _refused_before(raw),
    )


def _refused_before(raw: requests.Response) -> int:
    """The 429s the client's own retries (urllib3's, with ``enable_retries()``) met before
    ``raw``: the retries' history, which only urllib3 keeps."""
    retries = getattr(getattr(raw, "raw", None), "retries", None)
    history = getattr(retries, "history", None) or ()
    return sum(1 for attempt in history if getattr(attempt, "status", None) == 429)
