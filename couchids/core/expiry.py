"""Deleting the documents of a type made before a time (CouchDB has no document TTL), and
purging them.

The key range of ``[1970, before)`` is read oldest first without documents; only ids inside it
that :func:`~couchids.core.keys.in_window` accepts are deleted, by the revision read (a
document changed since answers 409 and is reported, never forced), each page while the next
is read. ``purge=True`` then removes the deleted revisions with ``POST /{db}/_purge``, after
:func:`check_purge` made sure the server has it. The user's side is docs/guide/lifecycle.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from couchids.core.answers import answer_error, describe
from couchids.core.arguments import flag as check_flag
from couchids.core.arguments import function
from couchids.core.asking import MISSING, ask
from couchids.core.counting import server_kind
from couchids.core.defaults import DEFAULT_EXPIRE_BATCH
from couchids.core.effects import END, Program, Puller, Request, Start, Wait, path, post_json
from couchids.core.exactjson import dumps
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import KeyRange, in_window, window_keys
from couchids.core.options import Options
from couchids.core.policy import RetryPolicy
from couchids.core.revisions import delete_revision, live_leaves
from couchids.core.scan import (
    Checkpoint,
    check_checkpoint,
    check_one_form,
    check_resumes,
    range_pages,
)
from couchids.core.sizes import DEFAULT_BATCH_BYTES, DEFAULT_DOCUMENT_BYTES, write_in_halves
from couchids.core.writes import keyed_rows, rows_by_key
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

#: Ids per ``_purge`` request before CouchDB 3.5.1 (its ``max_document_id_number``).
PURGE_BATCH: Final = 100
#: The first CouchDB whose ``_purge`` takes any number of ids by default
#: (https://docs.couchdb.org/en/3.5.1/whatsnew/3.5.html, "Purge improvements").
UNLIMITED_PURGE_SINCE: Final = (3, 5, 1)
#: An endpoint the server does not have: CouchDB's or a proxy's 404, a proxy's 405, a 501.
NO_ENDPOINT_STATUSES: Final = frozenset({404, 405, 501})
#: CouchDB's words for a purge request over its limits (a 400).
_OVER_LIMIT: Final = re.compile(r"exceeded maximum number", re.IGNORECASE)
_VERSION: Final = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
#: Rounds of deleting a conflicted document's live leaves before it is reported as failed.
LEAF_ROUNDS: Final = 3
#: Whether a document is live, and the revision of its tombstone when it is not.
State = tuple[bool, str | None]
#: The scope of rows of any id (:func:`expire_rows`): a plain key range in the global index.
PLAIN_SCOPE: Final[tuple[IdForm, str | None]] = (KUUID, None)
#: The whole primary index.
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
    checkpoint: Checkpoint | None,
    on_progress: Callable[[ExpireReport], None] | None,
    options: Options,
) -> Program[ExpireReport]:
    """The program of :meth:`couchids.Database.expire`; arguments checked now."""
    policy = options.policy("expire")
    before_ms = to_ms(before)
    batch_size = options.batch("expire")
    check_flag("dry_run", dry_run)
    check_flag("purge", purge)
    function("on_progress", on_progress)
    keys = window_keys(form, type, 0, before_ms)
    report = ExpireReport(dry_run=dry_run, checkpoint=check_checkpoint(checkpoint))
    inside = in_window(form, type, 0, before_ms)

    def run() -> Program[ExpireReport]:
        yield from database_facts(known, db, policy)
        yield from check_one_form(known, db, form, type, policy)
        if purge and not dry_run:
            yield from check_purge(known, db, policy)
        else:
            # A purge leaves no trace of the checkpoint's own id to look up.
            yield from check_resumes(db, report.checkpoint, policy)
        if keys is None:
            return report
        after = report.checkpoint.last_id
        pages = range_pages(
            known, db, keys, form, policy, doc_type=type, after=after, batch_size=batch_size
        )
        return (
            yield from expire_rows(
                known,
                db,
                pages,
                inside,
                report,
                policy,
                purge=purge,
                scope=(form, type),
                on_progress=on_progress,
                batch_bytes=options.batch_bytes,
                resumable=True,
            )
        )

    return run()


def check_purge(known: FactsCache, db: str, policy: RetryPolicy) -> Program[None]:
    """Refuse a purge the server cannot do, before anything is deleted: Cloudant and PouchDB
    Server by their welcome, any other server by an empty ``POST /{db}/_purge`` (which changes
    nothing where ``_purge`` exists; a 404 is told from a missing database by a ``GET /{db}``).

    Raises:
        InvalidArgumentError: the server has no ``_purge``.
        DatabaseNotFoundError: ``db`` does not exist.
        ServerError: (or a subclass) any other failure of the empty purge, such as
            ``UnauthorizedError`` (CouchDB lets only admins purge), or an answer not a purge's.
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
    """Ids per ``_purge`` request a CouchDB of ``version`` takes by default: no limit
    (``None``) from 3.5.1, :data:`PURGE_BATCH` before it or when it does not say.

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
    known: FactsCache,
    db: str,
    policy: RetryPolicy,
    *,
    batch_size: int,
    after: str | None = None,
    include_docs: bool = False,
) -> Program[None]:
    """Emits the rows (ids and revisions) of every document of ``db``, design documents
    included, in key order, ``batch_size`` at a time, for :func:`expire_rows` (and rekey's
    reading of its source): after the id ``after``, with their documents ``include_docs``."""
    return range_pages(
        known,
        db,
        _EVERYTHING,
        PLAIN_SCOPE[0],
        policy,
        doc_type=None,
        after=after,
        include_docs=include_docs,
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
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    resumable: bool = False,
) -> Program[ExpireReport]:
    """Delete the documents of the ``_all_docs`` rows ``pages`` emits (in key order) whose id
    ``goes`` picks (asked once a row), into ``report`` (a dry run only counts them), and purge
    them with ``purge``. ``scope`` is the form and type of the rows, ``batch_bytes`` the most
    bytes of a request of deletions (:func:`delete_revisions`). A failure after documents were
    deleted says how many (and, ``resumable``, the checkpoint to resume from).
    The caller checked the database and the purge (:func:`check_purge`) before.
    """
    dry_run, mark = report.dry_run, report.checkpoint
    rows_of = Puller(pages)
    try:
        page = yield from rows_of.next()
        while page is not END:
            # The next page is read while this one's documents are deleted: it starts past
            # this page's last id, so nothing deleted now is in it.
            ahead = None if dry_run else (yield Start(rows_of.next()))
            # The id itself decides, whatever the server answered: nothing of another type,
            # form or time is ever deleted.
            rows = [row for row in page if goes(row["id"])]
            report.matched += len(rows)
            if rows and not dry_run:
                tombstones = yield from delete_revisions(
                    known, db, rows, report, policy, scope=scope, batch_bytes=batch_bytes
                )
                if purge and tombstones:
                    report.purged += yield from _purge(known, db, tombstones, policy)
            if rows:
                mark.last_id = rows[-1]["id"]
            mark.done += len(rows)
            if on_progress is not None:
                on_progress(report)
            page = (yield from rows_of.next()) if ahead is None else (yield Wait(ahead))
    except ServerError as exc:
        _ended(exc, report, on_progress, resumable=resumable)
        raise
    return report


def _ended(
    exc: ServerError,
    report: ExpireReport,
    on_progress: Callable[[ExpireReport], None] | None,
    *,
    resumable: bool,
) -> None:
    """Make ``exc``, which ended an expiry after it deleted documents, say so, as a bulk
    write's error says what it stored: how many, and where to resume (``on_progress`` is told
    first)."""
    if report.deleted or report.gone or report.purged:
        if on_progress is not None:
            on_progress(report)
        mark = report.checkpoint
        after = (
            f" from checkpoint last_id={mark.last_id!r:.80}"
            if resumable and mark.last_id is not None
            else ""
        )
        exc.args = (
            f"{exc.args[0]}; {report.deleted} documents were deleted before it "
            f"({report.gone} already gone, {report.purged} purged); expire again{after} "
            "deletes the rest",
            *exc.args[1:],
        )


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
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> Program[dict[str, list[str]]]:
    """Delete the documents of ``_all_docs`` rows (``{"id", "value": {"rev"}}``) by the
    revision read, into ``report``; return ``{id: [tombstone revisions]}`` of those deleted
    now (every leaf's, for a conflicted one) and of those found deleted already.

    A document with conflicts is still live once its winning revision is deleted. ``others``
    names, by id, the other leaf revisions read with a row (those archive copied): they are
    deleted by those revisions, so a leaf written since is never deleted unseen. Leaves nobody
    read are deleted too with ``every_leaf``; without, the document is left live and reported
    in ``report.conflicts``. ``report.deleted`` counts only documents that are gone. The
    deletions are sent in requests of at most ``batch_bytes`` (:func:`write_in_halves`)."""
    docs = []
    for row in rows:
        value = row.get("value")
        rev = value.get("rev") if isinstance(value, dict) else None
        if not isinstance(rev, str):
            raise answer_error(policy, db, f"row {row['id']!r} has no revision: {describe(row)}")
        docs.append({"_id": row["id"], "_rev": rev, "_deleted": True})
    answered, refused = yield from _send_deletions(db, docs, report, policy, batch_bytes)
    report.failed.extend(refused.items())
    tombstones: dict[str, list[str]] = {}
    # A document the answer has no row of is read as a 409's is: never passed over unseen.
    conflicted = [
        doc["_id"] for doc in docs if doc["_id"] not in answered and doc["_id"] not in refused
    ]
    for row in answered.values():
        if row.get("error") == "conflict":
            conflicted.append(row["id"])
        elif row.get("error"):
            report.failed.append((row["id"], f"{row['error']}: {row.get('reason', '')}"))
        elif isinstance(row.get("rev"), str):
            tombstones[row["id"]] = [row["rev"]]
        else:
            raise answer_error(
                policy,
                db,
                f"_bulk_docs answered a row without rev: {describe(row)}",
                f"POST {path(db, '_bulk_docs')}",
            )
    # A 409 is a document changed since it was read, or one deleted already (by another
    # client, or by a first attempt of this batch whose answer was lost): tell them apart.
    # So is a document without a row: deleted (gone), or live and left alone (a conflict).
    states = yield from _states(db, conflicted, policy)
    for doc_id in conflicted:
        live, rev = states.get(doc_id, (False, None))
        if not live and rev is not None:
            report.gone += 1
            tombstones[doc_id] = [rev]
        else:
            report.conflicts.append(doc_id)
    # A document deleted now that is still live had conflicts: another leaf took its place.
    deleted_now = [doc_id for doc_id in tombstones if doc_id not in conflicted]
    for doc_id in deleted_now:
        for rev in (others or {}).get(doc_id, ()):
            tombstones[doc_id].append(
                (yield from delete_revision(db, doc_id, rev, policy.renewed()))
            )
    still = yield from _still_live(known, db, deleted_now, scope, policy)
    for doc_id in deleted_now:
        if doc_id not in still:
            report.deleted += 1
        elif every_leaf:
            tombstones[doc_id] += yield from _delete_leaves(known, db, doc_id, report, policy)
        else:
            report.conflicts.append(doc_id)
    return tombstones


def _send_deletions(
    db: str,
    docs: list[dict[str, Any]],
    report: ExpireReport,
    policy: RetryPolicy,
    batch_bytes: int,
) -> Program[tuple[dict[str, dict[str, Any]], dict[str, str]]]:
    """Send the deletions ``docs`` (``_bulk_docs``) within ``batch_bytes``, a request the
    server refuses as too large again in halves, as writes are; return the answer's rows by id,
    and why each deletion refused alone was. A failure counts the tombstones answered before
    it in ``report.deleted``, so that its error can tell them."""
    answered: dict[str, dict[str, Any]] = {}
    refused: dict[str, str] = {}

    def write(group: list[int]) -> Program[None]:
        each = policy.renewed()
        sent = [docs[index] for index in group]
        asked = post_json(path(db, "_bulk_docs"), {"docs": sent})
        answer = (yield from ask(asked, each, db)).body
        ids = {doc["_id"] for doc in sent}
        answered.update(keyed_rows(answer, "id", ids, "_bulk_docs", each, db, sent=asked.sent))

    def refuse(index: int, why: str) -> None:
        refused[docs[index]["_id"]] = why

    try:
        yield from write_in_halves(
            [dumps(doc) for doc in docs],
            write,
            refuse,
            lambda index: docs[index]["_id"] in answered,
            document_bytes=DEFAULT_DOCUMENT_BYTES,
            batch_bytes=batch_bytes,
            envelope=len(b'{"docs":[]}'),
        )
    except ServerError:
        report.deleted += sum(
            isinstance(row.get("rev"), str) and not row.get("error") for row in answered.values()
        )
        raise
    return answered, refused


def _still_live(
    known: FactsCache,
    db: str,
    ids: list[str],
    scope: tuple[IdForm, str | None],
    policy: RetryPolicy,
) -> Program[set[str]]:
    """Which of ``ids`` (of ``scope``'s form and type), just deleted, are still live: one read
    of the key range from the lowest to the highest (cheaper than a lookup by ``keys``)."""
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
    """Whether each of ``ids`` is live now, and the revision of the deleted ones' tombstone;
    a missing id is absent."""
    if not ids:
        return {}
    states: dict[str, State] = {}
    for row in (yield from rows_by_key(db, ids, policy.renewed())).values():
        value = row.get("value")
        if isinstance(value, dict) and isinstance(value.get("rev"), str):
            deleted = value.get("deleted") is True
            states[row["key"]] = (not deleted, value["rev"] if deleted else None)
    return states


def _delete_leaves(
    known: FactsCache, db: str, doc_id: str, report: ExpireReport, policy: RetryPolicy
) -> Program[list[str]]:
    """Delete every live leaf revision of ``doc_id``, whose winning revision was just deleted;
    one still live after :data:`LEAF_ROUNDS` rounds is reported in ``report.failed``. Return
    the revisions of the tombstones written."""
    tombstones: list[str] = []
    for _ in range(LEAF_ROUNDS):
        each = policy.renewed()
        leaves = yield from live_leaves(known, db, doc_id, each)
        if not leaves:
            report.deleted += 1
            return tombstones
        for leaf in leaves:
            tombstones.append(
                (yield from delete_revision(db, doc_id, leaf["_rev"], policy.renewed()))
            )
    report.failed.append(
        (doc_id, f"still live after deleting its conflicting revisions {LEAF_ROUNDS} times")
    )
    return tombstones


def _purge(
    known: FactsCache, db: str, tombstones: dict[str, list[str]], policy: RetryPolicy
) -> Program[int]:
    """Purge the revisions ``tombstones`` (``{id: [deleted revisions]}``: a conflicted
    document's every leaf, so none is left to replicate); return how many documents had
    theirs purged. A request over the server's limits (a ``400`` "Exceeded
    maximum number", which purges nothing) is sent again smaller, and the size is kept."""
    items = list(tombstones.items())
    purged = start = 0
    while start < len(items):
        limit = known.purge_batch or purge_batch_for(known.server_version)
        size = len(items) - start if limit is None else min(limit, len(items) - start)
        body = dict(items[start : start + size])
        each = policy.renewed()
        try:
            reply = yield from ask(post_json(path(db, "_purge"), body), each, db)
        except ServerError as exc:
            if exc.status != 400 or size == 1 or not _OVER_LIMIT.search(str(exc)):
                raise
            known.purge_batch = PURGE_BATCH if size > PURGE_BATCH else size // 2
            continue
        answer = reply.body
        if not isinstance(answer, dict) or not isinstance(answer.get("purged"), dict):
            raise answer_error(each, db, f"_purge answered {describe(answer)}", reply.sent)
        purged += sum(1 for revs in answer["purged"].values() if revs)
        start += size
    return purged
