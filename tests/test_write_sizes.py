"""Bulk writes split by size, against the Cloudant-rules server (tests/cloudantproxy.py): a
batch stays under ``batch_bytes``, a document over ``document_bytes`` is a failed row and not
sent, and a batch the server refuses as too large (413) is sent again in halves; every other
document is stored exactly once. The tests of both APIs are written once, in
tests/_async/test_write_sizes.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from cloudantproxy import CloudantProxy
from faultproxy import all_docs, client_for
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import BulkWriteError

Start = Callable[..., CloudantProxy]


def documents(count: int, size: int, *, prefix: str = "d") -> list[dict[str, Any]]:
    """``count`` documents of about ``size`` bytes each, with their own ids."""
    return [{"_id": f"{prefix}{n:06}", "n": n, "pad": "x" * size} for n in range(count)]


def stored_once(client: CloudantV1, db: str, docs: list[dict[str, Any]]) -> None:
    """Every document of ``docs`` is in ``db``, written once, and nothing else is; their
    content too when they are few (a full-size run reads ids and revisions only)."""
    if len(docs) <= 5000:
        found = all_docs(client, db)
        for doc in docs:
            assert found[doc["_id"]]["n"] == doc["n"]
        revs = {doc_id: doc["_rev"] for doc_id, doc in found.items()}
    else:
        rows = client.post_all_docs(db=db).get_result()["rows"]
        revs = {row["id"]: row["value"]["rev"] for row in rows}
    assert sorted(revs) == sorted(doc["_id"] for doc in docs)
    assert all(rev.startswith("1-") for rev in revs.values())  # each written once


def test_settings_are_checked(client: CloudantV1, db: str) -> None:
    for bad in (0, -1, 1.5, True, "1"):
        with pytest.raises(couchids.InvalidArgumentError, match="batch_bytes"):
            couchids.Database(client, db).with_options(batch_bytes=bad).bulk_create([{}])
        with pytest.raises(couchids.InvalidArgumentError, match="document_bytes"):
            couchids.Database(client, db).with_options(document_bytes=bad).bulk_create([{}])


def test_handle_setting_is_the_default(cloudant_proxy: Start, client: CloudantV1, db: str) -> None:
    proxy = cloudant_proxy(plan=None, max_request_bytes=100_000)
    handle = couchids.Database(
        client_for(proxy.url), db, options=couchids.Options(batch_bytes=100_000)
    )
    docs = documents(100, 4000)
    assert all(r.ok for r in handle.bulk_create(docs))
    assert not proxy.refused
    stored_once(client, db, docs)


def test_documents_of_40_kb_past_a_request(
    cloudant_proxy: Start, client: CloudantV1, db: str
) -> None:
    """Documents of 40 KB under Cloudant's own 64 MB a request: 1,700 of them (68 MB, more
    than one request's worth) are stored once, and a 2 MB document among them is reported,
    not stored."""
    stored_past_a_request(cloudant_proxy, client, db, 1_700)


@pytest.mark.full
@pytest.mark.needs("node")
def test_fifty_thousand_documents_of_40_kb(
    cloudant_proxy: Start, client: CloudantV1, db: str
) -> None:
    """The same with 50,000 documents (2 GB in 32 requests or more), on one CouchDB node: each
    server took 65-95 s for it, and the property is the client's, so one server shows it."""
    stored_past_a_request(cloudant_proxy, client, db, 50_000)


def stored_past_a_request(cloudant_proxy: Start, client: CloudantV1, db: str, count: int) -> None:
    proxy = cloudant_proxy(plan=None)
    docs = documents(count, 40_000)
    big = {"_id": "big", "n": -1, "pad": "x" * 2_000_000}
    with pytest.raises(BulkWriteError) as caught:
        couchids.Database(client_for(proxy.url), db).with_options(batch_size=count).bulk_create(
            [*docs[: count // 2], big, *docs[count // 2 :]]
        )
    failed = [r for r in caught.value.results if r.error is not None]
    assert [r.id for r in failed] == ["big"]
    assert not proxy.refused
    stored_once(client, db, docs)
