"""The periods of a series (couchids/core/periods.py) and what names its databases
(couchids.core.series.SeriesLayout): pure, no server.

Edges: the first and last day of a month and a year, a leap day, ISO weeks whose ISO year is
not the calendar year (2026-12-28 is in 2026-W53 and 2027-01-01 too; 2024-12-30 in 2025-W01),
1970-W01 (which starts in 1969 and is clamped to 1970), the end of 9999, and the forms whose
times end earlier. Property tests: every time lies in its period, periods tile time without
gaps or overlaps, names sort as their periods do and read back to them, and no name of one
series or kind is read as another's.
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

import couchids
from couchids.core.names import DB_NAME, DB_NAME_MAX
from couchids.core.periods import (
    END_OF_TIME,
    EVERY,
    SUFFIX_LEN,
    check_every,
    check_prefix,
    database_name,
    form_end_ms,
    parse_name,
    period_of,
    periods_between,
)
from couchids.core.series import PeriodDocs, PlacedResults, SeriesLayout, route_documents
from couchids.idforms.times import MAX_MS, to_ms

HOUR = 3_600_000
DAY = 24 * HOUR


def ms(text: str) -> int:
    return to_ms(text)


def span(every: str, at: str) -> tuple[str, str, str]:
    period = period_of(every, ms(at))  # type: ignore[arg-type]
    return period.suffix, period.start.isoformat()[:19], period.end.isoformat()[:19]


@pytest.mark.parametrize(
    ("every", "at", "expected"),
    [
        (
            "day",
            "2026-11-25T23:59:59.999Z",
            ("2026-11-25", "2026-11-25T00:00:00", "2026-11-26T00:00:00"),
        ),
        ("day", "2026-11-26", ("2026-11-26", "2026-11-26T00:00:00", "2026-11-27T00:00:00")),
        (
            "day",
            "2024-02-29T12:00:00Z",
            ("2024-02-29", "2024-02-29T00:00:00", "2024-03-01T00:00:00"),
        ),
        (
            "day",
            "2026-12-31T23:00:00Z",
            ("2026-12-31", "2026-12-31T00:00:00", "2027-01-01T00:00:00"),
        ),
        ("day", "1970-01-01", ("1970-01-01", "1970-01-01T00:00:00", "1970-01-02T00:00:00")),
        (
            "month",
            "2026-12-31T23:59:59.999Z",
            ("2026-12", "2026-12-01T00:00:00", "2027-01-01T00:00:00"),
        ),
        ("month", "2027-01-01", ("2027-01", "2027-01-01T00:00:00", "2027-02-01T00:00:00")),
        ("month", "2024-02-29", ("2024-02", "2024-02-01T00:00:00", "2024-03-01T00:00:00")),
        (
            "month",
            "2026-11-30T23:59:59.999Z",
            ("2026-11", "2026-11-01T00:00:00", "2026-12-01T00:00:00"),
        ),
        (
            "year",
            "2024-12-31T23:59:59.999Z",
            ("2024", "2024-01-01T00:00:00", "2025-01-01T00:00:00"),
        ),
        ("year", "2025-01-01", ("2025", "2025-01-01T00:00:00", "2026-01-01T00:00:00")),
        # ISO weeks: Monday 00:00 UTC to the next Monday, numbered in the ISO year.
        ("week", "2026-11-25", ("2026-w48", "2026-11-23T00:00:00", "2026-11-30T00:00:00")),
        ("week", "2026-11-23", ("2026-w48", "2026-11-23T00:00:00", "2026-11-30T00:00:00")),
        (
            "week",
            "2026-11-29T23:59:59.999Z",
            ("2026-w48", "2026-11-23T00:00:00", "2026-11-30T00:00:00"),
        ),
        ("week", "2027-01-01", ("2026-w53", "2026-12-28T00:00:00", "2027-01-04T00:00:00")),
        ("week", "2027-01-04", ("2027-w01", "2027-01-04T00:00:00", "2027-01-11T00:00:00")),
        ("week", "2024-12-30", ("2025-w01", "2024-12-30T00:00:00", "2025-01-06T00:00:00")),
        ("week", "2021-01-03", ("2020-w53", "2020-12-28T00:00:00", "2021-01-04T00:00:00")),
        # 1970-W01 starts on Monday 1969-12-29: clamped to the first time an id holds.
        ("week", "1970-01-01", ("1970-w01", "1970-01-01T00:00:00", "1970-01-05T00:00:00")),
    ],
)
def test_the_period_of_a_time(every: str, at: str, expected: tuple[str, str, str]) -> None:
    assert span(every, at) == expected


def test_the_last_periods_end_with_time_itself() -> None:
    for every in EVERY:
        last = period_of(every, MAX_MS)
        assert last.end_ms == END_OF_TIME and last.start_ms <= MAX_MS
        assert last.end == datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
        with pytest.raises(couchids.InvalidTimeError, match="last one"):
            last.following()
    assert period_of("week", MAX_MS).suffix == "9999-w52"
    assert periods_between("year", MAX_MS - 1, END_OF_TIME)[-1].suffix == "9999"


def test_names_are_written_and_read_back() -> None:
    for every, at, name in [
        ("year", "2026-06-01", "events-2026"),
        ("month", "2026-11-25", "events-2026-11"),
        ("week", "2026-11-25", "events-2026-w48"),
        ("day", "2026-11-25", "events-2026-11-25"),
    ]:
        period = period_of(every, ms(at))  # type: ignore[arg-type]
        assert database_name("events", period) == name
        assert parse_name("events", every, name) == period  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("every", "name"),
    [
        ("day", "events-2026-11"),  # a month's name is no day's
        ("month", "events-2026-11-25"),  # nor a day's a month's
        ("month", "events-2026"),
        ("year", "events-2026-11"),
        ("week", "events-2026-11"),
        ("month", "events-x-2026-11"),  # another series' prefix
        ("month", "eventsx-2026-11"),
        ("month", "events-2026-13"),
        ("month", "events-2026-00"),
        ("month", "events-2026-1"),
        ("day", "events-2026-02-30"),
        ("day", "events-2025-02-29"),
        ("week", "events-2026-w54"),
        ("week", "events-2025-w53"),  # 2025 has 52 ISO weeks
        ("week", "events-2026-w00"),
        ("week", "events-2026-W48"),
        ("year", "events-1969"),
        ("year", "events-0000"),
        ("month", "events-1969-12"),
        ("week", "events-1969-w52"),
        ("day", "events-1969-12-31"),
        ("year", "events-10000"),
        ("year", "events-2026-"),
        ("month", "events-2026-11-"),
        ("month", "events-٢٠٢٦-11"),  # digits of another script: \d would take them
        ("month", "events-2026-11\n"),
        ("month", "other-2026-11"),
        ("month", "events"),
    ],
)
def test_a_name_of_another_series_or_period_is_not_read(every: str, name: str) -> None:
    assert parse_name("events", every, name) is None  # type: ignore[arg-type]


def test_a_week_series_holds_iso_week_53_only_in_long_years() -> None:
    assert parse_name("events", "week", "events-2026-w53") == period_of("week", ms("2027-01-01"))
    assert parse_name("events", "week", "events-2020-w53") is not None


def test_periods_between_a_window() -> None:
    assert [p.suffix for p in periods_between("month", ms("2026-11-30"), ms("2027-01-01"))] == [
        "2026-11",
        "2026-12",
    ]
    assert [p.suffix for p in periods_between("month", ms("2026-11-30"), ms("2027-01-01") + 1)] == [
        "2026-11",
        "2026-12",
        "2027-01",
    ]
    assert periods_between("day", ms("2026-11-30"), ms("2026-11-30")) == []
    assert periods_between("day", ms("2026-11-30"), ms("2026-11-29")) == []
    leap = periods_between("day", ms("2024-02-28"), ms("2024-03-02"))
    assert [p.suffix for p in leap] == ["2024-02-28", "2024-02-29", "2024-03-01"]


def test_bad_every_prefix_and_time_are_clear_errors() -> None:
    for every in ("days", "Month", "1d", "quarter", "", None, 7):
        with pytest.raises(couchids.InvalidArgumentError, match=r"'day', 'week'.*or 'year'"):
            check_every(every)
    for prefix in (
        "Events",
        "1events",
        "_events",
        "events.x",
        "events x",
        "",
        "événements",
        "a" * 228,
    ):
        with pytest.raises(couchids.InvalidArgumentError, match="cannot start a database name"):
            check_prefix(prefix, "day")
    with pytest.raises(couchids.InvalidArgumentError, match="is a str, not a bytes"):
        check_prefix(b"events", "day")
    assert check_prefix("a" * 227, "day") == "a" * 227
    assert check_prefix("a" * 233, "year") == "a" * 233
    assert check_prefix("e$()+/-_9", "month") == "e$()+/-_9"
    for bad in (-1, MAX_MS + 1, "2026", 1.5, True):
        with pytest.raises(couchids.InvalidTimeError, match="from 1970 to the end of 9999"):
            period_of("day", bad)  # type: ignore[arg-type]


def test_the_longest_prefix_makes_names_couchdb_takes() -> None:
    for every in EVERY:
        prefix = "p" * (DB_NAME_MAX - SUFFIX_LEN[every])
        name = database_name(check_prefix(prefix, every), period_of(every, ms("2026-11-25")))
        assert len(name) == DB_NAME_MAX and DB_NAME.fullmatch(name)
        assert len(database_name("p", period_of(every, MAX_MS))) == 1 + SUFFIX_LEN[every]


def test_a_layout_checks_its_arguments() -> None:
    with pytest.raises(couchids.InvalidArgumentError, match="every='hour'"):
        SeriesLayout("events", "hour", couchids.KUUID)  # type: ignore[arg-type]
    with pytest.raises(couchids.InvalidArgumentError, match="prefix='Events'"):
        SeriesLayout("Events", "day", couchids.KUUID)
    with pytest.raises(couchids.InvalidArgumentError, match="pass an id form"):
        SeriesLayout("events", "day", "kuuid")  # type: ignore[arg-type]
    with pytest.raises(couchids.InvalidArgumentError, match="cannot be queried by time"):
        SeriesLayout("events", "day", couchids.UUID464)
    with pytest.raises(couchids.InvalidArgumentError, match="partitioned"):
        SeriesLayout("events", "day", couchids.KUUID, "yes")  # type: ignore[arg-type]


def test_a_layout_refuses_a_time_past_its_form() -> None:
    tid = SeriesLayout("events", "year", couchids.TID62)
    end = form_end_ms(couchids.TID62)
    assert datetime.fromtimestamp(end / 1000, UTC).year == 2156
    assert tid.period_at(end - 1).suffix == "2156"
    with pytest.raises(couchids.InvalidTimeError, match="past the last time a tid62 id holds"):
        tid.period_at(end)
    assert SeriesLayout("events", "year", couchids.KUUID).period_at(MAX_MS).suffix == "9999"


def test_the_time_of_an_own_id() -> None:
    layout = SeriesLayout("events", "day", couchids.KUUID)
    at = ms("2026-11-25T10:00:00Z")
    for doc_id in (
        couchids.KUUID.new(at),
        couchids.KUUID.new(at, type="reading"),
        couchids.KUUID.new(at, type="my-type"),
    ):
        assert layout.time_of_id(doc_id) == at
    dashed = SeriesLayout("events", "day", couchids.V7S.with_separator("-"))
    assert dashed.time_of_id(dashed.form.new(at, type="a-b")) == at
    for bad in ("hello", "reading:hello", "", "_design/x", 5):
        with pytest.raises(couchids.InvalidArgumentError, match="is not a kuuid id"):
            layout.time_of_id(bad)  # type: ignore[arg-type]


def test_documents_are_routed_to_their_periods_in_input_order() -> None:
    layout = SeriesLayout("events", "day", couchids.KUUID)
    now = datetime(2026, 11, 25, 23, 59, 59, 999000, tzinfo=UTC)
    own = couchids.KUUID.new("2026-11-20T08:00:00Z", type="t")
    docs = [
        {"at": "2026-11-26T00:00:00Z"},
        {"at": None},
        {"_id": own},
        {"at": "2026-11-25T00:00:00Z"},
        {"at": "2026-11-26T10:00:00Z"},
    ]

    def at(doc: dict[str, str | None]) -> str | datetime | None:
        if "_id" in doc:
            return None
        return doc["at"] or now

    total, parts = route_documents(layout, docs, key_of=None, time_of=None, now=now)
    assert total == 5 and [p.name for p in parts] == ["events-2026-11-20", "events-2026-11-25"]
    assert parts[1].positions == [0, 1, 3, 4] and parts[1].time_of(docs[4]) == now
    assert parts[0].time_of(docs[2]) == to_ms("2026-11-20T08:00:00Z")
    total, parts = route_documents(layout, docs[:2] + docs[3:], key_of=None, time_of=at, now=now)
    assert [p.name for p in parts] == ["events-2026-11-25", "events-2026-11-26"]
    assert [p.positions for p in parts] == [[1, 2], [0, 3]]
    with pytest.raises(couchids.InvalidArgumentError, match="key_of= needs time_of="):
        route_documents(layout, docs, key_of=lambda d: "k", time_of=None, now=now)
    with pytest.raises(couchids.InvalidArgumentError, match=r"^time_of='2026-11-25': pass a func"):
        route_documents(layout, docs, key_of=None, time_of="2026-11-25", now=now)  # type: ignore[arg-type]
    with pytest.raises(couchids.InvalidArgumentError, match=r"^key_of='k': pass a function"):
        route_documents(layout, docs, key_of="k", time_of=at, now=now)  # type: ignore[arg-type]
    with pytest.raises(couchids.InvalidArgumentError, match="time_of= failed for document 2"):
        route_documents(layout, docs, key_of=None, time_of=lambda d: d["at"], now=now)
    with pytest.raises(couchids.InvalidArgumentError, match="document 1 has a _rev"):
        route_documents(layout, [{}, {"_rev": "1-a"}], key_of=None, time_of=None, now=now)
    with pytest.raises(couchids.InvalidArgumentError, match="not one dict"):
        route_documents(layout, {"a": 1}, key_of=None, time_of=None, now=now)  # type: ignore[arg-type]
    with pytest.raises(couchids.InvalidTimeError, match=r"document 0: .*past the last time"):
        route_documents(
            SeriesLayout("e", "day", couchids.TID62),
            [{}],
            key_of=None,
            time_of=lambda d: "2200-01-01",
            now=now,
        )


def test_results_are_placed_back_in_input_order() -> None:
    layout = SeriesLayout("events", "day", couchids.KUUID)
    a, b = (PeriodDocs(layout.period_at(ms(d)), "x") for d in ("2026-11-01", "2026-11-02"))
    a.positions, a.docs = [0, 2], [{}, {}]
    b.positions, b.docs = [1], [{}]
    placed = PlacedResults(3)
    placed.place(b, [couchids.WriteResult("b0", "1-a")])
    placed.place(a, [couchids.WriteResult("a0", "1-a"), couchids.WriteResult("a1", "1-a")])
    assert [r.id for r in placed.finish()] == ["a0", "b0", "a1"]
    failed = PlacedResults(2)
    failed.place(a, [couchids.WriteResult("a0", None, error=couchids.ServerError("no"))])
    assert [r.id for r in failed.handled()] == ["a0"]
    with pytest.raises(couchids.BulkWriteError, match="1 of 1 documents were not stored"):
        failed.finish()


def test_what_is_written_again_after_a_missing_database() -> None:
    part = PeriodDocs(period_of("day", 0), "x", [0, 1, 2, 3], [{}, {}, {}, {}])
    missing = couchids.DatabaseNotFoundError("gone", 404)
    stored = couchids.WriteResult("s", "1-a")
    lost = couchids.WriteResult("m", None, error=missing)
    conflict = couchids.WriteResult("c", None, error=couchids.ConflictError("other", "c"))
    handled = [stored, lost, conflict]
    assert part.to_write_again(handled) == [1, 3]
    again = [couchids.WriteResult("m2", "1-b"), couchids.WriteResult("n", "1-c")]
    assert [r.id for r in part.merged(handled, [1, 3], again)] == ["s", "m2", "c", "n"]


# -- properties ---------------------------------------------------------------------------

times = st.integers(min_value=0, max_value=MAX_MS)
everies = st.sampled_from(EVERY)


@given(everies, times)
def test_every_time_lies_in_its_period_whose_name_reads_back(every: str, t: int) -> None:
    period = period_of(every, t)  # type: ignore[arg-type]
    assert period.start_ms <= t < period.end_ms
    name = database_name("events", period)
    assert DB_NAME.fullmatch(name)
    assert parse_name("events", every, name) == period  # type: ignore[arg-type]
    assert all(
        parse_name("events", other, name) is None  # type: ignore[arg-type]
        for other in EVERY
        if other != every
    )
    assert parse_name("events-x", every, name) is None  # type: ignore[arg-type]
    assert parse_name("event", every, name) is None  # type: ignore[arg-type]
    if period.start_ms > 0:
        assert period_of(every, period.start_ms - 1).end_ms == period.start_ms  # type: ignore[arg-type]
    if period.end_ms < END_OF_TIME:
        assert period.following().start_ms == period.end_ms


@given(everies, times, times)
def test_names_sort_as_their_periods(every: str, t: int, u: int) -> None:
    p, q = period_of(every, t), period_of(every, u)  # type: ignore[arg-type]
    assert (p < q) == (database_name("e", p) < database_name("e", q))
    assert (p == q) == (database_name("e", p) == database_name("e", q))


@given(everies, times, st.integers(min_value=0, max_value=400 * DAY))
def test_periods_between_tile_the_window(every: str, start: int, length: int) -> None:
    end = min(start + length, END_OF_TIME)
    found = periods_between(every, start, end)  # type: ignore[arg-type]
    if end <= start:
        assert found == []
        return
    assert found[0].start_ms <= start < found[0].end_ms
    assert found[-1].start_ms < end <= found[-1].end_ms
    for before, after in itertools.pairwise(found):
        assert before.end_ms == after.start_ms


@given(st.dates(min_value=date(1970, 1, 5), max_value=date(9999, 12, 24)))
def test_a_week_starts_on_a_monday_and_lasts_seven_days(day: date) -> None:
    at = to_ms(day)
    week = period_of("week", at)
    assert week.start.weekday() == 0 and week.end_ms - week.start_ms == 7 * DAY
    year, number, _ = day.isocalendar()
    assert week.suffix == f"{year:04d}-w{number:02d}"
    assert period_of("month", at).start == datetime(day.year, day.month, 1, tzinfo=UTC)
    assert period_of("day", at).end - period_of("day", at).start == timedelta(days=1)
