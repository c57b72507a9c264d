"""Database.export and Database.archive: a window, oldest first, resumable row for row. The tests
of both APIs are written once, in tests/_async/test_exporting.py."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest
from faultproxy import FaultProxy, all_docs, client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_expiry import BEFORE, HOUR, populate

import couchids
from couchids import KUUID, KUUID_REVERSE, V7, V7S, Checkpoint, IdForm, InvalidArgumentError

FORMS = (KUUID, KUUID_REVERSE, V7, V7S)
START, END = BEFORE - 24 * HOUR, BEFORE + 24 * HOUR


class Broken(Exception):
    pass


class FailingOut(io.StringIO):
    """A stream that fails at its ``fail_at``-th write, before writing it."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.writes, self.fail_at = 0, fail_at

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes == self.fail_at:
            raise Broken
        return super().write(text)


def reference(client: CloudantV1, db: str, form: IdForm) -> list[str]:
    rows = couchids.Database(client, db, form=form).window(
        START, END, type="ord", newest_first=False, include_docs=False
    )
    return [row["id"] for row in rows]


@pytest.mark.parametrize("seed", range(6))
def test_a_resumed_export_equals_an_uninterrupted_one(
    client: CloudantV1, db: str, seed: int
) -> None:
    form = FORMS[seed % len(FORMS)]
    populate(client, db, form, 30 + seed)
    columns = ["_id", "n"] if seed % 2 else None
    whole = io.StringIO()
    couchids.Database(client, db, form=form).export(START, END, out=whole, type="ord", csv=columns)
    rows = len(whole.getvalue().splitlines())
    out = FailingOut(random.Random(seed).randrange(2, rows))
    mark = Checkpoint()
    options = {"type": "ord", "csv": columns}
    handle = couchids.Database(client, db, form=form).with_options(batch_size=4)
    with pytest.raises(Broken):
        handle.export(START, END, out=out, checkpoint=mark, **options)  # type: ignore[arg-type]
    stopped = Checkpoint.from_json(mark.to_json())
    handle.export(START, END, out=out, checkpoint=stopped, **options)  # type: ignore[arg-type]
    assert out.getvalue() == whole.getvalue()
    if columns:
        table = list(csv.reader(io.StringIO(whole.getvalue())))
        assert table[0] == ["_id", "n"] and table[1][1].isdigit()


def test_export_rides_out_lost_answers(couch_url: str, db: str) -> None:
    setup = client_for(couch_url)
    populate(setup, db, KUUID, 40)
    with FaultProxy(couch_url) as proxy:
        client = client_for(proxy.url)
        proxy.fail("503-before", method="POST", path="_all_docs", times=2, after=1)
        out = io.StringIO()
        couchids.Database(client, db).with_options(batch_size=10).export(
            START, END, out=out, type="ord"
        )
        assert proxy.pending() == 0
    ids = [json.loads(line)["_id"] for line in out.getvalue().splitlines()]
    assert ids == reference(setup, db, KUUID)


def test_csv_needs_fields(client: CloudantV1, db: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"csv=\[\]: a CSV export needs fields"):
        couchids.Database(client, db).export(START, END, out=io.StringIO(), csv=[])


def test_export_reads_the_form_it_is_given(client: CloudantV1, db: str) -> None:
    populate(client, db, V7S, 3)  # among ids of other forms made at the same times
    out = io.StringIO()
    mark = couchids.Database(client, db, form=KUUID).export(
        START, END, out=out, type="ord", form=V7S
    )
    ids = [json.loads(line)["_id"] for line in out.getvalue().splitlines()]
    assert ids == reference(client, db, V7S) and mark.done == len(ids) > 0
    assert ids != reference(client, db, KUUID)


def test_archive_reads_page_after_page_with_parallel_1(
    couch_url: str, client: CloudantV1, db: str
) -> None:
    populate(client, db, KUUID, 30)
    target = db + "_archive"
    client.put_database(db=target)
    try:
        with FaultProxy(couch_url) as proxy:
            proxy.hold_for_company("_all_docs", seconds=0.5)
            fresh = client_for(proxy.url)
            report = (
                couchids.Database(fresh, db)
                .with_options(batch_size=10, parallel=1)
                .archive(target, START, END, type="ord")
            )
            assert proxy.most_in_flight == 1
        assert report.copied == len(reference(client, db, KUUID)) > 10
    finally:
        client.delete_database(db=target)


@pytest.mark.parametrize("form", [KUUID, KUUID_REVERSE], ids=str)
def test_archive_copies_then_expires_exactly_the_window(
    client: CloudantV1, db: str, form: IdForm
) -> None:
    populate(client, db, form, 50)
    target = db + "_archive"
    client.put_database(db=target)
    try:
        wanted = set(reference(client, db, form))
        before = all_docs(client, db)
        report = couchids.Database(client, db, form=form).archive(target, START, END, type="ord")
        assert report.copied == len(wanted) and report.failed == []
        copied = all_docs(client, target)
        assert copied == {i: before[i] for i in wanted}
        again = couchids.Database(client, db, form=form).archive(target, START, END, type="ord")
        assert again.copied == len(wanted) and all_docs(client, target) == copied
        gone = (
            couchids.Database(client, db, form=form)
            .with_options(batch_size=6)
            .archive(target, START, END, type="ord", expire=True)
        )
        assert gone.expired.deleted == len(wanted) and gone.expired.conflicts == []
        assert all_docs(client, db) == {i: d for i, d in before.items() if i not in wanted}
        assert all_docs(client, target) == copied
    finally:
        client.delete_database(db=target)
