"""What the commands that talk to a server share: the client, what a reading subcommand reads
(``DB``, or a series: ``--series PREFIX --period PERIOD``, both required, see
docs/guide/command-line.md), and the notes and lines on stderr after an answer.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from couchids.cli.options import form as id_form
from couchids.cli.options import iso, note, say
from couchids.cli.options import scope as type_scope
from couchids.core.periods import EVERY, Every, Period, SeriesLayout
from couchids.errors import DatabaseNotFoundError, InvalidArgumentError, ServerError
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import IdForm

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
#: A database of each kind of period, for the notes.
_NAMED = {
    "day": "PREFIX-2026-11-25",
    "week": "PREFIX-2026-w48",
    "month": "PREFIX-2026-11",
    "year": "PREFIX-2026",
}
_PLURAL = {"day": "days", "week": "ISO weeks", "month": "months", "year": "years"}


def connect() -> CloudantV1:
    """A client from ibmcloudant's standard configuration, or an error naming the variables
    to set (the command has no flags for the arguments of couchids.connect)."""
    from couchids.drivers.connecting import cloudant_client

    return cloudant_client(arguments=False)


def source_args(parser: argparse.ArgumentParser) -> None:
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


@dataclass
class Source:
    """What a reading subcommand reads (a database or a series), and how."""

    client: CloudantV1
    handle: Database | Series
    scope: str | AllTypes | None
    form: IdForm
    timeout: float

    def note_empty(self, window: tuple[int, int] | None = None) -> None:
        """After an answer with nothing in it, a note on stderr of why, when the database or
        the series shows it; ``window`` is the ``(start, end)`` read (``None``: ``latest``)."""
        from couchids.series import Series

        if not isinstance(self.handle, Series):
            self._explain(self.handle.name)
            return
        layout = self.handle.layout
        try:
            names = self.handle.with_options(timeout=self.timeout).databases()
        except ServerError:
            return  # the answer, nothing, stands
        if not names:
            note(f"the series {layout.prefix!r} {_kind(layout)} has no databases")
            return
        if window is not None:
            start, end = window
            held = [n for n in names if period_of(layout, n).overlaps(start, end)]
            if not held:
                listed = names[0] if len(names) == 1 else f"{names[0]} to {names[-1]}"
                note(
                    f"no database of the series {layout.prefix!r} {_kind(layout)} holds a time "
                    f"from {iso(start)} to {iso(end)}: it has {listed}"
                )
                return
            names = held
        # The newest database read is the likeliest to show the ids being written now.
        self._explain(names[-1])

    def _explain(self, db: str) -> None:
        """A note of why ``db`` answered nothing, if it shows it (its ``explain_empty``)."""
        if self.scope is ALL_TYPES:
            return
        from couchids.database import Database

        try:
            why = (
                Database(self.client, db)
                .with_options(timeout=self.timeout)
                .explain_empty(type=self.scope, form=self.form, style="command")
            )
        except ServerError:
            return  # the answer, nothing, stands: failing to find out why is no failure
        if why is not None:
            note(why)


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
    client = connect()
    if layout is None:
        from couchids.database import Database

        return Source(client, Database(client, args.db, form=form), scope, form, args.timeout)
    series = make_series(client, layout)
    existing(series, args.timeout)
    return Source(client, series, scope, form, args.timeout)


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
        raise InvalidArgumentError(f"--series needs --period: {PERIOD_HELP.split(',')[0]}{see}")
    return SeriesLayout(prefix, period, form)


def existing(series: Series, timeout: float) -> list[str]:
    """The names of the series' databases, oldest first; an error when there is none, as for
    a missing database."""
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


def period_of(layout: SeriesLayout, name: str) -> Period:
    period = layout.period(name)
    assert period is not None  # Series.databases lists only the series' own names
    return period


def _kind(layout: SeriesLayout) -> str:
    """``of months (named like events-2026-11)``: what a note calls the series' periods."""
    named = _NAMED[layout.every].replace("PREFIX", layout.prefix)
    return f"of {_PLURAL[layout.every]} (named like {named})"


def say_kept(report: Any) -> bool:
    """Name on stderr each document an expiry kept (changed meanwhile) or the server refused;
    whether there was any."""
    for doc_id in report.conflicts:
        say(f"changed meanwhile, kept: {doc_id}")
    for doc_id, reason in report.failed:
        say(f"refused: {doc_id}: {reason}")
    return bool(report.conflicts or report.failed)
