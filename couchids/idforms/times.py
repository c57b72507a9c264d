"""Reading the times couchids accepts, and writing the times it returns.

Every time is held as an ``int`` of Unix epoch milliseconds between the functions here.
"""

from __future__ import annotations

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


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def to_ms(value: TimeLike) -> int:
    """Turn any accepted time into epoch milliseconds (sub-millisecond parts are dropped).

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
        ms = _datetime_ms(_parse_iso(value))
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


def _parse_iso(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidTimeError(
            f"{text!r} is not an ISO-8601 date or time, such as 2024-05-01 or 2024-05-01T12:30:00Z"
        ) from None
