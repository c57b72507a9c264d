"""What newer Apache CouchDB servers offer and couchids uses where a server has it.

- ``GET /{db}/_changes?since=2026-01-09T19:01:02Z`` (CouchDB 3.6, "Time-based changes feeds";
  exactly ``YYYY-MM-DDTHH:MM:SSZ``, fabric_view_changes.erl). The server answers from the start
  of the time bin holding the time (couch_time_seq.erl: bins of 3 hours at the finest), so
  ``couchids.core.following`` filters the rows by the time in each id.
- ``GET``/``PUT /{db}/_auto_purge`` with ``{"deleted_document_ttl": "90_days"}``
  (chttpd_db.erl ``handle_auto_purge_req``): the scanner's auto purge plugin purges deleted
  documents older than that; ``"infinity"`` turns it off. Units: couch_scanner_util.erl
  ``parse_period_unit``.

A server is asked once per client with a ``GET`` of the endpoint: its welcome cannot tell
(main-branch builds report 3.5.2 and list neither feature). A server without the endpoint
answers 404 (CouchDB 3.4.3, checked), 400, 405 or 501.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

from couchids.core.answers import answer_error, describe
from couchids.core.asking import ask
from couchids.core.effects import Program, Request, path
from couchids.core.exactjson import dumps
from couchids.core.facts import FactsCache, database_facts
from couchids.core.policy import RetryPolicy
from couchids.errors import InvalidArgumentError, ServerError

__all__ = [
    "AUTO_PURGE",
    "NO_FEATURE_STATUSES",
    "TIME_SEQ",
    "changes_time",
    "has_auto_purge",
    "has_time_seq",
    "retention_text",
    "set_deleted_retention",
]

#: The endpoint that shows a database's map of times to sequences (CouchDB 3.6).
TIME_SEQ: Final = "_time_seq"
#: The endpoint of a database's auto purge settings (CouchDB 3.6).
AUTO_PURGE: Final = "_auto_purge"
#: What a server without an endpoint answers a ``GET`` of it with (the database exists).
NO_FEATURE_STATUSES: Final = frozenset({400, 404, 405, 501})
#: The units of a ttl couchids writes, largest first, in seconds (CouchDB's names).
_TTL_UNITS: Final = (("weeks", 7 * 86_400), ("days", 86_400), ("hours", 3600), ("min", 60))


def changes_time(ms: int) -> str:
    """The ``since`` of a ``_changes`` request that starts at ``ms`` (epoch milliseconds),
    cut to the second (the reader filters the rows before it).

    >>> changes_time(1767985262999)
    '2026-01-09T19:01:02Z'
    """
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def has_time_seq(known: FactsCache, db: str, policy: RetryPolicy) -> Program[bool]:
    """Whether the server reads a time as ``_changes``' ``since`` (its ``_time_seq`` answers a
    map of times to sequences), asked once per client.

    Raises:
        DatabaseNotFoundError: ``db`` does not exist (looked up first).
        ServerError: (or a subclass) the ``GET`` failed otherwise.
    """
    if known.time_seq is None:
        found = yield from _endpoint(known, db, TIME_SEQ, policy)
        known.time_seq = isinstance(found, dict) and isinstance(found.get("time_seq"), dict)
    return known.time_seq


def has_auto_purge(known: FactsCache, db: str, policy: RetryPolicy) -> Program[bool]:
    """Whether the server keeps a database's auto purge settings, asked once per client
    (raises as :func:`has_time_seq`)."""
    if known.auto_purge is None:
        known.auto_purge = isinstance((yield from _endpoint(known, db, AUTO_PURGE, policy)), dict)
    return known.auto_purge


def _endpoint(known: FactsCache, db: str, name: str, policy: RetryPolicy) -> Program[object]:
    """The answer of ``GET /{db}/{name}`` once ``db`` is found, or ``None`` when the server
    has no such endpoint: both by ``policy``'s deadline (the caller's, one for its call)."""
    yield from database_facts(known, db, policy)
    try:
        reply = yield from ask(Request("GET", path(db, name)), policy, db)
    except ServerError as exc:
        if exc.status not in NO_FEATURE_STATUSES:
            raise
        return None
    return reply.body


def retention_text(retention: timedelta | float | None) -> str:
    """``retention`` as CouchDB's ``deleted_document_ttl``: ``None`` is ``"infinity"``, a time
    is written in the largest unit that holds it whole.

    Raises:
        InvalidArgumentError: not a ``timedelta`` or a whole number of seconds from 1.

    >>> retention_text(timedelta(days=90)), retention_text(5400), retention_text(None)
    ('90_days', '90_min', 'infinity')
    """
    if retention is None:
        return "infinity"
    if isinstance(retention, timedelta):
        seconds = retention.total_seconds()
    elif isinstance(retention, int | float) and not isinstance(retention, bool):
        seconds = float(retention)
    else:
        raise InvalidArgumentError(
            f"retention={retention!r:.80}: pass a datetime.timedelta, a number of seconds, "
            "or None (deleted documents are never purged)"
        )
    if not seconds >= 1 or seconds != int(seconds) or seconds > 10**12:
        raise InvalidArgumentError(
            f"retention={retention!r:.80}: a whole number of seconds, at least 1 (CouchDB "
            "keeps a ttl in whole seconds), or None"
        )
    whole = int(seconds)
    for unit, size in _TTL_UNITS:
        if whole % size == 0:
            return f"{whole // size}_{unit}"
    return f"{whole}_sec"


def set_deleted_retention(
    known: FactsCache, db: str, retention: timedelta | float | None, policy: RetryPolicy
) -> Program[None]:
    """The program of :meth:`couchids.Database.set_deleted_retention`, its argument checked
    now: the database lookup, the check of the endpoint and the write keep one deadline."""
    ttl = retention_text(retention)
    return _set_retention(known, db, ttl, policy)


def _set_retention(known: FactsCache, db: str, ttl: str, policy: RetryPolicy) -> Program[None]:
    if not (yield from has_auto_purge(known, db, policy)):
        raise ServerError(
            f"the server of {db!r} keeps no auto purge settings (GET /{db}/{AUTO_PURGE} found "
            "none): Apache CouchDB 3.6 and later have them, with the auto purge plugin of its "
            "scanner enabled; IBM Cloudant and PouchDB Server have no purge at all. Nothing "
            "was changed; Database.expire(before, purge=True) purges on CouchDB 2.3 and later",
            501,
        )
    body = dumps({"deleted_document_ttl": ttl})
    reply = yield from ask(Request("PUT", path(db, AUTO_PURGE), body=body), policy, db)
    if not isinstance(reply.body, dict) or reply.body.get("ok") is not True:
        raise answer_error(
            policy, db, f"PUT {AUTO_PURGE} answered {describe(reply.body)}", reply.sent
        )
