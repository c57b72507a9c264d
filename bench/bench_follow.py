"""Following new documents: ``_changes`` (what Database.follow uses) against polling ``_all_docs``.

    .venv/bin/python bench/bench_follow.py [--server pouchdb|couchdb|cluster] [--writes 30]
                                           [--idle 30] [--interval 1.0]

Each way of following runs with its own client, whose requests are counted as they are sent,
on a database that already holds documents of this type and of others, and is measured twice:

- idle: the requests it sends in ``--idle`` seconds when nothing is written, as a rate per
  minute;
- latency: from the start of a write of a new document of the type to the moment the follower
  yields it, over ``--writes`` writes spaced 0.1-0.4 s apart (median and worst).

The poller reads the type's key range onwards from the last id it saw every ``--interval``
seconds (``range_pages`` with ``after``), as a caller would without ``_changes``. Always exits 0:
the numbers are for a reader (they are quoted in couchids/following.py).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import KINDS, start

import couchids
from couchids import KUUID, Checkpoint
from couchids.core.following import DEFAULT_POLL
from couchids.core.keys import window_keys
from couchids.core.policy import RetryPolicy
from couchids.core.scan import range_pages
from couchids.drivers.blocking import known_facts, stream
from couchids.idforms.times import MAX_MS

DB, TYPE = "bench_follow", "ord"
Follower = Callable[[CloudantV1, threading.Event], Iterator[dict[str, Any]]]


def by_changes(client: CloudantV1, stop: threading.Event) -> Iterator[dict[str, Any]]:
    yield from couchids.Database(client, DB).follow(type=TYPE, checkpoint=Checkpoint())


def by_polling(interval: float) -> Follower:
    def poll(client: CloudantV1, stop: threading.Event) -> Iterator[dict[str, Any]]:
        keys = window_keys(KUUID, TYPE, 0, MAX_MS)
        assert keys is not None
        # Start from the newest id now, as follow starts from "now".
        newest = couchids.Database(client, DB).latest(1, type=TYPE, include_docs=False)
        last = newest[0]["id"] if newest else None
        while not stop.is_set():
            pages = range_pages(
                known_facts(client),
                DB,
                keys,
                KUUID,
                RetryPolicy.within(None, "poll"),
                doc_type=TYPE,
                after=last,
                include_docs=True,
            )
            for page in stream(client, pages):
                for row in page:
                    last = row["id"]
                    yield row["doc"]
            stop.wait(interval)

    return poll


def measure(
    name: str, upstream: str, writer: CloudantV1, follower: Follower, args: argparse.Namespace
) -> None:
    seen: dict[int, float] = {}
    stop = threading.Event()
    client = client_for(upstream)
    sent_requests = [0]
    send = client.send

    def counted(*a: Any, **k: Any) -> Any:
        sent_requests[0] += 1
        return send(*a, **k)

    client.send = counted  # type: ignore[method-assign]

    def consume() -> None:
        for doc in follower(client, stop):
            if "n" in doc:
                seen[doc["n"]] = time.perf_counter()
            if stop.is_set():
                return

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    time.sleep(1.0)  # settle: the follower has read where "now" is
    before = sent_requests[0]
    time.sleep(args.idle)
    idle = (sent_requests[0] - before) * 60 / args.idle
    rng = random.Random(1)
    sent: dict[int, float] = {}
    for n in range(args.writes):
        time.sleep(rng.uniform(0.1, 0.4))
        sent[n] = time.perf_counter()
        couchids.Database(writer, DB).create({"n": n}, type=TYPE)
        couchids.Database(writer, DB).create({"noise": n}, type="other")
    deadline = time.monotonic() + 30
    while len(seen) < args.writes and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    couchids.Database(writer, DB).create({"wake": True}, type=TYPE)  # ends a waiting long poll
    thread.join(timeout=15)
    delays = [(seen[n] - sent[n]) * 1000 for n in sent if n in seen]
    missed = args.writes - len(delays)
    print(
        f"  {name:<26} idle {idle:6.1f} requests/min   latency median "
        f"{statistics.median(delays):7.1f} ms, worst {max(delays):7.1f} ms"
        + (f"   MISSED {missed}" if missed else "")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=KINDS, default="pouchdb")
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--docs", type=int, default=10_000)
    args = parser.parse_args(argv)
    with start(args.server) as server:
        writer = client_for(server.url)
        writer.put_database(db=DB).get_result()
        docs = [{"i": i} for i in range(args.docs)]
        couchids.Database(writer, DB).bulk_create(docs[: args.docs // 2], type=TYPE)
        couchids.Database(writer, DB).bulk_create(docs[args.docs // 2 :], type="other")
        print(
            f"{args.server}: {args.docs:,} documents before, {args.writes} writes, "
            f"{args.idle:.0f} s idle; _changes long poll waits "
            f"{DEFAULT_POLL:.0f} s"
        )
        measure("_changes (follow)", server.url, writer, by_changes, args)
        measure(
            f"_all_docs every {args.interval:g} s",
            server.url,
            writer,
            by_polling(args.interval),
            args,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
