"""How close couchids runs to IBM Cloudant's provisioned rates: each operation through the
Cloudant-rules server (tests/cloudantproxy.py) at Lite's rates and at one Standard block's,
its time against the least time the rate allows.

    .venv/bin/python bench/bench_cloudant.py --server couchdb
    .venv/bin/python bench/bench_cloudant.py --server pouchdb --docs 5000 --expire-docs 2000

For each plan and operation it prints the time taken, the units the server admitted of the
operation's scarcest class (the class whose ``units / rate`` is largest), the ratio ``time /
(units / rate)`` (the goal: at most 1.25), the 429s the server answered and the errors the
call raised (the goal: 0). ``floor`` is the same call's time with no rate limit: where it is
above ``units / rate`` the server, not the rate, sets the pace, and no pacing can reach 1.

The client learns the rates from the 429s (``couchids.connect()`` with no ``rate``); with
``--given-rate`` it is told them (``rate="lite"`` / ``"standard"``) instead. Data is loaded
straight into the server, outside the timed part; each expire and bulk_create gets a fresh
database. A partitioned window (``window partitioned``, reads) needs CouchDB.

The operations: ``window`` and ``export`` of ``--docs`` documents (``batch_size`` 2000,
``parallel`` 3: the library's defaults), ``window partitioned`` (the same documents in a
partitioned database: reads, pages of 1999), ``expire`` of ``--expire-docs`` documents,
``bulk_create`` of ``--bulk-docs`` documents in batches of ``--bulk-batch`` (100: a batch of
500 is one write, and 10,000 documents would be 20 writes, too few to measure a rate), and a
daily ``Series.window`` over ``--series-docs`` documents across four days.

Always exits 0: the numbers are for a reader, not a gate.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from cloudantproxy import PLAN_NAMED, CloudantProxy, Plan
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import KINDS, start

import couchids
from couchids.drivers.blocking import set_rate

T0 = datetime(2024, 5, 1, tzinfo=UTC)
TYPE = "click"
LOAD_BATCH = 5000
CLASSES = ("query", "read", "write")
#: An operation: the call (on a client, and what its setup made), its answer, its setup.
Operation = tuple[Callable[[CloudantV1, str], int], int, Callable[[], str]]


def rate_of(plan: Plan, kind: str) -> int:
    return plan.of(kind)  # type: ignore[arg-type]


def load(
    client: CloudantV1, db: str, n: int, step: timedelta, *, partitioned: bool = False
) -> None:
    """``n`` documents of TYPE, ``step`` apart from T0, written straight to the server."""
    client.put_database(db=db, partitioned=partitioned)
    ids = [couchids.id(T0 + k * step, type=TYPE) for k in range(n)]
    for i in range(0, n, LOAD_BATCH):
        docs = [{"_id": d, "n": i + j} for j, d in enumerate(ids[i : i + LOAD_BATCH])]
        client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()


def drop(client: CloudantV1, prefix: str) -> None:
    for name in client.get_all_dbs().get_result():
        if name.startswith(prefix):
            client.delete_database(db=name)


class Run:
    """One plan's proxy and a client through it."""

    def __init__(self, upstream: str, plan: Plan | None, given: str | None) -> None:
        self.plan = plan
        self.proxy = CloudantProxy(upstream, plan=plan)
        self.given = given

    def __enter__(self) -> Run:
        self.proxy.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.proxy.__exit__(*exc)

    def client(self) -> CloudantV1:
        """A fresh client (nothing learnt yet), kept to the plan's rate with --given-rate."""
        client = client_for(self.proxy.url)
        if self.given is not None:
            set_rate(client, self.given)
        return client

    def measure(
        self, call: Callable[[CloudantV1, str], int], expected: int, setup: Callable[[], str]
    ) -> dict[str, Any]:
        """Time ``call`` on what ``setup`` made, untimed (its answer, a count, must be
        ``expected``), with what it spent."""
        made = setup()
        time.sleep(1.1)  # the last call's requests leave the window: each call starts alone
        self.proxy.counted.clear()
        self.proxy.refused.clear()
        client = self.client()
        errors = 0
        began = time.perf_counter()
        try:
            got = call(client, made)
        except couchids.CouchidsError as error:
            errors, got = 1, None
            print(f"    error: {error}", flush=True)
        spent = time.perf_counter() - began
        if got != expected and not errors:
            errors = 1
            print(f"    wrong answer: {got} (expected {expected})", flush=True)
        counted: Any = self.proxy.counted
        units = {kind: counted.get(kind, 0) for kind in CLASSES}
        return {
            "time": spent,
            "units": units,
            "refused": sum(self.proxy.refused.values()),
            "errors": errors,
        }


def scarcest(units: dict[str, int], plan: Plan) -> tuple[str, float]:
    """The class whose units take the longest at the plan's rate, and that time."""
    kind = max(CLASSES, key=lambda k: units[k] / rate_of(plan, k))
    return kind, units[kind] / rate_of(plan, kind)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", choices=KINDS, default="couchdb")
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--expire-docs", type=int, default=10_000)
    parser.add_argument("--bulk-docs", type=int, default=10_000)
    parser.add_argument("--bulk-batch", type=int, default=100)
    parser.add_argument("--series-docs", type=int, default=20_000)
    parser.add_argument("--plans", default="lite,standard")
    parser.add_argument("--given-rate", action="store_true", help="rate=PLAN on the client")
    parser.add_argument("--no-floor", action="store_true", help="skip the unlimited runs")
    args = parser.parse_args()
    prefix = f"benchcloudant{uuid.uuid4().hex[:8]}"
    step = timedelta(seconds=5)
    end = T0 + args.docs * step
    with start(args.server) as server:
        admin = client_for(server.url)
        try:
            plain, parted = f"{prefix}plain", f"{prefix}parted"
            load(admin, plain, args.docs, step)
            if args.server == "couchdb":
                load(admin, parted, args.docs, step, partitioned=True)
            series_step = timedelta(days=4) / args.series_docs
            series = couchids.Series(admin, f"{prefix}s", every="day")
            series.bulk_create(
                ({"n": k} for k in range(args.series_docs)),
                type=TYPE,
                time_of=lambda doc: T0 + doc["n"] * series_step,
            )
            operations = _operations(args, admin, prefix, plain, parted, end)
            plans = [p for p in args.plans.split(",") if p]
            floors: dict[str, float] = {}
            if not args.no_floor:
                with Run(server.url, None, None) as run:
                    for name, (call, expected, setup) in operations.items():
                        floors[name] = run.measure(call, expected, setup)["time"]
            for plan_name in plans:
                plan = PLAN_NAMED[plan_name]
                given = plan_name if args.given_rate else None
                how = f"rate={plan_name!r} given" if given else "rates learnt from 429s"
                print(
                    f"\n{args.server}, {plan_name}: {plan.reads} reads, {plan.writes} writes, "
                    f"{plan.queries} global queries a second ({how})",
                    flush=True,
                )
                print(
                    f"  {'operation':<34} {'time s':>7} {'units':>12} {'units/rate':>10} "
                    f"{'ratio':>6} {'429s':>5} {'errors':>6} {'floor s':>7}"
                )
                with Run(server.url, plan, given) as run:
                    for name, (call, expected, setup) in operations.items():
                        got = run.measure(call, expected, setup)
                        kind, least = scarcest(got["units"], plan)
                        ratio = got["time"] / least if least else float("nan")
                        floor = floors.get(name)
                        print(
                            f"  {name:<34} {got['time']:7.2f} "
                            f"{got['units'][kind]:>6} {kind:<5} {least:10.2f} {ratio:6.2f} "
                            f"{got['refused']:5d} {got['errors']:6d} "
                            f"{'' if floor is None else f'{floor:7.2f}'}",
                            flush=True,
                        )
        finally:
            drop(admin, prefix)


def _operations(
    args: argparse.Namespace,
    admin: CloudantV1,
    prefix: str,
    plain: str,
    parted: str,
    end: datetime,
) -> dict[str, Operation]:
    docs = args.docs

    def window(client: CloudantV1, db: str) -> int:
        return sum(1 for _ in couchids.Database(client, db).window(T0, end, type=TYPE))

    def export(client: CloudantV1, db: str) -> int:
        out = io.StringIO()
        couchids.Database(client, db).export(T0, end, out=out, type=TYPE)
        return out.getvalue().count("\n")

    def fresh(n: int) -> Callable[[], str]:
        def make() -> str:
            db = f"{prefix}x{uuid.uuid4().hex[:6]}"
            load(admin, db, n, timedelta(seconds=1))
            return db

        return make

    def expire(client: CloudantV1, db: str) -> int:
        cut = T0 + args.expire_docs * timedelta(seconds=1)
        report = couchids.Database(client, db).expire(cut, type=TYPE, dry_run=False)
        return int(report.deleted)

    def bulk_create(client: CloudantV1, db: str) -> int:
        results = (
            couchids.Database(client, db)
            .with_options(batch_size=args.bulk_batch)
            .bulk_create(
                ({"n": k} for k in range(args.bulk_docs)),
                type=TYPE,
                time_of=lambda doc: T0 + doc["n"] * timedelta(seconds=1),
            )
        )
        return sum(1 for r in results if r.ok)

    def series_window(client: CloudantV1, prefix: str) -> int:
        handle = couchids.Series(client, prefix, every="day")
        return sum(1 for _ in handle.window(T0, T0 + timedelta(days=4), type=TYPE))

    operations: dict[str, Operation] = {
        f"window {docs:,}": (window, docs, lambda: plain),
    }
    if args.server == "couchdb":
        operations[f"window {docs:,} partitioned"] = (window, docs, lambda: parted)
    operations[f"export {docs:,}"] = (export, docs, lambda: plain)
    operations[f"expire {args.expire_docs:,}"] = (
        expire,
        args.expire_docs,
        fresh(args.expire_docs),
    )
    operations[f"bulk_create {args.bulk_docs:,} (batch {args.bulk_batch})"] = (
        bulk_create,
        args.bulk_docs,
        fresh(0),
    )
    operations[f"Series.window {args.series_docs:,} (4 days)"] = (
        series_window,
        args.series_docs,
        lambda: f"{prefix}s",
    )
    return operations


if __name__ == "__main__":
    main()
