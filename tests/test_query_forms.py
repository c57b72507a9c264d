"""Queries on every time form (couchids.Database with the forms of couchids/idforms/idform.py),
on real servers: ground truth by construction, with noise, under ':', '-' and '_' prefixes,
composite partition prefixes, a database whose ids CouchDB made itself, and CouchDB's ids
without time (``sequential`` and ``random``)."""

from __future__ import annotations

import json
import random
import time
from itertools import pairwise

import pytest
import requests
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import (
    BASE36_V7,
    TID62,
    ULID,
    UTC_RANDOM,
    UUID464,
    V7,
    V7S,
    IdForm,
    InvalidArgumentError,
    InvalidIdError,
    decode,
)
from couchids.idforms.couchid import COUCH_RANDOM, UtcIdForm
from couchids.idforms.times import to_ms

T0 = to_ms("2024-03-01T12:00:00Z")
SECOND = 1000
FORMS = [TID62, BASE36_V7, UTC_RANDOM, ULID, V7, V7S]
#: (separator, scope): the prefix conventions and a composite partition prefix.
SCOPES = [(":", None), (":", "user"), ("-", "user"), ("_", "acct"), ("-", "sensor-260:reading")]


def insert(client: CloudantV1, db: str, ids: list[str]) -> None:
    docs = [{"_id": doc_id, "n": i} for i, doc_id in enumerate(ids)]
    result = client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
    assert all("error" not in row for row in result), result


def noise(form: IdForm, ms: int) -> list[str]:
    """Ids a query of ``user`` / ``acct`` must never return, many inside its key ranges."""
    out = [
        f"_design/{form}",
        "users:" + form.new(ms),
        "users-" + form.new(ms),
        "acct2_" + form.new(ms),
        "user:" + COUCH_RANDOM.new().upper(),
        "sensor-260:readings-" + form.new(ms),
        f"zzz{form}",
        f"user-{form}" + "~" * form.length,
    ]
    out.append("user:" + UUID464.new())
    return out


def make_all(
    client: CloudantV1, db: str, form: IdForm
) -> dict[tuple[str, str | None], dict[str, int]]:
    """``form`` under every scope, at random times around T0, with noise, in one database.

    One form a database: a utc_random id passes as a v7s id one time in 64 (and then holds a
    time near 2180), so a database mixing them cannot be queried as either alone.
    """
    rng = random.Random(7)
    truth: dict[tuple[str, str | None], dict[str, int]] = {}
    ids: list[str] = []
    for sep, scope in SCOPES:
        typed = form.with_separator(sep)
        group: dict[str, int] = {}
        for _ in range(12):
            ms = T0 + rng.randrange(-60 * SECOND, 60 * SECOND)
            group[typed.new(ms, type=scope)] = ms - ms % form.unit_ms
        truth[(sep, scope)] = group
        ids += group
    insert(client, db, ids + noise(form, T0))
    return truth


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_windows_and_latest_per_form_and_prefix(client: CloudantV1, db: str, form: IdForm) -> None:
    made = make_all(client, db, form)
    for sep, scope in SCOPES:
        typed = form.with_separator(sep)
        group = made[(sep, scope)]
        for start, end in ((T0 - 20 * SECOND, T0 + 15 * SECOND), (T0 - 90 * SECOND, T0)):
            want = sorted((i for i, t in group.items() if start <= t < end), key=group.__getitem__)
            got = [
                doc["_id"]
                for doc in couchids.Database(client, db, form=typed).window(
                    start, end, type=scope, newest_first=False
                )
            ]
            assert len(got) == len(want) and set(got) == set(want), (typed, scope)
            # Ids of one time unit may come in either order; times never go backwards.
            assert [group[i] for i in got] == sorted(group[i] for i in got)
        newest = couchids.Database(client, db, form=typed).latest(5, type=scope, include_docs=False)
        expected = sorted(group.values(), reverse=True)[:5]
        assert [group[row["id"]] for row in newest] == expected


@pytest.mark.needs("couchdb")
def test_partitioned_database_routes_by_the_part_before_the_colon(
    client: CloudantV1, partitioned_db: str
) -> None:
    db = partitioned_db
    form = ULID.with_separator("-")
    group = {
        form.new(T0 + i * SECOND, type="sensor-260:reading"): T0 + i * SECOND for i in range(9)
    }
    other = [form.new(T0 + i * SECOND, type="sensor-261:reading") for i in range(5)]
    insert(client, db, [*group, *other, "sensor-260:readings-" + ULID.new(T0)])
    got = [
        row["id"]
        for row in couchids.Database(client, db, form=form).window(
            T0, T0 + 5 * SECOND, type="sensor-260:reading", include_docs=False
        )
    ]
    assert got == sorted((i for i, t in group.items() if t < T0 + 5 * SECOND), reverse=True)


def test_uuid464_time_queries_are_refused(client: CloudantV1, db: str) -> None:
    with pytest.raises(InvalidArgumentError, match="do not sort by time"):
        couchids.Database(client, db, form=UUID464).latest(3)
    with pytest.raises(InvalidArgumentError, match="hold no time"):
        couchids.Database(client, db, form=couchids.SEQ10).window(T0, T0 + 1)


# -- ids CouchDB made itself ---------------------------------------------------------------


def set_config(url: str, section: str, key: str, value: str) -> str:
    """Set a node's config value through ``_node/_local/_config``; return the old value."""
    answer = requests.put(
        f"{url}/_node/_local/_config/{section}/{key}", data=json.dumps(value), timeout=30
    )
    answer.raise_for_status()
    old: str = answer.json()
    return old


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("algorithm", ["utc_random", "utc_id"])
def test_a_database_of_ids_couchdb_made(
    client: CloudantV1, db: str, couch_url: str, algorithm: str
) -> None:
    set_config(couch_url, "uuids", "utc_id_suffix", "-n1")
    old_algorithm = set_config(couch_url, "uuids", "algorithm", algorithm)
    try:
        form = UTC_RANDOM if algorithm == "utc_random" else UtcIdForm("-n1")
        made: dict[str, int] = {}
        for i in range(30):
            before = time.time_ns() // 1000
            doc_id = client.post_document(db=db, document={"i": i}).get_result()["id"]
            after = time.time_ns() // 1000
            decoded = decode(doc_id, form=form)
            assert decoded.timestamp is not None
            us = form.read(doc_id)
            assert us is not None
            # Loopback: the server's clock is this machine's (utc ids count up by one
            # microsecond when many come in one microsecond, hence the slack).
            assert before - 2_000_000 <= us <= after + 2_000_000, (doc_id, before, after)
            made[doc_id] = us // 1000
            if algorithm == "utc_random":
                assert decode(doc_id).form == UTC_RANDOM
        uuids = requests.get(f"{couch_url}/_uuids?count=5", timeout=30).json()["uuids"]
        now_us = time.time_ns() // 1000
        for text in uuids:
            us = form.read(text)
            assert us is not None and abs(us - now_us) < 5_000_000
        insert(client, db, ["_design/x", "zzz", "00000000000000-n2"])
        ordered = sorted(made, key=lambda i: (made[i], i))
        start, end = made[ordered[5]], made[ordered[20]]
        got = [
            row["id"]
            for row in couchids.Database(client, db, form=form).window(
                start, end, include_docs=False
            )
        ]
        assert sorted(got) == sorted(i for i, t in made.items() if start <= t < end)
        newest = couchids.Database(client, db, form=form).latest(3, include_docs=False)
        assert [row["id"] for row in newest] == sorted(made, reverse=True)[:3]
    finally:
        set_config(couch_url, "uuids", "algorithm", old_algorithm or "sequential")


#: CouchDB's ``sequential`` uuids: 26 hex digits of a random prefix, then a 6-hex counter. The
#: counter climbs by a random step (1 to 0xffd, couch_uuids.erl) until it reaches this value;
#: the id after that one starts a new random prefix with a small counter.
SEQUENTIAL_PREFIX_LEN = 26
SEQUENTIAL_RENEWAL = 0xFFF000


def uuids_from(url: str, batches: int) -> list[str]:
    """``batches`` answers of ``GET /_uuids?count=1000`` (CouchDB's default ``max_count``),
    in the order the server made them."""
    made: list[str] = []
    for _ in range(batches):
        answer = requests.get(f"{url}/_uuids?count=1000", timeout=30)
        answer.raise_for_status()
        made += answer.json()["uuids"]
    return made


#: The microseconds a utc_random id may hold: 2000-01-01 to 2100-01-01.
UTC_RUNWAY_US = (946_684_800_000_000, 4_102_444_800_000_000)


def check_holds_no_time(doc_id: str) -> None:
    """What couchids says of an id CouchDB made with ``random`` or ``sequential``."""
    assert COUCH_RANDOM.read(doc_id) is None
    assert COUCH_RANDOM.matcher()(doc_id) and COUCH_RANDOM.matcher("user:")("user:" + doc_id)
    decoded = decode(doc_id, form=COUCH_RANDOM)
    assert (decoded.form, decoded.type, decoded.timestamp) == (COUCH_RANDOM, None, None)
    assert decode("user:" + doc_id, form=COUCH_RANDOM).type == "user"
    with pytest.raises(InvalidIdError, match="holds no time"):
        COUCH_RANDOM.parse(doc_id)
    # utc_random reads 32 hex digits as a time only inside its runway (2000-2100): most of
    # these ids fall outside and are refused; the rest are why these ids need form=.
    if UTC_RUNWAY_US[0] <= int(doc_id[:14], 16) < UTC_RUNWAY_US[1]:
        assert UTC_RANDOM.read(doc_id) is not None
    else:
        with pytest.raises(InvalidIdError, match="runway"):
            UTC_RANDOM.read(doc_id)


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("algorithm", ["sequential", "random"])
def test_ids_couchdb_makes_without_time(
    client: CloudantV1, db: str, couch_url: str, algorithm: str
) -> None:
    old_algorithm = set_config(couch_url, "uuids", "algorithm", algorithm)
    try:
        made = uuids_from(couch_url, 20)
        made += [
            client.post_document(db=db, document={"i": i}).get_result()["id"] for i in range(5)
        ]
    finally:
        set_config(couch_url, "uuids", "algorithm", old_algorithm or "sequential")
    assert len(set(made)) == len(made) == 20_005
    for doc_id in made:
        check_holds_no_time(doc_id)
    # The runs of ids that share a prefix, in the order the server made them.
    runs: list[list[str]] = [made[:1]]
    for before, doc_id in pairwise(made):
        if doc_id[:SEQUENTIAL_PREFIX_LEN] == before[:SEQUENTIAL_PREFIX_LEN]:
            runs[-1].append(doc_id)
        else:
            runs.append([doc_id])
    if algorithm == "random":
        assert len(runs) == len(made)  # no two ids share 104 random bits
        assert sorted(made[:1000]) != made[:1000]
        return
    # sequential: within a prefix, each id sorts after the one made before it; a new prefix
    # (random, so sorting anywhere) comes only after a counter reached the renewal value.
    assert len(runs) > 1, "20,005 ids always pass at least one renewal of the prefix"
    for run in runs:
        assert sorted(run) == run
        counters = [int(doc_id[SEQUENTIAL_PREFIX_LEN:], 16) for doc_id in run]
        assert all(0 < b - a <= 0xFFD for a, b in pairwise(counters))
        assert all(counter < SEQUENTIAL_RENEWAL for counter in counters[:-1])
    for run in runs[:-1]:
        assert int(run[-1][SEQUENTIAL_PREFIX_LEN:], 16) >= SEQUENTIAL_RENEWAL
