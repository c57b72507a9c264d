# Generated from tests/_async/test_expiry.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""couchids.aio.AsyncDatabase.expire (and the count, histogram and export that share its scope
checks) and, in the generated twin, couchids.Database's: ids a form cannot tell from others are
left alone or refused, and a server without _purge deletes nothing. (The ground truth and the
tests of one API alone are in tests/test_expiry.py.)"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from faultproxy import FaultProxy, all_docs, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_expiry import BEFORE, HOUR, populate
from test_query import insert

from couchids import BASE36_V7, KUUID, UTC_RANDOM, V7S, InvalidArgumentError
from couchids.idforms.times import to_ms

from .helpers import database


def test_a_base36_number_that_is_no_uuidv7_is_left_alone(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    """A base36 id's regex cannot see the UUID version bits: expire, export and the exact
    count ask the form's matcher, which reads them."""
    made = {d: BASE36_V7.new(BEFORE + d, type="ord") for d in (-HOUR, -1, 0, HOUR)}
    # The key of a time is itself 25 base36 characters: a number with no UUID version.
    impostors = [f"ord:{BASE36_V7.key(BEFORE + d)}" for d in (-2 * HOUR, -2, 2 * HOUR)]
    insert(client, db, [*made.values(), *impostors])
    start, end = BEFORE - 3 * HOUR, BEFORE + 3 * HOUR
    counted = database(blocking_client, db).count(start, end, type="ord", form=BASE36_V7)
    assert counted == len(made)
    out = io.StringIO()
    database(blocking_client, db, form=BASE36_V7).export(start, end, out=out, type="ord")
    exported = [json.loads(line)["_id"] for line in out.getvalue().splitlines()]
    assert exported == sorted(made.values())
    doomed = {made[-HOUR], made[-1]}
    assert (
        database(blocking_client, db).expire(BEFORE, type="ord", form=BASE36_V7)
    ).matched == len(doomed)
    report = database(blocking_client, db).expire(BEFORE, type="ord", form=BASE36_V7, dry_run=False)
    assert report.deleted == len(doomed)
    assert set(all_docs(client, db)) == {*made.values(), *impostors} - doomed


def test_utc_random_ids_beside_couchdb_random_ids_are_refused(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    """CouchDB's random ids are 32 hex digits too, whose first 14 read as a time anywhere up
    to 4253: one reading as a time inside the utc_random runway (2000-2100) cannot be told
    from a utc_random id. A scope that shows it holds such ids (one reading past 2100) is
    refused by every operation before anything is counted or deleted."""
    utc = [UTC_RANDOM.new(BEFORE + d) for d in (-HOUR, -1, 0, HOUR)]
    inside = f"{to_ms('2020-06-01') * 1000:014x}" + "ab" * 9
    past = f"{to_ms('3000-01-01') * 1000:014x}" + "cd" * 9
    insert(client, db, [*utc, inside, past, V7S.new(BEFORE)])
    start, end = to_ms("2019-01-01"), BEFORE + HOUR + 1
    before = all_docs(client, db)
    calls = (
        lambda: database(blocking_client, db).count(start, end, type=None, form=UTC_RANDOM),
        lambda: database(blocking_client, db).histogram(
            start, end, every="1d", type=None, form=UTC_RANDOM
        ),
        lambda: database(blocking_client, db).expire(BEFORE, type=None, form=UTC_RANDOM),
        lambda: database(blocking_client, db).expire(
            BEFORE, type=None, form=UTC_RANDOM, dry_run=False
        ),
        lambda: database(blocking_client, db, form=UTC_RANDOM).export(
            start, end, out=io.StringIO(), type=None
        ),
    )
    for call in calls:
        with pytest.raises(InvalidArgumentError, match=f"such as '{past}'.*CouchDB's random"):
            call()
    assert all_docs(client, db) == before
    # Without the one past 2100 nothing shows the other: it is taken for a utc_random id of
    # 2020, as documented.
    client.delete_document(db=db, doc_id=past, rev=before[past]["_rev"]).get_result()
    plan = database(blocking_client, db).expire(BEFORE, type=None, form=UTC_RANDOM)
    assert plan.matched == 3


@pytest.mark.needs("couchdb")
def test_a_couchdb_welcome_without_purge_deletes_nothing(
    couch_url: str,
    client: CloudantV1,
    db: str,
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
) -> None:
    """A server that says it is CouchDB and answers ``_purge`` with 404 (a gateway, a proxy):
    the empty purge sent first finds it, and nothing is deleted."""
    populate(client, db, KUUID, 6)
    before = all_docs(client, db)
    with FaultProxy(couch_url) as proxy:
        proxy.fail("404-before", method="POST", path=r"/_purge$", times=10)
        with pytest.raises(InvalidArgumentError, match=r"purge=True: .* has no _purge") as no:
            database(blocking_client_for(client_for(proxy.url)), db).expire(
                BEFORE, type="ord", dry_run=False, purge=True
            )
        assert not proxy.requests("POST", r"/_bulk_docs$")
    assert "HTTP 404" in str(no.value) and "nothing was deleted" in str(no.value)
    assert all_docs(client, db) == before


def test_the_cloudant_rules_server_has_no_purge(
    client: CloudantV1,
    db: str,
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
    cloudant_proxy: Any,
) -> None:
    """Behind the Cloudant-rules server (``_purge`` answers 501 whatever the welcome says):
    refused before anything is deleted, by the welcome (PouchDB Server) or by the empty
    purge (CouchDB)."""
    populate(client, db, KUUID, 7)
    before = all_docs(client, db)
    proxy = cloudant_proxy(plan=None)
    with pytest.raises(InvalidArgumentError, match=r"purge=True: .*no _purge"):
        database(blocking_client_for(client_for(proxy.url)), db).expire(
            BEFORE, type="ord", dry_run=False, purge=True
        )
    assert all_docs(client, db) == before


@pytest.mark.needs("couchdb")
def test_purge_leaves_no_tombstone_of_a_conflicted_document(
    client: CloudantV1, db: str, blocking_client: CloudantV1
) -> None:
    """Every leaf of a conflicted document is deleted, and every tombstone written purged:
    nothing of it is left to replicate."""
    doomed = sorted(populate(client, db, KUUID, 2))
    twice = doomed[0]
    for n in (1, 2):
        client.post_bulk_docs(
            db=db, bulk_docs={"docs": [{"_id": twice, "_rev": f"1-{n:032x}"}], "new_edits": False}
        )
    assert client.get_document(db=db, doc_id=twice, conflicts=True).get_result()["_conflicts"]

    report = database(blocking_client, db).expire(BEFORE, type="ord", dry_run=False, purge=True)

    assert report.deleted == report.purged == len(doomed) and not report.failed, report
    # A purged document is not found at all, a deleted one answers its tombstone (asked again
    # on a cluster until every copy the read reaches has the purge).
    for _ in range(50):
        rows = client.post_all_docs(db=db, keys=doomed).get_result()["rows"]
        if all(row.get("error") == "not_found" for row in rows):
            break
        time.sleep(0.2)
    assert all(row.get("error") == "not_found" for row in rows), rows
