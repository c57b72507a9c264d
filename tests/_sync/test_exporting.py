# Generated from tests/_async/test_exporting.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""couchids.aio.AsyncDatabase.export (and archive's checks) and, in the generated twin,
couchids.Database's: a window, oldest first, resumable row for row, read in time slices in
parallel. (The tests of one API alone are in tests/test_exporting.py.)"""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest
from conftest import drop_database, fresh_database
from faultproxy import FaultProxy, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_expiry import HOUR, populate
from test_exporting import END, FORMS, START, reference
from test_query import insert

from couchids import KUUID, KUUID_MS, Checkpoint, IdForm, InvalidArgumentError
from couchids.core.pages import DEFAULT_PARALLEL

from .helpers import database


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_export_is_the_window_oldest_first(
    blocking_client: CloudantV1, client: CloudantV1, db: str, form: IdForm
) -> None:
    populate(client, db, form, 21)
    out = io.StringIO()
    mark = database(blocking_client, db, form=form, batch_size=7).export(
        START, END, out=out, type="ord"
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [doc["_id"] for doc in lines] == reference(client, db, form)
    assert len(lines) > 20 and mark.done == len(lines) and mark.last_id == lines[-1]["_id"]


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_a_checkpoint_outside_the_window_resumes_at_its_edge(
    blocking_client: CloudantV1, client: CloudantV1, db: str, form: IdForm
) -> None:
    populate(client, db, form, 25)
    ids = reference(client, db, form)
    # Documents of the database outside the window, as a wider window's export leaves them.
    earliest, latest = "ord:" + form.new(START - HOUR), "ord:" + form.new(END + HOUR)
    insert(client, db, [earliest, latest])
    for last_id, expected in [(earliest, ids), (latest, []), (ids[9], ids[10:])]:
        out = io.StringIO()
        mark = Checkpoint(last_id)
        database(blocking_client, db, form=form, batch_size=4).export(
            START, END, out=out, type="ord", checkpoint=mark
        )
        assert [json.loads(line)["_id"] for line in out.getvalue().splitlines()] == expected


def test_a_checkpoint_of_another_kuuid_mode_is_refused(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    """A kuuid-ms id is written like a kuuid id of after 9999 (a kuuid id like a kuuid-ms one
    of the 1970s), so it sorts past every kuuid window: taken as a resume point it ended export,
    archive and expire at once, as done, having handled nothing."""
    populate(client, db, KUUID, 25)
    ids = reference(client, db, KUUID)
    target = fresh_database(client)
    try:
        for other, form in [(KUUID_MS, KUUID), (KUUID, KUUID_MS)]:
            mark = Checkpoint("ord:" + other.new(START + HOUR))
            handle = database(blocking_client, db, form=form, batch_size=4)
            with pytest.raises(InvalidArgumentError, match="checkpoint last_id="):
                handle.export(START, END, out=io.StringIO(), type="ord", checkpoint=mark)
            with pytest.raises(InvalidArgumentError, match="checkpoint last_id="):
                handle.archive(target, START, END, type="ord", checkpoint=mark)
            with pytest.raises(InvalidArgumentError, match="checkpoint last_id="):
                handle.expire(END, type="ord", dry_run=False, checkpoint=mark)
        assert reference(client, db, KUUID) == ids
        assert not client.post_all_docs(db=target).get_result()["rows"]
    finally:
        drop_database(client, target)


def test_a_checkpoint_of_another_database_is_refused(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    """An id of another database of the same type and form sorts among this one's: taken as a
    resume point, export skipped the documents before it (55 of 204) without a word, archive
    and expire too. Refused before anything is written, copied or deleted; a document of the
    database deleted since still resumes."""
    populate(client, db, KUUID, 25)
    ids = reference(client, db, KUUID)
    other, target = fresh_database(client), fresh_database(client)
    try:
        populate(client, other, KUUID, 26)
        foreign = reference(client, other, KUUID)[len(ids) // 2]
        assert ids[0] < foreign < ids[-1]
        handle = database(blocking_client, db, batch_size=4)
        refused = f"checkpoint last_id={foreign!r} is no document of {db!r}"
        out = io.StringIO()
        with pytest.raises(InvalidArgumentError, match=refused):
            handle.export(START, END, out=out, type="ord", checkpoint=Checkpoint(foreign))
        with pytest.raises(InvalidArgumentError, match=refused):
            handle.archive(
                target, START, END, type="ord", expire=True, checkpoint=Checkpoint(foreign)
            )
        with pytest.raises(InvalidArgumentError, match=refused):
            handle.expire(END, type="ord", dry_run=False, checkpoint=Checkpoint(foreign))
        assert out.getvalue() == "" and reference(client, db, KUUID) == ids
        assert not client.post_all_docs(db=target).get_result()["rows"]
        rev = client.get_document(db=db, doc_id=ids[9]).get_result()["_rev"]
        client.delete_document(db=db, doc_id=ids[9], rev=rev)
        handle.export(START, END, out=out, type="ord", checkpoint=Checkpoint(ids[9]))
        assert [json.loads(line)["_id"] for line in out.getvalue().splitlines()] == ids[10:]
    finally:
        drop_database(client, other)
        drop_database(client, target)


@pytest.mark.parametrize(("parallel", "page_size"), [(None, 4), (1, 50), (6, 4)])
def test_export_reads_time_slices_in_parallel(
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
    couch_url: str,
    client: CloudantV1,
    db: str,
    parallel: int | None,
    page_size: int,
) -> None:
    # Each _all_docs request waits at the proxy for a second one: read page after page, none
    # would ever have company.
    insert(client, db, [KUUID.new(START + k * 60_000, type="ord") for k in range(200)])
    slices = {} if parallel is None else {"parallel": parallel}
    with FaultProxy(couch_url) as proxy:
        # More slices than the default are first held until that many more are in hand.
        crowd = DEFAULT_PARALLEL + 2 if parallel is not None and parallel > DEFAULT_PARALLEL else 2
        proxy.hold_for_company("_all_docs", seconds=0.5, crowd=crowd)
        out = io.StringIO()
        fresh = blocking_client_for(client_for(proxy.url))
        database(fresh, db, batch_size=page_size, **slices).export(START, END, out=out, type="ord")
    assert [json.loads(line)["_id"] for line in out.getvalue().splitlines()] == reference(
        client, db, KUUID
    )
    if parallel == 1:
        assert proxy.most_in_flight == 1
    elif parallel is None:
        assert 1 < proxy.most_in_flight <= DEFAULT_PARALLEL + 1
    else:
        assert DEFAULT_PARALLEL + 1 < proxy.most_in_flight <= parallel + 1


def test_a_bad_parallel_is_refused_before_any_request(blocking_client: CloudantV1) -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InvalidArgumentError, match="parallel"):
            database(blocking_client, "db", parallel=bad).export(START, END, out=io.StringIO())
        with pytest.raises(InvalidArgumentError, match="parallel"):
            database(blocking_client, "db", parallel=bad).archive("target", START, END)
