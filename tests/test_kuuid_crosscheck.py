"""couchids against the reference: kuuid 1.0.3 running in Node, and recorded kuuid vectors,
through :mod:`couchids.kuuid` (kuuid's function set) and the id forms.

Random parts differ by nature, so ids are compared by what is fixed: the time prefix, the
length, the validity of every random block, and that each kuuid id decodes back to its time.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from ids_helpers import VECTORS, blocks_of, check_block, failed_statistics, load_vectors
from kuuid_node import KuuidNode

import couchids
from couchids import IdForm, decode, kuuid
from couchids.idforms.times import to_datetime, to_ms

REPO = Path(__file__).resolve().parents[1]
SHARED_VECTORS = REPO.parent / "shared" / "vectors"

LAST_MS_PREFIX = 62**8 - 1
YEAR_8000 = to_ms("8000-01-01")

# kuuid's functions, the matching couchids form, and the prefix key the bridge returns.
FUNCTIONS: dict[str, tuple[IdForm, str]] = {
    "id": (couchids.KUUID, "prefix"),
    "idr": (couchids.KUUID_REVERSE, "prefix_reverse"),
    "ids": (couchids.SHORT, "prefix"),
    "idsr": (couchids.SHORT_REVERSE, "prefix_reverse"),
    "idms": (couchids.KUUID_MS, "prefix_ms"),
    "idmsr": (couchids.KUUID_MS_REVERSE, "prefix_reverse_ms"),
}
PREFIXES = {
    "prefix": kuuid.prefix,
    "prefix_ms": kuuid.prefix_ms,
    "prefix_reverse": kuuid.prefix_reverse,
    "prefix_reverse_ms": kuuid.prefix_reverse_ms,
}


def edge_timestamps() -> list[int | str]:
    """Boundaries where an encoding could slip, and kuuid's own test inputs."""
    edges: list[int | str] = [1, 999, 1000, 1001, 59_999, 86_400_000, LAST_MS_PREFIX]
    for k in range(1, 9):
        for ms in (62**k - 1, 62**k, 62**k + 1, 62**k * 1000 - 1, 62**k * 1000):
            if ms <= LAST_MS_PREFIX:
                edges.append(ms)
    # kuuid reads 0 as "now", so the epoch is sent as a string.
    edges += [
        "1970-01-01T00:00:00.000Z",
        "1970-01-01T00:00:01Z",
        "1970-01-01T00:00:00.999Z",
        "1971-01-01T00:00:00.000Z",
        "1980-01-01T00:00:00.000Z",
        "2018-01-01",
        "2018-01-01T00:00:00.000Z",
        "2018-07-20T10:10:34.234Z",
        "2000-02-29T23:59:59.999Z",
        "2038-01-19T03:14:08Z",
        "2020-01-01T00:00:00.000Z",
        "2170-01-01T00:00:00.000Z",
        "7999-12-31T23:59:59.999Z",
        1514764800000,
    ]
    return edges


def random_timestamps(count: int) -> list[int]:
    rng = random.Random(1514764800)  # fixed: a failure here can be replayed
    return [rng.randrange(1, YEAR_8000) for _ in range(count)]


RANDOM_SAMPLES = 20_000


@pytest.fixture(scope="module")
def node_answers(kuuid_node: KuuidNode) -> dict[str, Any]:
    timestamps = edge_timestamps() + random_timestamps(400)
    return kuuid_node.cross_check(timestamps, random_samples=RANDOM_SAMPLES)


def instant(t: int | str) -> datetime | str:
    """A vector's time as couchids is given it: kuuid's ints are epoch milliseconds, which
    couchids refuses before 1980 (they could be seconds), so they are given as instants."""
    return to_datetime(t) if isinstance(t, int) else t


def assert_same_prefixes(case: dict[str, Any]) -> None:
    t = instant(case["timestamp"])
    for key, make in PREFIXES.items():
        assert make(t) == case[key], (t, key)


def assert_ids_agree(case: dict[str, Any]) -> None:
    """Our id, from the form and from kuuid's function of the same name, has kuuid's prefix and
    length; kuuid's id is valid and decodes to its time."""
    t = instant(case["timestamp"])
    ms = to_ms(t)
    for fn, (form, prefix_key) in FUNCTIONS.items():
        theirs = case[fn]
        for ours in (form.new(t), getattr(kuuid, fn)(t)):
            assert len(ours) == len(theirs) == form.length, (t, fn)
            assert ours[:8] == theirs[:8] == case[prefix_key], (t, fn)
        for block in blocks_of(theirs[8:]):
            check_block(block)
        decoded = decode(theirs, reverse=form.reverse, millisecond=form.millisecond)
        assert decoded.form == form
        assert decoded.timestamp == to_datetime(ms - ms % form.unit_ms), (t, fn)


def test_node_prefixes_in_every_mode(node_answers: dict[str, Any]) -> None:
    cases = node_answers["cases"]
    assert len(cases) == len(edge_timestamps()) + 400
    for case in cases:
        assert_same_prefixes(case)


def test_node_ids_in_every_mode(node_answers: dict[str, Any]) -> None:
    for case in node_answers["cases"]:
        assert_ids_agree(case)


def test_kuuid_published_answers_through_node(node_answers: dict[str, Any]) -> None:
    by_time = {case["timestamp"]: case for case in node_answers["cases"]}
    published: dict[int | str, str] = {
        "2018-01-01T00:00:00.000Z": "001eVnWK",
        "1970-01-01T00:00:00.000Z": "00000000",
        "1971-01-01T00:00:00.000Z": "00028JxA",
        "1980-01-01T00:00:00.000Z": "000LLwUi",
        "2020-01-01T00:00:00.000Z": "001imRQe",
        "2170-01-01T00:00:00.000Z": "006t88C8",
        1514764800000: "001eVnWK",
    }
    for t, expected in published.items():
        assert by_time[t]["prefix"] == expected == kuuid.prefix(t)
    assert by_time["1970-01-01T00:00:00.000Z"]["prefix_reverse"] == "zzzzzzzz"
    assert by_time["1970-01-01T00:00:01Z"]["prefix_reverse"] == "zzzzzzzy"


def node_blocks(node_answers: dict[str, Any]) -> Iterator[str]:
    for sample in node_answers["rand"]:
        assert len(sample) == 24
        yield from blocks_of(sample)


def test_node_rand_blocks_have_our_shape(node_answers: dict[str, Any]) -> None:
    theirs = [check_block(b) for b in node_blocks(node_answers)]
    assert len(theirs) == 4 * RANDOM_SAMPLES
    ours = [check_block(b) for _ in range(RANDOM_SAMPLES) for b in blocks_of(kuuid.rand())]
    # The distribution checks hold for the reference too: the model they test is kuuid's.
    assert failed_statistics(theirs) == []
    assert failed_statistics(ours) == []


def test_node_ids_now_match_ours(node_answers: dict[str, Any]) -> None:
    ours = kuuid.id()
    for theirs in node_answers["ids_now"][:1000]:
        assert len(theirs) == len(ours) == 32
        for block in blocks_of(theirs[8:]):
            check_block(block)
        # Made moments ago: their time is within a minute of ours.
        assert abs(decode(theirs).timestamp - decode(ours).timestamp).total_seconds() < 60


# --- recorded vectors -------------------------------------------------------------------------


def test_legacy_vectors() -> None:
    vectors = load_vectors("kuuid-legacy.json")
    cases = vectors["cases"]
    assert len(cases) == 306
    for case in cases:
        assert_same_prefixes(case)
        assert_ids_agree(case)


def test_legacy_vector_ids_decode_without_flags_inside_2000_2100() -> None:
    checked = 0
    for case in load_vectors("kuuid-legacy.json")["cases"]:
        ms = to_ms(instant(case["timestamp"]))
        if not to_ms("2000-01-01") <= ms < to_ms("2100-01-01"):
            continue
        for fn, (form, _) in FUNCTIONS.items():
            decoded = decode(case[fn])
            assert decoded.form == form
            assert decoded.timestamp == to_datetime(ms - ms % form.unit_ms)
            checked += 1
    assert checked >= 6 * 20


def test_v7_vectors() -> None:
    cases = load_vectors("kuuid-v7.json")["cases"]
    assert len(cases) == 200
    for case in cases:
        ms = case["timestamp"]
        theirs_s, theirs = case["v7s"], case["v7"]
        ours_s, ours = kuuid.v7s(ms), kuuid.v7(ms)
        assert ours_s[:13] == theirs_s[:13] == f"{ms:012x}7"
        assert ours[:15] == theirs[:15]
        assert len(ours_s) == len(theirs_s) == 32 and len(ours) == len(theirs) == 36
        for text in (ours_s, theirs_s):
            assert text[16] in "89ab"
        for text in (ours, theirs):
            assert text[19] in "89ab"
        for doc_id, form in ((theirs_s, couchids.V7S), (theirs, couchids.V7)):
            decoded = decode(doc_id)
            assert decoded.form == form
            assert decoded.timestamp == to_datetime(ms)


def test_in_repo_vectors_match_the_shared_copy() -> None:
    shared = SHARED_VECTORS
    if not shared.is_dir():
        pytest.skip(f"{shared} is not beside this checkout; the in-repo copy is used alone")
    for name in ("kuuid-legacy.json", "kuuid-v7.json"):
        in_repo = json.loads((VECTORS / name).read_text(encoding="utf-8"))
        assert in_repo == json.loads((shared / name).read_text(encoding="utf-8")), name
