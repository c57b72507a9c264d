"""Database.latest and Database.window against the local server (PouchDB Server), compared
with ground truth kept while inserting: which form, type and time every id was made with.

The shared database mixes every id form, types that are prefixes of one another
(``use``/``user``/``users``), untyped ids, ids made by the real kuuid package in Node, and
noise that sorts inside the key ranges (stubs, design documents, foreign forms).

The tests of both APIs against it are written once, in tests/_async/test_query.py; this module
makes the ground truth and holds the tests of one API alone.
"""

from __future__ import annotations

import random
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import intercepted, path_of
from windowtable import DAY, SECOND, T0, WEEK

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
)
from couchids.core.keys import window_keys
from couchids.core.windows import matcher as _matcher
from couchids.errors import InvalidIdError
from couchids.idforms.constants import ALPHABET
from couchids.idforms.forms import KUUID_FORMS, IdForm
from couchids.idforms.times import MAX_MS, TimeLike, to_datetime

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


def neighbours(form: IdForm) -> list[IdForm]:
    """Other forms whose ids can never read as ids of ``form`` (another length)."""
    if form.kind == "kuuid":
        return [V7, SHORT if form.random == 4 else KUUID]
    return [V7S if form.kind == "v7" else V7, SHORT]


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
    for doc in (
        couchids.Database(client, db)
        .with_options(batch_size=5)
        .window(start, end, type="user", newest_first=newest_first)
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
        stream = (
            couchids.Database(client, db)
            .with_options(batch_size=3, parallel=1)
            .window(T0, T0 + 60 * SECOND, type="user")
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
        made = form.new(
            to_datetime(rng.randrange(min(MAX_MS, form.max_unit * form.unit_ms))), type=doc_type
        )
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
