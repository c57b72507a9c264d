"""Series.replicate: a time window of every period database the window reaches, into one
target, against the ground truth (CouchDB: one node and the 3-node cluster)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import CouchDBCluster
from test_replication import ids_in, poll

import couchids
from couchids import aio
from couchids.idforms.times import to_ms

DAY = 86_400_000
#: Documents every 6 hours over six days, in a series of days, of two types and untyped.
FIRST = to_ms("2024-05-01")
START, END = "2024-05-02T12:00:00Z", "2024-05-05T06:00:00Z"


@pytest.fixture
def series_prefix(client: CloudantV1) -> Iterator[str]:
    prefix = f"test_{uuid.uuid4().hex}"
    yield prefix
    names = [n for n in client.get_all_dbs().get_result() if n.startswith(prefix)]
    for name in names:
        with contextlib.suppress(Exception):
            client.delete_database(db=name)


@pytest.fixture
def made(client: CloudantV1, series_prefix: str) -> dict[str | None, dict[str, int]]:
    """Each type's ids and their times, written into the series' databases."""
    days = couchids.Series(client, series_prefix, every="day")
    docs = [
        {"kind": kind, "at": FIRST + n * DAY // 4}
        for n in range(24)
        for kind in ("reading", "alarm", None)
    ]
    truth: dict[str | None, dict[str, int]] = {"reading": {}, "alarm": {}, None: {}}
    for kind in truth:
        mine = [doc for doc in docs if doc["kind"] == kind]
        stored = days.bulk_create(mine, type=kind, time_of=lambda doc: doc["at"])
        truth[kind] = {r.id: doc["at"] for r, doc in zip(stored, mine, strict=True)}
    assert len(days.databases()) == 6
    return truth


def inside(truth: dict[str, int]) -> set[str]:
    return {i for i, at in truth.items() if to_ms(START) <= at < to_ms(END)}


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("api", ["blocking", "aio"])
def test_a_series_window_is_copied_into_one_target(
    api: str,
    client: CloudantV1,
    couch_server: Any,
    series_prefix: str,
    made: dict[str | None, dict[str, int]],
) -> None:
    server_url = couch_server.url if isinstance(couch_server, CouchDBCluster) else None
    target = f"{series_prefix}_copy"
    if api == "blocking":
        job: Any = couchids.Series(client, series_prefix, every="day").replicate(
            target, START, END, type="reading", server_url=server_url
        )
        done = job.wait(180)
        job.cancel()
    else:

        async def run() -> Any:
            async with aio.AsyncClient(client) as ac:
                days = aio.AsyncSeries(ac, series_prefix, every="day")
                handle = await days.replicate(
                    target, START, END, type="reading", server_url=server_url
                )
                status = await handle.wait(180)
                await handle.cancel()
                return handle, status

        job, done = asyncio.run(run())
    # The window reaches four of the six days: one replication document each.
    assert len(job.doc_ids) == 4
    assert done.state == "completed" and done.doc_write_failures == 0
    want = inside(made["reading"])
    assert len(want) == 11
    assert poll(lambda: ids_in(client, target) == want)


@pytest.mark.needs("couchdb")
def test_a_target_inside_the_series_or_an_empty_window_starts_nothing(
    client: CloudantV1, series_prefix: str, made: dict[str | None, dict[str, int]]
) -> None:
    days = couchids.Series(client, series_prefix, every="day")
    before = set(client.get_all_dbs().get_result())
    with pytest.raises(couchids.InvalidArgumentError, match="is a database of the series"):
        days.replicate(f"{series_prefix}-2024-05-03", START, END, type="reading")
    with pytest.raises(couchids.InvalidArgumentError, match="no database of the series"):
        days.replicate(f"{series_prefix}_copy", "2025-01-01", "2025-02-01", type="reading")
    with pytest.raises(couchids.InvalidTimeError):
        days.replicate(f"{series_prefix}_copy", END, START, type="reading")
    assert set(client.get_all_dbs().get_result()) == before
