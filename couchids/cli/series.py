"""The command line of a series (:class:`couchids.Series`): ``couchids series list|prepare|expire``,
and ``--series PREFIX --period PERIOD`` in place of ``DB`` on the reading subcommands
(``latest``, ``window``, ``count``, ``histogram``, ``export``).

A series is named by its prefix and its kind of period, the two facts that name its databases
(``events`` of months: ``events-2026-11``). The command asks for both every time rather than
defaulting the period as the library does (``every="month"``): ``prepare`` of a mistaken period
would create databases nobody reads. The period's flag is ``--period``, not the library's
``every``: ``histogram --every`` is the width of its buckets already, and a histogram of a
series takes both (``--period month --every 1d``).

A series none of whose databases exists is refused as a missing database is (exit status 1):
the command never reports nothing found for a name nothing on the server has (a misspelt
prefix, the wrong ``--period``). After an empty answer from a series the note on stderr says
that none of its databases holds the window, or else what
:meth:`couchids.Database.explain_empty` finds in the newest database the answer read (the one
most likely to show the ids being written now).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from couchids.core.periods import EVERY, MAX_AHEAD, Every, SeriesLayout
from couchids.errors import DatabaseNotFoundError, InvalidArgumentError, ServerError
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import KUUID, IdForm
from couchids.idforms.times import now_ms, to_datetime

# What talks to a server is loaded when a command runs (see couchids.cli.main).
if TYPE_CHECKING:
    from ibmcloudant.cloudant_v1 import CloudantV1

    from couchids.cli.lifecycle import Tools
    from couchids.database import Database
    from couchids.series import Series

__all__ = [
    "PERIOD_HELP",
    "SERIES_READS",
    "add_series_command",
    "note_empty",
    "open_source",
    "source_args",
]

#: What ``--period`` takes, for the help.
PERIOD_HELP = "day, week (ISO weeks, from Monday), month or year, of UTC time"
#: What the help of a reading subcommand says of a series.
SERIES_READS = (
    "A series (--series PREFIX --period PERIOD instead of DB) answers as one database holding\n"
    "all its periods would, reading each period's database in turn."
)
#: Names of the databases of each kind of period, for the help and the notes.
_NAMED = {
    "day": "PREFIX-2026-11-25",
    "week": "PREFIX-2026-w48",
    "month": "PREFIX-2026-11",
    "year": "PREFIX-2026",
}
_PLURAL = {"day": "days", "week": "ISO weeks", "month": "months", "year": "years"}


def source_args(parser: argparse.ArgumentParser) -> None:
    """``DB``, or ``--series PREFIX --period PERIOD``: what a reading subcommand reads."""
    parser.add_argument(
        "db", nargs="?", metavar="DB", help="database name (or --series and --period)"
    )
    group = parser.add_argument_group(
        "a series instead of DB",
        "the databases PREFIX-<period> of a series, read as one (see couchids series --help)",
    )
    group.add_argument("--series", metavar="PREFIX", help="what the databases' names start with")
    group.add_argument(
        "--period", choices=EVERY, metavar="PERIOD", help=f"a database per {PERIOD_HELP}"
    )
    parser.set_defaults(prog=parser.prog)


def _layout(args: argparse.Namespace, form: IdForm) -> SeriesLayout | None:
    """The series of ``--series``/``--period`` (checked, nothing sent), or ``None`` for DB."""
    see = f" (see '{args.prog} --help')"
    db: str | None = args.db
    prefix: str | None = args.series
    period: Every | None = args.period
    if prefix is None:
        if period is not None:
            raise InvalidArgumentError(f"--period needs --series PREFIX{see}")
        if db is None:
            raise InvalidArgumentError(
                f"give a database DB, or a series with --series PREFIX --period PERIOD{see}"
            )
        if not db:
            raise InvalidArgumentError("the database name is empty")
        return None
    if db is not None:
        raise InvalidArgumentError(
            f"give a database DB or --series PREFIX, not both ({db!r} and --series {prefix!r}){see}"
        )
    if period is None:
        raise InvalidArgumentError(f"--series needs --period: {PERIOD_HELP.split(',')[0]}{see}")
    return SeriesLayout(prefix, period, form)


def open_source(
    args: argparse.Namespace, form: IdForm, tools: Tools
) -> tuple[CloudantV1, Database | Series]:
    """The client and the handle of what the command reads: DB, or the series of
    ``--series``/``--period``; the arguments are checked before the server is asked anything.

    Raises:
        InvalidArgumentError: neither or both of DB and ``--series``, ``--period`` without
            ``--series`` or the other way round, a prefix that cannot start a database name,
            or a form whose ids hold no time in ``_all_docs`` order (for a series).
        DatabaseNotFoundError: the series has no database (:func:`existing`).
    """
    layout = _layout(args, form)
    client = tools.connect()
    if layout is None:
        from couchids.database import Database

        return client, Database(client, args.db, form=form)
    series = _series(client, layout)
    existing(series, args.timeout)
    return client, series


def existing(series: Series, timeout: float) -> list[str]:
    """The names of the series' databases (one ``GET /_all_dbs``), oldest first.

    Raises:
        DatabaseNotFoundError: none exists: a series is its databases, and a command given
            a series that has none fails as one given a missing database does.
    """
    names = series.databases(timeout=timeout)
    if not names:
        layout = series.layout
        raise DatabaseNotFoundError(
            f"the series {layout.prefix!r} {_kind(layout)} has no databases on this server "
            f"(couchids series prepare {layout.prefix} --period {layout.every} creates them)",
            404,
        )
    return names


def _series(client: CloudantV1, layout: SeriesLayout) -> Series:
    from couchids.series import Series

    return Series(
        client, layout.prefix, every=layout.every, form=layout.form, partitioned=layout.partitioned
    )


def note_empty(
    tools: Tools,
    client: CloudantV1,
    source: Database | Series,
    scope: str | AllTypes | None,
    form: IdForm,
    timeout: float,
    window: tuple[int, int] | None = None,
) -> None:
    """After an answer with nothing in it, a note on stderr saying why, when the database or
    the series shows it; ``window`` is the ``(start, end)`` read, ``None`` for ``latest``."""
    from couchids.database import Database

    if isinstance(source, Database):
        if scope is not ALL_TYPES:
            tools.note_empty(client, source.name, scope, form, timeout)
        return
    layout = source.layout
    try:
        names = source.databases(timeout=timeout)
    except ServerError:
        return  # the answer, nothing, stands
    kind = _kind(layout)
    if not names:
        _note(f"the series {layout.prefix!r} {kind} has no databases")
        return
    if window is not None:
        start, end = window
        listed, names = names, [n for n in names if _period_of(layout, n).overlaps(start, end)]
        if not names:
            held = listed[0] if len(listed) == 1 else f"{listed[0]} to {listed[-1]}"
            _note(
                f"no database of the series {layout.prefix!r} {kind} holds a time from "
                f"{_iso(start)} to {_iso(end)}: it has {held}"
            )
            return
    if scope is not ALL_TYPES:
        tools.note_empty(client, names[-1], scope, form, timeout)


def _period_of(layout: SeriesLayout, name: str) -> Any:
    period = layout.period(name)
    assert period is not None  # Series.databases lists only the series' own names
    return period


def _kind(layout: SeriesLayout) -> str:
    """``of months (named like events-2026-11)``: what a note calls the series' periods."""
    named = _NAMED[layout.every].replace("PREFIX", layout.prefix)
    return f"of {_PLURAL[layout.every]} (named like {named})"


def _note(text: str) -> None:
    print(f"couchids: note: {text}", file=sys.stderr)


def _iso(ms: int) -> str:
    return to_datetime(ms).isoformat().replace("+00:00", "Z")


# -- couchids series ----------------------------------------------------------------------------

SERIES_EPILOG = f"""\
A series keeps its documents in a database per period of UTC time, named after the period:
PREFIX-2026 (a year), PREFIX-2026-11 (a month), PREFIX-2026-w48 (ISO week 48, from Monday),
PREFIX-2026-11-25 (a day). Writes (couchids.Series) go to the database of the time in each
id and create it when it is missing; retention drops whole databases, which is instant and
leaves no tombstones. The reading commands take a series in place of DB:
latest, window, count, histogram and export --series PREFIX --period PERIOD.

Listing the databases is one GET /_all_dbs, which CouchDB 3 allows only admins by default.

examples:
  couchids series list events --period month
  couchids series prepare events --period month --ahead 2
  couchids series expire events --period month --before 365d
  couchids window --series events --period month --since 90d --type reading
  couchids histogram --series events --period month --since 30d --every 1d --type reading

PERIOD is {PERIOD_HELP}.
"""


def add_series_command(commands: Any, tools: Tools) -> None:
    """Add ``couchids series`` and its subcommands to ``commands`` (argparse subparsers)."""
    raw = argparse.RawDescriptionHelpFormatter
    top = commands.add_parser(
        "series",
        help="list, prepare and expire the databases of a series (a database per period)",
        description="The databases of a series: a database per day, ISO week, month or year.",
        epilog=SERIES_EPILOG,
        formatter_class=raw,
    )
    sub = top.add_subparsers(title="commands", metavar="COMMAND", required=True)

    def series_args(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("prefix", metavar="PREFIX", help="what the databases' names start with")
        parser.add_argument(
            "--period",
            required=True,
            choices=EVERY,
            metavar="PERIOD",
            help=f"a database per {PERIOD_HELP}",
        )

    def run_list(args: argparse.Namespace) -> int:
        layout = SeriesLayout(args.prefix, args.period, KUUID)
        client = tools.connect()
        names = existing(_series(client, layout), args.timeout)
        out = sys.stdout
        for name in names:
            if args.json:
                period = _period_of(layout, name)
                row = {"db": name, "start": _iso(period.start_ms), "end": _iso(period.end_ms)}
                out.write(json.dumps(row) + "\n")
            else:
                out.write(name + "\n")
        return 0

    p = sub.add_parser(
        "list",
        help="print the series' databases, oldest first",
        description="Print the names of the series' databases that exist, oldest first.",
        epilog="""\
Prints one name a line, oldest period first; with --json one JSON object a line: db, start
and end (the period, ISO-8601 UTC, end exclusive). Only the names of this series' periods
count: PREFIX-x-2026-11 (another series) or PREFIX-2026-11 when --period is day are left out.
A series with no database is an error (exit status 1), as it is for every command.

examples:
  couchids series list events --period month
  couchids series list events --period day --json
""",
        formatter_class=raw,
    )
    series_args(p)
    p.add_argument("--json", action="store_true", help="JSON lines with each period's times")
    tools.timeout_flag(p, "the request")
    p.set_defaults(run=run_list)

    def run_prepare(args: argparse.Namespace) -> int:
        layout = SeriesLayout(args.prefix, args.period, KUUID, args.partitioned)
        client = tools.connect()
        for name in _series(client, layout).prepare(args.ahead, timeout=args.timeout):
            print(name)
        return 0

    p = sub.add_parser(
        "prepare",
        help="create the databases of the current and the next periods",
        description="Create the databases of the current period and the next --ahead ones.",
        epilog="""\
Creates the database of the current period and of the --ahead periods after it, unless they
exist, and prints their names, oldest first. Safe to run again, and from several machines at
once. Writes create a missing period's database themselves: preparing spares the first write
of each period that detour. Run it from a daily job, with --ahead covering its longest pause.

examples:
  couchids series prepare events --period month
  couchids series prepare events --period day --ahead 7
  couchids series prepare sensors --period week --partitioned
""",
        formatter_class=raw,
    )
    series_args(p)
    p.add_argument(
        "--ahead",
        type=_ahead,
        default=1,
        metavar="N",
        help=f"periods after the current one, 0 to {MAX_AHEAD} (default 1)",
    )
    p.add_argument(
        "--partitioned", action="store_true", help="create them partitioned (CouchDB 3, Cloudant)"
    )
    tools.timeout_flag(p, "each database's creation")
    p.set_defaults(run=run_prepare)

    def run_expire(args: argparse.Namespace) -> int:
        before = tools.parse_time(args.before, now_ms())
        layout = SeriesLayout(args.prefix, args.period, tools.form(args))
        client = tools.connect()
        series = _series(client, layout)
        existing(series, args.timeout)
        try:
            report = series.expire(
                before, dry_run=not args.yes, purge=args.purge, timeout=args.timeout
            )
        except KeyboardInterrupt:
            print(
                "couchids: stopped; what was done stays done, and the same command finishes it",
                file=sys.stderr,
            )
            raise
        out = sys.stdout
        drop = "would drop" if report.dry_run else "dropped"
        for name in report.dropped:
            out.write(f"{drop} {name}\n")
        verb = "would delete" if report.dry_run else "deleted"
        for db, each in report.expired.items():
            count = each.matched if report.dry_run else each.deleted
            out.write(f"{verb} {count} documents of {db} made before {_iso(before)}\n")
        dropped = f"{len(report.dropped)} database{'' if len(report.dropped) == 1 else 's'}"
        if report.dry_run:
            out.write(
                f"would drop {dropped} and delete {report.deleted} documents (dry run; --yes "
                "drops and deletes them)\n"
            )
        else:
            gone = sum(each.gone for each in report.expired.values())
            purged = sum(each.purged for each in report.expired.values())
            out.write(
                f"dropped {dropped}, deleted {report.deleted}, already gone {gone}, "
                f"purged {purged}\n"
            )
        for doc_id in report.conflicts:
            print(f"couchids: changed meanwhile, kept: {doc_id}", file=sys.stderr)
        for doc_id, reason in report.failed:
            print(f"couchids: refused: {doc_id}: {reason}", file=sys.stderr)
        for doc_id in report.unread:
            print(f"couchids: no time the series can read, kept: {doc_id}", file=sys.stderr)
        return 1 if report.conflicts or report.failed or report.unread else 0

    p = sub.add_parser(
        "expire",
        help="drop the databases of the periods before a time (dry run unless --yes)",
        description="Dry run unless --yes.",
        epilog=f"""\
Drops the databases of the whole periods that ended by --before (instant, and no tombstones
left) and deletes every document whose id holds a time before it from the databases that stay:
the period holding --before is read whole (ids of the form of every type and untyped, short
ids), later ones where older ids would sort. Design documents stay. Without --yes it only says
what would go. Prints a line per database dropped (would drop), one per database that stays
and held older documents, and a summary. Safe to run again, also after Ctrl-C. A document
changed meanwhile is kept, and an id whose time cannot be read (another form's) is kept: each
is named on stderr, and the exit status is then 1.

TIME is {tools.time_help}.

examples:
  couchids series expire events --period month --before 365d           what would go
  couchids series expire events --period month --before 365d --yes     drop and delete it
  couchids series expire logs --period day --before 2026-01-01 --yes --v7s
""",
        formatter_class=raw,
    )
    series_args(p)
    p.add_argument("--before", required=True, metavar="TIME", help="drop and delete what is older")
    p.add_argument("--yes", action="store_true", help="drop and delete (default: a dry run)")
    p.add_argument("--purge", action="store_true", help="then purge (CouchDB only)")
    tools.form_flags(p, "of the series' ids")
    tools.timeout_flag(p, "a request (a page, a batch's delete, a database's drop)")
    p.set_defaults(run=run_expire)


def _ahead(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_AHEAD:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 0 to {MAX_AHEAD}")
    return value
