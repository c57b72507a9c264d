# Generated from tests/_async/test_following.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""couchids.aio.AsyncDatabase.follow and, in the generated twin, couchids.Database.follow: a
resumed follow misses nothing. (The tests of one API alone are in tests/test_following.py.)"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
from faultproxy import FaultProxy, client_for
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import KUUID, Checkpoint, InvalidArgumentError

from .helpers import close, database, listed


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


def test_a_checkpoint_of_no_sequence_is_refused_before_a_request(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    """A checkpoint's since_seq 'abc' handed out none of the documents on PouchDB Server (and
    '-5' all of them), CouchDB answered 400: refused as follow's since_seq is, when the
    checkpoint is made, read, or given back changed."""
    made = [couchids.Database(client, db).create({"k": k}, type="ord").id for k in range(12)]
    for seq in ("abc", "-5", -5, "1-"):
        refused = f"Checkpoint since_seq={seq!r} is no _changes sequence"
        with pytest.raises(InvalidArgumentError, match=refused):
            Checkpoint(since_seq=seq)
        with pytest.raises(InvalidArgumentError, match=refused):
            Checkpoint.from_json(json.dumps({"since_seq": seq}))
        mark = Checkpoint()
        mark.since_seq = seq
        with pytest.raises(InvalidArgumentError, match=refused):
            listed(database(blocking_client, db).follow(type="ord", checkpoint=mark, wait=False))
    mark = Checkpoint(since_seq="0")
    found = listed(database(blocking_client, db).follow(type="ord", checkpoint=mark, wait=False))
    assert sorted(doc["_id"] for doc in found) == sorted(made)


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


def test_a_follow_that_waits_needs_no_welcome_from_the_server(
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
    couch_url: str,
    client: CloudantV1,
    db: str,
) -> None:
    # A proxy in front of the server that serves its databases only: GET / is not found.
    made = couchids.Database(client, db).create({"k": 0}, type="ord").id
    with FaultProxy(couch_url) as proxy:
        proxy.fail("404-before", method="GET", path="^/$", times=10)
        through = blocking_client_for(client_for(proxy.url))
        handle = database(through, db, timeout=5)
        found = listed(handle.follow(type="ord", since_seq=0, poll=0.2), 1)
        close(through)
    assert [doc["_id"] for doc in found] == [made]
