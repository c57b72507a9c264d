"""Reading the times and durations couchids accepts, and writing the times it returns.

Every time is held as an ``int`` of Unix epoch milliseconds between the functions here. The
rules, once (the guide's vocabulary page says them to users):

- an ``int`` is epoch milliseconds; one that would be a time before 1980 in milliseconds but
  a time from 1980 on in seconds is refused as ambiguous (``AMBIGUOUS_INTS``);
- a naive ``datetime``, a ``date`` and an ISO-8601 string without an offset are local time,
  as ``datetime.timestamp()`` reads a naive datetime; an aware one, or a string
  ending in ``Z`` or an offset, is that instant;
- ``"now"``, and a time ago: a ``timedelta`` or a whole number and a unit (``"24h"``);
- a duration is a ``timedelta`` or the same ``"<n><unit>"`` (``duration_ms``).
"""

from __future__ import annotations

import re
import time
from datetime import UTC, date, datetime, timedelta
from typing import TypeAlias

from couchids.errors import InvalidArgumentError, InvalidTimeError

#: What every ``timestamp``/``start``/``end`` argument takes.
TimeLike: TypeAlias = "datetime | date | timedelta | str | int | None"
#: What every duration argument takes (``every``).
DurationLike: TypeAlias = "timedelta | str"
#: What every argument of seconds takes (``timeout``, ``poll``, ``backoff``): a number of
#: seconds, or a duration as :data:`DurationLike`.
SecondsLike: TypeAlias = float | timedelta | str

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The last millisecond a ``datetime`` can hold: no id may encode a later time.
MAX_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - EPOCH) // timedelta(
    milliseconds=1
)
#: The ints refused as times: before 1980 read as epoch milliseconds, from 1980 read as epoch
#: seconds (1980-01-01T00:00:00Z is 315532800 seconds), so most likely seconds given by mistake.
AMBIGUOUS_INTS = range(315_532_800, 315_532_800_000)

#: The units of a duration or a time ago, in milliseconds.
UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_SPAN = re.compile(r"(\d+)\s*(ms|s|m|h|d|w)")
#: How a duration is written, for messages.
DURATIONS = (
    "a timedelta, or a whole number and a unit: ms, s, m (minutes), h, d or w, such as "
    "'30s', '15m', '24h', '7d'"
)

ACCEPTED = (
    "a datetime (naive: local time, as datetime.timestamp() reads it), a date (local "
    "midnight), an ISO-8601 string (2024-05-01T12:30:00Z; no offset: local time), an int of "
    "epoch milliseconds, 'now' or None for now, or a time ago: a timedelta or a string such "
    "as '90m', '24h', '7d'"
)


#: RFC 3339's lower-case ``t`` and ``z`` (its section 5.6), which ``datetime.fromisoformat``
#: refuses (``z``): read as ``T`` and ``Z``.
_UPPER_TZ = str.maketrans("tz", "TZ")
#: A time of second 60, a leap second: what comes before the 60, its fraction, and its offset.
_LEAP = re.compile(r"(\d{4}-?\d\d-?\d\d.\d\d:?\d\d:?)60([.,]\d+)?([Z+-].*)?")


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def to_ms(value: TimeLike, *, now: int | None = None) -> int:
    """Turn any accepted time into epoch milliseconds (sub-millisecond parts are dropped); a
    time ago (``"24h"``, a ``timedelta``) and ``None`` or ``"now"`` count from ``now``
    (default: the clock).

    An ISO-8601 string may use RFC 3339's lower-case ``t`` and ``z``; a leap second,
    ``23:59:60`` UTC, is the last millisecond of its minute (``23:59:59.999``), as a second 60
    at any other time is refused.

    Raises:
        InvalidTimeError: the value is of another kind, unreadable, an int of
            ``AMBIGUOUS_INTS``, a negative timedelta, before 1970, after
            9999-12-31T23:59:59.999Z, or a datetime whose ``tzinfo`` fails (raises, or gives an
            offset of 24 hours or more).

    >>> to_ms("2018-01-01T00:00:00Z")
    1514764800000
    >>> to_ms(datetime(2018, 1, 1, 0, 0, 1, tzinfo=UTC))
    1514764801000
    >>> to_ms("24h", now=1514764800000), to_ms(timedelta(minutes=1), now=1514764800000)
    (1514678400000, 1514764740000)
    """
    if value is None:
        return now_ms() if now is None else now
    if isinstance(value, bool):
        raise InvalidTimeError(f"{value!r} is not a time; accepted: {ACCEPTED}")
    if isinstance(value, int):
        ms = _int_ms(value)
    elif isinstance(value, float):
        raise InvalidTimeError(
            f"{value!r} is a float, which could mean seconds or milliseconds; "
            f"pass an int of epoch milliseconds or a datetime (accepted: {ACCEPTED})"
        )
    elif isinstance(value, timedelta):
        if value < timedelta(0):
            raise InvalidTimeError(
                f"{value!r} is negative: a timedelta is a time ago, such as "
                "timedelta(hours=24); pass a datetime for a time to come"
            )
        ms = _ago(value // timedelta(milliseconds=1), value, now)
    elif isinstance(value, datetime):
        ms = _datetime_ms(value)
    elif isinstance(value, date):
        ms = _datetime_ms(datetime(value.year, value.month, value.day))
    elif isinstance(value, str):
        ms = _text_ms(value, now)
    else:
        raise InvalidTimeError(
            f"{type(value).__name__} {value!r} is not a time; accepted: {ACCEPTED}"
        )
    if ms < 0:
        raise InvalidTimeError(f"{value!r} is before 1970-01-01T00:00:00Z; ids start at 1970")
    if ms > MAX_MS:
        raise InvalidTimeError(f"{value!r} is after 9999-12-31T23:59:59.999Z; ids end there")
    return ms


def duration_ms(value: object, name: str) -> int:
    """``value``, the duration argument ``name``, in milliseconds: a ``timedelta``
    (sub-millisecond parts dropped) or a whole number and a unit, ``ms``, ``s``, ``m``
    (minutes), ``h``, ``d`` or ``w``.

    Raises:
        InvalidArgumentError: anything else, or a negative timedelta, naming ``name``.

    >>> duration_ms("15m", "every"), duration_ms(timedelta(days=1), "every")
    (900000, 86400000)
    """
    if isinstance(value, timedelta) and value >= timedelta(0):
        return value // timedelta(milliseconds=1)
    ms = span_ms(value) if isinstance(value, str) else None
    if ms is None:
        raise InvalidArgumentError(f"{name}={value!r:.80}: give {DURATIONS}")
    return ms


def span_ms(text: str) -> int | None:
    """``text`` in milliseconds if it is a whole number and a unit (``"24h"``), else ``None``.

    >>> span_ms("90s"), span_ms("2024-05-01")
    (90000, None)
    """
    span = _SPAN.fullmatch(text.strip().lower())
    if span is None:
        return None
    try:
        return int(span[1]) * UNIT_MS[span[2]]
    except ValueError:  # more digits than int() reads: longer than any time an id holds
        return MAX_MS + 1


def to_datetime(ms: int) -> datetime:
    """Epoch milliseconds as an aware UTC ``datetime``."""
    return EPOCH + timedelta(milliseconds=ms)


def iso_ms(ms: int) -> str:
    """Epoch milliseconds in ISO 8601, ending in ``Z``, to the millisecond where it has one,
    or the edge of what a ``datetime`` holds that it is outside of.

    >>> iso_ms(1714566600250), iso_ms(1714566600000), iso_ms(-1)
    ('2024-05-01T12:30:00.250Z', '2024-05-01T12:30:00Z', 'before 1970-01-01T00:00:00Z')
    """
    if ms < 0:
        return "before 1970-01-01T00:00:00Z"
    if ms > MAX_MS:
        return "after 9999-12-31T23:59:59.999Z"
    when = to_datetime(ms)
    spec = "milliseconds" if when.microsecond else "seconds"
    return when.isoformat(timespec=spec).replace("+00:00", "Z")


def _int_ms(value: int) -> int:
    if value not in AMBIGUOUS_INTS:
        return value
    raise InvalidTimeError(
        f"{value} is ambiguous: an int is epoch milliseconds, {iso_ms(value)}, but as epoch "
        f"seconds it is {iso_ms(value * 1000)}; for seconds pass {value} * 1000 (or "
        f"datetime.fromtimestamp({value}, UTC)), for a time before 1980 pass a datetime "
        f"(ints from {AMBIGUOUS_INTS.start} to {AMBIGUOUS_INTS.stop - 1} are refused)"
    )


def _ago(ms: int, value: object, now: int | None) -> int:
    """``ms`` before ``now``, where ``value`` (what was given) is a time ago."""
    current = now_ms() if now is None else now
    if ms > current:
        raise InvalidTimeError(
            f"{value!r} before now is before 1970-01-01T00:00:00Z; ids start at 1970"
        )
    return current - ms


def _text_ms(text: str, now: int | None) -> int:
    if text.strip().lower() == "now":
        return now_ms() if now is None else now
    ago = span_ms(text)
    if ago is not None:
        return _ago(ago, text, now)
    when = parse_iso(text)
    if when is None:
        raise InvalidTimeError(
            f"{text!r:.80} is not an ISO-8601 date or time, such as 2024-05-01 or "
            "2024-05-01T12:30:00Z (no offset: local time), nor 'now' or a time ago, such as "
            "90m, 24h or 7d (a whole number and a unit: ms, s, m for minutes, h, d or w)"
        )
    return _datetime_ms(when)


def _datetime_ms(value: datetime) -> int:
    # A tzinfo's utcoffset() may raise anything (ValueError for 24 hours or more).
    try:
        offset = None if value.tzinfo is None else value.tzinfo.utcoffset(value)
        if offset is not None:
            return (value - EPOCH) // timedelta(milliseconds=1)
    except Exception as exc:
        raise InvalidTimeError(
            f"{_shown(value)} is not a time couchids can read: its tzinfo failed "
            f"({type(exc).__name__}: {exc}); pass a datetime whose tzinfo gives a utcoffset() "
            "of less than 24 hours, or None (naive: local time)"
        ) from exc
    try:
        # Naive: local time, as datetime.timestamp() reads it.
        local = value.replace(tzinfo=None).astimezone(UTC)
    except (OverflowError, OSError, ValueError):
        edge = "before 1970-01-01" if value.year < 1970 else "after 9999-12-31"
        raise InvalidTimeError(
            f"{value.replace(tzinfo=None).isoformat()} in local time is {edge}; ids hold times "
            "from 1970 to 9999"
        ) from None
    return (local - EPOCH) // timedelta(milliseconds=1)


def _shown(value: datetime) -> str:
    """``value`` for a message, even when its tzinfo's ``repr`` fails too."""
    naive = value.replace(tzinfo=None).isoformat()
    try:
        return f"{naive} with tzinfo {value.tzinfo!r:.80}"
    except Exception:
        return f"{naive} with a tzinfo of type {type(value.tzinfo).__name__}"


def parse_iso(text: str) -> datetime | None:
    """``text``, an ISO-8601 date or time (RFC 3339's lower-case ``t`` and ``z`` too), as a
    ``datetime`` (naive: no offset given, which :func:`to_ms` reads as local time), or
    ``None`` when it is none. A leap second, ``23:59:60`` UTC, which a ``datetime`` cannot
    hold, is the last millisecond of its minute (``23:59:59.999``), as it is to libraries
    built on ``datetime``.

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
        utc = when.astimezone(UTC)  # naive: local time
    except (OverflowError, OSError, ValueError):
        return when  # before year 1 or after 9999 in UTC: out of range, as to_ms says
    if (utc.hour, utc.minute) != (23, 59):
        raise InvalidTimeError(
            f"{text!r} has a second 60, a leap second, which comes only at 23:59:60 UTC "
            "(couchids reads it as 23:59:59.999); give seconds from 00 to 59"
        )
    return when
