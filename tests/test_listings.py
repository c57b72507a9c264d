"""The listings couchids reads are checked like the rows of ``_all_docs``
(``couchids.core.answers.check_listing``): ``_all_dbs``, ``_changes``, ``_scheduler/docs``,
the rows of ``_bulk_docs``.

Pure: each rule of the check, and its message, which names the operation.

Integration, both APIs (written once, in tests/_async/test_listings.py), through
tests/bendproxy.py: a server whose ``_all_dbs`` repeats a
name, lists them out of order or ignores the keys (a series' ``databases``, ``window`` and
``count``); whose ``_changes`` repeats a change, lists them out of order, ignores ``since``
or ``limit`` (``follow``); whose ``_scheduler/docs`` answers the listing of every replication
instead of the one asked for, repeated or out of order (a replication's ``status`` and
``wait``). Each is refused with a :class:`couchids.ServerError` naming the operation, on
PouchDB Server and CouchDB, where the server promises what was broken; where it promises
nothing (PouchDB Server lists its databases in no order and ignores the keys; CouchDB's
``_changes`` sequences are opaque), the answer is exact. ``_bulk_docs`` answers with a row
twice, or for a document not sent, through the client's ``send`` (tests/intercept.py).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Final
from urllib.parse import urlsplit

import pytest
from bendproxy import BendProxy
from conftest import drop_database
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import answer, intercepted, path_of

import couchids
from couchids import KUUID, ServerError
from couchids.core.answers import check_listing
from couchids.core.policy import RetryPolicy
from couchids.idforms.times import to_ms

#: The most reads a proxy bends for one call: more is a loop (the proxy is cut then).
BUDGET: Final = 40
#: The ``timeout`` each call is given.
TIMEOUT: Final = 20.0

# -- the check ------------------------------------------------------------------------------------

POLICY = RetryPolicy.checked(0, 0, None, "databases")


@pytest.mark.parametrize(
    ("items", "rules", "problem"),
    [
        (["a", "b", "a"], {}, "_x listed 'a' twice"),
        (["b", "a"], {"ordered": True}, "_x listed 'a' after 'b': out of order"),
        (["a", "a"], {"ordered": True}, "_x listed 'a' twice"),
        ([3, 4], {"after": 3}, "_x listed 3, not after 3 as asked"),
        (["a", "c"], {"low": "b"}, "_x listed 'a', outside the range asked for ('b' to None)"),
        (["a", "c"], {"high": "b"}, "_x listed 'c', outside the range asked for (None to 'b')"),
        (["a", "z"], {"among": {"a", "b"}}, "_x listed 'z', which was not asked for"),
        (["a", "b", "c"], {"most": 2}, "_x listed 3 entries for limit=2"),
    ],
)
def test_a_listing_that_breaks_a_promise_is_refused(
    items: list[Any], rules: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ServerError) as caught:
        check_listing("_x", items, POLICY, "db", sent="GET /_x", **rules)
    assert str(caught.value) == f"databases on 'db' (GET /_x): not a CouchDB answer: {problem}"
    assert caught.value.status == 0


def test_a_listing_that_keeps_its_promises_passes() -> None:
    check_listing("_x", [], POLICY, "db", ordered=True, after=0, low="a", high="b", among=set())
    check_listing("_x", ["b", "a"], POLICY, "db", low="a", high="b", among={"a", "b"}, most=2)
    check_listing("_x", ["a", "b"], POLICY, "db", ordered=True, low="a", high="b")
    check_listing("_x", [4, 7], POLICY, "db", noun="seq ", ordered=True, after=3)
    with pytest.raises(ServerError, match=r"_x listed seq 2, not after seq 3 as asked"):
        check_listing("_x", [2], POLICY, "db", noun="seq ", after=3)


# -- bent answers ---------------------------------------------------------------------------------


def is_couchdb(couch_server: Any) -> bool:
    return couch_server.kind != "pouchdb"


# -- what the bend tests read (tests/_async/test_listings.py) -------------------------------------


def a_series(couch_url: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """A monthly series of four databases of three documents each, and a database named just
    before its keys and one just after them (what a server that ignores a key lists too).
    Returns its prefix, databases and ids."""
    client = client_for(couch_url)
    prefix = f"lst{uuid.uuid4().hex[:12]}"
    names = [f"{prefix}-2024-0{month}" for month in (1, 2, 3, 4)]
    siblings = [prefix, prefix + "x"]
    ids: list[str] = []
    try:
        for month, name in enumerate(names, 1):
            client.put_database(db=name).get_result()
            made = [KUUID.new(to_ms(f"2024-0{month}-1{d}T00:00:00Z"), type="t") for d in range(3)]
            client.post_bulk_docs(db=name, bulk_docs={"docs": [{"_id": i} for i in made]})
            ids += made
        for name in siblings:
            client.put_database(db=name).get_result()
        yield prefix, names, sorted(ids)
    finally:
        for name in names + siblings:
            drop_database(client, name)


def a_changed_database(couch_url: str, couch_server: Any) -> Iterator[tuple[str, list[str]]]:
    """A database of twelve documents of type ``t``, written one by one; its name and ids.

    On CouchDB it has one shard (``q=1``): ``_changes`` then lists them in the order they
    were written, with sequences whose leading numbers rise (the answers of several shards
    are merged as they come, in an order that varies from one request to the next)."""
    client = client_for(couch_url)
    name = f"test_{uuid.uuid4().hex}"
    client.put_database(db=name, q=1 if is_couchdb(couch_server) else None).get_result()
    ids = [KUUID.new(to_ms("2024-03-01T00:00:00Z") + 1000 * n, type="t") for n in range(12)]
    try:
        for doc_id in ids:
            client.put_document(db=name, doc_id=doc_id, document={}).get_result()
        yield name, ids
    finally:
        drop_database(client, name)


@pytest.fixture(scope="module")
def series(couch_url: str) -> Iterator[tuple[str, list[str], list[str]]]:
    yield from a_series(couch_url)


@pytest.fixture(scope="module")
def changed(couch_url: str, couch_server: Any) -> Iterator[tuple[str, list[str]]]:
    yield from a_changed_database(couch_url, couch_server)


# -- the proxy itself ------------------------------------------------------------------------------


def get(url: str, path: str) -> Any:
    """The JSON answer to ``GET path`` of the server at ``url`` (with its credentials)."""
    parts = urlsplit(url)
    headers = {"Accept": "application/json"}
    if parts.username is not None:
        secret = f"{parts.username}:{parts.password}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(secret).decode()
    request = urllib.request.Request(f"http://{parts.hostname}:{parts.port}{path}", None, headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    with opener.open(request, timeout=TIMEOUT) as reply:
        return json.loads(reply.read())


def test_the_proxy_bends_the_listings_it_is_told_to(
    series: tuple[str, list[str], list[str]], changed: tuple[str, list[str]], couch_url: str
) -> None:
    prefix, _, _ = series
    db, ids = changed
    dbs = f"/_all_dbs?start_key=%22{prefix}-%22&end_key=%22{prefix}.%22"
    names = get(couch_url, dbs)

    def changes(url: str) -> tuple[list[str], list[int]]:
        """The ids of ``_changes`` and the leading numbers of their sequences."""
        results = get(url, f"/{db}/_changes")["results"]
        return [row["id"] for row in results], [
            int(str(row["seq"]).split("-")[0]) for row in results
        ]

    written, seqs = changes(couch_url)
    assert len(names) >= 4 and written == ids and seqs == sorted(seqs)
    with BendProxy(couch_url, "duplicate", reads=("_all_dbs", "_changes")) as proxy:
        assert get(proxy.url, dbs) == [name for name in names for _ in range(2)]
        assert changes(proxy.url)[0] == [doc_id for doc_id in ids for _ in range(2)]
        # Not told to: the rows of _all_docs pass untouched.
        assert [row["id"] for row in get(proxy.url, f"/{db}/_all_docs")["rows"]] == ids
        assert proxy.bent == 2
    with BendProxy(couch_url, "reverse", reads=("_all_dbs", "_changes")) as proxy:
        assert get(proxy.url, dbs) == names[::-1]
        assert changes(proxy.url) == (ids[::-1], seqs[::-1])
    with BendProxy(couch_url, "shuffle", reads=("_all_dbs", "_changes")) as proxy:
        bent = get(proxy.url, dbs)
        assert sorted(bent) == sorted(names) and bent != names
        again, order = changes(proxy.url)
        assert sorted(again) == ids and order != sorted(order)
    with BendProxy(couch_url, "ignore-start", reads=("_changes",)) as proxy:
        last = get(couch_url, f"/{db}/_changes")["last_seq"]
        since = urllib.parse.quote(json.dumps(last) if isinstance(last, str) else str(last))
        assert get(couch_url, f"/{db}/_changes?since={since}")["results"] == []
        assert len(get(proxy.url, f"/{db}/_changes?since={since}")["results"]) == len(ids)


@pytest.mark.needs("couchdb")
def test_the_proxy_answers_a_scheduler_entry_with_the_listing_bent(couch_url: str) -> None:
    entry = "/_scheduler/docs/_replicator/couchids-nothing"
    with BendProxy(couch_url, "honest", reads=("_scheduler/docs",)) as proxy:
        with pytest.raises(urllib.error.HTTPError) as missing:
            get(proxy.url, entry)
        assert missing.value.code == 404  # the entry asked for, as the server answers it
    with BendProxy(couch_url, "duplicate", reads=("_scheduler/docs",)) as proxy:
        listing = get(proxy.url, entry)
        assert isinstance(listing.get("docs"), list) and "doc_id" not in listing
        assert proxy.log[-1].path == entry and proxy.bent == 1


# -- _bulk_docs, through the client's send --------------------------------------------------------


def bent_bulk_docs(bend: Callable[[list[Any]], list[Any]]) -> Any:
    """A hook (tests/intercept.py) that sends each request and answers ``_bulk_docs`` with
    its rows bent by ``bend``."""

    def through(request: dict[str, Any], send: Callable[[], Any]) -> Any:
        reply = send()
        if request["method"] == "POST" and path_of(request).endswith("/_bulk_docs"):
            return answer(reply.get_status_code(), bend(reply.get_result().json()))
        return reply

    return through


@pytest.mark.parametrize(
    ("bend", "problem"),
    [
        (lambda rows: rows + rows[:1], r"_bulk_docs listed the row of '[^']+' twice"),
        (
            lambda rows: [*rows, {"id": "stranger", "ok": True, "rev": "1-a"}],
            r"_bulk_docs listed the row of 'stranger', which was not asked for",
        ),
    ],
    ids=["twice", "stranger"],
)
@pytest.mark.parametrize("operation", ["bulk_create", "expire"])
def test_a_bulk_docs_answer_with_a_row_twice_or_not_asked_for_is_refused(
    operation: str,
    bend: Callable[[list[Any]], list[Any]],
    problem: str,
    client: CloudantV1,
    db: str,
) -> None:
    handle = couchids.Database(client, db)
    old = [KUUID.new(to_ms("2024-03-01T00:00:00Z") + n, type="t") for n in range(3)]
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": i} for i in old]}).get_result()
    with intercepted(client, bent_bulk_docs(bend)), pytest.raises(ServerError) as caught:
        if operation == "bulk_create":
            handle.bulk_create([{"n": 1}, {"n": 2}], type="t")
        else:
            handle.expire("2024-04-01T00:00:00Z", type="t", dry_run=False)
    assert str(caught.value).startswith(f"{operation} on {db!r}"), str(caught.value)
    assert re.search(problem, str(caught.value)), str(caught.value)


# -- _changes: a last_seq that goes back, through the client's send -------------------------------


@pytest.mark.needs("pouchdb")  # sequences that are numbers: their order can be read
def test_a_changes_answer_whose_last_seq_goes_back_is_refused(client: CloudantV1, db: str) -> None:
    # last_seq is the first change listed, not the last: the next request would list the
    # others again, and follow hand them out again.
    ids = [KUUID.new(to_ms("2024-03-01T00:00:00Z") + n, type="t") for n in range(4)]
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": i} for i in ids]}).get_result()

    def through(request: dict[str, Any], send: Callable[[], Any]) -> Any:
        reply = send()
        if path_of(request).endswith("/_changes"):
            body = reply.get_result().json()
            if body["results"]:
                body["last_seq"] = body["results"][0]["seq"]
            return answer(reply.get_status_code(), body)
        return reply

    handle = couchids.Database(client, db).with_options(batch_size=2)
    with intercepted(client, through), pytest.raises(ServerError) as caught:
        list(handle.follow(type="t", since_seq=0, wait=False))
    message = str(caught.value)
    assert message.startswith(f"follow on {db!r} (POST /{db}/_changes)"), message
    assert "_changes listed 2 changes with last_seq 1, before seq 2" in message, message
