"""A monthly series against one database holding the same documents: retention and a window
across three months, on PouchDB Server or CouchDB, as ratios measured side by side in one run.

    .venv/bin/python bench/bench_series.py --server pouchdb
    COUCHIDS_COUCHDB=/path/to/launcher .venv/bin/python bench/bench_series.py --server couchdb

The documents: ``--per-month`` documents in each month of 2025, at seeded random times, 70% of
the type ``reading``, 15% ``alert``, 10% ``event`` and 5% untyped (kuuid ids made for each
document's time). The series ``Series(client, prefix, every="month")`` holds them in 12
databases, one database holds them all; both are loaded with plain ``_bulk_docs`` requests,
outside the timed part.

**Retention** of the three oldest months (``before`` = 2025-04-01): ``Series.expire(before,
dry_run=False)``, which drops three databases, against what one database needs for the same
outcome, ``Database.expire(before, type=T, dry_run=False)`` for each type and the untyped ids,
one after the other. Each round runs on freshly loaded copies (a new series and a new
database), the two ways in alternating order, as in bench/timing.py. For each way:

- the time of the call(s);
- the requests couchids sent, counted from its DEBUG records on the ``couchids.request``
  logger (one per request sent, retries included; see couchids/drivers/log.py);
- the tombstones left: the database's ``doc_del_count`` from ``GET /{db}`` after, and for the
  series the sum of it over the series' databases still there (0: the dropped months are
  gone, the others were not touched). PouchDB Server reports no ``doc_del_count``, so there the
  deleted rows of each database's ``_changes`` are counted instead.

Checked every round: the documents deleted (one database) and dropped (the series' first three
months gone, each ``GET`` a 404), and the documents left in either, equal the plan's.

**A window across three period databases**, 2025-05-15 to 2025-07-15 of the type ``reading``
(May, June and July), newest first: ``list(Series.window(...))`` against
``list(Database.window(...))`` on the database holding everything, with their defaults, in
``--window-rounds`` interleaved rounds (bench/timing.py's order; 21 by default: a round takes
a few hundred milliseconds, and single rounds range from 0.6x to 1.8x). The goal is
``series / one database <= 1.1``. The series reads the first page of the next month's
database while the one before is handed out (on a quiet machine: 1.39x on PouchDB Server and
1.04x on CouchDB 3.4.3 before, medians of 9 rounds; 1.02x and 1.01x with it, of 21).
The server alone is the floor of each: one plain ``POST _all_docs`` with ``include_docs`` over
the window's key range, with ``requests`` (uncompressed, as couchids asks a server on loopback),
per series database (each within its month) or on the one database. Every way must return the
plan's count, and the couchids ways the same first and last ids. Each way's client CPU time
(``time.process_time``, all threads) and couchids requests are shown too: on a busy machine the
client's own work is far steadier than the time taken, which the server's pace sways.

Prints the medians, then the ratios, each with the least and greatest of the rounds' own.
Always exits 0 when every answer is right: the numbers are for a reader, not a gate; a wrong
answer raises.
"""

from __future__ import annotations

import argparse
import functools
import gc
import logging
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from faultproxy import client_for
from localserver import start

import couchids
from couchids import KUUID
from couchids.core.keys import window_keys
from couchids.core.periods import period_of
from couchids.idforms.times import to_ms

#: The year of data, and the months of it.
YEAR = 2025
MONTHS = [to_ms(datetime(YEAR, m, 1, tzinfo=UTC)) for m in range(1, 13)]
END = to_ms(datetime(YEAR + 1, 1, 1, tzinfo=UTC))
#: Each type's share of the documents (``None``: untyped ids).
MIX: list[tuple[str | None, float]] = [
    ("reading", 0.70),
    ("alert", 0.15),
    ("event", 0.10),
    (None, 0.05),
]
TYPES = [doc_type for doc_type, _ in MIX]
#: Retention: everything before April goes (three whole months).
BEFORE = to_ms(datetime(YEAR, 4, 1, tzinfo=UTC))
#: The window: three monthly databases' worth of one type.
WINDOW = (to_ms(datetime(YEAR, 5, 15, tzinfo=UTC)), to_ms(datetime(YEAR, 7, 15, tzinfo=UTC)))
WINDOW_TYPE = "reading"
LOAD_BATCH = 2000
GOAL = 1.1


@dataclass
class Plan:
    """The documents of a run: each ``(time ms, type, id)``, oldest first."""

    docs: list[tuple[int, str | None, str]] = field(default_factory=list)

    @classmethod
    def made(cls, per_month: int, seed: int = 24) -> Plan:
        rng = random.Random(seed)
        plan = cls()
        for first, last in zip(MONTHS, [*MONTHS[1:], END], strict=True):
            for doc_type, share in MIX:
                for _ in range(round(per_month * share)):
                    ms = rng.randrange(first, last)
                    plan.docs.append((ms, doc_type, KUUID.new(ms, type=doc_type)))
        plan.docs.sort()
        return plan

    def count(self, start: int, end: int, *types: str | None) -> int:
        """Documents made in ``[start, end)``, of ``types`` (default: all)."""
        return sum(1 for ms, t, _ in self.docs if start <= ms < end and (not types or t in types))


class Counter(logging.Handler):
    """Counts couchids' DEBUG records of requests sent."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.sent = 0

    def emit(self, record: logging.LogRecord) -> None:
        if hasattr(record, "couchids_method"):
            self.sent += 1


REQUESTS = logging.getLogger("couchids.request")
COUNTER = Counter()


@contextmanager
def counted() -> Iterator[Counter]:
    """The requests couchids sends meanwhile (``.sent`` after the block)."""
    COUNTER.sent = 0
    yield COUNTER


class Server:
    """Plain HTTP to the server under test, for loading and checking."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = requests.Session()
        self.http.trust_env = False  # loopback only: never through a proxy in the environment

    def load(self, db: str, ids: list[str]) -> None:
        """A new database ``db`` holding a document per id."""
        self.http.put(f"{self.url}/{db}").raise_for_status()
        for first in range(0, len(ids), LOAD_BATCH):
            docs: list[dict[str, Any]] = [
                {"_id": doc_id, "n": n, "value": round(n * 0.37 % 50, 2), "tags": ["bench"]}
                for n, doc_id in enumerate(ids[first : first + LOAD_BATCH], first)
            ]
            answer = self.http.post(f"{self.url}/{db}/_bulk_docs", json={"docs": docs})
            answer.raise_for_status()
            if any("error" in row for row in answer.json()):
                raise RuntimeError(f"loading {db} failed")

    def info(self, db: str) -> dict[str, Any] | None:
        answer = self.http.get(f"{self.url}/{db}")
        if answer.status_code == 404:
            return None
        answer.raise_for_status()
        info: dict[str, Any] = answer.json()
        return info

    def tombstones(self, db: str) -> int:
        """Deleted documents still in ``db``: ``doc_del_count``, or where the server does not
        report it (PouchDB Server), the deleted rows of ``_changes``."""
        info = self.info(db)
        if info is None:
            raise RuntimeError(f"{db} is missing")
        if "doc_del_count" in info:
            return int(info["doc_del_count"])
        changes = self.http.get(f"{self.url}/{db}/_changes")
        changes.raise_for_status()
        return sum(1 for row in changes.json()["results"] if row.get("deleted"))

    def drop(self, db: str) -> None:
        answer = self.http.delete(f"{self.url}/{db}")
        if answer.status_code != 404:
            answer.raise_for_status()

    def all_docs(self, db: str, start: int, end: int, newest_first: bool) -> int:
        """The rows of one plain ``POST _all_docs`` with the documents, over the window's key
        range: how many."""
        keys = window_keys(KUUID, WINDOW_TYPE, start, end)
        if keys is None:
            return 0
        low, high = keys.low, keys.high
        query: dict[str, Any] = {"include_docs": True}
        if newest_first:
            query |= {"start_key": high, "end_key": low, "descending": True}
        else:
            query |= {"start_key": low, "end_key": high}
        answer = self.http.post(
            f"{self.url}/{db}/_all_docs", json=query, headers={"Accept-Encoding": "identity"}
        )
        answer.raise_for_status()
        return len(answer.json()["rows"])


def month_name(prefix: str, first: int) -> str:
    """The name of the series' database of the month starting at ``first``."""
    return f"{prefix}-{datetime.fromtimestamp(first / 1000, UTC):%Y-%m}"


def load_both(server: Server, plan: Plan, prefix: str, single: str) -> list[str]:
    """A series ``prefix`` of months and the database ``single``, each holding the plan's
    documents; the series' database names, oldest first."""
    months: dict[int, list[str]] = {}
    for ms, _, doc_id in plan.docs:
        months.setdefault(period_of("month", ms).start_ms, []).append(doc_id)
    names = []
    for first in sorted(months):
        name = month_name(prefix, first)
        server.load(name, months[first])
        names.append(name)
    server.load(single, [doc_id for _, _, doc_id in plan.docs])
    return names


@dataclass
class Measure:
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)
    tombstones: list[int] = field(default_factory=list)


def expire_series(series: couchids.Series, dropped: list[str]) -> int:
    """The retention of a series: one call, which must drop ``dropped``."""
    report = series.expire(BEFORE, dry_run=False)
    if report.dropped != dropped or report.deleted != 0 or report.boundary:
        raise RuntimeError(f"the series' expire dropped {report.dropped}: {report}")
    return len(report.dropped)


def expire_one(one: couchids.Database, expired: int) -> int:
    """The same retention in one database: an expire per type, and of the untyped ids,
    which must delete ``expired`` documents in all."""
    deleted = 0
    for doc_type in TYPES:
        report = one.expire(BEFORE, type=doc_type, dry_run=False)
        if report.conflicts or report.failed:
            raise RuntimeError(f"expire of {doc_type!r} failed: {report}")
        deleted += report.deleted
    if deleted != expired:
        raise RuntimeError(f"one database's expire deleted {deleted}, not {expired}")
    return deleted


def retention(client: Any, server: Server, plan: Plan, run: str, rounds: int) -> dict[str, Measure]:
    """Series.expire against Database.expire of each type, on fresh copies every round."""
    expired = plan.count(0, BEFORE)
    left = len(plan.docs) - expired
    measures = {"series": Measure(), "one database": Measure()}
    copies = iter(range(1_000_000))
    for number in range(-1, rounds):  # -1: the warm-up, checked but not counted
        copy = next(copies)
        prefix, single = f"bench_{run}_series_{copy}", f"bench_{run}_one_{copy}"
        names = load_both(server, plan, prefix, single)
        series = couchids.Series(client, prefix, every="month")
        one = couchids.Database(client, single)

        ways: dict[str, Callable[[], int]] = {
            "series": functools.partial(expire_series, series, names[:3]),
            "one database": functools.partial(expire_one, one, expired),
        }
        order = list(ways.items())
        for name, way in order if number % 2 == 0 else order[::-1]:
            gc.collect()
            with counted() as counter:
                began = time.perf_counter()
                way()
                took = time.perf_counter() - began
            if number >= 0:
                measures[name].seconds.append(took)
                measures[name].requests.append(counter.sent)

        # What is left: the series' first three months gone, the rest untouched; the one
        # database holding the later documents and a tombstone per deleted one.
        for name in names[:3]:
            if server.info(name) is not None:
                raise RuntimeError(f"{name} is still there")
        kept = 0
        series_tombstones = 0
        for name in names[3:]:
            info = server.info(name)
            if info is None:
                raise RuntimeError(f"{name} is gone")
            kept += info["doc_count"]
            series_tombstones += server.tombstones(name)
        one_info = server.info(single)
        if one_info is None or kept != left or one_info["doc_count"] != left:
            raise RuntimeError(
                f"documents left: series {kept}, one database {one_info}, not {left}"
            )
        one_tombstones = server.tombstones(single)
        if one_tombstones != expired:
            raise RuntimeError(f"{one_tombstones} tombstones in one database, not {expired}")
        if number >= 0:
            measures["series"].tombstones.append(series_tombstones)
            measures["one database"].tombstones.append(one_tombstones)
        for name in names[3:]:
            server.drop(name)
        server.drop(single)
    return measures


def window(
    client: Any, server: Server, plan: Plan, run: str, rounds: int
) -> tuple[dict[str, Measure], int]:
    """Series.window across three months against Database.window on one database, and the
    server alone for each."""
    prefix, single = f"bench_{run}_window", f"bench_{run}_window_one"
    names = load_both(server, plan, prefix, single)
    series = couchids.Series(client, prefix, every="month")
    one = couchids.Database(client, single)
    start, end = WINDOW
    expected = plan.count(start, end, WINDOW_TYPE)
    spans = []  # each series database of the window, newest first, and its part of it
    for first in reversed(MONTHS):
        period = period_of("month", first)
        if period.overlaps(start, end):
            name = month_name(prefix, first)
            spans.append((name, max(start, period.start_ms), min(end, period.end_ms)))
    if len(spans) != 3:
        raise RuntimeError(f"the window spans {len(spans)} databases, not 3")

    def ids(docs: list[dict[str, Any]]) -> tuple[int, str, str]:
        return len(docs), docs[0]["_id"], docs[-1]["_id"]

    ways: dict[str, Callable[[], Any]] = {
        "series": lambda: ids(list(series.window(start, end, type=WINDOW_TYPE))),
        "one database": lambda: ids(list(one.window(start, end, type=WINDOW_TYPE))),
        "server alone, 3 databases": lambda: sum(
            server.all_docs(name, a, b, newest_first=True) for name, a, b in spans
        ),
        "server alone, one database": lambda: server.all_docs(single, start, end, True),
    }
    times, answers = interleaved(ways, rounds)
    if answers["series"] != answers["one database"] or answers["series"][0] != expected:
        raise RuntimeError(f"the windows disagree: {answers}, expected {expected} documents")
    for name in ("server alone, 3 databases", "server alone, one database"):
        if answers[name] != expected:
            raise RuntimeError(f"{name} found {answers[name]} documents, not {expected}")
    for name in names:
        server.drop(name)
    server.drop(single)
    return times, expected


def interleaved(
    ways: dict[str, Callable[[], Any]], rounds: int
) -> tuple[dict[str, Measure], dict[str, Any]]:
    """Each way's seconds, client CPU seconds and couchids requests in each of ``rounds``
    rounds, and its answer to a warm-up run first: bench/timing.py's order (each way once per
    round, in order on even rounds and reversed on odd ones), keeping every round for the
    spread of the rounds' own ratios."""
    answers = {name: way() for name, way in ways.items()}
    measures = {name: Measure() for name in ways}
    order = list(ways.items())
    for number in range(rounds):
        for name, way in order if number % 2 == 0 else order[::-1]:
            gc.collect()
            with counted() as counter:
                began, used = time.perf_counter(), time.process_time()
                way()
                measures[name].seconds.append(time.perf_counter() - began)
                measures[name].cpu.append(time.process_time() - used)
            measures[name].requests.append(counter.sent)
    return measures, answers


def ratio_line(what: str, mine: Sequence[float], theirs: Sequence[float], note: str = "") -> str:
    """The ratio of the medians, and in brackets the least and greatest of the rounds' own
    ratios (the ways of a round run back to back): a measure of the noise."""
    top, bottom = statistics.median(mine), statistics.median(theirs)
    value = top / bottom if bottom else 0.0
    each = [a / b if b else 0.0 for a, b in zip(mine, theirs, strict=True)]
    spread = f"({min(each):.3f} .. {max(each):.3f})"
    return f"  {what:50} = {value:6.3f}  {spread:18}{note}".rstrip()


def spread(seconds: list[float]) -> str:
    """The median in ms, and in brackets the fastest and slowest round."""
    median, least, most = (1000 * f(seconds) for f in (statistics.median, min, max))
    return f"{median:9.1f} ms  ({least:.1f} .. {most:.1f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("pouchdb", "couchdb"), default="pouchdb")
    parser.add_argument("--per-month", type=int, default=1000, help="retention: docs a month")
    parser.add_argument("--rounds", type=int, default=5, help="retention rounds")
    parser.add_argument(
        "--window-per-month", type=int, default=5000, help="the window's data: docs a month"
    )
    parser.add_argument("--window-rounds", type=int, default=21)
    args = parser.parse_args(argv)

    REQUESTS.setLevel(logging.DEBUG)
    REQUESTS.addHandler(COUNTER)
    run = uuid.uuid4().hex[:8]
    with start(args.server) as local:
        client = client_for(local.url)
        server = Server(local.url)
        plan = Plan.made(args.per_month)
        began = time.perf_counter()
        kept = retention(client, server, plan, run, args.rounds)
        took = time.perf_counter() - began
        window_plan = Plan.made(args.window_per_month, seed=25)
        times, expected = window(client, server, window_plan, run, args.window_rounds)

    print(
        f"{args.server}: retention of the 3 oldest of 12 months, {len(plan.docs):,} documents "
        f"({plan.count(0, BEFORE):,} before 2025-04-01), medians of {args.rounds} rounds on "
        f"fresh copies ({took:.0f}s with loading), fastest .. slowest"
    )
    for name, measure in kept.items():
        print(
            f"  {name:13} {spread(measure.seconds)}  requests "
            f"{statistics.median(measure.requests):5.0f}  tombstones left "
            f"{statistics.median(measure.tombstones):6.0f}"
        )
    series, one = kept["series"], kept["one database"]
    print(f"{args.server}: retention ratios, series / one database (in brackets: of each round)")
    for what, mine, theirs in (
        ("time", series.seconds, one.seconds),
        ("requests", series.requests, one.requests),
        ("tombstones left", series.tombstones, one.tombstones),
    ):
        print(ratio_line(f"{what}: series / one database", mine, theirs))

    print(
        f"{args.server}: a window across 3 monthly databases (2025-05-15 .. 2025-07-15 of one "
        f"type, {expected:,} of {len(window_plan.docs):,} documents), newest first, medians of "
        f"{args.window_rounds} rounds, fastest .. slowest"
    )
    for name, measure in times.items():
        print(
            f"  {name:27} {spread(measure.seconds)}  client CPU "
            f"{1000 * statistics.median(measure.cpu):7.1f} ms  couchids requests "
            f"{statistics.median(measure.requests):3.0f}"
        )
    medians = {name: statistics.median(measure.seconds) for name, measure in times.items()}
    verdict = "met" if medians["series"] / medians["one database"] <= GOAL else "NOT met"
    print(f"{args.server}: window ratios (in brackets: of each round)")
    for what, top, bottom, note in (
        ("series / one database", "series", "one database", f"goal <= {GOAL}: {verdict}"),
        ("series / server alone (3 databases)", "series", "server alone, 3 databases", ""),
        ("one database / server alone (one)", "one database", "server alone, one database", ""),
        (
            "server alone: 3 databases / one",
            "server alone, 3 databases",
            "server alone, one database",
            "",
        ),
    ):
        print(ratio_line(f"window: {what}", times[top].seconds, times[bottom].seconds, note))
    series_cpu, one_cpu = times["series"].cpu, times["one database"].cpu
    print(ratio_line("window: series / one database (client CPU)", series_cpu, one_cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
