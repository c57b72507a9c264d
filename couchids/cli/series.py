"""``couchids series list|prepare|expire``: the databases of a series (:class:`couchids.Series`),
a database per day, ISO week, month or year."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any

from couchids.cli.options import (
    EXIT_OK,
    TIME_HELP,
    add,
    add_form,
    count_of,
    form,
    in_flags,
    iso,
    moment,
    say,
)
from couchids.cli.sources import PERIOD_HELP, existing, make_series, period_of, say_kept
from couchids.core.periods import EVERY, MAX_AHEAD, SeriesLayout
from couchids.errors import DatabaseLimitWarning
from couchids.idforms.forms import KUUID
from couchids.idforms.times import now_ms

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


LIST_EPILOG = """\
Prints one name a line, oldest period first; with --json one JSON object a line: db, start
and end (the period, ISO-8601 UTC, end exclusive). Only the names of this series' periods
count: PREFIX-x-2026-11 (another series) or PREFIX-2026-11 when --period is day are left out.
A series with no database is an error (exit status 1), as it is for every command.

examples:
  couchids series list events --period month
  couchids series list events --period day --json
"""

PREPARE_EPILOG = """\
Creates the database of the current period and of the --ahead periods after it, unless they
exist, and prints their names, oldest first. Safe to run again, and from several machines at
once. Writes create a missing period's database themselves: preparing spares the first write
of each period that detour. Run it from a daily job, with --ahead covering its longest pause.

On a server that caps its number of databases (IBM Cloudant: 200 on Standard, 20 on Lite),
--max-databases N (every database on the server counts, the series' and others) makes it
count them (one GET /_all_dbs) and warn on stderr when no more than --ahead more can be made,
naming the period whose database will be refused; the exit status stays 0. On Cloudant the
cap is read from the server where the credentials may read it.

examples:
  couchids series prepare events --period month
  couchids series prepare events --period day --ahead 7
  couchids series prepare events --period day --ahead 7 --max-databases 200
  couchids series prepare sensors --period week --partitioned
"""

EXPIRE_EPILOG = f"""\
Drops the databases of the whole periods that ended by --before (instant, and no tombstones
left) and deletes every document whose id holds a time before it from the databases that stay:
the period holding --before is read whole (ids of the form of every type and untyped, short
ids), later ones where older ids would sort. Design documents stay. Without --yes it only says
what would go. Prints a line per database dropped (would drop), one per database that stays
and held older documents, and a summary. Safe to run again, also after Ctrl-C. A document
changed meanwhile is kept, and an id whose time cannot be read (another form's) is kept, with
its database when its period ended: each is named on stderr, and the exit status is then 1.

TIME is {TIME_HELP}.

examples:
  couchids series expire events --period month --before 365d           what would go
  couchids series expire events --period month --before 365d --yes     drop and delete it
  couchids series expire logs --period day --before 2026-01-01 --yes --v7s
"""


def add_commands(commands: Any) -> None:
    """Add ``couchids series`` and its subcommands to ``commands``."""
    top = commands.add_parser(
        "series",
        help="list, prepare and expire the databases of a series (a database per period)",
        description="The databases of a series: a database per day, ISO week, month or year.",
        epilog=SERIES_EPILOG,
    )
    sub = top.add_subparsers(title="commands", metavar="COMMAND", required=True)
    p = _add(
        sub,
        "list",
        help="print the series' databases, oldest first",
        description="Print the names of the series' databases that exist, oldest first.",
        epilog=LIST_EPILOG,
    )
    p.add_argument("--json", action="store_true", help="JSON lines with each period's times")
    add(p, timeout="the request")
    p.set_defaults(run=_list)

    p = _add(
        sub,
        "prepare",
        help="create the databases of the current and the next periods",
        description="Create the databases of the current period and the next --ahead ones.",
        epilog=PREPARE_EPILOG,
    )
    p.add_argument(
        "--ahead",
        type=count_of(0, MAX_AHEAD),
        default=1,
        metavar="N",
        help=f"periods after the current one, 0 to {MAX_AHEAD} (default 1)",
    )
    p.add_argument(
        "--partitioned", action="store_true", help="create them partitioned (CouchDB 3, Cloudant)"
    )
    p.add_argument(
        "--max-databases",
        type=count_of(1),
        default=None,
        metavar="N",
        help="the most databases the server holds: warn when --ahead periods reach it",
    )
    add(p, timeout="each database's creation")
    p.set_defaults(run=_prepare)

    p = _add(
        sub,
        "expire",
        help="drop the databases of the periods before a time (dry run unless --yes)",
        description="Dry run unless --yes.",
        epilog=EXPIRE_EPILOG,
    )
    add(
        p,
        "purge",
        before="drop and delete what is older",
        yes="drop and delete (default: a dry run)",
    )
    add_form(p, "of the series' ids")
    add(p, timeout="a request (a page, a batch's delete, a database's drop)")
    p.set_defaults(run=_expire)


def _add(sub: Any, name: str, **texts: str) -> argparse.ArgumentParser:
    """A subcommand of ``series``, with the arguments every one takes."""
    parser: argparse.ArgumentParser = sub.add_parser(name, **texts)
    parser.add_argument("prefix", metavar="PREFIX", help="what the databases' names start with")
    parser.add_argument(
        "--period",
        required=True,
        choices=EVERY,
        metavar="PERIOD",
        help=f"a database per {PERIOD_HELP}",
    )
    return parser


def _list(args: argparse.Namespace) -> int:
    layout = SeriesLayout(args.prefix, args.period, KUUID)
    for name in existing(make_series(args, layout)):
        if args.json:
            period = period_of(layout, name)
            row = {"db": name, "start": iso(period.start_ms), "end": iso(period.end_ms)}
            sys.stdout.write(json.dumps(row) + "\n")
        else:
            sys.stdout.write(name + "\n")
    return EXIT_OK


def _prepare(args: argparse.Namespace) -> int:
    series = make_series(args, SeriesLayout(args.prefix, args.period, KUUID, args.partitioned))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DatabaseLimitWarning)
        names = series.prepare(args.ahead)
    for name in names:
        print(name)
    for each in caught:
        if issubclass(each.category, DatabaseLimitWarning):
            say(f"warning: {' '.join(in_flags(str(each.message), vars(args)).split())}")
        else:
            warnings.warn_explicit(each.message, each.category, each.filename, each.lineno)
    return EXIT_OK


def _expire(args: argparse.Namespace) -> int:
    before = moment(args.before, now_ms())
    layout = SeriesLayout(args.prefix, args.period, form(args))
    series = make_series(args, layout)
    existing(series)
    try:
        report = series.expire(before, dry_run=not args.yes, purge=args.purge)
    except KeyboardInterrupt:
        say("stopped; what was done stays done, and the same command finishes it")
        raise
    out, dry = sys.stdout, report.dry_run
    for name in report.dropped:
        out.write(f"{'would drop' if dry else 'dropped'} {name}\n")
    for db, each in report.expired.items():
        count = each.matched if dry else each.deleted
        out.write(
            f"{'would delete' if dry else 'deleted'} {count} documents of {db} made before "
            f"{iso(before)}\n"
        )
    dropped = f"{len(report.dropped)} database{'' if len(report.dropped) == 1 else 's'}"
    if dry:
        out.write(
            f"would drop {dropped} and delete {report.deleted} documents (dry run; --yes "
            "drops and deletes them)\n"
        )
    else:
        gone = sum(each.gone for each in report.expired.values())
        purged = sum(each.purged for each in report.expired.values())
        out.write(
            f"dropped {dropped}, deleted {report.deleted}, already gone {gone}, purged {purged}\n"
        )
    kept = say_kept(report)
    for doc_id in report.unread:
        say(f"no time the series can read, kept: {doc_id}")
    return 1 if kept or report.unread else EXIT_OK
