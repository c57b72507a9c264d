"""Reading short ids back (couchids.core.short): the day a short id holds, checked against the
id it reads for every day of a hundred years around the time it is read near, and for strings
that are no short id.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from couchids.core.short import short_day
from couchids.idforms.times import to_ms

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Times to read short ids near: 1970 to 9949 (a hundred years around them fit in 1-9999).
NEAR = st.integers(0, to_ms("9949-01-01"))


def ms_of(day: date) -> int:
    """The start of ``day`` in ms since 1970 (negative before it)."""
    return (day - date(1970, 1, 1)).days * 86_400_000


def short_of(day: date, nonce: str = "bc") -> str:
    return f"{day.year % 100:02d}{day.month:02d}{day.day:02d}-{nonce}"


def days_near(near_ms: int) -> st.SearchStrategy[date]:
    """Days from 50 years before the year of ``near_ms`` to 49 years after it."""
    year = (EPOCH + timedelta(milliseconds=near_ms)).year
    return st.dates(date(year - 50, 1, 1), date(year + 49, 12, 31))


@given(st.data(), NEAR)
def test_a_short_id_reads_back_as_its_day_near_any_time(data: st.DataObject, near: int) -> None:
    day = data.draw(days_near(near))
    assert short_day(short_of(day), near) == ms_of(day)
    assert short_day(short_of(day, "bcd"), near) == ms_of(day)


def test_what_is_no_short_id_reads_as_none() -> None:
    near = to_ms("2026-01-01")
    for doc_id in ("260230-bc", "261301-bc", "260100-bc", "260107-b", "260107-bcdf",
                   "260107-ab", "t:260107-bc", "260107_bc", "2601071-bc", ""):  # fmt: skip
        assert short_day(doc_id, near) is None, doc_id
