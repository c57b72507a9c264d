"""Reading times (couchids/idforms/times.py): what is accepted, what each is worth, what is
refused."""

from __future__ import annotations

import calendar
import decimal
import re
import time
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

import couchids
from couchids import InvalidArgumentError, InvalidInputError, InvalidTimeError
from couchids.idforms.times import AMBIGUOUS_INTS, MAX_MS, duration_ms, to_datetime, to_ms


def utc_ms(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, ms: int = 0
) -> int:
    """Epoch ms computed without the code under test (calendar.timegm)."""
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) * 1000 + ms


ACCEPTED = [
    (0, 0),
    (999, 999),
    (1000, 1000),
    (1514764800000, utc_ms(2018, 1, 1)),
    ("1970-01-01T00:00:00.000Z", 0),
    ("1970-01-01T00:00:01Z", 1000),
    ("2018-01-01", utc_ms(2018, 1, 1)),
    (" 2018-01-01 ", utc_ms(2018, 1, 1)),
    ("2018-01-01T00:00:00.000Z", utc_ms(2018, 1, 1)),
    ("2018-07-20T10:10:34.234Z", utc_ms(2018, 7, 20, 10, 10, 34, ms=234)),
    # No offset: local time, which is UTC in the suite (tests/conftest.py).
    ("2018-07-20T10:10:34.234", utc_ms(2018, 7, 20, 10, 10, 34, ms=234)),
    ("2018-07-20T12:10:34.234+02:00", utc_ms(2018, 7, 20, 10, 10, 34, ms=234)),
    ("2018-07-20 10:10:34.234999Z", utc_ms(2018, 7, 20, 10, 10, 34, ms=234)),  # µs dropped
    ("9999-12-31T23:59:59.999Z", MAX_MS),
    (date(2018, 1, 1), utc_ms(2018, 1, 1)),
    (datetime(2018, 7, 20, 10, 10, 34, 234567), utc_ms(2018, 7, 20, 10, 10, 34, ms=234)),
    (datetime(2018, 7, 20, 10, 10, 34, tzinfo=UTC), utc_ms(2018, 7, 20, 10, 10, 34)),
    (
        datetime(2018, 7, 20, 5, 10, 34, tzinfo=timezone(timedelta(hours=-5))),
        utc_ms(2018, 7, 20, 10, 10, 34),
    ),
    (datetime(9999, 12, 31, 23, 59, 59, 999999), MAX_MS),
    # RFC 3339's lower-case t and z (its section 5.6).
    ("2024-05-01t10:00:00z", utc_ms(2024, 5, 1, 10)),
    ("2024-05-01T10:00:00.5z", utc_ms(2024, 5, 1, 10, ms=500)),
    # A leap second is the last millisecond of its minute, in any offset and form.
    ("2016-12-31T23:59:60Z", utc_ms(2016, 12, 31, 23, 59, 59, ms=999)),
    ("2016-12-31t23:59:60.5z", utc_ms(2016, 12, 31, 23, 59, 59, ms=999)),
    ("2017-01-01T05:29:60+05:30", utc_ms(2016, 12, 31, 23, 59, 59, ms=999)),
    ("2016-12-31 23:59:60", utc_ms(2016, 12, 31, 23, 59, 59, ms=999)),  # local: UTC here
    ("20161231T235960Z", utc_ms(2016, 12, 31, 23, 59, 59, ms=999)),
    ("9999-12-31T23:59:60Z", MAX_MS),
]


@pytest.mark.parametrize(("value", "expected"), ACCEPTED, ids=repr)
def test_accepted_times(value: Any, expected: int) -> None:
    assert to_ms(value) == expected


def test_max_ms_is_the_last_millisecond_of_9999() -> None:
    assert utc_ms(9999, 12, 31, 23, 59, 59, ms=999) == MAX_MS


def test_none_is_now() -> None:
    before = time.time_ns() // 1_000_000
    got = to_ms(None)
    after = time.time_ns() // 1_000_000
    assert before <= got <= after


BEFORE_1970 = [
    -1,
    -1000,
    "1969-12-31T23:59:59.999Z",
    "1970-01-01T00:30:00+01:00",  # 1969 in UTC
    datetime(1969, 12, 31, 23, 59, 59),
    date(1969, 12, 31),
]


@pytest.mark.parametrize("value", BEFORE_1970, ids=repr)
def test_times_before_1970_are_refused(value: Any) -> None:
    with pytest.raises(InvalidTimeError, match="before 1970-01-01T00:00:00Z; ids start at 1970"):
        to_ms(value)


@pytest.mark.parametrize("value", [MAX_MS + 1, 10**15, 2**63], ids=repr)
def test_times_past_9999_are_refused(value: int) -> None:
    with pytest.raises(InvalidTimeError, match=r"after 9999-12-31T23:59:59\.999Z"):
        to_ms(value)


@pytest.mark.parametrize(
    "text", ["", "   ", "yesterday", "2018-13-01", "2018-02-30", "01/02/2018", "2018-01-01T25:00"]
)
def test_unparseable_strings_are_refused_with_an_example(text: str) -> None:
    with pytest.raises(InvalidTimeError) as info:
        to_ms(text)
    message = str(info.value)
    assert repr(text) in message
    assert "ISO-8601" in message and "2024-05-01" in message


@pytest.mark.parametrize(
    "text", ["2016-12-31T23:58:60Z", "2016-12-31T10:59:60Z", "2016-12-31T23:59:60+01:00"]
)
def test_a_second_60_elsewhere_than_23_59_utc_is_refused_as_no_leap_second(text: str) -> None:
    with pytest.raises(InvalidTimeError) as info:
        to_ms(text)
    message = str(info.value)
    assert repr(text) in message and "leap second" in message and "23:59:60 UTC" in message


@pytest.mark.parametrize("text", ["2016-12-31T23:59:61Z", "2016-02-30T23:59:60Z", "23:59:60"])
def test_what_is_no_leap_second_is_not_iso(text: str) -> None:
    with pytest.raises(InvalidTimeError, match="is not an ISO-8601 date or time"):
        to_ms(text)


@pytest.mark.parametrize("value", [1.0, 1514764800.0, 1514764800000.5, float("nan")], ids=repr)
def test_floats_are_refused_as_ambiguous_units(value: Any) -> None:
    with pytest.raises(InvalidTimeError, match="float, which could mean seconds or milliseconds"):
        to_ms(value)


@pytest.mark.parametrize("value", [True, False], ids=repr)
def test_bools_are_not_epoch_ms(value: bool) -> None:
    with pytest.raises(InvalidTimeError, match=f"{value!r} is not a time; accepted:"):
        to_ms(value)


@pytest.mark.parametrize(
    "value",
    [b"2018-01-01", [2018, 1, 1], (2018,), {"t": 1}, decimal.Decimal(5), object()],
    ids=lambda v: type(v).__name__,
)
def test_other_types_are_refused_naming_the_type(value: Any) -> None:
    with pytest.raises(InvalidTimeError) as info:
        to_ms(value)
    message = str(info.value)
    assert type(value).__name__ in message
    assert "accepted:" in message and "ISO-8601" in message


def test_time_errors_are_value_errors() -> None:
    # Callers that already catch ValueError for bad input keep working.
    with pytest.raises(ValueError):
        to_ms("nope")
    assert issubclass(InvalidTimeError, InvalidInputError)


@given(st.integers(min_value=0, max_value=MAX_MS))
def test_to_datetime_round_trips(ms: int) -> None:
    dt = to_datetime(ms)
    assert dt.tzinfo is not None and dt.utcoffset() == timedelta(0)
    assert to_ms(dt) == ms
    assert to_ms(dt.isoformat()) == ms
    # calendar.timegm is an independent reading of the same instant.
    assert calendar.timegm(dt.utctimetuple()) == ms // 1000


@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31)))
def test_naive_datetimes_are_utc_where_the_local_zone_is(dt: datetime) -> None:
    expected = calendar.timegm(dt.timetuple()) * 1000 + dt.microsecond // 1000
    assert to_ms(dt) == expected
    assert to_ms(dt.replace(tzinfo=UTC)) == expected


def test_error_messages_name_the_accepted_kinds() -> None:
    with pytest.raises(InvalidTimeError) as info:
        to_ms([1])  # type: ignore[arg-type]
    for kind in ("datetime", "date", "ISO-8601", "epoch milliseconds", "None for now"):
        assert re.search(re.escape(kind), str(info.value))


# -- an int that could be seconds -----------------------------------------------------------


def test_an_int_of_epoch_seconds_is_refused_with_both_readings_and_both_fixes() -> None:
    seconds = int(time.time())
    with pytest.raises(InvalidTimeError) as info:
        couchids.id(seconds, type="x")
    message = str(info.value)
    as_ms = to_datetime(seconds).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    as_seconds = to_datetime(seconds * 1000).isoformat().replace("+00:00", "Z")
    assert as_ms in message and as_seconds in message
    assert f"{seconds} * 1000" in message and "datetime" in message
    assert couchids.decode(couchids.id(seconds * 1000, type="x")).timestamp == to_datetime(
        seconds * 1000
    )


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (315_532_799, False),  # 1970-01-04 in ms, 1979-12-31 in seconds: only ms makes sense
        (315_532_800, True),  # 1980-01-01T00:00:00Z in seconds
        (1_700_000_000, True),
        (253_402_300_800, True),  # after 9999 in seconds, still 1978 in ms
        (315_532_799_999, True),
        (315_532_800_000, False),  # 1980-01-01T00:00:00Z in ms
        (0, False),
    ],
)
def test_the_ambiguous_ints_are_those_of_1980_on_in_seconds(value: int, refused: bool) -> None:
    assert (value in AMBIGUOUS_INTS) == refused
    if refused:
        with pytest.raises(InvalidTimeError, match="ambiguous"):
            to_ms(value)
    else:
        assert to_ms(value) == value


def test_a_time_before_1980_is_given_as_a_datetime() -> None:
    before_1980 = datetime(1975, 6, 1, tzinfo=UTC)
    doc_id = couchids.id(before_1980, type="x", millisecond=True)
    assert couchids.decode(doc_id, reverse=False, millisecond=True).timestamp == before_1980


# -- local time -----------------------------------------------------------------------------


def test_naive_datetimes_dates_and_offsetless_strings_are_local_time(local_zone: str) -> None:
    zone = ZoneInfo(local_zone)
    for naive in (datetime(2024, 5, 1), datetime(2024, 1, 15, 12, 30, 1, 250000)):
        expected = to_ms(naive.replace(tzinfo=zone))
        assert to_ms(naive) == expected == int(naive.timestamp() * 1000)
        assert to_ms(naive.isoformat()) == expected
        assert to_ms(naive.isoformat(sep=" ")) == expected
    assert (
        to_ms(date(2024, 5, 1)) == to_ms("2024-05-01") == to_ms(datetime(2024, 5, 1, tzinfo=zone))
    )
    assert to_ms(datetime(2024, 5, 1)) != to_ms("2024-05-01T00:00:00Z")  # not UTC
    # An offset or an aware datetime is that instant, in any zone.
    assert (
        to_ms("2024-05-01T00:00:00Z")
        == to_ms(datetime(2024, 5, 1, tzinfo=UTC))
        == utc_ms(2024, 5, 1)
    )
    assert to_ms("2024-05-01T05:30:00+05:30") == utc_ms(2024, 5, 1)


def test_an_hour_before_a_naive_now_is_an_hour_ago(local_zone: str) -> None:
    before = time.time_ns() // 1_000_000
    an_hour_ago = to_ms(datetime.now() - timedelta(hours=1))
    after = time.time_ns() // 1_000_000
    assert before - 3_600_000 - 1 <= an_hour_ago <= after - 3_600_000


def test_a_naive_time_local_time_cannot_reach_is_refused(local_zone: str) -> None:
    with pytest.raises(InvalidTimeError, match=r"ids hold times from 1970 to 9999|before 1970"):
        to_ms(datetime(1970, 1, 1) if local_zone == "Asia/Kolkata" else datetime(1, 1, 1))


# -- a time ago, and durations --------------------------------------------------------------

NOW = utc_ms(2024, 5, 2)


@pytest.mark.parametrize(
    ("value", "ago_ms"),
    [
        ("now", 0),
        (" NOW ", 0),
        ("24h", 86_400_000),
        ("1d", 86_400_000),
        ("90m", 5_400_000),
        ("2w", 1_209_600_000),
        ("30s", 30_000),
        ("250ms", 250),
        ("0s", 0),
        (timedelta(hours=24), 86_400_000),
        (timedelta(0), 0),
        (timedelta(microseconds=1500), 1),
    ],
    ids=repr,
)
def test_a_time_ago_counts_back_from_now(value: Any, ago_ms: int) -> None:
    assert to_ms(value, now=NOW) == NOW - ago_ms


def test_a_time_ago_reads_the_clock_without_now() -> None:
    before = time.time_ns() // 1_000_000
    day_ago = to_ms("24h")
    after = time.time_ns() // 1_000_000
    assert before - 86_400_000 <= day_ago <= after - 86_400_000


@pytest.mark.parametrize("value", [timedelta(hours=-1), timedelta(microseconds=-1)], ids=repr)
def test_a_negative_timedelta_is_refused(value: timedelta) -> None:
    with pytest.raises(InvalidTimeError, match=r"negative.*time ago"):
        to_ms(value, now=NOW)


@pytest.mark.parametrize("value", ["99999d", timedelta(days=30000), "9" * 5000 + "s"], ids=repr)
def test_a_time_ago_before_1970_is_refused(value: Any) -> None:
    with pytest.raises(InvalidTimeError, match="before 1970"):
        to_ms(value, now=NOW)


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        ("15m", 900_000),
        ("1H", 3_600_000),
        (" 7d ", 604_800_000),
        ("0s", 0),
        ("5ms", 5),
        (timedelta(days=1), 86_400_000),
        (timedelta(microseconds=999), 0),
    ],
    ids=repr,
)
def test_durations_are_units_or_timedeltas(value: Any, ms: int) -> None:
    assert duration_ms(value, "every") == ms


@pytest.mark.parametrize(
    "value", ["1 hour", "1.5h", "-1h", "h", "", 3600, 1.5, None, timedelta(seconds=-1)], ids=repr
)
def test_other_durations_are_refused_naming_the_parameter(value: Any) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^every=.*: give a timedelta, or a whole"):
        duration_ms(value, "every")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(90, 90.0), (0.5, 0.5), ("2m", 120.0), ("500ms", 0.5), (timedelta(minutes=2), 120.0)],
)
def test_seconds_read_as_the_command_reads_them(value: Any, seconds: float) -> None:
    """``timeout=``, ``backoff=`` and ``poll=`` take what ``--timeout`` takes: seconds, or a
    duration of units or a timedelta."""
    assert couchids.Options(timeout=value).timeout == seconds
    assert couchids.Options(timeout=value).policy("window").timeout == seconds


def test_backoff_reads_a_duration() -> None:
    assert couchids.Options(backoff="500ms").backoff == 0.5
    assert couchids.Options(backoff=timedelta(milliseconds=250)).backoff == 0.25


@pytest.mark.parametrize("value", ["5", "soon", timedelta(seconds=-1), "0s", "2d"])
def test_other_seconds_are_refused_naming_the_parameter(value: Any) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^timeout="):
        couchids.Options(timeout=value)
