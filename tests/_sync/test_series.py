# Generated from tests/_async/test_series.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""couchids.aio.AsyncSeries and, in the generated twin, couchids.Series against the ground truth
of tests/test_series.py, on every test server: writes go to the database of their period, and
every read (``window`` both ways, with pages and slices, ``latest``, ``count``, ``histogram``,
``export``) and ``expire`` give what the truth says. (The data, the tests of one API alone and
the races between processes are in tests/test_series.py.)
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import uuid
from collections.abc import Callable, Iterator

import pytest
from faultproxy import FaultProxy, client_for
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1
from test_series import (
    CUTOFF,
    DAY,
    DAYS,
    EMPTY_DAY,
    HOUR,
    PLAN,
    SECOND,
    TYPES,
    WINDOWS,
    Truth,
    _no_rev,
    day_name,
    noise,
    ours,
    planned,
    snapshot,
    time_in,
    write_data,
)

import couchids
from couchids import ALL_TYPES, KUUID, ULID, Series
from couchids.core.counting import bucket_edges, parse_every
from couchids.idforms.times import to_ms

from .helpers import listed, series_of


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


@pytest.fixture
def data(client: CloudantV1, prefix: str) -> Truth:
    return write_data(client, prefix)


def written(series: Series, client: CloudantV1, prefix: str) -> Truth:
    """The documents of tests/test_series.py's docstring, written through ``series``, and the
    truth about them."""
    truth = Truth()
    one_by_one, bulk = planned()
    for doc, doc_type, at in one_by_one:
        truth.add((series.create(doc, type=doc_type, timestamp=at)).id, doc, doc_type)
    for doc_type, docs in bulk:
        results = series.bulk_create(docs, type=doc_type, time_of=lambda d: d["at"])
        for doc, result in zip(docs, results, strict=True):
            truth.add(result.id, doc, doc_type)
    noise(client, prefix)
    return truth


def test_writes_go_to_the_database_of_their_period_and_make_it(
    client: CloudantV1, prefix: str, blocking_client: CloudantV1
) -> None:
    truth = written(series_of(blocking_client, prefix, every="day"), client, prefix)
    days = [day_name(prefix, day) for day in range(7) if day != EMPTY_DAY]
    others = [f"{prefix}-2026-03", f"{prefix}-2026-03-02-copy", f"{prefix}-x-2026-03-02"]
    assert ours(client, prefix) == sorted(days + others)
    series = series_of(blocking_client, prefix, every="day")
    assert series.databases() == days
    for day, name in enumerate(day_name(prefix, d) for d in range(7)):
        if day == EMPTY_DAY:
            continue
        stored = {row["id"] for row in client.post_all_docs(db=name).get_result()["rows"]}
        mine = {i for i, t in truth.times.items() if DAYS[day] <= t < DAYS[day] + DAY}
        assert len(mine) == len(PLAN) and mine <= stored
    assert len(truth.docs) == len(PLAN) * 6


def test_bulk_results_keep_input_order_across_periods(
    client: CloudantV1, prefix: str, blocking_client: CloudantV1
) -> None:
    series = series_of(blocking_client, prefix, every="month")
    times = [
        "2026-03-31T23:59:59Z",
        "2026-01-15",
        "2026-04-01T00:00:00Z",
        "2026-03-01",
        "2026-01-31",
    ]
    docs = [{"n": n, "at": at} for n, at in enumerate(times)]
    results = series_of(blocking_client, prefix, every="month", batch_size=1).bulk_create(
        docs, type="t", time_of=lambda d: d["at"]
    )
    assert [KUUID.parse(r.id[2:]) for r in results] == [to_ms(at) // 1000 * 1000 for at in times]
    assert series.databases() == [
        f"{prefix}-2026-01",
        f"{prefix}-2026-03",
        f"{prefix}-2026-04",
    ]
    newest = listed(series.window("2026-01-01", "2026-05-01", type="t"))
    assert [d["n"] for d in newest] == [2, 0, 3, 4, 1]
    # An own _id routes by its time; create_short by its day; a keyed id needs its time.
    own = KUUID.new("2026-02-10T10:00:00Z", type="t")
    assert (series.create({"_id": own})).id == own
    short = series.create_short({"s": 1}, timestamp="2026-05-31T23:00:00Z")
    assert short.id.startswith("260531-")
    assert (series.databases())[-1] == f"{prefix}-2026-05"
    assert f"{prefix}-2026-02" in series.databases()
    with pytest.raises(couchids.InvalidArgumentError, match="key_of= needs time_of="):
        series.bulk_create([{}], key_of=lambda d: "k")
    with pytest.raises(
        couchids.InvalidArgumentError, match="a keyed id needs the document's own time"
    ):
        series.create({}, key="k")
    keyed = series.create({"k": 1}, type="t", key="job-1", timestamp="2026-06-01T00:00:00Z")
    again = series.create({"k": 1}, type="t", key="job-1", timestamp="2026-06-01T00:00:00Z")
    assert again.id == keyed.id and again.duplicate


def test_window_across_periods_is_the_truth_both_ways(
    client: CloudantV1, prefix: str, data: Truth, blocking_client: CloudantV1
) -> None:
    series = series_of(blocking_client, prefix, every="day")
    for (start, end), doc_type, newest_first in itertools.product(WINDOWS, TYPES, (True, False)):
        want = data.window(start, end or to_ms(None), doc_type, newest_first)
        got = listed(series.window(start, end, type=doc_type, newest_first=newest_first))
        assert [d["_id"] for d in got] == want, (start, end, doc_type, newest_first)
        if want:
            assert got[0] == {"_rev": got[0]["_rev"], "_id": want[0], **data.docs[want[0]]}


def test_window_pages_slices_and_rows(
    client: CloudantV1, prefix: str, data: Truth, blocking_client: CloudantV1
) -> None:
    series = series_of(blocking_client, prefix, every="day")
    start, end = WINDOWS[0]
    for newest_first, parallel in itertools.product((True, False), (1, 3)):
        want = data.window(start, end, "a", newest_first)
        pages = [
            page
            for page in series_of(
                blocking_client, prefix, every="day", batch_size=2, parallel=parallel
            )
            .window(start, end, type="a", newest_first=newest_first)
            .pages()
        ]
        assert [d["_id"] for page in pages for d in page] == want
        assert max(len(page) for page in pages) <= 2
        rows = listed(
            series.window(start, end, type="a", newest_first=newest_first, include_docs=False)
        )
        assert [row["id"] for row in rows] == want and "value" in rows[0]


def test_latest_spans_periods(
    client: CloudantV1, prefix: str, data: Truth, blocking_client: CloudantV1
) -> None:
    series = series_of(blocking_client, prefix, every="day")
    for doc_type, n in itertools.product(TYPES, (0, 1, 4, 7, 13, 100)):
        want = data.window(0, to_ms(None), doc_type, True)[:n]
        got = series.latest(n, type=doc_type)
        assert [d["_id"] for d in got] == want, (doc_type, n)


def test_count_and_histogram_are_the_truth(
    client: CloudantV1, prefix: str, data: Truth, blocking_client: CloudantV1
) -> None:
    series = series_of(blocking_client, prefix, every="day")
    for (start, end), doc_type in itertools.product(WINDOWS, ["a", "b", None]):
        want = len(data.window(start, end or to_ms(None), doc_type, False))
        assert series.count(start, end, type=doc_type) == want, (start, end, doc_type)
    assert series.count(*WINDOWS[0], type="a") == len(data.window(*WINDOWS[0], "a", False))
    for (start, end), every, doc_type in itertools.product(
        [WINDOWS[0], WINDOWS[1], WINDOWS[2], WINDOWS[5]], ["5h", "1d", "7d", "1w"], ["a", None]
    ):
        got = series.histogram(start, end, every=every, type=doc_type)
        edges = bucket_edges(start, end, parse_every(every))
        assert [(to_ms(b.start), to_ms(b.end)) for b in got] == list(itertools.pairwise(edges))
        counts = [len(data.window(a, b, doc_type, False)) for a, b in itertools.pairwise(edges)]
        assert [b.count for b in got] == counts, (start, end, every, doc_type)


def test_export_is_that_of_one_database_holding_every_period(
    client: CloudantV1, prefix: str, data: Truth, blocking_client: CloudantV1, db: str
) -> None:
    series = series_of(blocking_client, prefix, every="day")
    whole = couchids.Database(client, db)
    whole.bulk_create([{"_id": i, **doc} for i, doc in data.docs.items()])
    start, end = WINDOWS[1]
    for columns in (None, ["_id", "label", "at"]):
        out, one = io.StringIO(), io.StringIO()
        mark = series.export(start, end, out=out, type="a", csv=columns)
        whole.export(start, end, out=one, type="a", csv=columns)
        assert mark.done == len(data.window(start, end, "a", False)) > 5
        if columns is None:
            assert [_no_rev(line) for line in out.getvalue().splitlines()] == [
                _no_rev(line) for line in one.getvalue().splitlines()
            ]
        else:
            assert out.getvalue() == one.getvalue()
            assert next(csv.reader(io.StringIO(out.getvalue()))) == columns
    # Stopped after a page, then resumed with its checkpoint: the same lines, once each.
    full = io.StringIO()
    series_of(blocking_client, prefix, every="day", batch_size=2, parallel=1).export(
        start, end, out=full, type="a"
    )
    part, mark = io.StringIO(), couchids.Checkpoint()

    def stop(checkpoint: couchids.Checkpoint) -> None:
        if checkpoint.done >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        series_of(blocking_client, prefix, every="day", batch_size=2).export(
            start, end, out=part, type="a", checkpoint=mark, on_progress=stop
        )
    assert 3 <= mark.done < len(data.window(start, end, "a", False))
    series_of(blocking_client, prefix, every="day", batch_size=2).export(
        start, end, out=part, type="a", checkpoint=mark
    )
    assert part.getvalue() == full.getvalue()


def test_export_refuses_a_checkpoint_of_another_series(
    client: CloudantV1, prefix: str, data: Truth, blocking_client: CloudantV1
) -> None:
    """An id of the series' form and a time of the window, but of no document of the period
    it falls in (another series' export left it), skipped that period's documents before it."""
    start, end = WINDOWS[1]
    ids = data.window(start, end, "a", False)
    foreign = "a:" + KUUID.new(data.times[ids[len(ids) // 2]])
    assert foreign not in ids
    out = io.StringIO()
    series = series_of(blocking_client, prefix, every="day", batch_size=2)
    with pytest.raises(couchids.InvalidArgumentError, match=f"{foreign!r} is no document of"):
        series.export(start, end, out=out, type="a", checkpoint=couchids.Checkpoint(foreign))
    assert out.getvalue() == ""
    # One of the series' own, whose period's database was dropped since, still resumes.
    day = next(d for d in range(7) if DAYS[d] <= data.times[ids[0]] < DAYS[d] + DAY)
    client.delete_database(db=day_name(prefix, day))
    series.export(start, end, out=out, type="a", checkpoint=couchids.Checkpoint(ids[0]))
    rest = [i for i in ids if data.times[i] >= DAYS[day] + DAY]
    assert rest and [json.loads(line)["_id"] for line in out.getvalue().splitlines()] == rest


def test_expire_drops_whole_periods_and_expires_the_boundary(
    client: CloudantV1, prefix: str, data: Truth, blocking_client: CloudantV1
) -> None:
    series = series_of(blocking_client, prefix, every="day")
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
    # Day 1's database, whose period ended, holds a stray of day 5: it is not dropped, but
    # expired id by id, and keeps the stray.
    ended = day_name(prefix, 1)
    kept = [i for i in old[ended] if i not in data.times]
    assert len(kept) == 1 and KUUID.parse(kept[0][2:]) >= before
    gone = len(old[ended]) - 1
    dry = series.expire(before)
    assert dry.dry_run and dry.dropped == [day_name(prefix, 0)]
    assert dry.boundary == boundary and dry.deleted == len(goes) + 1 + gone
    assert sorted(dry.unread) == unread
    assert {db: each.matched for db, each in dry.expired.items()} == {
        boundary: 4,
        later: 1,
        ended: gone,
    }
    assert snapshot(client, prefix) == old
    done = series.expire(before, dry_run=False)
    assert (done.dropped, done.boundary, done.deleted) == (dry.dropped, boundary, dry.deleted)
    assert {db: each.deleted for db, each in done.expired.items()} == {
        boundary: 4,
        later: 1,
        ended: gone,
    }
    assert done.unread == dry.unread and not done.conflicts and not done.failed
    after = snapshot(client, prefix)
    assert sorted(set(old) - set(after)) == dry.dropped
    assert after[ended] == {kept[0]: old[ended][kept[0]]}
    assert after[boundary] == {i: r for i, r in old[boundary].items() if i not in goes}
    assert "_design/x" in after[boundary] and "zzz" in after[boundary]
    assert after[later] == {i: r for i, r in old[later].items() if i not in stray}
    for name in set(after) - {boundary, later, ended}:
        assert after[name] == old[name], name  # other series, later days
    rest = [i for i in data.window(0, DAYS[6] + DAY, ALL_TYPES, False) if data.times[i] >= before]
    assert [
        d["_id"] for d in listed(series.window(0, None, type=ALL_TYPES, newest_first=False))
    ] == rest
    again = series.expire(before, dry_run=False)
    assert (again.dropped, again.deleted) == ([], 0) and snapshot(client, prefix) == after
    assert again.unread == done.unread
    # Everything: only the series' own databases go, never another series' that look alike;
    # the boundary's stays with the ids whose time the series cannot read, and says so.
    last = series.expire("2027-01-01", dry_run=False)
    assert boundary not in last.dropped and sorted(last.unread) == unread
    assert ours(client, prefix) == sorted(
        [boundary, f"{prefix}-2026-03", f"{prefix}-2026-03-02-copy", f"{prefix}-x-2026-03-02"]
    )
    assert sorted(snapshot(client, prefix)[boundary]) == sorted([*unread, "_design/x"])


def test_expire_leaves_no_older_document_whatever_wrote_it(
    client: CloudantV1, prefix: str, blocking_client: CloudantV1
) -> None:
    series = series_of(blocking_client, prefix, every="day")
    offsets = [0, 5 * HOUR, 6 * HOUR - SECOND, 6 * HOUR, DAY - SECOND]
    times = [DAYS[day] + offset for day in (0, 2, 4) for offset in offsets]
    # Every write method of the series, at each time: typed, untyped, keyed, short ids.
    for n, at in enumerate(times):
        series.create({"n": n}, type="t", timestamp=at)
        series.create({"n": n}, timestamp=at)
        series.create({"n": n}, type="k", key=f"job-{n}", timestamp=at)
        series.create_short({"n": n}, timestamp=at)
    docs = [{"n": n, "at": at} for n, at in enumerate(times)]
    series.bulk_create(docs, type="b", time_of=lambda d: d["at"])
    series.bulk_create(docs, time_of=lambda d: d["at"])
    series.bulk_create(docs, type="kb", key_of=lambda d: f"row-{d['n']}", time_of=lambda d: d["at"])
    series.bulk_create([{"_id": KUUID.new(at, type="own")} for at in times])
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

    dry = series.expire(CUTOFF)
    assert snapshot(client, prefix) == old
    done = series.expire(CUTOFF, dry_run=False)
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
    assert sorted(after) == [boundary, later] == series.databases()
    for name, held in after.items():
        for doc_id in held:
            at = time_in(doc_id)
            assert at is None or at >= CUTOFF, (name, doc_id)
        assert held == {i: r for i, r in old[name].items() if i not in goes[name]}
    again = series.expire(CUTOFF, dry_run=False)
    assert (again.dropped, again.deleted, sorted(again.unread)) == ([], 0, unreadable)
    assert snapshot(client, prefix) == after


def test_expire_drops_no_period_that_holds_an_id_of_a_time_not_older(
    client: CloudantV1, prefix: str, blocking_client: CloudantV1
) -> None:
    # A period that ended before the cutoff is dropped whole only when nothing in it is of a
    # time at or after the cutoff; one holding such an id (stored there by other means, of
    # any type, or untyped, or short) is expired id by id, as the boundary is, and stays.
    series = series_of(blocking_client, prefix, every="day")
    plain, untyped, typed = f"{prefix}-2026-02-28", day_name(prefix, 0), day_name(prefix, 1)
    for n, at in enumerate((DAYS[0] - DAY, DAYS[0], DAYS[1])):
        for doc_type in ("t", "u", None):
            series.create({"n": n}, type=doc_type, timestamp=at + HOUR)
        series.create_short({"n": n}, timestamp=at + HOUR)
    couchids.Database(client, untyped).create({}, timestamp=CUTOFF)
    couchids.Database(client, untyped).create_short({}, timestamp=DAYS[5])
    couchids.Database(client, typed).create({}, type="u", timestamp=DAYS[4])
    client.put_document(db=typed, doc_id="zzz", document={})
    client.put_design_document(db=typed, ddoc="v", design_document={"views": {}})
    old = snapshot(client, prefix)
    assert sorted(old) == [plain, untyped, typed]
    kept = {
        name: {i: r for i, r in old[name].items() if (t := time_in(i)) is None or t >= CUTOFF}
        for name in (untyped, typed)
    }
    assert [len(ids) for ids in kept.values()] == [2, 3]

    dry = series.expire(CUTOFF)
    assert snapshot(client, prefix) == old
    done = series.expire(CUTOFF, dry_run=False)
    for report in (dry, done):
        assert report.dropped == [plain] and report.boundary is None and report.unread == ["zzz"]
        assert report.deleted == 8
    assert {name: each.matched for name, each in dry.expired.items()} == {untyped: 4, typed: 4}
    assert {name: each.deleted for name, each in done.expired.items()} == {untyped: 4, typed: 4}
    assert snapshot(client, prefix) == kept


def test_expire_drops_no_period_that_holds_an_id_without_a_time(
    client: CloudantV1, prefix: str, blocking_client: CloudantV1
) -> None:
    """An ended period holding ids whose time the series cannot read (stored there by other
    means) was dropped with them, silent in the dry run too: expired id by id instead, as the
    boundary is, keeping them and naming them in unread."""
    series = series_of(blocking_client, prefix, every="day")
    plain, odd = day_name(prefix, 0), day_name(prefix, 1)
    for at in (DAYS[0], DAYS[1]):
        for doc_type in ("t", None):
            series.create({}, type=doc_type, timestamp=at + HOUR)
    strays = ["import-7", "user:profile-42", "t:~x", "Bad Type:1"]
    for doc_id in strays:
        client.put_document(db=odd, doc_id=doc_id, document={})
    client.put_design_document(db=odd, ddoc="v", design_document={"views": {}})
    old = snapshot(client, prefix)
    dry = series.expire(CUTOFF)
    assert snapshot(client, prefix) == old
    done = series.expire(CUTOFF, dry_run=False)
    for report in (dry, done):
        assert report.dropped == [plain] and report.boundary is None
        assert sorted(report.unread) == sorted(strays) and report.deleted == 2
    assert snapshot(client, prefix) == {
        odd: {i: r for i, r in old[odd].items() if i in [*strays, "_design/v"]}
    }


def test_a_proxys_404_page_for_a_period_is_a_failure_not_an_empty_period(
    client: CloudantV1,
    couch_url: str,
    prefix: str,
    blocking_client: CloudantV1,
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
) -> None:
    # Only CouchDB's own 404 makes a period one without a database (which holds nothing); a
    # proxy's HTML 404 page for one period's reads is a failure, whatever reads it.
    series = series_of(blocking_client, prefix, every="month")
    for at in ("2024-01-10", "2024-02-10", "2024-03-10"):
        series.create({"at": at}, type="r", timestamp=at)
    reads = {
        "window": lambda s: listed(s.window("2024-01-01", "2024-04-01", type="r")),
        "latest": lambda s: s.latest(5, type="r"),
        "count": lambda s: s.count("2024-01-01", "2024-04-01", type="r"),
        "histogram": lambda s: s.histogram("2024-01-01", "2024-04-01", every="1w", type="r"),
        "expire": lambda s: s.expire("2024-02-20"),
    }
    with FaultProxy(couch_url) as proxy:
        for method in ("GET", "POST"):
            proxy.fail("html-404-before", method=method, path=f"/{prefix}-2024-02/", times=1000)
        behind = series_of(blocking_client_for(client_for(proxy.url)), prefix, every="month")
        for name, read in reads.items():
            with pytest.raises(couchids.ServerError) as failed:
                read(behind)
            message = str(failed.value)
            assert not isinstance(failed.value, couchids.DatabaseNotFoundError), (name, message)
            assert failed.value.status == 404 and "HTTP 404" in message, (name, message)
            assert "does not exist" not in message and "HTML" in message, (name, message)


def test_latest_and_window_ride_out_a_lost_answer_as_the_handle_retries(
    client: CloudantV1,
    couch_url: str,
    prefix: str,
    blocking_client: CloudantV1,
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
) -> None:
    # One 503 before a period's read: retries=0 raises it, the default asks again.
    series = series_of(blocking_client, prefix, every="month")
    for at in ("2024-01-10", "2024-02-10"):
        series.create({"at": at}, type="r", timestamp=at)
    reads = {
        "window": lambda s: listed(s.window("2024-01-01", "2024-03-01", type="r")),
        "latest": lambda s: s.latest(5, type="r"),
    }
    for name, read in reads.items():
        for retries in (0, 4):
            with FaultProxy(couch_url) as proxy:
                for method in ("GET", "POST"):
                    proxy.fail("503-before", method=method, path=f"^/{prefix}-2024-01/")
                behind = series_of(
                    blocking_client_for(client_for(proxy.url)),
                    prefix,
                    every="month",
                    retries=retries,
                )
                if retries == 0:
                    with pytest.raises(couchids.ServerError, match="503"):
                        read(behind)
                else:
                    assert len(read(behind)) == 2, name
