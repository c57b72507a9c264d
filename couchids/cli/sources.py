"""What the commands that talk to a server share: the client (ibmcloudant's standard
configuration), what a reading subcommand reads (``DB``, or a series with ``--series PREFIX
--period PERIOD``), and the note on stderr after an answer with nothing in it.

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
from typing import TYPE_CHECKING, Any

from couchids.cli.options import note
from couchids.core.periods import EVERY, Every, SeriesLayout
from couchids.errors import DatabaseNotFoundError, InvalidArgumentError, ServerError
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import IdForm
from couchids.idforms.times import to_datetime

# What talks to a server is loaded when a command runs (see couchids.cli.main).
if TYPE_CHECKING:
    from ibmcloudant.cloudant_v1 import CloudantV1

    from couchids.database import Database
    from couchids.series import Series

__all__ = [
    "PERIOD_HELP",
    "SERIES_READS",
    "connect",
    "existing",
    "iso",
    "make_series",
    "note_db_empty",
    "note_empty",
    "open_source",
    "period_of",
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


def connect() -> CloudantV1:
    """A client from ibmcloudant's standard configuration, or one line saying what to set
    (naming the variables: the command has no flags for the arguments of couchids.connect)."""
    from couchids.drivers.connecting import cloudant_client

    return cloudant_client(arguments=False)


def note_db_empty(
    client: CloudantV1, db: str, scope: str | AllTypes | None, form: IdForm, timeout: float
) -> None:
    """After an answer with nothing in it, a note on stderr saying why, when the database
    shows a reason (:meth:`couchids.Database.explain_empty`); the exit status stays 0."""
    if scope is ALL_TYPES:
        return
    from couchids.database import Database

    try:
        why = (
            Database(client, db)
            .with_options(timeout=timeout)
            .explain_empty(type=scope, form=form, style="command")
        )
    except ServerError:
        # The answer, nothing, stands: failing to find out why is not the command failing.
        return
    if why is not None:
        note(why)


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


def open_source(args: argparse.Namespace, form: IdForm) -> tuple[CloudantV1, Database | Series]:
    """The client and the handle of what the command reads: DB, or the series of
    ``--series``/``--period``; the arguments are checked before the server is asked anything.

    Raises:
        InvalidArgumentError: neither or both of DB and ``--series``, ``--period`` without
            ``--series`` or the other way round, a prefix that cannot start a database name,
            or a form whose ids hold no time in ``_all_docs`` order (for a series).
        DatabaseNotFoundError: the series has no database (:func:`existing`).
    """
    layout = _layout(args, form)
    client = connect()
    if layout is None:
        from couchids.database import Database

        return client, Database(client, args.db, form=form)
    series = make_series(client, layout)
    existing(series, args.timeout)
    return client, series


def existing(series: Series, timeout: float) -> list[str]:
    """The names of the series' databases (one ``GET /_all_dbs``), oldest first.

    Raises:
        DatabaseNotFoundError: none exists: a series is its databases, and a command given
            a series that has none fails as one given a missing database does.
    """
    names = series.with_options(timeout=timeout).databases()
    if not names:
        layout = series.layout
        raise DatabaseNotFoundError(
            f"the series {layout.prefix!r} {_kind(layout)} has no databases on this server "
            f"(couchids series prepare {layout.prefix} --period {layout.every} creates them)",
            404,
        )
    return names


def make_series(
    client: CloudantV1, layout: SeriesLayout, max_databases: int | None = None
) -> Series:
    from couchids.series import Series

    return Series(
        client,
        layout.prefix,
        every=layout.every,
        form=layout.form,
        partitioned=layout.partitioned,
        max_databases=max_databases,
    )


def note_empty(
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
            note_db_empty(client, source.name, scope, form, timeout)
        return
    layout = source.layout
    try:
        names = source.with_options(timeout=timeout).databases()
    except ServerError:
        return  # the answer, nothing, stands
    kind = _kind(layout)
    if not names:
        note(f"the series {layout.prefix!r} {kind} has no databases")
        return
    if window is not None:
        start, end = window
        listed, names = names, [n for n in names if period_of(layout, n).overlaps(start, end)]
        if not names:
            held = listed[0] if len(listed) == 1 else f"{listed[0]} to {listed[-1]}"
            note(
                f"no database of the series {layout.prefix!r} {kind} holds a time from "
                f"{iso(start)} to {iso(end)}: it has {held}"
            )
            return
    if scope is not ALL_TYPES:
        note_db_empty(client, names[-1], scope, form, timeout)


def period_of(layout: SeriesLayout, name: str) -> Any:
    period = layout.period(name)
    assert period is not None  # Series.databases lists only the series' own names
    return period


def _kind(layout: SeriesLayout) -> str:
    """``of months (named like events-2026-11)``: what a note calls the series' periods."""
    named = _NAMED[layout.every].replace("PREFIX", layout.prefix)
    return f"of {_PLURAL[layout.every]} (named like {named})"


def iso(ms: int) -> str:
    return to_datetime(ms).isoformat().replace("+00:00", "Z")
