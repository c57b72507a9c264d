"""The couchids demo: sortable ids, the newest documents and a window by type, on a real server.

Run it with ``./scripts/demo``, which starts a local PouchDB Server and sets ``CLOUDANT_URL``
for it. To run it against your own CouchDB or Cloudant instead, set the ``ibmcloudant``
variables yourself (``CLOUDANT_URL``, and ``CLOUDANT_AUTH_TYPE`` with
``CLOUDANT_USERNAME``/``CLOUDANT_PASSWORD`` or ``CLOUDANT_APIKEY``) before ``./scripts/demo``.
It creates (and afterwards deletes) a database called ``couchids-demo``.
"""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime, timedelta

from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import kuuid

DB = "couchids-demo"
TYPES = ("order", "user", "click")


def show(title: str) -> None:
    print(f"\n== {title}")


def main() -> None:
    client = couchids.connect()  # from CLOUDANT_URL, CLOUDANT_AUTH_TYPE, ...
    try:
        client.delete_database(db=DB)
    except ApiException as exc:
        if exc.status_code != 404:
            raise
    client.put_database(db=DB)
    try:
        run(client)
    finally:
        client.delete_database(db=DB)


def run(client: CloudantV1) -> None:
    shop = couchids.Database(client, DB)
    now = datetime.now(UTC)
    rng = random.Random(7)

    show("Ids sort by time; a type goes in front")
    for make in (kuuid.id, kuuid.idms, kuuid.idr, kuuid.v7s):
        print(f"{make.__name__:>5}: {make(type='order')}")

    show("Writing 300 documents spread over the last 3 days (bulk_create, idempotent)")
    docs = []
    for _ in range(300):
        made = now - timedelta(seconds=rng.randrange(3 * 24 * 3600))
        doc_type = rng.choice(TYPES)
        docs.append(
            {
                "_id": couchids.id(made, type=doc_type),
                "kind": doc_type,
                "amount": rng.randrange(1, 500),
                "made": made.isoformat(timespec="seconds"),
            }
        )
    results = shop.bulk_create(docs)
    print(f"stored {sum(not r.duplicate for r in results)} documents")
    again = shop.bulk_create(docs)
    print(
        f"writing them again stores {sum(not r.duplicate for r in again)} more (retries are safe)"
    )
    one = shop.create({"kind": "user", "name": "ada"}, type="user")
    print(f"create() gave {one.id}")
    short = shop.create_short({"title": "hello"})
    print(f"create_short() gave {short.id}")

    show("The 5 newest orders (one request to _all_docs, no index)")
    for doc in shop.latest(5, type="order"):
        print(f"{doc['_id']}  {doc['made']}  amount={doc['amount']}")

    show("Clicks in the last 6 hours, oldest first")
    clicks = shop.window(now - timedelta(hours=6), now, type="click", newest_first=False)
    for doc in clicks:
        print(f"{doc['_id']}  {doc['made']}")

    show("Decoding an id")
    decoded = couchids.decode(one.id)
    print(
        json.dumps(
            {
                "id": decoded.id,
                "type": decoded.type,
                "timestamp": decoded.timestamp.isoformat(),
                "form": str(decoded.form),
            },
            indent=2,
        )
    )

    show("Try it against your own server")
    print(
        "Set CLOUDANT_URL (and CLOUDANT_AUTH_TYPE=basic with CLOUDANT_USERNAME/CLOUDANT_PASSWORD,\n"
        "or iam with CLOUDANT_APIKEY), then run ./scripts/demo again; or use the command line:\n"
        "  couchids latest YOUR_DB -n 5 --type order"
    )


if __name__ == "__main__":
    try:
        main()
    except (couchids.CouchidsError, ApiException, OSError) as exc:  # what to set, or the server
        sys.exit(f"demo: {exc}")
