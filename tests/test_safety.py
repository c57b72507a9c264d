"""The destructive and long-running operations when their caller or their data is not simple.

Conflicted documents (several live leaf revisions, made here as replication makes them, with
``new_edits=false``): ``expire`` deletes every leaf, so ``count`` agrees with what is left;
``archive`` copies every live leaf of such a document, and with ``expire=True`` deletes every
one it copied. ``rekey`` copies every
id whatever its characters, refuses a time field that is null, and refuses to copy into its own
source, as ``archive`` does. A histogram of too many buckets is refused before any request; an
untyped count reaching past its form's last time equals the window; composite partition scopes
are read from their partition. Every case runs on each configured server and through both APIs.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from apis import Api
from bendproxy import BendProxy
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import body_of, intercepted, path_of
from test_query import insert

import couchids
from couchids import KUUID, KUUID_MS, TID62, InvalidArgumentError
from couchids.core.answers import KeySpan, check_span
from couchids.core.counting import MAX_BUCKETS
from couchids.core.policy import RetryPolicy
from couchids.core.scan import PROBE_ROWS
from couchids.errors import ServerError
from couchids.idforms.times import to_ms

OLD, NEW = "2024-01-10T00:00:00Z", "2024-03-10T00:00:00Z"


def conflicted(client: CloudantV1, db: str, doc_id: str, versions: list[dict[str, Any]]) -> None:
    """Give ``doc_id`` one live leaf revision per version (siblings of revision 1)."""
    docs = [
        {"_id": doc_id, "_rev": f"1-{n:032x}", **version} for n, version in enumerate(versions, 1)
    ]
    client.post_bulk_docs(db=db, bulk_docs={"docs": docs, "new_edits": False}).get_result()
    leaves = client.get_document(db=db, doc_id=doc_id, conflicts=True).get_result()
    assert len(leaves.get("_conflicts", [])) == len(versions) - 1


def live_ids(client: CloudantV1, db: str) -> set[str]:
    return {row["id"] for row in client.post_all_docs(db=db).get_result()["rows"]}


def test_expire_deletes_every_leaf_of_a_conflicted_document(
    client: CloudantV1, db: str, api: Api
) -> None:
    doomed = [couchids.id(OLD, type="order") for _ in range(5)]
    kept = couchids.id(NEW, type="order")
    for doc_id in doomed:
        conflicted(client, db, doc_id, [{"v": "A"}, {"v": "B"}, {"v": "C"}])
    insert(client, db, [kept])

    report = api.expire(client, db, "2024-02-01", type="order", dry_run=False)

    assert report.deleted == 5 and report.matched == 5, report
    assert not report.failed and not report.conflicts, report
    assert live_ids(client, db) == {kept}
    assert api.count(client, db, "2024-01-01", "2024-02-01", type="order", exact=True) == 0
    # A second run finds nothing left.
    assert api.expire(client, db, "2024-02-01", type="order", dry_run=False).matched == 0


def leaves(client: CloudantV1, db: str, doc_id: str) -> dict[str, dict[str, Any]]:
    """Every live leaf revision of ``doc_id`` in ``db``, by revision, as stored."""
    doc = client.get_document(db=db, doc_id=doc_id, conflicts=True).get_result()
    found = {doc["_rev"]: doc}
    for rev in doc.pop("_conflicts", []):
        found[rev] = client.get_document(db=db, doc_id=doc_id, rev=rev).get_result()
    return found


def test_archive_with_expire_moves_every_leaf_of_a_conflicted_document(
    client: CloudantV1, db: str, api: Api
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

        copy = api.archive(client, db, target, *window, type="order")

        assert (copy.copied, copy.conflicted, copy.failed) == (2, [twice], []), copy
        assert leaves(client, target, twice) == held  # every live revision, not the winner's
        assert live_ids(client, db) == {plain, twice} and leaves(client, db, twice) == held

        report = api.archive(client, db, target, *window, type="order", expire=True)

        assert (report.copied, report.conflicted, report.failed) == (2, [twice], []), report
        assert report.expired.deleted == 2 and not report.expired.conflicts, report
        assert live_ids(client, db) == set()  # no leaf of it is left live
        assert live_ids(client, target) == {plain, twice}
        assert leaves(client, target, twice) == held
    finally:
        client.delete_database(db=target)


def test_archive_deletes_only_the_revisions_it_copied(client: CloudantV1, db: str) -> None:
    target = db + "-archive"
    client.put_database(db=target)
    try:
        twice = couchids.id(OLD, type="order")
        conflicted(client, db, twice, [{"v": "A"}, {"v": "B"}])
        held = leaves(client, db, twice)
        late = {"_id": twice, "_rev": f"1-{9:032x}", "v": "late"}

        def add_a_leaf_once_copied(request: dict[str, Any], send: Any) -> Any:
            answer = send()
            if path_of(request) == f"/{target}/_bulk_docs":
                assert {doc["_rev"] for doc in body_of(request)["docs"]} == set(held)
                client.post_bulk_docs(db=db, bulk_docs={"docs": [late], "new_edits": False})
            return answer

        with intercepted(client, add_a_leaf_once_copied):
            report = couchids.Database(client, db).archive(
                target, "2024-01-01", "2024-02-01", type="order", expire=True
            )

        # The leaf written after the copy was not copied: it stays, the document is reported.
        assert report.expired.conflicts == [twice] and report.expired.deleted == 0, report
        assert set(leaves(client, db, twice)) == {late["_rev"]}
        assert leaves(client, target, twice) == held
        # A re-run moves it.
        again = couchids.Database(client, db).archive(
            target, "2024-01-01", "2024-02-01", type="order", expire=True
        )
        assert again.expired.deleted == 1 and live_ids(client, db) == set(), again
        assert set(leaves(client, target, twice)) == {*held, late["_rev"]}
    finally:
        client.delete_database(db=target)


def test_archive_and_rekey_refuse_their_own_source(client: CloudantV1, db: str, api: Api) -> None:
    insert(client, db, [couchids.id(OLD, type="order")])
    with pytest.raises(InvalidArgumentError, match="is the source database"):
        api.archive(client, db, db, "2024-01-01", "2024-02-01", type="order", expire=True)
    with pytest.raises(InvalidArgumentError, match="is the source database"):
        api.rekey(client, db, db, key=b"k", time_field="at")
    assert len(live_ids(client, db)) == 1


def test_rekey_copies_every_id_whatever_its_characters(
    client: CloudantV1, db: str, api: Api
) -> None:
    target = db + "-rekeyed"
    client.put_database(db=target)
    try:
        ids = ["a", "zz", "~", "\u00e9t\u00e9", "\ufff0", "\ufff0x", "\uffff", "\U0001f600"]
        docs = [{"_id": i, "at": "2024-01-10T00:00:00Z"} for i in ids]
        client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
        mapping = io.StringIO()

        report = api.rekey(client, db, target, key=b"k", time_field="at", mapping=mapping)

        copied = {json.loads(line)["old"] for line in mapping.getvalue().splitlines()}
        assert copied == set(ids), report
        assert report.copied == len(ids) and not report.skipped and not report.failed
        assert len(live_ids(client, target)) == len(ids)
    finally:
        client.delete_database(db=target)


def test_rekey_refuses_a_null_time_and_never_reads_it_as_now(
    client: CloudantV1, db: str, api: Api
) -> None:
    target = db + "-rekeyed"
    client.put_database(db=target)
    try:
        docs = [{"_id": "a", "at": None}, {"_id": "b", "at": "2024-01-10"}, {"_id": "c"}]
        client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
        for _ in range(2):
            report = api.rekey(client, db, target, key=b"k", time_field="at")
            reasons = dict(report.skipped)
            assert set(reasons) == {"a", "c"}, report
            assert "null" in reasons["a"] and "no field" in reasons["c"]
        assert len(live_ids(client, target)) == 1  # the second run stored nothing more
    finally:
        client.delete_database(db=target)


def test_a_histogram_of_too_many_buckets_is_refused_before_any_request(api: Api) -> None:
    with pytest.raises(InvalidArgumentError, match="buckets"):
        # No client is needed: the arguments are checked before anything is sent.
        api.histogram(couchids_client_never_used(), "db", "2024-01-01", "2024-01-02", every="1ms")
    assert MAX_BUCKETS == 100_000


def couchids_client_never_used() -> CloudantV1:
    from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator

    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url("http://127.0.0.1:9")  # the discard port: nothing may be sent
    return client


@pytest.mark.parametrize("form", [KUUID_MS, TID62], ids=str)
def test_an_untyped_count_past_the_forms_last_time_equals_the_window(
    client: CloudantV1, db: str, api: Api, form: Any
) -> None:
    at = to_ms("2024-01-10T00:00:00Z")
    # More untyped ids than a count by offset probes at the range's start (PROBE_ROWS), so
    # that only the range itself can keep the typed ones out.
    untyped = [form.new(at + n) for n in range(PROBE_ROWS + 5)]
    typed = [form.new(at + n, type="order") for n in range(7)]
    insert(client, db, untyped + typed)
    client.put_design_document(db=db, ddoc="d", design_document={"views": {}})
    end = "9999-01-01"

    shown = api.window(client, db, "2020-01-01", end, form=form)
    counted = api.count(client, db, "2020-01-01", end, form=form)
    buckets = api.histogram(client, db, "2020-01-01", end, form=form, every="1000w")

    assert len(shown) == counted == sum(b.count for b in buckets) == len(untyped)


@pytest.mark.needs("couchdb")
def test_composite_partition_scopes_are_read_from_their_partition(
    client: CloudantV1, partitioned_db: str, api: Api
) -> None:
    db, scope = partitioned_db, "sensor-1:reading"
    old = [KUUID.new(to_ms(OLD) + n * 1000, type=scope) for n in range(4)]
    new = [KUUID.new(to_ms(NEW) + n * 1000, type=scope) for n in range(3)]
    other = [KUUID.new(to_ms(OLD) + n * 1000, type="sensor-2:reading") for n in range(2)]
    insert(client, db, old + new + other)
    out = io.StringIO()

    assert api.count(client, db, "2024-01-01", "2024-02-01", type=scope) == 4
    api.export(client, db, "2024-01-01", "2024-04-01", out, type=scope)
    report = api.expire(client, db, "2024-02-01", type=scope, dry_run=False)

    assert {json.loads(line)["_id"] for line in out.getvalue().splitlines()} == set(old + new)
    assert report.deleted == 4
    assert live_ids(client, db) == set(new + other)


def test_check_span_refuses_every_answer_that_does_not_move_forward() -> None:
    policy = RetryPolicy.checked(0, 0, None, "expire")
    up, down = KeySpan("b", "f"), KeySpan("f", "b", descending=True)
    check_span(["b", "c", "f"], up, policy, "db")
    check_span(["f", "c", "b"], down, policy, "db")
    check_span(["\uffff", "\U0001f600"], KeySpan("\ue000", None), policy, "db")  # UTF-16 order
    bad = {
        "reversed": (["d", "c"], up),
        "repeated": (["c", "c"], up),
        "before the start": (["a", "c"], up),
        "past the end": (["c", "g"], up),
        "ascending when descending": (["c", "d"], down),
        "past the low end": (["c", "a"], down),
    }
    for name, (ids, span) in bad.items():
        with pytest.raises(ServerError, match=r"^expire on 'db'"):
            check_span(ids, span, policy, "db")
            pytest.fail(name)


def test_with_answers_unchecked_the_ids_alone_keep_expire_and_archive_inside_their_range(
    client: CloudantV1, db: str, couch_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second line of defence: a server that ignores the end key, with the check of its
    answers turned off, still gets only ids of the range deleted or copied, because each id is
    checked against the operation's own range before anything is done to it. (One that
    ignores the start key would make such a walk loop: only the first line stops that.)"""
    doomed = [KUUID.new(to_ms(OLD) + n * 1000, type="order") for n in range(4)]
    kept = [KUUID.new(to_ms(NEW) + n * 1000, type="order") for n in range(5)]
    noise = [KUUID.new(to_ms(OLD) + n * 1000, type="user") for n in range(3)]
    insert(client, db, doomed + kept + noise)
    target = db + "-archive"
    client.put_database(db=target)
    monkeypatch.setattr("couchids.core.answers.check_span", lambda *args: None)
    try:
        with BendProxy(couch_url, "ignore-end") as proxy:
            bent = client_for(proxy.url)
            plan = couchids.Database(bent, db).expire("2024-02-01", type="order", batch_size=2)
            copy = couchids.Database(bent, db).archive(
                target, OLD, "2024-02-01", type="order", batch_size=2, parallel=1
            )
            report = couchids.Database(bent, db).expire("2024-02-01", type="order", dry_run=False)
        assert plan.matched == len(doomed) and copy.copied == len(doomed), (plan, copy)
        assert report.deleted == len(doomed), report
        assert live_ids(client, db) == set(kept + noise)
        assert live_ids(client, target) == set(doomed)
    finally:
        client.delete_database(db=target)


def test_a_nested_key_that_is_not_a_string_is_refused_not_merged(
    client: CloudantV1, db: str, api: Api
) -> None:
    doc = {"a": {1: "one", "1": "the string"}}
    with pytest.raises(InvalidArgumentError, match="the key 1"):
        api.create(client, db, doc, type="order")
    with pytest.raises(InvalidArgumentError, match="the key 1"):
        api.bulk_create(client, db, [{"n": 1}, doc], type="order")
    assert api.count(client, db, "2000-01-01", "2100-01-01", type="order", exact=True) <= 1
