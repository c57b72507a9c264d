"""create_short of couchids.aio.AsyncDatabase and, in the generated twin, of couchids.Database,
against the test servers.

What a cluster does is played here on any server: the fault proxy turns a 201 into ``202
Accepted`` or a 409. (The helpers, the tests of one API alone and the races between writers are
in tests/test_short.py; tests/test_cluster.py has the real races, on the 3-node cluster.)
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
import requests
from faultproxy import FaultProxy, all_docs, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_short import DAY, NOW, db_state, fill_two_letter_ids, scripted

from couchids import AllocationFailed, ServerError
from couchids.core.short import ALLOC_FIELD
from couchids.drivers.aio import AsyncClient
from couchids.drivers.blocking import database_facts
from couchids.idforms.constants import SHORT_ID_ALPHABET

from .helpers import database


@pytest.fixture
def proxy(couch_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(couch_url) as running:
        yield running


async def test_create_short_stores_the_document_under_a_two_letter_id_of_the_day(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    doc = {"title": "hello", "tags": ["x"]}
    before = copy.deepcopy(doc)
    result = await database(async_client, db).create_short(doc, timestamp=NOW)
    assert doc == before, "the caller's document is not changed"
    assert re.fullmatch(rf"{DAY}-[{SHORT_ID_ALPHABET}]{{2}}", result.id)
    assert result.duplicate is False
    stored = client.get_document(db=db, doc_id=result.id).get_result()
    token = stored.pop(ALLOC_FIELD)
    assert re.fullmatch(r"[0-9a-f]{32}", token)
    assert stored == {**doc, "_id": result.id, "_rev": result.rev}


async def test_create_short_tries_another_nonce_when_the_id_is_taken(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    taken = client.put_document(db=db, doc_id=f"{DAY}-bc", document={"theirs": 1}).get_result()
    result = await database(async_client, db).create_short(
        {"ours": 1}, timestamp=NOW, rng=scripted("bc", "bd")
    )
    assert result.id == f"{DAY}-bd"
    assert client.get_document(db=db, doc_id=f"{DAY}-bc").get_result() == {
        "_id": f"{DAY}-bc",
        "_rev": taken["rev"],
        "theirs": 1,
    }


@pytest.mark.parametrize("mode", ["503-after", "drop-after"])
async def test_a_lost_answer_is_retried_with_the_same_id_and_stored_once(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    proxy: FaultProxy,
    db: str,
    mode: str,
) -> None:
    proxy.fail(mode, method="PUT", path=f"^/{db}/")  # type: ignore[arg-type]
    result = await database(async_client_for(client_for(proxy.url)), db).create_short(
        {"n": 1}, timestamp=NOW
    )
    assert proxy.pending() == 0
    puts = proxy.requests("PUT", f"^/{db}/")
    assert [e.outcome for e in puts[:2]] == [mode, "forwarded"]
    assert puts[0].path == puts[1].path, "the retry used the same id"
    stored = all_docs(client, db)
    assert list(stored) == [result.id], "stored once"
    assert stored[result.id]["_rev"] == result.rev and result.rev.startswith("1-")
    if database_facts(client, db).copies == 1:
        # One copy took the first attempt whole: the id is kept.
        assert len(puts) == 2 and result.duplicate is True
    else:
        # Which copies took the first attempt is unknown: that id is given up (deleted).
        assert len(puts) == 3 and result.id != puts[0].path.split("/")[-1].split("?")[0]
        assert result.duplicate is False


async def test_a_short_id_that_may_have_been_stored_says_to_read_it_not_to_write_it_again(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    proxy: FaultProxy,
    db: str,
) -> None:
    # create_short again would pick another id, and a create under this one would meet the
    # allocation token's revision: reading the document is what finds out.
    proxy.fail("503-after", method="PUT", path=f"^/{db}/")
    shop = database(async_client_for(client_for(proxy.url)), db, retries=0)
    with pytest.raises(ServerError) as caught:
        await shop.create_short({"n": 1}, timestamp=NOW)
    error = caught.value
    assert error.stored is None and error.doc_id is not None
    assert f"document {error.doc_id!r} may have been stored" in str(error)
    assert "read it to find out (create_short again would pick another id)" in str(error)
    assert "write it again" not in str(error)
    assert all_docs(client, db)[error.doc_id]["n"] == 1


async def test_when_every_two_letter_id_is_taken_a_three_letter_id_is_made(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    fill_two_letter_ids(client, db)
    result = await database(async_client, db).create_short({"n": 1}, timestamp=NOW)
    assert re.fullmatch(rf"{DAY}-[{SHORT_ID_ALPHABET}]{{3}}", result.id)
    stored = all_docs(client, db)
    assert len(stored) == 401
    assert all(doc.get("filler") for doc_id, doc in stored.items() if doc_id != result.id)
    # Another day still has every two-letter id free.
    tomorrow = await database(async_client, db).create_short(
        {"n": 2}, timestamp=NOW + timedelta(days=1)
    )
    assert re.fullmatch(rf"260108-[{SHORT_ID_ALPHABET}]{{2}}", tomorrow.id)


async def test_allocation_fails_when_every_try_is_taken_and_leaves_nothing_behind(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    for doc_id in (f"{DAY}-bb", f"{DAY}-bbb"):
        client.put_document(db=db, doc_id=doc_id, document={"theirs": doc_id})
    before = db_state(client, db)
    tries: list[int] = []

    def only_taken(length: int) -> str:
        tries.append(length)
        return "b" * length

    with pytest.raises(AllocationFailed, match=f"no free short id for {DAY}"):
        await database(async_client, db).create_short({"n": 1}, timestamp=NOW, rng=only_taken)
    assert tries == [2] * 10 + [3] * 10
    assert db_state(client, db) == before


async def test_a_write_fewer_copies_than_a_quorum_took_is_given_up_and_deleted(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    proxy: FaultProxy,
    client: CloudantV1,
    db: str,
) -> None:
    proxy.fail("202-after", method="PUT", times=1)
    result = await database(async_client_for(client_for(proxy.url)), db).create_short(
        {"n": 1}, timestamp=NOW, rng=scripted("bc", "bd")
    )
    assert result.id == f"{DAY}-bd" and result.duplicate is False
    assert list(all_docs(client, db)) == [result.id], "the 202 claim is gone"
    # What is left of the given-up claim is a deletion, not a conflict.
    leaves = requests.get(
        f"{proxy.url}/{db}/{DAY}-bc",
        params={"open_revs": "all"},
        headers={"Accept": "application/json"},
        timeout=30,
    ).json()
    assert [leaf["ok"].get("_deleted", False) for leaf in leaves] == [True]


async def test_a_409_that_hides_our_own_revision_never_stores_the_document_twice(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    proxy: FaultProxy,
    client: CloudantV1,
    db: str,
) -> None:
    # The majority refused our write but a copy took it (here: the server took it, the
    # answer says 409). Moving on to another nonce without a look would store it twice.
    proxy.fail("409-after", method="PUT", times=1)
    result = await database(async_client_for(client_for(proxy.url)), db).create_short(
        {"n": 1}, timestamp=NOW, rng=scripted("bc", "bd")
    )
    stored = {doc_id: doc for doc_id, doc in all_docs(client, db).items() if doc.get("n") == 1}
    assert list(stored) == [result.id], "stored exactly once, under the id returned"
    if database_facts(client, db).copies == 1:
        # One copy took the write whole: the id is ours, and the retry says so.
        assert (result.id, result.duplicate) == (f"{DAY}-bc", True)
    else:
        # Some copies lack it; it was deleted again and another id claimed.
        assert (result.id, result.duplicate) == (f"{DAY}-bd", False)
