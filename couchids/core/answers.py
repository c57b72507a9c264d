"""What an answer means: the shape checks (:func:`expect_object`, :func:`expect_rows`,
:func:`check_span`, :func:`check_listing`, :func:`revision`) say what was wrong with an answer
that is not CouchDB's, and :func:`status_error` turns an error status into the couchids
exception for it."""

from __future__ import annotations

import operator
from collections.abc import Collection, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from couchids.core.effects import Response
from couchids.core.exactjson import loads
from couchids.core.policy import RetryPolicy
from couchids.errors import (
    DatabaseNotFoundError,
    RateLimitedError,
    ServerError,
    UnauthorizedError,
)

#: The longest piece of a server's answer quoted in a message.
QUOTE_LEN: Final = 120

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
    """A :class:`~couchids.ServerError` for an answer of the wrong shape: ``problem`` says what
    was wrong."""
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
            f"{head}: rate limited (HTTP 429): the server had no room for the request before "
            "the call's deadline; give the call a longer timeout, keep the client to a lower "
            "rate (couchids.connect(rate=...)), or raise the instance's capacity",
            status,
        )
    return ServerError(f"{head}: the server answered HTTP {status}: {text}", status)
