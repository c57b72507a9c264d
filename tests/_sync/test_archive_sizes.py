# Generated from tests/_async/test_archive_sizes.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""Archive's copies split by size as bulk writes are (couchids/core/sizes.py), against the
Cloudant-rules server (tests/cloudantproxy.py) with small limits: a copy request stays under the
handle's ``batch_bytes``; one the server refuses as too large (413) is sent again in halves; a
document over ``document_bytes``, or refused alone, is reported in ``failed`` and stays in the
source with ``expire=True``; every other document is copied once with its revision and deleted
from the source. Through couchids.aio.AsyncDatabase and, in the generated twin,
couchids.Database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cloudantproxy import CloudantProxy
from conftest import drop_database, fresh_database
from faultproxy import all_docs, client_for
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids.idforms.times import to_ms

from .helpers import database

START, END = to_ms("2024-05-01"), to_ms("2024-05-02")
SECOND = 1000
ClientFor = Callable[[CloudantV1], CloudantV1]


@pytest.fixture
def target(client: CloudantV1) -> Iterator[str]:
    name = fresh_database(client)
    yield name
    drop_database(client, name)


def archive(client: CloudantV1, db: str, target: str, **options: Any) -> Any:
    """``archive(target, START, END, type="ord", expire=True)`` through the handle of ``db``
    tuned with ``options`` (its ``batch_bytes``, ``document_bytes``)."""
    handle = database(client, db, **options)
    return handle.archive(target, START, END, type="ord", expire=True)


def populate(client: CloudantV1, db: str, count: int, size: int) -> dict[str, Any]:
    """``count`` documents of about ``size`` bytes made in the window, written straight to the
    server (no limits); answers them by id, as stored."""
    docs = [{"n": n, "pad": "x" * size} for n in range(count)]
    made = couchids.Database(client, db).bulk_create(
        docs, type="ord", time_of=lambda doc: START + doc["n"] * SECOND
    )
    assert all(result.ok for result in made)
    return all_docs(client, db)


def test_copies_stay_under_batch_bytes(
    blocking_client_for: ClientFor, cloudant_proxy: Any, client: CloudantV1, db: str, target: str
) -> None:
    proxy: CloudantProxy = cloudant_proxy(plan=None, max_request_bytes=1_000_000)
    stored = populate(client, db, 600, 4000)  # pages of 500: 2 MB each
    through = blocking_client_for(client_for(proxy.url))
    report = archive(through, db, target, batch_bytes=1_000_000)
    assert report.copied == 600 and report.failed == []
    assert not proxy.refused  # no request went over the server's limit
    copies = [r for r in proxy.requests("POST", "_bulk_docs") if target in r.path]
    assert len(copies) >= 3  # 2.4 MB in requests of at most 1 MB
    assert all_docs(client, target) == stored  # each with its own revision: copied once
    assert all_docs(client, db) == {}
    assert report.expired.deleted == 600


def test_refused_copies_are_split(
    blocking_client_for: ClientFor, cloudant_proxy: Any, client: CloudantV1, db: str, target: str
) -> None:
    proxy: CloudantProxy = cloudant_proxy(plan=None, max_request_bytes=1_000_000)
    stored = populate(client, db, 600, 4000)
    through = blocking_client_for(client_for(proxy.url))
    report = archive(through, db, target)  # 60 MB a request: the server refuses
    assert proxy.refused["request-body"] > 0
    assert report.copied == 600 and report.failed == []
    assert all_docs(client, target) == stored
    assert all_docs(client, db) == {}


@pytest.mark.parametrize("by", ["client", "server"])
def test_an_oversized_document_is_reported_and_kept(
    blocking_client_for: ClientFor,
    by: str,
    cloudant_proxy: Any,
    client: CloudantV1,
    db: str,
    target: str,
) -> None:
    """The client refuses a document over ``document_bytes`` without sending it; a server
    with a lower limit refuses it, and the batch that held it is halved until it goes alone.
    Either way it is in ``failed``, not in the target, and still in the source, and every
    other document is moved."""
    proxy: CloudantProxy = cloudant_proxy(plan=None, max_document_bytes=100_000)
    stored = populate(client, db, 60, 1000)
    big = couchids.Database(client, db).create(
        {"n": -1, "pad": "x" * 200_000}, type="ord", timestamp=START + 30_500
    )
    options = {"document_bytes": 100_000} if by == "client" else {}
    report = archive(blocking_client_for(client_for(proxy.url)), db, target, **options)
    (failed,) = report.failed
    assert failed[0] == big.id
    if by == "client":
        assert "over document_bytes=100,000" in failed[1] and not proxy.refused
    else:
        assert "refused alone by the server" in failed[1]
        assert proxy.refused["document-size"] > 0
    assert report.copied == 60 and report.expired.deleted == 60
    assert all_docs(client, target) == stored
    assert list(all_docs(client, db)) == [big.id]
