"""couchids.Sequence: numbers handed out from blocks claimed in the database, on every test
server, and by 40 writers over the three nodes of the cluster. The tests of both APIs are written
once in tests/_async/test_sequence.py."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from typing import Any

import pytest
import requests
from faultproxy import FaultProxy, all_docs, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import answer, intercepted, path_of
from localserver import CouchDBCluster

import couchids
from couchids import (
    SEQ36,
    AllocationFailed,
    InvalidArgumentError,
    InvalidTypeError,
    Sequence,
    ServerError,
    decode,
)
from couchids.core.claim import ALLOC_FIELD
from couchids.core.sequence import BLOCK_PREFIX, block_id

pytestmark = pytest.mark.integration


def numbers(sequence: Sequence, count: int) -> list[int]:
    return [sequence.next() for _ in range(count)]


def blocks(client: CloudantV1, db: str) -> dict[int, int]:
    """Each live block's start and end."""
    return {
        int(doc_id[-20:]): doc["end"]
        for doc_id, doc in all_docs(client, db).items()
        if doc_id.startswith(BLOCK_PREFIX)
    }


def test_a_second_writer_claims_the_block_after_the_highest(client: CloudantV1, db: str) -> None:
    first, second = Sequence(client, db, "a", block=10), Sequence(client, db, "a", block=10)
    assert numbers(first, 2) == [1, 2]
    assert numbers(second, 2) == [11, 12]
    assert numbers(first, 9) == [3, 4, 5, 6, 7, 8, 9, 10, 21]
    # Sequences of other names, including one whose name starts the same, are apart.
    assert numbers(Sequence(client, db, "ab", block=10), 1) == [1]


def test_a_taken_start_is_followed_to_where_its_block_ends(client: CloudantV1, db: str) -> None:
    # Another writer's block of another size at the start this one reads as free (its index
    # read was stale): the claim meets it and goes on from its end, never inside it.
    sequence = Sequence(client, db, "s", block=100)
    client.put_document(db=db, doc_id=block_id("s", 1), document={"end": 51})
    client.put_document(db=db, doc_id=block_id("s", 51), document={"end": 53})

    def stale(request: dict[str, Any], send: Any) -> Any:
        if path_of(request).endswith("/_all_docs"):
            return answer(200, {"rows": []})
        return send()

    with intercepted(client, stale):
        assert sequence.next() == 53
    assert blocks(client, db) == {1: 51, 51: 53, 53: 153}


def test_writers_with_different_block_sizes_never_overlap(client: CloudantV1, db: str) -> None:
    writers = [Sequence(client, db, "mixed", block=size) for size in (1, 2, 5, 13)]
    got = [w.next() for w in itertools.islice(itertools.cycle(writers), 200)]
    assert len(set(got)) == len(got)
    ranges = sorted(blocks(client, db).items())
    assert all(end <= after for (_, end), (after, _) in itertools.pairwise(ranges))


def test_threads_sharing_writers_get_distinct_numbers(client: CloudantV1, db: str) -> None:
    writers = [Sequence(client, db, "t", block=4) for _ in range(3)]
    got: list[int] = []
    lock = threading.Lock()

    def take(writer: Sequence) -> None:
        mine = numbers(writer, 25)
        assert mine == sorted(mine), "increasing within one Sequence"
        with lock:
            got.extend(mine)

    threads = [threading.Thread(target=take, args=(writers[i % 3],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 200 and len(set(got)) == 200


def test_a_lost_answer_to_a_claim_is_retried_and_claims_one_block(
    couch_url: str, client: CloudantV1, db: str
) -> None:
    with FaultProxy(couch_url) as proxy:
        proxy.fail("503-after", method="PUT", times=1)
        assert Sequence(client_for(proxy.url), db, "lost", block=5).next() in (1, 6)
    live = blocks(client, db)
    assert len(live) == 1, "the lost claim left nothing behind or is the block in use"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"name": ""}, "name=''"),
        ({"name": "a:b"}, "letters, digits"),
        ({"name": 7}, "name=7"),
        ({"name": "x", "block": 0}, "block=0"),
        ({"name": "x", "block": True}, "block=True"),
        ({"name": "x", "block": 10**7}, "1000000"),
        ({"name": "x", "options": couchids.Options}, "options="),
    ],
)
def test_bad_settings_are_refused(client: CloudantV1, kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(InvalidArgumentError, match=words):
        Sequence(client, "db", **kwargs)


def test_a_block_changed_by_hand_is_a_clear_error(client: CloudantV1, db: str) -> None:
    client.put_document(db=db, doc_id=block_id("h", 1), document={"end": "ten"})
    with pytest.raises(ServerError, match="changed by hand"):
        Sequence(client, db, "h").next()


@pytest.mark.needs("cluster")
def test_forty_writers_on_three_nodes_never_share_a_number(
    cluster: CouchDBCluster, db: str, client: CloudantV1
) -> None:
    # Small blocks, so that writers claim often and meet at the same start. Forty writers on
    # three nodes of one small machine can wait minutes for an answer: this test is about
    # exclusivity, so no call may run out of time (timeout=None).
    writers = [
        Sequence(
            client_for(cluster.node_urls[i % 3]),
            db,
            "orders",
            block=3,
            options=couchids.Options(timeout=None),
        )
        for i in range(40)
    ]
    got: dict[int, list[int]] = {i: [] for i in range(40)}
    start = threading.Barrier(40)
    failures: list[BaseException] = []

    def run(i: int) -> None:
        try:
            start.wait(timeout=120)
            for _ in range(30):
                got[i].append(writers[i].next())
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # A writer may give up, with AllocationFailed, when fifty claims in a row met other
    # writers' (how often depends on the machine's load): that is the documented outcome,
    # raised, never a number it does not own. Nothing else may end a writer.
    assert [f for f in failures if not isinstance(f, AllocationFailed)] == []
    counts = Counter(n for mine in got.values() for n in mine)
    assert [n for n, c in counts.items() if c > 1] == [], "a number handed out twice"
    assert sum(len(mine) == 30 for mine in got.values()) >= 40 - len(failures) > 0
    assert all(mine == sorted(mine) for mine in got.values()), "increasing within a writer"
    # Every block holds one live revision, its owner's: given-up claims were deleted.
    for doc_id in all_docs(client, db):
        leaves = requests.get(
            f"{cluster.node_urls[0]}/{db}/{doc_id}",
            params={"open_revs": "all", "r": 3},
            headers={"Accept": "application/json"},
            timeout=120,
        ).json()
        alive = [leaf["ok"] for leaf in leaves if not leaf["ok"].get("_deleted")]
        assert len(alive) == 1 and ALLOC_FIELD in alive[0], doc_id


def test_new_id_writes_the_next_number_in_a_seq_form(client: CloudantV1, db: str) -> None:
    invoices = Sequence(client, db, "invoices", block=3)
    assert invoices.new_id() == "0000000001"
    assert invoices.new_id(type="invoice") == "invoice:0000000002"
    seq36 = SEQ36.with_separator("-")
    made = [invoices.new_id(type="inv", form=seq36) for _ in range(3)]
    assert made == ["inv-0000003", "inv-0000004", "inv-0000005"]
    assert [decode(i, form=seq36).type for i in made] == ["inv"] * 3
    with pytest.raises(InvalidArgumentError, match=r"SEQ10 or couchids\.SEQ36"):
        invoices.new_id(form=couchids.KUUID)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        invoices.new_id(type="bad type")
    assert invoices.next() == 6, "a refused call takes no number"
