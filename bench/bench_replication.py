"""Time-window replication: a ``_replicator`` document watched through ``_scheduler/docs``
(what ``Database.replicate(...).wait()`` does) against one ``POST /_replicate`` with the same
selector, held open until the replication ends; as a ratio of medians, in interleaved rounds.

One CouchDB node (scripts/localserver.py ``start("couchdb")``, so ``COUCHIDS_COUCHDB`` must
name the launcher) holds ``--docs`` order documents one second apart, plus as many of
another type; the window is the middle half of the orders. Each round replicates the window
into a new database both ways. Run::

    COUCHIDS_COUCHDB=../shared/couchdb/couchdb .venv/bin/python bench/bench_replication.py \\
        [--docs 2000] [--rounds 5]

Always exits 0: the table is for a reader, not a gate (timings vary by machine).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "scripts"), str(Path(__file__).parent)]

import requests  # noqa: E402
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator  # noqa: E402
from ibmcloudant.cloudant_v1 import CloudantV1  # noqa: E402
from localserver import start  # noqa: E402

import couchids  # noqa: E402
from couchids.core import replication  # noqa: E402
from couchids.drivers.access import server_access  # noqa: E402
from couchids.idforms.times import to_ms  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with start("couchdb") as server:
        client = CloudantV1(authenticator=NoAuthAuthenticator())
        client.set_service_url(server.url)
        source = f"bench_{uuid.uuid4().hex}"
        client.put_database(db=source)
        t0 = datetime(2024, 5, 1, tzinfo=UTC)
        docs = [
            {"_id": couchids.id(t0 + timedelta(seconds=i), type=doc_type), "n": i}
            for i in range(args.docs)
            for doc_type in ("order", "click")
        ]
        for at in range(0, len(docs), 1000):
            client.post_bulk_docs(db=source, bulk_docs={"docs": docs[at : at + 1000]})
        start_at = t0 + timedelta(seconds=args.docs // 4)
        end_at = t0 + timedelta(seconds=3 * args.docs // 4)
        db = couchids.Database(client, source)
        url, credentials = server_access(client)
        timings: dict[str, list[float]] = {"_replicator + wait": [], "POST /_replicate": []}
        written: dict[str, set[int]] = {name: set() for name in timings}
        for _ in range(args.rounds):
            target = f"bench_{uuid.uuid4().hex}"
            began = time.perf_counter()
            done = db.replicate(target, start_at, end_at, type="order").wait(600)
            timings["_replicator + wait"].append(time.perf_counter() - began)
            written["_replicator + wait"].add(done.docs_written)
            client.delete_database(db=target)

            target = f"bench_{uuid.uuid4().hex}"
            src, dst = replication.endpoints(url, credentials, source, target)
            body = {
                "source": src.body(),
                "target": dst.body(),
                "create_target": True,
                "selector": replication.window_selector(
                    ["order"], to_ms(start_at), to_ms(end_at), couchids.KUUID
                ),
            }
            began = time.perf_counter()
            answer = requests.post(f"{server.url}/_replicate", json=body, timeout=600).json()
            timings["POST /_replicate"].append(time.perf_counter() - began)
            written["POST /_replicate"].add(answer["history"][0]["docs_written"])
            client.delete_database(db=target)
        client.delete_database(db=source)
    print(f"{args.docs} orders and {args.docs} clicks; window: {args.docs // 2} orders")
    for name, seconds in timings.items():
        print(
            f"{name:20} median {statistics.median(seconds):6.2f} s  written {sorted(written[name])}"
        )
    ratio = statistics.median(timings["_replicator + wait"]) / statistics.median(
        timings["POST /_replicate"]
    )
    print(f"_replicator + wait / POST /_replicate: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
