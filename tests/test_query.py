"""Database.latest and Database.window against the local server (PouchDB Server), compared
with ground truth kept while inserting: which form, type and time every id was made with.

The shared database mixes every id form, types that are prefixes of one another
(``use``/``user``/``users``), untyped ids, ids made by the real kuuid package in Node, and
noise that sorts inside the key ranges (stubs, design documents, foreign forms).
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pytest
from apis import APIS, Api
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import intercepted, path_of
from kuuid_node import KuuidNode
from windowtable import DAY, FAR_FUTURE, SECOND, T0, WEEK, WINDOWS

import couchids
from couchids import (
    KUUID,
    KUUID_MS,
    KUUID_MS_REVERSE,
    KUUID_REVERSE,
    SHORT,
    SHORT_REVERSE,
    V7,
    V7S,
    DatabaseNotFoundError,
    InvalidTimeError,
    aio,
)
from couchids.core.keys import window_keys
from couchids.core.windows import matcher as _matcher
from couchids.errors import InvalidIdError
from couchids.idforms.constants import ALPHABET
from couchids.idforms.forms import KUUID_FORMS, IdForm
from couchids.idforms.times import MAX_MS, TimeLike

FORMS = (KUUID, KUUID_REVERSE, KUUID_MS, KUUID_MS_REVERSE, SHORT, SHORT_REVERSE, V7, V7S)
TYPES = ("user", "users", "use", None)
#: kuuid's functions and the form of the ids each makes.
KUUID_FUNCTIONS = {
    "id": KUUID,
    "idr": KUUID_REVERSE,
    "idms": KUUID_MS,
    "idmsr": KUUID_MS_REVERSE,
    "ids": SHORT,
    "idsr": SHORT_REVERSE,
}
PAGE = 16
#: The (api, form) pairs of the ground-truth tables: every form through the blocking API, and
#: through the asyncio API a reverse kuuid form and a hex form (what a form changes is its key
#: ranges and checks, the core's, which both APIs share; the API changes the driver).
API_FORMS = [
    pytest.param(api, form, id=f"{api.name}-{form}")
    for api in APIS
    for form in (FORMS if api.name == "blocking" else (KUUID_MS_REVERSE, V7S))
]
#: The page size of the page-boundary table.
PAGE_N = 4


@dataclass(frozen=True)
class Made:
    """What an id was made as: the ground truth the queries are checked against."""

    id: str
    form: IdForm
    type: str | None
    ms: int
    by_kuuid: bool = False

    @property
    def time(self) -> int:
        """The time the id holds: ``ms`` at the form's precision."""
        return self.ms - self.ms % self.form.unit_ms


def insert(client: CloudantV1, db: str, ids: list[str]) -> None:
    """Create one small document per id with ``_bulk_docs``, in batches."""
    for start in range(0, len(ids), 2000):
        docs = [{"_id": i, "n": n} for n, i in enumerate(ids[start : start + 2000], start)]
        result = client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
        failed = [r for r in result if "error" in r]
        assert not failed, failed[:3]


def times(rng: random.Random) -> list[int]:
    """Ids at, just after and just before second edges, crowded into a few seconds, and
    spread over weeks either side of T0."""
    edges = [T0 + k * SECOND + d for k in range(5) for d in (0, 1, 999)]
    crowded = [T0 + rng.randrange(10 * SECOND) for _ in range(8)]
    spread = [T0 + rng.randrange(-2 * WEEK, 3 * WEEK) for _ in range(12)]
    return edges + crowded + spread


def noise(form: IdForm) -> list[str]:
    """Ids that sort inside some range of ``form`` but are none of its ids."""
    unit = T0 // form.unit_ms
    key = form.key(unit)
    return [
        "user:" + key,  # the key itself: as long as a prefix, no id
        "user:" + form.key(unit + 1),  # the bound an inclusive end would return
        key,
        key + "-not-an-id",
        f"{key}:{form.new(T0)}",  # a type that looks like an untyped key
        "user:" + key + "x" * (form.length - len(key)),  # right length, wrong alphabet
    ]


@dataclass
class Mixed:
    client: CloudantV1
    db: str
    made: list[Made]

    def truth(self, form: IdForm, doc_type: str | None, start: int, end: int) -> set[str]:
        return {
            m.id
            for m in self.made
            if m.form == form and m.type == doc_type and start <= m.time < end
        }

    def time_of(self, doc_id: str) -> int:
        return self.by_id[doc_id].time

    @property
    def by_id(self) -> dict[str, Made]:
        return {m.id: m for m in self.made}


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


@pytest.mark.parametrize(("api", "form"), API_FORMS)
def test_window_returns_exactly_the_ids_made_in_it(api: Api, mixed: Mixed, form: IdForm) -> None:
    found_by_kuuid = 0
    for low, high in WINDOWS:
        start, end = T0 + low, T0 + high
        for doc_type in TYPES:
            truth = mixed.truth(form, doc_type, start, end)
            newest = [
                d["_id"]
                for d in api.window(
                    mixed.client, mixed.db, start, end, type=doc_type, form=form, batch_size=PAGE
                )
            ]
            oldest = [
                r["id"]
                for r in api.window(
                    mixed.client,
                    mixed.db,
                    start,
                    end,
                    type=doc_type,
                    form=form,
                    newest_first=False,
                    include_docs=False,
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
def test_windows_without_an_id_time_are_empty(mixed: Mixed, form: IdForm) -> None:
    # Inside one second, off its edge: ids of second precision hold none of these times.
    got = list(
        couchids.Database(mixed.client, mixed.db, form=form).window(
            T0 + 1, T0 + SECOND, type="user"
        )
    )
    if form.millisecond:
        assert {d["_id"] for d in got} == mixed.truth(form, "user", T0 + 1, T0 + SECOND)
        assert got
    else:
        assert got == []
    assert (
        list(couchids.Database(mixed.client, mixed.db, form=form).window(T0, T0, type="user")) == []
    )


def neighbours(form: IdForm) -> list[IdForm]:
    """Other forms whose ids can never read as ids of ``form`` (another length)."""
    if form.kind == "kuuid":
        return [V7, SHORT if form.random == 4 else KUUID]
    return [V7S if form.kind == "v7" else V7, SHORT]


@pytest.mark.parametrize(("api", "form"), API_FORMS)
def test_latest_is_the_newest_of_the_ground_truth(
    api: Api, client: CloudantV1, db: str, form: IdForm
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
            d["_id"] for d in api.window(client, db, 0, FAR_FUTURE, type=doc_type, form=form)
        ]
        assert set(everything) == set(time_of)
        for n in (1, 2, 17, len(mine) - 1, len(mine), len(mine) + 5):
            got = [d["_id"] for d in api.latest(client, db, n, type=doc_type, form=form)]
            assert len(got) == min(n, len(mine))
            assert set(got) <= set(time_of)
            assert [time_of[i] for i in got] == newest_times[:n]
            assert got == everything[:n]


@pytest.mark.parametrize(
    ("stored", "read_as", "year"),
    [(KUUID_REVERSE, KUUID_MS, 8000), (KUUID_MS, KUUID_MS_REVERSE, 8000), (KUUID, KUUID_MS, 1970)],
    ids=str,
)
def test_millisecond_kuuid_queries_read_other_modes_as_distant_times(
    client: CloudantV1, db: str, stored: IdForm, read_as: IdForm, year: int
) -> None:
    """kuuid ids do not say their mode: a 32-character id of one mode is also a valid id of
    the millisecond modes, at a time after the year 8000, or in 1970-1978 for a second-mode
    id, a time millisecond queries do not reach. Keep one mode per type."""
    mine = read_as.new(T0, type="user")
    foreign = stored.new(T0, type="user")
    insert(client, db, [mine, foreign])
    newest = [d["_id"] for d in couchids.Database(client, db, form=read_as).latest(2, type="user")]
    assert newest == ([foreign, mine] if year > 2000 else [mine])
    recent = couchids.Database(client, db, form=read_as).window(T0 - DAY, T0 + DAY, type="user")
    assert [d["_id"] for d in recent] == [mine]


def test_latest_rows_without_docs(api: Api, mixed: Mixed) -> None:
    rows = api.latest(mixed.client, mixed.db, 3, type="use", include_docs=False)
    assert [set(r) for r in rows] == [{"id", "key", "value"}] * 3
    assert all(r["id"] == r["key"] and r["value"]["rev"].startswith("1-") for r in rows)


def in_range_noise(form: IdForm, ms: int) -> list[str]:
    """Rows that sort among the ids of ``form`` made at ``ms`` but are none of them: an id of
    the same keys and fewer random blocks, and the key followed by the lowest and highest
    printable characters."""
    key = "user:" + form.key(ms // form.unit_ms)
    rows = [key + "!", key + "~"]
    if form.kind == "kuuid":
        rows.append(
            IdForm(reverse=form.reverse, millisecond=form.millisecond, random=2).new(
                ms, type="user"
            )
        )
    return rows


@pytest.mark.parametrize("form", [KUUID, KUUID_REVERSE, V7S], ids=str)
@pytest.mark.parametrize("count", [0, 1, PAGE_N - 1, PAGE_N, PAGE_N + 1, 3 * PAGE_N + 1])
def test_page_boundaries(api: Api, client: CloudantV1, db: str, form: IdForm, count: int) -> None:
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
            for d in api.window(
                client,
                db,
                start,
                end,
                type="user",
                form=form,
                newest_first=newest_first,
                batch_size=PAGE_N,
            )
        ]
        assert len(got) == len(set(got)) == count
        assert set(got) == set(made)
        stamps = [held[i] for i in got]
        assert stamps == sorted(stamps, reverse=newest_first)
    newest = [d["_id"] for d in api.latest(client, db, count + 1, type="user", form=form)]
    # The id made after the window is the newest of all.
    assert newest[0] == outside[1]
    assert set(newest[1:]) == set(made)
    assert [held[i] for i in newest[1:]] == sorted(held.values(), reverse=True)


@pytest.mark.parametrize("form", [KUUID, KUUID_REVERSE, V7], ids=str)
def test_foreign_ids_among_the_newest_do_not_shorten_latest(
    api: Api, client: CloudantV1, db: str, form: IdForm
) -> None:
    real = [form.new(T0 + k * SECOND, type="user") for k in range(5)]
    # Newer than every real id, and sorting before them newest-first: ids of another form
    # with the same keys, stubs, and a foreign id at the very top of the type's range.
    other = SHORT if form.kind == "kuuid" else V7S
    newer = [other.new(T0 + 10 * SECOND + k, type="user") for k in range(150)]
    newer += ["user:" + form.key((T0 + 20 * SECOND) // form.unit_ms), "user:zzzz", "user:~"]
    insert(client, db, real + newer)
    for n in (1, 3, 5):
        got = [d["_id"] for d in api.latest(client, db, n, type="user", form=form)]
        assert got == sorted(real, reverse=not form.reverse)[:n]
    assert len(api.latest(client, db, 10, type="user", form=form)) == 5


@pytest.mark.parametrize("form", [V7S, KUUID_MS], ids=str)
def test_untyped_latest_passes_over_typed_ids(client: CloudantV1, db: str, form: IdForm) -> None:
    """Untyped millisecond keys run to the top of the index, above design documents and
    most typed ids: latest must read past them, never return them."""
    untyped = [form.new(T0 + k) for k in range(3)]
    typed = [form.new(T0 + 10 + k, type=t) for k in range(40) for t in ("a", "b", "user")]
    insert(client, db, [*untyped, *typed, "_design/x", "_design/y"])
    got = [d["_id"] for d in couchids.Database(client, db, form=form).latest(5)]
    assert got == sorted(untyped, reverse=True)


@pytest.mark.parametrize("newest_first", [True, False])
def test_paging_while_documents_are_added(client: CloudantV1, db: str, newest_first: bool) -> None:
    """Documents added between pages: every document there at the start comes back once."""
    rng = random.Random(7)
    start, end = T0, T0 + 200 * SECOND
    existing = [KUUID.new(start + k * 1500, type="user") for k in range(60)]
    insert(client, db, existing)
    got: list[str] = []
    added: list[str] = []
    for doc in couchids.Database(client, db).window(
        start, end, type="user", batch_size=5, newest_first=newest_first
    ):
        got.append(doc["_id"])
        if len(got) % 5 == 0:
            # Around the cursor, behind it, ahead of it, and outside the window.
            near = KUUID.parse(doc["_id"][5:])
            fresh = [
                KUUID.new(near, type="user"),
                KUUID.new(start + rng.randrange(200 * SECOND), type="user"),
                KUUID.new(start + rng.randrange(200 * SECOND), type="user"),
                KUUID.new(end + SECOND, type="user"),
            ]
            insert(client, db, fresh)
            added += fresh
    assert len(got) == len(set(got))
    assert set(existing) <= set(got)
    assert set(got) <= set(existing) | set(added)
    stamps = [KUUID.parse(i[5:]) for i in got]
    assert stamps == sorted(stamps, reverse=newest_first)


#: Integers beyond 64 bits, and one at the edge. CouchDB keeps them as written; PouchDB
#: Server as JavaScript's doubles (``18446744073709552000``), which are integers beyond 64
#: bits in the text too. orjson alone would read both as floats.
BIG = [123456789012345678901234567890, -9999999999999999999, 18446744073709551616, 2**63 - 1]


def test_numbers_come_back_as_the_server_sends_them(api: Api, client: CloudantV1, db: str) -> None:
    ids = [KUUID.new(T0 + k * SECOND, type="user") for k in range(3)]
    docs = [{"_id": i, "big": BIG} for i in ids]
    # Sent as JSON text, so no client library decides what the numbers become.
    body = json.dumps({"docs": docs}).encode()
    assert client.post_bulk_docs(db=db, bulk_docs=body).get_status_code() == 201
    # What the server sends, read as text and decoded by json, which keeps every number whole.
    stored = json.loads(client.get_document_as_stream(db=db, doc_id=ids[2]).get_result().text)
    got = api.window(client, db, T0, T0 + 10 * SECOND, type="user", newest_first=False)
    assert [doc["big"] for doc in got] == [stored["big"]] * 3
    assert [type(n) for n in got[0]["big"]] == [type(n) for n in stored["big"]]
    assert api.latest(client, db, 1, type="user")[0]["big"] == stored["big"]
    target = f"{db}_copy"
    client.put_database(db=target)
    try:
        couchids.Database(client, db).archive(target, T0, T0 + 10 * SECOND, type="user")
        copied = client.get_document_as_stream(db=target, doc_id=ids[0]).get_result().text
        assert json.loads(copied)["big"] == stored["big"]
    finally:
        client.delete_database(db=target)


@pytest.mark.parametrize("parallel", [1, 3])
def test_a_document_handed_out_is_not_kept(client: CloudantV1, db: str, parallel: int) -> None:
    """Memory stays at a few pages because nothing in couchids holds a document once it is
    handed out: the caller's reference is the only one (a page kept, or a row still holding
    its document, would show as one more)."""
    insert(client, db, [KUUID.new(T0 + k * 100, type="user") for k in range(120)])
    stream = couchids.Database(client, db).window(
        T0, T0 + 100 * SECOND, type="user", batch_size=10, parallel=parallel
    )
    references = [sys.getrefcount(doc) for doc in stream]
    assert len(references) == 120
    # getrefcount's own argument, and the loop's name for the document.
    assert set(references) == {2}


async def _references(ac: Any, db: str, parallel: int) -> list[int]:
    stream = aio.AsyncDatabase(ac, db).window(
        T0, T0 + 100 * SECOND, type="user", batch_size=10, parallel=parallel
    )
    return [sys.getrefcount(doc) async for doc in stream]


@pytest.mark.parametrize("parallel", [1, 3])
def test_a_document_handed_out_by_aio_is_not_kept(
    client: CloudantV1, db: str, parallel: int
) -> None:
    insert(client, db, [KUUID.new(T0 + k * 100, type="user") for k in range(120)])

    async def main() -> list[int]:
        async with aio.AsyncClient(client) as ac:
            return await _references(ac, db, parallel)

    references = asyncio.run(main())
    assert len(references) == 120
    assert set(references) == {2}


def test_a_database_deleted_mid_stream_raises_from_the_stream(
    couch_url: str, client: CloudantV1
) -> None:
    db = f"test_gone_{uuid.uuid4().hex}"
    client.put_database(db=db)
    insert(client, db, [KUUID.new(T0 + k * SECOND, type="user") for k in range(30)])
    # PouchDB Server answers a request that races the deletion of its database with an empty
    # 200 (and a fresh database), which no client can tell from "no more rows": delete only
    # once the page fetched ahead has come back, so the next request surely follows it.
    answered = threading.Semaphore(0)

    def counted(request: dict[str, Any], send: Any) -> Any:
        if not path_of(request).endswith("/_all_docs"):
            return send()
        try:
            response = send()
            assert response.get_result().content  # the whole answer, before it counts
            return response
        finally:
            answered.release()

    with intercepted(client, counted):
        stream = couchids.Database(client, db).window(
            T0, T0 + 60 * SECOND, type="user", batch_size=3, parallel=1
        )
        got = [next(stream)["_id"]]
        for _ in range(2):  # the first page and the one fetched while it is read
            assert answered.acquire(timeout=30)
        client.delete_database(db=db)
        with pytest.raises(DatabaseNotFoundError):
            for doc in stream:
                got.append(doc["_id"])
    # The rows already fetched came out, then the error: never a quietly short answer.
    assert len(got) == 6


def test_a_missing_database_raises_instead_of_answering_nothing(client: CloudantV1) -> None:
    missing = f"test_missing_{uuid.uuid4().hex}"
    with pytest.raises(DatabaseNotFoundError):
        couchids.Database(client, missing).latest()
    with pytest.raises(DatabaseNotFoundError):
        couchids.Database(client, missing).window(T0, T0 + SECOND, type="user")
    # Even a window no id can fall in checks the database first.
    with pytest.raises(DatabaseNotFoundError):
        couchids.Database(client, missing).window(T0 + 1, T0 + 2)


def test_a_window_that_ends_before_it_starts_is_refused(client: CloudantV1, db: str) -> None:
    with pytest.raises(InvalidTimeError):
        couchids.Database(client, db).window(T0 + 1, T0)
    with pytest.raises(InvalidTimeError):
        couchids.Database(client, db).window("2024-01-02", "2024-01-01")


def test_windows_accept_every_kind_of_time(client: CloudantV1, db: str) -> None:
    ids = [KUUID.new("2024-05-01T12:00:00Z", type="user"), KUUID.new("2024-05-02T00:00:00Z")]
    insert(client, db, ids)
    spans: list[tuple[TimeLike, TimeLike]] = [
        ("2024-05-01", "2024-05-02"),
        (date(2024, 5, 1), date(2024, 5, 2)),
        (datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 1, 12, 0, 1)),
        (1_714_521_600_000, 1_714_608_000_000),
    ]
    for start, end in spans:
        got = [d["_id"] for d in couchids.Database(client, db).window(start, end, type="user")]
        assert got == ids[:1], (start, end)
    assert [d["_id"] for d in couchids.Database(client, db).window("2024-05-02", None)] == ids[1:]


def mutations(doc_id: str, rng: random.Random) -> list[str]:
    """``doc_id`` and strings one edit away from it."""
    at = rng.randrange(len(doc_id))
    char = rng.choice(ALPHABET + "-:_!~{")
    return [
        doc_id,
        doc_id[:at] + char + doc_id[at + 1 :],
        doc_id[:at] + doc_id[at + 1 :],
        doc_id + char,
        doc_id[:-6] + "4gfFC4",  # a block just above 2**32 - 1
        doc_id[:-6] + "4gfFC3",
    ]


@pytest.mark.parametrize("form", KUUID_FORMS, ids=str)
@pytest.mark.parametrize("doc_type", ["user", None])
def test_the_row_filter_agrees_with_parse(form: IdForm, doc_type: str | None) -> None:
    """The query keeps a row of its key range exactly when its id is the type's prefix and
    an id of the form (what :meth:`IdForm.parse` accepts)."""
    keys = window_keys(form, doc_type, 0, MAX_MS + 1)
    assert keys is not None
    wanted = _matcher(form, keys)
    rng = random.Random(str(form))
    checked = rejected = 0
    for _ in range(400):
        made = form.new(rng.randrange(min(MAX_MS, form.max_unit * form.unit_ms)), type=doc_type)
        for candidate in mutations(made, rng):
            if not keys.low <= candidate <= keys.high:  # the server returns no other rows
                continue
            try:
                ok = candidate.startswith(keys.prefix)
                form.parse(candidate[len(keys.prefix) :])
            except InvalidIdError:
                ok = False
            assert bool(wanted(candidate)) == ok, candidate
            checked += 1
            rejected += not ok
    assert checked > 1000 and rejected > 100
