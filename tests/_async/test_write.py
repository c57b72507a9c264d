"""create and bulk_create of couchids.aio.AsyncDatabase and, in the generated twin, of
couchids.Database: each document stored exactly once, never overwritten.

Fault tests put tests/faultproxy.py between the client and the real local server: the write
reaches the server, and its answer is replaced by a 503 or lost with the connection. (The tests
of one API alone, and those that need no server, are in tests/test_write.py.)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator

import pytest
from faultproxy import FaultProxy, all_docs, client_for, update_count
from ibmcloudant.cloudant_v1 import CloudantV1
from test_write import WHEN, stored_in_order

from couchids import (
    V7S,
    BulkWriteError,
    ConflictError,
    InvalidTimeError,
    ServerError,
    UnauthorizedError,
    WriteResult,
    decode,
)
from couchids.drivers.aio import AsyncClient

from .helpers import database, listed, series_of


@pytest.fixture
def proxy(couch_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(couch_url) as running:
        yield running


@pytest.fixture
def via_proxy(proxy: FaultProxy) -> CloudantV1:
    """A client whose requests all pass through the fault proxy."""
    return client_for(proxy.url)


async def test_create_stores_the_document_under_a_new_id_of_the_type_and_time(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    doc = {"name": "Ada", "tags": ["a", "b"], "nested": {"n": 1}}
    before = copy.deepcopy(doc)
    result = await database(async_client, db).create(doc, type="user", timestamp=WHEN)
    assert doc == before, "the caller's document is not changed"
    decoded = decode(result.id)
    assert (decoded.type, decoded.timestamp, str(decoded.form)) == ("user", WHEN, "kuuid")
    stored = client.get_document(db=db, doc_id=result.id).get_result()
    assert stored == {**doc, "_id": result.id, "_rev": result.rev}
    assert result.rev is not None and result.rev.startswith("1-")
    assert (result.duplicate, result.ok) == (False, True)


async def test_writing_the_same_document_again_is_a_duplicate_not_a_second_copy(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    first = await database(async_client, db).create({"_id": "user:ada", "n": 1.0, "list": [1, 2]})
    again = await database(async_client, db).create({"_id": "user:ada", "n": 1.0, "list": [1, 2]})
    assert again == WriteResult("user:ada", first.rev, duplicate=True)
    assert list(all_docs(client, db)) == ["user:ada"]


async def test_a_different_document_under_the_id_is_a_conflict_and_changes_nothing(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    first = await database(async_client, db).create({"_id": "user:ada", "n": 1})
    with pytest.raises(ConflictError, match="user:ada") as caught:
        await database(async_client, db).create({"_id": "user:ada", "n": 2})
    assert caught.value.doc_id == "user:ada"
    stored = client.get_document(db=db, doc_id="user:ada").get_result()
    assert stored == {"_id": "user:ada", "_rev": first.rev, "n": 1}


@pytest.mark.parametrize("mode", ["503-after", "drop-after"])
async def test_a_lost_answer_after_the_server_stored_it_is_retried_and_stored_once(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
    mode: str,
) -> None:
    proxy.fail(mode, method="PUT", path=f"^/{db}/")  # type: ignore[arg-type]
    result = await database(async_client_for(via_proxy), db).create({"n": 1}, type="user")
    assert proxy.pending() == 0, "the answer was really lost"
    stored = all_docs(client, db)
    assert list(stored) == [result.id]
    assert stored[result.id] == {"_id": result.id, "_rev": result.rev, "n": 1}
    assert result.rev is not None and result.rev.startswith("1-"), "written once"
    assert result.duplicate is True, "the first attempt stored it"
    puts = proxy.requests("PUT", f"^/{db}/")
    assert [e.outcome for e in puts] == [mode, "forwarded"]
    assert len({e.path for e in puts}) == 1, "the retry used the same id"


@pytest.mark.parametrize("mode", ["503-before", "drop-before"])
async def test_a_request_lost_before_the_server_is_retried_and_stored_once(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
    mode: str,
) -> None:
    proxy.fail(mode, method="PUT", path=f"^/{db}/", times=2)  # type: ignore[arg-type]
    result = await database(async_client_for(via_proxy), db).create({"n": 1})
    assert proxy.pending() == 0
    assert list(all_docs(client, db)) == [result.id]
    assert result.duplicate is False, "no earlier attempt reached the server"


async def test_a_lost_answer_on_an_existing_different_document_is_still_a_conflict(
    async_client: AsyncClient,
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
) -> None:
    first = await database(async_client, db).create({"_id": "user:ada", "n": 1})
    seq = update_count(client, db)
    proxy.fail("503-after", method="PUT", path=f"^/{db}/")
    with pytest.raises(ConflictError, match="user:ada"):
        await database(async_client_for(via_proxy), db).create({"_id": "user:ada", "n": 2})
    assert client.get_document(db=db, doc_id="user:ada").get_result() == {
        "_id": "user:ada",
        "_rev": first.rev,
        "n": 1,
    }
    assert update_count(client, db) == seq


async def test_a_create_that_may_have_been_stored_says_how_to_find_out_and_it_does(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
) -> None:
    # Every answer is lost after the server stored the document, whose id couchids chose: the
    # same call again would store it under a new id, so the error names the id to give.
    proxy.fail("503-after", method="PUT", path=f"^/{db}/", times=2)
    shop = database(async_client_for(via_proxy), db, retries=1, backoff=0)
    with pytest.raises(ServerError) as caught:
        await shop.create({"n": 1}, type="user")
    error = caught.value
    assert error.stored is None and error.doc_id is not None
    assert f"write it again with _id {error.doc_id!r} (or the same key)" in str(error)
    again = await shop.create({"_id": error.doc_id, "n": 1}, type="user")
    assert again.duplicate is True
    assert list(all_docs(client, db)) == [error.doc_id], "stored once"


async def test_a_bulk_create_that_may_have_been_stored_says_how_to_find_out_and_it_does(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
) -> None:
    docs = [{"n": i} for i in range(5)]
    proxy.fail("503-after", method="POST", path="_bulk_docs", times=2)
    shop = database(async_client_for(via_proxy), db, retries=1, backoff=0)
    with pytest.raises(ServerError) as caught:
        await shop.bulk_create(docs, type="user")
    error = caught.value
    assert error.stored is None and error.doc_id is None
    # Many documents ("them", not "it"), under the ids couchids chose, which .results holds.
    assert "these documents may have been stored" in str(error)
    assert "write them again under their ids in .results (or the same keys)" in str(error)
    ids = [result.id for result in error.results]
    proxy.fail("html-404-before", method="POST", path="_bulk_docs")  # certainly not stored
    with pytest.raises(ServerError) as refused:
        await database(async_client_for(via_proxy), db, retries=0).bulk_create(docs)
    assert refused.value.stored is False
    assert str(refused.value).endswith("; these documents were not stored"), str(refused.value)
    again = await shop.bulk_create(
        [{**doc, "_id": doc_id} for doc, doc_id in zip(docs, ids, strict=True)], type="user"
    )
    assert [result.duplicate for result in again] == [True] * 5
    assert sorted(all_docs(client, db)) == sorted(ids), "each stored once"


async def test_bulk_create_stores_every_document_in_batches_in_input_order(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
) -> None:
    docs = [{"n": i} for i in range(1201)]
    before = copy.deepcopy(docs)
    results = await database(async_client_for(via_proxy), db, batch_size=500).bulk_create(
        docs, type="event"
    )
    assert docs == before, "the caller's documents are not changed"
    assert len(proxy.requests("POST", "_bulk_docs")) == 3
    assert len({r.id for r in results}) == 1201
    assert all(decode(r.id).type == "event" and not r.duplicate and r.ok for r in results)
    stored = stored_in_order(client, db, results)
    assert [d["n"] for d in stored] == list(range(1201))
    assert [d["_rev"] for d in stored] == [r.rev for r in results]
    assert len(all_docs(client, db)) == 1201


async def test_a_batch_is_sent_while_the_one_before_it_is_written(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
) -> None:
    # Each _bulk_docs request waits at the proxy for a second one: sent one at a time, each
    # would wait out the 3 s, and none would ever have company. The first batch is sent alone
    # (a refused login costs one request): a request without company waits them out.
    proxy.hold_for_company("_bulk_docs", seconds=3)
    docs = [{"n": i} for i in range(40)]
    results = await database(async_client_for(via_proxy), db, batch_size=10).bulk_create(docs)
    assert proxy.most_in_flight == 2, "two batches in flight, never more"
    assert [d["n"] for d in stored_in_order(client, db, results)] == list(range(40))


async def test_a_batch_sharing_an_id_with_the_one_in_flight_waits_for_it(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
) -> None:
    # Sent together, the second batch's "a" could be stored first, and the first batch's
    # own "a" would be the one reported as the duplicate (or, with other content, refused).
    proxy.hold_for_company("_bulk_docs", seconds=0.5)
    docs = [{"_id": "a", "n": 1}, {"n": 2}, {"n": 3}, {"_id": "a", "n": 9}]
    with pytest.raises(BulkWriteError, match="1 of 4 documents") as caught:
        await database(async_client_for(via_proxy), db, batch_size=3).bulk_create(docs)
    assert proxy.most_in_flight == 1
    results = caught.value.results
    assert [r.ok for r in results] == [True, True, True, False]
    assert isinstance(results[3].error, ConflictError)
    assert all_docs(client, db)["a"]["n"] == 1


@pytest.mark.parametrize("mode", ["503-after", "drop-after"])
async def test_a_batch_whose_answer_was_lost_is_stored_once(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
    mode: str,
) -> None:
    docs = [{"n": i} for i in range(25)]
    # The second of three batches (the one holding n=10) loses its answer after the server
    # stored it. Batches are sent concurrently, so it is picked by its content.
    proxy.fail(mode, method="POST", path="_bulk_docs", containing='"n":10,')  # type: ignore[arg-type]
    results = await database(async_client_for(via_proxy), db, batch_size=10).bulk_create(docs)
    posts = proxy.requests("POST", "_bulk_docs")
    assert sorted(e.outcome for e in posts) == sorted(["forwarded"] * 3 + [mode])
    assert [r.duplicate for r in results] == [False] * 10 + [True] * 10 + [False] * 5
    assert all(r.ok for r in results)
    stored = stored_in_order(client, db, results)
    assert [d["n"] for d in stored] == list(range(25))
    assert [d["_rev"] for d in stored] == [r.rev for r in results]
    assert all(r.rev is not None and r.rev.startswith("1-") for r in results)
    assert len(all_docs(client, db)) == 25, "nothing stored twice"


async def test_bulk_conflicts_are_reported_after_every_batch_and_change_nothing(
    async_client: AsyncClient,
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
) -> None:
    taken = await database(async_client, db).create({"_id": "user:taken", "n": "theirs"})
    same = await database(async_client, db).create({"_id": "user:same", "n": "same"})
    docs = [{"n": i} for i in range(6)]
    docs.insert(1, {"_id": "user:taken", "n": "ours"})
    docs.insert(5, {"_id": "user:same", "n": "same"})
    proxy.fail("503-after", method="POST", path="_bulk_docs")  # a lost answer on top
    with pytest.raises(BulkWriteError, match="1 of 8 documents were not stored") as caught:
        await database(async_client_for(via_proxy), db, batch_size=3).bulk_create(docs)
    results = caught.value.results
    assert [r.id for r in caught.value.failed] == ["user:taken"]
    error = results[1].error
    assert isinstance(error, ConflictError) and error.doc_id == "user:taken"
    assert results[5] == WriteResult("user:same", same.rev, duplicate=True)
    assert client.get_document(db=db, doc_id="user:taken").get_result() == {
        "_id": "user:taken",
        "_rev": taken.rev,
        "n": "theirs",
    }
    stored = all_docs(client, db)
    assert len(stored) == 8, "six new documents and the two that stood there"
    others = [r for i, r in enumerate(results) if i not in (1, 5)]
    assert sorted(stored[r.id]["n"] for r in others) == list(range(6))


async def test_rows_the_server_refuses_are_reported_per_document(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    client.put_design_document(
        db=db,
        ddoc="rules",
        design_document={
            "validate_doc_update": "function (doc) {"
            " if (doc.bad) { throw({forbidden: 'no bad documents'}); } }"
        },
    )
    docs = [{"n": 0}, {"n": 1, "bad": True}, {"n": 2}]
    with pytest.raises(BulkWriteError, match="no bad documents") as caught:
        await database(async_client, db).bulk_create(docs)
    results = caught.value.results
    assert [r.ok for r in results] == [True, False, True]
    error = results[1].error
    assert isinstance(error, UnauthorizedError) and error.status == 403
    assert results[1].rev is None
    stored = all_docs(client, db)
    assert {results[0].id, results[2].id, "_design/rules"} == set(stored)


async def test_an_id_repeated_in_the_input_is_settled_like_a_rerun(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
) -> None:
    # Remembering every id of an unbounded input would take unbounded memory: a repeated id
    # meets the earlier document instead, as a re-run would, in the same batch or a later one.
    docs = [{"_id": "a", "n": 1}, {"n": 2}, {"_id": "a", "n": 1}, {"_id": "a", "n": 9}]
    docs += [{"n": i} for i in range(10, 15)] + [{"_id": "a", "n": 1}]
    with pytest.raises(BulkWriteError, match="1 of 10 documents") as caught:
        await database(async_client_for(via_proxy), db, batch_size=4).bulk_create(docs)
    results = caught.value.results
    assert [r.id for r in results][:4] == ["a", results[1].id, "a", "a"]
    assert [r.duplicate for r in results] == [False, False, True] + [False] * 6 + [True]
    assert isinstance(results[3].error, ConflictError) and results[3].error.doc_id == "a"
    assert caught.value.failed == [results[3]]
    assert all_docs(client, db)["a"]["n"] == 1
    assert len(all_docs(client, db)) == 7, "a, n=2 and n=10..14"


async def test_a_bulk_call_rerun_with_own_ids_reports_duplicates(
    async_client: AsyncClient,
    async_client_for: Callable[[CloudantV1], AsyncClient],
    client: CloudantV1,
    via_proxy: CloudantV1,
    proxy: FaultProxy,
    db: str,
) -> None:
    docs = [{"_id": V7S.new(type="job"), "n": i} for i in range(30)]
    # After two batches the server stops answering: the call fails with 20 documents stored.
    proxy.fail("503-before", method="POST", path="_bulk_docs", after=2, times=100)
    with pytest.raises(ServerError, match="503"):
        await database(
            async_client_for(via_proxy), db, batch_size=10, retries=1, backoff=0
        ).bulk_create(docs)
    # Two batches are in flight at once, so which two the server stored depends on the order
    # they reached it; twenty documents are stored either way.
    before = set(all_docs(client, db))
    assert len(before) == 20
    # Running the whole call again stores each document once: the stored ones are duplicates.
    rerun = await database(async_client, db, batch_size=10).bulk_create(docs)
    assert [r.duplicate for r in rerun] == [d["_id"] in before for d in docs]
    stored = all_docs(client, db)
    assert [stored[d["_id"]]["n"] for d in docs] == list(range(30))
    assert all(stored[r.id]["_rev"] == r.rev and r.rev.startswith("1-") for r in rerun)


async def test_a_202_is_a_stored_write(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    proxy: FaultProxy,
    via_proxy: CloudantV1,
    client: CloudantV1,
    db: str,
) -> None:
    proxy.fail("202-after", method="PUT", times=1)
    result = await database(async_client_for(via_proxy), db).create({"n": 1}, type="order")
    assert result.duplicate is False
    assert client.get_document(db=db, doc_id=result.id).get_result()["_rev"] == result.rev
    # The 202 was checked against every copy's leaves.
    checks = proxy.requests("GET", "open_revs")
    assert [e.path.split("?")[1].split("&r=")[0] for e in checks] == ["open_revs=all"]


async def test_a_202_followed_by_a_404_read_back_is_still_stored(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    proxy: FaultProxy,
    via_proxy: CloudantV1,
    client: CloudantV1,
    db: str,
) -> None:
    # The read reached a copy the write had not reached: that never means "not stored".
    proxy.fail("202-after", method="PUT", times=1)
    proxy.fail("404-before", method="GET", path="open_revs", times=1)
    result = await database(async_client_for(via_proxy), db).create({"n": 1}, type="order")
    assert result == WriteResult(result.id, result.rev, duplicate=False)
    assert list(all_docs(client, db)) == [result.id]
    assert [e.outcome for e in proxy.requests("PUT")] == ["202-after"], "not written twice"


@pytest.mark.parametrize("gives", ["yesterday", 1.5, "2024-13-01", 2**60])
@pytest.mark.parametrize("keyed", [False, True])
async def test_a_time_of_giving_no_time_is_refused_naming_time_of_and_the_document(
    async_client: AsyncClient, client: CloudantV1, db: str, gives: object, keyed: bool
) -> None:
    # The second document's time cannot make an id: the error names the function that gave
    # it, the document and the value, and nothing is stored.
    docs = [{"n": 0}, {"n": 1}]
    own = {"key_of": lambda d: f"row-{d['n']}"} if keyed else {}
    shop = database(async_client, db)

    def time_of(doc: dict[str, int]) -> object:
        return WHEN if doc["n"] == 0 else gives

    writes = {
        "bulk_create": lambda: shop.bulk_create(docs, type="t", time_of=time_of, **own),
        "bulk_create_iter": lambda: listed(
            shop.bulk_create_iter(docs, type="t", time_of=time_of, **own)
        ),
        "Series.bulk_create": lambda: series_of(async_client, db, every="year").bulk_create(
            docs, type="t", time_of=time_of, **own
        ),
    }
    for name, write in writes.items():
        with pytest.raises(InvalidTimeError) as refused:
            await write()
        said = str(refused.value)
        assert said.startswith(f"document 1: time_of= gave {gives!r}: "), (name, said)
    assert all_docs(client, db) == {}
