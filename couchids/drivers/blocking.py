"""The blocking driver: every request couchids sends through an ``ibmcloudant`` client goes here.

:func:`run` and :func:`stream` carry out the effects of :mod:`couchids.core.effects` programs
with the caller's ``CloudantV1`` client, so authentication, the client's own retries
(``enable_retries()``) and timeouts are the client's; concurrent sub-programs run on threads.
Failures that are not an HTTP answer become couchids exceptions here, their causes masked;
HTTP answers of any status go back to the program.
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
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, Final, Generic, TypeVar
from urllib.parse import urlsplit

import jwt
import requests
from ibm_cloud_sdk_core import ApiException
from ibm_cloud_sdk_core.token_managers.token_manager import TokenManager
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from requests.adapters import BaseAdapter
from requests.exceptions import ChunkedEncodingError
from requests.utils import prepend_scheme_if_needed, select_proxy
from urllib3.connection import HTTPSConnection
from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ResponseError,
)
from urllib3.util.retry import Retry

from couchids.core import answers, facts
from couchids.core.answers import current_request, excerpt
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
from couchids.core.pacing import Pacer, Rate
from couchids.core.pages import handed_on
from couchids.core.policy import RetryPolicy
from couchids.drivers import log
from couchids.drivers.config import mask_sdk_logs, remember_secrets, scrub
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
P = TypeVar("P")

# ibmcloudant logs every request's URL at DEBUG, credentials and all.
mask_sdk_logs()

# When the client's retries (``enable_retries()``) run out on an error status, requests raises
# a ``RetryError`` around urllib3's ``MaxRetryError(reason=ResponseError(...))``: the last
# status survives only in that message, written from this template.
_RETRY_STATUS = re.compile(
    re.escape(ResponseError.SPECIFIC_ERROR).replace(re.escape("{status_code}"), r"(\d{3})")
)
# requests wraps the socket error in two layers of urllib3 text; its errno line is the news.
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


def _reason(exc: BaseException) -> Any:
    """What a ``requests`` error wraps: urllib3's reason when that is a ``MaxRetryError``."""
    cause = exc.args[0] if isinstance(exc, requests.RequestException) and exc.args else None
    return cause.reason if isinstance(cause, MaxRetryError) else cause


def status_of(exc: BaseException) -> int:
    """The HTTP status a failed request ended with (the client's spent retries too); 0 when no
    answer came back."""
    if isinstance(exc, ApiException):
        return int(exc.status_code or 0)
    if isinstance(exc, requests.exceptions.RetryError):
        found = _RETRY_STATUS.search(str(_reason(exc)))
        return int(found.group(1)) if found else 0
    return 0


# -- what went wrong, in words ------------------------------------------------------------------


def check_client(client: object) -> CloudantV1:
    """``client`` if it is a ``CloudantV1``, with couchids' deadlines able to reach its requests
    (:class:`_DeadlineAdapter` on its session, :class:`BoundedTokens` on a token manager that
    sends its own requests) and its logins checked; put back if replaced since."""
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
    remember_secrets(client)
    return client


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


def timed_out(head: str, policy: RetryPolicy, token: bool = False) -> ServerTimeoutError:
    """The deadline passed while the request was sent, or (``token``) before, while the
    authenticator waited for its token service (both drivers)."""
    limit = f"{policy.timeout:g} s" if policy.timeout else "its limit"
    if token:
        return ServerTimeoutError(
            f"{head}: the authentication service did not answer the token request within {limit}"
        )
    return ServerTimeoutError(f"{head}: the server did not answer within {limit}")


def broke_off(head: str, reason: str = "", *, mid_body: bool = False) -> ServerError:
    """The connection closed (or was reset: ``reason``, the socket's words) once the request
    was on its way, before the whole answer came; ``mid_body`` when part of the body had come
    (both drivers)."""
    where = "mid-body" if mid_body else "before the whole answer came"
    said = f" ({reason})" if reason else ""
    return ServerError(f"{head}: the answer broke off: the connection closed {where}{said}")


#: A login's success answer that ibmcloudant could not read, told as any answer cut short is.
_UNREAD_LOGIN = "the login's answer could not be read: "


def _classified(exc: BaseException, effect: Send) -> tuple[str, ServerError]:
    """What became of a request that failed with ``exc``, in a few words for a log record
    (never the exception's text, which can quote a URL), and the couchids exception for it,
    naming the operation, the database and the request."""
    policy, db, sent = effect.policy, effect.db, _sent(exc) or current_request.get()
    head = f"{policy.operation} on {db!r}" + (f" ({sent})" if sent else "")
    status = status_of(exc)
    plain = _plain_http(exc)
    if isinstance(exc, LoginRefused):
        return f"refused (HTTP {exc.status})", UnauthorizedError(f"{head}: {exc}", exc.status)
    if plain is not None:
        return "plain HTTP port", ServerError(f"{head}: could not reach the server: {plain}")
    if isinstance(exc, StopIteration):
        # ibmcloudant's couchdb_session login looks for the AuthSession cookie with next().
        return "no session cookie", UnauthorizedError(
            f"{head}: the couchdb_session login (POST /_session) got no session cookie: the "
            "server refused the user name and password (check CLOUDANT_USERNAME and "
            "CLOUDANT_PASSWORD) or is not CouchDB",
            401,
        )
    if isinstance(exc, requests.Timeout) or (policy.expired() and not status):
        token = isinstance(exc, TokenTimeout)
        connect = isinstance(exc, requests.exceptions.ConnectTimeout)
        kind = "token request timeout" if token else "connect timeout" if connect else "timeout"
        return kind, timed_out(head, policy, token)
    spent = " after the client's retries" if isinstance(exc, requests.exceptions.RetryError) else ""
    kind = f"HTTP {status}{spent}" if status else type(exc).__name__
    if isinstance(exc, ApiException) and 200 <= status < 300:
        # ibmcloudant could not read a success answer that claimed to be JSON (a token's).
        body = exc.http_response.content if exc.http_response is not None else b""
        return kind, ServerError(f"{head}: {_UNREAD_LOGIN}{answers.describe(body)}", status)
    if isinstance(exc, requests.exceptions.JSONDecodeError):
        # The same of an IAM token's, read by the SDK with requests: the server was reached.
        said = exc.doc.encode() if isinstance(exc.doc, str) else bytes(exc.doc)
        return "unreadable login answer", ServerError(
            f"{head}: {_UNREAD_LOGIN}{answers.describe(said)}"
        )
    if isinstance(exc, ApiException) and exc.http_response is not None:
        # A login's own answer (a refused one is a LoginRefused): its status, its words.
        answer = response_of(exc.http_response)
        return kind, answers.status_error(answer, policy, db, sent)
    if status == 429:
        return kind, RateLimitedError(
            f"{head}: rate limited (HTTP 429) after the client's retries, and no room for "
            f"the request before the call's deadline; {RateLimitedError.ADVICE}",
            status,
        )
    if status:
        return kind, ServerError(
            f"{head}: the server answered HTTP {status}: {excerpt(str(exc))}", status
        )
    if not isinstance(exc, ApiException | requests.RequestException):
        return kind, ServerError(
            f"{head}: ibmcloudant could not use an answer (authentication's token request or "
            f"the server's): {type(exc).__name__}: {_network_reason(exc)}"
        )
    if isinstance(
        exc, requests.exceptions.ChunkedEncodingError | requests.exceptions.ContentDecodingError
    ):
        return "answer broke off", broke_off(head, mid_body=True)
    if isinstance(exc, requests.ConnectionError):
        found = _ERRNO.search(str(exc))
        closed = "failed" if isinstance(_reason(exc), NewConnectionError) else "closed"
        kind = found.group(1).strip().lower() if found else f"connection {closed}"
        aborted = _reason(exc)
        if isinstance(aborted, ProtocolError):
            # urllib3's "Connection aborted.": the server was reached, and closed or reset the
            # connection before its answer (a restart, a proxy giving up).
            cause = aborted.args[-1] if aborted.args else None
            reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else ""
            return kind, broke_off(head, reason)
    return kind, ServerError(f"{head}: could not reach the server: {_network_reason(exc)}")


def sanitized(exc: BaseException, db: str) -> BaseException | None:
    """A copy of an ``ibmcloudant``/``requests`` exception of a request to ``db`` to chain as a
    cause, its text masked (the original's text can hold the server URL with its credentials,
    or an answer echoing them); it keeps the type, the status and the HTTP response. ``None``
    for other errors."""
    if isinstance(exc, ApiException):
        message = scrub(str(exc.message), names=[db])
        masked: BaseException = ApiException(
            exc.status_code, message=message, http_response=exc.http_response
        )
        return masked
    if isinstance(exc, requests.RequestException):
        text = scrub(str(exc), names=[db])
        try:
            copy: BaseException = type(exc)(text)
            return copy
        except Exception:  # a subclass with another signature
            return requests.RequestException(text)
    return None


def _network_reason(exc: BaseException) -> str:
    """The short cause of a network failure, such as ``Connection refused``."""
    found = _ERRNO.search(str(exc))
    if found:
        return found.group(1).strip()
    return f"{type(exc).__name__}: {excerpt(str(exc))}"


def _plain_http(exc: BaseException) -> str | None:
    """The reason of a :class:`PlainHttpPort` that ``exc`` (requests' error) wraps, if any."""
    reason = _reason(exc) if isinstance(exc, requests.ConnectionError) else None
    return reason.reason if isinstance(reason, PlainHttpPort) else None


def lost(exc: BaseException, effect: Send, login: bool | None = None) -> tuple[Lost, str]:
    """What a request that failed with ``exc`` lost, and what became of it in a few words.
    ``login=True``: authentication failed before the request was sent."""
    kind, error = _classified(exc, effect)
    error.__cause__ = sanitized(exc, effect.db)
    error.__suppress_context__ = True
    if login is None:
        status = status_of(exc)
        # After a 5xx or a lost answer the server may have carried the request out; after a
        # 4xx, a refused login or a connection never made it did not.
        never = isinstance(exc, requests.exceptions.ConnectTimeout | LoginRefused)
        never = never or isinstance(_reason(exc), NewConnectionError)
        if isinstance(exc, ApiException | requests.exceptions.RetryError):
            transient = status in TRANSIENT_STATUSES
        else:
            lossy = requests.ConnectionError | requests.Timeout | ChunkedEncodingError
            transient = isinstance(exc, lossy) and _plain_http(exc) is None
        maybe_run = not never and (status == 0 or status >= 500)
        outcome = Lost(error, maybe_run, transient, _login(exc))
    else:
        outcome = Lost(error, maybe_run=False, transient=False, login=login)
    return outcome, f"login failed ({kind})" if outcome.login else kind


#: What a request can fail with: the SDK's and requests' errors, a refused login, the
#: ``StopIteration`` of a ``couchdb_session`` login answered without a session cookie, and what
#: ibmcloudant's authenticators raise when a token service's answer is not of the shape they
#: expect.
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

#: The policy of the couchids operation a thread is sending a request for (:func:`bounded`);
#: :data:`~couchids.core.answers.current_request` names the request the session sent last.
_scope: ContextVar[RetryPolicy | None] = ContextVar("couchids_scope", default=None)


def _remaining() -> float | None:
    policy = _scope.get()
    return None if policy is None else policy.remaining()


class _DeadlineAdapter(BaseAdapter):
    """A transport adapter that caps each request's timeouts by the current deadline, and has
    the pools it sends through read their answers by it (:func:`_read_by_deadline`)."""

    def __init__(self, inner: BaseAdapter) -> None:
        super().__init__()
        self.inner = inner
        self.answering: tuple[Retry, BaseAdapter] | None = None

    def _sender(self) -> BaseAdapter:
        """What sends a couchids request: the wrapped adapter, or, when its retries
        (``enable_retries()``) end on an error status by raising urllib3's "Max retries
        exceeded", a copy sharing its pools whose retries hand back the last answer instead,
        so that couchids reads the server's words in it (as the asyncio driver does)."""
        retries = getattr(self.inner, "max_retries", None)
        if not isinstance(retries, Retry) or not retries.raise_on_status:
            return self.inner
        made = self.answering
        if made is None or made[0] is not retries:
            # Its state as it is (copy.copy would make requests' adapter new pools).
            sender = object.__new__(type(self.inner))
            vars(sender).update(vars(self.inner), max_retries=retries.new(raise_on_status=False))
            made = self.answering = (retries, sender)
        return made[1]

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        # The adapter's pool manager may have been made anew; a proxy's is made on first use.
        _read_by_deadline(getattr(self.inner, "poolmanager", None))
        proxies, manager_for = kwargs.get("proxies"), getattr(self.inner, "proxy_manager_for", None)
        proxy = select_proxy(request.url or "", proxies) if proxies else None
        if proxy and callable(manager_for):
            # A bad proxy URL: the adapter's send reports it in its words.
            with contextlib.suppress(Exception):
                _read_by_deadline(manager_for(prepend_scheme_if_needed(proxy, "http")))
        left = _remaining()
        if _scope.get() is not None:
            current_request.set(f"{request.method} {urlsplit(request.url or '').path}")
        if left is not None:
            if left <= 0:
                raise requests.exceptions.ReadTimeout("no time left", request=request)
            kwargs["timeout"] = _capped(kwargs.get("timeout"), left)
        sender = self._sender() if _scope.get() is not None else self.inner
        response: requests.Response = sender.send(request, **kwargs)
        return response

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        # Settings of the wrapped adapter (max_retries, ...) stay readable.
        return getattr(self.inner, name)


class _DeadlineAnswer(http.client.HTTPResponse):
    """``http.client``'s answer, whose every read from the socket (status line, headers, body)
    ends by the deadline of the couchids operation that sent the request.

    A read timeout bounds each read, not the answer: a server sending a byte every 50 ms keeps
    a client reading for as long as it likes. Past the deadline, a read raises the socket's
    ``TimeoutError``, which urllib3 and requests report as a read timeout.
    """

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        policy = _scope.get()
        if policy is not None and policy.deadline is not None:
            # Nothing is read yet: the socket's stream can change hands whole.
            stream = _DeadlineReads(self.fp.detach(), sock, policy.deadline)
            self.fp = io.BufferedReader(stream, io.DEFAULT_BUFFER_SIZE)


#: Seconds a read may wait past the deadline: the socket's timeout is lowered to the time left
#: at most this often, not before each of the thousands of reads of a large answer.
READ_SLACK: Final = 0.01


class _DeadlineReads(io.RawIOBase):
    """A socket's reads (``raw``, its ``SocketIO``), each waiting at most until ``deadline``
    (and :data:`READ_SLACK`); the socket's own timeout is put back on closing."""

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


class PlainHttpPort(NewConnectionError):
    """An ``https://`` connection to a port that speaks plain HTTP: never made, and not worth
    trying again."""

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
            left = _remaining()
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
    """Have the connections of urllib3 pool manager ``manager`` read by the deadline (and an
    HTTPS one's handshake bounded): its pool classes are :func:`_bounded_pool`'s, and the pools
    it holds already are closed, once. Anything but a pool manager is left alone."""
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
    """``pool`` (a urllib3 pool class) opening connections whose answers are
    :class:`_DeadlineAnswer` (and HTTPS ones :class:`_BoundedHandshake`)."""
    connection = getattr(pool, "ConnectionCls", None)
    if not (isinstance(connection, type) and issubclass(connection, http.client.HTTPConnection)):
        return pool
    if connection.response_class is _DeadlineAnswer:
        return pool
    mixins = (_BoundedHandshake,) if issubclass(connection, HTTPSConnection) else ()
    bounded = type(connection.__name__, (*mixins, connection), {"response_class": _DeadlineAnswer})
    return type(pool.__name__, (pool,), {"ConnectionCls": bounded})


class TokenTimeout(requests.exceptions.ConnectTimeout):
    """An authenticator's token request that had not ended by the operation's deadline (a
    ``ConnectTimeout``: the request the token was for was never sent)."""


#: Seconds a held token must stay usable for ``get_token`` to run without a thread of its
#: own: ibmcloudant compares whole seconds, so its answer may change at the next one.
TOKEN_MARGIN: Final = 2.0


class BoundedTokens:
    """A token manager's ``get_token`` that a couchids operation waits for until its deadline.

    ibmcloudant's token managers (IAM, container, VPC, Cloud Pak) send their token requests
    outside the client's session, with its timeouts (150 s to read), and make every later
    caller wait up to a minute for a request under way. So when ``get_token`` would send a
    request, it runs in a thread of its own, which the operations needing a token share and
    wait for until their deadlines (:class:`TokenTimeout`); while a renewal is under way, the
    token held is still used, as ibmcloudant does. After a failed request the next operation
    asks again at once. Without a deadline, or when the token held will do, it is
    ``get_token``.
    """

    def __init__(self, manager: TokenManager) -> None:
        self.manager = manager
        self.get_token: Callable[[], Any] = manager.get_token
        self.lock = threading.Lock()
        self.pending: Future[Any] | None = None

    def __call__(self) -> Any:
        left = _remaining()
        if left is None or self._good():
            return self.get_token()
        with self.lock:
            pending = self.pending
            if pending is None or pending.done():
                pending = self.pending = Future()
                threading.Thread(
                    target=self._run, args=(pending,), name="couchids-token", daemon=True
                ).start()
        if not futures.wait([pending], max(left, 0.0)).done:
            raise TokenTimeout("the token request got no answer in time")
        return pending.result()

    def _good(self) -> bool:
        """Whether ``get_token`` will answer with the token held, sending nothing, for
        :data:`TOKEN_MARGIN` seconds yet: neither expired (IAM's count 10 s early) nor due
        for renewal."""
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

    def _run(self, pending: Future[Any]) -> None:
        try:
            pending.set_result(self.get_token())
        except BaseException as exc:  # kept for the waiting operations, never printed
            # No request is under way any more (ibmcloudant leaves the time of a failed one).
            self.manager.request_time = 0
            pending.set_exception(exc)


@contextlib.contextmanager
def bounded(policy: RetryPolicy) -> Iterator[None]:
    """Requests sent inside are bounded by ``policy``'s deadline (see :func:`check_client`)."""
    token, named = _scope.set(policy), current_request.set("")
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
    """Whether ``exc`` ended an authentication login rather than the request itself: a failure
    before the request reached the client's session, or a login's own request. Not retried
    here: ibmcloudant paces a new login after a failed one, and retries its token requests."""
    if _scope.get() is not None and not current_request.get():
        return True
    sent = (_sent(exc), current_request.get())
    return any(one.endswith(("/_session", "/identity/token")) for one in sent)


# -- pacing (both drivers) ----------------------------------------------------------------------

_pacers: weakref.WeakKeyDictionary[CloudantV1, Pacer] = weakref.WeakKeyDictionary()
#: Held while a pacer is asked or told something (microseconds): the threads of every client.
_pacing = threading.Lock()


def pacer(client: CloudantV1) -> Pacer:
    """The :class:`~couchids.core.pacing.Pacer` every request of ``client`` waits on (its
    budgets, the 429s it saw); kept while the client lives."""
    found = _pacers.get(client)
    return found if found is not None else _pacers.setdefault(client, Pacer(None))


def set_rate(client: CloudantV1, rate: Rate | str | Mapping[str, int | None] | None) -> None:
    """Pace ``client``'s requests to ``rate`` (see :meth:`Rate.of
    <couchids.core.pacing.Rate.of>`): a plan's name, a mapping of ``reads``/``writes``/
    ``queries`` to requests a second, or ``None`` (learnt from the server's 429s). Requests in
    flight finish as they were paced; what the pacer learnt is forgotten."""
    _pacers[client] = Pacer(Rate.of(rate))


def paced(pacer: Pacer, effect: Send) -> Generator[float | None, Any, tuple[Response | Lost, str]]:
    """One request as ``pacer`` lets it go, driven by either driver: yields the seconds to wait
    for room in its class's window, or ``None`` to be sent what the exchange gave (the outcome,
    and the failure in a few words). A 429 is sent again once its class has room, while its
    deadline allows (at the deadline the server decides). Returns the outcome and what it was
    in a few words (``HTTP 503``, ``timeout``), for the record of a retry."""
    request, policy = effect.request, effect.policy
    since: float | None = None
    while True:
        with _pacing:
            now, left = time.monotonic(), policy.remaining()
            wait = pacer.delay(request, now)
            due = wait <= 0 or (left is not None and wait >= left)
            ticket = pacer.force(request, now) if due else None
        if ticket is None:
            yield wait
            continue
        started = time.perf_counter()
        outcome, failure = yield None
        answer = isinstance(outcome, Response)
        status = outcome.status if answer else outcome.error.status
        log.sent(
            effect, status if answer else None, failure, (time.perf_counter() - started) * 1000
        )
        heard = f"HTTP {status}" if answer else failure or "no answer"
        with _pacing:
            now = time.monotonic()
            if answer:
                pacer.answered(
                    ticket, now, status, outcome.retry_after, refused_before=outcome.refused_before
                )
            else:
                pacer.answered(ticket, now, 429 if status == 429 else 0)
            since = now if since is None else since
            again = pacer.again(request, now, since, policy.remaining()) if status == 429 else None
        if again is None:
            return outcome, heard
        log.retrying(effect, again, heard, paced=True)


# -- the driver ---------------------------------------------------------------------------------

#: Threads a program's concurrent sub-programs may use at once (the program decides how many
#: it starts; this only caps a runaway).
_THREADS: Final = 16

_known: weakref.WeakKeyDictionary[CloudantV1, FactsCache] = weakref.WeakKeyDictionary()


def known_facts(client: CloudantV1) -> FactsCache:
    """What couchids has learnt about databases through ``client`` (kept while it lives)."""
    known = _known.get(client)
    return known if known is not None else _known.setdefault(client, FactsCache())


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


class OneReading(Generic[P]):
    """An answer's pages (``P``), read once: as rows or as pages, one or the other."""

    def __init__(self, pages: P) -> None:
        self._pages: P | None = pages
        self._rows: Any = None
        self._started: Any = pages

    def _taken(self, how: str) -> P:
        pages, self._pages = self._pages, None
        if pages is None:
            raise InvalidArgumentError(
                f"{how}: this answer is being read already (rows and pages() are one or the "
                "other); ask the query again for another"
            )
        return pages


class Rows(OneReading[Iterator[list[T]]], Iterator[T]):
    """What a query streams: its rows one at a time, as a ``for`` loop reads them, or a page
    (one request's rows, a list that is the caller's to keep or empty) at a time from
    :meth:`pages`; one or the other. A row handed on is not kept. ``close()`` stops the query
    and drops the requests it started."""

    def __iter__(self) -> Rows[T]:
        return self

    def __next__(self) -> T:
        if self._rows is None:
            self._rows = self._started = flat(self._taken("the rows"))
        row: T = next(self._rows)
        return row

    def pages(self) -> Iterator[list[T]]:
        """The rows a page at a time, in the same order."""
        return self._taken("pages()")

    def close(self) -> None:
        """Stop the query; what it started is dropped."""
        close = getattr(self._started, "close", None)
        if close is not None:
            close()


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
    last = ""  # what the last request got (``HTTP 503``, ``timeout``), for a retry's record
    try:
        while True:
            try:
                effect = program.throw(failure) if failure is not None else program.send(outcome)
            except StopIteration as stop:
                result: T = stop.value
                return result
            outcome, failure = None, None
            if isinstance(effect, Send):
                outcome, last = _performed(client, effect)
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
                    log.retrying(effect.retry, effect.seconds, last)
                time.sleep(effect.seconds)
            else:
                raise TypeError(f"not an effect: {effect!r}")
    finally:
        program.close()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _performed(client: CloudantV1, effect: Send) -> tuple[Response | Lost, str]:
    """One request sent through ``client`` as its pacer lets it go (:func:`paced`): its answer,
    whatever the status, or what was lost; and what it was in a few words."""
    steps = paced(pacer(client), effect)
    try:
        step = next(steps)
        while True:
            if step is None:
                step = steps.send(_exchange(client, effect))
            else:
                time.sleep(step)
                step = next(steps)
    except StopIteration as stop:
        done: tuple[Response | Lost, str] = stop.value
        return done


def _exchange(client: CloudantV1, effect: Send) -> tuple[Response | Lost, str | None]:
    """Send one request: its answer, whatever the status, or what was lost and what happened
    (:func:`lost`)."""
    sent = effect.request
    with bounded(effect.policy):
        try:
            answer = client.send(prepare(client, sent), stream=True)
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
                return response_of(
                    exc.http_response, hint=hint, cause=sanitized(exc, effect.db)
                ), None
            return lost(exc, effect)
        except FAILURES as exc:
            return lost(exc, effect)


def prepare(client: CloudantV1, sent: Request) -> dict[str, Any]:
    """``sent`` as ``client`` prepares it: its URL, headers and authentication (which may log
    in or ask for a token first)."""
    prepared: dict[str, Any] = client.prepare_request(
        method=sent.method,
        url=sent.path,
        headers=request_headers(sent, client.service_url),
        params=dict(sent.params) if sent.params else None,
        data=sent.body,
    )
    return prepared


#: Bytes read from an answer's body at a time: requests' ``content`` reads 10 KiB at a time,
#: which made reading a 20 MB body from loopback take 1.7 times as long as in 1 MiB chunks.
READ_CHUNK: Final = 1 << 20


def response_of(
    raw: requests.Response, *, hint: str = "", cause: BaseException | None = None
) -> Response:
    """A ``requests`` answer as a :class:`~couchids.core.effects.Response` (its body read, in
    chunks of :data:`READ_CHUNK`, unless read already)."""
    # The 429s the client's own retries (urllib3's, with enable_retries()) met before it.
    history = getattr(getattr(getattr(raw, "raw", None), "retries", None), "history", None)
    return Response(
        raw.status_code,
        b"".join(raw.iter_content(READ_CHUNK)),
        raw.headers.get("Content-Type") or "",
        raw.headers.get("Retry-After"),
        hint,
        cause,
        sum(1 for attempt in history or () if getattr(attempt, "status", None) == 429),
    )
