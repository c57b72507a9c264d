"""Id forms (couchids/idforms/forms.py): presets, what each form makes, its keys and strict
parsing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import couchids
from couchids import IdForm, InvalidArgumentError, InvalidIdError, kuuid
from couchids.idforms.forms import KUUID_FORMS
from couchids.idforms.times import MAX_MS, to_datetime

LAST_MS_PREFIX = 62**8 - 1

PRESETS = [
    (couchids.KUUID, IdForm("kuuid"), "kuuid", 32),
    (couchids.KUUID_REVERSE, IdForm(reverse=True), "kuuid-reverse", 32),
    (couchids.KUUID_MS, IdForm(millisecond=True), "kuuid-ms", 32),
    (couchids.KUUID_MS_REVERSE, IdForm(reverse=True, millisecond=True), "kuuid-ms-reverse", 32),
    (couchids.SHORT, IdForm(random=2), "kuuid-short", 20),
    (couchids.SHORT_REVERSE, IdForm(random=2, reverse=True), "kuuid-short-reverse", 20),
    (couchids.V7, IdForm("v7"), "v7", 36),
    (couchids.V7S, IdForm("v7s"), "v7s", 32),
]


@pytest.mark.parametrize(("preset", "spelled_out", "name", "length"), PRESETS, ids=str)
def test_presets(preset: IdForm, spelled_out: IdForm, name: str, length: int) -> None:
    assert preset == spelled_out
    assert hash(preset) == hash(spelled_out)
    assert str(preset) == name
    assert preset.length == length
    assert len(preset.new()) == length
    assert preset in KUUID_FORMS


def test_all_forms_are_distinct_and_complete() -> None:
    assert len(set(KUUID_FORMS)) == len(KUUID_FORMS) == 4 * 4 + 2
    assert {str(f) for f in KUUID_FORMS} >= {"kuuid-random1-ms-reverse", "kuuid-random3"}


def test_uuid7_forms_have_millisecond_precision() -> None:
    assert couchids.V7.millisecond and couchids.V7S.millisecond
    assert couchids.V7.unit_ms == 1 and couchids.KUUID.unit_ms == 1000


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kind": "ulid"}, "a kuuid form is one of"),
        ({"random": 0}, "random=0: the number of random blocks must be an int from 1 to 4"),
        ({"random": 5}, "random=5"),
        ({"random": True}, "random=True"),
        ({"random": 2.0}, r"random=2\.0"),
        ({"kind": "v7", "reverse": True}, "no reverse mode"),
        ({"kind": "v7s", "random": 2}, "no random blocks to choose"),
    ],
    ids=repr,
)
def test_invalid_forms(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        IdForm(**kwargs)


def makers_for(form: IdForm) -> Any:
    """The public function that makes ids of ``form``, to compare ``form.new`` against."""
    if form.kind == "v7":
        return kuuid.v7
    if form.kind == "v7s":
        return kuuid.v7s
    return lambda t, **kw: couchids.id(
        t, random=form.random, reverse=form.reverse, millisecond=form.millisecond, **kw
    )


@pytest.mark.parametrize("form", KUUID_FORMS, ids=str)
def test_new_matches_the_public_makers(form: IdForm) -> None:
    t = "2018-07-20T10:10:34.234Z"
    ours, theirs = form.new(t, type="t"), makers_for(form)(t, type="t")
    assert len(ours) == len(theirs) == len("t:") + form.length
    head = 2 + (8 if form.kind == "kuuid" else 13)
    assert ours[:head] == theirs[:head]


@st.composite
def form_and_time(draw: st.DrawFn) -> tuple[IdForm, int]:
    form = draw(st.sampled_from(KUUID_FORMS))
    top = LAST_MS_PREFIX if form.kind == "kuuid" and form.millisecond else MAX_MS
    return form, draw(st.integers(min_value=0, max_value=top))


@given(form_and_time())
def test_parse_gives_the_time_back_and_key_starts_the_id(case: tuple[IdForm, int]) -> None:
    form, ms = case
    doc_id = form.new(to_datetime(ms))
    unit = ms // form.unit_ms
    assert form.parse(doc_id) == unit * form.unit_ms
    assert form.key_fits(unit)
    assert doc_id.startswith(form.key(unit))


@given(form_and_time(), st.integers(min_value=0, max_value=MAX_MS))
def test_keys_sort_with_time(case: tuple[IdForm, int], other_ms: int) -> None:
    form, ms = case
    u1, u2 = sorted((ms // form.unit_ms, other_ms // form.unit_ms))
    if not form.key_fits(u2):
        return
    k1, k2 = form.key(u1), form.key(u2)
    if u1 == u2:
        assert k1 == k2
    elif form.reverse:
        assert k1 > k2
    else:
        assert k1 < k2


def test_key_fits_edges() -> None:
    assert couchids.KUUID.key_fits(LAST_MS_PREFIX)
    assert not couchids.KUUID.key_fits(LAST_MS_PREFIX + 1)
    assert not couchids.KUUID_REVERSE.key_fits(LAST_MS_PREFIX + 1)
    assert not couchids.KUUID.key_fits(-1)
    assert couchids.V7S.key_fits(2**48 - 1) and not couchids.V7S.key_fits(2**48)
    assert couchids.KUUID_REVERSE.key(0) == "zzzzzzzz"
    assert couchids.V7.key(0x018CC251F400) == "018cc251-f400"
    assert couchids.V7S.key(0x018CC251F400) == "018cc251f400"


def test_max_unit_can_be_made() -> None:
    for form in KUUID_FORMS:
        doc_id = form.new(form.max_unit * form.unit_ms)
        assert form.parse(doc_id) == form.max_unit * form.unit_ms


#: A utc_random id of 2024 whose characters 8, 14, 20 and 26 are 0-4: it fits the 4-block
#: kuuid pattern, where its first 8 characters read as a millisecond time of 1980.
UTC_RANDOM_LIKE_KUUID = "0660d676" + "0aba60" + "1d238c" + "034c51" + "2ff1a0"


@pytest.mark.parametrize(
    "form", [f for f in KUUID_FORMS if f.kind == "kuuid" and f.length == 32], ids=str
)
def test_32_hex_digits_are_no_kuuid_id(form: IdForm) -> None:
    body = UTC_RANDOM_LIKE_KUUID
    assert couchids.decode(body).form == couchids.UTC_RANDOM
    with pytest.raises(InvalidIdError, match="32 lower-case hex digits are a v7s, utc_random"):
        form.read(body)
    assert not form.matcher("t:")("t:" + body)
    # Past the hex digits, any kuuid id is one.
    assert form.matcher("t:")("t:" + body[:-1] + "A")


@pytest.mark.parametrize(
    ("form", "body", "match"),
    [
        (couchids.KUUID, "001eVnWK1bu9mX", "has 14 characters; a kuuid id has 32"),
        (couchids.SHORT, "001eVnWK1bu9mX3BsHn!", "8 base62 characters"),
        (couchids.SHORT, "001eVnWK1bu9mX4gfFC4", "random block '4gfFC4' is above 4gfFC3"),
        (IdForm(random=1), "001eVnWK5bu9mX", "random block '5bu9mX' is above 4gfFC3"),
        (couchids.KUUID, "zzzzzzzz" + "0" * 24, "time after 9999-12-31"),
        (couchids.V7S, "018cc251f4004abc8def0123456789ab", "version 7"),
        (couchids.V7, "018cc251-f400-7abc-cdef-0123456789ab", "variant"),
        (couchids.V7, "018CC251-F400-7ABC-8DEF-0123456789AB", "lowercase hex"),
        (couchids.V7S, "018cc251-f400-7abc-8def-0123456789ab", "has 36 characters"),
    ],
    ids=repr,
)
def test_parse_refuses(form: IdForm, body: str, match: str) -> None:
    with pytest.raises(InvalidIdError, match=match):
        form.parse(body)
