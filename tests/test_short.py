"""Short daily ids: the helpers, and create_short against the test servers.

Races between writers on one node end in 409s. What a cluster does is played here on any
server: the fault proxy turns a 201 into ``202 Accepted``, and a rival's revision is written
with ``new_edits=false``, as replication stores revisions. tests/test_cluster.py has the real
races, on the 3-node cluster. The tests of both APIs are written once, in
tests/_async/test_short.py.
"""

from __future__ import annotations

import itertools
import random
import re
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import unquote

import pytest
import requests
from faultproxy import FaultProxy, all_docs, client_for, update_count
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import intercepted, path_of

from couchids import AllocationFailed, Database, InvalidArgumentError
from couchids.core.claim import Claim
from couchids.core.facts import FactsCache
from couchids.core.policy import RetryPolicy
from couchids.core.revisions import delete_revision
from couchids.core.short import ALLOC_FIELD, SHORT_ID, format_day, random_nonce
from couchids.drivers.blocking import run
from couchids.idforms.constants import SHORT_ID_ALPHABET

NOW = datetime(2026, 1, 7, 15, 4, 5, tzinfo=UTC)
DAY = "260107"


@pytest.fixture
def proxy(couch_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(couch_url) as running:
        yield running


def scripted(*nonces: str) -> Callable[[int], str]:
    """An rng that returns ``nonces`` in order, then keeps returning the last one."""
    queue = list(nonces)

    def next_nonce(length: int) -> str:
        nonce = queue.pop(0) if len(queue) > 1 else queue[0]
        assert len(nonce) == length, f"the test expected a {len(nonce)}-letter try"
        return nonce

    return next_nonce


def db_state(client: CloudantV1, db: str) -> tuple[object, dict[str, Any]]:
    """The update count and every document: equal before and after means nothing written."""
    return update_count(client, db), all_docs(client, db)


# --- helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "day"),
    [
        (datetime(2026, 1, 7, 0, 0, tzinfo=UTC), "260107"),
        (datetime(2026, 1, 7, 23, 59, 59, 999999, tzinfo=UTC), "260107"),
        (datetime(1999, 12, 31, 12), "991231"),  # naive means UTC
        (datetime(2026, 1, 7, 23, 30, tzinfo=timezone(timedelta(hours=-2))), "260108"),
        (datetime(2026, 1, 8, 1, 30, tzinfo=timezone(timedelta(hours=5))), "260107"),
        ("2024-02-29", "240229"),
        (0, "700101"),
        (1_767_744_000_000, "260107"),  # 2026-01-07T00:00:00Z in epoch ms
    ],
)
def test_format_day_is_the_utc_date(now: Any, day: str) -> None:
    assert format_day(now) == day


def test_format_day_defaults_to_today() -> None:
    before = datetime.now(UTC).strftime("%y%m%d")
    day = format_day()
    after = datetime.now(UTC).strftime("%y%m%d")
    assert day in (before, after)


@pytest.mark.parametrize("length", [1, 2, 3, 8])
def test_random_nonce_has_the_length_and_only_safe_letters(length: int) -> None:
    for _ in range(200):
        nonce = random_nonce(length)
        assert len(nonce) == length
        assert set(nonce) <= set("bcdfghjkmnpqrstvwxyz")


def test_random_nonce_uses_every_letter_of_the_alphabet() -> None:
    seen = {random_nonce(1) for _ in range(2000)}
    assert seen == set(SHORT_ID_ALPHABET)


def test_random_nonce_draws_each_letter_from_the_given_random_source() -> None:
    expected = random.Random(42)
    letters = "".join(expected.choice(SHORT_ID_ALPHABET) for _ in range(3))
    assert random_nonce(3, random.Random(42)) == letters


@pytest.mark.parametrize(("rng", "words"), [(lambda n: "ba", "returned 'ba'"), (7, "rng=7")])
def test_random_nonce_refuses_bad_sources(rng: Any, words: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(words)):
        random_nonce(2, rng)


@pytest.mark.parametrize("length", [0, -1, True, 2.0])
def test_random_nonce_refuses_bad_lengths(length: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="length="):
        random_nonce(length)


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("260107-bc", True),
        ("260107-bcf", True),
        ("260107-b", False),
        ("260107-bcdf", False),
        ("260107-ab", False),  # a is not in the alphabet
        ("26017-bc", False),
        ("260107_bc", False),
    ],
)
def test_short_id_pattern(text: str, matches: bool) -> None:
    assert (SHORT_ID.fullmatch(text) is not None) is matches


# --- create_short -------------------------------------------------------------------------


def test_forty_concurrent_writers_get_two_hundred_distinct_ids(
    couch_url: str, client: CloudantV1, db: str
) -> None:
    results: dict[tuple[int, int], str] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(40)

    def writer(number: int) -> None:
        own = client_for(couch_url)
        start.wait()
        try:
            for seq in range(5):
                result = (
                    Database(own, db)
                    .with_options(timeout=None)
                    .create_short({"writer": number, "seq": seq}, timestamp=NOW)
                )
                with lock:
                    results[(number, seq)] = result.id
        except BaseException as exc:  # reported below, with the test's own assertion
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(results) == 200
    assert len(set(results.values())) == 200, "every id is distinct"
    stored = all_docs(client, db)
    assert len(stored) == 200
    for (number, seq), doc_id in results.items():
        assert SHORT_ID.fullmatch(doc_id) and doc_id.startswith(f"{DAY}-")
        doc = stored[doc_id]
        assert (doc["writer"], doc["seq"]) == (number, seq), "every document intact"
        assert doc["_rev"].startswith("1-"), "none overwritten"


def fill_two_letter_ids(client: CloudantV1, db: str) -> None:
    ids = [f"{DAY}-{a}{b}" for a, b in itertools.product(SHORT_ID_ALPHABET, repeat=2)]
    Database(client, db).bulk_create([{"_id": doc_id, "filler": True} for doc_id in ids])
    assert len(all_docs(client, db)) == 400


def test_allocation_fails_when_the_day_is_full(client: CloudantV1, db: str) -> None:
    fill_two_letter_ids(client, db)
    three = [f"{DAY}-{n}" for n in ("bbb", "bbc")]
    Database(client, db).bulk_create([{"_id": doc_id, "filler": True} for doc_id in three])
    before = db_state(client, db)
    taken_three = itertools.cycle(three)

    def rng(length: int) -> str:
        # Any two-letter id is taken; three-letter tries meet the two taken ones.
        return random_nonce(2) if length == 2 else next(taken_three)[-3:]

    with pytest.raises(AllocationFailed):
        Database(client, db).create_short({"n": 1}, timestamp=NOW, rng=rng)
    assert db_state(client, db) == before


def test_a_202_beside_another_writers_revision_gives_the_id_up_and_leaves_theirs(
    proxy: FaultProxy, client: CloudantV1, db: str
) -> None:
    # Two writers of one new id whose revisions reached different copies first: each is
    # answered 202, and the id holds both revisions as conflicting leaves. Neither may own it.
    proxy.fail("202-after", method="PUT", times=1)
    own = client_for(proxy.url)
    rival = {"_id": f"{DAY}-bc", "_rev": "1-" + "f" * 32, ALLOC_FIELD: "rival"}

    def put_beside_rival(request: dict[str, Any], send: Any) -> Any:
        answer = send()
        if request["method"] == "PUT" and path_of(request).endswith(f"/{rival['_id']}"):
            client.post_bulk_docs(db=db, bulk_docs={"docs": [rival], "new_edits": False})
        return answer

    with intercepted(own, put_beside_rival):
        result = Database(own, db).create_short({"n": 1}, timestamp=NOW, rng=scripted("bc", "bd"))
    assert result.id == f"{DAY}-bd"
    standing = client.get_document(db=db, doc_id=rival["_id"], conflicts=True).get_result()
    assert standing[ALLOC_FIELD] == "rival" and "_conflicts" not in standing, "ours deleted"
    assert [d.get("n") for d in all_docs(client, db).values()] == [None, 1]


def test_a_201_owns_the_id_even_when_a_minority_revision_replicates_in_later(
    couch_url: str, client: CloudantV1, db: str
) -> None:
    # Another writer's first write, taken by fewer copies than a quorum (so answered 202 and
    # given up by that writer), may reach our copies later; it never makes our 201 less ours.
    own = client_for(couch_url)

    def put_then_rival(request: dict[str, Any], send: Any) -> Any:
        answer = send()
        if request["method"] == "PUT":
            doc_id = unquote(path_of(request).rsplit("/", 1)[1])
            rival = {"_id": doc_id, "_rev": "1-" + "f" * 32, ALLOC_FIELD: "rival"}
            client.post_bulk_docs(db=db, bulk_docs={"docs": [rival], "new_edits": False})
        return answer

    with intercepted(own, put_then_rival):
        result = Database(own, db).create_short({"n": 1}, timestamp=NOW, rng=scripted("bc"))
    assert result.id == f"{DAY}-bc"
    leaves = client.get_document(db=db, doc_id=result.id, conflicts=True).get_result()
    assert {leaves["_rev"], *leaves["_conflicts"]} == {result.rev, "1-" + "f" * 32}
    assert leaves[ALLOC_FIELD] == "rival", "the rival's revision wins by its hash..."
    # ...until its writer deletes it, which leaves ours alone.
    client.delete_document(db=db, doc_id=result.id, rev="1-" + "f" * 32)
    assert client.get_document(db=db, doc_id=result.id).get_result()["n"] == 1


def test_a_revision_deleted_where_it_is_not_yet_stays_deleted_once_it_arrives(
    client: CloudantV1, couch_url: str, db: str
) -> None:
    """A cluster in two databases: ``behind`` holds our revision, ``ahead`` (the majority)
    holds another writer's and never saw ours. The deletion is sent to ``ahead``, where a
    plain DELETE answers 409 and writes nothing; then ``ahead`` replicates to ``behind`` as a
    cluster's copies do. Our revision must not be left alive there."""
    behind = f"{db}_behind"
    client.put_database(db=behind)
    try:
        doc_id = "260107-bc"
        theirs = {"_id": doc_id, "_rev": "1-" + "a" * 32, "writer": "them"}
        ours = {"_id": doc_id, "_rev": "1-" + "b" * 32, "writer": "us", ALLOC_FIELD: "t"}
        for target, doc in ((db, theirs), (behind, ours)):
            answer = requests.post(
                f"{couch_url}/{target}/_bulk_docs", json={"docs": [doc], "new_edits": False}
            )
            assert answer.status_code == 201, answer.text

        run(client, delete_revision(db, doc_id, ours["_rev"], RetryPolicy.checked(0, 0)))

        # What replication sends: every leaf of ``ahead`` with its history.
        leaves = requests.get(
            f"{couch_url}/{db}/{doc_id}",
            params={"open_revs": "all", "revs": "true"},
            headers={"Accept": "application/json"},
        ).json()
        sent = [leaf["ok"] for leaf in leaves]
        answer = requests.post(
            f"{couch_url}/{behind}/_bulk_docs", json={"docs": sent, "new_edits": False}
        )
        assert answer.status_code == 201, answer.text
        for where in (db, behind):
            live = requests.get(
                f"{couch_url}/{where}/{doc_id}",
                params={"open_revs": "all"},
                headers={"Accept": "application/json"},
            ).json()
            standing = [leaf["ok"] for leaf in live if not leaf["ok"].get("_deleted")]
            assert [leaf.get("writer") for leaf in standing] == ["them"], where
    finally:
        client.delete_database(db=behind)


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ({"_id": "x"}, "a _id"),
        ({"_rev": "1-a"}, "a _rev"),
        ({ALLOC_FIELD: "t"}, ALLOC_FIELD),
        ({"x": {1}}, "not JSON"),
        (["x"], "JSON object"),
    ],
)
def test_create_short_refuses_documents_it_would_have_to_change(
    client: CloudantV1, db: str, doc: Any, words: str
) -> None:
    before = db_state(client, db)
    with pytest.raises(InvalidArgumentError, match=re.escape(words)):
        Database(client, db).create_short(doc, timestamp=NOW)
    assert db_state(client, db) == before


@pytest.mark.parametrize(
    "value", [float("nan"), float("-inf"), {"a": {1: "x", "1": "y"}}, {1, 2}], ids=repr
)
def test_a_claim_refuses_a_document_that_is_not_json_as_a_write_does(value: Any) -> None:
    # Claims are made by create_short (which checks its document first) and by sequences;
    # the claim itself sends only JSON, refused the way a write refuses it, before any request.
    policy = RetryPolicy(retries=0, backoff=0)
    with pytest.raises(InvalidArgumentError, match=r"^the document is not JSON: "):
        Claim(FactsCache(), "db", f"{DAY}-bc", {"n": value}, policy)
