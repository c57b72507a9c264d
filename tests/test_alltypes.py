"""All-types queries (couchids/alltypes.py, and type=ALL_TYPES in couchids/query.py): the pure
type jumps, and ground truth on real servers with dozens of types, noise and design documents."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import body_of, intercepted

import couchids
from couchids import ALL_TYPES, BASE36_V7, KUUID, KUUID_MS_REVERSE, TID62, ULID, IdForm
from couchids.core.alltypes import types_present
from couchids.core.keys import type_step
from couchids.core.policy import RetryPolicy
from couchids.drivers.blocking import run
from couchids.errors import DatabaseNotFoundError
from couchids.idforms.times import to_datetime, to_ms

T0 = to_ms("2024-03-01T12:00:00Z")
SECOND = 1000

# -- the jumps, pure ------------------------------------------------------------------------


def walk(ids: list[str], separator: str) -> tuple[list[str], int]:
    """Find the types of a sorted id list as types_present does (one row per look-up):
    the types, and how many look-ups it took."""
    ordered = sorted(ids)
    found, key, after, looks = [], "", False, 0
    while True:
        rest = [i for i in ordered if i > key or (i == key and not after)]
        looks += 1
        if not rest:
            return found, looks
        step = type_step(rest[0], separator)
        if step.doc_type is not None:
            found.append(step.doc_type)
        key, after = step.next_key, step.after


def test_type_step_jumps_past_a_type_and_its_noise() -> None:
    assert type_step("user:abc", ":").doc_type == "user"
    assert type_step("user:abc", ":").next_key == "user;"
    assert type_step("user-abc", "-").next_key == "user."
    assert type_step("acct_abc", "_").next_key == "acct`"
    # A design document rules out everything under '_'.
    assert type_step("_design/x", ":").next_key == "`"
    # A character no type holds rules out everything sharing the text up to it.
    assert type_step("user.json", ":") == couchids.core.keys.TypeStep(None, "user/")
    assert type_step("user:abc", "-") == couchids.core.keys.TypeStep(None, "user;")
    # An untyped id of type characters may be the start of a type: move just past it.
    assert type_step("001eVnWK", ":") == couchids.core.keys.TypeStep(None, "001eVnWK", after=True)
    # Too long to be a type.
    assert type_step("a" * 70 + ":x", ":").next_key == "a" * 64 + "b"


def test_user_never_hides_users() -> None:
    found, _ = walk(["user:1", "user:2", "users:1", "user;x", "user-x:1"], ":")
    assert found == ["user-x", "user", "users"]


TYPE = st.from_regex(r"[A-Za-z0-9-][A-Za-z0-9_-]{0,5}", fullmatch=True)
NOISE = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8)


@given(
    st.dictionaries(TYPE, st.lists(st.text("0123456789abc", min_size=1, max_size=4), min_size=1)),
    st.lists(NOISE, max_size=20),
)
def test_every_type_found_with_one_look_up_each_plus_noise(
    types: dict[str, list[str]], noise: list[str]
) -> None:
    ids = [f"{t}:{body}" for t, bodies in types.items() for body in bodies]
    ids = sorted(set(ids + noise))
    # In the order of their ids ('00:' sorts before '0:').
    truth = list(dict.fromkeys(i.partition(":")[0] for i in ids if type_step(i, ":").doc_type))
    found, looks = walk(ids, ":")
    assert found == truth
    assert set(types) <= set(found)
    # One look-up per type, per noise id, and the final empty one: never a row per typed id.
    assert looks <= len(found) + len(noise) + 1


# -- on real servers ------------------------------------------------------------------------

#: Dozens of types, among them prefixes of one another and names that sort around noise.
TYPES = [f"t{i:02d}" for i in range(30)] + ["user", "users", "user-x", "A", "Z9", "a_b"]


def insert(client: CloudantV1, db: str, ids: list[str]) -> None:
    docs = [{"_id": doc_id} for doc_id in ids]
    for at in range(0, len(docs), 500):
        result = client.post_bulk_docs(db=db, bulk_docs={"docs": docs[at : at + 500]})
        assert all("error" not in row for row in result.get_result())


def make(client: CloudantV1, db: str, form: IdForm) -> dict[str, int]:
    """Ids of ``form`` in every type of TYPES at random times, with noise between and inside
    the types; returns the ids a query must find, with their times."""
    rng = random.Random(10)
    truth: dict[str, int] = {}
    for doc_type in TYPES:
        if form.separator in doc_type:
            continue  # under '-', 'user-x-<id>' reads as type 'user' (see couchids.alltypes)
        for _ in range(rng.randrange(1, 6)):
            ms = T0 + rng.randrange(-300 * SECOND, 300 * SECOND)
            truth[form.new(to_datetime(ms), type=doc_type)] = ms - ms % form.unit_ms
    sep = form.separator
    other = ULID if form != ULID else TID62
    noise = [
        "_design/views",
        "_design/z",
        "0readme",  # untyped, sorts first
        "t05.json",
        "user" + sep + "admin",  # a foreign id inside a type
        "user" + sep + other.new(T0),  # another form inside a type
        "t07" + sep + other.new(T0),
        "zz" + sep + other.new(T0),  # a type holding only another form
        "m:" + form.new(T0) if sep != ":" else "m-" + form.new(T0),  # another separator
        form.new(T0),  # untyped id of the form
        form.new(T0 + SECOND),
        "~tilde",
        "couchids-seq:invoices:00000000000000000001",
    ]
    insert(client, db, [*truth, *noise])
    return truth


ALL_FORMS = [KUUID, KUUID_MS_REVERSE, TID62.with_separator("-"), BASE36_V7.with_separator("_")]


@pytest.mark.parametrize("form", ALL_FORMS, ids=lambda f: f"{f}{f.separator}")
def test_latest_and_windows_across_all_types(client: CloudantV1, db: str, form: IdForm) -> None:
    truth = make(client, db, form)
    newest = sorted(truth.values(), reverse=True)
    for n in (1, 7, len(truth), len(truth) + 5):
        got = couchids.Database(client, db, form=form).latest(n, type=ALL_TYPES, include_docs=False)
        ids = [row["id"] for row in got]
        assert len(ids) == min(n, len(truth))
        assert [truth[i] for i in ids] == newest[:n]
        assert set(ids) <= set(truth)
    docs = couchids.Database(client, db, form=form).latest(3, type=ALL_TYPES)
    assert [truth[d["_id"]] for d in docs] == newest[:3]

    for start, end in ((T0 - 100 * SECOND, T0 + 50 * SECOND), (0, None), (T0, T0)):
        end_ms = to_ms(end)
        want = {i for i, t in truth.items() if start <= t < end_ms}
        for newest_first in (True, False):
            got_ids = [
                row["id"]
                for row in couchids.Database(client, db, form=form)
                .with_options(batch_size=3)
                .window(
                    start,
                    end_ms,
                    type=ALL_TYPES,
                    newest_first=newest_first,
                    include_docs=False,
                )
            ]
            assert len(got_ids) == len(want) and set(got_ids) == want
            times = [truth[i] for i in got_ids]
            assert times == sorted(times, reverse=newest_first)


def test_finding_types_costs_one_request_per_type(client: CloudantV1, db: str) -> None:
    truth = make(client, db, KUUID)
    calls: list[dict[str, Any]] = []

    def counting(request: dict[str, Any], send: Any) -> Any:
        calls.append(body_of(request))
        return send()

    with intercepted(client, counting):
        found = run(client, types_present(db, ":", RetryPolicy.checked(0, 0)))
    types = {i.partition(":")[0] for i in truth} | {"zz", "couchids-seq"}
    assert set(found) == types
    # The noise the jumps meet (design documents, foreign and untyped ids) adds a few
    # requests; a scan would read every one of the ids.
    assert len(calls) <= len(types) + 12 < len(truth)
    assert all(c["limit"] <= 16 for c in calls)


def test_untyped_queries_stay_untyped_and_empty_databases_are_empty(
    client: CloudantV1, db: str
) -> None:
    assert couchids.Database(client, db).latest(5, type=ALL_TYPES) == []
    assert list(couchids.Database(client, db).window(0, None, type=ALL_TYPES)) == []
    insert(client, db, [KUUID.new(T0, type="order"), KUUID.new(T0)])
    assert [d["_id"][:6] for d in couchids.Database(client, db).latest(5, type=ALL_TYPES)] == [
        "order:"
    ]
    assert len(couchids.Database(client, db).latest(5)) == 1  # type=None: the untyped id only


def test_a_missing_database_is_an_error(client: CloudantV1) -> None:
    with pytest.raises(DatabaseNotFoundError):
        couchids.Database(client, "no_such_db_here").latest(5, type=ALL_TYPES)
    with pytest.raises(DatabaseNotFoundError):
        couchids.Database(client, "no_such_db_here").window(0, None, type=ALL_TYPES)


@pytest.mark.needs("couchdb")
def test_all_types_on_a_partitioned_database(client: CloudantV1, partitioned_db: str) -> None:
    db = partitioned_db
    made = {ULID.new(T0 + i * 7 * SECOND, type=f"p{i % 5}"): T0 + i * 7 * SECOND for i in range(20)}
    insert(client, db, [*made, "_design/x", "p1:notaulid"])
    got = couchids.Database(client, db, form=ULID).latest(8, type=ALL_TYPES, include_docs=False)
    assert [row["id"] for row in got] == sorted(made, key=made.__getitem__, reverse=True)[:8]
    rows: Iterator[dict[str, Any]] = couchids.Database(client, db, form=ULID).window(
        T0, T0 + 50 * SECOND, type=ALL_TYPES, newest_first=False
    )
    assert [d["_id"] for d in rows] == sorted(
        (i for i, t in made.items() if t < T0 + 50 * SECOND), key=made.__getitem__
    )
