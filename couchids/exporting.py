"""Exporting a time window to NDJSON or CSV, and archiving it into another database.

Both read the window oldest first, a page at a time (memory stays at one page), and keep a
:class:`~couchids.Checkpoint` whose ``last_id`` is the last document written: given back, it
continues just after that document, so an interrupted export, resumed, writes the same rows as
one that ran through. Lost answers and 429s are retried (the client's own retries too, when
enabled).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TextIO

from ibmcloudant.cloudant_v1 import CloudantV1

from .errors import InvalidArgumentError, InvalidTimeError
from .expiry import ExpireReport, delete_revisions
from .forms import KUUID, IdForm
from .keys import window_keys
from .query import DEFAULT_PAGE_SIZE
from .scan import (
    Checkpoint,
    check_flag,
    check_one_form,
    check_size,
    checked_target,
    range_pages,
    read_policy,
)
from .server import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    RetryPolicy,
    answer_error,
    check_db,
    database_facts,
    describe,
    request,
)
from .times import TimeLike, to_ms

__all__ = ["FORMATS", "ArchiveReport", "archive", "export"]

Format = Literal["ndjson", "csv"]
FORMATS: Final[tuple[Format, ...]] = ("ndjson", "csv")
Doc = dict[str, Any]


def export(
    client: CloudantV1,
    db: str,
    start: TimeLike,
    end: TimeLike,
    out: TextIO,
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    format: Format = "ndjson",
    fields: Sequence[str] | None = None,
    checkpoint: Checkpoint | None = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    on_progress: Callable[[Checkpoint], None] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Checkpoint:
    """Write the documents made in ``[start, end)`` to ``out``, oldest first.

    ``ndjson`` writes each document as one line of JSON; ``csv`` writes a header of
    ``fields`` (unless resuming) and one row per document with those top-level fields (other
    values than strings and numbers as JSON, a missing field empty).

    Args:
        client, db, start, end, type, form: as for :func:`couchids.window`.
        out: a text stream (a file opened with ``newline=""`` for CSV).
        format: ``"ndjson"`` or ``"csv"``.
        fields: the CSV columns, such as ``["_id", "total"]`` (required for CSV).
        checkpoint: continue after its ``last_id``; updated after every document written.
        page_size: documents per request.
        on_progress: called with the checkpoint after every page.
        timeout: seconds each request (the database lookup, each page) may take, retries
            included (default 60); ``None`` leaves it to the client's own timeouts.

    Returns:
        :class:`~couchids.Checkpoint`: ``last_id`` is the last document written, ``done`` how many.

    Raises:
        InvalidArgumentError: not a ``CloudantV1`` client, a bad database name, ``format``,
            ``fields``, ``page_size`` or ``timeout``; a loose ``form`` (``utc_random``) whose
            type also holds ids it cannot tell from its own.
        InvalidTimeError, InvalidTypeError: a bad window or type.
        ServerError: (and subclasses) a request failed after the retries, ran out of
            ``timeout`` or was answered with something that is not CouchDB's; the checkpoint
            says where to continue.

    Example::

        with open("may.ndjson", "w") as out:
            mark = couchids.export(client, "orders", "2024-05-01", "2024-06-01", out,
                                   type="order")
    """
    policy = read_policy(timeout, "export")
    client, db = checked_target(client, db)
    if format not in FORMATS:
        raise InvalidArgumentError(f"format={format!r}: one of {FORMATS}")
    if format == "csv" and not fields:
        raise InvalidArgumentError("a CSV export needs fields, such as ['_id', 'total']")
    mark = checkpoint if checkpoint is not None else Checkpoint()
    write = _writer(out, format, fields, header=mark.last_id is None)
    for page in _window_pages(client, db, start, end, type, form, mark, page_size, policy):
        for doc in page:
            write(doc)
            mark.last_id = doc["_id"]
            mark.done += 1
        if on_progress is not None:
            on_progress(mark)
    return mark


@dataclass
class ArchiveReport:
    """What :func:`archive` did: ``copied`` documents, and the expiry of the copied ones."""

    copied: int = 0
    #: ``(id, reason)`` of documents the target refused.
    failed: list[tuple[str, str]] = field(default_factory=list)
    expired: ExpireReport = field(default_factory=lambda: ExpireReport(dry_run=True))
    checkpoint: Checkpoint = field(default_factory=Checkpoint)


def archive(
    client: CloudantV1,
    db: str,
    target_db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    expire: bool = False,
    checkpoint: Checkpoint | None = None,
    page_size: int = 500,
    on_progress: Callable[[ArchiveReport], None] | None = None,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> ArchiveReport:
    """Copy the documents made in ``[start, end)`` into ``target_db``; optionally delete them.

    Each document is copied with its revision and attachments (``_bulk_docs`` with
    ``new_edits=false``), so a copy made twice is the same revision, not a conflict: a re-run
    or a resumed run copies nothing twice. With ``expire=True`` each page is deleted from
    ``db`` right after the target stored it, by the revision that was copied: a document
    changed in between is reported in ``expired.conflicts`` and kept.

    Args:
        client, db, start, end, type, form: as for :func:`export`.
        target_db: an existing database to copy into.
        expire: delete the copied documents from ``db``.
        checkpoint, on_progress: as for :func:`export`.
        page_size: documents per request.
        retries, backoff: for lost answers, as in :func:`couchids.create`.
        timeout: seconds each request may take, retries included, as for :func:`export`.

    Raises:
        as :func:`export`; ``DatabaseNotFoundError`` for a missing ``target_db``.

    Example::

        report = couchids.archive(client, "orders", "orders-2023", "2023-01-01",
                                  "2024-01-01", type="order", expire=True)
    """
    policy = RetryPolicy.checked(retries, backoff, timeout, "archive")
    client, db = checked_target(client, db)
    target_db = check_db(target_db)
    check_flag("expire", expire)
    database_facts(client, target_db, policy)
    report = ArchiveReport(expired=ExpireReport(dry_run=not expire))
    if checkpoint is not None:
        report.checkpoint = checkpoint
    mark = report.checkpoint
    pages = _window_pages(
        client, db, start, end, type, form, mark, page_size, policy, attachments=True
    )
    for page in pages:

        def send(docs: list[Doc] = page) -> Any:
            body = {"docs": docs, "new_edits": False}
            return client.post_bulk_docs(db=target_db, bulk_docs=body)

        each = policy.renewed()
        answer = request(target_db, send, each).body
        if not isinstance(answer, list) or not all(isinstance(row, dict) for row in answer):
            raise answer_error(each, target_db, f"_bulk_docs answered {describe(answer)}")
        refused = {str(row.get("id")): row for row in answer if "error" in row}
        report.failed += [(i, f"{r['error']}: {r.get('reason', '')}") for i, r in refused.items()]
        stored = [doc for doc in page if doc["_id"] not in refused]
        report.copied += len(stored)
        if expire and stored:
            rows = [{"id": doc["_id"], "value": {"rev": doc["_rev"]}} for doc in stored]
            delete_revisions(client, db, rows, report.expired, policy)
            report.expired.matched += len(rows)
        mark.last_id = page[-1]["_id"]
        mark.done += len(page)
        if on_progress is not None:
            on_progress(report)
    return report


def _window_pages(
    client: CloudantV1,
    db: str,
    start: TimeLike,
    end: TimeLike,
    doc_type: str | None,
    form: IdForm,
    mark: Checkpoint,
    page_size: int,
    policy: RetryPolicy,
    *,
    attachments: bool = False,
) -> Iterator[list[Doc]]:
    """The documents of the window, a page at a time, after ``mark.last_id``."""
    start_ms, end_ms = to_ms(start), to_ms(end)
    if end_ms < start_ms:
        raise InvalidTimeError(
            f"the window ends ({end!r}) before it starts ({start!r}); pass start <= end"
        )
    check_size("page_size", page_size)
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(f"form={form!r}: pass an IdForm such as couchids.KUUID")
    keys = window_keys(form, doc_type, start_ms, end_ms)
    database_facts(client, db, policy)
    check_one_form(client, db, form, doc_type, policy)
    if keys is None:
        return
    wanted = form.matcher(keys.prefix)
    pages = range_pages(
        client,
        db,
        keys,
        form,
        policy,
        doc_type=doc_type,
        after=mark.last_id,
        include_docs=True,
        page_size=page_size,
        attachments=attachments,
    )
    for page in pages:
        docs = [row["doc"] for row in page if wanted(row["id"]) and row.get("doc")]
        for doc in docs:
            if not isinstance(doc.get("_id"), str) or not isinstance(doc.get("_rev"), str):
                raise answer_error(policy, db, f"a document without _id or _rev: {describe(doc)}")
        if docs:
            yield docs


def _writer(
    out: TextIO, format: Format, fields: Sequence[str] | None, *, header: bool
) -> Callable[[Doc], None]:
    if format == "ndjson":

        def line(doc: Doc) -> None:
            out.write(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n")

        return line
    columns = list(fields or ())
    table = csv.writer(out)
    if header:
        table.writerow(columns)

    def row(doc: Doc) -> None:
        table.writerow([_cell(doc.get(name)) for name in columns])

    return row


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
