"""Where expire, archive and rekey leave their checkpoint when a stop comes after a page, through
couchids.aio's handles and, in the generated twin, the blocking ones: at the last id of the work
done (expire: the last document of the page it deleted; archive: the last one it copied;
rekey: the page's last source row, one it skipped too), counting what was done; given back, it
does the rest and nothing twice. (Export's is in tests/test_exporting.py, stopped mid-page.)"""

from __future__ import annotations

import pytest
from faultproxy import all_docs
from ibmcloudant.cloudant_v1 import CloudantV1
from test_expiry import BEFORE, HOUR
from test_query import insert
from test_rekeying import KEY

from couchids import KUUID, Checkpoint
from couchids.drivers.aio import AsyncClient

from .helpers import database


class Stop(Exception):
    pass


def stop(report: object) -> None:
    raise Stop


def made(hours: range) -> list[str]:
    """Ids of type ``ord`` made ``hours`` before ``BEFORE``, in key order."""
    return sorted(KUUID.new(BEFORE - h * HOUR, type="ord") for h in hours)


async def test_expire_stopped_after_a_page_resumes_after_it(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    doomed, kept = made(range(1, 8)), made(range(-3, 0))
    insert(client, db, doomed + kept)
    handle = database(async_client, db, batch_size=3)
    mark = Checkpoint()
    with pytest.raises(Stop):
        await handle.expire(BEFORE, type="ord", dry_run=False, checkpoint=mark, on_progress=stop)
    assert (mark.last_id, mark.done) == (doomed[2], 3)
    assert set(all_docs(client, db)) == set(doomed[3:] + kept)
    report = await handle.expire(BEFORE, type="ord", dry_run=False, checkpoint=mark)
    assert (report.matched, report.deleted) == (4, 4)
    assert (mark.last_id, mark.done) == (doomed[-1], 7)
    assert set(all_docs(client, db)) == set(kept)


async def test_archive_stopped_after_a_page_resumes_after_it(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    inside = made(range(1, 8))
    insert(client, db, inside + made(range(20, 22)))
    target = db + "_archive"
    client.put_database(db=target)
    try:
        handle = database(async_client, db, batch_size=3, parallel=1)
        window = (BEFORE - 10 * HOUR, BEFORE)
        mark = Checkpoint()
        with pytest.raises(Stop):
            await handle.archive(
                target, *window, type="ord", expire=True, checkpoint=mark, on_progress=stop
            )
        assert (mark.last_id, mark.done) == (inside[2], 3)
        assert sorted(all_docs(client, target)) == inside[:3]
        report = await handle.archive(target, *window, type="ord", expire=True, checkpoint=mark)
        assert (report.copied, report.expired.deleted) == (4, 4)
        assert (mark.last_id, mark.done) == (inside[-1], 7)
        assert sorted(all_docs(client, target)) == inside
        assert not set(inside) & set(all_docs(client, db))
    finally:
        client.delete_database(db=target)


async def test_rekey_stopped_after_a_page_resumes_after_it(
    async_client: AsyncClient, client: CloudantV1, db: str
) -> None:
    sources = [f"s{n}" for n in range(7)]
    for n, source in enumerate(sources):
        # s2, the first page's last row, has no time: skipped, it is still passed.
        document = {} if n == 2 else {"created": f"2024-05-0{n + 1}T08:00:00Z"}
        client.put_document(db=db, doc_id=source, document=document)
    target = db + "_rekeyed"
    client.put_database(db=target)
    try:
        handle = database(async_client, db, batch_size=3)
        options = {"secret": KEY, "time_field": "created", "type": "order"}
        mark = Checkpoint()
        with pytest.raises(Stop):
            await handle.rekey(target, checkpoint=mark, on_progress=stop, **options)
        assert (mark.last_id, mark.done) == ("s2", 2)
        assert len(all_docs(client, target)) == 2
        report = await handle.rekey(target, checkpoint=mark, **options)
        assert (report.copied, report.duplicates, report.skipped) == (4, 0, [])
        assert (mark.last_id, mark.done) == ("s6", 6)
        assert len(all_docs(client, target)) == 6
    finally:
        client.delete_database(db=target)
