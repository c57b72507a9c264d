"""Every operation of couchids under IBM Cloudant's rules, through the Cloudant-rules server
(tests/cloudantproxy.py) in front of the server under test, in both APIs.

- **IAM only**: the proxy takes nothing but bearer tokens from its own token endpoint (IBM's
  ``POST /identity/token``), and refuses basic credentials and ``_session`` logins. Each
  operation of ``Database``, ``Series`` and ``Replication`` (and the command, for a few) runs
  with an ``IAMAuthenticator`` client and is checked for its exact result; the proxy refused
  none of its requests.
- **Sizes**: with a 1 MB request limit and a 100 KB document limit, the writes (``bulk_create``,
  ``bulk_create_iter``, ``create``, ``rekey``, ``archive``, a series' writes) store every
  document that fits exactly once and report the one that does not.
- **Cap**: what creates databases (a series' ``prepare`` and writes, ``rekey`` with
  ``create_target``) is refused past the cap with ``DatabaseLimitError``, nothing stored; a
  replication whose target the server's replicator would create fails (on CouchDB).
- **No purge**: ``expire(purge=True)`` is refused before anything is deleted.

(The rate limits are tests/test_pacing.py's.) Each case runs its operation on a small data
set: ``N`` documents of type ``click``, a minute apart from ``T0``, written straight to the
server. The default run takes each case in one API, the other one under the ``full`` marker
(CI runs both).
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import io
import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from cloudantproxy import APIKEY, CloudantProxy
from conftest import drop_database, fresh_database
from faultproxy import all_docs, client_for
from ibm_cloud_sdk_core.authenticators import BasicAuthenticator, IAMAuthenticator
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import (
    BulkWriteError,
    InvalidArgumentError,
    ReplicationFailed,
    ServerError,
    UnauthorizedError,
    aio,
)
from couchids.cli.main import EXIT_OK, main
from couchids.errors import DatabaseLimitError

#: The data set: N documents of type "click", one a minute from T0 (the last minutes of a day).
N = 10
T0 = datetime(2024, 5, 1, 23, 50, tzinfo=UTC)
END = T0 + timedelta(minutes=N)
MINUTE = timedelta(minutes=1)
#: rekey's secret for the random part of the new ids, by the name its parameter has.
SECRET = {
    "secret" if "secret" in inspect.signature(couchids.Database.rekey).parameters else "key": b"k"
}
#: The proxy's limits in the size cases: a request, a document.
REQUEST_BYTES, DOCUMENT_BYTES = 1_000_000, 100_000


# -- the setting: an IAM-only Cloudant-rules server in front of the server under test ------------


@dataclass
class Setting:
    """What a case runs against: ``proxy`` (IAM only) in front of the server under test;
    ``iam`` a client of the proxy with IBM Cloud IAM; ``admin`` a client of the server itself,
    to check what is stored; ``db`` a database holding the data set, whose ids (oldest first)
    are ``ids``; ``kind`` the server under test."""

    proxy: CloudantProxy
    iam: CloudantV1
    admin: CloudantV1
    db: str
    ids: list[str]
    kind: str

    def stored(self, db: str | None = None) -> dict[str, dict[str, Any]]:
        return all_docs(self.admin, db or self.db)

    def name(self, suffix: str) -> str:
        """A database name of the test's own (dropped after it)."""
        return f"{self.db}-{suffix}"


def iam_client(proxy: CloudantProxy) -> CloudantV1:
    """A client that signs in with an API key at the proxy's token endpoint."""
    client = CloudantV1(authenticator=IAMAuthenticator(APIKEY, url=proxy.url))
    client.set_service_url(proxy.url)
    client.set_http_config({"proxies": {"http": None, "https": None}})
    return client


def made_at(doc: dict[str, Any]) -> datetime:
    return T0 + doc["n"] * MINUTE


@pytest.fixture
def setting(
    cloudant_proxy: Callable[..., CloudantProxy],
    client: CloudantV1,
    couch_server: Any,
) -> Iterator[Callable[..., Setting]]:
    """``setting(**proxy_options)``: the data set in a new database, and an IAM-only proxy
    (plan=None: no rate limit) with those options; every database of the test is dropped."""
    made: list[str] = []

    def start(**options: Any) -> Setting:
        db = fresh_database(client)
        made.append(db)
        docs = [{"n": n, "at": made_at({"n": n}).isoformat()} for n in range(N)]
        results = couchids.Database(client, db).bulk_create(docs, type="click", time_of=made_at)
        proxy = cloudant_proxy(plan=None, iam_only=True, **options)
        ids = [r.id for r in results]
        return Setting(proxy, iam_client(proxy), client, db, ids, couch_server.kind)

    yield start
    for name in client.get_all_dbs().get_result():
        if any(name.startswith(db) for db in made):
            drop_database(client, name)


# -- both APIs, one body -------------------------------------------------------------------------


@dataclass
class Handles:
    """The handles of one API over the IAM client: ``db(name)`` a Database or
    AsyncDatabase, ``series(prefix)`` a Series or AsyncSeries."""

    api: str
    client: CloudantV1
    ac: aio.AsyncClient | None = None

    def db(self, name: str, **options: Any) -> Any:
        if self.ac is None:
            return couchids.Database(self.client, name, **options)
        return aio.AsyncDatabase(self.ac, name, **options)

    def series(self, prefix: str, **options: Any) -> Any:
        if self.ac is None:
            return couchids.Series(self.client, prefix, every="day", **options)
        return aio.AsyncSeries(self.ac, prefix, every="day", **options)


async def got(value: Any) -> Any:
    """What a call of either API gave: awaited, and a stream read into a list."""
    if inspect.isawaitable(value):
        value = await value
    if hasattr(value, "__aiter__"):
        return [item async for item in value]
    if isinstance(value, Iterator):
        return list(value)
    return value


Body = Callable[[Handles, Setting], Awaitable[None]]


def run(api: str, s: Setting, body: Body) -> None:
    async def main() -> None:
        if api == "blocking":
            await body(Handles(api, s.iam), s)
            return
        async with aio.AsyncClient(s.iam) as ac:
            await body(Handles(api, s.iam, ac), s)

    asyncio.run(main())


def sampled(cases: dict[str, Body]) -> list[Any]:
    """Each case in both APIs: one of them in the default run (alternating), the other marked
    ``full``."""
    params = []
    for index, name in enumerate(cases):
        for turn, api in enumerate(("blocking", "aio")):
            full = (index + turn) % 2 == 1
            marks = [pytest.mark.full] if full else []
            params.append(pytest.param(name, api, id=f"{name}-{api}", marks=marks))
    return params


# -- every operation, IAM only -------------------------------------------------------------------


async def latest(h: Handles, s: Setting) -> None:
    rows = await got(h.db(s.db).latest(3, type="click"))
    assert [row["_id"] for row in rows] == s.ids[::-1][:3]


async def window(h: Handles, s: Setting) -> None:
    rows = await got(h.db(s.db).window(T0, END, type="click"))
    assert [row["_id"] for row in rows] == s.ids[::-1]
    rows = await got(
        h.db(s.db).window(T0 + MINUTE, T0 + 3 * MINUTE, type="click", newest_first=False)
    )
    assert [row["_id"] for row in rows] == s.ids[1:3]


async def types_present(h: Handles, s: Setting) -> None:
    assert await got(h.db(s.db).types_present()) == ["click"]


async def explain_empty(h: Handles, s: Setting) -> None:
    assert await got(h.db(s.db).explain_empty()) == (
        f"no untyped kuuid ids in {s.db!r}; it holds ids of types click: pass type='click' or "
        "type=couchids.ALL_TYPES"
    )


async def create(h: Handles, s: Setting) -> None:
    result = await got(h.db(s.db).create({"n": 100}, type="order", timestamp=T0))
    assert result.ok and result.id.startswith("order:")
    assert s.stored()[result.id]["n"] == 100


async def bulk_create(h: Handles, s: Setting) -> None:
    docs = [{"n": 100 + n} for n in range(5)]
    results = await got(h.db(s.db).bulk_create(docs, type="order"))
    assert [r.ok for r in results] == [True] * 5
    stored = s.stored()
    assert [stored[r.id]["n"] for r in results] == [100, 101, 102, 103, 104]


async def bulk_create_iter(h: Handles, s: Setting) -> None:
    results = await got(h.db(s.db).bulk_create_iter(iter([{"n": 100}, {"n": 101}]), type="order"))
    assert [r.ok for r in results] == [True, True]
    assert [s.stored()[r.id]["n"] for r in results] == [100, 101]


async def create_short(h: Handles, s: Setting) -> None:
    result = await got(h.db(s.db).create_short({"n": 100}, timestamp=T0))
    assert result.ok and s.stored()[result.id]["n"] == 100


async def sequence(h: Handles, s: Setting) -> None:
    numbers = h.db(s.db).sequence("n", block=2)
    assert [await got(numbers.next()) for _ in range(5)] == [1, 2, 3, 4, 5]


async def count(h: Handles, s: Setting) -> None:
    assert await got(h.db(s.db).count(T0, END, type="click")) == N
    assert await got(h.db(s.db).count(T0 + MINUTE, T0 + 4 * MINUTE, type="click")) == 3


async def histogram(h: Handles, s: Setting) -> None:
    buckets = await got(h.db(s.db).histogram(T0, END, every="5m", type="click"))
    assert [(b.start, b.count) for b in buckets] == [(T0, 5), (T0 + 5 * MINUTE, 5)]


async def expire(h: Handles, s: Setting) -> None:
    report = await got(h.db(s.db).expire(T0 + 4 * MINUTE, type="click", dry_run=False))
    assert (report.matched, report.deleted, report.failed) == (4, 4, [])
    assert sorted(s.stored()) == s.ids[4:]


async def expire_purge(h: Handles, s: Setting) -> None:
    with pytest.raises(InvalidArgumentError, match=r"purge=True") as refused:
        await got(h.db(s.db).expire(END, type="click", dry_run=False, purge=True))
    assert "nothing was deleted" in str(refused.value)
    assert sorted(s.stored()) == s.ids
    # PouchDB Server is known by its welcome; CouchDB's welcome is no proof: an empty _purge,
    # which the proxy refuses.
    assert s.proxy.refused["no-purge"] == (0 if s.kind == "pouchdb" else 1)


async def export(h: Handles, s: Setting) -> None:
    out = io.StringIO()
    await got(h.db(s.db).export(T0, END, out, type="click"))
    assert [json.loads(line)["_id"] for line in out.getvalue().splitlines()] == s.ids


async def archive(h: Handles, s: Setting) -> None:
    target = s.name("archive")
    s.admin.put_database(db=target).get_result()
    report = await got(h.db(s.db).archive(target, T0, T0 + 4 * MINUTE, type="click", expire=True))
    assert (report.copied, report.failed, report.expired.deleted) == (4, [], 4)
    assert sorted(s.stored(target)) == s.ids[:4]
    assert sorted(s.stored()) == s.ids[4:]


async def follow(h: Handles, s: Setting) -> None:
    docs = await got(h.db(s.db).follow(type="click", since_seq=0, wait=False))
    assert [doc["_id"] for doc in docs] == s.ids


async def rekey(h: Handles, s: Setting) -> None:
    target = s.name("rekeyed")
    report = await got(
        h.db(s.db).rekey(target, **SECRET, time_field="at", type="click", create_target=True)
    )
    assert (report.copied, report.failed, report.skipped) == (N, [], [])
    moved = s.stored(target)
    assert sorted(doc["n"] for doc in moved.values()) == list(range(N))
    assert not set(moved) & set(s.ids)


async def replicate(h: Handles, s: Setting) -> None:
    target = s.name("edge")
    if s.kind == "pouchdb":
        with pytest.raises(ReplicationFailed, match="PouchDB Server cannot replicate"):
            await got(h.db(s.db).replicate(target, T0, END, type="click"))
        return
    job = await got(h.db(s.db).replicate(target, T0, END, type="click", continuous=True))
    try:
        (doc_id,) = job.doc_ids
        doc = s.admin.get_document(db="_replicator", doc_id=doc_id).get_result()
        # Behind the proxy is Apache CouchDB: the key goes where its IAM plugin reads it.
        auth = {"ibm": {"api_key": APIKEY}}
        assert doc["source"] == {"url": f"{s.proxy.url}/{s.db}", "auth": auth}
        assert doc["target"] == {"url": f"{s.proxy.url}/{target}", "auth": auth}
        assert APIKEY not in repr(job)
    finally:
        assert await got(job.cancel()) is True


def past_day(day: int) -> datetime:
    return datetime(2024, 2, 1 + day, 12, tzinfo=UTC)


async def series_writes_and_reads(h: Handles, s: Setting) -> None:
    prefix = s.name("s")
    series = h.series(prefix)
    first = await got(series.create({"n": 0}, type="r", timestamp=past_day(0)))
    docs = [{"n": n} for n in range(1, 5)]
    placed = await got(series.bulk_create(docs, type="r", time_of=lambda d: past_day(d["n"] % 2)))
    assert first.ok and all(r.ok for r in placed)
    names = [f"{prefix}-2024-02-01", f"{prefix}-2024-02-02"]
    assert await got(series.databases()) == names
    ids = sorted([first.id, *(r.id for r in placed)], key=lambda i: i.split(":")[1])
    since, until = past_day(0) - timedelta(hours=1), past_day(1) + timedelta(hours=1)
    rows = await got(series.window(since, until, type="r", newest_first=False))
    assert sorted(row["_id"] for row in rows) == sorted(ids)
    assert len(await got(series.latest(3, type="r"))) == 3
    assert await got(series.count(since, until, type="r")) == 5
    buckets = await got(series.histogram(since, until, every="1d", type="r"))
    assert sum(b.count for b in buckets) == 5
    out = io.StringIO()
    await got(series.export(since, until, out, type="r"))
    assert len(out.getvalue().splitlines()) == 5
    assert sorted(s.stored(names[0])) + sorted(s.stored(names[1])) != []


async def series_prepare_and_expire(h: Handles, s: Setting) -> None:
    prefix = s.name("p")
    series = h.series(prefix)
    made = await got(series.prepare(1))
    assert len(made) == 2 and all(name.startswith(prefix + "-") for name in made)
    await got(series.create({"n": 0}, type="r", timestamp=past_day(0)))
    await got(series.create({"n": 1}, type="r", timestamp=past_day(1)))
    with pytest.raises(InvalidArgumentError, match=r"purge=True"):
        await got(series.expire(past_day(1), dry_run=False, purge=True))
    assert f"{prefix}-2024-02-01" in await got(series.databases())
    await got(series.expire(past_day(1) - timedelta(hours=12), dry_run=False))
    assert f"{prefix}-2024-02-01" not in await got(series.databases())
    assert f"{prefix}-2024-02-02" in await got(series.databases())


async def series_replicate(h: Handles, s: Setting) -> None:
    prefix = s.name("r")
    series = h.series(prefix)
    await got(series.create({"n": 0}, type="r", timestamp=past_day(0)))
    since, until = past_day(0) - timedelta(hours=1), past_day(0) + timedelta(hours=1)
    if s.kind == "pouchdb":
        with pytest.raises(ReplicationFailed, match="PouchDB Server cannot replicate"):
            await got(series.replicate(s.name("edge"), since, until, type="r"))
        return
    job = await got(series.replicate(s.name("edge"), since, until, type="r", continuous=True))
    try:
        (doc_id,) = job.doc_ids
        doc = s.admin.get_document(db="_replicator", doc_id=doc_id).get_result()
        assert doc["source"]["auth"] == {"ibm": {"api_key": APIKEY}}
    finally:
        await got(job.cancel())


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


@pytest.mark.parametrize(("name", "api"), sampled(OPERATIONS))
def test_every_operation_signs_in_with_iam_only(
    name: str, api: str, setting: Callable[..., Setting]
) -> None:
    s = setting()
    run(api, s, OPERATIONS[name])
    assert s.proxy.tokens, "no token was asked for"
    # No request went without a valid token; the one refusal may be an empty _purge (below).
    assert set(s.proxy.refused) <= {"no-purge"}, s.proxy.refused


def test_the_proxy_takes_nothing_but_its_tokens(setting: Callable[..., Setting]) -> None:
    """The control: basic credentials, a ``_session`` login and no credentials are refused
    (and each operation's client would have failed with them)."""
    s = setting()
    basic = CloudantV1(authenticator=BasicAuthenticator("admin", "pass"))
    session = CloudantV1(authenticator=CouchDbSessionAuthenticator("admin", "pass"))
    for other in (basic, session):
        other.set_service_url(s.proxy.url)
        other.set_http_config({"proxies": {"http": None, "https": None}})
        with pytest.raises(UnauthorizedError):
            couchids.Database(other, s.db).latest(1, type="click")
    with requests.Session() as http:
        http.trust_env = False
        assert http.get(f"{s.proxy.url}/{s.db}").status_code == 401
        login = base64.b64encode(b"admin:pass").decode()
        answer = http.get(f"{s.proxy.url}/{s.db}", headers={"Authorization": f"Basic {login}"})
        assert answer.status_code == 401
    assert s.proxy.refused["iam-only"] >= 4


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            [
                "count",
                "DB",
                "--type",
                "click",
                "--since",
                T0.isoformat(),
                "--until",
                END.isoformat(),
            ],
            f"{N}\n",
        ),
        (["latest", "DB", "--type", "click", "-n", "2"], None),
    ],
    ids=["count", "latest"],
)
def test_the_command_signs_in_with_iam_only(
    argv: list[str],
    expected: str | None,
    setting: Callable[..., Setting],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    s = setting()
    for name in ("CLOUDANT_USERNAME", "CLOUDANT_PASSWORD", "VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    for variable, value in (
        ("URL", s.proxy.url),
        ("AUTH_TYPE", "iam"),
        ("APIKEY", APIKEY),
        ("AUTH_URL", s.proxy.url),
    ):
        monkeypatch.setenv(f"CLOUDANT_{variable}", value)
    assert main([s.db if arg == "DB" else arg for arg in argv]) == EXIT_OK
    out, err = capsys.readouterr()
    if expected is not None:
        assert out == expected
    else:
        assert [json.loads(line)["_id"] for line in out.splitlines()] == s.ids[::-1][:2]
    assert err == "" and APIKEY not in out
    assert s.proxy.tokens and not s.proxy.refused


# -- sizes: a request at most 1 MB, a document at most 100 KB --------------------------------------


#: Documents of 4 KB (300 of them: 1.2 MB, over one request) and one of 200 KB.
SMALL = [{"n": n, "at": (T0 + n * MINUTE).isoformat(), "pad": "x" * 4000} for n in range(300)]
BIG = {"n": -1, "at": T0.isoformat(), "pad": "x" * 200_000}


def sized(setting: Callable[..., Setting]) -> Setting:
    return setting(max_request_bytes=REQUEST_BYTES, max_document_bytes=DOCUMENT_BYTES)


def with_big(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*docs[:150], BIG, *docs[150:]]


def only_the_big_failed(results: list[Any]) -> list[Any]:
    failed = [r for r in results if r.error is not None]
    assert len(failed) == 1 and len(results) == len(SMALL) + 1
    error = failed[0].error
    assert isinstance(error, ServerError) and error.status == 413, error
    return [r for r in results if r.error is None]


async def sized_bulk_create(h: Handles, s: Setting) -> None:
    with pytest.raises(BulkWriteError) as caught:
        await got(h.db(s.db).bulk_create(with_big(SMALL), type="big"))
    stored = only_the_big_failed(caught.value.results)
    found = s.stored()
    assert sorted(found[r.id]["n"] for r in stored) == list(range(300))
    assert len(found) == N + 300


async def sized_bulk_create_iter(h: Handles, s: Setting) -> None:
    results = await got(h.db(s.db).bulk_create_iter(iter(with_big(SMALL)), type="big"))
    stored = only_the_big_failed(results)
    assert len(s.stored()) == N + len(stored) == N + 300


async def sized_create(h: Handles, s: Setting) -> None:
    with pytest.raises(ServerError) as caught:
        await got(h.db(s.db).create(BIG, type="big"))
    assert caught.value.status == 413
    assert len(s.stored()) == N
    result = await got(h.db(s.db).create(SMALL[0], type="big"))
    assert result.ok and len(s.stored()) == N + 1


async def sized_series_writes(h: Handles, s: Setting) -> None:
    prefix = s.name("z")
    series = h.series(prefix)
    with pytest.raises(ServerError) as caught:
        await got(series.create(BIG, type="big", timestamp=past_day(0)))
    assert caught.value.status == 413
    with pytest.raises(BulkWriteError) as failed:
        await got(series.bulk_create(with_big(SMALL), type="big", time_of=lambda d: past_day(0)))
    only_the_big_failed(failed.value.results)
    assert len(s.stored(f"{prefix}-2024-02-01")) == 300


def fill_with_big(s: Setting) -> str:
    """The 300 small documents and the big one in a new source database, written straight;
    the big one's id."""
    source = s.name("big")
    s.admin.put_database(db=source).get_result()
    handle = couchids.Database(s.admin, source)
    results = handle.bulk_create(
        with_big(SMALL), type="big", time_of=lambda d: T0 + d["n"] * MINUTE
    )
    assert all(r.ok for r in results)
    return next(r.id for r, doc in zip(results, with_big(SMALL), strict=True) if doc is BIG)


async def sized_rekey(h: Handles, s: Setting) -> None:
    source, big = s.name("big"), fill_with_big(s)
    target = s.name("rekeyed")
    report = await got(
        h.db(source).rekey(target, **SECRET, time_field="at", type="big", create_target=True)
    )
    assert report.copied == 300 and [doc_id for doc_id, _ in report.failed] == [big]
    assert len(s.stored(target)) == 300


async def sized_archive(h: Handles, s: Setting) -> None:
    source, big = s.name("big"), fill_with_big(s)
    target = s.name("archive")
    s.admin.put_database(db=target).get_result()
    report = await got(
        h.db(source).archive(target, T0 - MINUTE, T0 + 400 * MINUTE, type="big", expire=True)
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


@pytest.mark.parametrize(("name", "api"), sampled(SIZES))
def test_writes_keep_to_the_size_limits(
    name: str, api: str, setting: Callable[..., Setting]
) -> None:
    s = sized(setting)
    run(api, s, SIZES[name])
    assert not s.proxy.refused["iam-only"]


# -- the cap on databases ----------------------------------------------------------------------


async def capped_series_prepare(h: Handles, s: Setting) -> None:
    series = h.series(s.name("c"))
    with pytest.raises(DatabaseLimitError):
        await got(series.prepare(1))  # two databases, one allowed
    assert len(await got(series.databases())) == 1


async def capped_series_write(h: Handles, s: Setting) -> None:
    series = h.series(s.name("c"))
    await got(series.create({"n": 0}, type="r", timestamp=past_day(0)))
    with pytest.raises(DatabaseLimitError):
        await got(series.create({"n": 1}, type="r", timestamp=past_day(1)))
    with pytest.raises(DatabaseLimitError):
        await got(
            series.bulk_create([{"n": 2}, {"n": 3}], type="r", time_of=lambda d: past_day(d["n"]))
        )
    assert await got(series.databases()) == [f"{s.name('c')}-2024-02-01"]
    assert len(s.stored(f"{s.name('c')}-2024-02-01")) == 1


async def capped_rekey(h: Handles, s: Setting) -> None:
    target = s.name("rekeyed")
    await got(
        h.db(s.db).rekey(
            s.name("first"), **SECRET, time_field="at", type="click", create_target=True
        )
    )
    with pytest.raises(DatabaseLimitError):
        await got(
            h.db(s.db).rekey(target, **SECRET, time_field="at", type="click", create_target=True)
        )
    assert target not in s.admin.get_all_dbs().get_result()


CAP: dict[str, Body] = {
    "Series.prepare": capped_series_prepare,
    "Series writes": capped_series_write,
    "rekey create_target": capped_rekey,
}


@pytest.mark.parametrize(("name", "api"), sampled(CAP))
def test_what_creates_databases_keeps_to_the_cap(
    name: str, api: str, setting: Callable[..., Setting]
) -> None:
    s = setting(max_databases=1)
    run(api, s, CAP[name])
    assert s.proxy.refused["database-cap"] >= 1


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("api", ["blocking", pytest.param("aio", marks=pytest.mark.full)])
def test_a_replication_whose_target_is_past_the_cap_fails(
    api: str, cloudant_proxy: Callable[..., CloudantProxy], client: CloudantV1, db: str
) -> None:
    """replicate(create_target=True): the server's replicator creates the target, through the
    Cloudant-rules server (the endpoints are its URL), which refuses it at the cap; the
    replication fails, naming the target it was forbidden to make. (Signed in without IAM:
    CouchDB 3.4.3's replicator has no IAM plugin.)"""
    couchids.Database(client, db).create({"n": 0}, type="click", timestamp=T0)
    proxy = cloudant_proxy(plan=None, max_databases=0)
    target = f"{db}-edge"

    async def body(h: Handles, s: Any) -> None:
        job = await got(h.db(db).replicate(target, T0, END, type="click"))
        try:
            # The replicator's reason: "forbidden: <the target's URL>".
            with pytest.raises(ReplicationFailed, match=rf"forbidden: .*/{target}"):
                await got(job.wait(120))
        finally:
            await got(job.cancel())

    through = client_for(proxy.url)

    async def main() -> None:
        if api == "blocking":
            await body(Handles(api, through), None)
            return
        async with aio.AsyncClient(through) as ac:
            await body(Handles(api, through, ac), None)

    asyncio.run(main())
    assert proxy.refused["database-cap"] >= 1
    assert target not in client.get_all_dbs().get_result()
