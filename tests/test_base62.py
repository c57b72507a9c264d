"""Fixed-width base62 (couchids/idforms/base62.py) against kuuid's own base62 test vectors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from couchids.idforms import base62
from couchids.idforms.constants import ALPHABET, BASE, PREFIX_LEN

# kuuid's lib/base62.test.js: kuuid's encoder writes no leading zeros.
KUUID_BASE62 = [
    (0, "0"),
    (1, "1"),
    (10, "A"),
    (36, "a"),
    (62, "10"),
    (199919991999, "3WDjuZz"),
    (9007199254740991, "fFgnDxSe7"),  # 2**53 - 1, the largest integer kuuid handles exactly
]


@pytest.mark.parametrize(("value", "digits"), KUUID_BASE62)
def test_kuuid_vectors_are_our_digits_zero_padded(value: int, digits: str) -> None:
    for width in (len(digits), 9, 12):
        encoded = base62.encode(value, width)
        assert len(encoded) == width
        assert encoded == digits.rjust(width, "0")
        assert encoded.lstrip("0") == digits.lstrip("0")
    assert base62.decode(digits) == value


@pytest.mark.parametrize(("value", "digits"), KUUID_BASE62)
def test_prefix_encoding_matches_kuuid_padding(value: int, digits: str) -> None:
    if len(digits) <= PREFIX_LEN:
        assert base62.encode_prefix(value) == digits.rjust(PREFIX_LEN, "0")


def test_alphabet_is_in_byte_order() -> None:
    # _all_docs compares ids as raw bytes; base62 strings of one width only sort like their
    # numbers if the alphabet is ascending.
    assert list(ALPHABET) == sorted(ALPHABET)
    assert len(set(ALPHABET)) == BASE == 62


@pytest.mark.parametrize("k", range(PREFIX_LEN + 1))
def test_powers_of_62_boundaries(k: int) -> None:
    if k < PREFIX_LEN:
        assert base62.encode_prefix(BASE**k) == "0" * (PREFIX_LEN - k - 1) + "1" + "0" * k
    assert base62.encode_prefix(BASE**k - 1) == "0" * (PREFIX_LEN - k) + "z" * k


@given(st.integers(min_value=0, max_value=BASE**PREFIX_LEN - 1))
def test_prefix_encoding_round_trips_and_agrees_with_encode(value: int) -> None:
    text = base62.encode_prefix(value)
    assert text == base62.encode(value, PREFIX_LEN)
    assert base62.decode(text) == value


@given(
    st.integers(min_value=1, max_value=12).flatmap(
        lambda width: st.tuples(
            st.just(width),
            st.integers(min_value=0, max_value=BASE**width - 1),
            st.integers(min_value=0, max_value=BASE**width - 1),
        )
    )
)
def test_fixed_width_strings_sort_like_their_numbers(case: tuple[int, int, int]) -> None:
    width, a, b = case
    ea, eb = base62.encode(a, width), base62.encode(b, width)
    assert (ea < eb) == (a < b)
    assert (ea == eb) == (a == b)
    # Python compares str by code point; for ASCII that is the byte order CouchDB uses.
    assert (ea.encode() < eb.encode()) == (a < b)


@pytest.mark.parametrize(("value", "width"), [(-1, 8), (BASE**8, 8), (62, 1), (BASE**6, 6)])
def test_encode_rejects_values_that_do_not_fit(value: int, width: int) -> None:
    with pytest.raises(ValueError, match=f"{value} does not fit in {width} base62"):
        base62.encode(value, width)


@pytest.mark.parametrize("value", [-1, BASE**PREFIX_LEN, BASE**PREFIX_LEN * 5])
def test_encode_prefix_rejects_values_that_do_not_fit(value: int) -> None:
    with pytest.raises(ValueError, match="does not fit in 8 base62"):
        base62.encode_prefix(value)


@pytest.mark.parametrize(("text", "bad"), [("12-4", "-"), ("abc!", "!"), ("é", "é"), ("a b", " ")])
def test_decode_names_the_bad_character(text: str, bad: str) -> None:
    with pytest.raises(ValueError, match=f"{bad!r} is not a base62 character"):
        base62.decode(text)
