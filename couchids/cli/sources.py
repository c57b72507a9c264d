"""What the commands that talk to a server share: the client, what a reading subcommand reads
(``DB``, or a series: ``--series PREFIX --period PERIOD``, both required, see
docs/guide/command-line.md), and the notes and lines on stderr after an answer.
"""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from couchids.cli.options import form as id_form
from couchids.cli.options import iso, say
from couchids.cli.options import scope as type_scope
from couchids.core.periods import EVERY, Every, Period, SeriesLayout
from couchids.errors import DatabaseNotFoundError, InvalidArgumentError, ServerError
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import IdForm
from couchids.idforms.times import to_datetime, to_ms

# What talks to a server is loaded when a command runs (see couchids.cli.main).
if TYPE_CHECKING:
    from ibmcloudant.cloudant_v1 import CloudantV1

    from couchids.database import Database
    from couchids.series import Series

PERIOD_HELP = "day, week (ISO weeks, from Monday), month or year, of UTC time"
SERIES_READS = (
    "A series (--series PREFIX --period PERIOD instead of DB) answers as one database holding\n"
    "all its periods would, reading each period's database in turn."
)
_PLURAL = {"day": "days", "week": "ISO weeks", "month": "months", "year": "years"}


def connect() -> CloudantV1:
    """A client from ibmcloudant's standard configuration, or an error naming the variables
    to set (the command has no flags for the arguments of couchids.connect)."""
    from couchids.drivers.connecting import cloudant_client

    return cloudant_client(arguments=False)


def source_args(parser: argparse.ArgumentParser, how: str = "read as one") -> None:
    """``DB``, or ``--series PREFIX --period PERIOD``, whose databases are ``how``."""
    parser.add_argument(
        "db", nargs="?", metavar="DB", help="database name (or --series and --period)"
    )
    group = parser.add_argument_group(
        "a series instead of DB",
        f"the databases PREFIX-<period> of a series, {how} (see couchids series --help)",
    )
    group.add_argument("--series", metavar="PREFIX", help="what the databases' names start with")
    group.add_argument(
        "--period", choices=EVERY, metavar="PERIOD", help=f"a database per {PERIOD_HELP}"
    )
    parser.set_defaults(prog=parser.prog)


def options(args: argparse.Namespace) -> dict[str, Any]:
    """The handle's :class:`~couchids.Options` the command has flags for."""
    return {
        name: getattr(args, name) for name in ("timeout", "batch_size", "parallel") if name in args
    }


@dataclass
class Source:
    """What a reading subcommand reads (a database or a series, with the command's options)."""

    handle: Database | Series
    scope: str | AllTypes | None
    form: IdForm

    def note_empty(self, window: tuple[datetime, datetime] | None = None) -> None:
        """After an answer with nothing in it, a note on stderr of why, when the database or
        the series shows it; ``window`` is the ``(start, end)`` read (``None``: ``latest``)."""
        from couchids.series import Series

        # Failing to find out why is no failure: the answer, nothing, stands.
        with contextlib.suppress(ServerError):
            why, db = None, self.handle
            if isinstance(db, Series):
                names, layout = db.databases(), db.layout
                start, end = (to_ms(window[0]), to_ms(window[1])) if window else (0, 0)
                held = [n for n in names if not window or period_of(layout, n).overlaps(start, end)]
                if not names:
                    why = f"the series {layout.prefix!r} {_kind(layout)} has no databases"
                elif not held:
                    listed = names[0] if len(names) == 1 else f"{names[0]} to {names[-1]}"
                    why = (
                        f"no database of the series {layout.prefix!r} {_kind(layout)} holds a "
                        f"time from {iso(start)} to {iso(end)}: it has {listed}"
                    )
                else:  # the newest database read is the likeliest to show the ids written now
                    db = db.database(to_datetime(period_of(layout, held[-1]).start_ms))
            if why is None and self.scope is not ALL_TYPES and not isinstance(db, Series):
                why = db.explain_empty(type=self.scope, form=self.form, style="command")
            if why is not None:
                say(f"note: {why}")


def open_source(args: argparse.Namespace) -> Source:
    """What the command reads, DB or the series of ``--series``/``--period``, its flags checked
    before the server is asked anything.

    Raises:
        InvalidArgumentError: neither or both of DB and ``--series``, one of ``--series`` and
            ``--period`` without the other, or a series the form or prefix cannot make.
        DatabaseNotFoundError: the series has no database (:func:`existing`).
    """
    form, scope = id_form(args), type_scope(args)
    layout = _layout(args, form)
    if layout is None:
        return Source(database(args, args.db), scope, form)
    series = make_series(args, layout)
    existing(series)
    return Source(series, scope, form)


def open_target(args: argparse.Namespace) -> Database | Series:
    """What the command writes: DB, or the series of ``--series``/``--period``, whose writes
    make a missing period's database; its flags checked as :func:`open_source` checks them."""
    layout = _layout(args, id_form(args))
    return database(args, args.db) if layout is None else make_series(args, layout)


def _layout(args: argparse.Namespace, form: IdForm) -> SeriesLayout | None:
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
        raise InvalidArgumentError(f"--series needs --period: {PERIOD_HELP.rsplit(',', 1)[0]}{see}")
    return SeriesLayout(prefix, period, form)


def database(args: argparse.Namespace, name: str) -> Database:
    """The handle of database ``name``, of the form of the flags, with the command's options."""
    from couchids.database import Database

    form = id_form(args)  # a bad form flag is refused before the configuration is read
    return Database(connect(), name, form=form).with_options(**options(args))


def existing(series: Series) -> list[str]:
    """The names of the series' databases, oldest first; an error when there is none, as for
    a missing database."""
    names = series.databases()
    if not names:
        layout = series.layout
        raise DatabaseNotFoundError(
            f"the series {layout.prefix!r} {_kind(layout)} has no databases on this server "
            f"(couchids series prepare {layout.prefix} --period {layout.every} creates them)",
            404,
        )
    return names


def make_series(args: argparse.Namespace, layout: SeriesLayout) -> Series:
    """The series of ``layout`` (and ``--max-databases``), with the command's options."""
    from couchids.series import Series

    return Series(
        connect(),
        layout.prefix,
        every=layout.every,
        form=layout.form,
        partitioned=layout.partitioned,
        max_databases=getattr(args, "max_databases", None),
    ).with_options(**options(args))


def period_of(layout: SeriesLayout, name: str) -> Period:
    period = layout.period(name)
    assert period is not None  # Series.databases lists only the series' own names
    return period


def _kind(layout: SeriesLayout) -> str:
    """``of months (named like events-2026-11)``: what a note calls the series' periods."""
    named = layout.name(layout.period_at(1795564800000))  # 2026-11-25T00:00Z
    return f"of {_PLURAL[layout.every]} (named like {named})"


def say_kept(report: Any) -> bool:
    """Name on stderr each document an expiry kept (changed meanwhile) or the server refused;
    whether there was any."""
    for doc_id in report.conflicts:
        say(f"changed meanwhile, kept: {doc_id}")
    for doc_id, reason in report.failed:
        say(f"refused: {doc_id}: {reason}")
    return bool(report.conflicts or report.failed)
