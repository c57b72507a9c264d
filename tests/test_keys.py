"""Key ranges of time windows (couchids.core.keys): pure arithmetic, proven by properties.

Python compares ``str`` by code point, which for the ASCII ids here is the raw byte order
``_all_docs`` uses, so ``low <= doc_id < high`` is exactly "the server returns it".
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from ids_helpers import load_vectors

from couchids.core.keys import KeyRange, in_window, window_keys
from couchids.idforms.constants import TYPE_PATTERN
from couchids.idforms.forms import (
    KUUID,
    KUUID_FORMS,
    KUUID_MS,
    KUUID_MS_REVERSE,
    KUUID_REVERSE,
    SHORT,
    SHORT_REVERSE,
    V7,
    V7S,
    IdForm,
)
from couchids.idforms.times import MAX_MS, to_datetime, to_ms

PRESETS = (KUUID, KUUID_REVERSE, KUUID_MS, KUUID_MS_REVERSE, SHORT, SHORT_REVERSE, V7, V7S)
SECOND_FORMS = tuple(f for f in KUUID_FORMS if not f.millisecond)

forms = st.sampled_from(KUUID_FORMS)
types = st.one_of(
    st.none(),
    st.sampled_from(["user", "users", "use", "a", "0", "zz", "Z-9_x"]),
    st.from_regex(TYPE_PATTERN, fullmatch=True),
)


def last_ms(form: IdForm) -> int:
    """The latest time an id of ``form`` can hold."""
    return min(form.max_unit * form.unit_ms, MAX_MS)


def id_time(form: IdForm, t: int) -> int:
    """The time an id made at ``t`` holds: ``t`` cut to the form's precision."""
    return t - t % form.unit_ms


def reached(form: IdForm, t: int) -> bool:
    """Whether key ranges of ``form`` reach the time ``t`` (millisecond kuuid forms leave
    1970-1979 to the ids of the second modes, which read as those times)."""
    return t >= form.min_unit * form.unit_ms


def contains(keys: KeyRange, doc_id: str) -> bool:
    return keys.low <= doc_id < keys.high


def extreme_ids(form: IdForm, t: int, doc_type: str | None) -> list[str]:
    """The lowest and highest valid ids of ``form`` made at ``t``, written out by hand so
    the range is tested at its tightest, not just at random points."""
    unit = t // form.unit_ms
    if form.kind == "kuuid":
        head = form.key(unit)
        low = head + "000000" * form.random
        if len(low) == 32 and all(ch in "0123456789abcdef" for ch in low):
            low = low[:-1] + "A"  # 32 hex digits are a hex form's id, never a kuuid one
        bodies = [low, head + "4gfFC3" * form.random]
    else:
        hex_time = f"{t:012x}"
        low, high = "7000" + "8" + "0" * 15, "7fff" + "b" + "f" * 15
        bodies = [hex_time + low, hex_time + high]
        if form.kind == "v7":
            bodies = [f"{b[:8]}-{b[8:12]}-{b[12:16]}-{b[16:20]}-{b[20:]}" for b in bodies]
    for body in bodies:
        assert form.parse(body) == id_time(form, t)  # they really are ids of that time
    prefix = "" if doc_type is None else doc_type + ":"
    return [prefix + body for body in bodies]


@st.composite
def windows_and_times(draw: st.DrawFn) -> tuple[IdForm, str | None, int, int, int]:
    """A form, a type, a window ``[start, end)`` and a time ``t`` often right at its edges."""
    form = draw(forms)
    doc_type = draw(types)
    top = last_ms(form)
    start = draw(st.integers(0, top))
    span = draw(
        st.one_of(
            st.integers(0, 2_000),
            st.sampled_from([1, 999, 1000, 1001, 86_400_000, 14 * 86_400_000]),
            st.integers(0, top),
        )
    )
    end = min(start + span, top + 1)
    edge = draw(st.sampled_from([start, end]))
    t = draw(
        st.one_of(
            st.integers(max(edge - 2_000, 0), min(edge + 2_000, top)),
            st.integers(0, top),
        )
    )
    return form, doc_type, start, end, t


@settings(max_examples=1500)
@given(windows_and_times())
@example((KUUID, "user", 1_514_764_800_000, 1_514_764_801_000, 1_514_764_800_999))
@example((KUUID, "user", 1_514_764_800_000, 1_514_764_801_000, 1_514_764_801_000))
@example((KUUID_REVERSE, None, 1_514_764_800_001, 1_514_764_802_000, 1_514_764_801_000))
@example((KUUID_MS, None, 0, 1, 0))
@example((KUUID_MS_REVERSE, "user", 0, 1, 0))
@example((V7, "a", 0, MAX_MS + 1, MAX_MS))
@example((KUUID_REVERSE, "user", 0, MAX_MS + 1, MAX_MS))
@example((KUUID_MS_REVERSE, None, 0, 62**8, 62**8 - 1))
def test_an_id_is_in_the_range_exactly_when_its_time_is_in_the_window(
    case: tuple[IdForm, str | None, int, int, int],
) -> None:
    form, doc_type, start, end, t = case
    keys = window_keys(form, doc_type, start, end)
    inside = start <= id_time(form, t) < end and reached(form, t)
    made = [form.new(to_datetime(t), type=doc_type), *extreme_ids(form, t, doc_type)]
    if keys is None:
        assert not inside, "a window holding an id time must have a key range"
        return
    assert keys.prefix == ("" if doc_type is None else doc_type + ":")
    assert keys.low < keys.high
    for doc_id in made:
        assert contains(keys, doc_id) == inside, (doc_id, keys, inside)


@settings(max_examples=400)
@given(forms, types, st.integers(0, MAX_MS), st.integers(0, 5_000))
def test_a_window_is_empty_exactly_when_no_id_time_falls_in_it(
    form: IdForm, doc_type: str | None, start: int, span: int
) -> None:
    end = start + span
    assume(end <= last_ms(form) + 1)
    keys = window_keys(form, doc_type, start, end)
    holds_an_id_time = any(ms % form.unit_ms == 0 and reached(form, ms) for ms in range(start, end))
    assert (keys is None) == (not holds_an_id_time)


@pytest.mark.parametrize("form", SECOND_FORMS, ids=str)
@pytest.mark.parametrize(("start", "end"), [(1001, 1999), (1001, 2000), (1500, 1500), (0, 0)])
def test_second_forms_have_no_range_inside_one_second(form: IdForm, start: int, end: int) -> None:
    assert window_keys(form, "user", start, end) is None
    assert window_keys(form, None, start, end) is None


@pytest.mark.parametrize("form", PRESETS, ids=str)
def test_ranges_at_second_edges(form: IdForm) -> None:
    second = 1_700_000_000_000
    at = [form.new(second + d, type="user") for d in (0, 1, 999)]
    next_second = form.new(second + 1000, type="user")
    before = form.new(second - 1, type="user")
    whole = window_keys(form, "user", second, second + 1000)
    assert whole is not None
    assert all(contains(whole, i) for i in at)
    assert not contains(whole, next_second)
    assert not contains(whole, before)
    # A window of one millisecond at the edge holds the whole second's ids when they only
    # record seconds, and just that millisecond's otherwise.
    edge = window_keys(form, "user", second, second + 1)
    assert edge is not None
    assert [contains(edge, i) for i in at] == [True, not form.millisecond, not form.millisecond]
    # Starting one millisecond after the edge leaves the second out for second precision.
    later = window_keys(form, "user", second + 1, second + 1000)
    if form.millisecond:
        assert later is not None
        assert [contains(later, i) for i in at] == [False, True, True]
    else:
        assert later is None


@settings(max_examples=500)
@given(
    forms,
    st.sampled_from(["users", "use", "user_", "user-", "userA", "User", "usea", "userz"]),
    st.integers(0, MAX_MS),
    st.integers(0, MAX_MS),
)
def test_a_type_range_holds_no_id_of_a_type_it_is_a_prefix_of(
    form: IdForm, other: str, start: int, t: int
) -> None:
    t = min(t, last_ms(form))
    keys = window_keys(form, "user", min(start, t), last_ms(form) + 1)
    assert keys is not None
    for doc_id in [form.new(to_datetime(t), type=other), *extreme_ids(form, t, other)]:
        assert not contains(keys, doc_id), doc_id
    for stub in ["user", "user:", "users:", "use:", "user;", "user:admin", "user:notakuuid"]:
        if contains(keys, stub):
            # Foreign ids can sort inside a typed range; they must then start with its prefix
            # and fail to parse, which is what the query filters on.
            assert stub.startswith("user:")


@settings(max_examples=500)
@given(
    forms,
    st.from_regex(TYPE_PATTERN, fullmatch=True),
    st.from_regex(TYPE_PATTERN, fullmatch=True),
    st.integers(0, MAX_MS),
    st.integers(0, MAX_MS),
)
def test_a_type_range_holds_no_id_of_any_other_type(
    form: IdForm, mine: str, other: str, start: int, t: int
) -> None:
    assume(mine != other)
    t = min(t, last_ms(form))
    keys = window_keys(form, mine, min(start, t), last_ms(form) + 1)
    assert keys is not None
    for doc_id in extreme_ids(form, t, other):
        assert not contains(keys, doc_id)


@settings(max_examples=500)
@given(
    st.sampled_from(SECOND_FORMS),
    st.from_regex(TYPE_PATTERN, fullmatch=True),
    st.integers(0, MAX_MS),
    st.integers(0, MAX_MS),
    st.integers(0, MAX_MS),
)
def test_an_untyped_second_range_holds_typed_ids_only_of_types_that_look_like_times(
    form: IdForm, doc_type: str, start: int, end: int, t: int
) -> None:
    """Second-precision keys all start with ``0`` (or ``z`` when reversed) until 9999, so a
    typed id can fall inside an untyped range only when its type starts with that character
    (``00:...``, ``zzzz:...``); every ordinary type stays out."""
    start, end = min(start, end), max(start, end) + 1
    keys = window_keys(form, None, start, end)
    assume(keys is not None)
    assert keys is not None
    leading = form.key(0)[0]
    assert {leading} == {form.key(MAX_MS // 1000)[0]}
    for doc_id in extreme_ids(form, t, doc_type):
        if contains(keys, doc_id):
            assert doc_type.startswith(leading), doc_id


@pytest.mark.parametrize("form", SECOND_FORMS, ids=str)
def test_ordinary_types_never_fall_in_an_untyped_second_range(form: IdForm) -> None:
    everything = window_keys(form, None, 0, MAX_MS + 1)
    assert everything is not None
    for doc_type in ["user", "User", "a", "y", "Z", "-x", "5", "9abc", "x_y"]:
        for t in (0, 1_700_000_000_000, MAX_MS):
            for doc_id in extreme_ids(form, t, doc_type):
                assert not contains(everything, doc_id)


def test_types_that_look_like_times_do_fall_in_untyped_ranges() -> None:
    """Why queries filter every row: a key range alone is not enough for such types."""
    t = 1_700_000_000_000
    second = window_keys(KUUID, None, t, t + 1000)
    assert second is not None
    assert contains(second, KUUID.key(t // 1000) + ":" + KUUID.new(to_datetime(t)))
    newest = window_keys(KUUID_REVERSE, None, 0, t)
    assert newest is not None
    assert contains(newest, "zzzz:" + KUUID_REVERSE.new(to_datetime(t)))


@pytest.mark.parametrize("form", PRESETS, ids=str)
@pytest.mark.parametrize("doc_type", ["user", "a", "zz"])
def test_design_documents_never_fall_in_a_typed_range(form: IdForm, doc_type: str) -> None:
    keys = window_keys(form, doc_type, 0, last_ms(form) + 1)
    assert keys is not None
    for design in ["_design/x", "_design/user", "_local/x", "_design/" + doc_type + ":"]:
        assert not contains(keys, design)


@pytest.mark.parametrize("form", SECOND_FORMS, ids=str)
def test_design_documents_never_fall_in_an_untyped_second_range(form: IdForm) -> None:
    keys = window_keys(form, None, 0, MAX_MS + 1)
    assert keys is not None
    assert not contains(keys, "_design/x")


def test_design_documents_sort_between_upper_and_lower_case() -> None:
    """CouchDB's raw order: ``_`` sits after ``Z`` and before ``a``; an untyped millisecond
    range that runs to the top of the index therefore holds design documents, and the query
    has to filter them out."""
    assert "Zzzz" < "_design/x" < "a"
    everything = window_keys(KUUID_MS, None, 0, KUUID_MS.max_unit + 1)
    assert everything is not None
    assert contains(everything, "_design/x")
    future = window_keys(V7S, None, 0xA00000000000 - 1, 0xA00000000000 + 1)
    assert future is not None
    assert contains(future, "_design/x")


@pytest.mark.parametrize("form", KUUID_FORMS, ids=str)
@pytest.mark.parametrize("newest_first", [True, False])
def test_bounds_put_the_wanted_end_first(form: IdForm, newest_first: bool) -> None:
    early, late = 1_600_000_000_000, 1_700_000_000_000
    keys = window_keys(form, "user", early, late + 1000)
    assert keys is not None
    start_key, end_key, descending = keys.bounds(newest_first=newest_first, form=form)
    # Whichever way the request runs, CouchDB wants startkey before endkey in that direction.
    assert (start_key > end_key) == descending
    assert {start_key, end_key} == {keys.low, keys.high}
    # The first id the server returns is the one wanted first.
    ids = sorted([form.new(early, type="user"), form.new(late, type="user")])
    first = ids[-1] if descending else ids[0]
    wanted_first = form.parse(first[len("user:") :])
    assert wanted_first == (late if newest_first else early)


@pytest.mark.parametrize("form", PRESETS, ids=str)
def test_key_ranges_hold_ids_made_by_kuuid_itself(form: IdForm) -> None:
    """Ids from the real kuuid (known answers) fall in the range of the second they were made."""
    legacy = load_vectors("kuuid-legacy.json")["cases"]
    v7 = load_vectors("kuuid-v7.json")["cases"]
    field = {
        KUUID: "id",
        KUUID_REVERSE: "idr",
        KUUID_MS: "idms",
        KUUID_MS_REVERSE: "idmsr",
        SHORT: "ids",
        SHORT_REVERSE: "idsr",
        V7: "v7",
        V7S: "v7s",
    }[form]
    cases = v7 if form.kind != "kuuid" else legacy
    checked = 0
    for case in cases:
        stamp = case["timestamp"]
        if not isinstance(stamp, int):
            continue
        t = id_time(form, stamp)
        if not reached(form, t):
            continue
        inside = window_keys(form, None, t, t + form.unit_ms)
        before = window_keys(form, None, t - 1000, t)
        after = window_keys(form, None, t + form.unit_ms, t + form.unit_ms + 1000)
        assert inside is not None and before is not None and after is not None
        assert contains(inside, case[field])
        assert not contains(before, case[field])
        assert not contains(after, case[field])
        checked += 1
    assert checked >= 5


@settings(max_examples=300)
@given(
    st.sampled_from(SECOND_FORMS),
    types,
    st.integers(0, MAX_MS),
    st.integers(0, MAX_MS),
    st.integers(0, MAX_MS),
)
def test_no_range_of_the_millisecond_mode_holds_a_second_mode_id(
    form: IdForm, doc_type: str | None, t: int, start: int, end: int
) -> None:
    """An id of a second mode reads in the millisecond mode of its block count (the same
    length and alphabet) as a time before 1978-01-12: no range of that mode reaches it."""
    ms_form = replace(form, millisecond=True)
    doc_id = form.new(to_datetime(t), type=doc_type)
    assert ms_form.parse(doc_id[len(ms_form.type_prefix(doc_type)) :]) < to_ms("1978-01-12")
    keys = window_keys(ms_form, doc_type, min(start, end), max(start, end) + 1)
    assert keys is None or not contains(keys, doc_id)


@settings(max_examples=300)
@given(
    st.sampled_from(SECOND_FORMS),
    types,
    st.integers(0, MAX_MS),
    st.integers(0, MAX_MS),
    st.integers(0, MAX_MS),
)
@example(KUUID, "user", 1_700_000_000_000, 0, MAX_MS)
def test_no_window_of_the_millisecond_mode_takes_a_second_mode_id(
    form: IdForm, doc_type: str | None, t: int, start: int, end: int
) -> None:
    """What expire deletes (in_window) is what the key range holds: an id of a second mode,
    which reads as a millisecond time before 1978, is no id of a millisecond window from 1970
    (say, a server answering rows from the start of the index)."""
    ms_form = replace(form, millisecond=True)
    doc_id = form.new(to_datetime(t), type=doc_type)
    assert not in_window(ms_form, doc_type, min(start, end), max(start, end) + 1)(doc_id)


@settings(max_examples=300)
@given(windows_and_times())
@example((KUUID_MS, "user", 0, MAX_MS + 1, 315_532_799_999))
@example((KUUID_MS_REVERSE, None, 0, 315_532_800_001, 315_532_799_999))
@example((KUUID_MS_REVERSE, None, 0, 315_532_800_001, 315_532_800_000))
def test_in_window_takes_exactly_the_ids_of_the_key_range(
    case: tuple[IdForm, str | None, int, int, int],
) -> None:
    form, doc_type, start, end, t = case
    keys = window_keys(form, doc_type, start, end)
    inside = in_window(form, doc_type, start, end)
    for doc_id in extreme_ids(form, t, doc_type):
        assert inside(doc_id) == (keys is not None and contains(keys, doc_id)), doc_id
