"""What couchids.window and couchids.latest cost against the requests they replace.

Starts the local server (scripts/localserver.py), loads a database with 50,000 documents of
one type inside a time window (plus documents of other types and times around it), then, in
interleaved rounds, reads the whole window three ways:

- ``couchids.window`` (keyset pages, the next page fetched while the current one is handed out);
- one raw ``client.post_all_docs`` for the same keys with ``include_docs=True`` and no limit;
- ibmcloudant's ``Pagination`` helper (``PagerType.POST_ALL_DOCS``, its largest page, 200).

It prints the best time of each, window's time as a ratio of the raw request's and of
Pagination's, window's peak traced memory (``tracemalloc``) as a ratio of the raw request's,
and the number of HTTP requests ``latest(n)`` makes once the client has seen the database.

    .venv/bin/python bench/bench_query.py [--docs 50000] [--rounds 5] [--page-size N]

Always exits 0: the PASS/MISS lines are for a reader, not a gate (timings vary by machine).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from ibmcloudant.features.pagination import PagerType, Pagination

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from localserver import LocalServer

import couchids
from couchids import KUUID
from couchids.keys import window_keys
from couchids.query import DEFAULT_PAGE_SIZE

T0 = 1_700_000_000_000
#: Window time against one raw request, peak memory against it, requests of a warm latest().
TIME_TARGET, MEMORY_TARGET, LATEST_TARGET = 1.15, 0.1, 1
LOAD_BATCH = 2000


def service(url: str) -> CloudantV1:
    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url(url)
    return client


def load(client: CloudantV1, db: str, count: int) -> tuple[int, int]:
    """``count`` events 10 ms apart from T0, and a tenth as many other documents around them
    (other types, times before and after); returns the window ``[start, end)``."""
    start, end = T0, T0 + count * 10
    ids = [KUUID.new(T0 + i * 10, type="event") for i in range(count)]
    ids += [KUUID.new(T0 + i * 100, type="events") for i in range(count // 20)]
    ids += [KUUID.new(T0 - 1 - i * 1000, type="event") for i in range(count // 40)]
    ids += [KUUID.new(end + i * 1000, type="event") for i in range(count // 40)]
    for first in range(0, len(ids), LOAD_BATCH):
        docs = [
            {"_id": doc_id, "n": n, "name": f"document {n}", "tags": ["bench", str(n % 7)]}
            for n, doc_id in enumerate(ids[first : first + LOAD_BATCH], first)
        ]
        rows = client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
        assert not [r for r in rows if "error" in r], "loading failed"
    return start, end


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--page-size", type=int, default=None, help="window's page size")
    args = parser.parse_args(argv)

    with LocalServer() as server:
        client = service(server.url)
        db = f"bench_{uuid.uuid4().hex}"
        client.put_database(db=db)
        began = time.perf_counter()
        start, end = load(client, db, args.docs)
        print(f"loaded {args.docs} documents in {time.perf_counter() - began:.1f}s")
        keys = window_keys(KUUID, "event", start, end)
        assert keys is not None
        high, low, _ = keys.bounds(newest_first=True, form=KUUID)

        def with_window() -> int:
            count = 0
            for _doc in couchids.window(
                client, db, start, end, type="event", page_size=args.page_size
            ):
                count += 1
            return count

        def raw() -> int:
            result = client.post_all_docs(
                db=db, start_key=high, end_key=low, descending=True, include_docs=True
            ).get_result()
            return len(result["rows"])

        def pagination() -> int:
            pages = Pagination.new_pagination(
                client,
                PagerType.POST_ALL_DOCS,
                db=db,
                start_key=high,
                end_key=low,
                descending=True,
                include_docs=True,
                limit=200,
            )
            return sum(1 for _row in pages.rows())

        ways: dict[str, Callable[[], int]] = {
            "window": with_window,
            "raw _all_docs": raw,
            "Pagination": pagination,
        }
        for name, way in ways.items():  # warm up, and check they agree
            assert way() == args.docs, name
        best = {name: float("inf") for name in ways}
        peak = {name: 0 for name in ways}
        for _ in range(args.rounds):
            for name, way in ways.items():
                gc.collect()
                began = time.perf_counter()
                way()
                best[name] = min(best[name], time.perf_counter() - began)
        for name in ("window", "raw _all_docs"):  # memory in rounds of its own: tracing is slow
            gc.collect()
            tracemalloc.start()
            ways[name]()
            peak[name] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()

        requests = warm_latest_requests(client, db)
        client.delete_database(db=db)

    page = args.page_size or DEFAULT_PAGE_SIZE
    print(f"{args.docs} documents in the window, page size {page}, best of {args.rounds}:")
    for name in ways:
        print(f"  {name:14} {best[name] * 1000:9.1f} ms")
    print(f"  peak memory: window {peak['window'] / 2**20:.1f} MiB, ", end="")
    print(f"raw {peak['raw _all_docs'] / 2**20:.1f} MiB")
    time_ratio = best["window"] / best["raw _all_docs"]
    memory_ratio = peak["window"] / peak["raw _all_docs"]
    pagination_ratio = best["window"] / best["Pagination"]
    report("window time / raw _all_docs time", time_ratio, TIME_TARGET)
    report("window peak memory / raw _all_docs peak", memory_ratio, MEMORY_TARGET)
    report("window time / Pagination time", pagination_ratio, 1.0, strict=True)
    report("HTTP requests of a warm latest(10)", requests, LATEST_TARGET)
    return 0


def warm_latest_requests(client: CloudantV1, db: str) -> int:
    """How many HTTP requests ``latest(10)`` sends once the client has seen ``db``."""
    couchids.latest(client, db, 10, type="event")
    session = client.get_http_client()
    sent: list[Any] = []
    original = session.send

    def counting(request: Any, **options: Any) -> Any:
        sent.append(request)
        return original(request, **options)

    session.send = counting
    try:
        assert len(couchids.latest(client, db, 10, type="event")) == 10
    finally:
        session.send = original
    return len(sent)


def report(what: str, value: float, target: float, *, strict: bool = False) -> None:
    ok = value < target if strict else value <= target
    bound = "<" if strict else "<="
    print(f"{'PASS' if ok else 'MISS'}  {what}: {value:.3g} (target {bound} {target:g})")


if __name__ == "__main__":
    sys.exit(main())
