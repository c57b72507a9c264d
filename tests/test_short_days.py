"""Reading short ids back (couchids.core.short): the day a short id holds, the key ranges of
the short ids of the days before a time, and the reading of those ranges that jumps over
other ids, which a series' expiry relies on to find every short id older than its cutoff.

The pure parts are checked against the id they read for every day of a hundred years around
the time they are read near, and for any string; the reading against the test servers.
"""

from __future__ import annotations

import itertools
import string
from datetime import UTC, date, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import intercepted, path_of

from couchids import KUUID
from couchids.core.policy import RetryPolicy
from couchids.core.short import (
    SHORT_ID,
    next_short_key,
    short_day,
    short_id_pages,
    short_ranges,
)
from couchids.drivers.blocking import stream
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


@given(st.data(), NEAR, st.integers(-(10**12), to_ms("9999-01-01")))
def test_the_ranges_hold_exactly_the_short_ids_of_the_days_before(
    data: st.DataObject, near: int, before: int
) -> None:
    ranges = short_ranges(near, before)
    assert all(low < high for low, high in ranges)
    day = data.draw(days_near(near))
    doc_id = short_of(day, data.draw(st.sampled_from(["bc", "zz", "bcd", "zzz"])))
    inside = any(low <= doc_id < high for low, high in ranges)
    assert inside == (ms_of(day) < before), (doc_id, ranges)


def test_the_ranges_around_a_cutoff() -> None:
    near = to_ms("2026-03-05")
    assert short_ranges(near, to_ms("2026-03-03")) == [("76", ":"), ("00", "260303")]
    assert short_ranges(near, to_ms("2026-03-03T00:00:00.001Z")) == [
        ("76", ":"),
        ("00", "260304"),
    ]
    assert short_ranges(to_ms("2050-06-01"), to_ms("2026-03-03")) == [("00", "260303")]
    assert short_ranges(near, to_ms("1976-01-01")) == []
    assert short_ranges(near, to_ms("2200-01-01")) == [("0", ":")]


#: Strings near short ids: digits, the nonce letters and others, '-' and the bytes around it.
NEAR_SHORT = st.text(alphabet=string.digits + "bcz-,.:aAy_", max_size=12)
SHORT_IDS = st.builds(
    lambda digits, nonce: f"{digits}-{nonce}",
    st.text(alphabet=string.digits, min_size=6, max_size=6),
    st.text(alphabet="bcdfghjkmnpqrstvwxyz", min_size=2, max_size=3),
)


@given(NEAR_SHORT, SHORT_IDS)
def test_the_jump_past_other_ids_skips_no_short_id(doc_id: str, short: str) -> None:
    if SHORT_ID.fullmatch(doc_id):
        return
    following = next_short_key(doc_id)
    assert following is None or following > doc_id
    if short > doc_id:
        assert following is not None and short >= following, (doc_id, following, short)


def test_reading_the_short_ids_jumps_over_other_ids(client: CloudantV1, db: str) -> None:
    days = [date(2026, 3, d) for d in (1, 2, 3, 5)]
    shorts = [short_of(day, a + b) for day in days for a in "bcd" for b in "fgh"]
    at = to_ms("2026-03-02")
    # Untyped kuuid ids start with digits too: a run of them lies among the short ids.
    others = [KUUID.new(at + n) for n in range(120)]
    others += ["2603", "260301", "260301-bcdf", "260302-b", "260302_bc", "2603019-bc", "9z"]
    docs = [{"_id": doc_id} for doc_id in shorts + others]
    client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
    reads: list[Any] = []

    def count(request: dict[str, Any], send: Any) -> Any:
        if path_of(request).endswith("/_all_docs"):
            reads.append(request)
        return send()

    policy = RetryPolicy.checked(0, 0, 60, "expire")
    for (low, high), page_size in itertools.product(
        [("00", "260303"), ("0", ":"), ("260302", "260305-bc")], [1, 4, 500]
    ):
        reads.clear()
        with intercepted(client, count):
            program = short_id_pages(db, low, high, policy, batch_size=page_size)
            pages = list(stream(client, program))
        got = [row["id"] for page in pages for row in page]
        assert got == sorted(i for i in shorts if low <= i < high), (low, high, page_size)
        assert all(isinstance(row["value"]["rev"], str) for page in pages for row in page)
        # Never a page of the run of kuuid ids: a jump past each other id, a page per
        # page_size short ids, and the last answer.
        assert len(reads) <= len(got) // page_size + len(others) - 120 + 3, (low, high, page_size)
