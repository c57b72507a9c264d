"""Every operation of couchids under IBM Cloudant's rules, through couchids.aio's handles
and, in the generated twin, the blocking ones: IAM only (each operation signs in with an
``IAMAuthenticator`` client and gets its exact result), the size limits, the cap on databases
and no purge, through the Cloudant-rules server (tests/cloudantproxy.py). The setting, the
data set and the tests of the proxy and the command are in tests/test_cloudant_rules.py. The
default run takes each case in one API, alternating, the other under the ``full`` marker.
"""

from __future__ import annotations

import io
import json
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from cloudantproxy import APIKEY, CloudantProxy
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_cloudant_rules import (
    BIG,
    END,
    MINUTE,
    SECRET,
    SMALL,
    T0,
    N,
    Setting,
    a_setting,
    fill_with_big,
    only_the_big_failed,
    past_day,
    sampled,
    sized,
    with_big,
)

import couchids
from couchids import BulkWriteError, InvalidArgumentError, ReplicationFailed, ServerError
from couchids.drivers.aio import AsyncClient
from couchids.errors import DatabaseLimitError

from .helpers import database, listed, series_of

#: A case: it runs its operation through ``client`` (IAM only) and checks what it did.
Body = Callable[[AsyncClient, Setting], Awaitable[None]]


# -- every operation, IAM only -------------------------------------------------------------------


async def latest(client: AsyncClient, s: Setting) -> None:
    rows = await database(client, s.db).latest(3, type="click")
    assert [row["_id"] for row in rows] == s.ids[::-1][:3]


async def window(client: AsyncClient, s: Setting) -> None:
    rows = await listed(database(client, s.db).window(T0, END, type="click"))
    assert [row["_id"] for row in rows] == s.ids[::-1]
    rows = await listed(
        database(client, s.db).window(
            T0 + MINUTE, T0 + 3 * MINUTE, type="click", newest_first=False
        )
    )
    assert [row["_id"] for row in rows] == s.ids[1:3]


async def types_present(client: AsyncClient, s: Setting) -> None:
    assert await database(client, s.db).types_present() == ["click"]


async def explain_empty(client: AsyncClient, s: Setting) -> None:
    assert await database(client, s.db).explain_empty() == (
        f"no untyped kuuid ids in {s.db!r}; it holds ids of types click: pass type='click' or "
        "type=couchids.ALL_TYPES"
    )


async def create(client: AsyncClient, s: Setting) -> None:
    result = await database(client, s.db).create({"n": 100}, type="order", timestamp=T0)
    assert result.ok and result.id.startswith("order:")
    assert s.stored()[result.id]["n"] == 100


async def bulk_create(client: AsyncClient, s: Setting) -> None:
    docs = [{"n": 100 + n} for n in range(5)]
    results = await database(client, s.db).bulk_create(docs, type="order")
    assert [r.ok for r in results] == [True] * 5
    stored = s.stored()
    assert [stored[r.id]["n"] for r in results] == [100, 101, 102, 103, 104]


async def bulk_create_iter(client: AsyncClient, s: Setting) -> None:
    results = await listed(
        database(client, s.db).bulk_create_iter(iter([{"n": 100}, {"n": 101}]), type="order")
    )
    assert [r.ok for r in results] == [True, True]
    assert [s.stored()[r.id]["n"] for r in results] == [100, 101]


async def create_short(client: AsyncClient, s: Setting) -> None:
    result = await database(client, s.db).create_short({"n": 100}, timestamp=T0)
    assert result.ok and s.stored()[result.id]["n"] == 100


async def sequence(client: AsyncClient, s: Setting) -> None:
    numbers = database(client, s.db).sequence("n", block=2)
    assert [await numbers.next() for _ in range(5)] == [1, 2, 3, 4, 5]


async def count(client: AsyncClient, s: Setting) -> None:
    assert await database(client, s.db).count(T0, END, type="click") == N
    assert await database(client, s.db).count(T0 + MINUTE, T0 + 4 * MINUTE, type="click") == 3


async def histogram(client: AsyncClient, s: Setting) -> None:
    buckets = await database(client, s.db).histogram(T0, END, every="5m", type="click")
    assert [(b.start, b.count) for b in buckets] == [(T0, 5), (T0 + 5 * MINUTE, 5)]


async def expire(client: AsyncClient, s: Setting) -> None:
    report = await database(client, s.db).expire(T0 + 4 * MINUTE, type="click", dry_run=False)
    assert (report.matched, report.deleted, report.failed) == (4, 4, [])
    assert sorted(s.stored()) == s.ids[4:]


async def expire_purge(client: AsyncClient, s: Setting) -> None:
    with pytest.raises(InvalidArgumentError, match=r"purge=True") as refused:
        await database(client, s.db).expire(END, type="click", dry_run=False, purge=True)
    assert "nothing was deleted" in str(refused.value)
    assert sorted(s.stored()) == s.ids
    # PouchDB Server is known by its welcome; CouchDB's welcome is no proof: an empty _purge,
    # which the proxy refuses.
    assert s.proxy.refused["no-purge"] == (0 if s.kind == "pouchdb" else 1)


async def export(client: AsyncClient, s: Setting) -> None:
    out = io.StringIO()
    await database(client, s.db).export(T0, END, out=out, type="click")
    assert [json.loads(line)["_id"] for line in out.getvalue().splitlines()] == s.ids


async def archive(client: AsyncClient, s: Setting) -> None:
    target = s.name("archive")
    s.admin.put_database(db=target).get_result()
    report = await database(client, s.db).archive(
        target, T0, T0 + 4 * MINUTE, type="click", expire=True
    )
    assert (report.copied, report.failed, report.expired.deleted) == (4, [], 4)
    assert sorted(s.stored(target)) == s.ids[:4]
    assert sorted(s.stored()) == s.ids[4:]


async def follow(client: AsyncClient, s: Setting) -> None:
    docs = await listed(database(client, s.db).follow(type="click", since_seq=0, wait=False))
    assert [doc["_id"] for doc in docs] == s.ids


async def rekey(client: AsyncClient, s: Setting) -> None:
    target = s.name("rekeyed")
    report = await database(client, s.db).rekey(
        target, secret=SECRET, time_field="at", type="click", create_target=True
    )
    assert (report.copied, report.failed, report.skipped) == (N, [], [])
    moved = s.stored(target)
    assert sorted(doc["n"] for doc in moved.values()) == list(range(N))
    assert not set(moved) & set(s.ids)


async def replicate(client: AsyncClient, s: Setting) -> None:
    target = s.name("edge")
    if s.kind == "pouchdb":
        with pytest.raises(ReplicationFailed, match="PouchDB Server cannot replicate"):
            await database(client, s.db).replicate(target, T0, END, type="click")
        return
    job = await database(client, s.db).replicate(target, T0, END, type="click", continuous=True)
    try:
        (doc_id,) = job.doc_ids
        doc = s.admin.get_document(db="_replicator", doc_id=doc_id).get_result()
        # Behind the proxy is Apache CouchDB: the key goes where its IAM plugin reads it.
        auth = {"ibm": {"api_key": APIKEY}}
        assert doc["source"] == {"url": f"{s.proxy.url}/{s.db}", "auth": auth}
        assert doc["target"] == {"url": f"{s.proxy.url}/{target}", "auth": auth}
        assert APIKEY not in repr(job)
    finally:
        assert await job.cancel() is True


async def series_writes_and_reads(client: AsyncClient, s: Setting) -> None:
    prefix = s.name("s")
    series = series_of(client, prefix, every="day")
    first = await series.create({"n": 0}, type="r", timestamp=past_day(0))
    docs = [{"n": n} for n in range(1, 5)]
    placed = await series.bulk_create(docs, type="r", time_of=lambda d: past_day(d["n"] % 2))
    assert first.ok and all(r.ok for r in placed)
    names = [f"{prefix}-2024-02-01", f"{prefix}-2024-02-02"]
    assert await series.databases() == names
    ids = sorted([first.id, *(r.id for r in placed)], key=lambda i: i.split(":")[1])
    since, until = past_day(0) - timedelta(hours=1), past_day(1) + timedelta(hours=1)
    rows = await listed(series.window(since, until, type="r", newest_first=False))
    assert sorted(row["_id"] for row in rows) == sorted(ids)
    assert len(await series.latest(3, type="r")) == 3
    assert await series.count(since, until, type="r") == 5
    buckets = await series.histogram(since, until, every="1d", type="r")
    assert sum(b.count for b in buckets) == 5
    out = io.StringIO()
    await series.export(since, until, out=out, type="r")
    assert len(out.getvalue().splitlines()) == 5
    assert sorted(s.stored(names[0])) + sorted(s.stored(names[1])) != []


async def series_prepare_and_expire(client: AsyncClient, s: Setting) -> None:
    prefix = s.name("p")
    series = series_of(client, prefix, every="day")
    made = await series.prepare(1)
    assert len(made) == 2 and all(name.startswith(prefix + "-") for name in made)
    await series.create({"n": 0}, type="r", timestamp=past_day(0))
    await series.create({"n": 1}, type="r", timestamp=past_day(1))
    with pytest.raises(InvalidArgumentError, match=r"purge=True"):
        await series.expire(past_day(1), dry_run=False, purge=True)
    assert f"{prefix}-2024-02-01" in await series.databases()
    await series.expire(past_day(1) - timedelta(hours=12), dry_run=False)
    assert f"{prefix}-2024-02-01" not in await series.databases()
    assert f"{prefix}-2024-02-02" in await series.databases()


async def series_replicate(client: AsyncClient, s: Setting) -> None:
    prefix = s.name("r")
    series = series_of(client, prefix, every="day")
    await series.create({"n": 0}, type="r", timestamp=past_day(0))
    since, until = past_day(0) - timedelta(hours=1), past_day(0) + timedelta(hours=1)
    if s.kind == "pouchdb":
        with pytest.raises(ReplicationFailed, match="PouchDB Server cannot replicate"):
            await series.replicate(s.name("edge"), since, until, type="r")
        return
    job = await series.replicate(s.name("edge"), since, until, type="r", continuous=True)
    try:
        (doc_id,) = job.doc_ids
        doc = s.admin.get_document(db="_replicator", doc_id=doc_id).get_result()
        assert doc["source"]["auth"] == {"ibm": {"api_key": APIKEY}}
    finally:
        await job.cancel()


OPERATIONS: dict[str, Body] = {
    "latest": latest,
    "window": window,
    "types_present": types_present,
    "explain_empty": explain_empty,
    "create": create,
    "bulk_create": bulk_create,
    "bulk_create_iter": bulk_create_iter,
    "create_short": create_short,
    "sequence": sequence,
    "count": count,
    "histogram": histogram,
    "expire": expire,
    "expire(purge=True)": expire_purge,
    "export": export,
    "archive": archive,
    "follow": follow,
    "rekey": rekey,
    "replicate": replicate,
    "Series writes and reads": series_writes_and_reads,
    "Series.prepare, expire": series_prepare_and_expire,
    "Series.replicate": series_replicate,
}


@pytest.fixture
def setting(
    cloudant_proxy: Callable[..., CloudantProxy], client: CloudantV1, couch_server: Any
) -> Iterator[Callable[..., Setting]]:
    yield from a_setting(cloudant_proxy, client, couch_server)


@pytest.mark.parametrize("name", sampled(OPERATIONS, __name__))
async def test_every_operation_signs_in_with_iam_only(
    name: str,
    setting: Callable[..., Setting],
    async_client_for: Callable[[CloudantV1], AsyncClient],
) -> None:
    s = setting()
    await OPERATIONS[name](async_client_for(s.iam), s)
    assert s.proxy.tokens, "no token was asked for"
    # No request went without a valid token; the one refusal may be an empty _purge (below).
    assert set(s.proxy.refused) <= {"no-purge"}, s.proxy.refused


async def sized_bulk_create(client: AsyncClient, s: Setting) -> None:
    with pytest.raises(BulkWriteError) as caught:
        await database(client, s.db).bulk_create(with_big(SMALL), type="big")
    stored = only_the_big_failed(caught.value.results)
    found = s.stored()
    assert sorted(found[r.id]["n"] for r in stored) == list(range(300))
    assert len(found) == N + 300


async def sized_bulk_create_iter(client: AsyncClient, s: Setting) -> None:
    results = await listed(
        database(client, s.db).bulk_create_iter(iter(with_big(SMALL)), type="big")
    )
    stored = only_the_big_failed(results)
    assert len(s.stored()) == N + len(stored) == N + 300


async def sized_create(client: AsyncClient, s: Setting) -> None:
    with pytest.raises(ServerError) as caught:
        await database(client, s.db).create(BIG, type="big")
    assert caught.value.status == 413
    assert len(s.stored()) == N
    result = await database(client, s.db).create(SMALL[0], type="big")
    assert result.ok and len(s.stored()) == N + 1


async def sized_series_writes(client: AsyncClient, s: Setting) -> None:
    prefix = s.name("z")
    series = series_of(client, prefix, every="day")
    with pytest.raises(ServerError) as caught:
        await series.create(BIG, type="big", timestamp=past_day(0))
    assert caught.value.status == 413
    with pytest.raises(BulkWriteError) as failed:
        await series.bulk_create(with_big(SMALL), type="big", time_of=lambda d: past_day(0))
    only_the_big_failed(failed.value.results)
    assert len(s.stored(f"{prefix}-2024-02-01")) == 300


async def sized_rekey(client: AsyncClient, s: Setting) -> None:
    source, big = s.name("big"), fill_with_big(s)
    target = s.name("rekeyed")
    report = await database(client, source).rekey(
        target, secret=SECRET, time_field="at", type="big", create_target=True
    )
    assert report.copied == 300 and [doc_id for doc_id, _ in report.failed] == [big]
    assert len(s.stored(target)) == 300


async def sized_archive(client: AsyncClient, s: Setting) -> None:
    source, big = s.name("big"), fill_with_big(s)
    target = s.name("archive")
    s.admin.put_database(db=target).get_result()
    report = await database(client, source).archive(
        target, T0 - MINUTE, T0 + 400 * MINUTE, type="big", expire=True
    )
    assert report.copied == 300 and [doc_id for doc_id, _ in report.failed] == [big]
    assert len(s.stored(target)) == 300
    assert list(s.stored(source)) == [big]  # the one not copied is not deleted


SIZES: dict[str, Body] = {
    "bulk_create": sized_bulk_create,
    "bulk_create_iter": sized_bulk_create_iter,
    "create": sized_create,
    "Series writes": sized_series_writes,
    "rekey": sized_rekey,
    "archive": sized_archive,
}


@pytest.mark.parametrize("name", sampled(SIZES, __name__))
async def test_writes_keep_to_the_size_limits(
    name: str,
    setting: Callable[..., Setting],
    async_client_for: Callable[[CloudantV1], AsyncClient],
) -> None:
    s = sized(setting)
    await SIZES[name](async_client_for(s.iam), s)
    assert not s.proxy.refused["iam-only"]


# -- the cap on databases ----------------------------------------------------------------------


async def capped_series_prepare(client: AsyncClient, s: Setting) -> None:
    series = series_of(client, s.name("c"), every="day")
    with pytest.raises(DatabaseLimitError):
        await series.prepare(1)  # two databases, one allowed
    assert len(await series.databases()) == 1


async def capped_series_write(client: AsyncClient, s: Setting) -> None:
    series = series_of(client, s.name("c"), every="day")
    await series.create({"n": 0}, type="r", timestamp=past_day(0))
    with pytest.raises(DatabaseLimitError):
        await series.create({"n": 1}, type="r", timestamp=past_day(1))
    with pytest.raises(DatabaseLimitError):
        await series.bulk_create([{"n": 2}, {"n": 3}], type="r", time_of=lambda d: past_day(d["n"]))
    assert await series.databases() == [f"{s.name('c')}-2024-02-01"]
    assert len(s.stored(f"{s.name('c')}-2024-02-01")) == 1


async def capped_rekey(client: AsyncClient, s: Setting) -> None:
    target = s.name("rekeyed")
    await database(client, s.db).rekey(
        s.name("first"), secret=SECRET, time_field="at", type="click", create_target=True
    )
    with pytest.raises(DatabaseLimitError):
        await database(client, s.db).rekey(
            target, secret=SECRET, time_field="at", type="click", create_target=True
        )
    assert target not in s.admin.get_all_dbs().get_result()


CAP: dict[str, Body] = {
    "Series.prepare": capped_series_prepare,
    "Series writes": capped_series_write,
    "rekey create_target": capped_rekey,
}


@pytest.mark.parametrize("name", sampled(CAP, __name__))
async def test_what_creates_databases_keeps_to_the_cap(
    name: str,
    setting: Callable[..., Setting],
    async_client_for: Callable[[CloudantV1], AsyncClient],
) -> None:
    s = setting(max_databases=1)
    await CAP[name](async_client_for(s.iam), s)
    assert s.proxy.refused["database-cap"] >= 1


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("name", sampled(["replicate"], __name__))
async def test_a_replication_whose_target_is_past_the_cap_fails(
    name: str,
    cloudant_proxy: Callable[..., CloudantProxy],
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    db: str,
) -> None:
    """replicate(create_target=True): the server's replicator creates the target, through the
    Cloudant-rules server (the endpoints are its URL), which refuses it at the cap; the
    replication fails, naming the target it was forbidden to make. (Signed in without IAM:
    CouchDB 3.4.3's replicator has no IAM plugin.)"""
    couchids.Database(client, db).create({"n": 0}, type="click", timestamp=T0)
    proxy = cloudant_proxy(plan=None, max_databases=0)
    target = f"{db}-edge"

    job = await database(async_client_for(client_for(proxy.url)), db).replicate(
        target, T0, END, type="click"
    )
    try:
        # The replicator's reason: "forbidden: <the target's URL>".
        with pytest.raises(ReplicationFailed, match=rf"forbidden: .*/{target}"):
            await job.wait(120)
    finally:
        await job.cancel()
    assert proxy.refused["database-cap"] >= 1
    assert target not in client.get_all_dbs().get_result()
