"""couchids.core.exactjson: ``loads`` is exact (integers beyond 64 bits stay whole, as
``json`` keeps them) and fast (``orjson``) for every body that holds no such integer, however
many long runs of digits its strings hold, as CouchDB's revisions do."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from couchids.core import exactjson
from couchids.core.exactjson import dumps, loads, long_integer

#: Integers either side of what orjson keeps whole, and strings that hold long digit runs.
INTEGERS = st.one_of(
    st.integers(),
    st.integers(min_value=10**18, max_value=10**40),
    st.integers(min_value=-(10**40), max_value=-(10**18)),
)
DIGITS = st.text(alphabet="0123456789", min_size=19, max_size=30)
STRINGS = st.one_of(
    st.text(),
    st.builds(
        lambda a, b, c: a + b + c,
        st.sampled_from(["", "1-", "x", ":", ", ", "["]),
        DIGITS,
        st.text(max_size=3),
    ),
)
VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        INTEGERS,
        st.floats(allow_nan=False, allow_infinity=False),
        STRINGS,
    ),
    lambda inner: st.lists(inner) | st.dictionaries(STRINGS, inner),
    max_leaves=20,
)


@given(VALUES, st.sampled_from(["compact", "spaced", "indented"]))
def test_loads_reads_what_json_reads(value: Any, layout: str) -> None:
    text = {
        "compact": json.dumps(value, separators=(",", ":")),
        "spaced": json.dumps(value),
        "indented": json.dumps(value, indent=1),
    }[layout].encode()
    got = loads(text)
    assert got == json.loads(text)
    assert dumps(got) == dumps(json.loads(text))


def test_every_long_integer_is_found() -> None:
    for text in (
        b"12345678901234567890",
        b"[-12345678901234567890]",
        b'{"a":\n\t 1234567890123456789}',
    ):
        assert long_integer(text), text


def page(rows: int) -> bytes:
    """An ``_all_docs`` page whose revisions hold long digit runs, as real ones often do."""
    revs = [f"1-{secrets.randbelow(10**19):019d}{secrets.token_hex(6)}" for _ in range(rows)]
    answer = {
        "total_rows": rows,
        "offset": 0,
        "rows": [
            {
                "id": f"d{k}",
                "key": f"d{k}",
                "value": {"rev": rev},
                "doc": {"_id": f"d{k}", "_rev": rev, "n": k},
            }
            for k, rev in enumerate(revs)
        ],
    }
    return json.dumps(answer).encode()


def test_a_page_whose_strings_hold_digit_runs_is_decoded_by_orjson(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = page(100)
    expected = json.loads(body)

    def refuse(_body: bytes) -> Any:
        raise AssertionError("decoded by json")

    monkeypatch.setattr(exactjson.json, "loads", refuse)
    assert loads(body) == expected


def test_a_page_with_a_long_integer_is_decoded_by_json() -> None:
    body = page(3).replace(b'"n": 2', b'"n": 123456789012345678901234567890')
    assert loads(body)["rows"][2]["doc"]["n"] == 123456789012345678901234567890
