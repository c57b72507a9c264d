"""Exporting a time window to NDJSON or CSV, and archiving it into another database.

Both read the window oldest first as :meth:`couchids.Database.window` does, and keep a
:class:`~couchids.Checkpoint` at the last document written: given back, it continues just after
it, so a resumed export writes the same rows as one that ran through.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from csv import writer as csv_writer
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

from couchids.core import arguments
from couchids.core.answers import answer_error, describe, expect_object
from couchids.core.arguments import count as check_size
from couchids.core.arguments import flag as check_flag
from couchids.core.arguments import window as check_window
from couchids.core.asking import ask
from couchids.core.document import valid_unicode
from couchids.core.effects import END, Emit, Program, Puller, Request, path, post_json
from couchids.core.exactjson import dumps
from couchids.core.expiry import ExpireReport, delete_revisions
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import check_time_form
from couchids.core.options import Options
from couchids.core.policy import RetryPolicy
from couchids.core.revisions import live_leaves, winner
from couchids.core.scan import (
    Checkpoint,
    check_checkpoint,
    check_one_form,
    check_resumes,
)
from couchids.core.sizes import measured, write_in_halves
from couchids.core.windows import scan_pages
from couchids.core.writes import keyed_rows
from couchids.errors import InvalidArgumentError
from couchids.idforms.forms import IdForm
from couchids.idforms.times import TimeLike

__all__ = [
    "ArchiveReport",
    "archive",
    "check_output",
    "export",
    "window_documents",
    "write_documents",
]

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
    csv: Sequence[str] | None,
    checkpoint: Checkpoint | None,
    on_progress: Callable[[Checkpoint], None] | None,
    options: Options,
) -> Program[Checkpoint]:
    """The program of :meth:`couchids.Database.export`; arguments checked now."""
    policy = options.policy("export")
    columns, mark = check_output(out, csv, checkpoint)
    arguments.function("on_progress", on_progress)
    size, parallel = options.batch("export"), options.slices("export")
    pages = window_documents(
        known, db, start, end, type, form, mark, size, policy, parallel=parallel
    )

    def run() -> Program[Checkpoint]:
        yield from check_resumes(db, mark, policy)
        return (yield from write_documents(pages, out, columns, mark, on_progress))

    return run()


def check_output(
    out: TextIO, csv: Sequence[str] | None, checkpoint: Checkpoint | None
) -> tuple[list[str] | None, Checkpoint]:
    """The checked ``csv`` columns of an export to ``out`` (``None``: NDJSON), and the
    checkpoint it keeps (``checkpoint``, or a new one)."""
    arguments.text_stream("out", out)
    return _check_columns(csv), check_checkpoint(checkpoint)


def write_documents(
    pages: Program[None],
    out: TextIO,
    csv: Sequence[str] | None,
    mark: Checkpoint,
    on_progress: Callable[[Checkpoint], None] | None,
) -> Program[Checkpoint]:
    """Writes the documents ``pages`` emits to ``out``, as NDJSON or as CSV of the ``csv``
    columns (the header first, unless ``mark`` resumes an export), keeping ``mark`` at the
    last one written; the arguments checked by :func:`check_output`. A series writes its
    periods' windows with it."""
    write = _writer(out, csv, header=mark.last_id is None)
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
    """What :meth:`couchids.Database.archive` did: the documents copied, and the expiry of
    the copied ones.

    Attributes:
        copied: documents the target stored, every live revision of each, as read back.
        conflicted: ids of the copied documents that had conflicts (several live leaf
            revisions), each copied with all of them.
        failed: ``(id, reason)`` of documents the target refused, or did not show live at a
            revision copied when read back (none of their revisions is deleted from the source).
        expired: the deletion of the copied documents (``expire=True``): ``deleted`` counts
            the documents gone, ``conflicts`` the ones written to meanwhile and kept.
        checkpoint: the last document handled; pass it back to continue after a stop.
    """

    copied: int = 0
    conflicted: list[str] = field(default_factory=list)
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
    on_progress: Callable[[ArchiveReport], None] | None,
    options: Options,
) -> Program[ArchiveReport]:
    """The program of :meth:`couchids.Database.archive`; arguments checked now (the caller
    checks ``target_db``). Copies are cut by ``batch_bytes`` and ``document_bytes`` as bulk
    writes are (:func:`_copy`)."""
    policy = options.policy("archive")
    sizes = (options.batch_bytes, options.document_bytes)
    check_flag("expire", expire)
    arguments.function("on_progress", on_progress)
    arguments.other_database("target_db", target_db, db, "archive")
    mark = check_checkpoint(checkpoint)
    report = ArchiveReport(expired=ExpireReport(dry_run=not expire), checkpoint=mark)
    size, parallel = options.batch("archive"), options.slices("archive")
    pages = window_documents(
        known, db, start, end, type, form, mark, size, policy, parallel=parallel, copies=True
    )

    def run() -> Program[ArchiveReport]:
        yield from check_resumes(db, mark, policy)
        yield from database_facts(known, target_db, policy)
        documents = Puller(pages)
        while (page := (yield from documents.next())) is not END:
            # A document with conflicts is copied with every live leaf revision, read from
            # every copy (a cluster's _conflicts reflects only the copies that answered first).
            leaves: dict[str, list[Doc]] = {}
            for doc in page:
                if doc.pop("_conflicts", None):
                    found = yield from live_leaves(known, db, doc["_id"], policy.renewed())
                    leaves[doc["_id"]] = found or [doc]
            copies = [leaves.get(doc["_id"], [doc]) for doc in page]
            failed = yield from _copy(target_db, page, copies, policy, *sizes)
            # Read back: only what the target shows as copied counts (and is deleted here).
            failed += yield from _unheld(target_db, page, copies, {i for i, _ in failed}, policy)
            report.failed += failed
            refused = {doc_id for doc_id, _ in failed}
            stored = [doc for doc in page if doc["_id"] not in refused]
            report.copied += len(stored)
            report.conflicted += [
                doc["_id"] for doc in stored if len(leaves.get(doc["_id"], ())) > 1
            ]
            if expire and stored:
                yield from expire_copied(stored, leaves)
            mark.last_id = page[-1]["_id"]
            mark.done += len(page)
            if on_progress is not None:
                on_progress(report)
        return report

    def expire_copied(stored: list[Doc], leaves: dict[str, list[Doc]]) -> Program[None]:
        # Deleted are exactly the revisions copied: the winning one by the revision read (a
        # document changed since answers 409 and is kept), then the other leaves.
        rows: list[Doc] = []
        others: dict[str, list[str]] = {}
        for doc in stored:
            copied = leaves.get(doc["_id"], [doc])
            first = winner(copied)
            rows.append({"id": doc["_id"], "value": {"rev": first["_rev"]}})
            others[doc["_id"]] = [leaf["_rev"] for leaf in copied if leaf is not first]
        report.expired.matched += len(stored)
        yield from delete_revisions(
            known,
            db,
            rows,
            report.expired,
            policy,
            scope=(form, type),
            every_leaf=False,
            others=others,
            batch_bytes=options.batch_bytes,
        )

    return run()


#: The bytes around the documents of archive's ``_bulk_docs`` body.
_COPY_HEAD: Final = b'{"docs":['
_COPY_TAIL: Final = b'],"new_edits":false}'


def _copy(
    target_db: str,
    page: list[Doc],
    copies: list[list[Doc]],
    policy: RetryPolicy,
    batch_bytes: int,
    document_bytes: int,
) -> Program[list[tuple[str, str]]]:
    """Copy the documents of ``page``, each with its revisions ``copies[i]``, into
    ``target_db`` (``_bulk_docs`` with ``new_edits=false``); return ``(id, reason)`` of those
    the target did not store. Requests are cut by bytes as bulk writes are
    (:mod:`couchids.core.sizes`), a document with all its revisions in one request; a
    revision's size is as :func:`~couchids.core.sizes.measured` reads it (attachments aside)."""
    parts: list[bytes] = []
    sizes: list[int] = []
    for leaves in copies:
        encoded = [dumps(leaf) for leaf in leaves]
        parts.append(b",".join(encoded))
        sizes.append(max(measured(part, document_bytes) for part in encoded))
    failed: dict[int, str] = {}

    def write(group: list[int]) -> Program[None]:
        each = policy.renewed()
        body = _COPY_HEAD + b",".join([parts[i] for i in group]) + _COPY_TAIL
        copy = Request("POST", path(target_db, "_bulk_docs"), body=body)
        answer = (yield from ask(copy, each, target_db)).body
        if not isinstance(answer, list) or not all(isinstance(row, dict) for row in answer):
            raise answer_error(
                each, target_db, f"_bulk_docs answered {describe(answer)}", copy.sent
            )
        refused = {str(row.get("id")): row for row in answer if "error" in row}
        for index in group:
            row = refused.get(page[index]["_id"])
            if row is not None:
                failed[index] = f"{row['error']}: {row.get('reason', '')}"

    def too_large(index: int, why: str) -> None:
        failed[index] = f"too large: {why}"

    yield from write_in_halves(
        parts,
        write,
        too_large,
        failed.__contains__,
        document_bytes=document_bytes,
        batch_bytes=batch_bytes,
        envelope=len(_COPY_HEAD) + len(_COPY_TAIL),
        sizes=sizes,
    )
    return [(page[index]["_id"], failed[index]) for index in sorted(failed)]


def _unheld(
    target_db: str,
    page: list[Doc],
    copies: list[list[Doc]],
    refused: set[str],
    policy: RetryPolicy,
) -> Program[list[tuple[str, str]]]:
    """``(id, reason)`` of the documents of ``page`` (but ``refused``) that ``target_db`` does
    not show live at one of the revisions copied (``copies[i]``), read back after the copy
    (``_bulk_get``, a lookup by id): a copy of a revision the target knew already (one deleted
    there since, or edited there) changes nothing, though it is answered as stored.

    ``_all_docs`` by ``keys`` would give the same verdict (each winner's ``rev`` and
    ``deleted``) without the bodies, but CouchDB 3.4 answers it four to five times slower
    (5,000 ids in pages of 500: 2.3 s against 0.5 s on a node, 6.7 s against 1.3 s on a
    cluster; alike on PouchDB Server), and it would be a second ``_all_docs`` in flight beside
    the window's next page, read ahead (``parallel=1`` reads one at a time)."""
    copied = {
        doc["_id"]: {leaf["_rev"] for leaf in leaves}
        for doc, leaves in zip(page, copies, strict=True)
        if doc["_id"] not in refused
    }
    if not copied:
        return []
    each = policy.renewed()
    asked = post_json(path(target_db, "_bulk_get"), {"docs": [{"id": i} for i in copied]})
    answer = (yield from ask(asked, each, target_db)).body
    results = expect_object(answer, each, target_db, "results", sent=asked.sent)["results"]
    rows = keyed_rows(
        results, "id", set(copied), "_bulk_get", each, target_db, every=True, sent=asked.sent
    )
    unheld: list[tuple[str, str]] = []
    for doc_id, revs in copied.items():
        docs = rows[doc_id].get("docs")
        if not isinstance(docs, list) or not docs or not all(isinstance(d, dict) for d in docs):
            raise answer_error(
                each, target_db, f"_bulk_get answered {describe(rows[doc_id])}", asked.sent
            )
        # CouchDB answers each leaf of a conflicted document, a deleted one with _deleted;
        # PouchDB Server the winner, a deleted one as {}.
        found = [d["ok"] for d in docs if isinstance(d.get("ok"), dict)]
        if not all(isinstance(leaf.get("_rev"), str) for leaf in found):
            raise answer_error(
                each, target_db, f"_bulk_get answered {describe(rows[doc_id])}", asked.sent
            )
        live = [leaf for leaf in found if leaf.get("_deleted") is not True]
        if live and (rev := winner(live)["_rev"]) not in revs:
            why = f"the target shows it at revision {rev}, none of the ones copied (edited there)"
        elif live:
            continue
        elif found:
            rev = winner(found)["_rev"]
            why = f"the target holds it deleted (revision {rev}): the copy changed nothing there"
        else:
            why = "the target does not hold it after the copy"
        unheld.append((doc_id, f"not stored: {why}"))
    return unheld


def window_documents(
    known: FactsCache,
    db: str,
    start: TimeLike,
    end: TimeLike,
    doc_type: str | None,
    form: IdForm,
    mark: Checkpoint,
    batch_size: int,
    policy: RetryPolicy,
    *,
    parallel: int,
    copies: bool = False,
) -> Program[None]:
    """Emits the documents of the window, a page at a time, oldest first, after
    ``mark.last_id`` (as it is when the program reaches its first read), ``parallel`` time
    slices at a time; the arguments are checked now. ``copies`` reads them for copying: with
    their attachments' data and their ``_conflicts``."""
    start_ms, end_ms = check_window(start, end)
    check_size("batch_size", batch_size)
    check_size("parallel", parallel)
    check_time_form(form)
    form.type_prefix(doc_type)  # InvalidTypeError

    def run() -> Program[None]:
        yield from database_facts(known, db, policy)
        yield from check_one_form(known, db, form, doc_type, policy)
        pages = scan_pages(
            known,
            db,
            form,
            doc_type,
            start_ms,
            end_ms,
            policy,
            include_docs=True,
            after=mark.last_id,
            attachments=copies,
            conflicts=copies,
            batch_size=batch_size,
            parallel=parallel,
        )
        documents = Puller(pages)
        while (docs := (yield from documents.next())) is not END:
            for doc in docs:
                if not isinstance(doc.get("_id"), str) or not isinstance(doc.get("_rev"), str):
                    raise answer_error(
                        policy, db, f"a document without _id or _rev: {describe(doc)}"
                    )
            if docs:
                yield Emit(docs)

    return run()


def _check_columns(csv: object) -> list[str] | None:
    """``csv`` as a list of field names, or ``None``; one string (a column per character), no
    name, or a name that is not a str is refused."""
    if csv is None:
        return None
    if isinstance(csv, str | bytes):
        raise InvalidArgumentError(
            f"csv={csv!r:.80} is one string: pass a list of field names, such as ['_id', 'n']"
        )
    if not isinstance(csv, Iterable) or isinstance(csv, dict):
        raise InvalidArgumentError(
            f"csv={csv!r:.80}: pass a list of field names, such as ['_id', 'n']"
        )
    names = list(csv)
    if not names:
        raise InvalidArgumentError("csv=[]: a CSV export needs fields, such as ['_id', 'total']")
    for name in names:
        if not isinstance(name, str) or not valid_unicode(name):
            raise InvalidArgumentError(
                f"csv: {name!r:.80} is not a field name: the fields are strings of valid "
                "Unicode, the top-level keys of the documents, such as ['_id', 'n']"
            )
    return names


def _writer(out: TextIO, columns: Sequence[str] | None, *, header: bool) -> Callable[[Doc], None]:
    """A function that writes a document to ``out``: as NDJSON, or as CSV of ``columns``.

    NDJSON: one line of JSON, text unescaped; a line the stream cannot encode (or holding a lone
    surrogate) is written with ``\\u`` escapes instead, the same JSON value. CSV: a row of the
    ``columns``; a row the stream cannot encode is refused, nothing of it written (CSV has no
    escapes). Both rely on ``out.write`` encoding a line before writing any of it, as the
    streams of ``open()`` do.
    """
    if columns is None:

        def line(doc: Doc) -> None:
            try:
                out.write(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n")
            except UnicodeEncodeError:
                out.write(json.dumps(doc, separators=(",", ":")) + "\n")

        return line
    table = csv_writer(out)
    if header:
        _write_row(out, table, list(columns), "the header")

    def row(doc: Doc) -> None:
        cells = [_cell(doc.get(name)) for name in columns]
        _write_row(out, table, cells, f"document {doc.get('_id')!r:.80}")

    return row


def _write_row(out: TextIO, table: Any, cells: list[str], what: str) -> None:
    try:
        table.writerow(cells)
    except UnicodeEncodeError as exc:
        char = exc.object[exc.start]
        if "\ud800" <= char <= "\udfff":
            why = (
                f"it holds a lone surrogate ({char!r}), which no text encoding has and CSV "
                "cannot escape; export it as NDJSON, which writes it as a \\u escape"
            )
        else:
            why = (
                f"the output's encoding ({exc.encoding}) has no {char!r} (U+{ord(char):04X}); "
                "open it with encoding='utf-8' (for sys.stdout: set PYTHONIOENCODING=utf-8), or "
                "export NDJSON, which escapes what the encoding lacks"
            )
        raise InvalidArgumentError(
            f"{what} cannot be written as CSV to {out!r:.80}: {why}"
        ) from None


def _cell(value: Any) -> str:
    """A CSV cell: empty for a missing field or null, a string as it is, else its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
