"""The programs of the I/O-free core and their effects: requests, answers, and what a program
yields to a driver.

An operation is written once, as a *program*: a generator that yields effects and is sent
their outcomes. It never touches the network, a thread or a clock's sleep; a driver does
that. The blocking driver (``couchids.drivers.blocking``, through the caller's ``ibmcloudant``
client) and the asyncio driver (:mod:`couchids.aio`, through ``httpx``) run the same
programs, so the two APIs cannot drift apart, and a program runs in a test with a driver of
a few lines.

The effects:

- :class:`Send` a :class:`Request`; the outcome is a :class:`Response` (any HTTP status) or
  :class:`Lost` (no answer to use: refused connection, timeout, broken body, failed login).
- :class:`Start` a sub-program concurrently; the outcome is a handle to :class:`Wait` for,
  whose outcome is the sub-program's result (or its exception, raised at the ``yield``).
- :class:`Sleep` some seconds (a retry's backoff).
- :class:`Emit` a value to the caller of a streaming operation (a page of documents).

The rest of the core's plumbing has a module each: :mod:`couchids.core.policy` (retries and
deadlines), :mod:`couchids.core.exactjson` (JSON, exact), :mod:`couchids.core.answers` (what an
answer means), :mod:`couchids.core.asking` (:func:`~couchids.core.asking.ask`: the one place
requests are retried and answers turned into couchids exceptions),
:mod:`couchids.core.facts` (what couchids learns about a database) and
:mod:`couchids.core.revisions` (reading every leaf, deleting a revision everywhere).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, TypeVar
from urllib.parse import quote, urlsplit

from couchids.core.exactjson import dumps
from couchids.core.policy import RetryPolicy
from couchids.errors import ServerError

T = TypeVar("T")

JSON: Final = "application/json"


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request, described: ``path`` is percent-encoded, from the server's root."""

    method: str
    path: str
    params: Mapping[str, str] | None = None
    body: bytes | None = None

    @property
    def sent(self) -> str:
        """``METHOD /path``, as messages name a request."""
        return f"{self.method} {self.path}"


@dataclass(frozen=True, slots=True)
class Response:
    """An HTTP answer, whatever its status."""

    status: int
    body: bytes
    content_type: str = ""
    retry_after: str | None = None
    #: What to check after a 401/403, when the driver knows better than the default.
    hint: str = ""
    #: The driver's own exception for an error status, masked, to chain as the cause.
    cause: BaseException | None = field(default=None, compare=False)
    #: The 429s the HTTP client's own retries (``enable_retries()``) met before this answer.
    refused_before: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Lost:
    """No answer to use, as the driver saw it.

    Attributes:
        error: the couchids exception to raise for it (its cause already masked).
        maybe_run: whether the server may have carried the request out.
        transient: whether sending it again may succeed.
        login: whether authentication's own login failed (never retried here: the
            authenticators pace their logins themselves).
    """

    error: ServerError
    maybe_run: bool
    transient: bool
    login: bool = False


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``request`` within ``policy``'s deadline; the outcome is a Response or Lost.
    ``db`` names the database in messages."""

    request: Request
    policy: RetryPolicy
    db: str
    #: 1 for the first try of ``request``, 2 for its first retry, ... (for the drivers' logs).
    attempt: int = 1


@dataclass(frozen=True, slots=True)
class Start:
    """Run ``program`` concurrently; the outcome is a handle for :class:`Wait`."""

    program: Program[Any]


@dataclass(frozen=True, slots=True)
class Wait:
    """The result of a started program (its exception is raised where this was yielded)."""

    handle: object


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait ``seconds``; ``retry`` is the request sent again after the wait, when it is a
    retry's backoff (for the drivers' logs)."""

    seconds: float
    retry: Send | None = None

    @classmethod
    def within(cls, policy: RetryPolicy, seconds: float, retry: Send | None = None) -> Sleep:
        """A sleep of ``seconds``, cut to the time left before ``policy``'s deadline: a program
        never sleeps past it (its next request then ends at once, timed out).

        >>> from couchids.core.policy import RetryPolicy
        >>> Sleep.within(RetryPolicy.within(None, "wait"), 0.25)
        Sleep(seconds=0.25, retry=None)
        >>> Sleep.within(RetryPolicy.within(0.5, "wait"), 30).seconds <= 0.5
        True
        """
        left = policy.remaining()
        return cls(seconds if left is None else max(0.0, min(seconds, left)), retry)


@dataclass(frozen=True, slots=True)
class Emit:
    """A value for the caller of a streaming operation."""

    value: Any


Effect: TypeAlias = Send | Start | Wait | Sleep | Emit
#: An operation: yields effects, is sent their outcomes, returns its result.
Program: TypeAlias = Generator[Effect, Any, T]


#: What :meth:`Puller.next` returns once the program has ended.
END: Final = object()


class Puller:
    """Steps a streaming program one emitted value at a time, from inside another program:
    its other effects go on to the driver, their outcomes (and failures) come back to it."""

    def __init__(self, program: Program[Any]) -> None:
        self.program = program

    def next(self) -> Program[Any]:
        """The program's next emitted value, or ``END``."""
        outcome: Any = None
        failure: Exception | None = None
        while True:
            try:
                if failure is not None:
                    effect = self.program.throw(failure)
                else:
                    effect = self.program.send(outcome)
            except StopIteration:
                return END
            outcome, failure = None, None
            if isinstance(effect, Emit):
                return effect.value
            try:
                outcome = yield effect
            except Exception as exc:  # a started program's failure, raised at its Wait
                failure = exc

    def close(self) -> None:
        self.program.close()


def path(*parts: str) -> str:
    """The percent-encoded path of these segments: ``path("db", "a/b")`` is ``/db/a%2Fb``."""
    return "".join("/" + quote(part, safe="") for part in parts)


def post_json(url: str, body: Any) -> Request:
    """A ``POST`` of ``body`` as JSON."""
    return Request("POST", url, body=dumps(body))


def request_headers(request: Request, service_url: str) -> dict[str, str]:
    """The headers couchids sends with ``request`` to the server at ``service_url`` (both
    drivers; a client's own default headers, ``set_default_headers``, still win over them).

    A server on this machine (a loopback address or ``localhost``) is asked for its answers as
    they are (``Accept-Encoding: identity``): there compression costs both ends CPU and saves
    no network. PouchDB Server gzips whatever a client accepts, and reading 50,000 documents
    took it 0.60 s uncompressed against 0.83 s gzipped (bench/bench_query.py's data). Any
    other server gets the HTTP client's usual offer (gzip, deflate), which saves a remote
    link far more than it costs.

    >>> request_headers(Request("GET", "/db"), "http://127.0.0.1:5984")
    {'Accept': 'application/json', 'Accept-Encoding': 'identity'}
    >>> request_headers(Request("POST", "/db", body=b"{}"), "https://couch.example.com")
    {'Accept': 'application/json', 'Content-Type': 'application/json'}
    """
    headers = {"Accept": JSON}
    if request.body is not None:
        headers["Content-Type"] = JSON
    if is_loopback(service_url):
        headers["Accept-Encoding"] = "identity"
    return headers


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine: a loopback address, or the name ``localhost``
    (taken at its word, not looked up).

    >>> [is_loopback(u) for u in ("http://127.0.0.2:5984", "http://[::1]/", "http://localhost")]
    [True, True, True]
    >>> [is_loopback(u) for u in ("http://10.0.0.1:5984", "https://host.example", "nonsense")]
    [False, False, False]
    """
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
