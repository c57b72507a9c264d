"""The asyncio driver: :class:`AsyncClient` sends the requests of couchids' programs over
``httpx`` (``pip install 'couchids[async]'``), prepared and authenticated by an ``ibmcloudant``
client; concurrent parts of an operation are tasks on the caller's loop. The asyncio guide
(``docs/guide/asyncio.md``) describes what users see.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import sys
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from concurrent.futures import Future
from typing import Any, Final, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from ibmcloudant.cloudant_v1 import CloudantV1
from requests.utils import prepend_scheme_if_needed

from couchids.errors import MissingExtraError

try:
    import httpx
except ModuleNotFoundError as missing:  # httpx, or a module it needs
    raise MissingExtraError(
        f"couchids.aio needs httpx, which is not installed ({missing}): "
        "pip install 'couchids[async]'",
        name=missing.name,
    ) from missing

from couchids.core.arguments import count as check_count
from couchids.core.effects import (
    Emit,
    Lost,
    Program,
    Response,
    Send,
    Sleep,
    Start,
    Wait,
)
from couchids.core.facts import FactsCache
from couchids.core.pacing import Pacer, Rate
from couchids.core.pages import handed_on
from couchids.core.policy import retry_after_seconds
from couchids.drivers import log
from couchids.drivers.blocking import (
    FAILURES,
    OneReading,
    broke_off,
    lost,
    paced,
    prepare,
    timed_out,
)
from couchids.drivers.config import remember_secrets
from couchids.drivers.connecting import cloudant_client
from couchids.drivers.credentials import answer_hint, check_logins
from couchids.drivers.tls import HANDSHAKE_TIMEOUT, plain_http_reason, speaks_plain_http
from couchids.errors import CouchidsError, InvalidArgumentError, ServerError

__all__ = [
    "CONNECTIONS",
    "AsyncClient",
    "AsyncRows",
    "after",
    "check_client",
    "connect",
    "flat",
    "known_facts",
    "new_instance",
    "pages",
    "run",
    "stream",
]

T = TypeVar("T")

#: Authenticators that never send a request of their own: they prepare a request inline.
_INLINE_AUTH: Final = frozenset({"noauth", "basic", "bearertoken"})
#: Requests an :class:`AsyncClient` has in flight at once, and the connections it keeps, by
#: default; couchids queues the others itself. httpx's pool spends time on each connection it
#: holds per request it places: bench/bench_aio.py's 50 concurrent ``latest`` calls took 71,
#: 102 and 129 ms with 10, 25 and 50 connections on CouchDB 3.4.3 (183, 159, 215 ms at 20 ms
#: a round trip).
CONNECTIONS: Final = 10


class AsyncClient:
    """An asyncio client for couchids: an ``httpx.AsyncClient`` sending requests that a
    ``CloudantV1`` client prepares (its URL, headers and authentication).

    Use it as an async context manager, or call :meth:`aclose` when done.

    Args:
        cloudant: the blocking client whose configuration and authenticator are used.
        http: the ``httpx.AsyncClient`` to send with (default: a new one keeping
            ``connections`` connections, closed with this, sending through the proxies
            ``cloudant`` sends through and checking TLS as it does: its ``http_config``'s
            ``proxies``, ``verify`` and ``cert``, its session's ``proxies``,
            ``set_disable_ssl_verification``; the ``*_PROXY`` variables otherwise).
        connections: the most requests in flight at once; the others wait their turn in
            couchids, not in httpx's pool (with ``http`` given, at most as many as its pool
            keeps for the server: requests let go to wait in its queue would reach the
            server later than the pacer counted them, and meet 429 answers).
        rate: the requests a second of each class to keep to (``"lite"``, ``"standard"``
            for one block, or ``{"reads": 100, "writes": 50, "queries": 5}``); ``None``:
            learnt from the server's 429s (see :mod:`couchids.core.pacing`).
    """

    def __init__(
        self,
        cloudant: CloudantV1,
        http: httpx.AsyncClient | None = None,
        *,
        connections: int = CONNECTIONS,
        rate: Rate | str | Mapping[str, int | None] | None = None,
    ) -> None:
        if not isinstance(cloudant, CloudantV1):
            raise InvalidArgumentError(
                f"cloudant={type(cloudant).__name__}: pass an ibmcloudant CloudantV1 client"
            )
        check_count("connections", connections, 1)
        self.cloudant = cloudant
        self._owned = http is None
        self.http = http if http is not None else _http_client(connections, cloudant)
        if http is not None:  # its pool's queue would be out of the pacer's sight
            connections = min(connections, _pool_size(http, cloudant.service_url or ""))
        self._in_flight = asyncio.Semaphore(connections)
        #: What couchids has learnt about databases through this client.
        self.facts = FactsCache()
        #: What every request of this client waits on: room in its class's window.
        self.pacer = Pacer(Rate.of(rate))
        check_logins(cloudant)
        remember_secrets(cloudant)
        self._inline = cloudant.authenticator.authentication_type().lower() in _INLINE_AUTH

    def __repr__(self) -> str:
        return f"<couchids.aio.AsyncClient {type(self.cloudant.authenticator).__name__}>"

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the ``httpx`` client, if this client made it."""
        if self._owned:
            await self.http.aclose()

    async def perform(self, effect: Send) -> Response | Lost:
        """Send one request: its answer, whatever the status, or what was lost. Logged at
        DEBUG on ``couchids.request`` (``couchids.drivers.log``)."""
        return (await self._performed(effect))[0]

    async def _performed(self, effect: Send) -> tuple[Response | Lost, str]:
        """:meth:`perform`'s outcome as the pacer lets the request go
        (:func:`~couchids.drivers.blocking.paced`), and what it was in a few words.

        The pacer is asked while the request holds one of the ``connections`` places, so it
        counts the request when it leaves: one let go while it still waited for a place would
        reach the server in a later window than the pacer counted it in (a 429 there)."""
        steps = paced(self.pacer, effect)
        place = _Place(self._in_flight)
        try:
            await place.take(effect)
            step = next(steps)
            while True:
                if step is None:
                    step = steps.send(await self._exchange(effect, place))
                else:
                    place.give()  # waiting for room in the window, not for the server
                    await asyncio.sleep(step)
                    await place.take(effect)
                    step = next(steps)
        except StopIteration as stop:
            done: tuple[Response | Lost, str] = stop.value
            return done
        finally:
            place.give()

    async def _exchange(self, effect: Send, place: _Place) -> tuple[Response | Lost, str | None]:
        """:meth:`perform`'s outcome, and when it is :class:`Lost`, what happened."""
        left = effect.policy.remaining()
        if left is not None and left <= 0:
            return _timed_out(effect), "timeout"
        try:
            async with asyncio.timeout(left):
                prepared = await self._prepared(effect)
        except TimeoutError:
            return _timed_out(effect, token=True), "token request timeout"
        if isinstance(prepared, tuple):
            return prepared
        try:
            async with asyncio.timeout(effect.policy.remaining()):
                return await self._send(effect, prepared, place)
        except TimeoutError:
            return _timed_out(effect), "timeout"

    async def _prepared(self, effect: Send) -> dict[str, Any] | tuple[Lost, str]:
        """The request as the blocking client prepares it: URL, headers, authentication (a
        token request, if one is due, on a thread: :func:`_in_thread`)."""

        def prepared() -> dict[str, Any] | BaseException:
            # Returned, not raised: a refused session login raises StopIteration, which no
            # future can carry.
            try:
                return prepare(self.cloudant, effect.request)
            except FAILURES as exc:
                return exc

        done = prepared() if self._inline else await _in_thread(prepared)
        if isinstance(done, BaseException):
            return lost(done, effect, login=True)
        # httpx logs each request's URL: credentials in it go as the request's auth instead.
        done["url"], done["auth"] = _split_credentials(done["url"])
        return done

    async def _send(
        self, effect: Send, prepared: dict[str, Any], place: _Place
    ) -> tuple[Response | Lost, str | None]:
        """Send ``prepared`` in ``place``, and again as the SDK's ``enable_retries()`` would
        (the place given up while it waits)."""
        retry = self.cloudant.retry_config
        attempt, refused = 0, 0
        while True:
            await place.take(effect)
            if not place.held:  # the deadline passed while the SDK's retry waited for one
                return _timed_out(effect), "timeout"
            started = time.perf_counter()
            try:
                answer = await self.http.request(
                    prepared["method"],
                    prepared["url"],
                    params=prepared["params"],
                    headers={**prepared["headers"], **self._cookies()},
                    content=prepared["data"],
                    auth=prepared["auth"] or httpx.USE_CLIENT_DEFAULT,
                )
            except httpx.HTTPError as exc:
                return _httpx_lost(exc, effect, await _plain_http(exc, prepared["url"]))
            except RuntimeError as exc:
                if self.http.is_closed:  # closed while the operation ran
                    raise _closed_client() from exc
                raise
            status = answer.status_code
            response = Response(
                status,
                answer.content,
                answer.headers.get("Content-Type", ""),
                answer.headers.get("Retry-After"),
                answer_hint(self.cloudant, status),
                refused_before=refused,
            )
            if (
                retry is None
                or attempt >= retry.total
                or status not in (retry.status_forcelist or ())
            ):
                return response, None
            attempt += 1
            refused += status == 429
            wait = _sdk_backoff(retry, response, attempt)
            log.sent(effect, status, None, (time.perf_counter() - started) * 1000)
            log.retrying(effect, wait, f"HTTP {status}", client=(attempt, retry.total))
            place.give()
            await asyncio.sleep(wait)

    def _cookies(self) -> dict[str, str]:
        """The cookies the blocking client would send: its own jar's, and its session's (where
        a CouchDB session login keeps ``AuthSession``)."""
        jars = (self.cloudant.jar, self.cloudant.get_http_client().cookies)
        pairs = {c.name: c.value for jar in jars if jar is not None for c in jar}
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in pairs.items())} if pairs else {}


class _Place:
    """One of an :class:`AsyncClient`'s ``connections`` places, which a request holds while
    the pacer lets it go and while it is sent."""

    def __init__(self, places: asyncio.Semaphore) -> None:
        self.places = places
        self.held = False

    async def take(self, effect: Send) -> None:
        """Wait for a place, while ``effect``'s deadline allows (past it, the exchange answers
        that the deadline passed, sending nothing)."""
        if self.held:
            return
        try:
            async with asyncio.timeout(effect.policy.remaining()):
                await self.places.acquire()
        except TimeoutError:
            return
        self.held = True

    def give(self) -> None:
        """Give the place back, if held."""
        if self.held:
            self.held = False
            self.places.release()


def connect(
    url: str | None = None,
    *,
    auth_type: str | None = None,
    username: str | None = None,
    password: str | None = None,
    apikey: str | None = None,
    connections: int = CONNECTIONS,
    rate: Rate | str | Mapping[str, int | None] | None = None,
    **httpx_options: Any,
) -> AsyncClient:
    """An :class:`AsyncClient` for the configured server, or the one given: the client of
    :func:`couchids.connect`, with the same arguments, checks and messages. ``connections``
    and ``rate`` are :class:`AsyncClient`'s; ``httpx_options`` go to ``httpx.AsyncClient``
    (``proxy``, ``verify``, ``trust_env``, ...), taking the place of what the blocking client
    would send with (``CLOUDANT_DISABLE_SSL``; the ``*_PROXY`` variables).

    Raises:
        InvalidArgumentError: as :func:`couchids.connect` does; or ``connections`` is not a
            whole number from 1.

    Example::

        async with couchids.aio.connect() as client:  # CLOUDANT_URL, CLOUDANT_AUTH_TYPE, ...
            newest = await couchids.aio.AsyncDatabase(client, "events").latest(10)
    """
    check_count("connections", connections, 1)
    cloudant = cloudant_client(
        url, auth_type=auth_type, username=username, password=password, apikey=apikey
    )
    return _owning(cloudant, connections, httpx_options, Rate.of(rate))


def new_instance(
    service_name: str = "cloudant", *, connections: int = CONNECTIONS, **httpx_options: Any
) -> AsyncClient:
    """An :class:`AsyncClient` configured like ``CloudantV1.new_instance(service_name)``: from
    the service's variables (``CLOUDANT_*``, or ``OTHER_*`` of ``"other"``; or a credentials
    file), with the same authenticator, checked first as :func:`connect` checks them.

    ``connections`` and ``httpx_options`` are as for :func:`connect`, of which this is the
    client without arguments (``new_instance()`` is ``connect()``), for any service's
    variables.

    Raises:
        InvalidArgumentError: as :func:`couchids.connect` does, naming the service's variables
            (no ``OTHER_URL``, one without a scheme, no authentication type, ...), before
            anything is sent.
    """
    check_count("connections", connections, 1)
    cloudant = cloudant_client(arguments=False, service_name=service_name)
    return _owning(cloudant, connections, httpx_options)


def _owning(
    cloudant: CloudantV1, connections: int, options: dict[str, Any], rate: Rate | None = None
) -> AsyncClient:
    """An :class:`AsyncClient` of ``cloudant`` over an ``httpx`` client closed with it."""
    client = AsyncClient(
        cloudant, _http_client(connections, cloudant, **options), connections=connections, rate=rate
    )
    client._owned = True
    return client


def _pool_size(http: httpx.AsyncClient, url: str) -> int:
    """The most connections ``http`` opens to ``url`` at once, as far as can be read (its
    transport's ``httpcore`` pool); a very large number when it cannot be."""
    try:
        transport = http._transport_for_url(httpx.URL(url))
    except (httpx.InvalidURL, AttributeError):  # a URL httpx refuses; httpx's insides changed
        transport = None
    size = getattr(getattr(transport, "_pool", None), "_max_connections", None)
    return size if isinstance(size, int) and size > 0 else sys.maxsize


def _http_client(connections: int, cloudant: CloudantV1, **options: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` keeping ``connections`` connections, with no timeout (couchids'
    deadline covers each call) but :data:`~couchids.drivers.tls.HANDSHAKE_TIMEOUT` to open a
    connection, so that ``https://`` on a plain-HTTP port is found out then; its proxies and
    TLS checks those ``cloudant`` sends with (:func:`_as_cloudant_sends`) where ``options``
    name none."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    timeout = httpx.Timeout(None, connect=HANDSHAKE_TIMEOUT)
    options = {"timeout": timeout, "limits": limits, **options}
    return httpx.AsyncClient(**{**_as_cloudant_sends(cloudant, options), **options})


def _as_cloudant_sends(cloudant: CloudantV1, options: dict[str, Any]) -> dict[str, Any]:
    """The ``httpx`` options that send as ``cloudant`` does (``BaseService.send``): its
    ``http_config``'s and its session's ``proxies`` (a scheme or URL each, ``None`` for none;
    the ``*_PROXY`` variables for the others, as ``requests`` reads them with ``trust_env``),
    ``set_disable_ssl_verification`` (``CLOUDANT_DISABLE_SSL``), ``http_config``'s ``verify``
    and ``cert``, and else ``REQUESTS_CA_BUNDLE`` or ``CURL_CA_BUNDLE``. An option given in
    ``options`` is left to it."""
    config, session = cloudant.http_config or {}, cloudant.get_http_client()
    verify: Any = config.get("verify", session.verify)
    if verify is True and session.trust_env:  # as requests reads the environment
        verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    if cloudant.disable_ssl_verification:
        verify = False
    cert = config.get("cert", session.cert)
    if "verify" in options:
        verify = options["verify"]
    elif isinstance(verify, str) or cert:  # a CA bundle or directory; a client certificate
        bundle = verify if isinstance(verify, str) else None
        folder = bundle is not None and os.path.isdir(bundle)
        context = ssl.create_default_context(
            cafile=None if folder else bundle, capath=bundle if folder else None
        )
        if verify is False:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        if cert:
            context.load_cert_chain(*((cert,) if isinstance(cert, str) else cert))
        verify = context
    derived: dict[str, Any] = {} if "verify" in options else {"verify": verify}
    proxies = {**(session.proxies or {}), **(config.get("proxies") or {})}
    if proxies and not {"proxy", "mounts", "transport"} & options.keys():
        trust_env = options.get("trust_env", True)
        derived["mounts"] = {
            key if "://" in key else f"{key}://": (
                None
                if url is None
                else httpx.AsyncHTTPTransport(
                    proxy=prepend_scheme_if_needed(url, "http"),
                    verify=verify,
                    limits=options["limits"],
                    trust_env=trust_env,
                )
            )
            for key, url in proxies.items()
            if key != "no_proxy"
        }
    return derived


# -- the driver ---------------------------------------------------------------------------------


async def _in_thread(work: Callable[[], T]) -> T:
    """``work()`` on a daemon thread of its own, awaited. Not the loop's executor: a token
    request that never ends would hold a worker of it, which ``asyncio.run`` waits for at its
    end; a daemon thread ends with the client's own timeouts, or with the process."""
    done: Future[T] = Future()

    def run() -> None:
        if not done.set_running_or_notify_cancel():  # the caller is gone already
            return
        try:
            done.set_result(work())
        except Exception as exc:  # raised in the caller, rather than lost with this thread
            done.set_exception(exc)

    threading.Thread(target=run, name="couchids-auth", daemon=True).start()
    return await asyncio.wrap_future(done)


def check_client(client: object) -> AsyncClient:
    if not isinstance(client, AsyncClient):
        raise InvalidArgumentError(
            f"client={type(client).__name__}: pass a couchids.aio.AsyncClient, such as "
            "couchids.aio.connect()"
        )
    if client.http.is_closed:
        raise _closed_client()
    return client


def _closed_client() -> InvalidArgumentError:
    return InvalidArgumentError(
        "client: this couchids.aio.AsyncClient is closed (by aclose(), or at the end of its "
        "async with block) and sends nothing more; make a new one with "
        "couchids.aio.connect() or couchids.aio.AsyncClient(cloudant)"
    )


def _split_credentials(url: str) -> tuple[str, httpx.BasicAuth | None]:
    """``url`` without its user info, and the user name and password it held as Basic auth
    (percent-decoded, as requests reads them), or ``None``."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    info, _, host = parts.netloc.rpartition("@")
    user, _, password = info.partition(":")
    bare = urlunsplit(parts._replace(netloc=host))
    return bare, httpx.BasicAuth(unquote(user), unquote(password))


def known_facts(client: AsyncClient) -> FactsCache:
    """What couchids has learnt about databases through ``client`` (kept while it lives)."""
    return client.facts


def stream(client: AsyncClient, program: Program[Any]) -> AsyncGenerator[Any, None]:
    """Carry out ``program`` with ``client``, yielding what it emits as it emits it. Closing
    the iterator (``aclose()``) stops the program and cancels the requests it started."""
    return _drive(client, program, [])


#: :func:`stream` of a program that emits pages: its first step sends the first request (an
#: async function cannot read before it is iterated).
pages = stream


async def run(client: AsyncClient, program: Program[T]) -> T:
    """Carry out ``program`` (one that emits nothing) with ``client``; return its result."""
    result: list[T] = []
    async with contextlib.aclosing(_drive(client, program, result)) as emitted:
        async for value in emitted:
            raise TypeError(f"a program run for its result emitted {type(value).__name__}")
    return result[0]


async def after(
    client: AsyncClient, begin: Program[None], then: Program[None]
) -> AsyncIterator[Any]:
    """What ``then`` emits, once ``begin`` has run."""
    await run(client, begin)
    async with contextlib.aclosing(stream(client, then)) as emitted:
        async for value in emitted:
            yield value


async def flat(pages: AsyncIterator[list[T]]) -> AsyncIterator[T]:
    """The items of each page, each let go of as it is handed on; closing this closes
    ``pages`` (an async generator, and so what it started)."""
    async with contextlib.aclosing(pages):  # type: ignore[type-var]
        async for page in pages:
            taking = handed_on(page)
            for _ in range(len(page)):
                yield next(taking)  # no name here keeps the item while the caller has it


class AsyncRows(OneReading[AsyncIterator[list[T]]], AsyncIterator[T]):
    """What a query streams: its rows one at a time, as an ``async for`` loop reads them, or a
    page (one request's rows, a list that is the caller's to keep or empty) at a time from
    :meth:`pages`; one or the other. A row handed on is not kept. ``aclose()`` stops the
    query and cancels the requests it started."""

    def __aiter__(self) -> AsyncRows[T]:
        return self

    async def __anext__(self) -> T:
        if self._rows is None:
            self._rows = self._started = flat(self._taken("the rows"))
        row: T = await anext(self._rows)
        return row

    def pages(self) -> AsyncIterator[list[T]]:
        """The rows a page at a time, in the same order."""
        return self._taken("pages()")

    async def aclose(self) -> None:
        """Stop the query; the requests it started are cancelled."""
        aclose = getattr(self._started, "aclose", None)
        if aclose is not None:
            await aclose()


async def _drive(
    client: AsyncClient, program: Program[T], result: list[T]
) -> AsyncGenerator[Any, None]:
    """Carry out ``program``, yielding what it emits; its result is appended to ``result``."""
    tasks: list[asyncio.Task[Any]] = []
    outcome: Any = None
    failure: BaseException | None = None
    last = ""  # what the last request got (``HTTP 503``, ``timeout``), for a retry's record
    try:
        while True:
            try:
                effect = program.throw(failure) if failure is not None else program.send(outcome)
            except StopIteration as stop:
                result.append(stop.value)
                return
            outcome, failure = None, None
            if isinstance(effect, Send):
                outcome, last = await client._performed(effect)
            elif isinstance(effect, Emit):
                yield effect.value
            elif isinstance(effect, Start):
                task = asyncio.ensure_future(run(client, effect.program))
                tasks.append(task)
                outcome = task
            elif isinstance(effect, Wait):
                task = effect.handle  # type: ignore[assignment]
                try:
                    outcome = await task
                except CouchidsError as exc:
                    failure = exc
                tasks.remove(task)
            elif isinstance(effect, Sleep):
                if effect.retry is not None:
                    log.retrying(effect.retry, effect.seconds, last)
                await asyncio.sleep(effect.seconds)
            else:
                raise TypeError(f"not an effect: {effect!r}")
    finally:
        program.close()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def _head(effect: Send) -> str:
    return f"{effect.policy.operation} on {effect.db!r} ({effect.request.sent})"


def _timed_out(effect: Send, *, token: bool = False) -> Lost:
    """The deadline passed (``token``: while the authenticator waited for its token service)."""
    error = timed_out(_head(effect), effect.policy, token)
    return Lost(error, maybe_run=not token, transient=not token, login=token)


def _httpx_lost(exc: httpx.HTTPError, effect: Send, plain: str | None) -> tuple[Lost, str]:
    """What a request that failed with ``exc`` lost (``plain``: the reason its ``https://``
    port speaks plain HTTP, not retried), and in a few words for a log record. Neither
    holds httpx's text, which can quote the URL, credentials and all."""
    head = _head(effect)
    never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
    if plain is not None:
        error, kind = ServerError(f"{head}: could not reach the server: {plain}"), "plain HTTP port"
    elif isinstance(exc, httpx.TimeoutException):
        error = timed_out(head, effect.policy)
        kind = "connect timeout" if isinstance(exc, httpx.ConnectTimeout) else "timeout"
    elif never_sent:
        reason = _socket_reason(exc)
        error = ServerError(f"{head}: could not reach the server: {reason or type(exc).__name__}")
        kind = reason.lower() or "connection failed"
    elif isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
        # In the blocking driver's words: the connection closed mid-body (h11's "peer closed
        # connection without sending complete message body"), or before the whole answer came.
        error = broke_off(head, _socket_reason(exc), mid_body="message body" in str(exc))
        kind = "connection closed"
    else:  # a proxy's refusal, say
        error = ServerError(f"{head}: could not reach the server: {type(exc).__name__}")
        kind = type(exc).__name__
    error.__suppress_context__ = True
    return Lost(error, maybe_run=not never_sent, transient=plain is None), kind


def _socket_reason(exc: BaseException) -> str:
    """The socket's words under httpcore's and anyio's errors, as the blocking driver quotes
    them (``Connection refused``; asyncio's own text names the address); ``""`` for none."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno:
            # A resolver's errno is negative, and only its own text says it.
            return os.strerror(cause.errno) if cause.errno > 0 else cause.strerror or ""
        cause = cause.__cause__ or cause.__context__
    return ""


async def _plain_http(exc: httpx.HTTPError, url: str) -> str | None:
    """Why an ``https://`` connection that could not be made failed, when its port speaks
    plain HTTP (:func:`~couchids.drivers.tls.speaks_plain_http`, on a thread); else ``None``."""
    if not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return None
    target = httpx.URL(url)
    if target.scheme != "https" or not target.host:
        return None
    port = target.port or 443
    if not await _in_thread(lambda: speaks_plain_http(target.host, port)):
        return None
    return plain_http_reason(target.host, port)


def _sdk_backoff(retry: Any, response: Response, attempt: int) -> float:
    """The wait before retry ``attempt`` as the SDK's urllib3 ``Retry`` computes it: a
    ``Retry-After`` in seconds if given, else ``backoff_factor * 2**(attempt - 1)``, at most
    ``backoff_max``."""
    after = retry_after_seconds(response.retry_after)
    wait = float(retry.backoff_factor) * 2.0 ** (attempt - 1) if after is None else after
    return min(wait, float(getattr(retry, "backoff_max", 120.0)))
