"""What an answer means: the shape checks say what was wrong with an answer that is not
CouchDB's, and :func:`status_error` turns an error status into the couchids exception for it."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Collection, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from couchids.core.effects import Response
from couchids.core.exactjson import loads
from couchids.core.policy import RetryPolicy
from couchids.errors import DatabaseNotFoundError, RateLimitedError, ServerError, UnauthorizedError

#: The longest piece of a server's answer quoted in a message.
QUOTE_LEN: Final = 120
#: The longest reason of an error answer quoted in a message.
REASON_LEN: Final = 400
# What ends an excerpt cut short: the last word that fits is dropped up to one of these, none
# of which a URL's user info holds unencoded.
_PART_WORD: Final = re.compile(r"[^\s\"'<>{}\[\]]+\Z")


def excerpt(text: str, limit: int = QUOTE_LEN) -> str:
    """``text``, or its first ``limit`` characters and ``...``, cut at the end of a word:
    masking, which comes after, would not know a credential cut in two (a URL's user info
    without its ``@``, part of a password) for one.

    >>> excerpt("could not open http://bob:s3cret@db.example/shop", 36)
    'could not open...'
    """
    if len(text) <= limit:
        return text
    head = text[:limit]
    if not text[limit].isspace():
        head = _PART_WORD.sub("", head)
    return head.rstrip() + "..."


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
    return f"{type(body).__name__} {excerpt(repr(body))}"


def answer_error(
    policy: RetryPolicy, db: str, problem: str, sent: str | None = None
) -> ServerError:
    """A :class:`~couchids.ServerError` for an answer of the wrong shape: ``problem`` says what
    was wrong."""
    return ServerError(f"{_head(policy, db, sent)}: not a CouchDB answer: {problem}")


def _head(policy: RetryPolicy, db: str, sent: str | None) -> str:
    sent = current_request.get() if sent is None else sent
    return f"{policy.operation} on {db!r}" + (f" ({sent})" if sent else "")


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
    """The keys one ``_all_docs`` request asked for: from ``start`` towards ``end`` (both
    inclusive; ``end=None``: to the end of the index), ``descending`` or not."""

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
    """The rows of an ``_all_docs`` answer, each an object with a string ``id`` (and with
    ``include_docs`` a document, unless it was deleted as it was read, whose ``_id`` is the
    row's: the row's id is what is checked against the window), in order inside ``span`` when
    given (:func:`check_span`); else :func:`answer_error`."""
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
        if isinstance(doc, dict) and doc.get("_id") != row["id"]:
            raise answer_error(policy, db, f"row {row['id']!r} holds {describe(doc)}", sent)
    if span is not None:
        check_span([row["id"] for row in rows], span, policy, db, sent)
    return rows


def check_span(
    ids: list[str], span: KeySpan, policy: RetryPolicy, db: str, sent: str | None = None
) -> None:
    """Refuse an answer whose ids are not strictly in the span's key order, or not inside it.

    Every walk of ``_all_docs`` starts each request at the last id it has seen, so an answer
    that passes moves forward: no id twice, none outside the range, no loop. Either id order
    passes: CouchDB's (UTF-8 bytes, as ``str``) or PouchDB Server's (UTF-16 code units).

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


def _span_problem(ids: list[str], span: KeySpan, key: Callable[[str], Any]) -> str | None:
    keys = [key(i) for i in ids]
    start = None if span.start is None else key(span.start)
    end = None if span.end is None else key(span.end)
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
    """Refuse a listing (``_all_dbs``, ``_changes``, ``_scheduler/docs``, ``_bulk_docs`` rows,
    ``_all_docs`` by ``keys``, ``open_revs=all``) that breaks what the server promised of it.

    ``items`` are checked for each at most once, always; and for what the caller knows the
    server promises: ascending (``ordered``), each above ``after``, none equal to ``not_at``
    (a start after an opaque sequence), from ``low`` to ``high``, one of ``among``, at most
    ``most`` of them. ``what`` and ``noun`` (``"seq "``) name the listing and an item.

    >>> policy = RetryPolicy.checked(0, 0, None, "databases")
    >>> check_listing("_all_dbs", ["ev-1", "ev-2"], policy, "ev", ordered=True, low="ev-")
    >>> check_listing("_all_dbs", ["ev-1", "ev-2", "ev-1"], policy, "ev")
    Traceback (most recent call last):
      ...
    couchids.errors.ServerError: databases on 'ev': ...: _all_dbs listed 'ev-1' twice
    """

    def refused(problem: str) -> ServerError:
        return answer_error(policy, db, f"{what} listed {problem}", sent)

    if most is not None and len(items) > most:
        raise refused(f"{len(items)} {noun or 'entries '}for limit={most}")
    seen: set[Any] = set()
    for at, item in enumerate(items):
        shown = f"{noun}{item!r:.80}"
        if item in seen:
            raise refused(f"{shown} twice")
        seen.add(item)
        if ordered and at and not items[at - 1] < item:
            raise refused(f"{shown} after {noun}{items[at - 1]!r:.80}: out of order")
        if after is not None and not after < item:
            raise refused(f"{shown}, not after {noun}{after!r:.80} as asked")
        if not_at is not None and item == not_at:
            raise refused(f"{shown}, which it was asked to start after")
        if (low is not None and item < low) or (high is not None and high < item):
            raise refused(f"{shown}, outside the range asked for ({low!r:.80} to {high!r:.80})")
        if among is not None and item not in among:
            raise refused(f"{shown}, which was not asked for")


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
    """The couchids exception for an error status, naming the operation, the database and the
    request; its cause is the driver's (masked) exception."""
    head, status = _head(policy, db, sent), response.status
    found = couchdb_error(response)
    if found is not None:
        text = excerpt(found[0] + (f": {found[1]}" if found[1] else ""), REASON_LEN)
    else:
        text = f"not a CouchDB answer: {describe(response)}"
    error: ServerError
    if status == 404 and found is not None:
        # Only CouchDB's own 404 says a database is missing: a proxy's page (a wrong path, a
        # route it lacks) is a failure, never a database that holds nothing.
        error = DatabaseNotFoundError(
            f"{head}: database {db!r} does not exist (or the document path is wrong): {text}",
            status,
        )
    elif status in (401, 403):
        hint = response.hint or "check CLOUDANT_USERNAME/CLOUDANT_PASSWORD or CLOUDANT_APIKEY"
        error = UnauthorizedError(
            f"{head}: the server refused access (HTTP {status}): {text}; {hint}", status
        )
    elif status == 429:
        error = RateLimitedError(
            f"{head}: rate limited (HTTP 429): the server had no room for the request before "
            f"the call's deadline; {RateLimitedError.ADVICE}",
            status,
        )
    else:
        error = ServerError(f"{head}: the server answered HTTP {status}: {text}", status)
    error.__cause__ = response.cause
    error.__suppress_context__ = True
    return error
