"""The programs of the I/O-free core and their effects.

An operation is written once, as a *program*: a generator that yields effects and is sent
their outcomes; it never touches the network, a thread or a clock's sleep. The blocking driver
(``couchids.drivers.blocking``, through ``ibmcloudant``) and the asyncio driver
(:mod:`couchids.aio`, through ``httpx``) run the same programs, so the two APIs cannot drift.

- :class:`Send` a :class:`Request`; the outcome is a :class:`Response` (any HTTP status) or
  :class:`Lost` (no answer to use: refused connection, timeout, broken body, failed login).
- :class:`Start` a sub-program concurrently; :class:`Wait` for its handle gives its result
  (or raises its exception at the ``yield``).
- :class:`Sleep` some seconds; :class:`Emit` a value to the caller of a streaming operation.
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
    #: The 429s the SDK's own retries met before this answer.
    refused_before: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Lost:
    """No answer to use: ``error`` to raise (its cause masked), whether the server
    ``maybe_run`` the request, whether it is ``transient`` (sending again may succeed), and
    whether the ``login`` failed (never retried here: the authenticators pace logins)."""

    error: ServerError
    maybe_run: bool
    transient: bool
    login: bool = False


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``request`` within ``policy``'s deadline (``db`` names the database in messages)."""

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
    """Wait ``seconds``; ``retry`` is the request a backoff precedes (for the drivers' logs)."""

    seconds: float
    retry: Send | None = None

    @classmethod
    def within(cls, policy: RetryPolicy, seconds: float, retry: Send | None = None) -> Sleep:
        """A sleep of ``seconds``, never past ``policy``'s deadline.

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
    """Steps a streaming program one emitted value at a time, from inside another program
    (its other effects go on to the driver)."""

    def __init__(self, program: Program[Any]) -> None:
        self.program = program

    def next(self) -> Program[Any]:
        """The program's next emitted value, or ``END``."""
        outcome: Any = None
        failure: Exception | None = None
        while True:
            try:
                effect = self.program.throw(failure) if failure else self.program.send(outcome)
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
    """The headers couchids sends with ``request`` to the server at ``service_url`` (a
    client's own default headers win). A server on this machine is asked for its answers
    uncompressed: there gzip costs CPU and saves no network (0.83 s against 0.60 s for 50,000
    documents from PouchDB Server, bench/bench_query.py).

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
    """Whether ``url`` names this machine: a loopback address, or ``localhost`` (not looked up).

    >>> [is_loopback(u) for u in ("http://127.0.0.2:5984", "http://[::1]/", "http://localhost")]
    [True, True, True]
    >>> [is_loopback(u) for u in ("http://10.0.0.1:5984", "https://host.example", "nonsense")]
    [False, False, False]
    """
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
