"""The reading subcommands: ``latest``, ``window``, ``count`` and ``histogram``, of a database
or a series (:mod:`couchids.cli.sources`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any

from couchids.cli.options import (
    EXIT_OK,
    TIME_HELP,
    add,
    add_form,
    close,
    count_of,
    duration,
    iso,
    json_line,
)
from couchids.cli.options import window as time_window
from couchids.cli.sources import SERIES_READS, open_source, source_args
from couchids.core.defaults import DEFAULT_PARALLEL, DEFAULT_WORKERS
from couchids.core.windows import DEFAULT_PAGE_SIZE

#: ``window`` updates its progress line on a terminal every this many documents.
PROGRESS_EVERY = 1000
#: Eight heights of a sparkline.
SPARKS = "▁▂▃▄▅▆▇█"
_BAR_WIDTH = 40
_ALL_TYPES_HELP = "every type, merged by time"
_COLUMNS = ("start", "end", "count")

LATEST_EPILOG = """\
Prints the newest N documents as JSON lines, newest first. Only ids of the given form and type
count: other documents in the database are skipped.

A series (--series PREFIX --period PERIOD instead of DB) answers as one database holding all
its periods would: its newest database first, then the one before, until N are found.

examples:
  couchids latest orders
  couchids latest orders -n 3 --type order
  couchids latest events -n 20 --ms --reverse
  couchids latest --series events --period month -n 5 --type reading
"""

WINDOW_EPILOG = f"""\
Prints every document whose id was made at a time t with SINCE <= t < UNTIL, as JSON lines,
newest first (or with --ids-only just the ids). On a terminal a count on stderr shows the
progress of long exports. A series (--series PREFIX --period PERIOD instead of DB) answers as
one database holding all its periods would: each period's database in turn, in order.

TIME is {TIME_HELP}.

examples:
  couchids window orders --since 24h --type order > last-day.jsonl
  couchids window orders --since 2024-05-01 --until 2024-06-01 --oldest-first
  couchids window events --since 7d --ids-only --v7s | wc -l
  couchids window --series events --period month --since 90d --type reading
"""


COUNT_EPILOG = f"""\
Prints how many documents of --type (untyped ids by default; --all-types: of every type
present, as latest and window take it) and of the form were made at a time t with
SINCE <= t < UNTIL: what window prints, counted from the ids (no documents), with
--all-types after one request per type to find them. --index-only counts from the index
instead: on CouchDB and Cloudant two requests however many there are, but every id inside the
key range counts (child ids such as order:<id>:line1, ids of other forms, design documents);
when a write lands between its requests, or on PouchDB Server, the ids are read.

{SERIES_READS}

TIME is {TIME_HELP}.

examples:
  couchids count shop --since 30d --type order
  couchids count shop --since 2024-05-01 --until 2024-06-01 --type order --index-only
  couchids count shop --since 24h --all-types
  couchids count --series events --period month --since 2026-01-01 --type reading
"""

HISTOGRAM_EPILOG = f"""\
Prints the count of each bucket of --every, oldest first, as the library's histogram does.
Buckets are aligned to UTC: each inner edge is a whole number of --every from Monday
1970-01-05T00:00Z (whole hours, UTC midnights, and Mondays for --every 1w, as ISO weeks and a
series' weeks start). The first bucket starts at SINCE and the last ends at UNTIL, so nothing
made outside the window is counted: --since 7d --every 1d gives a partial first day, labelled
by its start, and --since 2024-05-01T00:00Z --every 1d whole ones (a TIME without an offset
is local time). The ids are read once and bucketed; --index-only counts each bucket from the
index as count does. Formats: bars (a line per bucket), spark (one line), csv, json (a line
per bucket, with its start and end).

{SERIES_READS}

TIME is {TIME_HELP}.

examples:
  couchids histogram shop --since 7d --every 1d --type order
  couchids histogram shop --since 24h --format spark --type order
  couchids histogram shop --since 2024-05-01 --until 2024-06-01 --every 1d --format csv
  couchids histogram --series events --period month --since 90d --every 1w --type reading
"""


def add_commands(commands: Any) -> None:
    """Add ``latest``, ``window``, ``count`` and ``histogram`` to ``commands``."""
    p = commands.add_parser(
        "latest",
        help="print the newest documents of a database",
        description="Print the newest documents of a database, as JSON lines.",
        epilog=LATEST_EPILOG,
    )
    source_args(p)
    p.add_argument("-n", type=count_of(0), default=10, metavar="N", help="how many (default 10)")
    add(p.add_mutually_exclusive_group(), "type", all_types=_ALL_TYPES_HELP)
    add(p, timeout="the server")
    add_form(p, "of the ids in DB or the series")
    p.set_defaults(run=_latest)

    p = commands.add_parser(
        "window",
        help="export the documents made in a time window",
        description="Export the documents whose ids were made in a time window, as JSON lines.",
        epilog=WINDOW_EPILOG,
    )
    source_args(p)
    add(p, "since", until="default now")
    add(p.add_mutually_exclusive_group(), "type", all_types=_ALL_TYPES_HELP)
    p.add_argument("--oldest-first", action="store_true", help="oldest first")
    p.add_argument("--ids-only", action="store_true", help="print ids, not documents")
    add(p, "parallel", batch_size="rows", timeout="a request (one page)")
    add_form(p, "of the ids in DB or the series")
    p.set_defaults(run=_window, batch_size=DEFAULT_PAGE_SIZE)

    p = commands.add_parser(
        "count",
        help="count the documents made in a time window",
        description="Print the number of documents made in a window.",
        epilog=COUNT_EPILOG,
    )
    source_args(p)
    add(p, "since", until="default now")
    add(p.add_mutually_exclusive_group(), "type", all_types="every type present (not untyped ids)")
    add_form(p, "of the ids in DB or the series")
    add(p, "index_only", timeout="a request")
    p.set_defaults(run=_count)

    p = commands.add_parser(
        "histogram",
        help="count documents per hour, day, ...",
        description="Counts per bucket, aligned to UTC.",
        epilog=HISTOGRAM_EPILOG,
    )
    source_args(p)
    add(p, "since", "type", until="default now")
    add_form(p, "of the ids in DB or the series")
    p.add_argument(
        "--every",
        type=duration,
        default="1h",
        help="bucket width, a whole number of s, m, h, d or w: 15m, 1h, 1d, 1w (default 1h)",
    )
    p.add_argument(
        "--format",
        choices=("bars", "spark", "csv", "json"),
        default="bars",
        help="bars (a line per bucket, the default), spark (one line), csv, or json lines",
    )
    parallel = {
        "default": None,
        "help": f"requests at a time (default: {DEFAULT_PARALLEL} time slices of the ids, "
        f"{DEFAULT_WORKERS} bucket edges with --index-only)",
    }
    add(p, "index_only", parallel=parallel, timeout="a request")
    p.set_defaults(run=_histogram)


def _latest(args: argparse.Namespace) -> int:
    source = open_source(args)
    docs = source.handle.latest(args.n, type=source.scope)
    for doc in docs:
        sys.stdout.write(json_line(doc) + "\n")
    if not docs and args.n:
        source.note_empty()
    return EXIT_OK


def _window(args: argparse.Namespace) -> int:
    from couchids.core.exactjson import dumps

    start, end = time_window(args)
    source = open_source(args)
    pages = source.handle.window(
        start,
        end,
        type=source.scope,
        newest_first=not args.oldest_first,
        include_docs=not args.ids_only,
    ).pages()
    # A count of the documents out, in place on a terminal's stderr (nothing elsewhere).
    count, terminal = 0, sys.stderr if sys.stderr.isatty() else None
    try:
        for page in pages:
            _write([row["id"].encode() for row in page] if args.ids_only else map(dumps, page))
            if terminal and (count + len(page)) // PROGRESS_EVERY > count // PROGRESS_EVERY:
                terminal.write(f"\rcouchids: {count + len(page):,} documents")
                terminal.flush()
            count += len(page)
    finally:
        if terminal and count >= PROGRESS_EVERY:
            terminal.write("\r\x1b[K")  # back to the line's start, and erase it
            terminal.flush()
        close(pages)  # the query's prefetch thread stops now, not when collected
    if not count:
        source.note_empty((start, end))
    return EXIT_OK


def _count(args: argparse.Namespace) -> int:
    start, end = time_window(args)
    source = open_source(args)
    n = source.handle.count(start, end, type=source.scope, index_only=args.index_only)
    print(n)
    if not n:
        source.note_empty((start, end))
    return EXIT_OK


def _histogram(args: argparse.Namespace) -> int:
    start, end = time_window(args)
    source = open_source(args)
    buckets = source.handle.histogram(
        start, end, every=args.every, type=args.type, index_only=args.index_only
    )
    rows = [(iso(b.start), iso(b.end), b.count) for b in buckets]
    out = sys.stdout
    if args.format == "json":
        out.writelines(json.dumps(dict(zip(_COLUMNS, row, strict=True))) + "\n" for row in rows)
    elif args.format == "csv":
        import csv

        csv.writer(out).writerows([_COLUMNS, *rows])
    elif args.format == "spark":
        out.write(sparkline([b.count for b in buckets]) + "\n")
    else:
        top = max((b.count for b in buckets), default=0) or 1
        width = max((len(label) for label, _, _ in rows), default=0)  # a partial first bucket
        for label, _, count in rows:
            bar = "█" * round(count * _BAR_WIDTH / top)
            out.write(f"{label:<{width}}  {count:>8}  {bar}\n")
    if not any(b.count for b in buckets):
        source.note_empty((start, end))
    return EXIT_OK


def sparkline(values: list[int]) -> str:
    """One character per value, its height proportional to the value.

    >>> sparkline([0, 1, 2, 4, 8])
    '▁▁▂▄█'
    """
    top = max(values, default=0)
    if top == 0:
        return SPARKS[0] * len(values)
    return "".join(SPARKS[min(len(SPARKS) - 1, v * (len(SPARKS) - 1) // top)] for v in values)


def _write(lines: Iterable[bytes]) -> None:
    """Write ``lines`` of UTF-8 (a page of JSON documents or ids) to stdout in one write: a
    write per line costs a system call each where output is unbuffered (``PYTHONUNBUFFERED``)."""
    block = b"".join(line + b"\n" for line in lines)
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:  # a text-only stream, such as io.StringIO
        sys.stdout.write(block.decode())
    else:
        sys.stdout.flush()  # what was written as text before goes first
        binary.write(block)
