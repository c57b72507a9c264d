"""``couchids import``: rows of NDJSON or CSV, from a file or stdin, stored as new documents in
a database or a series through the handle's ``bulk_create``, each under an id made at the
row's own time (``--time-field``) and, with ``--key-field``, named by the row's key, so that
running the same import again stores nothing twice."""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import operator
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from couchids.cli.options import (
    EXIT_OK,
    UsageError,
    add,
    add_form,
    checked,
    count_of,
    in_flags,
    progress,
    say,
    some,
)
from couchids.cli.sources import open_target, source_args
from couchids.core.defaults import DEFAULT_BATCH_SIZE
from couchids.core.document import check_new
from couchids.core.writes import KeyOf
from couchids.errors import (
    BulkWriteError,
    CouchidsError,
    InvalidArgumentError,
    InvalidInputError,
    WriteResult,
)
from couchids.idforms.times import to_ms

if TYPE_CHECKING:
    from couchids.database import Database
    from couchids.series import Series

IMPORT_EPILOG = """\
Reads FILE (or stdin, without FILE or with -) and stores each row as a new document, in
batches of --batch-size rows, under an id of --type made at the time in the row's --time-field
(without it, now). A row is a line of NDJSON (a JSON object), or with --csv (or a FILE whose
name ends in .csv) a record of CSV after its header line, whose values stay strings (so its
times are ISO 8601): give NDJSON where a field must be a number. The time is read as the
library reads a time: an ISO-8601 string or an int of epoch milliseconds. A row keeps all its
fields; an _id or another top-level _ field is refused (import makes the ids).

With --key-field K (and --time-field) each id is named by the row's K (a string or a whole
number) and its time, so a second run of the same import makes the same ids and stores
nothing twice: its rows are counted "already there". That makes an import safe to run again,
after a failure or Ctrl-C, which print the --after-line N to resume with (a run without
--key-field would store the rows of the batch under way twice).

A bad row (not a JSON object, a missing or unreadable time or key, a field import does not
store) is named on stderr with its line number and skipped; the others are stored. So is a
row the server refused (a document too large, other content under its keyed id). A progress
bar shows on a terminal's stderr; at the end one line on stdout counts the rows: stored N,
already there M, failed K. The exit status is 1 when any row failed, and the error's when a
whole batch failed (the server unreachable, no such database): the rows before it stay stored.

A series (couchids import --series PREFIX --period PERIOD [FILE], without DB) stores each row
in the database of its time's period, which is made when missing.

examples:
  couchids import shop orders.ndjson --time-field created --type order
  couchids import shop orders.ndjson --time-field created --key-field number --type order
  couchids import shop orders.csv --time-field created --type order --batch-size 1000
  couchids import --series events --period month readings.ndjson --time-field at --type reading
"""


def add_commands(commands: Any) -> None:
    """Add ``import`` to ``commands``."""
    p = commands.add_parser(
        "import",
        help="store NDJSON or CSV rows as new documents, with ids made at their times",
        description="Rows of FILE or stdin stored in batches; --key-field makes a rerun safe.",
        epilog=IMPORT_EPILOG,
    )
    p.intermixed = True  # DB and FILE wherever they stand among the flags
    source_args(p, "each row stored in the one of its time")
    p.add_argument("file", nargs="?", metavar="FILE", help="the rows (default, or -: stdin)")
    p.add_argument(
        "--csv", action="store_true", help="the rows are CSV with a header (default: NDJSON)"
    )
    p.add_argument(
        "--time-field",
        type=checked(some("field name")),
        metavar="F",
        help="field with each row's time: ISO 8601, or epoch milliseconds (default: now)",
    )
    p.add_argument(
        "--key-field",
        type=checked(some("field name")),
        metavar="K",
        help="field naming each row (needs --time-field): a rerun stores nothing twice",
    )
    add(p, type="type of the new ids")
    p.add_argument(
        "--after-line",
        type=count_of(0),
        default=0,
        metavar="N",
        help="skip the rows on lines 1 to N (the resume point a stopped run printed)",
    )
    add(p, batch_size="rows", timeout="a request (one batch's write)")
    add_form(p, "of the new ids")
    p.set_defaults(run=_import, batch_size=DEFAULT_BATCH_SIZE)


@dataclass
class _Tally:
    """What became of the rows so far, each failure named on stderr as it is known."""

    options: dict[str, object]
    stored: int = 0
    duplicates: int = 0
    failed: int = 0
    start: int = 0  # the rows of lines 1 to start are not read (--after-line)
    settled: int = 0  # every row up to this line is stored, already there or failed
    sending: bool = False  # the batch under way is being written
    batch: list[int] = field(default_factory=list)  # the lines of the batch under way

    def bad(self, line: int, why: str) -> None:
        self.failed += 1
        say(f"line {line}: {in_flags(why, self.options)}")

    def written(self, results: list[WriteResult]) -> None:
        for line, result in zip(self.batch, results, strict=True):
            if result.error is not None:
                self.bad(line, f"not stored: {result.id}: {result.error}")
            elif result.duplicate:
                self.duplicates += 1
            else:
                self.stored += 1
        self.settled, self.batch = self.batch[-1], []

    def summary(self) -> str:
        return f"stored {self.stored}, already there {self.duplicates}, failed {self.failed}"


def _import(args: argparse.Namespace) -> int:
    if args.series is not None and args.file is None:
        args.db, args.file = None, args.db  # the one word by position is FILE
    if args.key_field is not None and args.time_field is None:
        raise UsageError(
            "--key-field needs --time-field: a keyed id holds the row's own time, which must "
            "be the same when the import runs again"
        )
    target = open_target(args)
    if args.type is not None:
        target.form.type_prefix(args.type)  # a bad type, before a row is read
    tally = _Tally(vars(args), start=args.after_line, settled=args.after_line)
    with _opened(args.file) as stream, progress("importing", unit="row") as bar:
        rows = _rows(stream, args)
        try:
            while True:
                docs = _batch(rows, args, tally)
                if not docs:
                    break
                tally.sending = True
                results = _write(target, docs, args)
                tally.sending = False
                tally.written(results)
                bar.update(len(docs))
        except (CouchidsError, KeyboardInterrupt) as exc:
            _stopped(tally, exc, args.key_field is not None)
            raise
    print(tally.summary())
    return 1 if tally.failed else EXIT_OK


def _write(
    target: Database | Series, docs: list[dict[str, Any]], args: argparse.Namespace
) -> list[WriteResult]:
    """The results of storing ``docs``, one per document, in order."""
    time_of = None if args.time_field is None else operator.itemgetter(args.time_field)
    key_of: KeyOf | None = None if args.key_field is None else lambda doc: str(doc[args.key_field])
    try:
        return target.bulk_create(docs, type=args.type, key_of=key_of, time_of=time_of)
    except BulkWriteError as exc:
        return list(exc.results)


def _stopped(tally: _Tally, exc: BaseException, keyed: bool) -> None:
    """Say what is stored of the batch under way, and where to resume."""
    print(tally.summary())
    where = "the same command"
    if tally.settled > tally.start:
        where = f"--after-line {tally.settled}"
    if not tally.batch:
        say(f"stopped; resume with {where}")
        return
    done = sum(result.ok for result in getattr(exc, "results", []))
    fate = "none of its rows were stored"
    if done or (tally.sending and isinstance(exc, KeyboardInterrupt)):
        fate = f"{done} of its rows were stored" if done else "some of its rows may be stored"
        fate += (
            " (a rerun counts them already there)"
            if keyed
            else " (without --key-field, a rerun would store them again)"
        )
    say(
        f"stopped in the batch of lines {tally.batch[0]} to {tally.batch[-1]}, {fate}; resume "
        f"with {where}"
    )


def _batch(
    rows: Iterator[tuple[int, Any]], args: argparse.Namespace, tally: _Tally
) -> list[dict[str, Any]]:
    """The next batch of good rows (their lines in ``tally.batch``), the bad ones before
    named as failed."""
    docs: list[dict[str, Any]] = []
    for line, value in rows:
        doc = _document(line, value, args)
        if isinstance(doc, str):
            tally.bad(line, doc)
            continue
        docs.append(doc)
        tally.batch.append(line)
        if len(docs) == args.batch_size:
            break
    return docs


def _document(line: int, value: Any, args: argparse.Namespace) -> dict[str, Any] | str:
    """The row read on ``line`` as a new document, or why it cannot be one."""
    if isinstance(value, _Unread):
        return value.why
    try:
        check_new(value, "the row", own_id=False)
    except InvalidInputError as exc:
        return str(exc).replace("this write chooses the id itself", "import makes the ids")
    if args.time_field is not None:
        if args.time_field not in value:
            return f"no field {args.time_field!r} (--time-field)"
        try:
            to_ms(value[args.time_field])  # the library's reading, which bulk_create repeats
        except InvalidInputError as exc:
            return f"field {args.time_field!r} (--time-field): {exc}"
    if args.key_field is not None:
        key = value.get(args.key_field)
        if isinstance(key, bool) or not isinstance(key, (str, int)) or key == "":
            return (
                f"field {args.key_field!r} (--key-field) is {key!r:.60}: a key is a non-empty "
                "string or a whole number"
            )
    doc: dict[str, Any] = value
    return doc


@dataclass(frozen=True)
class _Unread:
    """A row that could not be read, and why."""

    why: str


def _rows(stream: IO[Any], args: argparse.Namespace) -> Iterator[tuple[int, Any]]:
    """Each row after ``--after-line`` with the line it starts on: a JSON value or a CSV
    record as a dict, or :class:`_Unread`. Blank lines are no rows."""
    as_csv = args.csv or (args.file or "").lower().endswith(".csv")
    lines = _decoded(stream)
    if as_csv:
        name = "stdin" if args.file in (None, "-") else repr(args.file)
        read = _csv_rows(_csv_text(lines, name))
    else:
        read = _ndjson_rows(lines)
    return ((line, value) for line, value in read if line > args.after_line)


def _decoded(stream: IO[Any]) -> Iterator[str | UnicodeDecodeError]:
    """Each line of ``stream`` as text (bytes read as UTF-8, a BOM first dropped), or the
    error of a line that is no UTF-8."""
    for line, data in enumerate(stream, 1):
        if isinstance(data, str):
            yield data
            continue
        try:
            yield data.decode("utf-8-sig" if line == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            yield exc


def _ndjson_rows(lines: Iterator[str | UnicodeDecodeError]) -> Iterator[tuple[int, Any]]:
    for line, text in enumerate(lines, 1):
        if isinstance(text, UnicodeDecodeError):
            yield line, _Unread(f"not UTF-8 text ({text.reason} at byte {text.start + 1})")
        elif text.strip():
            try:
                yield line, json.loads(text, parse_constant=_no_constant)
            except ValueError as exc:
                yield line, _Unread(f"not JSON: {exc}")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number")


def _csv_text(lines: Iterator[str | UnicodeDecodeError], name: str) -> Iterator[str]:
    """The lines of a CSV, up to one that is no UTF-8: a record may span lines, so there the
    import stops."""
    for line, text in enumerate(lines, 1):
        if isinstance(text, UnicodeDecodeError):
            raise InvalidArgumentError(
                f"{name} is not UTF-8 text at line {line} ({text.reason}): give the CSV in UTF-8"
            )
        yield text


def _csv_rows(lines: Iterator[str]) -> Iterator[tuple[int, Any]]:
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None:
        return
    if not all(header) or len(set(header)) < len(header):
        raise InvalidArgumentError(
            f"the CSV header {','.join(header)!r:.120} must name each column once (no empty "
            "or repeated names)"
        )
    while True:
        line = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield line, _Unread(f"not CSV: {exc}")
            continue
        if len(record) != len(header):
            if record:  # a blank line is no row
                yield line, _Unread(f"{len(record)} fields where the header has {len(header)}")
        else:
            yield line, dict(zip(header, record, strict=True))


def _opened(path: str | None) -> contextlib.AbstractContextManager[IO[Any]]:
    """FILE opened to be read as bytes, or stdin (left open) for ``None`` and ``-``."""
    if path not in (None, "-"):
        try:
            return open(path, "rb")
        except OSError as exc:
            raise InvalidArgumentError(
                f"FILE {path!r}: cannot read it ({exc.strerror}); give a file of NDJSON or "
                "CSV rows, or - for stdin"
            ) from None
    if sys.stdin.isatty():
        # Waiting for rows to be typed looks like a hang: say what the command wants instead.
        raise UsageError("give FILE, or the rows on stdin (see 'couchids import --help')")
    # Its bytes, read as a FILE's are (whatever the locale's encoding).
    return contextlib.nullcontext(getattr(sys.stdin, "buffer", sys.stdin))
