"""count and histogram (what window returns, from a scan of the ids) against their index-only
counts (offsets) and a scan of the window's ids through window, side by side in one run.

    python bench/bench_count.py --server couchdb --docs 100000

Prints the median time of each and the ratios of medians: the count against the index-only
count (what count cost before it was the window's number), and against window's scan. On
PouchDB Server every way scans (its ``offset`` is not a row count), so the ratios there are
about 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from faultproxy import client_for
from localserver import KINDS, start
from timing import interleaved

import couchids
from couchids.idforms.times import to_ms


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", choices=KINDS, default="pouchdb")
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    base = to_ms("2024-05-01")
    with start(args.server) as server:
        client = client_for(server.url)
        client.put_database(db="bench")
        ids = [couchids.id(base + n * 1000, type="e") for n in range(args.docs)]
        for i in range(0, len(ids), 10_000):
            docs = [{"_id": d} for d in ids[i : i + 10_000]]
            client.post_bulk_docs(db="bench", bulk_docs={"docs": docs}).get_result()
        end = base + args.docs * 1000

        def scan() -> int:
            rows = couchids.Database(client, "bench").window(
                base, end, type="e", include_docs=False
            )
            return sum(1 for _ in rows)

        shop = couchids.Database(client, "bench")

        def hourly(index_only: bool) -> int:
            buckets = shop.histogram(base, end, every="1h", type="e", index_only=index_only)
            return sum(bucket.count for bucket in buckets)

        median, answers = interleaved(
            {
                "window": scan,
                "count": lambda: shop.count(base, end, type="e"),
                "count index-only": lambda: shop.count(base, end, type="e", index_only=True),
                "histogram": lambda: hourly(False),
                "histogram index-only": lambda: hourly(True),
            },
            args.repeat,
        )
        assert set(answers.values()) == {args.docs}, answers
        print(f"{args.server}, {args.docs:,} documents, median of {args.repeat}")
        print(f"  window's scan of the ids  {median['window'] * 1000:10.1f} ms")
        for way in ("count", "histogram"):
            t_way, t_index = median[way], median[f"{way} index-only"]
            print(
                f"  {way + (' (hourly)' if way == 'histogram' else ''):<25} "
                f"{t_way * 1000:10.1f} ms  x{t_way / median['window']:.2f} of window, "
                f"x{t_way / t_index:.1f} of index-only ({t_index * 1000:.1f} ms)"
            )


if __name__ == "__main__":
    main()
