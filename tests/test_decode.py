"""Reading ids back (couchids/idforms/decode.py): round trips in every form, and every kind of
bad id."""

from __future__ import annotations

import base64
import dataclasses
import importlib
import random
import secrets
import string
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import couchids
from couchids import IdForm, InvalidIdError, InvalidTypeError, decode
from couchids.idforms.couchid import UtcIdForm, utc_text
from couchids.idforms.decode import PLAUSIBLE_FROM, PLAUSIBLE_UNTIL
from couchids.idforms.doctypes import scope_prefix
from couchids.idforms.forms import ALL_FORMS, KUUID_FORMS, NAMED_FORMS
from couchids.idforms.idform import NOT_READ
from couchids.idforms.times import EPOCH, MAX_MS, to_datetime

LAST_MS_PREFIX = 62**8 - 1
Y2000 = 946684800000
Y2100 = 4102444800000


def top_ms(form: IdForm) -> int:
    """The latest time an id of ``form`` can be made for."""
    return LAST_MS_PREFIX if form.kind == "kuuid" and form.millisecond else MAX_MS


def at_precision(ms: int, form: IdForm) -> datetime:
    return to_datetime(ms - ms % (1 if form.millisecond else 1000))


EDGE_TIMES = [0, 999, 1000, 62**5 * 1000, 62**6, 62**7, Y2000 - 1, Y2000, Y2100 - 1, Y2100]


@st.composite
def forms_and_times(draw: st.DrawFn) -> tuple[IdForm, int, str | None]:
    form = draw(st.sampled_from(KUUID_FORMS))
    ms = draw(
        st.one_of(
            st.integers(min_value=0, max_value=top_ms(form)),
            st.integers(min_value=Y2000, max_value=Y2100 - 1),
            st.sampled_from(EDGE_TIMES),
        )
    )
    doc_type = draw(st.sampled_from([None, "user", "a-b_c", "x" * 64]))
    return form, ms, doc_type


@given(forms_and_times())
def test_decode_of_make_gives_the_time_at_the_ids_precision(
    case: tuple[IdForm, int, str | None],
) -> None:
    form, ms, doc_type = case
    doc_id = form.new(to_datetime(ms), type=doc_type)
    expected = at_precision(ms, form)

    if form.kind == "kuuid" or Y2000 <= ms < Y2100:
        flagged = decode(doc_id, reverse=form.reverse, millisecond=form.millisecond)
    else:
        # Outside 2000-2100 a UUIDv7 may also read as another form inside it (a v7s of 2100
        # as a utc_random of 2003): the form settles it.
        flagged = decode(doc_id, form=form)
    assert (flagged.form, flagged.timestamp, flagged.type, flagged.id) == (
        form,
        expected,
        doc_type,
        doc_id,
    )
    assert flagged.timestamp.tzinfo is UTC
    assert (flagged.reverse, flagged.millisecond) == (form.reverse, form.millisecond)

    if Y2000 <= ms < Y2100:
        # Inside 2000-2100 every form is inferred.
        plain = decode(doc_id)
        assert (plain.form, plain.timestamp, plain.type) == (form, expected, doc_type)
    else:
        # Outside 2000-2100 no time is plausible, so without flags or form= its own reading is
        # never taken (even a dashed UUIDv7's): the reading in 2000-2100 of another form, or
        # an error asking for the flags or the form.
        try:
            plain = decode(doc_id)
        except InvalidIdError as exc:
            assert "pass reverse= and millisecond=" in str(exc) or "pass form=" in str(exc)
        else:
            assert plain.timestamp is not None and plain.form != form
            assert datetime(2000, 1, 1, tzinfo=UTC) <= plain.timestamp < to_datetime(Y2100)


@pytest.mark.parametrize("form", KUUID_FORMS, ids=str)
def test_every_form_decodes_now_without_flags(form: IdForm) -> None:
    made = [form.new() for _ in range(20)]
    for doc_id in made:
        assert decode(doc_id).form == form


def test_docstring_example_and_kuuid_published_id() -> None:
    decoded = decode("user:001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn")
    assert decoded.type == "user"
    assert decoded.timestamp == datetime(2018, 1, 1, tzinfo=UTC)
    assert decoded.form == couchids.KUUID


WRONG_LENGTH = [
    "",
    "a",
    "001eVnWK",
    "001eVnWK4gfFC",
    "001eVnWK4gfFC30",
    "0" * 33,
    "0" * 35,
    "0" * 37,
]


@pytest.mark.parametrize("doc_id", WRONG_LENGTH)
def test_wrong_lengths(doc_id: str) -> None:
    with pytest.raises(InvalidIdError) as info:
        decode(doc_id)
    message = str(info.value)
    assert f"this one has {len(doc_id)}" in message
    assert "14, 20, 26 or 32 characters" in message and "v7 id 36" in message


GOOD_KUUID = "001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn"


@pytest.mark.parametrize(
    "doc_id",
    [
        "001eVnW!" + GOOD_KUUID[8:],
        "001eVn-K" + GOOD_KUUID[8:],
        "001eVn K" + GOOD_KUUID[8:],
        GOOD_KUUID[:31] + "_",
        GOOD_KUUID[:20] + "é" + GOOD_KUUID[21:],
    ],
)
def test_bad_characters(doc_id: str) -> None:
    with pytest.raises(InvalidIdError, match=r"8 base62 characters \(0-9, A-Z, a-z\)"):
        decode(doc_id)


@pytest.mark.parametrize("position", range(4))
@pytest.mark.parametrize("block", ["4gfFC4", "4gfFD0", "4gfG00", "4h0000", "4zzzzz"])
def test_blocks_above_2_to_the_32_are_refused(position: int, block: str) -> None:
    start = 8 + 6 * position
    doc_id = GOOD_KUUID[:start] + block + GOOD_KUUID[start + 6 :]
    with pytest.raises(InvalidIdError, match=f"random block '{block}' is above 4gfFC3"):
        decode(doc_id)


@pytest.mark.parametrize("lead", ["5", "9", "A", "z"])
def test_blocks_with_a_lead_above_4_are_refused(lead: str) -> None:
    doc_id = GOOD_KUUID[:14] + lead + GOOD_KUUID[15:]
    with pytest.raises(InvalidIdError, match=f"random block '{lead}.{{5}}' is above 4gfFC3"):
        decode(doc_id)


def test_largest_block_is_accepted() -> None:
    doc_id = GOOD_KUUID[:8] + "4gfFC3" * 4
    assert decode(doc_id).timestamp == datetime(2018, 1, 1, tzinfo=UTC)


GOOD_V7S = "018cc251f4007abc8def0123456789ab"
GOOD_V7 = "018cc251-f400-7abc-8def-0123456789ab"


def test_hand_made_uuid7_decode() -> None:
    assert decode(GOOD_V7S).form == couchids.V7S
    assert decode(GOOD_V7).form == couchids.V7
    assert decode(GOOD_V7).timestamp == datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "doc_id",
    [
        GOOD_V7[:14] + "4" + GOOD_V7[15:],  # version 4
        GOOD_V7[:14] + "8" + GOOD_V7[15:],
        GOOD_V7[:19] + "c" + GOOD_V7[20:],  # variant 110
        GOOD_V7[:19] + "7" + GOOD_V7[20:],  # variant 0
        GOOD_V7.upper(),
        GOOD_V7[:9] + "F400" + GOOD_V7[13:],
        GOOD_V7.replace("-", "_"),
        GOOD_V7[:8] + GOOD_V7[9:] + "0",  # hyphen moved
        "{" + GOOD_V7[1:-1] + "}",
    ],
)
def test_malformed_v7(doc_id: str) -> None:
    with pytest.raises(InvalidIdError, match="version 7 and the RFC 9562 variant"):
        decode(doc_id)


@pytest.mark.parametrize(
    "doc_id",
    [
        GOOD_V7S[:12] + "4" + GOOD_V7S[13:],
        GOOD_V7S[:16] + "c" + GOOD_V7S[17:],
        GOOD_V7S[:16] + "0" + GOOD_V7S[17:],
        GOOD_V7S.upper(),
        GOOD_V7S[:20] + "G" + GOOD_V7S[21:],
    ],
)
def test_malformed_v7s_names_both_readings(doc_id: str) -> None:
    with pytest.raises(InvalidIdError) as info:
        decode(doc_id)
    message = str(info.value)
    # 32 characters could have been meant as either: the message says why neither fits.
    assert "is not a v7s id: 32 lowercase hex digits" in message
    assert "is not a kuuid id" in message


def test_uuid7_past_9999_is_refused() -> None:
    doc_id = "ffffffffffff7abc8def0123456789ab"
    with pytest.raises(InvalidIdError, match="time after 9999-12-31"):
        decode(doc_id)


@pytest.mark.parametrize("doc_type", ["_x", "", "a b", "é", "x" * 65])
def test_bad_type_part(doc_type: str) -> None:
    doc_id = f"{doc_type}:{GOOD_KUUID}"
    with pytest.raises(InvalidIdError) as info:
        decode(doc_id)
    message = str(info.value)
    assert repr(doc_id) in message and "is not a valid document type" in message


def test_a_composite_prefix_is_the_type() -> None:
    # 'partition:type' prefixes (CouchDB's partition guide) are read whole.
    decoded = decode("a:b:" + GOOD_KUUID)
    assert (decoded.type, decoded.form) == ("a:b", couchids.KUUID)


@pytest.mark.parametrize("value", [None, 5, b"001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn", ["x"]])
def test_non_strings(value: Any) -> None:
    with pytest.raises(InvalidIdError, match="ids are strings"):
        decode(value)


OUTSIDE = [
    ("1970-01-01T00:00:00Z", couchids.KUUID),
    ("1999-12-31T23:59:59Z", couchids.KUUID),
    ("2150-06-01T00:00:00Z", couchids.KUUID),
    ("2150-06-01T00:00:00Z", couchids.SHORT_REVERSE),
    ("1980-01-01T00:00:00.123Z", couchids.KUUID_MS),
    ("2300-01-01T00:00:00.123Z", couchids.KUUID_MS_REVERSE),
]


@pytest.mark.parametrize(("timestamp", "form"), OUTSIDE, ids=repr)
def test_ids_outside_2000_2100_need_flags(timestamp: str, form: IdForm) -> None:
    doc_id = form.new(timestamp)
    with pytest.raises(InvalidIdError, match="pass reverse= and millisecond="):
        decode(doc_id)
    decoded = decode(doc_id, reverse=form.reverse, millisecond=form.millisecond)
    assert decoded.form == form
    assert decoded.timestamp == datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def test_a_second_prefix_past_9999_is_refused_with_flags() -> None:
    doc_id = "zzzzzzzz" + GOOD_KUUID[8:]
    # Its readings: 8888 (ms), 1970 (reverse), 1970 (reverse ms) and past 9999 (seconds).
    with pytest.raises(InvalidIdError, match="no reading of this id has a time between 2000"):
        decode(doc_id)
    with pytest.raises(InvalidIdError, match="time after 9999-12-31"):
        decode(doc_id, reverse=False, millisecond=False)


def test_flags_that_fit_no_reading() -> None:
    doc_id = couchids.id("2018-01-01")
    # Read as a millisecond id it is 1970: possible with flags, it is what was asked for.
    decoded = decode(doc_id, reverse=False, millisecond=True)
    assert decoded.timestamp.year == 1970
    with pytest.raises(InvalidIdError, match="pass reverse= and millisecond="):
        decode(doc_id, millisecond=True)


@given(
    st.integers(min_value=Y2000, max_value=Y2100 - 1),
    st.sampled_from([f for f in KUUID_FORMS if f.kind == "kuuid"]),
)
def test_kuuid_modes_never_overlap_inside_2000_2100(ms: int, form: IdForm) -> None:
    # The four readings of one prefix fall in disjoint year ranges, so a flagless decode of an
    # id made in 2000-2100 always finds exactly its own mode.
    doc_id = form.new(to_datetime(ms))
    assert decode(doc_id).form == form


def v7s_that_reads_as_kuuid(ms: int) -> str:
    """A valid v7s id whose characters 8, 14, 20 and 26 are 0-4, so it is a kuuid id too."""
    text = f"{ms:012x}7" + "1" + "23" + "9" + "000" + "2" + "abcde" + "3" + "00000"
    assert len(text) == 32
    return text


@pytest.mark.parametrize("when", ["2099-01-01T00:00:00.000Z", "2024-01-01T00:00:00.000Z"])
def test_v7s_that_also_passes_as_kuuid_reads_as_v7s(when: str) -> None:
    ms = couchids.idforms.times.to_ms(when)
    ms -= ms % 2**16  # character 8 (bits 12-15 of the time) becomes 0
    doc_id = v7s_that_reads_as_kuuid(ms)
    # It fits the kuuid pattern, but a UUIDv7 is what it is: every 4-block kuuid form refuses
    # it (so a kuuid query never returns it) ...
    for form in KUUID_FORMS:
        if form.kind == "kuuid" and form.length == 32:
            with pytest.raises(InvalidIdError, match="is a v7s id"):
                form.parse(doc_id)
    assert couchids.V7S.parse(doc_id) == ms
    # ... and decode reads it as one, with or without the flags that fit both.
    for flags in ({}, {"reverse": False, "millisecond": True}):
        decoded = decode(doc_id, **flags)
        assert decoded.form == couchids.V7S
        assert decoded.timestamp == to_datetime(ms)


# -- forms without a time: read only when form= names them ------------------------------------


@pytest.mark.parametrize(
    ("doc_id", "form", "doc_type"),
    [
        ("abcdefg", couchids.SEQ36, None),
        ("user:hello12", couchids.SEQ36, "user"),
        ("5551234567", couchids.SEQ10, None),
        ("order-0000000042", couchids.SEQ10.with_separator("-"), "order"),
        ("4e17c12963f4bee0e6ec90da54804894", couchids.COUCH_RANDOM, None),
    ],
)
def test_forms_without_a_time_are_read_only_when_named(
    doc_id: str, form: IdForm, doc_type: str | None
) -> None:
    with pytest.raises(InvalidIdError) as info:
        decode(doc_id)
    message = str(info.value)
    assert message.startswith(f"{doc_id!r} holds no time: it reads only as a {form.kind} id")
    assert f"--form {form.kind}" in message and f"couchids.{form.kind.upper()}" in message
    decoded = decode(doc_id, form=form)
    assert (decoded.form, decoded.type, decoded.timestamp) == (form, doc_type, None)
    # An id without a time has no precision to report.
    assert decoded.millisecond is None


def test_a_uuid464_without_a_time_is_read_only_when_named() -> None:
    # uuid464 is a form with a time (a UUIDv7 inside); a version 4 UUID in it holds none, and
    # so does any 16 random bytes in base64url: such a reading is never guessed.
    # A fixed version 4 UUID (01234567-89ab-4def-8123-456789abcdef): 0.2% of random ones also
    # read, by chance, as another form's id with a time outside 2000-2100.
    doc_id = "ASNFZ4mrTe-BI0VniavN7w"
    with pytest.raises(InvalidIdError) as info:
        decode(doc_id)
    message = str(info.value)
    assert message.startswith(f"{doc_id!r} holds no time: it reads only as a uuid464 id")
    assert "form=couchids.UUID464" in message and "--form uuid464" in message
    decoded = decode(doc_id, form=couchids.UUID464)
    assert (decoded.form, decoded.timestamp, decoded.millisecond) == (couchids.UUID464, None, None)
    # A UUIDv7 inside is read without form= when its time is plausible, and refused when not.
    assert decode("AYzCUfQAcACAAAAAAAAAAA").timestamp == datetime(2024, 1, 1, tzinfo=UTC)
    early = base64.urlsafe_b64encode(uuid.UUID(couchids.V7.new("1990-01-01")).bytes)
    with pytest.raises(InvalidIdError, match="no reading of this id has a time between 2000"):
        decode(early[:22].decode())
    assert decode(early[:22].decode(), form=couchids.UUID464).timestamp.year == 1990


#: Random tokens of each length a form with a time has, in each alphabet ids are written in.
TOKEN_ALPHABETS = {
    "base62": string.digits + string.ascii_uppercase + string.ascii_lowercase,
    "base64url": string.ascii_letters + string.digits + "-_",
    "hex": string.hexdigits[:16],
    "base36": string.digits + string.ascii_lowercase,
    "crockford": "0123456789ABCDEFGHJKMNPQRSTVWXYZ",
}


def test_random_tokens_are_never_guessed_as_a_form_without_a_time() -> None:
    # secrets.token_urlsafe(16) is 22 characters of base64url, ending in A, Q, g or w: a
    # uuid464 id, without a time. Without form=, only a plausible time is ever a reading.
    rng = random.Random(20240101)
    lengths = sorted({form.length for form in ALL_FORMS if form.has_time} | {10, 7})
    decoded = refused = 0
    for name, alphabet in TOKEN_ALPHABETS.items():
        for length in lengths:
            for _ in range(400):
                token = "".join(rng.choice(alphabet) for _ in range(length))
                if name == "base64url" and length == 22:
                    token = token[:21] + rng.choice("AQgw")  # as token_urlsafe(16) ends
                for doc_id in (token, "user:" + token):
                    try:
                        found = decode(doc_id)
                    except InvalidIdError:
                        refused += 1
                        continue
                    decoded += 1
                    assert found.timestamp is not None, (doc_id, found)
                    assert found.form.has_time
                    assert PLAUSIBLE_FROM <= found.timestamp < PLAUSIBLE_UNTIL, (doc_id, found)
    assert refused > decoded > 0
    for _ in range(2000):
        token = secrets.token_urlsafe(16)
        try:
            found = decode(token)
        except InvalidIdError:
            continue
        assert found.timestamp is not None and PLAUSIBLE_FROM <= found.timestamp < PLAUSIBLE_UNTIL


@pytest.mark.parametrize("doc_type", ["user", "order", "a"])
def test_a_short_body_after_any_type_gets_the_same_message(doc_type: str) -> None:
    # 'user:admin' is 10 characters, as a seq10 id is: the message is still about 'admin'.
    with pytest.raises(InvalidIdError) as info:
        decode(f"{doc_type}:admin")
    message = str(info.value).replace(repr(f"{doc_type}:admin"), "ID")
    assert message == (
        "ID is not an id couchids reads: after an optional 'type:', a kuuid id has 14, 20, 26 "
        "or 32 characters, a v7 id 36, and v7s 32, tid62 17, base36_v7 25, base36_v7_unpadded "
        "24, utc_random 32, ulid 26, uuid464 22; this one has 5; the closest: kuuid (14 "
        "characters). Forms without a time (seq10 10, seq36 7, couch_random 32) are read only "
        "with form="
    )


def test_ids_with_a_time_report_their_precision() -> None:
    assert decode(GOOD_KUUID).millisecond is False
    assert decode(GOOD_V7S).millisecond is True


# -- the readings decode makes without raising agree with the forms' own --------------------

#: Every form: those decode infers, those only form= names, and a utc_id form.
EVERY_FORM: list[IdForm] = list(
    dict.fromkeys([*ALL_FORMS, *NAMED_FORMS.values(), UtcIdForm("-n1")])
)
#: Characters of every form's alphabet, and a few of none.
CHARACTERS = string.ascii_letters + string.digits + "-_:!é "


def made(form: IdForm) -> str:
    """A body of ``form``: made now, or for the forms that make none, written out."""
    if form.kind == "base36_v7_unpadded":
        return couchids.BASE36_V7.new()[1:]  # its padding is one 0 from 1986 to 2556
    if form.kind in ("seq10", "seq36"):
        return "0" * (form.length - 2) + "42"
    return form.new()


@st.composite
def forms_and_bodies(draw: st.DrawFn) -> tuple[IdForm, str]:
    form = draw(st.sampled_from(EVERY_FORM))
    source = draw(st.sampled_from(EVERY_FORM))  # another form's id, often of another length
    body = made(draw(st.sampled_from([form, source])))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):  # a few characters changed
        at = draw(st.integers(min_value=0, max_value=max(len(body) - 1, 0)))
        body = body[:at] + draw(st.sampled_from(CHARACTERS)) + body[at + 1 :]
    if draw(st.booleans()):
        body = draw(st.sampled_from([body.upper(), body.lower(), body[1:], body + "0"]))
    return form, body


@given(forms_and_bodies())
def test_try_read_and_refusal_agree_with_read(case: tuple[IdForm, str]) -> None:
    form, body = case
    try:
        expected = form.read(body)
    except InvalidIdError as exc:
        assert form.try_read(body) is NOT_READ
        assert form.refusal(body) == str(exc)
    else:
        assert form.try_read(body) == expected


@pytest.mark.parametrize("form", [f for f in KUUID_FORMS if f.kind == "kuuid"], ids=str)
def test_each_kuuid_mode_is_read_up_to_the_edges_of_2000_2100(form: IdForm) -> None:
    # decode finds the one mode whose time lies in 2000-2100 from the prefix number alone:
    # the first and the last time of those years that a mode writes are its own, and the
    # times just outside are not taken as it.
    unit = 1 if form.millisecond else 1000
    for ms in (Y2000, Y2100 - unit):
        decoded = decode(form.new(to_datetime(ms)))
        assert (decoded.form, decoded.timestamp) == (form, to_datetime(ms))
    for ms in (Y2000 - unit, Y2100):
        try:
            decoded = decode(form.new(to_datetime(ms)))
        except InvalidIdError:
            continue
        assert decoded.form != form


def test_the_fast_decoded_id_is_the_dataclass() -> None:
    decode_module = importlib.import_module("couchids.idforms.decode")
    when = datetime(2024, 1, 1, tzinfo=UTC)
    fast = decode_module._decoded("user:x", "user", when, couchids.TID62)
    made_by_init = couchids.DecodedId("user:x", "user", when, couchids.TID62)
    assert fast == made_by_init and hash(fast) == hash(made_by_init)
    assert vars(fast) == vars(made_by_init) and repr(fast) == repr(made_by_init)
    assert [f.name for f in dataclasses.fields(couchids.DecodedId)] == list(vars(fast))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.type = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("doc_id", "flags"),
    [
        (GOOD_KUUID, {}),
        ("user:" + GOOD_KUUID, {"reverse": False}),
        ("user-" + GOOD_V7S, {}),
        ("acct_" + GOOD_V7, {"millisecond": True}),
        ("a:b:" + GOOD_KUUID[:20], {}),
    ],
)
def test_decode_is_the_same_on_every_call(doc_id: str, flags: dict[str, bool]) -> None:
    # The tables decode makes at its first call are kept: later calls give the same answer.
    first = decode(doc_id, **flags)  # type: ignore[arg-type]
    assert all(decode(doc_id, **flags) == first for _ in range(3))  # type: ignore[arg-type]


@given(st.text(alphabet=string.ascii_letters + string.digits + "_-:é !", max_size=70))
def test_prefixes_are_checked_as_the_type_rule_says(head: str) -> None:
    # decode tests a prefix with a pattern (no exception built); scope_prefix is the rule.
    decode_module = importlib.import_module("couchids.idforms.decode")
    try:
        scope_prefix(head, ":")
    except InvalidTypeError:
        valid = False
    else:
        valid = True
    assert decode_module._is_scope(head) == valid


@given(st.integers(min_value=0, max_value=16**14 - 1))
def test_the_time_a_utc_random_refusal_quotes_is_str_of_the_datetime(us: int) -> None:
    assert utc_text(us) == str(EPOCH + timedelta(microseconds=us))


# -- decode's shortcuts give what reading every split as every form gives ---------------------

DECODE = importlib.import_module("couchids.idforms.decode")
ALL_FLAGS = [(r, m) for r in (None, False, True) for m in (None, False, True)]
TIMED_FORMS = [form for form in ALL_FORMS if form.has_time]
FORM_ALPHABETS = [
    "0123456789abcdef",
    string.digits + string.ascii_letters,
    "0123456789ABCDEFGHJKMNPQRSTVWXYZ",
    string.digits + string.ascii_lowercase,
    string.ascii_letters + string.digits + "-_",
]


def made_for(form: IdForm, when: datetime) -> str:
    """An id of ``form`` for ``when`` (``made``, at a time)."""
    if form.kind == "base36_v7_unpadded":
        return couchids.BASE36_V7.new(when)[1:]
    if form.kind == "uuid464":  # made only as a random UUID
        return form.new()
    return form.new(when)


def is_valid_scope(head: str) -> bool:
    try:
        scope_prefix(head, ":")
    except InvalidTypeError:
        return False
    return True


def splits_by_length(doc_id: str, table: Any) -> list[tuple[Any, str, str, str]]:
    """The splits decode tries, as it found them by trying each length of ``table`` in turn,
    and without those whose body holds a colon."""
    splits = []
    for length in table.lengths:
        cut = len(doc_id) - length
        if cut < 2:
            break
        head, sep, body = doc_id[: cut - 1], doc_id[cut - 1], doc_id[cut:]
        if sep in ":-_" and ":" not in body and is_valid_scope(head):
            splits.append((table.by_length[length], body, head, sep))
    return splits


@st.composite
def ids_with_separators(draw: st.DrawFn) -> str:
    head = draw(st.text(alphabet="ab0_-:", max_size=8))
    sep = draw(st.sampled_from(":-_"))
    form = draw(st.sampled_from(TIMED_FORMS))
    size = form.length + draw(st.sampled_from([0, 0, 0, -1, 1, -5]))
    body = draw(st.text(alphabet=draw(st.sampled_from(FORM_ALPHABETS)) + ":", max_size=size))
    return head + sep + body.rjust(size, "0")


@given(
    st.one_of(
        ids_with_separators(),
        st.text(alphabet="a0Z:-_", max_size=45),
        st.builds(
            lambda t, i: f"{t}:{i}",
            st.sampled_from(["order", "p:user", "_x", ""]),
            st.just(GOOD_KUUID),
        ),
    ),
    st.sampled_from(ALL_FLAGS),
)
def test_decode_splits_at_every_separator_a_body_may_follow(
    doc_id: str, flags: tuple[bool | None, bool | None]
) -> None:
    # decode looks for a body after the last colon before it tries each length of its table.
    table = DECODE._table(*flags)
    assert DECODE._prefixed(doc_id, table) == splits_by_length(doc_id, table)


@given(st.sampled_from(TIMED_FORMS), st.data())
def test_no_form_reads_a_body_holding_a_colon(form: IdForm, data: st.DataObject) -> None:
    # Why decode need not try a body after a separator that has a colon after it.
    # 2020-2099: inside every form's runway.
    days = data.draw(st.integers(0, 365 * 79))
    body = made_for(form, datetime(2020, 1, 1, tzinfo=UTC) + timedelta(days=days))
    at = data.draw(st.integers(0, form.length - 1))
    assert form.try_read(body[:at] + ":" + body[at + 1 :]) is NOT_READ


@st.composite
def bodies(draw: st.DrawFn) -> str:
    """Ids of every form with a time, some with their end overwritten by digits that nearly
    every form reads (so that several forms read them), and strings of their alphabets."""
    form = draw(st.sampled_from(TIMED_FORMS))
    if draw(st.booleans()):
        text = draw(st.text(alphabet=draw(st.sampled_from(FORM_ALPHABETS)), max_size=form.length))
        return text.rjust(form.length, "0")
    ms = draw(st.integers(min_value=Y2000 - 10**12, max_value=Y2100 + 10**12))
    try:
        body = made_for(form, to_datetime(ms))
    except couchids.InvalidTimeError:  # outside the form's runway
        body = made_for(form, datetime(2024, 1, 1, tzinfo=UTC))
    kept = draw(st.integers(0, form.length))
    tail = draw(st.text(alphabet="01234", min_size=form.length - kept, max_size=form.length - kept))
    return body[:kept] + tail


@given(bodies(), st.sampled_from(ALL_FLAGS), st.sampled_from(":-_"))
# A ULID of 2004 that the 3-block kuuid modes read too, as times far from it.
@example("01" + "0" * 24, (None, None), ":")
def test_the_readings_in_2000_2100_are_those_of_every_reading(
    body: str, flags: tuple[bool | None, bool | None], sep: str
) -> None:
    # decode's first look (kuuid modes by one bisection, the hex forms skipped when a kuuid
    # mode read the body) finds what reading the body as every form finds, in those years.
    forms = DECODE._table(*flags).by_length.get(len(body))
    if forms is None:
        return
    found: list[Any] = []
    read = DECODE._read_in_window(forms, body, "t", sep, found)
    readings: list[Any] = []
    DECODE._read(forms, body, "t", sep, readings, [], refused=False)
    in_window = [r for r in readings if r[2] is not None and Y2000 * 1000 <= r[2] < Y2100 * 1000]
    assert read or not readings  # decode reads again only what may be read
    assert sorted(found, key=str) == sorted(in_window, key=str)


@given(st.sampled_from(ALL_FLAGS), st.data())
def test_a_kuuid_modes_time_is_a_line_in_its_range(
    flags: tuple[bool | None, bool | None], data: st.DataObject
) -> None:
    # decode computes a kuuid mode's time from the prefix number without calling the mode.
    table = DECODE._table(*flags)
    ranges = [
        (start, window)
        for forms in table.by_length.values()
        if forms.modes is not None
        for start, window in zip(forms.modes.starts, forms.modes.ranges, strict=True)
    ]
    if not ranges:
        return
    start, window = data.draw(st.sampled_from(ranges))
    number = data.draw(st.integers(start, window.end - 1))
    mode = window.by_separator[":"]
    assert window.offset + window.slope * number == mode.time_of_prefix(number)
    assert (start, window.end) == DECODE._in_window(mode)


def test_decode_keeps_a_bounded_number_of_prefixes() -> None:
    # Prefixes are checked once and their answers kept, but never more than _KEPT_SCOPES
    # of them, nor any longer than a type.
    for number in range(DECODE._KEPT_SCOPES * 3):
        assert DECODE._is_scope(f"type{number}")
        assert len(DECODE._SCOPES) <= DECODE._KEPT_SCOPES
    long_head = "a" * 40 + ":" + "b" * 40
    assert DECODE._is_scope(long_head) and long_head not in DECODE._SCOPES
    assert not DECODE._is_scope("_x") and not DECODE._is_scope("_x")
    assert decode("order:" + GOOD_KUUID).type == "order"
