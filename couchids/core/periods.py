"""The periods of a series of databases, the database name of each, and what routes a
document to its period (:class:`SeriesLayout`): pure time arithmetic, light enough for the
command line to load before anything else.

A series (:class:`couchids.Series`) keeps its documents in one database per period of UTC
time, the "timeboxed database" pattern Cloudant recommends for data that grows without end.
A period is a day, an ISO week, a month or a year. Each period's database is named
``<prefix>-<suffix>``, and the names of one series sort in the order of their periods
(``_all_dbs`` lists them oldest first):

=========  =======================  ==========================================================
every      name                     the period
=========  =======================  ==========================================================
``year``   ``events-2026``          2026-01-01T00:00Z up to 2027-01-01T00:00Z
``month``  ``events-2026-11``       2026-11-01T00:00Z up to 2026-12-01T00:00Z
``week``   ``events-2026-w48``      ISO week 48 of ISO year 2026: Monday 2026-11-23T00:00Z up
                                    to the next Monday (the ISO year, not the calendar year:
                                    2027-01-01, a Friday, is in ``events-2026-w53``)
``day``    ``events-2026-11-25``    2026-11-25T00:00Z up to 2026-11-26T00:00Z
=========  =======================  ==========================================================

Periods hold times from 1970 to the end of 9999: the first ISO week, 1970-W01, starts on
Monday 1969-12-29 and is clamped to start at 1970-01-01T00:00Z; the last ones end at
:data:`END_OF_TIME`. Times are ``int`` epoch milliseconds, as everywhere in couchids.

>>> from couchids.idforms.times import to_ms
>>> p = period_of("month", to_ms("2026-11-25T10:00:00Z"))
>>> database_name("events", p), p.start.isoformat(), p.end.isoformat()
('events-2026-11', '2026-11-01T00:00:00+00:00', '2026-12-01T00:00:00+00:00')
>>> parse_name("events", "month", "events-2026-11") == p
True
>>> parse_name("events", "day", "events-2026-11") is None  # a month's name is no day's
True
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Final, Literal

from couchids.core import arguments
from couchids.core.keys import check_time_form
from couchids.core.names import DB_NAME, DB_NAME_MAX
from couchids.errors import InvalidArgumentError, InvalidInputError, InvalidTimeError
from couchids.idforms.forms import IdForm
from couchids.idforms.times import EPOCH, MAX_MS, to_datetime

__all__ = [
    "END_OF_TIME",
    "EVERY",
    "MAX_AHEAD",
    "SUFFIX_LEN",
    "Every",
    "Period",
    "SeriesLayout",
    "check_every",
    "check_prefix",
    "database_name",
    "form_end_ms",
    "parse_name",
    "period_of",
    "periods_between",
]

Every = Literal["day", "week", "month", "year"]
#: The periods a series may have, shortest first.
EVERY: Final[tuple[Every, ...]] = ("day", "week", "month", "year")
#: The length of the suffix ``-<period>`` each period adds to the series' prefix.
SUFFIX_LEN: Final[dict[Every, int]] = {"day": 11, "week": 9, "month": 8, "year": 5}
#: The most periods :meth:`couchids.Series.prepare` creates ahead of the current one.
MAX_AHEAD: Final = 366
#: The millisecond after the last one a time in couchids can hold (the end of 9999): where the
#: last period of every kind ends.
END_OF_TIME: Final = MAX_MS + 1
_EPOCH_DAY: Final = EPOCH.toordinal()

#: Each kind of period's suffix: written with ``strftime``, and the shape of its numbers (year,
#: then month and day, or ISO week) when read; a name is taken only when it is written back to
#: itself.
_SUFFIX: Final[dict[Every, tuple[str, re.Pattern[str]]]] = {
    "day": ("%Y-%m-%d", re.compile(r"(\d{4})-(\d\d)-(\d\d)")),
    "week": ("%G-w%V", re.compile(r"(\d{4})-w(\d\d)")),
    "month": ("%Y-%m", re.compile(r"(\d{4})-(\d\d)")),
    "year": ("%Y", re.compile(r"(\d{4})")),
}


@dataclass(frozen=True, order=True)
class Period:
    """One period of a series: the times ``start_ms <= t < end_ms``; periods of one kind
    sort by time.

    Attributes:
        start_ms: where it starts, epoch milliseconds (inclusive).
        end_ms: where the next one starts (exclusive).
        every: its kind: ``"day"``, ``"week"``, ``"month"`` or ``"year"``.
        suffix: what its database's name ends with after the prefix and ``-``, such as
            ``2026-11``.

    >>> from couchids.idforms.times import to_ms
    >>> period_of("week", to_ms("2027-01-01T00:00Z")).suffix
    '2026-w53'
    """

    start_ms: int
    end_ms: int
    every: Every
    suffix: str

    @property
    def start(self) -> datetime:
        """Where the period starts, an aware UTC ``datetime``."""
        return to_datetime(self.start_ms)

    @property
    def end(self) -> datetime:
        """Where the period ends (exclusive), an aware UTC ``datetime``; for the last period
        of 9999, which ends after every ``datetime``, its last millisecond (inclusive)."""
        return to_datetime(min(self.end_ms, MAX_MS))

    def overlaps(self, start_ms: int, end_ms: int) -> bool:
        """Whether some time ``start_ms <= t < end_ms`` lies in the period."""
        return start_ms < self.end_ms and self.start_ms < end_ms

    def following(self) -> Period:
        """The next period of the same kind.

        Raises:
            InvalidTimeError: this is the last period a time in couchids reaches (9999).
        """
        if self.end_ms >= END_OF_TIME:
            raise InvalidTimeError(
                f"the {self.every} {self.suffix} is the last one: couchids' times end at "
                "9999-12-31T23:59:59.999Z"
            )
        return period_of(self.every, self.end_ms)


def check_every(every: object) -> Every:
    """``every`` if it is a kind of period; else :class:`~couchids.InvalidArgumentError`.

    >>> check_every("month")
    'month'
    """
    if not isinstance(every, str) or every not in EVERY:
        raise InvalidArgumentError(
            f"every={every!r}: a series has a database per 'day', 'week' (ISO weeks, from "
            "Monday), 'month' or 'year' of UTC time"
        )
    return every


def check_prefix(prefix: object, every: Every) -> str:
    """``prefix`` if ``<prefix>-<suffix>`` is a database name CouchDB accepts for every
    period of ``every`` (it leaves room for the longest suffix, :data:`SUFFIX_LEN`); else
    :class:`~couchids.InvalidArgumentError`.

    >>> check_prefix("Events", "day")
    Traceback (most recent call last):
      ...
    couchids.errors.InvalidArgumentError: prefix='Events' cannot start a database name: ...
    """
    room = DB_NAME_MAX - SUFFIX_LEN[every]
    if not isinstance(prefix, str):
        raise InvalidArgumentError(
            f"prefix={prefix!r}: the prefix of a series' database names is a str, not a "
            f"{type(prefix).__name__}"
        )
    if not DB_NAME.fullmatch(prefix) or len(prefix.encode()) > room:
        raise InvalidArgumentError(
            f"prefix={prefix!r:.80} cannot start a database name: 1-{room} characters (a "
            f"{every}'s name adds {SUFFIX_LEN[every]}, and CouchDB takes at most "
            f"{DB_NAME_MAX}), a lower-case letter first, then lower-case letters, digits and "
            "_ $ ( ) + - /"
        )
    return prefix


def database_name(prefix: str, period: Period) -> str:
    """The name of the database of ``period`` in the series ``prefix``.

    >>> from couchids.idforms.times import to_ms
    >>> database_name("events", period_of("day", to_ms("2024-02-29T23:59:59Z")))
    'events-2024-02-29'
    """
    return f"{prefix}-{period.suffix}"


def parse_name(prefix: str, every: Every, name: str) -> Period | None:
    """The period whose database in the series ``prefix`` of ``every`` is named ``name``, or
    ``None`` when ``name`` is not exactly what :func:`database_name` writes for one (another
    series, another kind of period, or a date that does not exist, such as
    ``events-2026-02-30``): one series never takes another's databases for its own.

    >>> parse_name("events", "week", "events-2026-w48").start.isoformat()
    '2026-11-23T00:00:00+00:00'
    >>> [parse_name("events", "month", n) for n in ("events-2026-13", "events-x-2026-11")]
    [None, None]
    """
    shape = _SUFFIX[every][1].fullmatch(name, len(prefix) + 1)
    if shape is None or not name.startswith(prefix + "-"):
        return None
    numbers = [int(number) for number in shape.groups()]
    if numbers[0] < 1970:  # a time before 1970 is in no period
        return None
    try:
        if every == "week":
            first = date.fromisocalendar(numbers[0], numbers[1], 1)  # its Monday
        else:
            first = date(*numbers, *[1] * (3 - len(numbers)))
    except ValueError:
        return None
    period = _starting(every, first)
    return period if database_name(prefix, period) == name else None


def period_of(every: Every, ms: int) -> Period:
    """The period of ``every`` holding the time ``ms``.

    Raises:
        InvalidTimeError: ``ms`` is before 1970 or after 9999.

    >>> from couchids.idforms.times import to_ms
    >>> p = period_of("year", to_ms("2024-02-29T00:00Z"))
    >>> p.suffix, p.end.isoformat()
    ('2024', '2025-01-01T00:00:00+00:00')
    """
    every = check_every(every)
    if isinstance(ms, bool) or not isinstance(ms, int) or not 0 <= ms <= MAX_MS:
        raise InvalidTimeError(
            f"{ms!r} is not a time of a period: epoch milliseconds from 1970 to the end of 9999"
        )
    day = to_datetime(ms).date()
    first = {
        "day": day,
        "week": day - timedelta(days=day.weekday()),
        "month": day.replace(day=1),
        "year": day.replace(month=1, day=1),
    }[every]
    return _starting(every, first)


def _starting(every: Every, first: date) -> Period:
    """The period of ``every`` whose first day is ``first`` (1970-W01 starts at 1970)."""
    try:
        if every == "year":
            after = first.replace(year=first.year + 1)
        elif every == "month":
            after = (first + timedelta(days=31)).replace(day=1)
        else:
            after = first + timedelta(days=7 if every == "week" else 1)
        end_ms = min(_date_ms(after), END_OF_TIME)
    except (OverflowError, ValueError):  # past the end of 9999
        end_ms = END_OF_TIME
    return Period(max(0, _date_ms(first)), end_ms, every, first.strftime(_SUFFIX[every][0]))


def periods_between(every: Every, start_ms: int, end_ms: int) -> list[Period]:
    """The periods of ``every`` that hold some time ``start_ms <= t < end_ms``, oldest first
    (none when ``end_ms <= start_ms``).

    >>> from couchids.idforms.times import to_ms
    >>> start, end = to_ms("2026-11-30T00:00Z"), to_ms("2027-01-01T00:00Z")
    >>> [p.suffix for p in periods_between("month", start, end)]
    ['2026-11', '2026-12']
    """
    found: list[Period] = []
    if end_ms <= start_ms:
        return found
    period = period_of(every, start_ms)
    while True:
        found.append(period)
        if period.end_ms >= min(end_ms, END_OF_TIME):
            return found
        period = period.following()


def form_end_ms(form: IdForm) -> int:
    """The millisecond after the last time an id of ``form`` can hold (at most
    :data:`END_OF_TIME`): a series of ``form`` has no period past it.

    >>> from couchids.idforms.forms import KUUID_MS
    >>> to_datetime(form_end_ms(KUUID_MS)).year
    8888
    """
    return min(END_OF_TIME, (form.max_unit + 1) * form.unit_ms)


def _date_ms(day: date) -> int:
    return (day.toordinal() - _EPOCH_DAY) * 86_400_000


@dataclass(frozen=True)
class SeriesLayout:
    """What names a series' databases: the prefix, the kind of period, and the form of its
    ids (whose times route each document to its period), checked when made.

    Attributes:
        prefix: the databases' names start with it and ``-``.
        every: ``"day"``, ``"week"``, ``"month"`` or ``"year"``.
        form: the id form of the series' documents.
        partitioned: whether its databases are created partitioned.

    Raises:
        InvalidArgumentError: a bad ``every``, a prefix that cannot start a database name,
            a form whose ids hold no time in ``_all_docs`` order, or ``partitioned`` not a bool.

    >>> from couchids.idforms.forms import KUUID
    >>> from couchids.idforms.times import to_ms
    >>> layout = SeriesLayout("events", "month", KUUID)
    >>> layout.name(layout.period_at(to_ms("2026-11-25T00:00Z")))
    'events-2026-11'
    """

    prefix: str
    every: Every
    form: IdForm
    partitioned: bool = False

    def __post_init__(self) -> None:
        check_every(self.every)
        check_prefix(self.prefix, self.every)
        check_time_form(self.form)
        arguments.flag("partitioned", self.partitioned)

    def name(self, period: Period) -> str:
        """The name of ``period``'s database."""
        return database_name(self.prefix, period)

    def period(self, name: str) -> Period | None:
        """The period whose database ``name`` is, or ``None`` when it is no database of this
        series (:func:`parse_name`)."""
        return parse_name(self.prefix, self.every, name)

    def period_at(self, ms: int) -> Period:
        """The period holding the time ``ms``.

        Raises:
            InvalidTimeError: ``ms`` is past the last time an id of the series' form holds.
        """
        if ms >= form_end_ms(self.form):
            raise InvalidTimeError(
                f"{to_datetime(ms).isoformat()} is past the last time a {self.form} id holds "
                f"({to_datetime(form_end_ms(self.form) - 1).isoformat()}): the series "
                f"{self.prefix!r} has no period for it"
            )
        return period_of(self.every, ms)

    def time_of_id(self, doc_id: str) -> int:
        """The time (ms) an id of the series' form holds, with or without a type: where a
        document with its own ``_id`` belongs.

        Raises:
            InvalidArgumentError: ``doc_id`` is no id of the series' form.
        """
        form = self.form
        if isinstance(doc_id, str):
            head, body = doc_id[: -form.length], doc_id[-form.length :]
            if not head or head.endswith(form.separator):
                with contextlib.suppress(InvalidInputError):
                    return form.parse(body)
        raise InvalidArgumentError(
            f"_id {doc_id!r:.80} is not a {form} id: a series routes a document with its own "
            f"_id by the time in it, so the _id must be an id of the series' form ({form}), "
            "with or without a type; or drop the _id to get a new one"
        )
