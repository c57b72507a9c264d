"""Database.expire deletes exactly the documents of one type and form made before a time.

Ground truth around the boundary: ids one unit before, one millisecond before, at and one
millisecond after it, among noise (types whose names start alike, untyped ids, other forms of
the same type, foreign ids inside the key range, a design document). Nothing but the truth is
ever deleted, also when a run is stopped at a random batch, its answers are lost, and it is
run again. The tests of both APIs are written once, in tests/_async/test_expiry.py.
"""

from __future__ import annotations

import json
import random
import threading
import time
from typing import Any

import pytest
import responses
from faultproxy import FaultProxy, all_docs, client_for
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import answer, body_of, intercepted, path_of
from test_query import insert
from windowtable import TIME_FORMS, WEEK, make_id

import couchids
from couchids import (
    BASE36_V7,
    KUUID,
    KUUID_MS_REVERSE,
    KUUID_REVERSE,
    SHORT,
    TID62,
    ULID,
    UTC_RANDOM,
    V7,
    V7S,
    Checkpoint,
    IdForm,
    InvalidArgumentError,
)
from couchids.core.expiry import ExpireReport
from couchids.idforms.times import to_datetime, to_ms

FORMS = (KUUID, KUUID_REVERSE, KUUID_MS_REVERSE, SHORT, V7, V7S)
BEFORE = to_ms("2024-05-01T12:00:00Z")
HOUR = 3_600_000
SCOPES = ("ord", None)
#: Forms whose ids are made at the same times, typed and untyped, as noise.
OTHER_FORMS = (KUUID, SHORT, V7, V7S, TID62, BASE36_V7, ULID, UTC_RANDOM)


def populated(
    client: CloudantV1, db: str, form: IdForm, seed: int, spread: int = 60
) -> dict[str | None, set[str]]:
    """Insert ids of ``form`` around ``BEFORE``, of type ``ord`` and untyped, among noise;
    return for each the ids expire must delete.

    The times: one unit and one millisecond either side of ``BEFORE`` and ``BEFORE`` itself,
    ``spread`` more within two days of it, and a year either side. The noise: types whose
    names start alike, ids of other forms made at the same times (some of which sort inside
    the key range expire reads), foreign ids inside the key range at every time, a design
    document and the bounds of the type.
    """
    rng = random.Random(seed)
    times = [BEFORE + d for d in (-form.unit_ms, -1, 0, 1, form.unit_ms)]
    times += [BEFORE + rng.randrange(-48 * HOUR, 48 * HOUR) for _ in range(spread)]
    times += [BEFORE - 52 * WEEK, BEFORE + 52 * WEEK]
    times = list(dict.fromkeys(times))  # utc_id ids hold nothing but their time
    ids: list[str] = []
    doomed: dict[str | None, set[str]] = {t: set() for t in SCOPES}
    for n, ms in enumerate(times):
        for doc_type in SCOPES:
            made = make_id(form, ms, doc_type)
            ids.append(made)
            if ms - ms % form.unit_ms < BEFORE:
                doomed[doc_type].add(made)
            key = form.type_prefix(doc_type) + form.key(ms // form.unit_ms)
            ids += [f"{key}~stub{n}", f"{key}!{n}"]
        ids += [make_id(form, ms, t) for t in ("ordx", "or", "ord-1")]
        if n % 4 == 0:
            ids += [
                g.new(to_datetime(ms), type=t) for g in OTHER_FORMS if g != form for t in SCOPES
            ]
    ids += ["_design/ord", "ord:", "ord;", "ord"]
    insert(client, db, ids)
    return doomed


def populate(client: CloudantV1, db: str, form: IdForm, seed: int) -> set[str]:
    """:func:`populated`; return the ids of type ``ord`` expire must delete."""
    return populated(client, db, form, seed)["ord"]


@pytest.mark.parametrize("form", TIME_FORMS, ids=str)
def test_expire_deletes_exactly_the_type_before_the_time(
    client: CloudantV1, db: str, form: IdForm
) -> None:
    """For every form, of type ``ord`` and then untyped: a dry run finds the truth and changes
    nothing, a run deletes exactly it, and a second run finds nothing."""
    doomed = populated(client, db, form, TIME_FORMS.index(form), spread=12)
    for doc_type in SCOPES:
        truth = doomed[doc_type]
        assert len(truth) >= 4
        before = all_docs(client, db)
        dry = couchids.Database(client, db, form=form).expire(BEFORE, type=doc_type)
        assert (dry.dry_run, dry.matched, dry.deleted) == (True, len(truth), 0)
        assert all_docs(client, db) == before
        report = (
            couchids.Database(client, db, form=form)
            .with_options(batch_size=7)
            .expire(BEFORE, type=doc_type, dry_run=False)
        )
        done = (report.matched, report.deleted, report.conflicts, report.failed)
        assert done == (len(truth), len(truth), [], []), doc_type
        assert set(all_docs(client, db)) == set(before) - truth, doc_type
        again = couchids.Database(client, db, form=form).expire(
            BEFORE, type=doc_type, dry_run=False
        )
        assert (again.matched, again.deleted) == (0, 0)


class Stop(Exception):
    pass


@pytest.mark.parametrize("seed", range(4))
def test_interrupted_with_lost_answers_and_run_again_is_exact(
    couch_url: str, db: str, seed: int
) -> None:
    setup = client_for(couch_url)
    form = FORMS[seed % len(FORMS)]
    doomed = populate(setup, db, form, 10 + seed)
    before = set(all_docs(setup, db))
    rng = random.Random(seed)
    stop_after = rng.randrange(1, len(doomed) // 5)
    mark = Checkpoint()

    def interrupt(report: ExpireReport) -> None:
        if report.checkpoint.done >= stop_after:
            raise Stop

    with FaultProxy(couch_url) as proxy:
        client = client_for(proxy.url)
        # The server deletes the batch, the answer is lost: the retry meets its own deletes.
        proxy.fail("drop-after", method="POST", path="_bulk_docs", after=rng.randrange(2))
        with pytest.raises(Stop):
            couchids.Database(client, db, form=form).with_options(batch_size=3).expire(
                BEFORE,
                type="ord",
                dry_run=False,
                checkpoint=mark,
                on_progress=interrupt,
            )
        assert 0 < len(before - set(all_docs(setup, db))) < len(doomed)
        assert (before - set(all_docs(setup, db))) <= doomed
        report = couchids.Database(client, db, form=form).expire(
            BEFORE, type="ord", dry_run=False, checkpoint=mark
        )
    assert set(all_docs(setup, db)) == before - doomed
    assert report.conflicts == [] and report.failed == []
    assert report.checkpoint.done == len(doomed)


def test_the_next_page_is_read_while_a_page_is_deleted(client: CloudantV1, db: str) -> None:
    doomed = populate(client, db, KUUID, 5)
    pages: list[str] = []  # the start key of each range read past the first page
    lock = threading.Lock()
    overlapped: list[bool] = []

    def watch(request: dict[str, Any], send: Any) -> Any:
        if path_of(request).endswith("/_all_docs"):
            with lock:
                pages.append(body_of(request).get("start_key", ""))
        elif path_of(request).endswith("/_bulk_docs") and not overlapped:
            deleting = max(doc["_id"] for doc in body_of(request)["docs"])
            # Held until a read of the page after this one arrives (a bound, not a timing:
            # without the read ahead it never does).
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with lock:
                    if any(key >= deleting for key in pages):
                        break
                time.sleep(0.01)
            with lock:
                overlapped.append(any(key >= deleting for key in pages))
        return send()

    with intercepted(client, watch):
        report = (
            couchids.Database(client, db)
            .with_options(batch_size=7)
            .expire(BEFORE, type="ord", dry_run=False)
        )
    assert overlapped == [True]
    assert report.deleted == len(doomed) and not set(all_docs(client, db)) & doomed


def test_a_document_changed_meanwhile_is_reported_not_deleted(client: CloudantV1, db: str) -> None:
    doomed = populate(client, db, KUUID, 3)
    victim = min(doomed)

    def change_then_send(request: dict[str, Any], send: Any) -> Any:
        if path_of(request).endswith("/_bulk_docs"):
            docs = body_of(request)["docs"]
            if any(doc["_id"] == victim for doc in docs):
                current = client.get_document(db=db, doc_id=victim).get_result()
                client.put_document(db=db, doc_id=victim, document={**current, "edited": True})
        return send()

    with intercepted(client, change_then_send):
        report = couchids.Database(client, db).expire(BEFORE, type="ord", dry_run=False)
    assert report.conflicts == [victim]
    assert report.deleted == len(doomed) - 1
    assert all_docs(client, db)[victim]["edited"] is True


def test_a_deletion_the_answer_says_nothing_of_is_reported_not_passed_over(
    client: CloudantV1, db: str
) -> None:
    """A ``_bulk_docs`` answer without the row of a document (the server did not delete it)
    leaves it reported, as a document changed meanwhile is: never silently not deleted."""
    doomed = populate(client, db, KUUID, 4)
    victim = min(doomed)

    def lose_its_row(request: dict[str, Any], send: Any) -> Any:
        if path_of(request).endswith("/_bulk_docs"):
            docs = body_of(request)["docs"]
            if any(doc["_id"] == victim for doc in docs):
                rest = [doc for doc in docs if doc["_id"] != victim]
                return answer(
                    201, client.post_bulk_docs(db=db, bulk_docs={"docs": rest}).get_result()
                )
        return send()

    with intercepted(client, lose_its_row):
        report = couchids.Database(client, db).expire(BEFORE, type="ord", dry_run=False)
    assert report.conflicts == [victim], report
    assert report.deleted == len(doomed) - 1 and report.matched == len(doomed)
    assert victim in all_docs(client, db)


@pytest.mark.needs("couchdb")
def test_purge_removes_the_deleted_revisions(client: CloudantV1, db: str) -> None:
    doomed = populate(client, db, KUUID, 4)
    report = couchids.Database(client, db).expire(BEFORE, type="ord", dry_run=False, purge=True)
    assert report.purged == len(doomed)
    # A deleted document answers its tombstone; a purged one is not found at all. On a
    # cluster a read may reach a copy the purge has not reached yet: a purged revision never
    # comes back, so the read is asked again until every copy it reaches has it purged.
    for _ in range(50):
        rows = client.post_all_docs(db=db, keys=sorted(doomed)).get_result()["rows"]
        if all(row.get("error") == "not_found" for row in rows):
            break
        time.sleep(0.2)
    assert all(row.get("error") == "not_found" for row in rows), rows[:2]


@pytest.mark.needs("pouchdb")
def test_purge_is_refused_before_deleting_where_there_is_none(client: CloudantV1, db: str) -> None:
    populate(client, db, KUUID, 5)
    before = all_docs(client, db)
    with pytest.raises(InvalidArgumentError, match="PouchDB Server has no _purge"):
        couchids.Database(client, db).expire(BEFORE, type="ord", dry_run=False, purge=True)
    assert all_docs(client, db) == before


@responses.activate
def test_cloudant_has_no_purge() -> None:
    url = "http://cloudant.test"
    welcome = {"couchdb": "Welcome", "vendor": {"name": "IBM Cloudant"}}
    responses.get(f"{url}/", json=welcome)
    responses.get(f"{url}/orders", json={"db_name": "orders", "props": {}})
    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url(url)
    with pytest.raises(InvalidArgumentError, match="Cloudant has no _purge"):
        couchids.Database(client, "orders").expire(BEFORE, type="ord", dry_run=False, purge=True)
    assert [call.request.method for call in responses.calls] == ["GET", "GET"]


# -- a purge the server cannot do, and purge batches sized from the server --------------------


class VersionProxy(FaultProxy):
    """A :class:`~faultproxy.FaultProxy` whose welcome (``GET /``) says ``version``."""

    def __init__(self, upstream: str, version: str) -> None:
        self.version = version
        super().__init__(upstream)

    def _handler_class(self) -> Any:
        proxy, base = self, super()._handler_class()

        class Handler(base):  # type: ignore[misc,valid-type]
            def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                if self.command == "GET" and self.path == "/":
                    body = json.dumps({**json.loads(body), "version": proxy.version}).encode()
                super()._answer(status, headers, body)

        return Handler


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize(("version", "sizes"), [("3.4.3", [100, 50]), ("3.5.1", [150, 100, 50])])
def test_purge_batches_are_sized_from_the_server(
    couch_url: str, client: CloudantV1, db: str, version: str, sizes: list[int]
) -> None:
    """Before 3.5.1 a purge request holds at most 100 ids; from 3.5.1 a whole page. The local
    CouchDB is 3.4.3: said to be 3.5.1, it refuses the page of 150 (400, "Exceeded maximum
    number of documents"), and the purge goes on in requests of 100, losing nothing."""
    docs = [{"_id": KUUID.new(BEFORE - 1000 - n, type="ord")} for n in range(150)]
    couchids.Database(client, db).bulk_create(docs)
    purges: list[int] = []
    with VersionProxy(couch_url, version) as proxy:
        through = client_for(proxy.url)

        def count(request: dict[str, Any], send: Any) -> Any:
            if path_of(request).endswith("/_purge"):
                purges.append(len(body_of(request)))
            return send()

        with intercepted(through, count):
            report = (
                couchids.Database(through, db)
                .with_options(batch_size=500)
                .expire(BEFORE, type="ord", dry_run=False, purge=True)
            )
    assert report.deleted == report.purged == 150
    assert purges == [0, *sizes]  # the empty purge first, before anything is deleted
