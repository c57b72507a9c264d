# Generated from tests/_async/test_delete_sizes.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""The deletions of expire and archive split by size as bulk writes are
(couchids/core/sizes.py), against the Cloudant-rules server (tests/cloudantproxy.py) with a
small request limit: a request of deletions stays under the handle's ``batch_bytes``; one the
server refuses as too large (413) is sent again in halves. Through couchids.aio.AsyncDatabase
and, in the generated twin, couchids.Database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cloudantproxy import CloudantProxy
from conftest import drop_database, fresh_database
from faultproxy import FaultProxy, all_docs, client_for
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import ServerError
from couchids.core.expiry import ExpireReport
from couchids.idforms.times import to_ms

from .helpers import database

START, END = to_ms("2024-05-01"), to_ms("2024-05-02")
SECOND = 1000
ClientFor = Callable[[CloudantV1], CloudantV1]
#: The longest type: each deletion is over 130 bytes as JSON: 500 of them (a page) over 65 kB.
TYPE = "o" * 64
LIMIT = 30_000


@pytest.fixture
def target(client: CloudantV1) -> Iterator[str]:
    name = fresh_database(client)
    yield name
    drop_database(client, name)


def populate(client: CloudantV1, db: str, count: int) -> None:
    made = couchids.Database(client, db).bulk_create(
        [{"n": n} for n in range(count)], type=TYPE, time_of=lambda doc: START + doc["n"] * SECOND
    )
    assert all(result.ok for result in made)


def deletions(proxy: CloudantProxy, db: str) -> list[Any]:
    return [r for r in proxy.requests("POST", "_bulk_docs") if r.path.startswith(f"/{db}/")]


@pytest.mark.parametrize("split", ["batch_bytes", "refused"])
def test_expire_deletes_in_requests_the_server_takes(
    split: str, blocking_client_for: ClientFor, cloudant_proxy: Any, client: CloudantV1, db: str
) -> None:
    proxy: CloudantProxy = cloudant_proxy(plan=None, max_request_bytes=LIMIT)
    populate(client, db, 500)
    options = {"batch_bytes": LIMIT} if split == "batch_bytes" else {}
    handle = database(blocking_client_for(client_for(proxy.url)), db, **options)
    report = handle.expire(END, type=TYPE, dry_run=False)
    assert (report.deleted, report.failed, report.conflicts) == (500, [], [])
    assert all_docs(client, db) == {}
    if split == "batch_bytes":
        assert not proxy.refused and len(deletions(proxy, db)) >= 3
    else:
        assert proxy.refused["request-body"] > 0


@pytest.mark.parametrize("split", ["batch_bytes", "refused"])
def test_archive_deletes_in_requests_the_server_takes(
    split: str,
    blocking_client_for: ClientFor,
    cloudant_proxy: Any,
    client: CloudantV1,
    db: str,
    target: str,
) -> None:
    proxy: CloudantProxy = cloudant_proxy(plan=None, max_request_bytes=LIMIT)
    populate(client, db, 500)
    options = {"batch_bytes": LIMIT} if split == "batch_bytes" else {}
    handle = database(blocking_client_for(client_for(proxy.url)), db, **options)
    report = handle.archive(target, START, END, type=TYPE, expire=True)
    assert (report.copied, report.failed) == (500, [])
    assert (report.expired.deleted, report.expired.failed, report.expired.conflicts) == (
        500,
        [],
        [],
    )
    assert all_docs(client, db) == {} and len(all_docs(client, target)) == 500
    if split == "batch_bytes":
        assert not proxy.refused and len(deletions(proxy, db)) >= 3
    else:
        assert proxy.refused["request-body"] > 0


def test_an_expire_a_failure_ends_says_what_it_deleted(
    blocking_client_for: ClientFor,
    blocking_client: CloudantV1,
    couch_url: str,
    client: CloudantV1,
    db: str,
) -> None:
    """A page's deletions in two requests, the second failing (503): the documents of the
    first were gone while the error and on_progress (last at 0) said nothing of them. Now
    both tell them, and expire again deletes the rest."""
    populate(client, db, 84)
    told: list[int] = []

    def progress(report: ExpireReport) -> None:
        told.append(report.deleted)

    with FaultProxy(couch_url) as proxy:
        proxy.fail("503-before", method="POST", path="/_bulk_docs", after=1, times=10)
        fresh = blocking_client_for(client_for(proxy.url))
        handle = database(fresh, db, batch_bytes=LIMIT // 4, retries=0)
        with pytest.raises(ServerError) as caught:
            handle.expire(END, type=TYPE, dry_run=False, on_progress=progress)
    gone = 84 - len(all_docs(client, db))
    assert 0 < gone < 84 and told[-1] == gone
    assert f"{gone} documents were deleted before it" in str(caught.value), caught.value
    assert "expire again deletes the rest" in str(caught.value)
    report = database(blocking_client, db).expire(END, type=TYPE, dry_run=False)
    assert report.deleted == 84 - gone and all_docs(client, db) == {}
