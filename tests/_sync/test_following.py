# Generated from tests/_async/test_following.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""couchids.aio.AsyncDatabase.follow and, in the generated twin, couchids.Database.follow: a
resumed follow misses nothing. (The tests of one API alone are in tests/test_following.py.)"""

from __future__ import annotations

import threading

from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import KUUID, Checkpoint

from .helpers import database, listed


def test_a_resumed_follow_misses_nothing(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    mark = Checkpoint(since_seq="0")
    made = [couchids.Database(client, db).create({"k": k}, type="ord").id for k in range(30)]
    # Stopped inside the second batch: at least once, so some come again.
    follow = listed(
        database(blocking_client, db, batch_size=8).follow(type="ord", checkpoint=mark, wait=False),
        13,
    )
    first = [doc["_id"] for doc in follow]
    saved = Checkpoint.from_json(mark.to_json())
    made += [couchids.Database(client, db).create({"k": k}, type="ord").id for k in range(30, 45)]
    rest = [
        doc["_id"]
        for doc in listed(
            database(blocking_client, db).follow(type="ord", checkpoint=saved, wait=False)
        )
    ]
    assert set(first) | set(rest) == set(made)
    assert len(rest) < len(made)
    assert first[:8] == sorted(first[:8])


def test_a_follow_that_waits_outlasts_a_quiet_spell_longer_than_its_timeout(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    # No change for longer than a request may take (timeout, and poll on top for a long
    # poll): the follow asks again, on every server. PouchDB Server holds a long poll until
    # a change comes, whatever its timeout.
    new = KUUID.new(type="ord")
    later = threading.Timer(3.0, lambda: client.put_document(db=db, doc_id=new, document={}))
    later.start()
    try:
        handle = database(blocking_client, db, timeout=1)
        found = listed(handle.follow(type="ord", poll=0.2), 1)
    finally:
        later.cancel()
        later.join()
    assert [doc["_id"] for doc in found] == [new]
