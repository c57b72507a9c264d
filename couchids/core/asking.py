"""Asking the server: :func:`ask` sends a request, retries it while its answer is lost and the
deadline allows, and turns what came back into a :class:`Reply`, a :class:`Refusal` the caller
expects, or the couchids exception for it. It is the one place requests are retried."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from couchids.core.answers import answer_error, couchdb_error, describe, status_error
from couchids.core.effects import Program, Request, Response, Send, Sleep
from couchids.core.exactjson import loads
from couchids.core.policy import RetryPolicy

#: Statuses sent again: the request may or may not have been carried out (408 and 429: it was
#: not), so a write retries with the same id.
TRANSIENT_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful answer: its HTTP status (a write's 201 or 202 matters), its JSON, and the
    request it answers."""

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
    """Whether any failed attempt of some requests may have been carried out (a 5xx, or an
    answer lost)."""

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
    """Send ``request``, retrying transient failures up to ``policy.retries`` times, never past
    the deadline; return its :class:`Reply` (its JSON decoded, or with ``raw`` its bytes).

    A 409 or 404 comes back as :data:`CONFLICT` / :data:`MISSING` when listed in ``expect``;
    every other failure, and a success that is not JSON, raises the mapped
    :class:`~couchids.ServerError`. ``attempts`` learns whether a failed attempt may have
    been carried out.
    """
    attempt = 0
    while True:
        outcome = yield Send(request, policy, db, attempt + 1)
        retry_after = None
        if isinstance(outcome, Response):
            status = outcome.status
            if 200 <= status < 300:
                _of_json(outcome, policy, db, request)
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
            error, transient, login = outcome.error, outcome.transient, outcome.login
        if attempt >= policy.retries or not transient or login:
            raise error
        wait = policy.delay(retry_after if error.status == 429 else None, attempt)
        left = policy.remaining()
        if left is not None and wait >= left:
            raise error
        yield Sleep.within(policy, wait, Send(request, policy, db, attempt + 2))
        attempt += 1


def _of_json(response: Response, policy: RetryPolicy, db: str, request: Request) -> None:
    """Refuse a body of another type than JSON (one of no type is read as JSON), as what it
    is (``text/plain (5 bytes)``), whether it is decoded here or read as bytes."""
    if response.status == 204 or not response.body:
        return
    if "json" not in response.content_type and response.content_type:
        raise answer_error(policy, db, describe(response), request.sent)


def _json(response: Response, policy: RetryPolicy, db: str, request: Request) -> Any:
    if response.status == 204 or not response.body:
        return None
    try:
        return loads(response.body)
    except ValueError:
        # In the words of a read of _all_docs, which takes it as bytes (pages.rows_of).
        raise answer_error(policy, db, describe(response.body), request.sent) from None
