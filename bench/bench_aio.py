"""couchids.aio on one event loop: 50 concurrent ``latest`` calls against one call, and an async
window against the blocking one, side by side in one run.

    python bench/bench_aio.py --server couchdb

Prints the median times and the ratios of medians:

- ``50 concurrent / 1``: 50 ``aio.latest`` calls gathered on one loop, against one call
  (target: at most 10; 50 one after the other would be about 50);
- ``aio 50 / raw httpx 50``: against 50 plain ``httpx`` POSTs to ``_all_docs`` gathered the
  same way, over as many connections as an ``AsyncClient`` keeps;
- ``aio window / window``: an async window of ``--docs`` documents against the blocking one.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import httpx
import orjson
from faultproxy import client_for
from localserver import KINDS, start

import couchids
from couchids import aio
from couchids.times import to_ms

CONCURRENT = 50


def median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", choices=KINDS, default="pouchdb")
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--latest", type=int, default=10, help="documents per latest call")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    base = to_ms("2024-05-01")
    with start(args.server) as server:
        client = client_for(server.url)
        client.put_database(db="bench")
        ids = [couchids.id(base + n * 1000, type="e") for n in range(args.docs)]
        for i in range(0, len(ids), 10_000):
            docs = [{"_id": d, "n": i} for d in ids[i : i + 10_000]]
            client.post_bulk_docs(db="bench", bulk_docs={"docs": docs}).get_result()
        end = base + args.docs * 1000
        loop = asyncio.new_event_loop()
        async_client = aio.AsyncClient(client)

        async def one() -> list[dict[str, object]]:
            return await aio.latest(async_client, "bench", args.latest, type="e")

        async def many() -> list[list[dict[str, object]]]:
            return await asyncio.gather(*(one() for _ in range(CONCURRENT)))

        http = httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_connections=aio.CONNECTIONS))
        keys = {"start_key": "e;", "end_key": "e:", "descending": True, "include_docs": True}
        body = orjson.dumps({**keys, "limit": args.latest})

        async def raw_one() -> object:
            answer = await http.post(
                f"{server.url}/bench/_all_docs",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            return orjson.loads(answer.content)

        async def raw_many() -> list[object]:
            return await asyncio.gather(*(raw_one() for _ in range(CONCURRENT)))

        async def async_window() -> int:
            return len([d async for d in aio.window(async_client, "bench", base, end, type="e")])

        def blocking_window() -> int:
            return sum(1 for _ in couchids.window(client, "bench", base, end, type="e"))

        assert loop.run_until_complete(one()) == couchids.latest(
            client, "bench", args.latest, type="e"
        )
        assert loop.run_until_complete(async_window()) == blocking_window() == args.docs
        loop.run_until_complete(many())  # warm the connection pool
        t_one = median(lambda: loop.run_until_complete(one()), args.repeat)
        t_many = median(lambda: loop.run_until_complete(many()), args.repeat)
        loop.run_until_complete(raw_many())
        t_raw_one = median(lambda: loop.run_until_complete(raw_one()), args.repeat)
        t_raw_many = median(lambda: loop.run_until_complete(raw_many()), args.repeat)
        t_async = median(lambda: loop.run_until_complete(async_window()), args.repeat)
        t_block = median(blocking_window, args.repeat)
        loop.run_until_complete(async_client.aclose())
        loop.run_until_complete(http.aclose())
        loop.close()
    print(f"server {args.server}, {args.docs} documents, latest of {args.latest}")
    print(f"  aio.latest, 1 call                 {t_one * 1000:9.1f} ms")
    print(f"  aio.latest, {CONCURRENT} concurrent calls     {t_many * 1000:9.1f} ms")
    print(f"  raw httpx POST, 1 call             {t_raw_one * 1000:9.1f} ms")
    print(f"  raw httpx POST, {CONCURRENT} concurrent      {t_raw_many * 1000:9.1f} ms")
    print(f"  aio.window                         {t_async * 1000:9.1f} ms")
    print(f"  window (blocking)                  {t_block * 1000:9.1f} ms")
    print(f"  ratio {CONCURRENT} concurrent / 1 call      {t_many / t_one:9.2f}  (target <= 10)")
    print(f"  ratio raw httpx {CONCURRENT} concurrent / 1   {t_raw_many / t_raw_one:9.2f}")
    print(f"  ratio aio {CONCURRENT} / raw httpx {CONCURRENT}        {t_many / t_raw_many:9.2f}")
    print(f"  ratio aio window / window          {t_async / t_block:9.2f}")


if __name__ == "__main__":
    main()
