"""Exporting a time window to NDJSON or CSV, and archiving it into another database.

Both read the window oldest first as :func:`couchids.window` reads it (time slices in
parallel; memory stays at a few pages), and keep a :class:`~couchids.Checkpoint` whose
``last_id`` is the last document written: given back, it continues just after that document,
so an interrupted export, resumed, writes the same rows as one that ran through. Lost answers
and 429s are retried (the client's own retries too, when enabled).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TextIO

from ..errors import InvalidArgumentError, InvalidTimeError
from ..forms import IdForm
from ..keys import check_time_form
from ..times import TimeLike, to_ms
from .expiry import ExpireReport, delete_revisions
from .protocol import (
    END,
    Emit,
    FactsCache,
    Program,
    Puller,
    RetryPolicy,
    answer_error,
    ask,
    database_facts,
    describe,
    path,
    post_json,
)
from .scan import Checkpoint, check_flag, check_one_form, check_size, read_policy
from .windows import scan_pages

__all__ = ["FORMATS", "ArchiveReport", "archive", "export"]

Format = Literal["ndjson", "csv"]
FORMATS: Final[tuple[Format, ...]] = ("ndjson", "csv")
Doc = dict[str, Any]


def export(
    known: FactsCache,
    db: str,
    start: TimeLike,
    end: TimeLike,
    out: TextIO,
    *,
    type: str | None,
    form: IdForm,
    format: Format,
    fields: Sequence[str] | None,
    checkpoint: Checkpoint | None,
    page_size: int,
    on_progress: Callable[[Checkpoint], None] | None,
    timeout: float | None,
    parallel: int,
) -> Program[Checkpoint]:
    """The program of :func:`couchids.export` (see there); arguments checked now."""
    policy = read_policy(timeout, "export")
    if format not in FORMATS:
        raise InvalidArgumentError(f"format={format!r}: one of {FORMATS}")
    if format == "csv" and not fields:
        raise InvalidArgumentError("a CSV export needs fields, such as ['_id', 'total']")
    mark = checkpoint if checkpoint is not None else Checkpoint()
    pages = _window_pages(
        known, db, start, end, type, form, mark, page_size, policy, parallel=parallel
    )
    return _export(pages, out, format, fields, mark, on_progress)


def _export(
    pages: Program[None],
    out: TextIO,
    format: Format,
    fields: Sequence[str] | None,
    mark: Checkpoint,
    on_progress: Callable[[Checkpoint], None] | None,
) -> Program[Checkpoint]:
    write = _writer(out, format, fields, header=mark.last_id is None)
    documents = Puller(pages)
    while (page := (yield from documents.next())) is not END:
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
    known: FactsCache,
    db: str,
    target_db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | None,
    form: IdForm,
    expire: bool,
    checkpoint: Checkpoint | None,
    page_size: int,
    on_progress: Callable[[ArchiveReport], None] | None,
    retries: int,
    backoff: float,
    timeout: float | None,
    parallel: int,
) -> Program[ArchiveReport]:
    """The program of :func:`couchids.archive` (see there); arguments checked now (the
    caller checks ``target_db``)."""
    policy = RetryPolicy.checked(retries, backoff, timeout, "archive")
    check_flag("expire", expire)
    report = ArchiveReport(expired=ExpireReport(dry_run=not expire))
    if checkpoint is not None:
        report.checkpoint = checkpoint
    mark = report.checkpoint
    pages = _window_pages(
        known,
        db,
        start,
        end,
        type,
        form,
        mark,
        page_size,
        policy,
        parallel=parallel,
        attachments=True,
    )
    return _archive(known, db, target_db, pages, expire, report, on_progress, policy)


def _archive(
    known: FactsCache,
    db: str,
    target_db: str,
    pages: Program[None],
    expire: bool,
    report: ArchiveReport,
    on_progress: Callable[[ArchiveReport], None] | None,
    policy: RetryPolicy,
) -> Program[ArchiveReport]:
    yield from database_facts(known, target_db, policy)
    mark = report.checkpoint
    documents = Puller(pages)
    while (page := (yield from documents.next())) is not END:
        body = {"docs": page, "new_edits": False}
        each = policy.renewed()
        copy = post_json(path(target_db, "_bulk_docs"), body)
        answer = (yield from ask(copy, each, target_db)).body
        if not isinstance(answer, list) or not all(isinstance(row, dict) for row in answer):
            raise answer_error(each, target_db, f"_bulk_docs answered {describe(answer)}")
        refused = {str(row.get("id")): row for row in answer if "error" in row}
        report.failed += [(i, f"{r['error']}: {r.get('reason', '')}") for i, r in refused.items()]
        stored = [doc for doc in page if doc["_id"] not in refused]
        report.copied += len(stored)
        if expire and stored:
            rows = [{"id": doc["_id"], "value": {"rev": doc["_rev"]}} for doc in stored]
            yield from delete_revisions(db, rows, report.expired, policy)
            report.expired.matched += len(rows)
        mark.last_id = page[-1]["_id"]
        mark.done += len(page)
        if on_progress is not None:
            on_progress(report)
    return report


def _window_pages(
    known: FactsCache,
    db: str,
    start: TimeLike,
    end: TimeLike,
    doc_type: str | None,
    form: IdForm,
    mark: Checkpoint,
    page_size: int,
    policy: RetryPolicy,
    *,
    parallel: int,
    attachments: bool = False,
) -> Program[None]:
    """Emits the documents of the window, a page at a time, after ``mark.last_id``, read
    ``parallel`` time slices at a time; the arguments are checked now."""
    start_ms, end_ms = to_ms(start), to_ms(end)
    if end_ms < start_ms:
        raise InvalidTimeError(
            f"the window ends ({end!r}) before it starts ({start!r}); pass start <= end"
        )
    check_size("page_size", page_size)
    check_size("parallel", parallel)
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(f"form={form!r}: pass an IdForm such as couchids.KUUID")
    check_time_form(form)
    return _documents(
        known,
        db,
        (start_ms, end_ms),
        form,
        doc_type,
        mark,
        page_size,
        policy,
        attachments,
        parallel=parallel,
    )


def _documents(
    known: FactsCache,
    db: str,
    span: tuple[int, int],
    form: IdForm,
    doc_type: str | None,
    mark: Checkpoint,
    page_size: int,
    policy: RetryPolicy,
    attachments: bool,
    *,
    parallel: int,
) -> Program[None]:
    yield from database_facts(known, db, policy)
    yield from check_one_form(known, db, form, doc_type, policy)
    pages = scan_pages(
        known,
        db,
        form,
        doc_type,
        *span,
        policy,
        include_docs=True,
        after=mark.last_id,
        attachments=attachments,
        page_size=page_size,
        parallel=parallel,
    )
    documents = Puller(pages)
    while (docs := (yield from documents.next())) is not END:
        for doc in docs:
            if not isinstance(doc.get("_id"), str) or not isinstance(doc.get("_rev"), str):
                raise answer_error(policy, db, f"a document without _id or _rev: {describe(doc)}")
        if docs:
            yield Emit(docs)


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
