"""Reading the times couchids accepts, and writing the times it returns.

Every time is held as an ``int`` of Unix epoch milliseconds between the functions here.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, date, datetime, timedelta
from typing import TypeAlias

from couchids.errors import InvalidTimeError

#: What every ``timestamp``/``start``/``end`` argument takes.
TimeLike: TypeAlias = "datetime | date | str | int | None"

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The last millisecond a ``datetime`` can hold: no id may encode a later time.
MAX_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - EPOCH) // timedelta(
    milliseconds=1
)

ACCEPTED = (
    "a datetime (naive means UTC), a date (midnight UTC), an ISO-8601 string "
    "(no offset means UTC; a bare date is midnight UTC), an int of epoch milliseconds, "
    "or None for now"
)


#: RFC 3339's lower-case ``t`` and ``z`` (its section 5.6), which ``datetime.fromisoformat``
#: refuses (``z``): read as ``T`` and ``Z``.
_UPPER_TZ = str.maketrans("tz", "TZ")
#: A time of second 60, a leap second: what comes before the 60, its fraction, and its offset.
_LEAP = re.compile(r"(\d{4}-?\d\d-?\d\d.\d\d:?\d\d:?)60([.,]\d+)?([Z+-].*)?")


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def to_ms(value: TimeLike) -> int:
    """Turn any accepted time into epoch milliseconds (sub-millisecond parts are dropped).

    An ISO-8601 string may use RFC 3339's lower-case ``t`` and ``z``; a leap second,
    ``23:59:60`` UTC, is the last millisecond of its minute (``23:59:59.999``), as a second 60
    at any other time is refused.

    Raises:
        InvalidTimeError: the value is of another kind, unreadable, before 1970, after
            9999-12-31T23:59:59.999Z, or a datetime whose ``tzinfo`` fails (raises, or gives an
            offset of 24 hours or more).

    >>> to_ms("2018-01-01")
    1514764800000
    >>> to_ms(datetime(2018, 1, 1, 0, 0, 1))
    1514764801000
    """
    if value is None:
        return now_ms()
    if isinstance(value, bool):
        raise InvalidTimeError(f"{value!r} is not a time; accepted: {ACCEPTED}")
    if isinstance(value, int):
        ms = value
    elif isinstance(value, float):
        raise InvalidTimeError(
            f"{value!r} is a float, which could mean seconds or milliseconds; "
            f"pass an int of epoch milliseconds or a datetime (accepted: {ACCEPTED})"
        )
    elif isinstance(value, datetime):
        ms = _datetime_ms(value)
    elif isinstance(value, date):
        ms = _datetime_ms(datetime(value.year, value.month, value.day))
    elif isinstance(value, str):
        when = parse_iso(value)
        if when is None:
            raise InvalidTimeError(
                f"{value!r} is not an ISO-8601 date or time, such as 2024-05-01 or "
                "2024-05-01T12:30:00Z"
            )
        ms = _datetime_ms(when)
    else:
        raise InvalidTimeError(
            f"{type(value).__name__} {value!r} is not a time; accepted: {ACCEPTED}"
        )
    if ms < 0:
        raise InvalidTimeError(f"{value!r} is before 1970-01-01T00:00:00Z; ids start at 1970")
    if ms > MAX_MS:
        raise InvalidTimeError(f"{value!r} is after 9999-12-31T23:59:59.999Z; ids end there")
    return ms


def to_datetime(ms: int) -> datetime:
    """Epoch milliseconds as an aware UTC ``datetime``."""
    return EPOCH + timedelta(milliseconds=ms)


def _datetime_ms(value: datetime) -> int:
    # A tzinfo's utcoffset() may raise anything (ValueError for 24 hours or more).
    try:
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            value = value.replace(tzinfo=UTC)
        return (value - EPOCH) // timedelta(milliseconds=1)
    except Exception as exc:
        raise InvalidTimeError(
            f"{_shown(value)} is not a time couchids can read: its tzinfo failed "
            f"({type(exc).__name__}: {exc}); pass a datetime whose tzinfo gives a utcoffset() "
            "of less than 24 hours, or None (naive means UTC)"
        ) from exc


def _shown(value: datetime) -> str:
    """``value`` for a message, even when its tzinfo's ``repr`` fails too."""
    naive = value.replace(tzinfo=None).isoformat()
    try:
        return f"{naive} with tzinfo {value.tzinfo!r:.80}"
    except Exception:
        return f"{naive} with a tzinfo of type {type(value.tzinfo).__name__}"


def parse_iso(text: str) -> datetime | None:
    """``text``, an ISO-8601 date or time (RFC 3339's lower-case ``t`` and ``z`` too), as a
    ``datetime`` (naive: no offset given), or ``None`` when it is none. A leap second,
    ``23:59:60`` UTC, which a ``datetime`` cannot hold, is the last millisecond of its minute
    (``23:59:59.999``), as it is to libraries built on ``datetime``.

    Raises:
        InvalidTimeError: a second 60 at another time than 23:59 UTC.

    >>> parse_iso("2016-12-31t23:59:60z")
    datetime.datetime(2016, 12, 31, 23, 59, 59, 999000, tzinfo=datetime.timezone.utc)
    """
    plain = text.strip().translate(_UPPER_TZ)
    try:
        return datetime.fromisoformat(plain)
    except ValueError:
        pass
    leap = _LEAP.fullmatch(plain)
    if leap is None:
        return None
    try:
        when = datetime.fromisoformat(f"{leap[1]}59{leap[3] or ''}")
    except ValueError:
        return None
    when = when.replace(microsecond=999_000)
    try:
        utc = when if when.tzinfo is None else when.astimezone(UTC)
    except OverflowError:
        return when  # before year 1 or after 9999 in UTC: out of range, as to_ms says
    if (utc.hour, utc.minute) != (23, 59):
        raise InvalidTimeError(
            f"{text!r} has a second 60, a leap second, which comes only at 23:59:60 UTC "
            "(couchids reads it as 23:59:59.999); give seconds from 00 to 59"
        )
    return when
