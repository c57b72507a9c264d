"""Times that can only mean one thing, on the server, through couchids.aio.AsyncDatabase and
AsyncSeries and, in the generated twin, couchids.Database and Series: an int of epoch seconds
is refused, a naive datetime, a date and a string without an offset are local time (as
``datetime.timestamp()`` reads them), a time ago (``"24h"``, a timedelta) counts back from now,
and ``end`` is now by default. (The rules themselves are tested in tests/test_times.py.)"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1
from test_query import insert

import couchids
from couchids import InvalidTimeError
from couchids.drivers.aio import AsyncClient

from .helpers import database, listed, series_of

MAY_1 = datetime(2024, 5, 1, tzinfo=UTC)
#: Times around May 1 2024 UTC: which of them fall on May 1 depends on the zone it is read in.
AROUND = [MAY_1 + timedelta(hours=h) for h in (-7, -3, 12, 20, 23, 26, 30)]
#: How the same local day, May 1 2024, is written: each reads as local midnight to midnight.
LOCAL_DAYS: list[tuple[Any, Any]] = [
    (datetime(2024, 5, 1), datetime(2024, 5, 2)),
    (date(2024, 5, 1), date(2024, 5, 2)),
    ("2024-05-01", "2024-05-02"),
    ("2024-05-01T00:00:00", "2024-05-02T00:00:00"),
]


def ids_at(moments: list[datetime], doc_type: str = "order") -> list[str]:
    return [couchids.id(moment, type=doc_type) for moment in moments]


def on_may_1(moments: list[datetime], zone: ZoneInfo | None) -> list[datetime]:
    return [m for m in moments if m.astimezone(zone or UTC).date() == date(2024, 5, 1)]


@pytest.fixture
def prefix(client: CloudantV1) -> Iterator[str]:
    """A series prefix no other test uses; its databases are dropped after the test."""
    name = f"test_{uuid.uuid4().hex[:20]}"
    yield name
    for db in client.get_all_dbs().get_result():
        if db.startswith(name):
            try:
                client.delete_database(db=db)
            except ApiException as error:
                if error.status_code != 404:
                    raise


async def test_naive_datetimes_dates_and_strings_without_offset_are_local_time(
    client: CloudantV1, db: str, async_client: AsyncClient, local_zone: str
) -> None:
    made = dict(zip(AROUND, ids_at(AROUND), strict=True))
    insert(client, db, list(made.values()))
    handle = database(async_client, db)
    local = sorted(made[m] for m in on_may_1(AROUND, ZoneInfo(local_zone)))
    utc = sorted(made[m] for m in on_may_1(AROUND, None))
    assert local != utc  # the zone changes the answer: the test shows which one is read
    for start, end in LOCAL_DAYS:
        got = await listed(handle.window(start, end, type="order", include_docs=False))
        assert sorted(row["id"] for row in got) == local, (start, local_zone)
        assert await handle.count(start, end, type="order") == len(local), start
    # A Z or an offset, and an aware datetime, are that instant in any zone.
    for start, end in [("2024-05-01T00:00Z", "2024-05-02T00:00Z"), (MAY_1, MAY_1 + timedelta(1))]:
        got = await listed(handle.window(start, end, type="order", include_docs=False))
        assert sorted(row["id"] for row in got) == utc


async def test_an_hour_ago_from_a_naive_now_is_an_hour_ago(
    client: CloudantV1, db: str, async_client: AsyncClient, local_zone: str
) -> None:
    now = datetime.now(UTC)
    recent = ids_at([now - timedelta(minutes=30)] * 4)
    insert(client, db, recent + ids_at([now - timedelta(hours=3)] * 20))
    handle = database(async_client, db)
    since = datetime.now() - timedelta(hours=1)
    assert await handle.count(since, type="order") == 4
    got = await listed(handle.window(since, None, type="order", include_docs=False))
    assert sorted(row["id"] for row in got) == sorted(recent)


async def test_an_int_of_epoch_seconds_is_refused_before_any_request(
    db: str, async_client: AsyncClient
) -> None:
    handle = database(async_client, db)
    seconds = int(time.time()) - 3600
    with pytest.raises(InvalidTimeError, match=rf"{seconds} \* 1000") as caught:
        await handle.count(seconds, type="order")
    message = str(caught.value)
    assert "1970-01-" in message and f"{datetime.now(UTC).year}-" in message
    with pytest.raises(InvalidTimeError, match="ambiguous"):
        await listed(handle.window(seconds, None, type="order"))
    # Milliseconds, as before.
    assert await handle.count(seconds * 1000, type="order") == 0


async def test_a_time_ago_and_end_now_by_default(
    client: CloudantV1, db: str, async_client: AsyncClient
) -> None:
    now = datetime.now(UTC)
    day = ids_at([now - timedelta(minutes=30)] * 4 + [now - timedelta(hours=3)] * 20)
    insert(client, db, day + ids_at([now - timedelta(hours=30)] * 5))
    handle = database(async_client, db)
    for since in ("24h", "1d", timedelta(hours=24)):
        got = await listed(handle.window(since, type="order", include_docs=False))
        assert sorted(row["id"] for row in got) == sorted(day), since
        assert await handle.count(since, type="order") == len(day), since
        buckets = await handle.histogram(since, every=timedelta(hours=6), type="order")
        assert sum(b.count for b in buckets) == len(day), since
        out = io.StringIO()
        mark = await handle.export(since, out=out, type="order")
        assert mark.done == len(day)
        assert sorted(json.loads(line)["_id"] for line in out.getvalue().splitlines()) == sorted(
            day
        )
    with pytest.raises(InvalidTimeError, match="negative"):
        await handle.count(timedelta(hours=-1), type="order")


async def test_a_series_reads_a_time_ago_and_ends_now_by_default(
    prefix: str, async_client: AsyncClient
) -> None:
    now = datetime.now(UTC)
    series = series_of(async_client, prefix, every="day")
    moments = [now - timedelta(hours=h) for h in (1, 5, 20, 30, 50)]
    docs = [{"at": moment.isoformat()} for moment in moments]
    written = await series.bulk_create(docs, type="order", time_of=lambda doc: doc["at"])
    inside = sorted(r.id for r, m in zip(written, moments, strict=True) if m > now - timedelta(1))
    for since in ("24h", timedelta(days=1)):
        got = await listed(series.window(since, type="order", include_docs=False))
        assert sorted(row["id"] for row in got) == inside, since
        assert await series.count(since, type="order") == len(inside)
        buckets = await series.histogram(since, every="6h", type="order")
        assert sum(b.count for b in buckets) == len(inside)
        out = io.StringIO()
        assert (await series.export(since, out=out, type="order")).done == len(inside)
