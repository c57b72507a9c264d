"""count and histogram against a scan of the window's ids, side by side in one run.

    python bench/bench_count.py --server couchdb --docs 100000

Prints the median time of each and the ratio of medians (scan / count). On PouchDB Server both
scan (its ``offset`` is not a row count), so the ratio there is about 1.
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

        median, answers = interleaved(
            {
                "scan": scan,
                "count": lambda: couchids.Database(client, "bench").count(base, end, type="e"),
                "histogram": lambda: couchids.Database(client, "bench").histogram(
                    base, end, every="1h", type="e"
                ),
            },
            args.repeat,
        )
        assert answers["scan"] == answers["count"] == args.docs
        assert sum(bucket.count for bucket in answers["histogram"]) == args.docs
        t_scan, t_count, t_hist = median["scan"], median["count"], median["histogram"]
        print(f"{args.server}, {args.docs:,} documents, median of {args.repeat}")
        print(f"  scan of the ids      {t_scan * 1000:10.1f} ms")
        print(f"  count                {t_count * 1000:10.1f} ms  x{t_scan / t_count:.1f}")
        print(f"  histogram (hourly)   {t_hist * 1000:10.1f} ms  x{t_scan / t_hist:.1f}")


if __name__ == "__main__":
    main()
