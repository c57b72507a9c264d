"""Talking to the server through ``ibmcloudant``: every request couchids sends goes through
here. Errors become couchids exceptions, lost answers are retried (:func:`request`), and what
couchids learns about a database is asked once per client (:func:`database_facts`).

Every request goes through the caller's ``CloudantV1`` client, so authentication, retries
(``enable_retries()`` or ``CLOUDANT_ENABLE_RETRIES``) and timeouts are the client's own.
"""

from __future__ import annotations

import random
import re
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import requests
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1
from urllib3.exceptions import MaxRetryError, NewConnectionError, ResponseError

from .errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    RateLimitedError,
    ServerError,
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


def server_error(exc: Exception, db: str) -> ServerError:
    """The couchids exception for a failure of a request about database ``db``."""
    status = status_of(exc)
    if status:
        reason = (exc.message if isinstance(exc, ApiException) else str(exc)) or "no reason given"
        if status == 404:
            return DatabaseNotFoundError(
                f"database {db!r} does not exist (or the document path is wrong): {reason}",
                status,
            )
        if status in (401, 403):
            return UnauthorizedError(
                f"the server refused access to {db!r} (HTTP {status}): {reason}; "
                "check CLOUDANT_USERNAME/CLOUDANT_PASSWORD or CLOUDANT_APIKEY",
                status,
            )
        if status == 429:
            return RateLimitedError(
                f"rate limited on {db!r} (HTTP 429) after the client's retries; enable or "
                "raise retries with client.enable_retries() or CLOUDANT_ENABLE_RETRIES",
                status,
            )
        return ServerError(f"the server answered HTTP {status} for {db!r}: {reason}", status)
    return ServerError(f"could not reach the server for {db!r}: {_network_reason(exc)}")


# requests wraps the socket error in two layers of urllib3 text; its errno line is the news.
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


def _network_reason(exc: Exception) -> str:
    """The short cause of a network failure, such as ``Connection refused``."""
    found = _ERRNO.search(str(exc))
    if found:
        return found.group(1).strip()
    return f"{type(exc).__name__}: {exc}"


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
    return isinstance(exc, requests.ConnectionError | requests.Timeout)


def call(db: str, request: Callable[[], Any]) -> Any:
    """Run ``request`` (an ``ibmcloudant`` call) and return its JSON result.

    Raises:
        ServerError: or a subclass, for any HTTP error or unreachable server; the original
            exception is the ``__cause__``.
    """
    try:
        return request().get_result()
    except (ApiException, requests.RequestException) as exc:
        raise server_error(exc, db) from exc


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


def database_facts(client: CloudantV1, db: str) -> DatabaseFacts:
    """The :class:`DatabaseFacts` of ``db``, from one ``GET /{db}`` per client and database."""
    with _facts_lock:
        known = _facts.get(client, {}).get(db)
    if known is not None:
        return known
    info = call(db, lambda: client.get_database_information(db=db))
    copies = (info.get("cluster") or {}).get("n", 1)
    facts = DatabaseFacts(
        partitioned=bool((info.get("props") or {}).get("partitioned", False)),
        copies=copies if isinstance(copies, int) and copies >= 1 else 1,
    )
    with _facts_lock:
        _facts.setdefault(client, {})[db] = facts
    return facts


def is_partitioned(client: CloudantV1, db: str) -> bool:
    """Whether ``db`` is a partitioned database, asked once per client and database."""
    return database_facts(client, db).partitioned


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and after how long, a request whose answer was lost is sent again."""

    retries: int
    backoff: float

    @classmethod
    def checked(cls, retries: int, backoff: float) -> RetryPolicy:
        """The policy for the public arguments ``retries`` and ``backoff``, checked."""
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
        return cls(retries, float(backoff))

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
    every other failure raises the mapped :class:`~couchids.ServerError`. ``attempts``, when
    given, learns whether a failed attempt may have been carried out.
    """
    attempt = 0
    while True:
        try:
            response = send()
            return Reply(int(response.get_status_code() or 0), response.get_result())
        except (ApiException, requests.RequestException) as exc:
            status = status_of(exc) if isinstance(exc, ApiException) else 0
            if attempts is not None and may_have_run(exc):
                attempts.maybe_carried_out = True
            if status == 409 and CONFLICT in expect:
                return CONFLICT
            if status == 404 and MISSING in expect:
                return MISSING
            if attempt >= policy.retries or not is_transient(exc):
                raise server_error(exc, db) from exc
            time.sleep(policy.delay(exc, attempt))
            attempt += 1


def live_leaves(
    client: CloudantV1, db: str, doc_id: str, policy: RetryPolicy
) -> list[dict[str, Any]]:
    """Every live (not deleted) leaf revision of ``doc_id``, read from every copy.

    ``GET /{db}/{doc_id}?open_revs=all&r=N`` with ``N`` the database's copies: a revision held
    by only one copy (a cluster write that reached fewer copies than a quorum, or two first
    writes of one id that reached different copies) is seen as long as that copy answers. An
    empty list means no copy that answered holds a live revision.
    """
    copies = database_facts(client, db).copies
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
        raise ServerError(f"open_revs=all for {doc_id!r} in {db!r} answered {reply.body!r:.200}")
    leaves = [entry.get("ok") for entry in reply.body if isinstance(entry, dict)]
    return [leaf for leaf in leaves if isinstance(leaf, dict) and not leaf.get("_deleted")]


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
