"""Bulk writes of couchids.aio.AsyncDatabase and, in the generated twin, of couchids.Database,
split by size against the Cloudant-rules server (tests/cloudantproxy.py): a batch stays under
``batch_bytes``, a document over ``document_bytes`` is a failed row and not sent, and a batch
the server refuses as too large (413) is sent again in halves; every other document is stored
exactly once. (The tests of one API alone are in tests/test_write_sizes.py.)"""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_write_sizes import Start, documents, stored_once

import couchids
from couchids import BulkWriteError
from couchids.drivers.aio import AsyncClient

from .helpers import database


async def test_batches_stay_under_batch_bytes(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    cloudant_proxy: Start,
    client: CloudantV1,
    db: str,
) -> None:
    proxy = cloudant_proxy(plan=None, max_request_bytes=1_000_000)
    docs = documents(3000, 4000)
    results = await database(
        async_client_for(client_for(proxy.url)), db, batch_bytes=1_000_000
    ).bulk_create(docs)
    assert [r.id for r in results] == [d["_id"] for d in docs]
    assert all(r.ok and not r.duplicate for r in results)
    assert not proxy.refused  # no request went over the server's limit
    assert len(proxy.requests("POST", "_bulk_docs")) >= 12  # 12 MB in batches of 1 MB
    stored_once(client, db, docs)


async def test_refused_batches_are_split(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    cloudant_proxy: Start,
    client: CloudantV1,
    db: str,
) -> None:
    proxy = cloudant_proxy(plan=None, max_request_bytes=1_000_000)
    docs = documents(3000, 4000)
    results = await database(async_client_for(client_for(proxy.url)), db).bulk_create(
        docs
    )  # batches of 2 MB: refused
    assert all(r.ok and not r.duplicate for r in results)
    assert proxy.refused["request-body"] > 0
    stored_once(client, db, docs)


async def test_a_document_over_document_bytes_is_a_failed_row(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    cloudant_proxy: Start,
    client: CloudantV1,
    db: str,
) -> None:
    proxy = cloudant_proxy(plan=None, max_document_bytes=100_000)
    docs = documents(60, 1000)
    big = {"_id": "big", "n": -1, "pad": "x" * 200_000}
    with pytest.raises(BulkWriteError) as caught:
        await database(
            async_client_for(client_for(proxy.url)), db, document_bytes=100_000
        ).bulk_create([*docs[:30], big, *docs[30:]])
    results = caught.value.results
    failed = [r for r in results if r.error is not None]
    assert [r.id for r in failed] == ["big"]
    error = failed[0].error
    assert isinstance(error, couchids.ServerError) and error.status == 413
    assert error.stored is False and "too large" in str(error)
    assert not proxy.refused  # never sent
    stored_once(client, db, docs)


async def test_inline_attachments_count_against_the_request_not_the_document(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    cloudant_proxy: Start,
    client: CloudantV1,
    db: str,
) -> None:
    """The server measures a document without its inline attachments' data (which has a
    limit of its own), and stores what create stores; bulk_create counted the base64 against
    document_bytes and refused it. The request still carries it all: batch_bytes counts it."""
    proxy = cloudant_proxy(plan=None, max_document_bytes=100_000, max_request_bytes=600_000)
    raw = bytes(range(256)) * 600  # 153,600 bytes, 204,800 as base64
    photo = {"content_type": "application/octet-stream", "data": base64.b64encode(raw).decode()}
    docs = [{"_id": f"p{n}", "n": n, "_attachments": {"a.bin": photo}} for n in range(4)]
    body = {"_id": "body", "pad": "x" * 150_000, "_attachments": {"a.bin": photo}}
    handle = database(
        async_client_for(client_for(proxy.url)),
        db,
        document_bytes=100_000,
        batch_bytes=600_000,
    )
    alone = await handle.create({"_attachments": {"a.bin": photo}})
    with pytest.raises(BulkWriteError) as caught:
        await handle.bulk_create([*docs, body])
    results = caught.value.results
    assert [r.id for r in results if r.ok] == [d["_id"] for d in docs]
    [too_large] = [r for r in results if not r.ok]
    assert too_large.id == "body" and "document_bytes" in str(too_large.error)
    assert not proxy.refused  # a document within its limit, each request within batch_bytes
    assert len(proxy.requests("POST", "_bulk_docs")) >= 2  # 4 x 205 kB over 600 kB
    for doc_id in [alone.id, *(d["_id"] for d in docs)]:
        stored = client.get_document(db=db, doc_id=doc_id).get_result()["_attachments"]
        assert stored["a.bin"]["length"] == len(raw)


async def test_a_document_the_server_refuses_alone_is_a_failed_row(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    cloudant_proxy: Start,
    client: CloudantV1,
    db: str,
) -> None:
    # The server's limit is lower than the client's: it answers 413 document_too_large.
    proxy = cloudant_proxy(plan=None, max_document_bytes=100_000)
    docs = documents(60, 1000)
    big = {"_id": "big", "n": -1, "pad": "x" * 200_000}
    with pytest.raises(BulkWriteError) as caught:
        await database(async_client_for(client_for(proxy.url)), db).bulk_create(
            [*docs[:30], big, *docs[30:]]
        )
    failed = [r for r in caught.value.results if r.error is not None]
    assert [r.id for r in failed] == ["big"]
    assert "document_too_large" in str(failed[0].error)
    assert proxy.refused["document-size"] >= 2  # the batch, its halves, down to the document
    stored_once(client, db, docs)


async def test_a_document_is_measured_as_the_server_measures_it(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    cloudant_proxy: Start,
    client: CloudantV1,
    db: str,
) -> None:
    """Non-ASCII text is sent escaped (``\\u00e9``, 6 bytes), but the server measures a
    document's strings in UTF-8 (CouchDB's couch_ejson_size: 2 bytes for "é"): a document of
    80 KB by the server's measure is stored under a limit of 100 KB, although its JSON as sent
    has 240 KB; one of 120 KB is still a failed row, not sent."""
    proxy = cloudant_proxy(plan=None, max_document_bytes=100_000)
    docs = documents(20, 1000)
    accented = {"_id": "accented", "n": -1, "pad": "é" * 40_000}
    over = {"_id": "over", "n": -2, "pad": "é" * 60_000}
    with pytest.raises(BulkWriteError) as caught:
        await database(
            async_client_for(client_for(proxy.url)), db, document_bytes=100_000
        ).bulk_create([*docs[:10], accented, over, *docs[10:]])
    failed = [r for r in caught.value.results if r.error is not None]
    assert [r.id for r in failed] == ["over"]
    assert "120,0" in str(failed[0].error) and failed[0].error.stored is False
    assert not proxy.refused  # the one over the limit was not sent
    stored_once(client, db, [*docs, accented])
