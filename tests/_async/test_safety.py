"""The destructive and long-running operations of couchids.aio.AsyncDatabase and, in the
generated twin, of couchids.Database when their caller or their data is not simple: conflicted
documents (expire and archive take every leaf), rekey's ids, null times and own source, a
histogram of too many buckets, an untyped count past its form's last time, composite partition
scopes, nested keys that are no string. (The helpers and the tests of one API alone are in
tests/test_safety.py.)"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1
from test_query import insert
from test_safety import (
    NEW,
    OLD,
    conflicted,
    couchids_client_never_used,
    leaves,
    live_ids,
)

import couchids
from couchids import KUUID, KUUID_MS, TID62, InvalidArgumentError
from couchids.core.counting import MAX_BUCKETS
from couchids.core.scan import PROBE_ROWS
from couchids.drivers.aio import AsyncClient
from couchids.idforms.times import to_ms

from .helpers import database, listed


async def test_expire_deletes_every_leaf_of_a_conflicted_document(
    client: CloudantV1, db: str, async_client: AsyncClient
) -> None:
    doomed = [couchids.id(OLD, type="order") for _ in range(5)]
    kept = couchids.id(NEW, type="order")
    for doc_id in doomed:
        conflicted(client, db, doc_id, [{"v": "A"}, {"v": "B"}, {"v": "C"}])
    insert(client, db, [kept])

    report = await database(async_client, db).expire("2024-02-01", type="order", dry_run=False)

    assert report.deleted == 5 and report.matched == 5, report
    assert not report.failed and not report.conflicts, report
    assert live_ids(client, db) == {kept}
    assert await database(async_client, db).count("2024-01-01", "2024-02-01", type="order") == 0
    # A second run finds nothing left.
    assert (
        await database(async_client, db).expire("2024-02-01", type="order", dry_run=False)
    ).matched == 0


async def test_archive_with_expire_moves_every_leaf_of_a_conflicted_document(
    client: CloudantV1, db: str, async_client: AsyncClient
) -> None:
    target = db + "-archive"
    client.put_database(db=target)
    try:
        plain = couchids.id(OLD, type="order")
        insert(client, db, [plain])
        twice = couchids.id(OLD, type="order")
        conflicted(client, db, twice, [{"v": "A"}, {"v": "B"}, {"v": "C"}])
        held = leaves(client, db, twice)
        window = ("2024-01-01", "2024-02-01")

        copy = await database(async_client, db).archive(target, *window, type="order")

        assert (copy.copied, copy.conflicted, copy.failed) == (2, [twice], []), copy
        assert leaves(client, target, twice) == held  # every live revision, not the winner's
        assert live_ids(client, db) == {plain, twice} and leaves(client, db, twice) == held

        report = await database(async_client, db).archive(
            target, *window, type="order", expire=True
        )

        assert (report.copied, report.conflicted, report.failed) == (2, [twice], []), report
        assert report.expired.deleted == 2 and not report.expired.conflicts, report
        assert live_ids(client, db) == set()  # no leaf of it is left live
        assert live_ids(client, target) == {plain, twice}
        assert leaves(client, target, twice) == held
    finally:
        client.delete_database(db=target)


async def test_archive_deletes_nothing_the_target_does_not_show_as_copied(
    client: CloudantV1, db: str, async_client: AsyncClient
) -> None:
    # The target knows two of the revisions already: one it deleted since, one edited there.
    # Copying a revision the target knows changes nothing, though it is answered as stored.
    target = db + "-archive"
    client.put_database(db=target)
    try:
        plain, deleted, edited = (couchids.id(OLD, type="order") for _ in range(3))
        insert(client, db, [plain, deleted, edited])
        held = {i: client.get_document(db=db, doc_id=i).get_result() for i in (deleted, edited)}
        client.post_bulk_docs(
            db=target, bulk_docs={"docs": list(held.values()), "new_edits": False}
        )
        client.delete_document(db=target, doc_id=deleted, rev=held[deleted]["_rev"])
        client.put_document(db=target, doc_id=edited, document={**held[edited], "n": "edited"})

        report = await database(async_client, db).archive(
            target, "2024-01-01", "2024-02-01", type="order", expire=True
        )

        assert report.copied == 1 and report.expired.deleted == 1, report
        assert sorted(i for i, _ in report.failed) == sorted([deleted, edited]), report
        assert all("not stored" in why for _, why in report.failed), report
        assert live_ids(client, db) == {deleted, edited}  # kept: the target does not hold them
        assert live_ids(client, target) == {plain, edited}
    finally:
        client.delete_database(db=target)


async def test_archive_and_rekey_refuse_their_own_source(
    client: CloudantV1, db: str, async_client: AsyncClient
) -> None:
    insert(client, db, [couchids.id(OLD, type="order")])
    with pytest.raises(InvalidArgumentError, match="is the source database"):
        await database(async_client, db).archive(
            db, "2024-01-01", "2024-02-01", type="order", expire=True
        )
    with pytest.raises(InvalidArgumentError, match="is the source database"):
        await database(async_client, db).rekey(db, secret=b"k", time_field="at")
    assert len(live_ids(client, db)) == 1


async def test_rekey_copies_every_id_whatever_its_characters(
    client: CloudantV1, db: str, async_client: AsyncClient
) -> None:
    target = db + "-rekeyed"
    client.put_database(db=target)
    try:
        ids = ["a", "zz", "~", "\u00e9t\u00e9", "\ufff0", "\ufff0x", "\uffff", "\U0001f600"]
        docs = [{"_id": i, "at": "2024-01-10T00:00:00Z"} for i in ids]
        client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
        mapping = io.StringIO()

        report = await database(async_client, db).rekey(
            target, secret=b"k", time_field="at", mapping=mapping
        )

        copied = {json.loads(line)["old"] for line in mapping.getvalue().splitlines()}
        assert copied == set(ids), report
        assert report.copied == len(ids) and not report.skipped and not report.failed
        assert len(live_ids(client, target)) == len(ids)
    finally:
        client.delete_database(db=target)


async def test_rekey_refuses_a_null_time_and_never_reads_it_as_now(
    client: CloudantV1, db: str, async_client: AsyncClient
) -> None:
    target = db + "-rekeyed"
    client.put_database(db=target)
    try:
        docs = [{"_id": "a", "at": None}, {"_id": "b", "at": "2024-01-10"}, {"_id": "c"}]
        # A time ago or now would be another time on every run; an int of seconds, 1970.
        docs += [
            {"_id": "d", "at": "24h"},
            {"_id": "e", "at": "now"},
            {"_id": "f", "at": 1704844800},
        ]
        client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
        for _ in range(2):
            report = await database(async_client, db).rekey(target, secret=b"k", time_field="at")
            reasons = dict(report.skipped)
            assert set(reasons) == {"a", "c", "d", "e", "f"}, report
            assert "null" in reasons["a"] and "no field" in reasons["c"]
            assert "relative to now" in reasons["d"] and "relative to now" in reasons["e"]
            assert "1704844800 * 1000" in reasons["f"]
        assert len(live_ids(client, target)) == 1  # the second run stored nothing more
    finally:
        client.delete_database(db=target)


async def test_a_histogram_of_too_many_buckets_is_refused_before_any_request(
    async_client_for: Callable[[CloudantV1], AsyncClient],
) -> None:
    with pytest.raises(InvalidArgumentError, match="buckets"):
        # No client is needed: the arguments are checked before anything is sent.
        await database(async_client_for(couchids_client_never_used()), "db").histogram(
            "2024-01-01", "2024-01-02", every="1ms"
        )
    assert MAX_BUCKETS == 100_000


@pytest.mark.parametrize("form", [KUUID_MS, TID62], ids=str)
async def test_an_untyped_count_past_the_forms_last_time_equals_the_window(
    client: CloudantV1, db: str, async_client: AsyncClient, form: Any
) -> None:
    at = to_ms("2024-01-10T00:00:00Z")
    # More untyped ids than a count by offset probes at the range's start (PROBE_ROWS), so
    # that only the range itself can keep the typed ones out.
    untyped = [form.new(at + n) for n in range(PROBE_ROWS + 5)]
    typed = [form.new(at + n, type="order") for n in range(7)]
    insert(client, db, untyped + typed)
    client.put_design_document(db=db, ddoc="d", design_document={"views": {}})
    end = "9999-01-01"

    shown = await listed(database(async_client, db).window("2020-01-01", end, form=form))
    counted = await database(async_client, db).count("2020-01-01", end, form=form)
    buckets = await database(async_client, db).histogram(
        "2020-01-01", end, form=form, every="1000w"
    )

    assert len(shown) == counted == sum(b.count for b in buckets) == len(untyped)


@pytest.mark.needs("couchdb")
async def test_composite_partition_scopes_are_read_from_their_partition(
    client: CloudantV1, partitioned_db: str, async_client: AsyncClient
) -> None:
    db, scope = partitioned_db, "sensor-1:reading"
    old = [KUUID.new(to_ms(OLD) + n * 1000, type=scope) for n in range(4)]
    new = [KUUID.new(to_ms(NEW) + n * 1000, type=scope) for n in range(3)]
    other = [KUUID.new(to_ms(OLD) + n * 1000, type="sensor-2:reading") for n in range(2)]
    insert(client, db, old + new + other)
    out = io.StringIO()

    assert await database(async_client, db).count("2024-01-01", "2024-02-01", type=scope) == 4
    await database(async_client, db).export("2024-01-01", "2024-04-01", out=out, type=scope)
    report = await database(async_client, db).expire("2024-02-01", type=scope, dry_run=False)

    assert {json.loads(line)["_id"] for line in out.getvalue().splitlines()} == set(old + new)
    assert report.deleted == 4
    assert live_ids(client, db) == set(new + other)


async def test_a_nested_key_that_is_not_a_string_is_refused_not_merged(
    client: CloudantV1, db: str, async_client: AsyncClient
) -> None:
    doc = {"a": {1: "one", "1": "the string"}}
    with pytest.raises(InvalidArgumentError, match="the key 1"):
        await database(async_client, db).create(doc, type="order")
    with pytest.raises(InvalidArgumentError, match="the key 1"):
        await database(async_client, db).bulk_create([{"n": 1}, doc], type="order")
    assert await database(async_client, db).count("2000-01-01", "2100-01-01", type="order") <= 1
