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
processes lose nothing and fail nowhere. The tests of both APIs are written once, in
tests/_async/test_series.py.
"""

from __future__ import annotations

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
from couchids import ALL_TYPES, KUUID, ULID
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


Planned = tuple[
    list[tuple[dict[str, Any], str | None, int]], list[tuple[str | None, list[dict[str, Any]]]]
]


def planned() -> Planned:
    """The documents of the module docstring: those written one by one, each with its type
    and time, and the bulk writes, one per type, each across every period (its batches cross
    them too)."""
    one_by_one: list[tuple[dict[str, Any], str | None, int]] = []
    bulk: list[tuple[dict[str, Any], str | None]] = []
    for day, start in enumerate(DAYS):
        if day == EMPTY_DAY:
            continue
        for n, (doc_type, offset) in enumerate(PLAN):
            doc = {"day": day, "n": n, "at": start + offset, "label": f"d{day}n{n}"}
            if n % 3 == 0:
                one_by_one.append((doc, doc_type, start + offset))
            else:
                bulk.append((doc, doc_type))
    groups = itertools.groupby(sorted(bulk, key=lambda pair: str(pair[1])), key=lambda p: p[1])
    return one_by_one, [(doc_type, [doc for doc, _ in group]) for doc_type, group in groups]


def write_data(client: CloudantV1, prefix: str) -> Truth:
    """The documents of the module docstring, written through couchids.Series, and the truth
    about them (tests/_async/test_series.py writes them through each API)."""
    series = couchids.Series(client, prefix, every="day")
    truth = Truth()
    one_by_one, bulk = planned()
    for doc, doc_type, at in one_by_one:
        truth.add(series.create(doc, type=doc_type, timestamp=at).id, doc, doc_type)
    for doc_type, docs in bulk:
        results = series.bulk_create(docs, type=doc_type, time_of=lambda d: d["at"])
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
    return write_data(client, prefix)


# -- writes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form", [couchids.KUUID_REVERSE, couchids.V7S, couchids.KUUID_MS], ids=lambda f: str(f.kind)
)
def test_weeks_across_an_iso_year_in_other_forms(
    client: CloudantV1, prefix: str, form: couchids.IdForm
) -> None:
    series = couchids.Series(client, prefix, every="week", form=form)
    times = ["2026-12-27T23:59:59.999Z", "2026-12-28", "2027-01-03T23:59:59Z", "2027-01-04"]
    docs = [{"n": n, "at": at} for n, at in enumerate(times)]
    made = [r.id for r in series.bulk_create(docs, type="t", time_of=lambda d: d["at"])]
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


def test_window_reads_the_first_page_of_the_next_period_ahead(
    prefix: str, data: Truth, couch_url: str
) -> None:
    start, end = WINDOWS[0]
    want = data.window(start, end, "a", False)
    with FaultProxy(couch_url) as proxy:
        series = couchids.Series(client_for(proxy.url), prefix, every="day")
        rows = series.with_options(batch_size=2, parallel=1).window(
            start, end, type="a", newest_first=False
        )
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
                    couchids.Database(one_by_one, day_name(prefix, day))
                    .with_options(batch_size=2, parallel=1)
                    .window(
                        DAYS[day],
                        DAYS[day] + DAY,
                        type="a",
                        newest_first=False,
                    )
                )
        assert len(proxy.requests("POST", "/_all_docs")) == len(reads)


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
    rows = series.with_options(batch_size=2, parallel=1).window(
        start, end, type="a", newest_first=False
    )
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
        series.export("2026-03-02", "2026-03-01", out=io.StringIO())
    with pytest.raises(couchids.InvalidArgumentError, match="ahead"):
        series.prepare(-1)
    with pytest.raises(couchids.InvalidArgumentError, match="ahead"):
        series.prepare(367)
    with pytest.raises(couchids.InvalidTimeError, match="past the last time a tid62 id"):
        couchids.Series(client, prefix, every="year", form=couchids.TID62).create(
            {}, timestamp="2200-01-01"
        )
    with pytest.raises(couchids.InvalidArgumentError, match="document 2 has a _rev"):
        series.bulk_create([{"at": 1}, {"at": 2}, {"_rev": "1-x"}], time_of=lambda d: d["at"])
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
