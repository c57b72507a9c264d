"""The document type rule (couchids/idforms/doctypes.py) and how id makers apply it."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import couchids
from couchids import InvalidTypeError, kuuid
from couchids.idforms.doctypes import check_type, type_prefix

TYPE_CHARS = string.ascii_letters + string.digits + "_-"


def follows_rule(text: str) -> bool:
    """The rule as the docs state it, written independently of the module's regex."""
    return (
        1 <= len(text) <= 64
        and all(ch in TYPE_CHARS for ch in text)
        and not text.startswith("_")  # CouchDB reserves ids that start with '_'
    )


VALID = ["user", "a", "Z", "0", "-", "-x", "x_", "order-line_2", "a" * 64, "A1_b-2"]
INVALID = [
    "",
    "_x",
    "_design",
    "a:b",
    "a b",
    " user",
    "user ",
    "user\n",
    "a" * 65,
    "é",
    "ü-ber",
    "\u0661",  # an Arabic-Indic digit: a digit, but not ASCII
    "a/b",
    "a.b",
    "a\x00",
]


@pytest.mark.parametrize("doc_type", VALID)
def test_valid_types(doc_type: str) -> None:
    assert check_type(doc_type) == doc_type
    assert type_prefix(doc_type) == doc_type + ":"


@pytest.mark.parametrize("doc_type", INVALID, ids=repr)
def test_invalid_types_raise_with_the_rule(doc_type: str) -> None:
    with pytest.raises(InvalidTypeError) as info:
        check_type(doc_type)
    message = str(info.value)
    assert repr(doc_type) in message
    assert "1-64 ASCII letters, digits, '_' and '-', not starting with '_'" in message


@pytest.mark.parametrize("doc_type", [1, b"user", ["user"], {"t": 1}, 2.5], ids=repr)
def test_non_strings_raise_invalid_type_not_type_error(doc_type: Any) -> None:
    # An unhashable value must not reach the prefix cache (TypeError) before the check.
    with pytest.raises(InvalidTypeError, match="is not a valid document type"):
        type_prefix(doc_type)
    with pytest.raises(InvalidTypeError):
        couchids.id(type=doc_type)
    with pytest.raises(InvalidTypeError):
        kuuid.v7s(type=doc_type)


def test_none_means_untyped() -> None:
    assert type_prefix(None) == ""
    assert ":" not in couchids.id(type=None)
    assert ":" not in kuuid.v7s(type=None)


@given(st.text(alphabet=TYPE_CHARS + ": é\t\n/.", max_size=70))
def test_check_type_matches_the_stated_rule(text: str) -> None:
    if follows_rule(text):
        assert check_type(text) == text
    else:
        with pytest.raises(InvalidTypeError):
            check_type(text)


@given(st.text(max_size=70))
def test_arbitrary_unicode_is_accepted_only_if_it_follows_the_rule(text: str) -> None:
    try:
        check_type(text)
    except InvalidTypeError:
        assert not follows_rule(text)
    else:
        assert follows_rule(text)


MAKERS = [
    couchids.id,
    kuuid.idr,
    kuuid.ids,
    kuuid.idsr,
    kuuid.idms,
    kuuid.idmsr,
    kuuid.v7,
    kuuid.v7s,
]


@pytest.mark.parametrize("make", MAKERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("doc_type", ["", "_x", "a:b", "a b", "a" * 65, "é"], ids=repr)
def test_every_maker_refuses_bad_types(make: Any, doc_type: str) -> None:
    with pytest.raises(InvalidTypeError, match="is not a valid document type"):
        make(type=doc_type)


@pytest.mark.parametrize("make", MAKERS, ids=lambda f: f.__name__)
def test_every_maker_writes_the_type_before_a_colon(make: Any) -> None:
    plain = make("2018-01-01")
    typed = make("2018-01-01", type="order-line")
    head, sep, body = typed.partition(":")
    assert (head, sep) == ("order-line", ":")
    assert len(body) == len(plain)
