"""Deleting the documents of a type made before a time: CouchDB has no document TTL.

The key range of ``[1970, before)`` for the type and form is read in time order, oldest
first, without documents (a row carries the current revision); only ids the form's matcher
accepts are taken, so nothing of another type, form or time is ever touched. (A loose form,
``utc_random``, cannot tell its ids from CouchDB's ``random`` ids: a type that holds those
is refused before anything is read, see :func:`couchids.scan.check_one_form`.) Each page goes to
``_bulk_docs`` as ``{"_id", "_rev", "_deleted": true}``. A document changed since it was read
answers 409 and is reported, never forced. Deleted documents leave ``_all_docs``, so a second
run simply finds what is left; a :class:`~couchids.Checkpoint` also lets it skip what the
first run already reported.

``purge=True`` then removes the deleted revisions for good with ``POST /{db}/_purge``
(CouchDB 2.3 and later). Cloudant has no ``_purge``, nor has PouchDB Server: there a purge is
refused before anything is deleted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from ibmcloudant.cloudant_v1 import CloudantV1

from .counting import server_kind
from .errors import InvalidArgumentError
from .forms import KUUID, IdForm
from .keys import window_keys
from .scan import (
    Checkpoint,
    check_flag,
    check_one_form,
    check_size,
    checked_target,
    range_pages,
)
from .server import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    JSON,
    RetryPolicy,
    answer_error,
    database_facts,
    describe,
    expect_object,
    request,
)
from .times import TimeLike, to_ms

__all__ = ["DEFAULT_EXPIRE_BATCH", "PURGE_BATCH", "ExpireReport", "delete_revisions", "expire"]

#: Documents per ``_bulk_docs`` delete request.
DEFAULT_EXPIRE_BATCH: Final = 500
#: Ids per ``_purge`` request: CouchDB's default ``max_document_id_number`` is 100.
PURGE_BATCH: Final = 100


@dataclass
class ExpireReport:
    """What :func:`expire` did (or, in a dry run, would do).

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
    client: CloudantV1,
    db: str,
    before: TimeLike,
    *,
    type: str | None,
    form: IdForm = KUUID,
    dry_run: bool = True,
    purge: bool = False,
    batch_size: int = DEFAULT_EXPIRE_BATCH,
    checkpoint: Checkpoint | None = None,
    on_progress: Callable[[ExpireReport], None] | None = None,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> ExpireReport:
    """Delete the documents of ``type`` whose id holds a time before ``before``.

    A dry run (the default) reads the same ids and reports how many would go. Safe to run
    again at any time, also after an interruption: what was deleted is no longer found, and a
    ``checkpoint`` from the earlier run skips what it already reported.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        before: documents made before this time go (exclusive).
        type: the document type (``None`` means untyped ids; it must be given).
        form: the id layout of the database; ids of other forms are never touched.
        dry_run: only count.
        purge: also purge the deleted revisions (CouchDB only; refused on Cloudant and
            PouchDB Server before anything is deleted).
        batch_size: documents per ``_bulk_docs`` request.
        checkpoint: continue after its ``last_id``; it is updated after every batch.
        on_progress: called with the report after every batch (for progress display; an
            exception raised there stops the run, and the checkpoint says where).
        retries, backoff: for lost answers, as in :func:`couchids.create`.
        timeout: seconds each request (a page read, a batch's delete, a purge) may take,
            retries included (default 60); ``None`` leaves it to the client's own timeouts.

    Raises:
        InvalidTimeError, InvalidTypeError, InvalidArgumentError: bad arguments (a client that
            is not ``CloudantV1``, a bad database name, ``dry_run``/``purge`` not a bool), a
            purge the server cannot do, or a loose ``form`` (``utc_random``) whose type also
            holds ids it cannot tell from its own.
        ServerError: (and subclasses) a request failed after the retries, ran out of
            ``timeout``, or was answered with something that is not CouchDB's.

    Example::

        report = couchids.expire(client, "events", "2024-01-01", type="click", dry_run=False)
        print(report.deleted, report.conflicts)
    """
    policy = RetryPolicy.checked(retries, backoff, timeout, "expire")
    client, db = checked_target(client, db)
    before_ms = to_ms(before)
    check_size("batch_size", batch_size)
    check_flag("dry_run", dry_run)
    check_flag("purge", purge)
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(f"form={form!r}: pass an IdForm such as couchids.KUUID")
    keys = window_keys(form, type, 0, before_ms)
    database_facts(client, db, policy)
    if purge and not dry_run:
        kind = server_kind(client, policy, db)
        if kind != "couchdb":
            where = {"cloudant": "Cloudant", "pouchdb": "PouchDB Server"}.get(kind, "this server")
            raise InvalidArgumentError(
                f"purge=True: {where} has no _purge (CouchDB 2.3 and later have); "
                "expire without purge leaves tombstones, which replicate"
            )
    check_one_form(client, db, form, type, policy)
    mark = checkpoint if checkpoint is not None else Checkpoint()
    report = ExpireReport(dry_run=dry_run, checkpoint=mark)
    if keys is None:
        return report
    wanted = form.matcher(keys.prefix)
    pages = range_pages(
        client, db, keys, form, policy, doc_type=type, after=mark.last_id, page_size=batch_size
    )
    for page in pages:
        rows = [row for row in page if wanted(row["id"])]
        report.matched += len(rows)
        if rows and not dry_run:
            tombstones = delete_revisions(client, db, rows, report, policy)
            if purge and tombstones:
                report.purged += _purge(client, db, tombstones, policy)
        mark.last_id = page[-1]["id"]
        mark.done += len(rows)
        if on_progress is not None:
            on_progress(report)
    return report


def delete_revisions(
    client: CloudantV1,
    db: str,
    rows: list[dict[str, Any]],
    report: ExpireReport,
    policy: RetryPolicy,
) -> dict[str, str]:
    """Delete the revisions of ``_all_docs`` rows (``{"id", "value": {"rev"}}``), adding the
    outcome to ``report``; return ``{id: deleted revision}`` of what is deleted now.

    Each request may take ``policy``'s timeout; answers are checked for shape."""
    docs = []
    for row in rows:
        value = row.get("value")
        rev = value.get("rev") if isinstance(value, dict) else None
        if not isinstance(rev, str):
            raise answer_error(policy, db, f"row {row['id']!r} has no revision: {describe(row)}")
        docs.append({"_id": row["id"], "_rev": rev, "_deleted": True})
    each = policy.renewed()
    answer = request(db, lambda: client.post_bulk_docs(db=db, bulk_docs={"docs": docs}), each).body
    tombstones: dict[str, str] = {}
    conflicted: list[str] = []
    for row in _result_rows(answer, each, db, "_bulk_docs"):
        if row.get("error") == "conflict":
            conflicted.append(row["id"])
        elif row.get("error"):
            report.failed.append((row["id"], f"{row['error']}: {row.get('reason', '')}"))
        elif isinstance(row.get("rev"), str):
            tombstones[row["id"]] = row["rev"]
            report.deleted += 1
        else:
            raise answer_error(each, db, f"_bulk_docs answered a row without rev: {describe(row)}")
    if conflicted:
        # A 409 is a document changed since it was read, or one deleted already (by another
        # client, or by a first attempt of this batch whose answer was lost): tell them apart.
        each = policy.renewed()
        state = request(db, lambda: client.post_all_docs(db=db, keys=conflicted), each).body
        for row in _result_rows(
            expect_object(state, each, db, "rows")["rows"], each, db, "_all_docs", "key"
        ):
            value = row.get("value")
            if (
                isinstance(value, dict)
                and value.get("deleted")
                and isinstance(value.get("rev"), str)
            ):
                report.gone += 1
                tombstones[row["key"]] = value["rev"]
            else:
                report.conflicts.append(row["key"])
    return tombstones


def _result_rows(
    rows: Any, policy: RetryPolicy, db: str, what: str, name: str = "id"
) -> list[dict[str, Any]]:
    """``rows`` if it is a list of objects, each with a string ``name`` (``id``; the ``key``
    of an ``_all_docs`` answer for keys, whose rows for missing ids have no ``id``)."""
    if not isinstance(rows, list) or not all(
        isinstance(row, dict) and isinstance(row.get(name), str) for row in rows
    ):
        raise answer_error(policy, db, f"{what} answered {describe(rows)}")
    return rows


def _purge(client: CloudantV1, db: str, tombstones: dict[str, str], policy: RetryPolicy) -> int:
    path = "/{}/_purge".format(*client.encode_path_vars(db))
    items = list(tombstones.items())
    purged = 0
    for start in range(0, len(items), PURGE_BATCH):
        body = {doc_id: [rev] for doc_id, rev in items[start : start + PURGE_BATCH]}

        def send(data: str = json.dumps(body)) -> Any:
            prepared = client.prepare_request(
                method="POST",
                url=path,
                headers={"Accept": JSON, "Content-Type": JSON},
                data=data,
            )
            return client.send(prepared)

        each = policy.renewed()
        answer = request(db, send, each).body
        if not isinstance(answer, dict) or not isinstance(answer.get("purged"), dict):
            raise answer_error(each, db, f"_purge answered {describe(answer)}")
        purged += sum(1 for revs in answer["purged"].values() if revs)
    return purged
