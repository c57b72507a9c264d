# Generated from tests/_async/test_rekeying.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""couchids.aio.AsyncDatabase.rekey and, in the generated twin, couchids.Database.rekey: a
missing target is created only when asked. (The tests of one API alone are in
tests/test_rekeying.py.)"""

from __future__ import annotations

import contextlib

import pytest
from faultproxy import all_docs
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1
from test_rekeying import KEY

from couchids import KUUID, Checkpoint, DatabaseNotFoundError, InvalidArgumentError
from couchids.core.rekeying import derived_id
from couchids.idforms.times import to_ms

from .helpers import database


def test_a_missing_target_is_created_only_when_asked(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    client.put_document(db=db, doc_id="a1", document={"created": "2024-05-01T08:00:00Z"})
    target = db + "_new"
    options = {"secret": KEY, "time_field": "created", "type": "order"}
    try:
        # By default a missing target is an error, and creates nothing (a misspelt name).
        with pytest.raises(DatabaseNotFoundError, match=repr(target)):
            database(blocking_client, db).rekey(target, **options)
        assert target not in client.get_all_dbs().get_result()
        # A missing source creates no target either, even when asked to.
        with pytest.raises(DatabaseNotFoundError, match=repr(db + "_gone")):
            database(blocking_client, db + "_gone").rekey(target, create_target=True, **options)
        assert target not in client.get_all_dbs().get_result()
        report = database(blocking_client, db).rekey(target, create_target=True, **options)
        assert (report.copied, report.duplicates) == (1, 0)
        (new,) = all_docs(client, target)
        assert new == derived_id(KUUID, to_ms("2024-05-01T08:00:00Z"), "a1", KEY, type="order")
        # Once there, it is taken as it is.
        again = database(blocking_client, db).rekey(target, create_target=True, **options)
        assert (again.copied, again.duplicates) == (0, 1)
    finally:
        with contextlib.suppress(ApiException):
            client.delete_database(db=target)


def test_a_checkpoint_of_another_database_is_refused(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    # Any id of the source resumes its walk, but an id it does not hold (a checkpoint saved by
    # another database's run) would skip every source id before it: refused, nothing copied.
    for n in range(4):
        client.put_document(db=db, doc_id=f"a{n}", document={"created": "2024-05-01T08:00:00Z"})
    gone = client.put_document(db=db, doc_id="a2x", document={}).get_result()["rev"]
    client.delete_document(db=db, doc_id="a2x", rev=gone)
    target = db + "_new"
    options = {"secret": KEY, "time_field": "created", "type": "order"}
    try:
        other = Checkpoint(last_id="a9")
        with pytest.raises(InvalidArgumentError, match=f"'a9' is no document of {db!r}"):
            database(blocking_client, db).rekey(
                target, create_target=True, checkpoint=other, **options
            )
        assert target not in client.get_all_dbs().get_result()
        # A source document deleted since its run stopped there still resumes it.
        mark = Checkpoint(last_id="a2x", done=3)
        report = database(blocking_client, db).rekey(
            target, create_target=True, checkpoint=mark, **options
        )
        assert (report.copied, mark.last_id, mark.done) == (1, "a3", 4)
    finally:
        with contextlib.suppress(ApiException):
            client.delete_database(db=target)
