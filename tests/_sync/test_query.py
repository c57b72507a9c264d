# Generated from tests/_async/test_query.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""couchids.aio.AsyncDatabase.latest and .window and, in the generated twin, couchids.Database's,
against the local server, compared with ground truth kept while inserting (tests/test_query.py
makes it: which form, type and time every id was made with).

The shared database mixes every id form, types that are prefixes of one another
(``use``/``user``/``users``), untyped ids, ids made by the real kuuid package in Node, and
noise that sorts inside the key ranges (stubs, design documents, foreign forms). (The tests of
one API alone, and those that need no server, are in tests/test_query.py.)
"""

from __future__ import annotations

import json
import random
import sys
import uuid
from collections.abc import Iterator

import pytest
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from kuuid_node import KuuidNode
from test_query import (
    BIG,
    FORMS,
    KUUID_FUNCTIONS,
    PAGE,
    PAGE_N,
    TYPES,
    Made,
    Mixed,
    in_range_noise,
    insert,
    neighbours,
    noise,
    times,
)
from windowtable import FAR_FUTURE, SECOND, T0, WEEK, WINDOWS

from couchids import KUUID, KUUID_REVERSE, SHORT, V7, V7S, IdForm

from .helpers import database, listed


@pytest.fixture(scope="module")
def mixed(couch_url: str, kuuid_node: KuuidNode) -> Iterator[Mixed]:
    client = client_for(couch_url)
    db = f"test_query_{uuid.uuid4().hex}"
    client.put_database(db=db)
    rng = random.Random(20240501)
    made: list[Made] = []
    for form in FORMS:
        for doc_type in TYPES:
            made += [Made(form.new(t, type=doc_type), form, doc_type, t) for t in times(rng)]
    # Ids from kuuid itself, untyped and with a type written in front as a Node app would.
    calls = [(fn, t) for fn in KUUID_FUNCTIONS for t in times(rng)[::2]]
    from_node = kuuid_node.make(calls)
    for n, ((fn, t), doc_id) in enumerate(zip(calls, from_node, strict=True)):
        doc_type = "user" if n % 2 else None
        prefixed = doc_id if doc_type is None else f"{doc_type}:{doc_id}"
        made.append(Made(prefixed, KUUID_FUNCTIONS[fn], doc_type, t, by_kuuid=True))
    foreign = ["_design/x", "_design/user", "user:admin", "user:notakuuid", "users:admin"]
    # Forms that share keys (KUUID and SHORT) share their stubs: keep one of each.
    foreign = list(dict.fromkeys(foreign + [i for form in FORMS for i in noise(form)]))
    ids = [m.id for m in made] + foreign
    assert len(set(ids)) == len(ids)
    insert(client, db, ids)
    yield Mixed(client, db, made)
    client.delete_database(db=db)


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_window_returns_exactly_the_ids_made_in_it(
    blocking_client: CloudantV1, mixed: Mixed, form: IdForm
) -> None:
    found_by_kuuid = 0
    for low, high in WINDOWS:
        start, end = T0 + low, T0 + high
        for doc_type in TYPES:
            truth = mixed.truth(form, doc_type, start, end)
            newest = [
                d["_id"]
                for d in listed(
                    database(blocking_client, mixed.db, batch_size=PAGE).window(
                        start, end, type=doc_type, form=form
                    )
                )
            ]
            oldest = [
                r["id"]
                for r in listed(
                    database(blocking_client, mixed.db).window(
                        start, end, type=doc_type, form=form, newest_first=False, include_docs=False
                    )
                )
            ]
            where = (str(form), doc_type, low, high)
            assert len(newest) == len(set(newest)), where
            assert set(newest) == truth, where
            assert oldest == newest[::-1], where
            stamps = [mixed.time_of(i) for i in newest]
            assert stamps == sorted(stamps, reverse=True), where
            found_by_kuuid += sum(mixed.by_id[i].by_kuuid for i in newest)
    # Something of every kind was found, or the comparisons above prove little.
    assert found_by_kuuid > 0 or form.kind != "kuuid"


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_windows_without_an_id_time_are_empty(
    blocking_client: CloudantV1, mixed: Mixed, form: IdForm
) -> None:
    # Inside one second, off its edge: ids of second precision hold none of these times.
    shop = database(blocking_client, mixed.db, form=form)
    got = listed(shop.window(T0 + 1, T0 + SECOND, type="user"))
    if form.millisecond:
        assert {d["_id"] for d in got} == mixed.truth(form, "user", T0 + 1, T0 + SECOND)
        assert got
    else:
        assert got == []
    assert listed(shop.window(T0, T0, type="user")) == []


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_latest_is_the_newest_of_the_ground_truth(
    blocking_client: CloudantV1, client: CloudantV1, db: str, form: IdForm
) -> None:
    """In a database of one form per length (kuuid modes of one length read each other's ids
    as times in 1970 or after 8800; see the next test), with types that are prefixes of one
    another, untyped ids and noise."""
    rng = random.Random(str(form))
    made = [
        Made(form.new(t, type=doc_type), form, doc_type, t)
        for doc_type in TYPES
        for t in times(rng)
    ]
    others = [
        f.new(t, type=doc_type)
        for f in neighbours(form)
        for doc_type in TYPES
        for t in (T0, T0 + WEEK)
    ]
    insert(client, db, [m.id for m in made] + others + noise(form) + ["_design/x", "user:admin"])
    for doc_type in TYPES:
        mine = [m for m in made if m.type == doc_type]
        newest_times = sorted((m.time for m in mine), reverse=True)
        time_of = {m.id: m.time for m in mine}
        everything = [
            d["_id"]
            for d in listed(
                database(blocking_client, db).window(0, FAR_FUTURE, type=doc_type, form=form)
            )
        ]
        assert set(everything) == set(time_of)
        for n in (1, 2, 17, len(mine) - 1, len(mine), len(mine) + 5):
            got = [
                d["_id"] for d in database(blocking_client, db).latest(n, type=doc_type, form=form)
            ]
            assert len(got) == min(n, len(mine))
            assert set(got) <= set(time_of)
            assert [time_of[i] for i in got] == newest_times[:n]
            assert got == everything[:n]


def test_latest_rows_without_docs(blocking_client: CloudantV1, mixed: Mixed) -> None:
    rows = database(blocking_client, mixed.db).latest(3, type="use", include_docs=False)
    assert [set(r) for r in rows] == [{"id", "key", "value"}] * 3
    assert all(r["id"] == r["key"] and r["value"]["rev"].startswith("1-") for r in rows)


@pytest.mark.parametrize("form", [KUUID, KUUID_REVERSE, V7S], ids=str)
@pytest.mark.parametrize("count", [0, 1, PAGE_N - 1, PAGE_N, PAGE_N + 1, 3 * PAGE_N + 1])
def test_page_boundaries(
    blocking_client: CloudantV1, client: CloudantV1, db: str, form: IdForm, count: int
) -> None:
    """For page size n: 0, 1, n-1, n, n+1 and 3n+1 matching rows, with rows that sort in
    the range but are filtered on and around every page edge."""
    start, end = T0, T0 + 20 * SECOND
    # Each id and the time it holds (cut to the form's precision).
    made = {form.new(start + k * 997, type="user"): start + k * 997 for k in range(count)}
    held = {i: ms - ms % form.unit_ms for i, ms in made.items()}
    between = [row for ms in [start, *made.values()] for row in in_range_noise(form, ms)]
    between = list(dict.fromkeys(between))  # ids made in one second share their stubs
    outside = [form.new(start - 1, type="user"), form.new(end + SECOND, type="user")]
    insert(client, db, [*made, *between, *outside])
    for newest_first in (True, False):
        got = [
            d["_id"]
            for d in listed(
                database(blocking_client, db, batch_size=PAGE_N).window(
                    start, end, type="user", form=form, newest_first=newest_first
                )
            )
        ]
        assert len(got) == len(set(got)) == count
        assert set(got) == set(made)
        stamps = [held[i] for i in got]
        assert stamps == sorted(stamps, reverse=newest_first)
    newest = [
        d["_id"] for d in database(blocking_client, db).latest(count + 1, type="user", form=form)
    ]
    # The id made after the window is the newest of all.
    assert newest[0] == outside[1]
    assert set(newest[1:]) == set(made)
    assert [held[i] for i in newest[1:]] == sorted(held.values(), reverse=True)


@pytest.mark.parametrize("form", [KUUID, KUUID_REVERSE, V7], ids=str)
def test_foreign_ids_among_the_newest_do_not_shorten_latest(
    blocking_client: CloudantV1, client: CloudantV1, db: str, form: IdForm
) -> None:
    real = [form.new(T0 + k * SECOND, type="user") for k in range(5)]
    # Newer than every real id, and sorting before them newest-first: ids of another form
    # with the same keys, stubs, and a foreign id at the very top of the type's range.
    other = SHORT if form.kind == "kuuid" else V7S
    newer = [other.new(T0 + 10 * SECOND + k, type="user") for k in range(150)]
    newer += ["user:" + form.key((T0 + 20 * SECOND) // form.unit_ms), "user:zzzz", "user:~"]
    insert(client, db, real + newer)
    for n in (1, 3, 5):
        got = [d["_id"] for d in database(blocking_client, db).latest(n, type="user", form=form)]
        assert got == sorted(real, reverse=not form.reverse)[:n]
    assert len(database(blocking_client, db).latest(10, type="user", form=form)) == 5


def test_numbers_come_back_as_the_server_sends_them(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    ids = [KUUID.new(T0 + k * SECOND, type="user") for k in range(3)]
    docs = [{"_id": i, "big": BIG} for i in ids]
    # Sent as JSON text, so no client library decides what the numbers become.
    body = json.dumps({"docs": docs}).encode()
    assert client.post_bulk_docs(db=db, bulk_docs=body).get_status_code() == 201
    # What the server sends, read as text and decoded by json, which keeps every number whole.
    stored = json.loads(client.get_document_as_stream(db=db, doc_id=ids[2]).get_result().text)
    got = listed(
        database(blocking_client, db).window(T0, T0 + 10 * SECOND, type="user", newest_first=False)
    )
    assert [doc["big"] for doc in got] == [stored["big"]] * 3
    assert [type(n) for n in got[0]["big"]] == [type(n) for n in stored["big"]]
    assert (database(blocking_client, db).latest(1, type="user"))[0]["big"] == stored["big"]
    target = f"{db}_copy"
    client.put_database(db=target)
    try:
        database(blocking_client, db).archive(target, T0, T0 + 10 * SECOND, type="user")
        copied = client.get_document_as_stream(db=target, doc_id=ids[0]).get_result().text
        assert json.loads(copied)["big"] == stored["big"]
    finally:
        client.delete_database(db=target)


@pytest.mark.parametrize("parallel", [1, 3])
def test_a_document_handed_out_is_not_kept(
    blocking_client: CloudantV1, client: CloudantV1, db: str, parallel: int
) -> None:
    """Memory stays at a few pages because nothing in couchids holds a document once it is
    handed out: the caller's reference is the only one (a page kept, or a row still holding
    its document, would show as one more)."""
    insert(client, db, [KUUID.new(T0 + k * 100, type="user") for k in range(120)])
    stream = database(blocking_client, db, batch_size=10, parallel=parallel).window(
        T0, T0 + 100 * SECOND, type="user"
    )
    references = [sys.getrefcount(doc) for doc in stream]
    assert len(references) == 120
    # getrefcount's own argument, and the loop's name for the document.
    assert set(references) == {2}
