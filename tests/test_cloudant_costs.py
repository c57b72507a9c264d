"""What each operation costs in IBM Cloudant's request classes, measured: each runs once
through the Cloudant-rules server (tests/cloudantproxy.py, without a rate limit) over a fixed
data set, and the units it spends of each class are those the table of
docs/guide/cloudant.md states, so that the table cannot drift from the code.

The data set: ``N`` documents of type ``click``, one a minute from ``T0``. Requests Cloudant
does not count (``GET /``, database information, ``_all_dbs``, creating a database) are in
no class. ``count`` and ``histogram`` read the window's ids; with ``index_only=True`` they read
offsets on CouchDB and Cloudant (PouchDB Server's ``offset`` is no row count): the table gives
that cost from their docstrings, checked on CouchDB, with the reads a partitioned database's
typed queries spend instead of global queries.
"""

from __future__ import annotations

import io
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from cloudantproxy import CloudantProxy
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids

Start = Callable[..., CloudantProxy]
Cost = tuple[int, int, int]  # global queries, reads, writes

#: The data set: N documents of type "click", one a minute from T0.
N = 100
T0 = datetime(2024, 5, 1, 23, 0, tzinfo=UTC)  # the data set crosses midnight
END = T0 + timedelta(minutes=N)


def made_at(doc: dict[str, Any]) -> datetime:
    return T0 + timedelta(minutes=doc["n"])


def fill(shop: couchids.Database | couchids.Series) -> None:
    shop.bulk_create(({"n": i} for i in range(N)), type="click", time_of=made_at)


def expire(shop: couchids.Database) -> None:
    shop.expire(T0 + timedelta(minutes=N // 2), type="click", dry_run=False)


#: Each operation of the table, run on a handle of the filled database (bulk_create on an
#: empty one), with what it spends: (global queries, reads, writes).
OPERATIONS: dict[str, tuple[Callable[[couchids.Database], object], Cost]] = {
    "bulk_create": (fill, (0, 0, 1)),
    "latest": (lambda shop: shop.latest(10, type="click"), (1, 0, 0)),
    "window": (lambda shop: list(shop.window(T0, END, type="click")), (1, 0, 0)),
    "count": (lambda shop: shop.count(T0, END, type="click"), (1, 0, 0)),
    "histogram": (lambda shop: shop.histogram(T0, END, every="10m", type="click"), (1, 0, 0)),
    "export": (lambda shop: shop.export(T0, END, out=io.StringIO(), type="click"), (1, 0, 0)),
    "bulk_create, batch_size=25": (
        lambda shop: shop.with_options(batch_size=25).bulk_create(
            ({"n": i} for i in range(N)), type="click", time_of=made_at
        ),
        (0, 0, 4),
    ),
    "window, batch_size=25": (
        lambda shop: list(
            shop.with_options(batch_size=25, parallel=1).window(T0, END, type="click")
        ),
        (5, 0, 0),
    ),
    "expire": (expire, (2, 0, 1)),
}


#: What the series window spends (see its test).
SERIES_WINDOW: Cost = (2, 0, 0)
PAGE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "cloudant.md"
#: A row of the page's table of costs: | `operation` | queries | reads | writes | ...
ROW = re.compile(r"^\| `([^`]+)` \| (\d+) \| (\d+) \| (\d+) \|", re.MULTILINE)


def test_the_page_states_the_measured_costs() -> None:
    """The table of docs/guide/cloudant.md holds one row per operation measured here, with
    the units measured."""
    stated = {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in ROW.finditer(PAGE.read_text())}
    measured = {name: cost for name, (_, cost) in OPERATIONS.items()}
    assert stated == {**measured, "Series.window": SERIES_WINDOW}


def spent(proxy: CloudantProxy) -> Cost:
    return proxy.counted["query"], proxy.counted["read"], proxy.counted["write"]


@pytest.mark.needs("pouchdb")
@pytest.mark.parametrize("name", OPERATIONS)
def test_what_an_operation_spends(
    name: str, cloudant_proxy: Start, client: CloudantV1, db: str
) -> None:
    run, cost = OPERATIONS[name]
    if name != "bulk_create":
        fill(couchids.Database(client, db))
    proxy = cloudant_proxy(plan=None)
    run(couchids.Database(client_for(proxy.url), db))
    assert spent(proxy) == cost


@pytest.mark.needs("pouchdb")
def test_a_series_window_asks_each_period_it_touches(
    cloudant_proxy: Start, client: CloudantV1
) -> None:
    """A daily series over the data set, which crosses midnight: two databases, one global
    query each."""
    prefix = f"costs{uuid.uuid4().hex[:12]}"
    try:
        fill(couchids.Series(client, prefix, every="day"))
        proxy = cloudant_proxy(plan=None)
        series = couchids.Series(client_for(proxy.url), prefix, every="day")
        assert len(list(series.window(T0, END, type="click"))) == N
        assert spent(proxy) == SERIES_WINDOW
    finally:
        for name in client.get_all_dbs().get_result():
            if name.startswith(prefix):
                client.delete_database(db=name)


def test_the_proxy_counts_the_units_it_admits(cloudant_proxy: Start, db: str) -> None:
    """One unit of a request's class for each request let through; none for a refused one,
    nor for a request in no class."""
    proxy = cloudant_proxy(plan="lite", clock=lambda: 1000.0)  # one instant: one window
    with requests.Session() as http:
        http.trust_env = False  # loopback only
        assert http.get(f"{proxy.url}/").ok
        assert http.get(f"{proxy.url}/{db}").ok
        assert http.put(f"{proxy.url}/{db}/a", json={}).status_code == 201
        assert http.get(f"{proxy.url}/{db}/a").ok
        assert http.get(f"{proxy.url}/{db}/_all_docs").ok
        assert spent(proxy) == (1, 1, 1)
        answers = [http.get(f"{proxy.url}/{db}/_all_docs").status_code for _ in range(6)]
    assert answers == [200] * 4 + [429] * 2  # Lite: 5 global queries a second
    assert spent(proxy) == (5, 1, 1)


@pytest.mark.needs("couchdb")
def test_on_couchdb_a_count_is_two_queries_and_a_partition_is_read(
    cloudant_proxy: Start, client: CloudantV1
) -> None:
    """What the page says of CouchDB and Cloudant: an index-only count is two ``limit=1``
    global queries on a database no one writes to, and a typed query of a partitioned
    database reads its partition (reads, no global query)."""
    names = [f"costs{uuid.uuid4().hex[:12]}", f"costs{uuid.uuid4().hex[:12]}"]
    client.put_database(db=names[0])
    client.put_database(db=names[1], partitioned=True)
    try:
        for name in names:
            fill(couchids.Database(client, name))
        proxy = cloudant_proxy(plan=None)
        plain = couchids.Database(client_for(proxy.url), names[0])
        assert plain.count(T0, END, type="click", index_only=True) == N
        assert spent(proxy) == (2, 0, 0)
        proxy.counted.clear()
        partitioned = couchids.Database(client_for(proxy.url), names[1])
        assert len(list(partitioned.with_options(parallel=1).window(T0, END, type="click"))) == N
        assert len(partitioned.latest(10, type="click")) == 10
        assert spent(proxy) == (0, 2, 0)
    finally:
        for name in names:
            client.delete_database(db=name)
