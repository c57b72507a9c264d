"""node/kuuid-bridge.js returns what the real kuuid 1.0.3 package computes.

The expected values are kuuid's published examples (its README and tests), so these tests
prove the bridge, not couchids.
"""

from __future__ import annotations

import re

import pytest
from kuuid_node import KuuidNode

BASE62 = re.compile(r"[0-9A-Za-z]+")
NEW_YEAR_2018 = 1514764800000  # 2018-01-01T00:00:00Z in epoch milliseconds


def test_published_prefixes(kuuid_node: KuuidNode) -> None:
    cases = kuuid_node.cross_check(
        ["2018-01-01T00:00:00.000Z", NEW_YEAR_2018, "1970-01-01T00:00:00.000Z"]
    )["cases"]
    iso_2018, ms_2018, epoch = cases
    assert iso_2018["prefix"] == "001eVnWK"
    assert ms_2018["prefix"] == "001eVnWK"
    assert ms_2018["timestamp"] == NEW_YEAR_2018
    assert epoch["prefix"] == "00000000"
    assert epoch["prefix_ms"] == "00000000"
    assert epoch["prefix_reverse"] == "zzzzzzzz"
    assert epoch["prefix_reverse_ms"] == "zzzzzzzz"


def test_ids_start_with_their_prefix(kuuid_node: KuuidNode) -> None:
    (case,) = kuuid_node.cross_check([NEW_YEAR_2018])["cases"]
    for form, prefix, length in [
        ("id", "prefix", 32),
        ("idr", "prefix_reverse", 32),
        ("ids", "prefix", 20),
        ("idsr", "prefix_reverse", 20),
        ("idms", "prefix_ms", 32),
        ("idmsr", "prefix_reverse_ms", 32),
    ]:
        assert case[form].startswith(case[prefix]), form
        assert len(case[form]) == length, form
        assert BASE62.fullmatch(case[form]), form


def test_kuuid_treats_timestamp_zero_as_now(kuuid_node: KuuidNode) -> None:
    # A kuuid quirk worth knowing: a falsy timestamp means "now", so epoch 0 as a number does
    # not give "00000000"; the epoch has to be passed as an ISO string.
    zero, year_2020 = kuuid_node.cross_check([0, "2020-01-01T00:00:00Z"])["cases"]
    assert zero["prefix"] != "00000000"
    assert zero["prefix"] > year_2020["prefix"]


def test_random_samples(kuuid_node: KuuidNode) -> None:
    answer = kuuid_node.cross_check([], random_samples=50)
    assert answer["cases"] == []
    assert len(answer["rand"]) == len(set(answer["rand"])) == 50
    assert all(len(r) == 24 and BASE62.fullmatch(r) for r in answer["rand"])
    assert all(len(i) == 32 and BASE62.fullmatch(i) for i in answer["ids_now"])


def test_make_mode(kuuid_node: KuuidNode) -> None:
    forms = ["id", "idr", "ids", "idsr", "idms", "idmsr"]
    made = kuuid_node.make([(form, NEW_YEAR_2018) for form in forms])
    (case,) = kuuid_node.cross_check([NEW_YEAR_2018])["cases"]
    assert [m[:8] for m in made] == [case[form][:8] for form in forms]
    assert [len(m) for m in made] == [len(case[form]) for form in forms]


def test_make_mode_rejects_unknown_functions(kuuid_node: KuuidNode) -> None:
    with pytest.raises(RuntimeError, match="unknown fn"):
        kuuid_node.make([("prefix", NEW_YEAR_2018)])


def test_bench_mode(kuuid_node: KuuidNode) -> None:
    assert kuuid_node.ns_per_id(1000) > 0
