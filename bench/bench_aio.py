"""couchids.aio on one event loop: 50 concurrent ``latest`` calls against one call, and an async
window against the blocking one, side by side in one run, at 0 ms and at an added round trip
(bench/delayproxy.py).

    python bench/bench_aio.py --server couchdb [--docs 20000] [--delay-ms 20] [--connections 10]

For each round trip it prints the medians of interleaved rounds and the ratios of medians:

- ``aio 50 concurrent / 1 call``: 50 ``AsyncDatabase.latest`` calls gathered on one loop,
  against one call (target: at most 10; 50 one after the other would be about 50);
- ``raw httpx 50 concurrent / 1 call``: the same for plain ``httpx`` POSTs to ``_all_docs``
  (an ``httpx.AsyncClient`` as it comes, ``orjson`` to decode), gathered the same way;
- ``aio 50 / raw httpx 50``: what couchids costs over those plain requests;
- ``aio window / window``: an async window of ``--docs`` documents against the blocking one.

Always exits 0: the numbers are for a reader, not a gate.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import httpx
import orjson
from delayproxy import delayed
from faultproxy import client_for
from localserver import KINDS, start
from timing import interleaved

import couchids
from couchids import aio
from couchids.idforms.times import to_ms

CONCURRENT = 50
BASE = to_ms("2024-05-01")


def load(url: str, docs: int) -> None:
    client = client_for(url)
    client.put_database(db="bench")
    ids = [couchids.id(BASE + n * 1000, type="e") for n in range(docs)]
    for i in range(0, len(ids), 10_000):
        batch = [{"_id": d, "n": i} for d in ids[i : i + 10_000]]
        client.post_bulk_docs(db="bench", bulk_docs={"docs": batch}).get_result()


def measure(url: str, args: argparse.Namespace) -> dict[str, float]:
    """The medians of every way, through ``url``."""
    client = client_for(url)
    end = BASE + args.docs * 1000
    loop = asyncio.new_event_loop()
    async_client = aio.AsyncClient(client, connections=args.connections)
    http = httpx.AsyncClient(timeout=None)
    keys = {"start_key": "e;", "end_key": "e:", "descending": True, "include_docs": True}
    body = orjson.dumps({**keys, "limit": args.latest})

    async def one() -> list[dict[str, Any]]:
        return await aio.AsyncDatabase(async_client, "bench").latest(args.latest, type="e")

    async def many() -> list[list[dict[str, Any]]]:
        return await asyncio.gather(*(one() for _ in range(CONCURRENT)))

    async def raw_one() -> list[dict[str, Any]]:
        answer = await http.post(
            f"{url}/bench/_all_docs", content=body, headers={"Content-Type": "application/json"}
        )
        return [row["doc"] for row in orjson.loads(answer.content)["rows"]]

    async def raw_many() -> list[list[dict[str, Any]]]:
        return await asyncio.gather(*(raw_one() for _ in range(CONCURRENT)))

    async def async_window() -> int:
        return len(
            [d async for d in aio.AsyncDatabase(async_client, "bench").window(BASE, end, type="e")]
        )

    def blocking_window() -> int:
        return sum(1 for _ in couchids.Database(client, "bench").window(BASE, end, type="e"))

    try:
        median, answers = interleaved(
            {
                "aio.latest, 1 call": lambda: loop.run_until_complete(one()),
                f"aio.latest, {CONCURRENT} calls": lambda: loop.run_until_complete(many()),
                "raw httpx, 1 call": lambda: loop.run_until_complete(raw_one()),
                f"raw httpx, {CONCURRENT} calls": lambda: loop.run_until_complete(raw_many()),
                "aio.window": lambda: loop.run_until_complete(async_window()),
                "window (blocking)": blocking_window,
            },
            args.repeat,
        )
    finally:
        loop.run_until_complete(async_client.aclose())
        loop.run_until_complete(http.aclose())
        loop.close()
    newest = couchids.Database(client, "bench").latest(args.latest, type="e")
    assert answers["aio.latest, 1 call"] == answers["raw httpx, 1 call"] == newest
    assert answers[f"aio.latest, {CONCURRENT} calls"] == [newest] * CONCURRENT
    assert answers["aio.window"] == answers["window (blocking)"] == args.docs
    return median


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", choices=KINDS, default="pouchdb")
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--latest", type=int, default=10, help="documents per latest call")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--connections", type=int, default=aio.CONNECTIONS)
    parser.add_argument("--delay-ms", type=float, default=20.0, help="0: skip the delayed run")
    args = parser.parse_args()
    with start(args.server) as server:
        load(server.url, args.docs)
        for delay in dict.fromkeys([0.0, args.delay_ms]):
            with delayed(server.url, delay) as url:
                median = measure(url, args)
            print(f"server {args.server}, {delay:g} ms added, {args.docs} documents, ", end="")
            print(f"latest of {args.latest}, {args.connections} connections, ", end="")
            print(f"medians of {args.repeat}")
            for name, spent in median.items():
                print(f"  {name:32} {spent * 1000:9.1f} ms")
            ratios = {
                f"aio {CONCURRENT} concurrent / 1 call": (
                    median[f"aio.latest, {CONCURRENT} calls"] / median["aio.latest, 1 call"]
                ),
                f"raw httpx {CONCURRENT} concurrent / 1 call": (
                    median[f"raw httpx, {CONCURRENT} calls"] / median["raw httpx, 1 call"]
                ),
                f"aio {CONCURRENT} / raw httpx {CONCURRENT}": (
                    median[f"aio.latest, {CONCURRENT} calls"]
                    / median[f"raw httpx, {CONCURRENT} calls"]
                ),
                "aio window / window": median["aio.window"] / median["window (blocking)"],
            }
            for name, ratio in ratios.items():
                target = (
                    "  (target <= 10)" if name.startswith(f"aio {CONCURRENT} concurrent") else ""
                )
                print(f"  ratio {name}, {delay:g} ms{'':<{36 - len(name)}}{ratio:7.2f}{target}")


if __name__ == "__main__":
    main()
