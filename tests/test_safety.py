"""The destructive and long-running operations when their caller or their data is not simple.

Conflicted documents (several live leaf revisions, made here as replication makes them, with
``new_edits=false``): ``expire`` deletes every leaf, so ``count`` agrees with what is left;
``archive`` copies every live leaf of such a document, and with ``expire=True`` deletes every
one it copied. ``rekey`` copies every
id whatever its characters, refuses a time field that is null, and refuses to copy into its own
source, as ``archive`` does. A histogram of too many buckets is refused before any request; an
untyped count reaching past its form's last time equals the window; composite partition scopes
are read from their partition. Every case runs on each configured server, and those of both APIs
are written once, in tests/_async/test_safety.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from bendproxy import BendProxy
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import body_of, intercepted, path_of
from test_query import insert

import couchids
from couchids import KUUID
from couchids.core.answers import KeySpan, check_span
from couchids.core.policy import RetryPolicy
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


def leaves(client: CloudantV1, db: str, doc_id: str) -> dict[str, dict[str, Any]]:
    """Every live leaf revision of ``doc_id`` in ``db``, by revision, as stored."""
    doc = client.get_document(db=db, doc_id=doc_id, conflicts=True).get_result()
    found = {doc["_rev"]: doc}
    for rev in doc.pop("_conflicts", []):
        found[rev] = client.get_document(db=db, doc_id=doc_id, rev=rev).get_result()
    return found


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


def couchids_client_never_used() -> CloudantV1:
    from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator

    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url("http://127.0.0.1:9")  # the discard port: nothing may be sent
    return client


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
            plan = (
                couchids.Database(bent, db)
                .with_options(batch_size=2)
                .expire("2024-02-01", type="order")
            )
            copy = (
                couchids.Database(bent, db)
                .with_options(batch_size=2, parallel=1)
                .archive(target, OLD, "2024-02-01", type="order")
            )
            report = couchids.Database(bent, db).expire("2024-02-01", type="order", dry_run=False)
        assert plan.matched == len(doomed) and copy.copied == len(doomed), (plan, copy)
        assert report.deleted == len(doomed), report
        assert live_ids(client, db) == set(kept + noise)
        assert live_ids(client, target) == set(doomed)
    finally:
        client.delete_database(db=target)


def test_with_answers_unchecked_the_scans_own_range_check_keeps_window_and_archive_inside(
    client: CloudantV1, db: str, couch_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one client-side range check of a scan (``couchids.core.windows.matcher``) is what
    keeps a window and archive's copies inside the range when a server ignores the end key and
    the check of its answers is off."""
    inside = [KUUID.new(to_ms(OLD) + n * 1000, type="order") for n in range(4)]
    later = [KUUID.new(to_ms(NEW) + n * 1000, type="order") for n in range(5)]
    insert(client, db, inside + later)
    target = db + "-archive"
    client.put_database(db=target)
    monkeypatch.setattr("couchids.core.answers.check_span", lambda *args: None)
    try:
        with BendProxy(couch_url, "ignore-end") as proxy:
            # One slice at a time: slices that each read to the end of the index take long.
            events = couchids.Database(client_for(proxy.url), db)
            events = events.with_options(batch_size=2, parallel=1)
            window = events.window(OLD, "2024-02-01", type="order", newest_first=False)
            read = [doc["_id"] for doc in window]
            copy = events.archive(target, OLD, "2024-02-01", type="order")
        assert read == inside
        assert copy.copied == len(inside), copy
        assert live_ids(client, target) == set(inside)
    finally:
        client.delete_database(db=target)
