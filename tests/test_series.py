"""couchids.Series and couchids.aio.AsyncSeries against ground truth, on every test server.

A series of days holds documents over six days of March 2026 (the 4th has none, so no
database: a missing period in the middle), written through the series (one by one and in
bulk across periods), at the edges of each day (00:00:00, 00:00:01, 23:59:59) and in between,
of the types ``a`` and ``b``, untyped, and of the type ``ab`` (which starts like ``a``). Noise
the reads must not return, written straight into the period databases: a design document,
ULID ids of the type ``a`` and untyped, and strays (kuuid ids whose time lies in another
period than the database holding them). Databases of other series whose names look alike
sit beside them. Every read (``window`` both ways, with pages and slices, ``latest``,
``count``, ``histogram``, ``export``) must give what the truth, kept while writing, says;
``expire`` must drop exactly the databases of the whole days before the cutoff and delete
exactly the older documents of the day holding it, leave everything else as it was, and
change nothing when run again or as a dry run. Writers and ``prepare`` raced from several
processes lose nothing and fail nowhere.
"""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from faultproxy import FaultProxy, client_for
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import ALL_TYPES, KUUID, ULID, aio
from couchids.core.counting import bucket_edges, parse_every
from couchids.idforms.times import to_ms

TESTS = Path(__file__).resolve().parent
SECOND = 1000
HOUR = 3600 * SECOND
DAY = 24 * HOUR
#: The days of the data: 2026-03-01 ... 2026-03-07; the 4th holds nothing.
D0 = to_ms("2026-03-01")
DAYS = [D0 + n * DAY for n in range(7)]
EMPTY_DAY = 3
#: The documents of each day: (type, offset in the day); times are distinct across types.
PLAN = [
    ("a", 0),
    ("a", 0),
    ("a", SECOND),
    ("b", 3 * HOUR),
    (None, 9 * HOUR),
    ("a", 12 * HOUR),
    ("ab", 12 * HOUR + 30 * SECOND),
    ("b", 15 * HOUR),
    (None, 21 * HOUR),
    ("a", DAY - SECOND),
]


# -- the two APIs ---------------------------------------------------------------------------


class Blocking:
    """couchids.Series, its answers as they come (streams read into lists)."""

    name = "blocking"

    def __init__(self, client: CloudantV1, prefix: str, **options: Any) -> None:
        self.series = couchids.Series(client, prefix, **options)

    def __call__(self, method: str, *args: Any, **options: Any) -> Any:
        answer = getattr(self.series, method)(*args, **options)
        return list(answer) if method == "window" else answer

    def pages(self, *args: Any, **options: Any) -> list[list[Any]]:
        return list(self.series.window(*args, **options).pages())


class Async:
    """couchids.aio.AsyncSeries over an AsyncClient made from the same client, each call on a
    fresh event loop."""

    name = "aio"

    def __init__(self, client: CloudantV1, prefix: str, **options: Any) -> None:
        self.client, self.prefix, self.options = client, prefix, options

    def __call__(self, method: str, *args: Any, **options: Any) -> Any:
        async def main() -> Any:
            async with aio.AsyncClient(self.client) as ac:
                series = aio.AsyncSeries(ac, self.prefix, **self.options)
                answer = getattr(series, method)(*args, **options)
                if method == "window":
                    return [doc async for doc in answer]
                return await answer

        return asyncio.run(main())

    def pages(self, *args: Any, **options: Any) -> list[list[Any]]:
        async def main() -> Any:
            async with aio.AsyncClient(self.client) as ac:
                series = aio.AsyncSeries(ac, self.prefix, **self.options)
                return [page async for page in series.window(*args, **options).pages()]

        return asyncio.run(main())


API = [Blocking, Async]


@pytest.fixture(params=API, ids=lambda api: api.name)
def api(request: pytest.FixtureRequest) -> type[Blocking] | type[Async]:
    kind: type[Blocking] | type[Async] = request.param
    return kind


# -- the data -------------------------------------------------------------------------------


def all_dbs(client: CloudantV1) -> list[str]:
    names: list[str] = client.get_all_dbs().get_result()
    return names


def ours(client: CloudantV1, prefix: str) -> list[str]:
    return sorted(name for name in all_dbs(client) if name.startswith(prefix))


@pytest.fixture
def prefix(client: CloudantV1) -> Iterator[str]:
    """A prefix no other test uses; every database whose name starts with it is dropped after
    the test."""
    name = f"test_{uuid.uuid4().hex[:20]}"
    yield name
    for db in ours(client, name):
        try:
            client.delete_database(db=db)
        except ApiException as error:
            if error.status_code != 404:
                raise


def day_name(prefix: str, day: int) -> str:
    return f"{prefix}-2026-03-{day + 1:02d}"


@dataclass
class Truth:
    """What was written through the series: each document by id, with its type and time."""

    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    types: dict[str, str | None] = field(default_factory=dict)
    times: dict[str, int] = field(default_factory=dict)

    def add(self, doc_id: str, doc: dict[str, Any], doc_type: str | None) -> None:
        self.docs[doc_id] = doc
        self.types[doc_id] = doc_type
        self.times[doc_id] = KUUID.parse(doc_id.rpartition(":")[2])

    def window(self, start: int, end: int, doc_type: Any, newest_first: bool) -> list[str]:
        if doc_type is ALL_TYPES:
            wanted = [i for i, t in self.types.items() if t is not None]
        else:
            wanted = [i for i, t in self.types.items() if t == doc_type]
        inside = [i for i in wanted if start <= self.times[i] < end]
        inside.sort(key=lambda i: (self.times[i], i), reverse=newest_first)
        return inside


def write_data(client: CloudantV1, prefix: str, api: type[Blocking] | type[Async]) -> Truth:
    """The documents of the module docstring, and the truth about them."""
    series = api(client, prefix, every="day")
    truth = Truth()
    bulk: list[tuple[dict[str, Any], str | None]] = []
    for day, start in enumerate(DAYS):
        if day == EMPTY_DAY:
            continue
        for n, (doc_type, offset) in enumerate(PLAN):
            doc = {"day": day, "n": n, "at": start + offset, "label": f"d{day}n{n}"}
            if n % 3 == 0:
                result = series("create", doc, type=doc_type, timestamp=start + offset)
                truth.add(result.id, doc, doc_type)
            else:
                bulk.append((doc, doc_type))
    # One bulk write per type, each across every period (its batches cross them too).
    for doc_type, group in itertools.groupby(
        sorted(bulk, key=lambda pair: str(pair[1])), key=lambda pair: pair[1]
    ):
        docs = [doc for doc, _ in group]
        results = series("bulk_create", docs, type=doc_type, timestamp=lambda d: d["at"])
        for doc, result in zip(docs, results, strict=True):
            truth.add(result.id, doc, doc_type)
    noise(client, prefix)
    return truth


def noise(client: CloudantV1, prefix: str) -> None:
    """What no read of the series may return, written straight into its databases, and
    databases of other series whose names look like its own."""
    two = couchids.Database(client, day_name(prefix, 2))
    client.put_design_document(
        db=two.name, ddoc="x", design_document={"views": {"v": {"map": "function(d){}"}}}
    )
    at = DAYS[2] + 10 * HOUR
    for doc_id in (ULID.new(at, type="a"), ULID.new(at), "a:hello", "zzz"):
        client.put_document(db=two.name, doc_id=doc_id, document={"noise": True})
    # Strays: in day 1's database a document of day 5, in day 4's one of day 2.
    for day, other in ((1, 5), (4, 2)):
        stray = KUUID.new(DAYS[other] + 5 * HOUR + 17 * SECOND, type="a")
        client.put_document(db=day_name(prefix, day), doc_id=stray, document={"stray": True})
    for name in (f"{prefix}-x-2026-03-02", f"{prefix}-2026-03", f"{prefix}-2026-03-02-copy"):
        client.put_database(db=name)
        client.put_document(db=name, doc_id=KUUID.new(DAYS[1], type="a"), document={})


def snapshot(client: CloudantV1, prefix: str) -> dict[str, dict[str, str]]:
    """Every database whose name starts with ``prefix``, with each document's revision."""
    found = {}
    for name in ours(client, prefix):
        rows = client.post_all_docs(db=name).get_result()["rows"]
        found[name] = {row["id"]: row["value"]["rev"] for row in rows}
    return found


@pytest.fixture
def data(client: CloudantV1, prefix: str) -> Truth:
    return write_data(client, prefix, Blocking)


# -- writes -----------------------------------------------------------------------------------


def test_writes_go_to_the_database_of_their_period_and_make_it(
    client: CloudantV1, prefix: str, api: type[Blocking] | type[Async]
) -> None:
    truth = write_data(client, prefix, api)
    days = [day_name(prefix, day) for day in range(7) if day != EMPTY_DAY]
    others = [f"{prefix}-2026-03", f"{prefix}-2026-03-02-copy", f"{prefix}-x-2026-03-02"]
    assert ours(client, prefix) == sorted(days + others)
    series = api(client, prefix, every="day")
    assert series("databases") == days
    for day, name in enumerate(day_name(prefix, d) for d in range(7)):
        if day == EMPTY_DAY:
            continue
        stored = {row["id"] for row in client.post_all_docs(db=name).get_result()["rows"]}
        mine = {i for i, t in truth.times.items() if DAYS[day] <= t < DAYS[day] + DAY}
        assert len(mine) == len(PLAN) and mine <= stored
    assert len(truth.docs) == len(PLAN) * 6


def test_bulk_results_keep_input_order_across_periods(
    client: CloudantV1, prefix: str, api: type[Blocking] | type[Async]
) -> None:
    series = api(client, prefix, every="month")
    times = [
        "2026-03-31T23:59:59Z",
        "2026-01-15",
        "2026-04-01T00:00:00Z",
        "2026-03-01",
        "2026-01-31",
    ]
    docs = [{"n": n, "at": at} for n, at in enumerate(times)]
    results = series("bulk_create", docs, type="t", timestamp=lambda d: d["at"], batch_size=1)
    assert [KUUID.parse(r.id[2:]) for r in results] == [to_ms(at) // 1000 * 1000 for at in times]
    assert series("databases") == [f"{prefix}-2026-01", f"{prefix}-2026-03", f"{prefix}-2026-04"]
    newest = series("window", "2026-01-01", "2026-05-01", type="t")
    assert [d["n"] for d in newest] == [2, 0, 3, 4, 1]
    # An own _id routes by its time; create_short by its day; a keyed id needs its time.
    own = KUUID.new("2026-02-10T10:00:00Z", type="t")
    assert series("create", {"_id": own}).id == own
    short = series("create_short", {"s": 1}, timestamp="2026-05-31T23:00:00Z")
    assert short.id.startswith("260531-")
    assert series("databases")[-1] == f"{prefix}-2026-05"
    assert f"{prefix}-2026-02" in series("databases")
    with pytest.raises(couchids.InvalidArgumentError, match="key= needs timestamp="):
        series("bulk_create", [{}], key=lambda d: "k")
    with pytest.raises(
        couchids.InvalidArgumentError, match="a keyed id needs the document's own time"
    ):
        series("create", {}, key="k")
    keyed = series("create", {"k": 1}, type="t", key="job-1", timestamp="2026-06-01T00:00:00Z")
    again = series("create", {"k": 1}, type="t", key="job-1", timestamp="2026-06-01T00:00:00Z")
    assert again.id == keyed.id and again.duplicate


@pytest.mark.parametrize(
    "form", [couchids.KUUID_REVERSE, couchids.V7S, couchids.KUUID_MS], ids=lambda f: str(f.kind)
)
def test_weeks_across_an_iso_year_in_other_forms(
    client: CloudantV1, prefix: str, form: couchids.IdForm
) -> None:
    series = couchids.Series(client, prefix, every="week", form=form)
    times = ["2026-12-27T23:59:59.999Z", "2026-12-28", "2027-01-03T23:59:59Z", "2027-01-04"]
    docs = [{"n": n, "at": at} for n, at in enumerate(times)]
    made = [r.id for r in series.bulk_create(docs, type="t", timestamp=lambda d: d["at"])]
    assert series.databases() == [f"{prefix}-2026-w52", f"{prefix}-2026-w53", f"{prefix}-2027-w01"]
    for newest_first in (True, False):
        got = series.window("2026-12-27", "2027-01-05", type="t", newest_first=newest_first)
        assert [d["n"] for d in got] == ([3, 2, 1, 0] if newest_first else [0, 1, 2, 3])
    assert [d["_id"] for d in series.latest(3, type="t")] == made[::-1][:3]
    assert series.count("2026-12-28", "2027-01-04", type="t") == 2
    report = series.expire("2027-01-01", dry_run=False)
    assert report.dropped == [f"{prefix}-2026-w52"] and report.deleted == 1
    assert [d["n"] for d in series.window(0, "2028-01-01", type="t", newest_first=False)] == [2, 3]


def test_a_late_write_makes_a_dropped_period_again_and_expire_drops_it_again(
    client: CloudantV1, prefix: str
) -> None:
    series = couchids.Series(client, prefix, every="day")
    series.create({}, type="t", timestamp=DAYS[0] + HOUR)
    series.create({}, type="t", timestamp=DAYS[2] + HOUR)
    assert series.expire(DAYS[1], dry_run=False).dropped == [day_name(prefix, 0)]
    late = series.create({"late": True}, type="t", timestamp=DAYS[0] + 2 * HOUR)
    assert series.databases() == [day_name(prefix, 0), day_name(prefix, 2)]
    assert [d["_id"] for d in series.window(DAYS[0], DAYS[1], type="t")] == [late.id]
    assert series.expire(DAYS[1], dry_run=False).dropped == [day_name(prefix, 0)]
    assert series.databases() == [day_name(prefix, 2)]


# -- reads ------------------------------------------------------------------------------------

WINDOWS = [
    (DAYS[0], DAYS[6] + DAY),  # everything
    (DAYS[1] + 12 * HOUR, DAYS[5] + SECOND),  # across periods, ends after 00:00:00
    (DAYS[2] + DAY - SECOND, DAYS[4] + SECOND),  # across the missing day, edge to edge
    (DAYS[2] + DAY - SECOND + 1, DAYS[4]),  # ends where a period starts
    (DAYS[4] + 6 * HOUR, DAYS[4] + 12 * HOUR),  # inside one period
    (DAYS[2] + 10 * HOUR, DAYS[2] + 10 * HOUR),  # empty
    (to_ms("2026-01-01"), to_ms("2026-02-01")),  # before the series
    (to_ms("2020-01-01"), DAYS[2]),  # from before the series
    (DAYS[5], None),  # to now
]
TYPES = ["a", "b", None, ALL_TYPES]


def test_window_across_periods_is_the_truth_both_ways(
    client: CloudantV1, prefix: str, data: Truth, api: type[Blocking] | type[Async]
) -> None:
    series = api(client, prefix, every="day")
    for (start, end), doc_type, newest_first in itertools.product(WINDOWS, TYPES, (True, False)):
        want = data.window(start, end or to_ms(None), doc_type, newest_first)
        got = series("window", start, end, type=doc_type, newest_first=newest_first)
        assert [d["_id"] for d in got] == want, (start, end, doc_type, newest_first)
        if want:
            assert got[0] == {"_rev": got[0]["_rev"], "_id": want[0], **data.docs[want[0]]}


def test_window_pages_slices_and_rows(
    client: CloudantV1, prefix: str, data: Truth, api: type[Blocking] | type[Async]
) -> None:
    series = api(client, prefix, every="day")
    start, end = WINDOWS[0]
    for newest_first, parallel in itertools.product((True, False), (1, 3)):
        want = data.window(start, end, "a", newest_first)
        pages = series.pages(
            start, end, type="a", newest_first=newest_first, batch_size=2, parallel=parallel
        )
        assert [d["_id"] for page in pages for d in page] == want
        assert max(len(page) for page in pages) <= 2
        rows = series("window", start, end, type="a", newest_first=newest_first, include_docs=False)
        assert [row["id"] for row in rows] == want and "value" in rows[0]


def test_window_reads_the_first_page_of_the_next_period_ahead(
    prefix: str, data: Truth, couch_url: str
) -> None:
    start, end = WINDOWS[0]
    want = data.window(start, end, "a", False)
    with FaultProxy(couch_url) as proxy:
        series = couchids.Series(client_for(proxy.url), prefix, every="day")
        rows = series.window(start, end, type="a", newest_first=False, batch_size=2, parallel=1)
        got = [next(rows)["_id"]]  # the caller holds day 0's first page

        def asked(day: int) -> int:
            return len(proxy.requests("POST", f"/{day_name(prefix, day)}/_all_docs"))

        # Day 1's first request is sent while the caller works through day 0, none of day 2's.
        deadline = time.monotonic() + 60
        while not asked(1) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (asked(1), asked(2)) == (1, 0)
        got += [d["_id"] for d in rows]
        reads = proxy.requests("POST", "/_all_docs")
    assert got == want
    # Read ahead, not read twice: as many requests as reading each day's database in turn.
    with FaultProxy(couch_url) as proxy:
        one_by_one = client_for(proxy.url)
        names = couchids.Series(one_by_one, prefix, every="day").databases()
        for day in range(len(DAYS)):
            if day_name(prefix, day) in names:
                list(
                    couchids.Database(one_by_one, day_name(prefix, day)).window(
                        DAYS[day],
                        DAYS[day] + DAY,
                        type="a",
                        newest_first=False,
                        batch_size=2,
                        parallel=1,
                    )
                )
        assert len(proxy.requests("POST", "/_all_docs")) == len(reads)


def test_latest_spans_periods(
    client: CloudantV1, prefix: str, data: Truth, api: type[Blocking] | type[Async]
) -> None:
    series = api(client, prefix, every="day")
    for doc_type, n in itertools.product(TYPES, (0, 1, 4, 7, 13, 100)):
        want = data.window(0, to_ms(None), doc_type, True)[:n]
        got = series("latest", n, type=doc_type)
        assert [d["_id"] for d in got] == want, (doc_type, n)


def test_count_and_histogram_are_the_truth(
    client: CloudantV1, prefix: str, data: Truth, api: type[Blocking] | type[Async]
) -> None:
    series = api(client, prefix, every="day")
    for (start, end), doc_type in itertools.product(WINDOWS, ["a", "b", None]):
        want = len(data.window(start, end or to_ms(None), doc_type, False))
        assert series("count", start, end, type=doc_type) == want, (start, end, doc_type)
    assert series("count", *WINDOWS[0], type="a", exact=True) == len(
        data.window(*WINDOWS[0], "a", False)
    )
    for (start, end), every, doc_type in itertools.product(
        [WINDOWS[0], WINDOWS[1], WINDOWS[2], WINDOWS[5]], ["5h", "1d", "7d", "1w"], ["a", None]
    ):
        got = series("histogram", start, end, every=every, type=doc_type)
        edges = bucket_edges(start, end, parse_every(every))
        assert [(to_ms(b.start), to_ms(b.end)) for b in got] == list(itertools.pairwise(edges))
        counts = [len(data.window(a, b, doc_type, False)) for a, b in itertools.pairwise(edges)]
        assert [b.count for b in got] == counts, (start, end, every, doc_type)


def test_export_is_that_of_one_database_holding_every_period(
    client: CloudantV1, prefix: str, data: Truth, api: type[Blocking] | type[Async], db: str
) -> None:
    series = api(client, prefix, every="day")
    whole = couchids.Database(client, db)
    whole.bulk_create([{"_id": i, **doc} for i, doc in data.docs.items()])
    start, end = WINDOWS[1]
    for format, fields in (("ndjson", None), ("csv", ["_id", "label", "at"])):
        out, one = io.StringIO(), io.StringIO()
        mark = series("export", start, end, out, type="a", format=format, fields=fields)
        whole.export(start, end, one, type="a", format=format, fields=fields)
        assert mark.done == len(data.window(start, end, "a", False)) > 5
        if format == "ndjson":
            assert [_no_rev(line) for line in out.getvalue().splitlines()] == [
                _no_rev(line) for line in one.getvalue().splitlines()
            ]
        else:
            assert out.getvalue() == one.getvalue()
            assert next(csv.reader(io.StringIO(out.getvalue()))) == fields
    # Stopped after a page, then resumed with its checkpoint: the same lines, once each.
    full = io.StringIO()
    series("export", start, end, full, type="a", batch_size=2, parallel=1)
    part, mark = io.StringIO(), couchids.Checkpoint()

    def stop(checkpoint: couchids.Checkpoint) -> None:
        if checkpoint.done >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        series(
            "export", start, end, part, type="a", checkpoint=mark, on_progress=stop, batch_size=2
        )
    assert 3 <= mark.done < len(data.window(start, end, "a", False))
    series("export", start, end, part, type="a", checkpoint=mark, batch_size=2)
    assert part.getvalue() == full.getvalue()


def _no_rev(line: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(line)
    doc.pop("_rev")
    return doc


def test_a_missing_or_dropped_period_is_empty_but_a_failure_is_raised(
    client: CloudantV1, prefix: str, data: Truth, couch_url: str
) -> None:
    series = couchids.Series(client, prefix, every="day")
    start, end = WINDOWS[0]
    client.delete_database(db=day_name(prefix, 5))
    gone = {i for i, t in data.times.items() if DAYS[5] <= t < DAYS[6]}
    want = [i for i in data.window(start, end, "a", False) if i not in gone]
    assert [d["_id"] for d in series.window(start, end, type="a", newest_first=False)] == want
    assert series.count(start, end, type="a") == len(want)
    assert sum(b.count for b in series.histogram(start, end, every="1d", type="a")) == len(want)
    # Dropped while the window is read: the pages of day 0 come (and the first of day 1, read
    # ahead), then day 2 is dropped before its turn.
    rows = series.window(start, end, type="a", newest_first=False, batch_size=2, parallel=1)
    first = [next(rows)["_id"]]
    client.delete_database(db=day_name(prefix, 2))
    rest = [d["_id"] for d in rows]
    gone |= {i for i, t in data.times.items() if DAYS[2] <= t < DAYS[3]}
    day0 = [i for i in want if data.times[i] < DAYS[1]]
    assert first + rest[: len(day0) - 1] == day0
    assert rest[len(day0) - 1 :] == [i for i in want if i not in gone and i not in day0]
    # Any other failure of the server is raised, never "no documents".
    with FaultProxy(couch_url) as proxy:
        failing = couchids.Series(client_for(proxy.url), prefix, every="day")
        proxy.fail("503-before", method="POST", path=day_name(prefix, 4) + "/_all_docs", times=50)
        with pytest.raises(couchids.ServerError, match="503") as raised:
            list(failing.window(start, end, type="a"))
        assert not isinstance(raised.value, couchids.DatabaseNotFoundError)
        with pytest.raises(couchids.ServerError, match="503"):
            failing.latest(100, type="a")
        proxy.fail("503-before", method="GET", path="_all_dbs", times=50)
        with pytest.raises(couchids.ServerError, match="503"):
            failing.count(start, end, type="a")


# -- retention --------------------------------------------------------------------------------


def test_expire_drops_whole_periods_and_expires_the_boundary(
    client: CloudantV1, prefix: str, data: Truth, api: type[Blocking] | type[Async]
) -> None:
    series = api(client, prefix, every="day")
    before = DAYS[2] + 6 * HOUR
    old = snapshot(client, prefix)
    boundary, later = day_name(prefix, 2), day_name(prefix, 4)
    goes = sorted(
        i for i, t in data.times.items() if DAYS[2] <= t < before and data.types[i] is not None
    )
    # Day 4's database holds a stray of day 2, before the cutoff: it goes too.
    stray = [i for i in old[later] if i not in data.times]
    assert len(stray) == 1 and KUUID.parse(stray[0][2:]) < before
    # The noise of day 2 holds no time the series reads: kept, and named.
    unread = sorted(i for i in old[boundary] if i not in data.times and i != "_design/x")
    assert len(unread) == 4 and "zzz" in unread
    dry = series("expire", before)
    assert dry.dry_run and dry.dropped == [day_name(prefix, 0), day_name(prefix, 1)]
    assert dry.boundary == boundary and dry.deleted == len(goes) + 1 == 5
    assert sorted(dry.unread) == unread
    assert {db: each.matched for db, each in dry.expired.items()} == {boundary: 4, later: 1}
    assert snapshot(client, prefix) == old
    done = series("expire", before, dry_run=False)
    assert (done.dropped, done.boundary, done.deleted) == (dry.dropped, boundary, 5)
    assert {db: each.deleted for db, each in done.expired.items()} == {boundary: 4, later: 1}
    assert done.unread == dry.unread and not done.conflicts and not done.failed
    after = snapshot(client, prefix)
    assert sorted(set(old) - set(after)) == dry.dropped
    assert after[boundary] == {i: r for i, r in old[boundary].items() if i not in goes}
    assert "_design/x" in after[boundary] and "zzz" in after[boundary]
    assert after[later] == {i: r for i, r in old[later].items() if i not in stray}
    for name in set(after) - {boundary, later}:
        assert after[name] == old[name], name  # other series, later days
    rest = [i for i in data.window(0, DAYS[6] + DAY, ALL_TYPES, False) if data.times[i] >= before]
    assert [d["_id"] for d in series("window", 0, None, type=ALL_TYPES, newest_first=False)] == rest
    again = series("expire", before, dry_run=False)
    assert (again.dropped, again.deleted) == ([], 0) and snapshot(client, prefix) == after
    assert again.unread == done.unread
    # Everything: only the series' own databases go, never another series' that look alike.
    series("expire", "2027-01-01", dry_run=False)
    assert ours(client, prefix) == sorted(
        [f"{prefix}-2026-03", f"{prefix}-2026-03-02-copy", f"{prefix}-x-2026-03-02"]
    )


#: The retention test's cutoff: 06:00 of day 2, the boundary period.
CUTOFF = DAYS[2] + 6 * HOUR


def time_in(doc_id: str) -> int | None:
    """The time the test itself reads in an id it wrote: a short id's UTC day (20YY), or the
    time of a kuuid id, typed or not; ``None`` for anything else."""
    if re.fullmatch(r"[0-9]{6}-[a-z]{2,3}", doc_id):
        return to_ms(f"20{doc_id[:2]}-{doc_id[2:4]}-{doc_id[4:6]}")
    body = doc_id.rpartition(":")[2]
    if len(body) != 32:
        return None
    try:
        return KUUID.parse(body)
    except couchids.InvalidIdError:
        return None


def test_expire_leaves_no_older_document_whatever_wrote_it(
    client: CloudantV1, prefix: str, api: type[Blocking] | type[Async]
) -> None:
    series = api(client, prefix, every="day")
    offsets = [0, 5 * HOUR, 6 * HOUR - SECOND, 6 * HOUR, DAY - SECOND]
    times = [DAYS[day] + offset for day in (0, 2, 4) for offset in offsets]
    # Every write method of the series, at each time: typed, untyped, keyed, short ids.
    for n, at in enumerate(times):
        series("create", {"n": n}, type="t", timestamp=at)
        series("create", {"n": n}, timestamp=at)
        series("create", {"n": n}, type="k", key=f"job-{n}", timestamp=at)
        series("create_short", {"n": n}, timestamp=at)
    docs = [{"n": n, "at": at} for n, at in enumerate(times)]
    series("bulk_create", docs, type="b", timestamp=lambda d: d["at"])
    series("bulk_create", docs, timestamp=lambda d: d["at"])
    series(
        "bulk_create", docs, type="kb", key=lambda d: f"row-{d['n']}", timestamp=lambda d: d["at"]
    )
    series("bulk_create", [{"_id": KUUID.new(at, type="own")} for at in times])
    boundary, later = day_name(prefix, 2), day_name(prefix, 4)
    # Stored by hand: older documents in a later period's database, a newer one in the
    # boundary's, ids whose time the series cannot read, and a design document.
    strays = couchids.Database(client, later)
    strays.create({}, type="t", timestamp=DAYS[1] + HOUR)
    strays.create({}, timestamp=DAYS[2] + HOUR)
    strays.create_short({}, timestamp=DAYS[2] + HOUR)
    strays.create_short({}, timestamp=DAYS[5] + HOUR)
    client.put_document(db=later, doc_id="zzz", document={})
    couchids.Database(client, boundary).create({}, type="t", timestamp=DAYS[4] + HOUR)
    unreadable = sorted(["import-7", ULID.new(DAYS[2] + HOUR, type="t")])
    for doc_id in unreadable:
        client.put_document(db=boundary, doc_id=doc_id, document={})
    client.put_design_document(db=boundary, ddoc="v", design_document={"views": {}})
    old = snapshot(client, prefix)
    assert sorted(old) == [day_name(prefix, 0), boundary, later]
    goes = {
        name: {i for i in old[name] if (t := time_in(i)) is not None and t < CUTOFF}
        for name in (boundary, later)
    }
    # Seven writers' ids of each time of day 2 before 06:00, and every short id of day 2:
    # a short id holds its day, which starts before the cutoff.
    shorts = {i for i in goes[boundary] if "-" in i}
    assert (len(goes[boundary]), len(shorts), len(goes[later])) == (7 * 3 + 5, 5, 3)

    dry = series("expire", CUTOFF)
    assert snapshot(client, prefix) == old
    done = series("expire", CUTOFF, dry_run=False)
    for report in (dry, done):
        assert report.dropped == [day_name(prefix, 0)] and report.boundary == boundary
        assert report.deleted == len(goes[boundary]) + len(goes[later])
        assert sorted(report.unread) == unreadable
    assert {name: each.matched for name, each in dry.expired.items()} == {
        name: len(ids) for name, ids in goes.items()
    }
    assert {name: each.deleted for name, each in done.expired.items()} == {
        name: len(ids) for name, ids in goes.items()
    }
    assert not done.conflicts and not done.failed
    # Every database of the series, read whole: no id of a time before the cutoff is left,
    # and everything else is as it was.
    after = snapshot(client, prefix)
    assert sorted(after) == [boundary, later] == series("databases")
    for name, held in after.items():
        for doc_id in held:
            at = time_in(doc_id)
            assert at is None or at >= CUTOFF, (name, doc_id)
        assert held == {i: r for i, r in old[name].items() if i not in goes[name]}
    again = series("expire", CUTOFF, dry_run=False)
    assert (again.dropped, again.deleted, sorted(again.unread)) == ([], 0, unreadable)
    assert snapshot(client, prefix) == after


def test_expire_refuses_to_drop_what_is_not_a_period_of_the_series_before_the_cutoff() -> None:
    from couchids.core.series import SeriesLayout, drop_database

    layout = SeriesLayout("events", "day", KUUID)
    cutoff = to_ms("2026-03-02")
    for name, why in (
        ("events-2026-03", "no database of the series"),
        ("events-x-2026-03-01", "no database of the series"),
        ("events-2026-03-02", "after 2026-03-02"),
    ):
        with pytest.raises(couchids.InvalidArgumentError, match=why):
            next(drop_database({}, layout, name, cutoff, None))  # type: ignore[arg-type]
    sent = next(drop_database({}, layout, "events-2026-03-01", cutoff, None))  # type: ignore[arg-type]
    assert sent.request.sent == "DELETE /events-2026-03-01"  # type: ignore[union-attr]


# -- races ------------------------------------------------------------------------------------


def _race(couch_url: str, prefix: str, jobs: list[list[str]]) -> list[Any]:
    at = time.time() + 3.0
    env_path = f"{TESTS}:{TESTS.parent / 'scripts'}"
    procs = [
        subprocess.Popen(
            [sys.executable, str(TESTS / "series_job.py"), couch_url, prefix, *job, str(at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        )
        for job in jobs
    ]
    answers = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        answers.append(json.loads(out.strip().splitlines()[-1]))
    return answers


def test_writers_in_several_processes_across_a_boundary_lose_nothing(
    client: CloudantV1, prefix: str, couch_url: str
) -> None:
    # Four writers, each 40 documents a second apart across the end of 2026-03-01 (and so
    # into a day whose database none of them prepared).
    first = DAYS[1] - 20 * SECOND
    jobs = [["day", "write", "40", str(first + w * 250), str(SECOND)] for w in range(4)]
    written = _race(couch_url, prefix, jobs)
    ids = [doc_id for job in written for doc_id in job]
    assert len(ids) == len(set(ids)) == 160
    series = couchids.Series(client, prefix, every="day")
    assert series.databases() == [day_name(prefix, 0), day_name(prefix, 1)]
    assert ours(client, prefix) == [day_name(prefix, 0), day_name(prefix, 1)]
    found = [d["_id"] for d in series.window(DAYS[0], DAYS[2], type="w", newest_first=False)]
    assert found == sorted(ids, key=lambda i: (KUUID.parse(i[2:]), i))
    before = [i for i in ids if KUUID.parse(i[2:]) < DAYS[1]]
    assert len(before) == 80
    stored = client.post_all_docs(db=day_name(prefix, 0)).get_result()["rows"]
    assert sorted(row["id"] for row in stored) == sorted(before)


def test_prepare_raced_from_several_processes_succeeds_everywhere(
    client: CloudantV1, prefix: str, couch_url: str
) -> None:
    answers = _race(couch_url, prefix, [["week", "prepare", "3"]] * 5)
    assert len({tuple(a) for a in answers}) == 1 and len(answers[0]) == 4
    assert ours(client, prefix) == answers[0]
    assert couchids.Series(client, prefix, every="week").prepare(3) == answers[0]
    now = couchids.Series(client, prefix, every="week").database().name
    assert answers[0][0] == now and now.startswith(f"{prefix}-20")


def test_a_create_answered_with_5xx_or_202_is_checked_not_failed(
    client: CloudantV1, prefix: str, couch_url: str
) -> None:
    # A cluster that made the database can still answer a racing create with a 500 (or 202):
    # the database is there, and that is what counts. One that was not made raises.
    database = rf"^/{prefix}-[0-9]{{4}}(\?|$)"
    with FaultProxy(couch_url) as proxy:
        series = couchids.Series(client_for(proxy.url), prefix, every="year")
        proxy.fail("503-after", method="PUT", path=database, times=5)  # every attempt
        assert series.prepare(0) == [series.database().name]
        puts = proxy.requests("PUT", database)
        assert len(puts) == 5 and {entry.outcome for entry in puts} == {"503-after"}
        assert len(proxy.requests("GET", database)) == 1  # which said it exists
        proxy.fail("202-after", method="PUT", path=database, times=1)
        result = series.create({}, type="t", timestamp="2027-06-01")
        assert series.databases() == [series.database().name, f"{prefix}-2027"]
        assert series.latest(1, type="t")[0]["_id"] == result.id
        proxy.fail("503-before", method="PUT", path=database, times=5)
        with pytest.raises(couchids.ServerError, match="503") as raised:
            series.create({}, type="t", timestamp="2028-06-01")
        assert raised.value.status == 503
    assert f"{prefix}-2028" not in all_dbs(client)


# -- bad input and partitions -----------------------------------------------------------------


def test_bad_input_is_a_clear_error_and_creates_nothing(client: CloudantV1, prefix: str) -> None:
    before = set(all_dbs(client))
    for every in ("days", "hour", "", None):
        with pytest.raises(couchids.InvalidArgumentError, match="'day', 'week'"):
            couchids.Series(client, prefix, every=every)  # type: ignore[arg-type]
    for bad in ("Events", "1x", "_x", "x.y", "", "x" * 231):
        with pytest.raises(couchids.InvalidArgumentError, match="cannot start a database name"):
            couchids.Series(client, bad)
    with pytest.raises(couchids.InvalidArgumentError, match="CloudantV1"):
        couchids.Series(object(), prefix)  # type: ignore[arg-type]
    with pytest.raises(couchids.InvalidArgumentError, match="pass an id form"):
        couchids.Series(client, prefix, form="kuuid")  # type: ignore[arg-type]
    series = couchids.Series(client, prefix, every="day")
    with pytest.raises(couchids.InvalidTimeError, match="before it starts"):
        series.window("2026-03-02", "2026-03-01")
    with pytest.raises(couchids.InvalidTimeError, match="before it starts"):
        series.count("2026-03-02", "2026-03-01")
    with pytest.raises(couchids.InvalidTimeError, match="before it starts"):
        series.histogram("2026-03-02", "2026-03-01")
    with pytest.raises(couchids.InvalidTimeError, match="before it starts"):
        series.export("2026-03-02", "2026-03-01", io.StringIO())
    with pytest.raises(couchids.InvalidArgumentError, match="ahead"):
        series.prepare(-1)
    with pytest.raises(couchids.InvalidArgumentError, match="ahead"):
        series.prepare(367)
    with pytest.raises(couchids.InvalidTimeError, match="past the last time a tid62 id"):
        couchids.Series(client, prefix, every="year", form=couchids.TID62).create(
            {}, timestamp="2200-01-01"
        )
    with pytest.raises(couchids.InvalidArgumentError, match="document 2 has a _rev"):
        series.bulk_create([{"at": 1}, {"at": 2}, {"_rev": "1-x"}], timestamp=lambda d: d["at"])
    with pytest.raises(couchids.InvalidArgumentError, match="is not a kuuid id"):
        series.create({"_id": "hello"})
    with pytest.raises(couchids.InvalidArgumentError, match="dry_run"):
        series.expire("2026-01-01", dry_run="no")  # type: ignore[arg-type]
    assert set(all_dbs(client)) == before


@pytest.mark.needs("couchdb")
def test_a_partitioned_series(client: CloudantV1, prefix: str) -> None:
    series = couchids.Series(client, prefix, every="month", partitioned=True)
    made = series.prepare(0)
    assert client.get_database_information(db=made[0]).get_result()["props"] == {
        "partitioned": True
    }
    late = series.create({"v": 1}, type="sensor-7", timestamp="2026-01-05")
    info = client.get_database_information(db=f"{prefix}-2026-01").get_result()
    assert info["props"] == {"partitioned": True}
    assert [d["_id"] for d in series.window("2026-01-01", None, type="sensor-7")] == [late.id]
