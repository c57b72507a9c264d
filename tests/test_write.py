"""create and bulk_create: each document stored exactly once, never overwritten.

Fault tests put tests/faultproxy.py between the client and the real local server: the write
reaches the server, and its answer is replaced by a 503 or lost with the connection. The tests of
both APIs are written once, in tests/_async/test_write.py.
"""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json
import pickle
import re
import sys
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
import responses
from faultproxy import FaultProxy, all_docs, client_for, update_count
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import intercepted
from localserver import free_port

from couchids import (
    KUUID_MS,
    V7S,
    ConflictError,
    Database,
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidTypeError,
    ServerError,
    WriteResult,
    decode,
)
from couchids.core.policy import MAX_RETRY_AFTER, RetryPolicy

WHEN = datetime(2024, 5, 1, 12, 30, 15, tzinfo=UTC)


@pytest.fixture
def proxy(couch_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(couch_url) as running:
        yield running


@pytest.fixture
def via_proxy(proxy: FaultProxy) -> CloudantV1:
    """A client whose requests all pass through the fault proxy."""
    return client_for(proxy.url)


# --- create -------------------------------------------------------------------------------


def test_create_uses_the_form(client: CloudantV1, db: str) -> None:
    result = Database(client, db, form=V7S).create({}, type="order", timestamp=WHEN)
    assert str(decode(result.id).form) == "v7s"
    assert decode(result.id).timestamp == WHEN


def test_ids_of_successive_creates_sort_by_time(client: CloudantV1, db: str) -> None:
    times = ["2024-01-01T00:00:01Z", "2023-12-31T23:59:59Z", "2024-06-01T00:00:00Z"]
    ids = {t: Database(client, db).create({"t": t}, timestamp=t).id for t in times}
    assert sorted(ids, key=ids.__getitem__) == sorted(times)


def test_an_own_id_is_kept(client: CloudantV1, db: str) -> None:
    result = Database(client, db).create({"_id": "user:ada", "x": 1}, type="user")
    assert result.id == "user:ada"
    assert client.get_document(db=db, doc_id="user:ada").get_result()["x"] == 1


def test_an_own_id_matching_type_and_time_is_accepted(client: CloudantV1, db: str) -> None:
    own = KUUID_MS.new(WHEN, type="user")
    result = Database(client, db, form=KUUID_MS).create({"_id": own}, type="user", timestamp=WHEN)
    assert result.id == own


@pytest.mark.parametrize(
    ("doc", "kwargs", "words"),
    [
        ({"_id": "order:x"}, {"type": "user"}, "not of type 'user'"),
        ({"_id": "x"}, {"type": "user"}, "not of type 'user'"),
        (
            {"_id": KUUID_MS.new("2020-01-01", type="user")},
            {"timestamp": WHEN, "form": KUUID_MS},
            "another time",
        ),
        ({"_id": "user:not-an-id"}, {"timestamp": WHEN}, "cannot be checked"),
        ({"_id": "_design/x"}, {}, "not starting with '_'"),
        ({"_id": ""}, {}, "non-empty string"),
        ({"_id": 7}, {}, "non-empty string"),
        ({"_rev": "1-abc"}, {}, "never overwrites"),
        ({"x": {1, 2}}, {}, "not JSON"),
        ({"x": float("nan")}, {}, "not JSON"),
    ],
)
def test_create_refuses_documents_it_cannot_store_safely(
    client: CloudantV1, db: str, doc: dict[str, object], kwargs: dict[str, object], words: str
) -> None:
    seq = update_count(client, db)
    with pytest.raises(InvalidArgumentError, match=re.escape(words)):
        Database(client, db).create(doc, **kwargs)  # type: ignore[arg-type]
    assert update_count(client, db) == seq, "nothing was written"


@pytest.mark.parametrize("doc", [["a"], "text", None])
def test_create_refuses_what_is_not_a_json_object(client: CloudantV1, db: str, doc: object) -> None:
    with pytest.raises(InvalidArgumentError, match="JSON object"):
        Database(client, db).create(doc)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [({"retries": -1}, "retries=-1"), ({"retries": 1.5}, "retries="), ({"backoff": -1}, "backoff")],
)
def test_options_refuse_bad_retry_settings(
    client: CloudantV1, db: str, kwargs: dict[str, object], words: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(words)):
        Database(client, db).with_options(**kwargs).create({})


def test_create_refuses_a_bad_type(client: CloudantV1, db: str) -> None:
    with pytest.raises(InvalidTypeError):
        Database(client, db).create({}, type="bad type")


def test_the_retries_run_out_with_a_server_error_and_nothing_stored(
    client: CloudantV1, via_proxy: CloudantV1, proxy: FaultProxy, db: str
) -> None:
    proxy.fail("503-before", method="PUT", path=f"^/{db}/", times=3)
    with pytest.raises(ServerError, match="503") as caught:
        Database(via_proxy, db).with_options(retries=2, backoff=0).create({"n": 1})
    assert caught.value.status == 503
    # A 503 may follow a write the server carried out: the caller is told, with the id.
    assert caught.value.stored is None and caught.value.doc_id is not None
    assert f"document {caught.value.doc_id!r} may have been stored" in str(caught.value)
    assert isinstance(caught.value.__cause__, ApiException)
    assert len(proxy.requests("PUT")) == 3, "the first attempt and two retries"
    assert all_docs(client, db) == {}


def test_a_missing_database_is_raised_at_once(
    via_proxy: CloudantV1, proxy: FaultProxy, db: str
) -> None:
    with pytest.raises(DatabaseNotFoundError, match=f"{db}_gone"):
        Database(via_proxy, f"{db}_gone").create({"n": 1})
    assert len(proxy.requests("PUT")) == 1, "not retried"


def test_an_unreachable_server_is_a_server_error_with_status_0() -> None:
    nobody = client_for(f"http://127.0.0.1:{free_port()}")
    refused = (
        r"^create on 'db' \(PUT /db/\w+\): could not reach the server: Connection refused; "
        r"document '.+' was not "
    )
    with pytest.raises(ServerError, match=refused) as caught:
        Database(nobody, "db").with_options(retries=1, backoff=0).create({})
    assert caught.value.status == 0
    assert caught.value.stored is False and caught.value.doc_id is not None
    assert isinstance(caught.value.__cause__, requests.ConnectionError)


@responses.activate
def test_create_sends_one_put_without_rev_and_honours_a_429() -> None:
    url = re.compile(r"http://couch\.test/orders/user%3A\w+$")
    responses.put(
        url, status=429, json={"error": "too_many_requests"}, headers={"Retry-After": "0"}
    )
    responses.put(url, status=201, json={"ok": True, "id": "x", "rev": "1-a"})
    result = Database(client_for("http://couch.test"), "orders").create({"n": 1}, type="user")
    assert result.rev == "1-a"
    assert len(responses.calls) == 2
    for call in responses.calls:
        request = call.request
        assert request.method == "PUT"
        assert "rev=" not in (request.url or "")
        body = request.body
        raw = body.read() if hasattr(body, "read") else body
        # Cloudant's SDK compresses request bodies by default.
        assert request.headers["content-encoding"] == "gzip"
        assert json.loads(gzip.decompress(raw)) == {"n": 1}
    first, second = (c.request.url for c in responses.calls)
    assert first == second, "the retry keeps the id"


def test_retry_after_is_obeyed_up_to_a_cap() -> None:
    policy = RetryPolicy.checked(3, 0.05)
    assert policy.delay("3", 0) == 3.0
    assert policy.delay("100000", 0) == MAX_RETRY_AFTER
    # An HTTP date instead of seconds: the time until then, now for a date past, capped alike.
    assert policy.delay("Wed, 21 Oct 2015 07:28:00 GMT", 0) == 0.0
    assert policy.delay("Fri, 31 Dec 9999 23:59:59 GMT", 0) == MAX_RETRY_AFTER
    # Nonsense: the backoff, with jitter.
    assert 0.025 <= policy.delay("soon", 0) <= 0.05
    assert 0.1 <= policy.delay(None, 2) <= 0.2


# --- results ------------------------------------------------------------------------------


class Rev(str):
    pass


@pytest.mark.parametrize(
    "rev",
    [
        "1-" + "0" * 32,
        "1-00ff" + "0" * 27 + "1",
        "2-" + "f" * 32,
        "123456789-" + "9a" * 16,
        "1234567890-" + "9a" * 16,
        "01-" + "a" * 32,
        "1-" + "A" * 32,
        "1-" + "a" * 31,
        "1-abc",
        "",
        None,
        5,
        ("1-abc",),
        Rev("1-" + "a" * 32),
    ],
)
def test_a_result_gives_back_its_rev_as_given_however_it_keeps_it(rev: object) -> None:
    result = WriteResult("user:ada", rev, duplicate=True)  # type: ignore[arg-type]
    assert result.rev == rev and type(result.rev) is type(rev)
    assert repr(result) == f"WriteResult(id='user:ada', rev={rev!r}, duplicate=True, error=None)"
    same = WriteResult("user:ada", copy.copy(rev), duplicate=True)  # type: ignore[arg-type]
    assert result == same and hash(result) == hash(("user:ada", rev, True, None))
    assert result != dataclasses.replace(result, duplicate=False)
    for again in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result)):
        assert again == result and type(again.rev) is type(rev)
    assert dataclasses.asdict(result)["rev"] == rev
    match result:
        case WriteResult(_, matched, True, None):
            assert matched == rev
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.rev = "1-abc"  # type: ignore[misc]


def test_a_result_keeps_a_couchdb_revision_in_less_than_its_str() -> None:
    # bulk_create holds every result until it returns (the 200,000-document memory test).
    ids = [f"user:{n:08d}" for n in range(2000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        results = [WriteResult(doc_id, f"1-{n:032x}") for n, doc_id in enumerate(ids)]
        each = (tracemalloc.get_traced_memory()[0] - before) / len(results)
    finally:
        tracemalloc.stop()
    # Besides the result itself and its place in the list, the revision kept.
    rev = each - sys.getsizeof(results[0]) - 8
    assert rev < sys.getsizeof(results[0].rev) / 1.5, rev


# --- bulk_create --------------------------------------------------------------------------


def stored_in_order(client: CloudantV1, db: str, results: list[WriteResult]) -> list[dict]:
    keys = [r.id for r in results]
    rows = client.post_all_docs(db=db, keys=keys, include_docs=True).get_result()["rows"]
    return [row["doc"] for row in rows]


def test_bulk_create_of_nothing_sends_nothing(
    via_proxy: CloudantV1, proxy: FaultProxy, db: str
) -> None:
    assert Database(via_proxy, db).bulk_create([]) == []
    assert proxy.log == []


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"x": object()}, "document 650 is not JSON"),
        ({"_rev": "1-a"}, "document 650 has a _rev"),
        ({"_deleted": True}, "document 650 has a _deleted"),
        ("text", "document 650 is a str"),
    ],
)
def test_a_bad_document_stops_the_call_before_its_batch_is_sent(
    client: CloudantV1, via_proxy: CloudantV1, proxy: FaultProxy, db: str, bad: object, words: str
) -> None:
    docs: list[object] = [{"n": i} for i in range(650)] + [bad]
    with pytest.raises(InvalidArgumentError, match=words) as caught:
        Database(via_proxy, db).with_options(batch_size=100).bulk_create(docs)  # type: ignore[arg-type]
    assert "600 documents before it were handled first (600 stored)" in str(caught.value)
    assert len(proxy.requests("POST", "_bulk_docs")) == 6, "the batches before it, not its own"
    results = caught.value.results
    assert [r.ok for r in results] == [True] * 600
    assert set(all_docs(client, db)) == {r.id for r in results}


@pytest.mark.parametrize(("docs", "size"), [({"n": 1}, 10), ([{}], 0), ([{}], True)])
def test_bulk_create_refuses_bad_arguments(
    client: CloudantV1, db: str, docs: object, size: int
) -> None:
    with pytest.raises(InvalidArgumentError):
        Database(client, db).with_options(batch_size=size).bulk_create(docs)  # type: ignore[arg-type]


def test_a_whole_request_failure_is_raised_as_its_server_error(client: CloudantV1, db: str) -> None:
    with pytest.raises(DatabaseNotFoundError):
        Database(client, f"{db}_gone").bulk_create([{"n": 1}])


# --- the same content, and answers a cluster gives ----------------------------------------


@pytest.mark.parametrize(
    ("stored", "ours"),
    [
        ({"paid": True}, {"paid": 1}),
        ({"paid": 1}, {"paid": True}),
        ({"paid": False}, {"paid": 0}),
        ({"n": "1"}, {"n": 1}),
        ({"n": None}, {"n": 0}),
        ({"a": {"b": [1, True]}}, {"a": {"b": [1, 1]}}),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [2, 1]}}),
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": None}}),
        ({"a": []}, {"a": {}}),
    ],
)
def test_a_stored_document_of_other_json_types_is_a_conflict_not_a_duplicate(
    client: CloudantV1, db: str, stored: dict[str, object], ours: dict[str, object]
) -> None:
    client.put_document(db=db, doc_id="order:1", document=stored)
    before = all_docs(client, db)
    with pytest.raises(ConflictError, match="a different document already has id 'order:1'"):
        Database(client, db).create({"_id": "order:1", **ours})
    assert all_docs(client, db) == before


@pytest.mark.parametrize(
    ("stored", "ours"),
    [
        (
            {"a": 1, "b": {"x": [1, {"y": None}], "z": "s"}},
            {"b": {"z": "s", "x": [1, {"y": None}]}, "a": 1},
        ),
        ({"n": 1}, {"n": 1.0}),
        ({"t": [1, 2]}, {"t": (1, 2)}),
    ],
)
def test_the_same_json_in_another_key_order_or_number_spelling_is_a_duplicate(
    client: CloudantV1, db: str, stored: dict[str, object], ours: dict[str, object]
) -> None:
    rev = client.put_document(db=db, doc_id="order:1", document=stored).get_result()["rev"]
    assert Database(client, db).create({"_id": "order:1", **ours}) == WriteResult(
        "order:1", rev, duplicate=True
    )


HELLO = {"hello.txt": {"content_type": "text/plain", "data": "aGVsbG8gd29ybGQ="}}


def test_a_retried_create_with_attachments_is_stored_once(
    proxy: FaultProxy, via_proxy: CloudantV1, client: CloudantV1, db: str
) -> None:
    proxy.fail("503-after", method="PUT", times=1)
    result = Database(via_proxy, db).create({"n": 1, "_attachments": HELLO}, type="file")
    assert result.duplicate is True
    assert [e.outcome for e in proxy.requests("PUT")] == ["503-after", "forwarded"]
    stored = client.get_document(db=db, doc_id=result.id, attachments=True).get_result()
    assert stored["_attachments"]["hello.txt"]["data"] == HELLO["hello.txt"]["data"]
    assert list(all_docs(client, db)) == [result.id]


@pytest.mark.parametrize(
    "attachments",
    [
        {"hello.txt": {"content_type": "text/plain", "data": "aGVsbG8gV09STEQ="}},
        {"hello.txt": {"content_type": "text/html", "data": "aGVsbG8gd29ybGQ="}},
        {"other.txt": {"content_type": "text/plain", "data": "aGVsbG8gd29ybGQ="}},
        None,
    ],
)
def test_other_attachments_under_the_id_are_a_conflict(
    client: CloudantV1, db: str, attachments: dict[str, object] | None
) -> None:
    Database(client, db).create({"_id": "file:1", "n": 1, "_attachments": HELLO})
    ours: dict[str, object] = {"_id": "file:1", "n": 1}
    if attachments is not None:
        ours["_attachments"] = attachments
    with pytest.raises(ConflictError):
        Database(client, db).create(ours)


def test_a_202_beside_a_different_document_is_withdrawn_and_a_conflict(
    client: CloudantV1, db: str
) -> None:
    theirs = {"_id": "order:1", "_rev": "1-" + "f" * 32, "theirs": True}
    outcome = create_via_lagging_copy(client, db, {"_id": "order:1", "ours": True}, theirs)
    assert outcome == "conflict"
    stored = client.get_document(db=db, doc_id="order:1", conflicts=True).get_result()
    assert stored["theirs"] is True and "_conflicts" not in stored, "no conflict left behind"


def test_a_202_beside_the_same_document_keeps_one_and_reports_a_duplicate(
    client: CloudantV1, db: str
) -> None:
    twin = {"_id": "order:1", "_rev": "1-" + "f" * 32, "same": True}
    outcome = create_via_lagging_copy(client, db, {"_id": "order:1", "same": True}, twin)
    assert outcome == "duplicate"
    stored = client.get_document(db=db, doc_id="order:1", conflicts=True).get_result()
    assert stored["_rev"] == twin["_rev"] and "_conflicts" not in stored


def create_via_lagging_copy(
    client: CloudantV1, db: str, doc: dict[str, object], other: dict[str, object]
) -> str:
    """``create`` as a copy that lagged behind sees it: the PUT is answered 202, and ``other``,
    which the other copies held under the id, then arrives beside it as a conflicting revision
    (written with ``new_edits=false``, as replication writes)."""
    with FaultProxy(client.service_url) as lagging:
        lagging.fail("202-after", method="PUT", times=1)
        lagging_client = client_for(lagging.url)

        def put_then_replicate(request: dict[str, Any], send: Any) -> Any:
            answer = send()
            if request["method"] == "PUT":
                client.post_bulk_docs(db=db, bulk_docs={"docs": [other], "new_edits": False})
            return answer

        try:
            with intercepted(lagging_client, put_then_replicate):
                result = Database(lagging_client, db).create(doc)
        except ConflictError:
            return "conflict"
        return "duplicate" if result.duplicate else "stored"
