"""The I/O-free core of couchids' operations: what to ask the server, and what an answer means.

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

:func:`ask` is the one place requests are retried and answers turned into couchids
exceptions; the shape checks (``expect_object``, ``expect_rows``,
``revision``) say what was wrong with an answer that is not CouchDB's.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import math
import operator
import random
import time
from collections.abc import Collection, Generator, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypeAlias, TypeVar
from urllib.parse import quote, urlsplit

import orjson

from couchids.core.defaults import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from couchids.core.defaults import MAX_TIMEOUT as MAX_TIMEOUT
from couchids.core.names import DB_NAME as DB_NAME
from couchids.core.names import DB_NAME_MAX as DB_NAME_MAX
from couchids.core.names import SYSTEM_DBS as SYSTEM_DBS
from couchids.core.names import check_db as check_db
from couchids.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    RateLimitedError,
    ServerError,
    UnauthorizedError,
)

T = TypeVar("T")

#: Seconds before the first retry; each later retry waits twice as long (with jitter).
DEFAULT_BACKOFF: Final = 0.05
#: Retries after a lost answer, on top of the first attempt.
DEFAULT_RETRIES: Final = 4
#: The longest wait between two attempts, whatever the backoff.
MAX_BACKOFF: Final = 2.0
#: The longest ``Retry-After`` (seconds) a 429 answer is obeyed for.
MAX_RETRY_AFTER: Final = 30.0
JSON: Final = "application/json"
#: The longest piece of a server's answer quoted in a message.
QUOTE_LEN: Final = 120

#: Failures after which the request may or may not have been carried out: a write retries
#: these with the same id. 408 and 429 are answers to a request that was not carried out,
#: but retrying them is safe for the same reason.
TRANSIENT_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})


# -- requests, answers, effects ------------------------------------------------------------------


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


# -- JSON, fast and exact -----------------------------------------------------------------------

#: Every digit becomes ``0``, every other byte a space: a run of digits becomes a run of 0s.
_DIGITS_ONLY: Final = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
#: Integers of this many digits may not fit the 64 bits ``orjson`` keeps.
_LONG_RUN: Final = b"0" * 19
#: What may stand before a number in JSON, whitespace aside (or nothing: the text's start).
_BEFORE_NUMBER: Final = frozenset(b":[,")
_WHITESPACE: Final = frozenset(b" \t\r\n")
_MINUS: Final = ord("-")


def loads(body: bytes) -> Any:
    """JSON ``body``, decoded exactly.

    ``orjson`` decodes, fast, unless the body may hold an integer of 19 digits or more
    (:func:`long_integer`): ``orjson`` turns an integer beyond 64 bits into a float
    (``123456789012345678901234567890`` would come back as ``1.2345678901234568e+29``), where
    ``json`` keeps it whole, and CouchDB keeps such integers as they were written. Those
    bodies, and any ``orjson`` refuses (a number beyond a double's range), are decoded by
    ``json``.

    Raises:
        ValueError: (``json.JSONDecodeError``, ``UnicodeDecodeError``) the body is not JSON.

    >>> loads(b'{"n": 123456789012345678901234567890, "m": 1}')
    {'n': 123456789012345678901234567890, 'm': 1}
    """
    if not long_integer(body):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return json.loads(body)


def long_integer(body: bytes) -> bool:
    """Whether JSON ``body`` may hold an integer of 19 digits or more: a run of that many
    digits that starts a number (at the start, or after ``:``, ``[`` or ``,``, whitespace
    and a minus sign aside).

    Runs inside strings seldom look like that. They are common enough: a revision's 32 hex
    digits hold a run of 19 about once in 1,200 revisions, and every ``_all_docs`` row with
    its document holds two, so a page of 2000 rows holds about three, and checking for runs
    alone sent almost every page to ``json``, three times slower than ``orjson``. A string
    that does look like that (``"at: 1234567890123456789012"``) costs only the slower
    decoding. Finding the runs costs about a tenth of the decoding.

    >>> long_integer(b'{"n": -12345678901234567890}'), long_integer(b'[1, 12345678901234567890]')
    (True, True)
    >>> long_integer(b'{"_rev": "1-a1234567890123456789012b", "n": 0.12345678901234567890}')
    False
    """
    digits = body.translate(_DIGITS_ONLY)
    at = digits.find(_LONG_RUN)
    while at >= 0:
        # ``at`` is where a run starts: the first match of 19 zeros is not preceded by one.
        before = at - 1
        if before >= 0 and body[before] == _MINUS:
            before -= 1
        while before >= 0 and body[before] in _WHITESPACE:
            before -= 1
        if before < 0 or body[before] in _BEFORE_NUMBER:
            return True
        end = digits.find(b" ", at + len(_LONG_RUN))
        if end < 0:
            return False
        at = digits.find(_LONG_RUN, end)
    return False


def dumps(value: Any) -> bytes:
    """``value`` as compact JSON: by ``orjson``, or by ``json`` when it holds an integer
    beyond 64 bits, which ``orjson`` refuses (a document read back with one, by
    :func:`loads`, is written as it was read)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        check_keys(value)
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


def check_keys(value: Any) -> None:
    """Refuse a JSON object (at any depth) with a key that is not a string: ``json`` would
    write a key ``1`` as ``"1"``, beside a key ``"1"``, and one of the values would be lost.

    ``orjson`` refuses such keys, so it looks first (a fifth of the time ``json`` takes to
    write the same value); only a value it refuses is walked here.

    >>> check_keys({"a": [{1: "x", "1": "y"}]})
    Traceback (most recent call last):
      ...
    couchids.errors.InvalidArgumentError: a JSON object has the key 1 (int): ...
    """
    try:
        orjson.dumps(value)
    except TypeError:  # such a key, or an integer beyond 64 bits, or no JSON at all
        _walk_keys(value)


def _walk_keys(value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidArgumentError(
                    f"a JSON object has the key {key!r:.40} ({type(key).__name__}): the keys "
                    'of a JSON object are strings, and a key 1 would be written as "1"'
                )
            _walk_keys(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _walk_keys(item)


# -- the time an operation may take -------------------------------------------------------------

#: The deadline (a ``time.monotonic()``) of the public call under way in this thread or task,
#: when it runs other public calls (see :func:`one_deadline`).
_enclosing: ContextVar[float | None] = ContextVar("couchids_enclosing_deadline", default=None)


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and after how long, a request whose answer was lost is sent again, and how
    long the whole operation may take.

    One policy is made per public call, when it is called, and carries the call's deadline
    through every request, retry and pause of it: the drivers bound each request by the time
    left (:meth:`remaining`), :func:`ask` sends a request again only while the backoff fits
    before the deadline, and a program pauses (a poll's interval, a backoff) with
    :meth:`pause`, never past it. Nothing inside a call starts a clock of its own, except a
    stream whose ``timeout`` bounds each of its requests (:meth:`renewed`).

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
        the clock starts now (inside ``one_deadline``, it ends by that deadline at the
        latest)."""
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
        policy = cls(retries, float(backoff), seconds, operation).renewed()
        return replace(policy, deadline=_sooner(policy.deadline, _enclosing.get()))

    @classmethod
    def within(cls, timeout: float | None, operation: str) -> RetryPolicy:
        """The policy of a call whose only limit is the caller's ``timeout`` (checked as
        :meth:`checked` checks it; the clock starts now): a lost answer is sent again
        ``DEFAULT_RETRIES`` times after ``DEFAULT_BACKOFF`` seconds, doubling, never past the
        deadline.

        >>> policy = RetryPolicy.within(4, "status")
        >>> policy.retries, policy.timeout, 3.9 < policy.remaining() <= 4
        (4, 4.0, True)
        """
        return cls.checked(DEFAULT_RETRIES, DEFAULT_BACKOFF, timeout, operation)

    def renewed(self) -> RetryPolicy:
        """The same policy with its clock started now: for each page or batch of a stream
        whose ``timeout`` bounds each request, never inside a call that has one deadline."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        return replace(self, deadline=deadline)

    def each_step(self, seconds: float) -> RetryPolicy:
        """The policy of one step of a call that may run without a deadline (a poll of a
        wait): the call's own when it has a deadline, which bounds every step; without one,
        ``seconds`` from now, so that a step whose request gets no answer still ends.

        >>> RetryPolicy.within(None, "wait").each_step(60).timeout
        60.0
        >>> RetryPolicy.within(5, "wait").each_step(60).timeout
        5.0
        """
        if self.deadline is not None:
            return self
        return replace(self, timeout=float(seconds)).renewed()

    def pause(self, seconds: float, retry: Send | None = None) -> Sleep:
        """A :class:`Sleep` of ``seconds``, cut to the time left before the deadline: a
        program never sleeps past it (its next request then ends at once, timed out).

        >>> RetryPolicy.within(None, "wait").pause(0.25)
        Sleep(seconds=0.25, retry=None)
        >>> RetryPolicy.within(0.5, "wait").pause(30).seconds <= 0.5
        True
        """
        left = self.remaining()
        return Sleep(seconds if left is None else max(0.0, min(seconds, left)), retry)

    def remaining(self) -> float | None:
        """Seconds left before the deadline (``None``: no deadline)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        left = self.remaining()
        return left is not None and left <= 0

    def delay(self, retry_after: str | None, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt + 1``; ``retry_after`` is a 429's
        ``Retry-After`` header, obeyed up to ``MAX_RETRY_AFTER`` when it is seconds."""
        try:
            after = max(0.0, float(retry_after)) if retry_after is not None else None
        except ValueError:
            after = None  # an HTTP date instead of seconds: fall back to the backoff
        if after is not None:
            return min(after, MAX_RETRY_AFTER)
        # Jitter spreads out writers that lost their answers at the same moment.
        return min(MAX_BACKOFF, self.backoff * 2.0**attempt) * random.uniform(0.5, 1.0)


def _sooner(a: float | None, b: float | None) -> float | None:
    """The sooner of two deadlines (``None``: none)."""
    return b if a is None else a if b is None else min(a, b)


@contextlib.contextmanager
def one_deadline(policy: RetryPolicy) -> Iterator[None]:
    """Inside, the policies made for public calls (:meth:`RetryPolicy.checked`) end by
    ``policy``'s deadline at the latest: a public call that runs others (a series' write that
    creates its period's database and writes again) keeps to its own deadline as a whole.
    The bound holds in this thread or task only, where the policies of those calls are made.

    >>> outer = RetryPolicy.within(1, "create")
    >>> with one_deadline(outer):
    ...     RetryPolicy.within(60, "create").remaining() <= 1
    True
    """
    token = _enclosing.set(_sooner(policy.deadline, _enclosing.get()))
    try:
        yield
    finally:
        _enclosing.reset(token)


# -- what an answer means -----------------------------------------------------------------------

#: The request a thread or task is waiting on, for messages about answers checked after it.
current_request: ContextVar[str] = ContextVar("couchids_request", default="")


def describe(body: Any) -> str:
    """A short account of an answer's body for a message: never a whole page."""
    if isinstance(body, Response):
        kind = (body.content_type or "no content type").split(";")[0].strip()
        return f"{'HTML' if 'html' in kind else kind} ({len(body.body)} bytes)"
    if isinstance(body, bytes):
        start = body.lstrip()[:1]
        label = "HTML" if start == b"<" else "JSON cut short" if start in (b"{", b"[") else "text"
        return f"{label} ({len(body)} bytes)"
    text = repr(body)
    return f"{type(body).__name__} {text[:QUOTE_LEN]}{'...' if len(text) > QUOTE_LEN else ''}"


def answer_error(
    policy: RetryPolicy, db: str, problem: str, sent: str | None = None
) -> ServerError:
    """A :class:`ServerError` for an answer of the wrong shape: ``problem`` says what was wrong."""
    sent = current_request.get() if sent is None else sent
    where = f" ({sent})" if sent else ""
    return ServerError(f"{policy.operation} on {db!r}{where}: not a CouchDB answer: {problem}")


def expect_object(
    body: Any, policy: RetryPolicy, db: str, *fields: str, sent: str | None = None
) -> dict[str, Any]:
    """``body`` if it is a JSON object holding each of ``fields``; else :func:`answer_error`."""
    if not isinstance(body, dict):
        raise answer_error(policy, db, f"expected a JSON object, got {describe(body)}", sent)
    missing = [name for name in fields if name not in body]
    if missing:
        raise answer_error(policy, db, f"no {missing[0]!r} in {describe(body)}", sent)
    return body


@dataclass(frozen=True, slots=True)
class KeySpan:
    """The keys one ``_all_docs`` request asked for: from ``start`` (inclusive) towards
    ``end`` (inclusive; ``None``: to the end of the index), in ``descending`` order or not.

    What the rows of its answer must respect (see :func:`check_span`).
    """

    start: str | None
    end: str | None
    descending: bool = False


def expect_rows(
    body: Any,
    policy: RetryPolicy,
    db: str,
    *,
    include_docs: bool = False,
    sent: str | None = None,
    span: KeySpan | None = None,
) -> list[dict[str, Any]]:
    """The rows of an ``_all_docs`` answer for a key range, each an object with a string ``id``
    (and, with ``include_docs``, a document object unless the document was deleted as it was
    read); else :func:`answer_error`. With ``span`` (the keys asked for), the rows must also
    be in key order and inside it (:func:`check_span`)."""
    rows = expect_object(body, policy, db, "rows", sent=sent)["rows"]
    if not isinstance(rows, list):
        raise answer_error(policy, db, f"'rows' is {describe(rows)}, not a list", sent)
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise answer_error(policy, db, f"a row without a string id: {describe(row)}", sent)
        doc, value = row.get("doc"), row.get("value")
        deleted = doc is None and isinstance(value, dict) and value.get("deleted") is True
        if include_docs and not isinstance(doc, dict) and not deleted:
            raise answer_error(policy, db, f"row {row['id']!r} has doc {describe(doc)}", sent)
    if span is not None:
        check_span([row["id"] for row in rows], span, policy, db, sent)
    return rows


def check_span(
    ids: list[str], span: KeySpan, policy: RetryPolicy, db: str, sent: str | None = None
) -> None:
    """Refuse an answer whose ids are not strictly in the span's key order, or not inside it.

    Every walk of ``_all_docs`` starts each request at the last id it has seen (keyset
    paging), so an answer that passes this moves forward: no id comes twice, none from
    outside the range asked for, and a walk cannot loop. A server that ignores ``start_key``,
    ``end_key`` or ``descending``, or sends rows reversed, shuffled or repeated, is a
    :class:`~couchids.ServerError` naming the operation, never a wrong answer.

    CouchDB compares ids as UTF-8 bytes (the order of Python's ``str``); PouchDB Server as
    UTF-16 code units, which differ only between characters above U+E000 and those above
    U+FFFF. An answer in either order throughout passes.

    >>> policy = RetryPolicy.checked(0, 0, None, "window")
    >>> check_span(["a", "b", "c"], KeySpan("a", "c"), policy, "db")
    >>> check_span(["c", "b"], KeySpan("c", "a", descending=True), policy, "db")
    >>> check_span(["a", "c", "b"], KeySpan("a", "c"), policy, "db")
    Traceback (most recent call last):
      ...
    couchids.errors.ServerError: window on 'db': not a CouchDB answer: ...
    """
    if not ids:
        return
    problem = _span_problem(ids, span, str)
    if problem is not None and _span_problem(ids, span, _utf16) is not None:
        raise answer_error(policy, db, problem, sent)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _span_problem(ids: list[str], span: KeySpan, key: Any) -> str | None:
    """What is wrong with ``ids`` as an answer for ``span`` in the order of ``key``."""
    keys = ids if key is str else [key(i) for i in ids]
    start = span.start if span.start is None or key is str else key(span.start)
    end = span.end if span.end is None or key is str else key(span.end)
    forward = operator.gt if span.descending else operator.lt
    if not all(map(forward, keys, keys[1:])):
        at = next(i for i in range(1, len(keys)) if not forward(keys[i - 1], keys[i]))
        return f"rows out of key order or repeated ({ids[at]!r} after {ids[at - 1]!r})"
    if start is not None and forward(keys[0], start):
        return f"the id {ids[0]!r} is before the start key {span.start!r} asked for"
    if end is not None and forward(end, keys[-1]):
        return f"the id {ids[-1]!r} is past the end key {span.end!r} asked for"
    return None


def check_listing(
    what: str,
    items: Sequence[Any],
    policy: RetryPolicy,
    db: str,
    *,
    sent: str | None = None,
    noun: str = "",
    ordered: bool = False,
    after: Any = None,
    not_at: Any = None,
    low: Any = None,
    high: Any = None,
    among: Collection[Any] | None = None,
    most: int | None = None,
) -> None:
    """Refuse a listing that breaks what the server promised of it: the names of
    ``_all_dbs``, the ids and sequences of a ``_changes`` answer, the documents of
    ``_scheduler/docs``, the rows of ``_bulk_docs`` or of ``_all_docs`` by ``keys``, the
    revisions of ``open_revs=all``. (The rows of an ``_all_docs`` key range have
    :func:`check_span`.)

    ``items`` (as the answer listed them) are checked for what the caller knows the server
    promises, and nothing more: each at most once, always; with ``ordered``, in ascending
    order; each above ``after``, none equal to ``not_at`` (where the listing was asked to
    start after an item whose order is not known: CouchDB's opaque sequences), from ``low``
    to ``high`` (both included) and one of ``among`` when those are given; at most ``most``
    of them. A listing that breaks one is a
    :class:`~couchids.ServerError` naming the operation and ``what`` answered (``noun``
    names an item in the message: ``"seq "``), never an answer with a database, document or
    change in it twice, or one that was not asked for.

    >>> policy = RetryPolicy.checked(0, 0, None, "databases")
    >>> check_listing("_all_dbs", ["ev-1", "ev-2"], policy, "ev", ordered=True, low="ev-")
    >>> check_listing("_all_dbs", ["ev-1", "ev-2", "ev-1"], policy, "ev")
    Traceback (most recent call last):
      ...
    couchids.errors.ServerError: databases on 'ev': ...: _all_dbs listed 'ev-1' twice
    """
    problem = _listing_problem(items, noun, ordered, after, not_at, low, high, among, most)
    if problem is not None:
        raise answer_error(policy, db, f"{what} {problem}", sent)


def _listing_problem(
    items: Sequence[Any],
    noun: str,
    ordered: bool,
    after: Any,
    not_at: Any,
    low: Any,
    high: Any,
    among: Collection[Any] | None,
    most: int | None,
) -> str | None:
    """What is wrong with ``items`` (see :func:`check_listing`), or ``None``."""
    if most is not None and len(items) > most:
        return f"listed {len(items)} {noun or 'entries '}for limit={most}"
    seen: set[Any] = set()
    for at, item in enumerate(items):
        shown = f"{noun}{item!r:.80}"
        if item in seen:
            return f"listed {shown} twice"
        seen.add(item)
        if ordered and at and not items[at - 1] < item:
            return f"listed {shown} after {noun}{items[at - 1]!r:.80}: out of order"
        if after is not None and not after < item:
            return f"listed {shown}, not after {noun}{after!r:.80} as asked"
        if not_at is not None and item == not_at:
            return f"listed {shown}, which it was asked to start after"
        if (low is not None and item < low) or (high is not None and high < item):
            return f"listed {shown}, outside the range asked for ({low!r:.80} to {high!r:.80})"
        if among is not None and item not in among:
            return f"listed {shown}, which was not asked for"
    return None


def revision(body: Any, policy: RetryPolicy, db: str, sent: str | None = None) -> str:
    """The ``rev`` of a write's answer, checked to be a revision string."""
    rev = expect_object(body, policy, db, "rev", sent=sent)["rev"]
    if not isinstance(rev, str) or not rev:
        raise answer_error(policy, db, f"the rev is {describe(rev)}, not a revision string", sent)
    return rev


def couchdb_error(response: Response) -> tuple[str, str] | None:
    """CouchDB's ``(error, reason)`` of an error answer; ``None`` when it is not CouchDB's
    (a proxy's page, say)."""
    try:
        body = loads(response.body)
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("error"), str):
        return None
    reason = body.get("reason")
    return body["error"], reason if isinstance(reason, str) else ""


def status_error(response: Response, policy: RetryPolicy, db: str, sent: str) -> ServerError:
    """The couchids exception for an error status; its message names the operation, the
    database and the request, and its cause is the driver's (masked) exception."""
    error = _status_error(response, policy, db, sent)
    error.__cause__ = response.cause
    error.__suppress_context__ = True
    return error


def _status_error(response: Response, policy: RetryPolicy, db: str, sent: str) -> ServerError:
    head = f"{policy.operation} on {db!r}" + (f" ({sent})" if sent else "")
    status = response.status
    found = couchdb_error(response)
    if found is not None:
        error, reason = found
        text = (error + (f": {reason}" if reason else ""))[:400]
    else:
        text = f"not a CouchDB answer: {describe(response)}"
    if status == 404:
        return DatabaseNotFoundError(
            f"{head}: database {db!r} does not exist (or the document path is wrong): {text}",
            status,
        )
    if status in (401, 403):
        hint = response.hint or "check CLOUDANT_USERNAME/CLOUDANT_PASSWORD or CLOUDANT_APIKEY"
        return UnauthorizedError(
            f"{head}: the server refused access (HTTP {status}): {text}; {hint}", status
        )
    if status == 429:
        return RateLimitedError(
            f"{head}: rate limited (HTTP 429) after the client's retries; enable or "
            "raise retries with client.enable_retries() or CLOUDANT_ENABLE_RETRIES",
            status,
        )
    return ServerError(f"{head}: the server answered HTTP {status}: {text}", status)


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful answer: its HTTP status (a write's 201 or 202 matters), its JSON, and the
    request it answers (for messages)."""

    status: int
    body: Any
    sent: str = ""


class Refusal:
    """Answers :func:`ask` returns instead of raising, when the caller asks for them."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: The server answered 409 Conflict.
CONFLICT: Final = Refusal("CONFLICT")
#: The server answered 404 Not Found (CouchDB's own 404, not a proxy's).
MISSING: Final = Refusal("MISSING")


@dataclass
class Attempts:
    """What the failed attempts of some requests tell about the server's side of them."""

    #: Whether any of them may have been carried out (a 5xx, or an answer lost).
    maybe_carried_out: bool = False


def ask(
    request: Request,
    policy: RetryPolicy,
    db: str,
    *,
    expect: tuple[Refusal, ...] = (),
    attempts: Attempts | None = None,
    raw: bool = False,
) -> Program[Any]:
    """Send ``request``, retrying lost answers; return its :class:`Reply` (its JSON decoded,
    or with ``raw`` its bytes).

    A 409 or 404 comes back as :data:`CONFLICT` / :data:`MISSING` when listed in ``expect``;
    every other failure raises the mapped :class:`~couchids.ServerError`, and so does a
    success answer that is not JSON. Attempts are retried on transient failures up to
    ``policy.retries`` times, never past the deadline. ``attempts``, when given, learns
    whether a failed attempt may have been carried out.
    """
    attempt = 0
    while True:
        outcome = yield Send(request, policy, db, attempt + 1)
        if isinstance(outcome, Response):
            status = outcome.status
            if 200 <= status < 300:
                body = outcome.body if raw else _json(outcome, policy, db, request)
                return Reply(status, body, request.sent)
            if attempts is not None and status >= 500:
                attempts.maybe_carried_out = True
            if status == 409 and CONFLICT in expect:
                return CONFLICT
            if status == 404 and MISSING in expect and couchdb_error(outcome) is not None:
                return MISSING
            error = status_error(outcome, policy, db, request.sent)
            transient, login, retry_after = status in TRANSIENT_STATUSES, False, outcome.retry_after
        else:
            if attempts is not None and outcome.maybe_run:
                attempts.maybe_carried_out = True
            error, transient, login, retry_after = (
                outcome.error,
                outcome.transient,
                outcome.login,
                None,
            )
        if attempt >= policy.retries or not transient or login:
            raise error
        wait = policy.delay(retry_after if error.status == 429 else None, attempt)
        left = policy.remaining()
        if left is not None and wait >= left:
            raise error
        yield policy.pause(wait, Send(request, policy, db, attempt + 2))
        attempt += 1


def _json(response: Response, policy: RetryPolicy, db: str, request: Request) -> Any:
    if response.status == 204 or not response.body:
        return None
    if "json" not in response.content_type and response.content_type:
        raise answer_error(policy, db, describe(response), request.sent)
    try:
        return loads(response.body)
    except ValueError:
        raise answer_error(
            policy, db, f"unreadable JSON (HTTP {response.status})", request.sent
        ) from None


# -- what couchids learns about a database ------------------------------------------------------


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


class FactsCache(dict[str, DatabaseFacts]):
    """What a driver has learnt through one client: the facts of each database by name, and
    which server it is (``server_kind``, see ``couchids.core.counting.server_kind``)."""

    server_kind: str | None = None
    #: The ``version`` of the server's welcome (``None``: not read yet, or not given).
    server_version: str | None = None
    #: Ids per ``_purge`` request the server was found to take, once it refused more
    #: (``None``: as its version says, see ``couchids.core.expiry.purge_batch_for``).
    purge_batch: int | None = None


def database_facts(known: FactsCache, db: str, policy: RetryPolicy) -> Program[DatabaseFacts]:
    """The :class:`DatabaseFacts` of ``db``, from one ``GET /{db}`` per ``known`` cache."""
    facts = known.get(db)
    if facts is not None:
        return facts
    reply = yield from ask(Request("GET", path(db)), policy, db)
    info = expect_object(reply.body, policy, db, sent=reply.sent)
    cluster, props = info.get("cluster"), info.get("props")
    copies = cluster.get("n", 1) if isinstance(cluster, dict) else 1
    partitioned = props.get("partitioned", False) if isinstance(props, dict) else False
    facts = DatabaseFacts(
        partitioned=partitioned is True,
        copies=copies
        if isinstance(copies, int) and not isinstance(copies, bool) and copies >= 1
        else 1,
    )
    known[db] = facts
    return facts


def live_leaves(
    known: FactsCache, db: str, doc_id: str, policy: RetryPolicy
) -> Program[list[dict[str, Any]]]:
    """Every live (not deleted) leaf revision of ``doc_id``, read from every copy.

    ``GET /{db}/{doc_id}?open_revs=all&r=N`` with ``N`` the database's copies: a revision held
    by only one copy (a cluster write that reached fewer copies than a quorum, or two first
    writes of one id that reached different copies) is seen as long as that copy answers. An
    empty list means no copy that answered holds a live revision.
    """
    copies = (yield from database_facts(known, db, policy)).copies
    # Attachment data too: a compressed one's digest is not the MD5 of its bytes.
    params = {"open_revs": "all", "r": str(copies), "attachments": "true"}
    reply = yield from ask(Request("GET", path(db, doc_id), params), policy, db, expect=(MISSING,))
    if reply is MISSING:
        return []
    if not isinstance(reply.body, list):
        raise answer_error(
            policy,
            db,
            f"open_revs=all of {doc_id!r} answered {describe(reply.body)}, not a list",
            reply.sent,
        )
    leaves = [entry.get("ok") for entry in reply.body if isinstance(entry, dict)]
    live = [leaf for leaf in leaves if isinstance(leaf, dict) and not leaf.get("_deleted")]
    for leaf in live:
        if not isinstance(leaf.get("_rev"), str):
            raise answer_error(
                policy, db, f"a revision of {doc_id!r} has no _rev: {describe(leaf)}", reply.sent
            )
    return live


def delete_revision(db: str, doc_id: str, rev: str, policy: RetryPolicy) -> Program[None]:
    """Delete revision ``rev`` of ``doc_id`` (one couchids wrote itself) on every copy, the
    ones that do not hold it yet included.

    The deletion is written as replication writes it: a tombstone whose parent is ``rev``
    (``_bulk_docs`` with ``new_edits=false``). A plain ``DELETE ?rev=`` is refused by a copy
    that lacks ``rev``, so on a cluster a majority of such copies answers 409 while the copy
    that holds it (paused, or behind) never hears of the deletion, and ``rev`` comes back as
    a live conflict once that copy catches up. The tombstone is taken by every copy, joins
    ``rev``'s history wherever the two meet, and is the same revision on every attempt, so
    writing it again changes nothing.
    """
    start, _, digest = rev.partition("-")
    if not start.isdigit() or not digest:
        raise answer_error(policy, db, f"{describe(rev)} is not a revision", None)
    tomb = hashlib.md5(f"couchids-delete:{rev}".encode(), usedforsecurity=False).hexdigest()
    child = int(start) + 1
    tombstone = {
        "_id": doc_id,
        "_rev": f"{child}-{tomb}",
        "_deleted": True,
        "_revisions": {"start": child, "ids": [tomb, digest]},
    }
    body = {"docs": [tombstone], "new_edits": False}
    reply = yield from ask(post_json(path(db, "_bulk_docs"), body), policy, db)
    rows = reply.body if isinstance(reply.body, list) else [reply.body]
    refused = [row for row in rows if not isinstance(row, dict) or "error" in row]
    if refused:
        raise answer_error(
            policy, db, f"the deletion of {doc_id!r} {rev} was refused: {describe(refused[0])}"
        )


def winner(leaves: list[dict[str, Any]]) -> dict[str, Any]:
    """The leaf CouchDB shows as the document: the longest history, then the highest rev."""

    def rank(leaf: dict[str, Any]) -> tuple[int, str]:
        pos, _, digest = str(leaf["_rev"]).partition("-")
        return (int(pos) if pos.isdigit() else 0, digest)

    return max(leaves, key=rank)
