"""Database.follow sees every document of its type written by concurrent writers. The tests of
both APIs are written once in tests/_async/test_following.py."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import KUUID, KUUID_MS, TID62, UTC_RANDOM, V7S, Checkpoint, IdForm

WRITERS, EACH = 4, 40


def write(couch_url: str, db: str, ids: list[str], n: int) -> None:
    client = client_for(couch_url)
    for k in range(EACH):
        ids.append(couchids.Database(client, db).create({"w": n, "k": k}, type="ord").id)
        couchids.Database(client, db).create({"noise": k}, type="ordx")
        if k % 10 == 0:
            couchids.Database(client, db, form=V7S).create({"noise": k}, type="ord")


def test_follow_sees_every_document_of_four_writers_once(
    couch_url: str, client: CloudantV1, db: str
) -> None:
    couchids.Database(client, db).create({"before": True}, type="ord")
    seen: list[dict[str, Any]] = []
    mark = Checkpoint()
    stream = couchids.Database(client, db).follow(type="ord", checkpoint=mark, poll=0.5)
    written: list[list[str]] = [[] for _ in range(WRITERS)]
    writers = [
        threading.Thread(target=write, args=(couch_url, db, written[n], n)) for n in range(WRITERS)
    ]

    def consume() -> None:
        for doc in stream:
            seen.append(doc)
            if len(seen) >= WRITERS * EACH:
                return

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    consumer.join(timeout=60)
    assert not consumer.is_alive(), f"follow saw {len(seen)} of {WRITERS * EACH}"
    counts = Counter(doc["_id"] for doc in seen)
    assert set(counts) == {i for ids in written for i in ids}
    assert set(counts.values()) == {1}


def test_follow_takes_the_forms_separator(client: CloudantV1, db: str) -> None:
    form = TID62.with_separator("-")
    made = [
        couchids.Database(client, db, form=form).create({"k": k}, type="ord").id for k in range(5)
    ]
    couchids.Database(client, db).create({"noise": 1}, type="ord")  # ord:<kuuid>
    mark = Checkpoint(since_seq="0")
    seen = couchids.Database(client, db, form=form).follow(type="ord", checkpoint=mark, wait=False)
    assert sorted(doc["_id"] for doc in seen) == sorted(made)


def new_id(form: IdForm) -> str:
    """A new ``ord`` id of ``form``; for utc_random, one that is no v7s id too: one utc_random
    id in 64 has a v7s version and variant digit where its random part is, and then nothing
    can tell it from a v7s id (of a time inside a v7s window)."""
    while True:
        doc_id = form.new(type="ord")
        if form is not UTC_RANDOM or not V7S.matcher("ord:")(doc_id):
            return doc_id


def test_follow_takes_the_ids_a_window_of_its_form_returns(client: CloudantV1, db: str) -> None:
    """follow meets ids outside any key range. A second-mode kuuid id fits the millisecond
    pattern (and the other way round), and a v7s id fits utc_random's: each form takes the ids
    a time window of it would return, so a type holding them all is followed form by form."""
    forms = (KUUID, KUUID_MS, UTC_RANDOM, V7S)
    made = {f: [new_id(f) for _ in range(3)] for f in forms}
    for ids in made.values():
        for doc_id in ids:
            couchids.Database(client, db).create({"_id": doc_id})
    for form, ids in made.items():
        mark = Checkpoint(since_seq="0")
        seen = couchids.Database(client, db, form=form).follow(
            type="ord", checkpoint=mark, wait=False
        )
        assert sorted(doc["_id"] for doc in seen) == sorted(ids), form
