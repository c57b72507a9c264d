"""The ``couchids`` subcommands of the data lifecycle: count, histogram, expire, export, tail
and rekey (count, histogram and export read a series too: :mod:`couchids.cli.series`).
:mod:`couchids.cli.main` adds them to its parser with :func:`add_commands`.

Long runs show a progress bar (``tqdm``) with a rate and an ETA on a terminal's stderr and
nothing when stderr is not a terminal; Ctrl-C stops them cleanly with the resume point printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from couchids.cli.series import SERIES_READS, note_empty, open_source, source_args
from couchids.errors import InvalidArgumentError
from couchids.idforms.doctypes import ALL_TYPES
from couchids.idforms.forms import IdForm
from couchids.idforms.times import now_ms

# The commands load what talks to a server (the ibmcloudant SDK, the query machinery) when
# they run: building the parser, and the offline commands of couchids.cli.main, load none of it.
if TYPE_CHECKING:
    from ibmcloudant.cloudant_v1 import CloudantV1

    from couchids.core.expiry import ExpireReport
    from couchids.core.rekeying import RekeyReport
    from couchids.core.scan import Checkpoint

__all__ = [
    "EXIT_INTERRUPTED",
    "SPARKS",
    "TAIL_POLL_SECONDS",
    "Tools",
    "add_commands",
    "parse_duration",
    "sparkline",
]

EXIT_INTERRUPTED = 130
#: How often ``tail --for`` asks for new changes. A long poll cannot be cut short at the end
#: of the time: PouchDB Server holds one open until a change comes, whatever its timeout.
TAIL_POLL_SECONDS = 1.0
#: Eight heights of a sparkline.
SPARKS = "▁▂▃▄▅▆▇█"
_BAR_WIDTH = 40


@dataclass(frozen=True)
class Tools:
    """What the subcommands take from :mod:`couchids.cli.main`: the client, the id form, times,
    the ``--timeout`` and ``--parallel`` flags, and the note after an empty answer."""

    connect: Callable[[], CloudantV1]
    form: Callable[[argparse.Namespace], IdForm]
    form_flags: Callable[[argparse.ArgumentParser, str], None]
    parse_time: Callable[[str, int], int]
    timeout_flag: Callable[[argparse.ArgumentParser, str], None]
    parallel_flag: Callable[[argparse.ArgumentParser], None]
    note_empty: Callable[[CloudantV1, str, str | None, IdForm, float], None]
    #: What a TIME may be, for the help.
    time_help: str


def sparkline(values: list[int]) -> str:
    """One character per value, its height proportional to the value.

    >>> sparkline([0, 1, 2, 4, 8])
    '▁▁▂▄█'
    """
    top = max(values, default=0)
    if top == 0:
        return SPARKS[0] * len(values)
    return "".join(SPARKS[min(len(SPARKS) - 1, v * (len(SPARKS) - 1) // top)] for v in values)


def parse_duration(text: str) -> float:
    """Seconds in a duration of the command line: a whole number and a unit, ``s``, ``m``
    (minutes), ``h``, ``d`` or ``w``.

    Raises:
        argparse.ArgumentTypeError: anything else (the command's usage error).

    >>> parse_duration("90s"), parse_duration("2h")
    (90.0, 7200.0)
    """
    from couchids.core.counting import parse_every

    try:
        return parse_every(text) / 1000
    except InvalidArgumentError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: give a whole number and a unit, s, m (minutes), h, "
            "d or w, such as 30s, 10m or 2h"
        ) from None


def add_commands(commands: Any, tools: Tools) -> None:
    """Add the lifecycle subcommands to ``commands`` (argparse subparsers)."""
    raw = argparse.RawDescriptionHelpFormatter

    def window_args(
        parser: argparse.ArgumentParser, *, until: bool = True, all_types: bool = False
    ) -> None:
        source_args(parser)
        parser.add_argument("--since", required=True, metavar="TIME", help="start (inclusive)")
        if until:
            parser.add_argument("--until", metavar="TIME", help="end (exclusive; default now)")
        scope = parser.add_mutually_exclusive_group() if all_types else parser
        scope.add_argument("--type", metavar="T", help="only ids T:<id> (default: untyped)")
        if all_types:
            scope.add_argument(
                "--all-types", action="store_true", help="every type present (not untyped ids)"
            )
        tools.form_flags(parser, "of the ids in DB or the series")

    def times(args: argparse.Namespace) -> tuple[int, int]:
        now = now_ms()
        end = now if args.until is None else tools.parse_time(args.until, now)
        return tools.parse_time(args.since, now), end

    def run_count(args: argparse.Namespace) -> int:
        start, end = times(args)
        form = tools.form(args)
        scope = ALL_TYPES if args.all_types else args.type
        client, source = open_source(args, form, tools)
        n = source.count(start, end, type=scope, exact=args.exact, timeout=args.timeout)
        print(n)
        if not n:
            note_empty(tools, client, source, scope, form, args.timeout, (start, end))
        return 0

    def run_histogram(args: argparse.Namespace) -> int:
        # The buckets are the library's: the first starts at --since (partial when --since is
        # not on an edge), so that nothing made before --since is counted.
        start, end = times(args)
        form = tools.form(args)
        client, source = open_source(args, form, tools)
        buckets = source.histogram(
            start, end, every=args.every, type=args.type, exact=args.exact, timeout=args.timeout
        )
        out = sys.stdout
        if args.format == "json":
            for b in buckets:
                row = {"start": _iso(b.start), "end": _iso(b.end), "count": b.count}
                out.write(json.dumps(row) + "\n")
        elif args.format == "csv":
            import csv

            table = csv.writer(out)
            table.writerow(["start", "end", "count"])
            table.writerows([_iso(b.start), _iso(b.end), b.count] for b in buckets)
        elif args.format == "spark":
            out.write(sparkline([b.count for b in buckets]) + "\n")
        else:
            top = max((b.count for b in buckets), default=0) or 1
            for b in buckets:
                bar = "█" * round(b.count * _BAR_WIDTH / top)
                out.write(f"{_iso(b.start)}  {b.count:>8}  {bar}\n")
        if not any(b.count for b in buckets):
            note_empty(tools, client, source, args.type, form, args.timeout, (start, end))
        return 0

    def run_expire(args: argparse.Namespace) -> int:
        from couchids.core.counting import counted
        from couchids.core.scan import Checkpoint, read_policy
        from couchids.database import Database
        from couchids.drivers.blocking import known_facts, run

        before = tools.parse_time(args.before, now_ms())
        client, form = tools.connect(), tools.form(args)
        db = Database(client, args.db)
        mark = Checkpoint(last_id=args.after)
        # Counted for the progress bar; a failure names the command the user ran.
        policy = read_policy(args.timeout, "expire")
        program = counted(
            known_facts(client), policy, db.name, 0, before, type=args.type, form=form, exact=False
        )
        total = run(client, program)
        bar = _bar(total, "deleting" if args.yes else "checking")

        def progress(report: ExpireReport) -> None:
            bar.update(report.checkpoint.done - bar.n)

        try:
            report = db.expire(
                before,
                type=args.type,
                form=form,
                dry_run=not args.yes,
                purge=args.purge,
                checkpoint=mark,
                on_progress=progress,
                timeout=args.timeout,
            )
        except KeyboardInterrupt:
            return _interrupted(bar, mark)
        bar.close()
        if report.dry_run:
            print(f"would delete {report.matched} documents (dry run; --yes deletes them)")
        else:
            print(f"deleted {report.deleted}, already gone {report.gone}, purged {report.purged}")
        for doc_id in report.conflicts:
            print(f"couchids: changed meanwhile, kept: {doc_id}", file=sys.stderr)
        for doc_id, reason in report.failed:
            print(f"couchids: refused: {doc_id}: {reason}", file=sys.stderr)
        return 1 if report.conflicts or report.failed else 0

    def run_export(args: argparse.Namespace) -> int:
        from couchids.core.scan import Checkpoint

        start, end = times(args)
        form = tools.form(args)
        fields = None if args.csv is None else _fields(args.csv)
        client, source = open_source(args, form, tools)
        mark = Checkpoint(last_id=args.after)
        bar = _bar(None, "exporting")
        try:
            source.export(
                start,
                end,
                sys.stdout,
                type=args.type,
                format="csv" if fields else "ndjson",
                fields=fields,
                checkpoint=mark,
                on_progress=lambda m: bar.update(m.done - bar.n),
                timeout=args.timeout,
                parallel=args.parallel,
            )
        except KeyboardInterrupt:
            sys.stdout.flush()
            return _interrupted(bar, mark)
        bar.close()
        if not mark.done and args.after is None:
            note_empty(tools, client, source, args.type, form, args.timeout, (start, end))
        return 0

    def run_tail(args: argparse.Namespace) -> int:
        from couchids.core.scan import Checkpoint
        from couchids.database import Database

        client, form = tools.connect(), tools.form(args)
        db = Database(client, args.db)
        mark = Checkpoint(since=args.since)
        deadline = None if args.duration is None else time.monotonic() + args.duration
        left: int | None = args.limit

        def changes(wait: bool) -> Iterator[dict[str, Any]]:
            return db.follow(
                type=args.type,
                form=form,
                checkpoint=mark,
                wait=wait,
                timeout=args.timeout,
            )

        try:
            if deadline is None:
                _write_docs(changes(args.follow), left, None)
                return 0
            # --for: rounds that each read what is new and return, until the time is up.
            while True:
                written = _write_docs(changes(False), left, deadline)
                if left is not None:
                    left -= written
                remaining = deadline - time.monotonic()
                if left == 0 or remaining <= 0:
                    return 0
                time.sleep(min(TAIL_POLL_SECONDS, remaining))
        except KeyboardInterrupt:
            print(f"couchids: stopped; continue with --since {mark.since}", file=sys.stderr)
            return EXIT_INTERRUPTED

    def run_rekey(args: argparse.Namespace) -> int:
        from couchids.core.scan import Checkpoint
        from couchids.database import Database

        secret = os.environ.get(args.key_env)
        if not secret:
            raise InvalidArgumentError(
                f"set {args.key_env} to the secret of the new ids' random part (keep it to re-run)"
            )
        client, form = tools.connect(), tools.form(args)
        mark = Checkpoint(last_id=args.after)
        made = not os.path.exists(args.mapping)
        mapping = _open_mapping(args.mapping)
        bar = _bar(None, "copying")

        def progress(report: RekeyReport) -> None:
            bar.update(report.checkpoint.done - bar.n)

        try:
            with mapping:
                report = Database(client, args.source).rekey(
                    args.target,
                    key=secret,
                    time_field=args.time_field,
                    type=args.type,
                    form=form,
                    mapping=mapping,
                    checkpoint=mark,
                    on_progress=progress,
                    timeout=args.timeout,
                    create_target=args.create_target,
                )
        except KeyboardInterrupt:
            return _interrupted(bar, mark)
        finally:
            # A run that wrote no line (a missing database, nothing to copy) leaves no file
            # of its own making behind.
            if made and os.path.isfile(args.mapping) and not os.path.getsize(args.mapping):
                os.remove(args.mapping)
        bar.close()
        print(
            f"copied {report.copied}, already there {report.duplicates}, "
            f"skipped {len(report.skipped)}, refused {len(report.failed)}"
        )
        if os.path.isfile(args.mapping) and os.path.getsize(args.mapping):
            print(f"couchids: old and new ids appended to {args.mapping}", file=sys.stderr)
        for doc_id, reason in report.skipped + report.failed:
            print(f"couchids: not copied: {doc_id}: {reason}", file=sys.stderr)
        return 1 if report.failed else 0

    p = commands.add_parser(
        "count",
        help="count the documents made in a time window",
        description="Print the number of documents made in a window.",
        epilog=f"""\
Prints how many documents of --type (untyped ids by default; --all-types: of every type
present, as latest and window take it) and of the form were made at a time t with
SINCE <= t < UNTIL. On CouchDB and Cloudant that takes two requests however many there are
(per type, with --all-types, after one request per type to find them), and ids of other forms
inside the key range count too; --exact reads the ids and counts only those of the form (on
PouchDB Server the ids are always read).

{SERIES_READS}

TIME is {tools.time_help}.

examples:
  couchids count shop --since 30d --type order
  couchids count shop --since 2024-05-01 --until 2024-06-01 --type order --exact
  couchids count shop --since 24h --all-types
  couchids count --series events --period month --since 2026-01-01 --type reading
""",
        formatter_class=raw,
    )
    window_args(p, all_types=True)
    p.add_argument(
        "--exact", action="store_true", help="scan every bucket: foreign ids anywhere left out"
    )
    tools.timeout_flag(p, "a request")
    p.set_defaults(run=run_count)

    p = commands.add_parser(
        "histogram",
        help="count documents per hour, day, ...",
        description="Counts per bucket, aligned to UTC.",
        epilog=f"""\
Prints the count of each bucket of --every, oldest first, as the library's histogram does.
Buckets are aligned to UTC: each inner edge is a whole number of --every from Monday
1970-01-05T00:00Z (whole hours, UTC midnights, and Mondays for --every 1w, as ISO weeks and a
series' weeks start). The first bucket starts at SINCE and the last ends at UNTIL, so nothing
made outside the window is counted: --since 7d --every 1d gives a partial first day, labelled
by its start, and --since 2024-05-01 --every 1d whole ones. Formats: bars (a line per
bucket), spark (one line), csv, json (a line per bucket, with its start and end).

{SERIES_READS}

TIME is {tools.time_help}.

examples:
  couchids histogram shop --since 7d --every 1d --type order
  couchids histogram shop --since 24h --format spark --type order
  couchids histogram shop --since 2024-05-01 --until 2024-06-01 --every 1d --format csv
  couchids histogram --series events --period month --since 90d --every 1w --type reading
""",
        formatter_class=raw,
    )
    window_args(p)
    p.add_argument(
        "--every",
        default="1h",
        help="bucket width, a whole number of s, m, h, d or w: 15m, 1h, 1d, 1w (default 1h)",
    )
    p.add_argument("--format", choices=("bars", "spark", "csv", "json"), default="bars")
    p.add_argument(
        "--exact", action="store_true", help="scan every bucket: foreign ids anywhere left out"
    )
    tools.timeout_flag(p, "a request")
    p.set_defaults(run=run_histogram)

    p = commands.add_parser(
        "expire",
        help="delete the documents of a type made before a time",
        description="Dry run unless --yes.",
        epilog=f"""\
Deletes the documents of --type whose ids were made before --before; without --yes it only
counts them. Safe to run again, also after Ctrl-C, which prints the --after ID to resume with.
A document changed meanwhile is kept and named on stderr, and the exit status is then 1. For a
series (a database per period), couchids series expire drops whole databases instead.

TIME is {tools.time_help}.

examples:
  couchids expire shop --before 90d --type order           how many would go
  couchids expire shop --before 90d --type order --yes     delete them
""",
        formatter_class=raw,
    )
    p.add_argument("db", metavar="DB", help="database name")
    p.add_argument("--before", required=True, metavar="TIME", help="delete what is older")
    p.add_argument("--type", metavar="T", required=True, help="the document type")
    p.add_argument("--yes", action="store_true", help="delete (default: a dry run)")
    p.add_argument("--purge", action="store_true", help="then purge (CouchDB only)")
    p.add_argument("--after", metavar="ID", help="resume after this id")
    tools.form_flags(p, "of the ids in DB")
    tools.timeout_flag(p, "a request (a page, a batch's delete)")
    p.set_defaults(run=run_expire)

    p = commands.add_parser(
        "export",
        help="export a window as NDJSON or CSV, resumably",
        description="Oldest first; --after ID resumes.",
        epilog=f"""\
Writes the documents made at a time t with SINCE <= t < UNTIL, oldest first, as JSON lines,
or with --csv FIELDS as CSV of those fields. Ctrl-C prints the --after ID to resume with.

{SERIES_READS}

TIME is {tools.time_help}.

examples:
  couchids export shop --since 2024-05-01 --until 2024-06-01 --type order > may.jsonl
  couchids export shop --since 7d --type order --csv _id,total > week.csv
  couchids export shop --since 2024-05-01 --type order --after ID >> may.jsonl
  couchids export --series events --period month --since 2026-01-01 --type reading > 2026.jsonl
""",
        formatter_class=raw,
    )
    window_args(p)
    p.add_argument(
        "--csv", metavar="FIELDS", help="CSV of these comma-separated fields, such as _id,total"
    )
    p.add_argument("--after", metavar="ID", help="resume after this id")
    tools.parallel_flag(p)
    tools.timeout_flag(p, "a request (one page)")
    p.set_defaults(run=run_export)

    p = commands.add_parser(
        "tail",
        help="print new documents of a type as they arrive",
        description="JSON lines from _changes.",
        epilog=f"""\
Prints the documents of --type stored after --since (default: from now on) as JSON lines,
oldest first in each batch, and stops once caught up. -f keeps waiting for more;
--for DURATION waits that long (asking every {TAIL_POLL_SECONDS:g} s); --limit N stops after N
documents. Ctrl-C prints the --since to continue with.

examples:
  couchids tail shop --type order -f
  couchids tail shop --type order --since 0 --limit 10
  couchids tail shop --type order --for 10m > orders.jsonl
""",
        formatter_class=raw,
    )
    p.add_argument("db", metavar="DB", help="database name")
    p.add_argument("--type", metavar="T", help="only ids T:<id> (default: untyped)")
    p.add_argument("-f", "--follow", action="store_true", help="keep waiting for more")
    p.add_argument(
        "--for",
        dest="duration",
        type=parse_duration,
        metavar="DURATION",
        help="keep waiting for this long, then stop: 30s, 10m, 2h (implies -f)",
    )
    p.add_argument("--limit", type=_at_least_one, metavar="N", help="stop after N documents")
    p.add_argument("--since", default="now", help="a _changes sequence, 0, or now (default)")
    tools.form_flags(p, "of the ids in DB")
    tools.timeout_flag(p, "a request (beyond a long poll's own wait)")
    p.set_defaults(run=run_tail)

    p = commands.add_parser(
        "rekey",
        help="copy a database to time-sortable ids",
        description="Resumable, idempotent; the source is only read.",
        epilog="""\
Copies every document of SOURCE into TARGET (which must exist, or --create-target creates
it) under a new id of the form, made at the time in --time-field (or, without it, in a CouchDB
utc_random id) with a random part derived from the secret in --key-env: a second run makes the
same ids and copies nothing twice. Old and new ids are appended to the --mapping file, one JSON
line each: rekey-mapping.ndjson in the current directory unless --mapping names another.
Ctrl-C prints the --after ID.

examples:
  COUCHIDS_REKEY_KEY=... couchids rekey legacy shop --time-field created --type order
  COUCHIDS_REKEY_KEY=... couchids rekey legacy shop-new --create-target --mapping ids.ndjson
  COUCHIDS_REKEY_KEY=... couchids rekey legacy shop --type order --after ID
""",
        formatter_class=raw,
    )
    p.add_argument("source", metavar="SOURCE", help="database to read")
    p.add_argument("target", metavar="TARGET", help="database to write (see --create-target)")
    p.add_argument(
        "--create-target", action="store_true", help="create TARGET if it does not exist"
    )
    p.add_argument("--time-field", metavar="F", help="field with the time (default: utc_random id)")
    p.add_argument("--type", metavar="T", help="type of the new ids")
    p.add_argument(
        "--key-env",
        default="COUCHIDS_REKEY_KEY",
        metavar="VAR",
        help="environment variable holding the secret (default COUCHIDS_REKEY_KEY)",
    )
    p.add_argument(
        "--mapping",
        default="rekey-mapping.ndjson",
        metavar="FILE",
        help="old-to-new ids are appended here (default: rekey-mapping.ndjson in the current "
        "directory)",
    )
    p.add_argument("--after", metavar="ID", help="resume after this source id")
    tools.form_flags(p, "of the new ids")
    tools.timeout_flag(p, "a request (a page read, a batch's write)")
    p.set_defaults(run=run_rekey)


def _write_docs(docs: Iterator[dict[str, Any]], limit: int | None, deadline: float | None) -> int:
    """Write ``docs`` as JSON lines, each flushed as it comes, until ``limit`` of them are out
    or ``deadline`` (``time.monotonic()``) has passed; stop the stream; return how many."""
    out, written = sys.stdout, 0
    try:
        if limit == 0:
            return 0
        for doc in docs:
            out.write(json.dumps(doc, separators=(",", ":")) + "\n")
            out.flush()
            written += 1
            if written == limit or (deadline is not None and time.monotonic() >= deadline):
                break
    finally:
        close = getattr(docs, "close", None)
        if close is not None:
            close()
    return written


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return value


def _fields(text: str) -> list[str]:
    """The field names of ``--csv``; a usage error when one is empty (``''``, ``a,,b``)."""
    fields = [name.strip() for name in text.split(",")]
    if not all(fields):
        raise InvalidArgumentError(
            f"--csv {text!r}: give the fields of the CSV separated by commas, such as "
            "--csv _id,total (no empty names)"
        )
    return fields


def _open_mapping(path: str) -> TextIO:
    """The ``--mapping`` file, open for appending; a usage error when it cannot be."""
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as exc:
        raise InvalidArgumentError(
            f"--mapping {path!r}: cannot append the old-to-new ids to it ({exc.strerror}); "
            "name a file in an existing directory"
        ) from None


def _iso(moment: Any) -> str:
    return str(moment.isoformat().replace("+00:00", "Z"))


def _bar(total: int | None, what: str) -> Any:
    # Imported here: every command starts up without it (``couchids window`` included).
    from tqdm import tqdm

    return tqdm(
        total=total, desc=what, unit="doc", file=sys.stderr, disable=not sys.stderr.isatty()
    )


def _interrupted(bar: Any, mark: Checkpoint) -> int:
    bar.close()
    where = f"--after {mark.last_id}" if mark.last_id else "the same command"
    print(f"couchids: stopped after {mark.done} documents; resume with {where}", file=sys.stderr)
    return EXIT_INTERRUPTED
