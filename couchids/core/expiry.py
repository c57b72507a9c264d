"""Deleting the documents of a type made before a time: CouchDB has no document TTL.

The key range of ``[1970, before)`` for the type and form is read in time order, oldest
first, without documents (a row carries the current revision); only ids the form's matcher
accepts are taken, so nothing of another type, form or time is ever touched. (A loose form,
``utc_random``, cannot tell its ids from CouchDB's ``random`` ids: a type that holds those
is refused before anything is read, see :func:`couchids.core.scan.check_one_form`.) Each
page goes to ``_bulk_docs`` as ``{"_id", "_rev", "_deleted": true}``, while the next page is
read. A document changed since it was read answers 409 and is reported, never forced.
Deleted documents leave ``_all_docs``, so a second run simply finds what is left; a
:class:`~couchids.Checkpoint` also lets it skip what the first run already reported.

``purge=True`` then removes the deleted revisions for good with ``POST /{db}/_purge``
(CouchDB 2.3 and later). Cloudant has no ``_purge``, nor has PouchDB Server, and a server may
say it is CouchDB and still have none (a proxy in front of it, a gateway): before anything
is deleted, :func:`check_purge` sends an empty purge, which changes nothing where ``_purge``
exists, and refuses the expiry where it does not. Each purge request holds as many ids as
the server takes: 100 before CouchDB 3.5.1 (its ``[purge] max_document_id_number``), a
whole page from 3.5.1, which has no such limit, and fewer once a server refuses a request
as too large (a limit set lower by its administrator).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from couchids.core.answers import answer_error, check_listing, describe, expect_object
from couchids.core.arguments import count as check_size
from couchids.core.arguments import flag as check_flag
from couchids.core.arguments import function
from couchids.core.asking import MISSING, ask
from couchids.core.counting import server_kind
from couchids.core.effects import END, Program, Puller, Request, Start, Wait, path, post_json
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import KeyRange, in_window, window_keys
from couchids.core.policy import RetryPolicy
from couchids.core.revisions import delete_revision, live_leaves
from couchids.core.scan import (
    Checkpoint,
    check_checkpoint,
    check_one_form,
    range_pages,
)
from couchids.errors import InvalidArgumentError, ServerError
from couchids.idforms.forms import KUUID, IdForm
from couchids.idforms.times import TimeLike, to_ms

__all__ = [
    "DEFAULT_EXPIRE_BATCH",
    "PLAIN_SCOPE",
    "PURGE_BATCH",
    "ExpireReport",
    "check_purge",
    "delete_revisions",
    "expire",
    "expire_rows",
    "index_rows",
    "purge_batch_for",
]

#: Documents per ``_bulk_docs`` delete request.
DEFAULT_EXPIRE_BATCH: Final = 500
#: Ids per ``_purge`` request before CouchDB 3.5.1, whose ``[purge] max_document_id_number``
#: is 100 by default.
PURGE_BATCH: Final = 100
#: The first CouchDB whose ``_purge`` takes any number of ids by default: 3.5.1 removed
#: ``max_document_id_number`` and made ``max_revisions_number`` unlimited
#: (https://docs.couchdb.org/en/3.5.1/whatsnew/3.5.html, "Purge improvements").
UNLIMITED_PURGE_SINCE: Final = (3, 5, 1)
#: What answers a request to an endpoint the server does not have: CouchDB's own 404, a
#: proxy's 404 or 405, a gateway's 501.
NO_ENDPOINT_STATUSES: Final = frozenset({404, 405, 501})
#: CouchDB's words for a purge request over its limits (a 400).
_OVER_LIMIT: Final = re.compile(r"exceeded maximum number", re.IGNORECASE)
_VERSION: Final = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
#: Rounds of deleting a conflicted document's live leaves before it is reported as failed.
LEAF_ROUNDS: Final = 3
#: Whether a document is live, and the revision of its tombstone when it is not.
State = tuple[bool, str | None]
#: The scope of rows of any id (:func:`expire_rows`): a plain key range, read in key order
#: (any form whose keys rise with time would do), in the global index of a partitioned one.
PLAIN_SCOPE: Final[tuple[IdForm, str | None]] = (KUUID, None)
#: The whole primary index, from its first id (read to its end: ``range_pages(to_the_end)``).
_EVERYTHING: Final = KeyRange(low="", high="", prefix="")


@dataclass
class ExpireReport:
    """What :meth:`couchids.Database.expire` did (or, in a dry run, would do).

    Attributes:
        dry_run: nothing was changed.
        matched: documents of the type made before the time that were found.
        deleted: documents this call deleted (in a dry run, 0).
        gone: documents already deleted when their delete arrived (by another client, or by
            this call's own earlier attempt whose answer was lost).
        conflicts: ids of documents changed since they were read (409): left alone.
        failed: ``(id, reason)`` of documents the server refused to delete (a validation
            function, a permission).
        purged: documents whose deleted revision was purged.
        checkpoint: the last id handled; pass it back to continue after a stop.
    """

    dry_run: bool
    matched: int = 0
    deleted: int = 0
    gone: int = 0
    conflicts: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    purged: int = 0
    checkpoint: Checkpoint = field(default_factory=Checkpoint)


def expire(
    known: FactsCache,
    db: str,
    before: TimeLike,
    *,
    type: str | None,
    form: IdForm,
    dry_run: bool,
    purge: bool,
    batch_size: int,
    checkpoint: Checkpoint | None,
    on_progress: Callable[[ExpireReport], None] | None,
    retries: int,
    backoff: float,
    timeout: float | None,
) -> Program[ExpireReport]:
    """The program of :meth:`couchids.Database.expire` (see there); arguments checked now."""
    policy = RetryPolicy.checked(retries, backoff, timeout, "expire")
    before_ms = to_ms(before)
    check_size("batch_size", batch_size)
    check_flag("dry_run", dry_run)
    check_flag("purge", purge)
    function("on_progress", on_progress)
    checkpoint = check_checkpoint(checkpoint)
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(f"form={form!r}: pass an IdForm such as couchids.KUUID")
    keys = window_keys(form, type, 0, before_ms)
    mark = checkpoint if checkpoint is not None else Checkpoint()
    report = ExpireReport(dry_run=dry_run, checkpoint=mark)
    inside = in_window(form, type, 0, before_ms)
    return _expire(
        known, db, keys, form, type, inside, purge, batch_size, on_progress, report, policy
    )


def _expire(
    known: FactsCache,
    db: str,
    keys: KeyRange | None,
    form: IdForm,
    doc_type: str | None,
    inside: Callable[[str], bool],
    purge: bool,
    batch_size: int,
    on_progress: Callable[[ExpireReport], None] | None,
    report: ExpireReport,
    policy: RetryPolicy,
) -> Program[ExpireReport]:
    yield from database_facts(known, db, policy)
    yield from check_one_form(known, db, form, doc_type, policy)
    if purge and not report.dry_run:
        yield from check_purge(known, db, policy)
    if keys is None:
        return report
    pages = range_pages(
        known,
        db,
        keys,
        form,
        policy,
        doc_type=doc_type,
        after=report.checkpoint.last_id,
        batch_size=batch_size,
    )
    scope = (form, doc_type)
    return (
        yield from expire_rows(
            known,
            db,
            pages,
            inside,
            report,
            policy,
            purge=purge,
            scope=scope,
            on_progress=on_progress,
        )
    )


def check_purge(known: FactsCache, db: str, policy: RetryPolicy) -> Program[None]:
    """Refuse a purge the server cannot do, before anything is deleted.

    A server whose welcome says it is Cloudant or PouchDB Server has no ``_purge``: refused
    without a request. Any other is asked: ``POST /{db}/_purge`` with ``{}``, an empty purge
    that changes nothing where ``_purge`` exists (CouchDB answers ``{"purged": {}}``), so that
    a server that says it is CouchDB but has no ``_purge`` (``404``, ``405``, ``501``) is found
    now, not after the documents are deleted. A ``404`` is told from a missing database by a
    ``GET /{db}``.

    Raises:
        InvalidArgumentError: the server has no ``_purge``.
        DatabaseNotFoundError: ``db`` does not exist.
        ServerError: (or a subclass) any other failure of the empty purge, such as
            ``UnauthorizedError`` for credentials that may not purge (CouchDB lets only
            admins); or an answer that is not a purge's.
    """
    kind = yield from server_kind(known, policy, db)
    if kind in ("cloudant", "pouchdb"):
        where = {"cloudant": "Cloudant", "pouchdb": "PouchDB Server"}[kind]
        raise InvalidArgumentError(
            f"purge=True: {where} has no _purge (CouchDB 2.3 and later have); nothing was "
            "deleted; expire without purge leaves tombstones, which replicate"
        )
    each = policy.renewed()
    try:
        reply = yield from ask(post_json(path(db, "_purge"), {}), each, db)
    except ServerError as exc:
        if exc.status not in NO_ENDPOINT_STATUSES:
            raise
        if exc.status == 404:
            there = yield from ask(
                Request("GET", path(db)), policy.renewed(), db, expect=(MISSING,)
            )
            if there is MISSING:
                raise
        raise InvalidArgumentError(
            f"purge=True: the server of {db!r} has no _purge (an empty POST /{db}/_purge "
            f"answered HTTP {exc.status}), though it may say it is CouchDB; nothing was "
            "deleted; expire without purge leaves tombstones, which replicate"
        ) from None
    answer = reply.body
    if not isinstance(answer, dict) or not isinstance(answer.get("purged"), dict):
        raise answer_error(
            each,
            db,
            f"an empty _purge answered {describe(answer)}, not CouchDB's purge answer: "
            "purge=True needs a server with _purge; nothing was deleted",
            reply.sent,
        )


def purge_batch_for(version: str | None) -> int | None:
    """Ids per ``_purge`` request a CouchDB of ``version`` (its welcome's) takes by default:
    no limit (``None``) from 3.5.1, :data:`PURGE_BATCH` before it or when it does not say.
    Pure.

    >>> purge_batch_for("3.4.3"), purge_batch_for("3.5.1"), purge_batch_for("3.10.0")
    (100, None, None)
    >>> purge_batch_for(None), purge_batch_for("main")
    (100, 100)
    """
    found = _VERSION.match(version or "")
    if found is None:
        return PURGE_BATCH
    release = tuple(int(part or 0) for part in found.groups())
    return None if release >= UNLIMITED_PURGE_SINCE else PURGE_BATCH


def index_rows(
    known: FactsCache, db: str, policy: RetryPolicy, *, batch_size: int
) -> Program[None]:
    """Emits the rows (ids and revisions) of every document of ``db``, design documents
    included, in key order, ``batch_size`` at a time: what :func:`expire_rows` reads when
    every id of a database is to be looked at. ``DatabaseNotFoundError`` for a missing one."""
    return range_pages(
        known,
        db,
        _EVERYTHING,
        PLAIN_SCOPE[0],
        policy,
        doc_type=None,
        batch_size=batch_size,
        to_the_end=True,
        wanted=lambda _: True,
    )


def expire_rows(
    known: FactsCache,
    db: str,
    pages: Program[None],
    goes: Callable[[str], bool],
    report: ExpireReport,
    policy: RetryPolicy,
    *,
    purge: bool,
    scope: tuple[IdForm, str | None] = PLAIN_SCOPE,
    on_progress: Callable[[ExpireReport], None] | None = None,
) -> Program[ExpireReport]:
    """Delete the documents of the ``_all_docs`` rows ``pages`` emits (ids and revisions, in
    key order) whose id ``goes`` picks, into ``report`` (in a dry run, only count them), and
    purge them with ``purge``; ``goes`` is asked once about each row.

    The next page is read while a page is deleted. ``scope`` is the form and type of the
    rows (:func:`delete_revisions`); :data:`PLAIN_SCOPE` for rows of any id. The caller
    checked the database and the purge (:func:`check_purge`) before.
    """
    dry_run, mark = report.dry_run, report.checkpoint
    rows_of = Puller(pages)
    page = yield from rows_of.next()
    while page is not END:
        # The next page is read while this one's documents are deleted: it starts past this
        # page's last id, so nothing deleted now is in it.
        ahead = None if dry_run else (yield Start(rows_of.next()))
        # The id itself decides, whatever the server answered: nothing of another type, form
        # or time is ever deleted.
        rows = [row for row in page if goes(row["id"])]
        report.matched += len(rows)
        if rows and not dry_run:
            tombstones = yield from delete_revisions(known, db, rows, report, policy, scope=scope)
            if purge and tombstones:
                report.purged += yield from _purge(known, db, tombstones, policy)
        if rows:
            mark.last_id = rows[-1]["id"]
        mark.done += len(rows)
        if on_progress is not None:
            on_progress(report)
        page = (yield from rows_of.next()) if ahead is None else (yield Wait(ahead))
    return report


def delete_revisions(
    known: FactsCache,
    db: str,
    rows: list[dict[str, Any]],
    report: ExpireReport,
    policy: RetryPolicy,
    *,
    scope: tuple[IdForm, str | None],
    every_leaf: bool = True,
    others: Mapping[str, Sequence[str]] | None = None,
) -> Program[dict[str, str]]:
    """Delete the documents of ``_all_docs`` rows (``{"id", "value": {"rev"}}``) by the
    revision read, adding the outcome to ``report``; return ``{id: deleted revision}`` of the
    revisions deleted now.

    A document with conflicts (several live leaf revisions) is still live once its winning
    revision is deleted: another leaf takes its place. ``others`` names, by id, the other
    leaf revisions read with a row (those archive copied): they are deleted once the row's
    revision is, by their revisions, so that a leaf written since is never deleted unseen.
    A document still live then has leaves nobody read: with ``every_leaf`` they are deleted
    too, so that it is gone; without, it is left live and reported in ``report.conflicts``.
    Either way ``report.deleted`` counts only documents that are gone. Each request may take
    ``policy``'s timeout; answers are checked for shape."""
    docs = []
    for row in rows:
        value = row.get("value")
        rev = value.get("rev") if isinstance(value, dict) else None
        if not isinstance(rev, str):
            raise answer_error(policy, db, f"row {row['id']!r} has no revision: {describe(row)}")
        docs.append({"_id": row["id"], "_rev": rev, "_deleted": True})
    each = policy.renewed()
    answer = (yield from ask(post_json(path(db, "_bulk_docs"), {"docs": docs}), each, db)).body
    tombstones: dict[str, str] = {}
    conflicted: list[str] = []
    sent = {doc["_id"] for doc in docs}
    for row in _result_rows(answer, each, db, "_bulk_docs", asked=sent):
        if row.get("error") == "conflict":
            conflicted.append(row["id"])
        elif row.get("error"):
            report.failed.append((row["id"], f"{row['error']}: {row.get('reason', '')}"))
        elif isinstance(row.get("rev"), str):
            tombstones[row["id"]] = row["rev"]
        else:
            raise answer_error(each, db, f"_bulk_docs answered a row without rev: {describe(row)}")
    # A 409 is a document changed since it was read, or one deleted already (by another
    # client, or by a first attempt of this batch whose answer was lost): tell them apart.
    states = yield from _states(db, conflicted, policy)
    for doc_id in conflicted:
        live, rev = states.get(doc_id, (False, None))
        if not live and rev is not None:
            report.gone += 1
            tombstones[doc_id] = rev
        else:
            report.conflicts.append(doc_id)
    # A document deleted now that is still live had conflicts: another leaf took its place.
    deleted_now = [doc_id for doc_id in tombstones if doc_id not in conflicted]
    for doc_id in deleted_now:
        for rev in (others or {}).get(doc_id, ()):
            yield from delete_revision(db, doc_id, rev, policy.renewed())
    still = yield from _still_live(known, db, deleted_now, scope, policy)
    for doc_id in deleted_now:
        if doc_id not in still:
            report.deleted += 1
        elif every_leaf:
            yield from _delete_leaves(known, db, doc_id, report, policy)
        else:
            report.conflicts.append(doc_id)
    return tombstones


def _still_live(
    known: FactsCache,
    db: str,
    ids: list[str],
    scope: tuple[IdForm, str | None],
    policy: RetryPolicy,
) -> Program[set[str]]:
    """Which of ``ids`` (of the form and type of ``scope``), just deleted, are still live: a
    read of the key range from the lowest to the highest of them, from their partition in a
    partitioned database (a deleted document leaves ``_all_docs``; the range holds about a
    batch of rows, and costs a fraction of a lookup of the ids by ``keys``)."""
    if not ids:
        return set()
    form, doc_type = scope
    # The highest id itself is in the range: its successor is the range's excluded end.
    keys = KeyRange(min(ids), max(ids) + "\0", form.type_prefix(doc_type))
    pages = Puller(
        range_pages(known, db, keys, form, policy, doc_type=doc_type, batch_size=len(ids))
    )
    live: set[str] = set()
    while (page := (yield from pages.next())) is not END:
        live.update(row["id"] for row in page)
    return live.intersection(ids)


def _states(db: str, ids: list[str], policy: RetryPolicy) -> Program[dict[str, State]]:
    """Whether each of ``ids`` is live now, and the revision of the deleted ones' tombstone
    (one ``_all_docs`` request by keys; a missing id is absent)."""
    if not ids:
        return {}
    each = policy.renewed()
    asked = post_json(path(db, "_all_docs"), {"keys": ids})
    body = (yield from ask(asked, each, db)).body
    rows = expect_object(body, each, db, "rows")["rows"]
    rows = _result_rows(rows, each, db, "_all_docs", "key", asked=set(ids))
    states: dict[str, State] = {}
    for row in rows:
        value = row.get("value")
        if isinstance(value, dict) and isinstance(value.get("rev"), str):
            deleted = value.get("deleted") is True
            states[row["key"]] = (not deleted, value["rev"] if deleted else None)
    return states


def _delete_leaves(
    known: FactsCache, db: str, doc_id: str, report: ExpireReport, policy: RetryPolicy
) -> Program[None]:
    """Delete every live leaf revision of ``doc_id`` (its conflicts), whose winning revision
    was just deleted; a document still live after :data:`LEAF_ROUNDS` rounds (written to
    again meanwhile) is reported in ``report.failed``."""
    for _ in range(LEAF_ROUNDS):
        each = policy.renewed()
        leaves = yield from live_leaves(known, db, doc_id, each)
        if not leaves:
            report.deleted += 1
            return
        for leaf in leaves:
            yield from delete_revision(db, doc_id, leaf["_rev"], policy.renewed())
    report.failed.append(
        (doc_id, f"still live after deleting its conflicting revisions {LEAF_ROUNDS} times")
    )


def _result_rows(
    rows: Any, policy: RetryPolicy, db: str, what: str, name: str = "id", *, asked: set[str]
) -> list[dict[str, Any]]:
    """``rows`` if it is a list of objects, each with a string ``name`` (``id``; the ``key``
    of an ``_all_docs`` answer for keys, whose rows for missing ids have no ``id``), one of
    the ids ``asked`` about, none twice (:func:`~couchids.core.answers.check_listing`)."""
    if not isinstance(rows, list) or not all(
        isinstance(row, dict) and isinstance(row.get(name), str) for row in rows
    ):
        raise answer_error(policy, db, f"{what} answered {describe(rows)}")
    check_listing(what, [row[name] for row in rows], policy, db, noun="the row of ", among=asked)
    return rows


def _purge(
    known: FactsCache, db: str, tombstones: dict[str, str], policy: RetryPolicy
) -> Program[int]:
    """Purge the revisions ``tombstones`` (``{id: deleted revision}``); return how many
    documents had theirs purged. As many ids go in a request as the server takes
    (:func:`purge_batch_for` its version; the caller read its welcome in
    :func:`check_purge`); one refused as over the server's limits (a ``400`` "Exceeded maximum
    number", checked before anything is purged) is sent again in smaller requests, and the
    smaller size is kept for the client."""
    items = list(tombstones.items())
    purged = start = 0
    while start < len(items):
        limit = known.purge_batch or purge_batch_for(known.server_version)
        size = len(items) - start if limit is None else min(limit, len(items) - start)
        body = {doc_id: [rev] for doc_id, rev in items[start : start + size]}
        each = policy.renewed()
        try:
            answer = (yield from ask(post_json(path(db, "_purge"), body), each, db)).body
        except ServerError as exc:
            if exc.status != 400 or size == 1 or not _OVER_LIMIT.search(str(exc)):
                raise
            known.purge_batch = PURGE_BATCH if size > PURGE_BATCH else size // 2
            continue
        if not isinstance(answer, dict) or not isinstance(answer.get("purged"), dict):
            raise answer_error(each, db, f"_purge answered {describe(answer)}")
        purged += sum(1 for revs in answer["purged"].values() if revs)
        start += size
    return purged
