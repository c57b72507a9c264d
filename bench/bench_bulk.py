"""How much bulk_create costs over a raw ``_bulk_docs`` write of the same documents.

Starts a test server (scripts/localserver.py: PouchDB Server, or with ``COUCHIDS_COUCHDB`` set
an Apache CouchDB node or 3-node cluster), then in interleaved rounds writes 20,000 documents
into a fresh database twice: with ``Database.bulk_create`` (ids assigned, bodies checked, rows
checked) and with ``client.post_bulk_docs`` on the same documents with ids made beforehand, in
batches of the same size. Prints the median and best time of each and their ratios. With
``--delay-ms`` every round trip costs that much more (bench/delayproxy.py), as on a remote
server.

    .venv/bin/python bench/bench_bulk.py [--server pouchdb|couchdb|cluster] [--docs 20000]
                                         [--rounds 7] [--batch-size 500] [--delay-ms 0]

Always exits 0: the PASS/MISS line is for a reader, not a gate (timings vary between machines).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from delayproxy import delayed
from localserver import KINDS, start

from couchids import KUUID, Database

TARGET = 1.0


def make_docs(count: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "event",
            "n": i,
            "name": f"event number {i}",
            "tags": ["bench", "bulk", str(i % 7)],
            "payload": {"ok": i % 2 == 0, "score": i * 0.5},
        }
        for i in range(count)
    ]


def timed(client: CloudantV1, write: Callable[[str], object]) -> float:
    db = f"bench_{uuid.uuid4().hex}"
    client.put_database(db=db)
    try:
        start = time.perf_counter()
        write(db)
        elapsed = time.perf_counter() - start
        count = client.get_database_information(db=db).get_result()["doc_count"]
        return elapsed if count else float("nan")
    finally:
        client.delete_database(db=db)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--server", choices=KINDS, default="pouchdb")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="added to each round trip")
    args = parser.parse_args(argv)
    docs = make_docs(args.docs)
    size = args.batch_size

    with start(args.server) as server, delayed(server.url, args.delay_ms) as url:
        client = CloudantV1(authenticator=NoAuthAuthenticator())
        client.set_service_url(url)

        def with_couchids(db: str) -> None:
            results = (
                Database(client, db).with_options(batch_size=size).bulk_create(docs, type="event")
            )
            assert len(results) == len(docs)

        def raw(db: str) -> None:
            with_ids = raw_docs[db_round[0]]
            for start in range(0, len(with_ids), size):
                rows = client.post_bulk_docs(
                    db=db, bulk_docs={"docs": with_ids[start : start + size]}
                ).get_result()
                assert not any("error" in row for row in rows)

        # Ids for the raw writes are made before the clock starts, one set per round.
        raw_docs = [
            [{**doc, "_id": KUUID.new(type="event")} for doc in docs] for _ in range(args.rounds)
        ]
        db_round = [0]
        # A warm-up of each, so neither pays for the server's first allocations.
        timed(
            client,
            lambda db: Database(client, db).with_options(batch_size=size).bulk_create(docs[:size]),
        )
        timed(client, lambda db: client.post_bulk_docs(db=db, bulk_docs={"docs": docs[:size]}))

        ours: list[float] = []
        theirs: list[float] = []
        for round_number in range(args.rounds):
            db_round[0] = round_number
            # Alternate which goes first, so drift in the server favours neither.
            pair = [(ours, with_couchids), (theirs, raw)]
            for times, write in pair if round_number % 2 == 0 else reversed(pair):
                times.append(timed(client, write))
            print(
                f"round {round_number + 1}: bulk_create {ours[-1]:.3f}s, "
                f"raw _bulk_docs {theirs[-1]:.3f}s",
                flush=True,
            )

    ratio = statistics.median(ours) / statistics.median(theirs)
    print(
        f"{args.server}, {args.delay_ms:g} ms added: {args.docs} documents in batches of "
        f"{size}: bulk_create median "
        f"{statistics.median(ours):.3f}s (best {min(ours):.3f}s), raw _bulk_docs median "
        f"{statistics.median(theirs):.3f}s (best {min(theirs):.3f}s), {args.rounds} rounds"
    )
    verdict = "PASS" if ratio <= TARGET else "MISS"
    print(
        f"ratio bulk_create / raw, {args.delay_ms:g} ms = {ratio:.3f} of medians, "
        f"{min(ours) / min(theirs):.3f} of bests (target <= {TARGET}): {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
