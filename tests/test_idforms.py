"""The id forms beyond kuuid's (couchids/idforms/tid62.py, base36.py, ulid.py, couchid.py,
uuid464.py, seq.py): known answers from their specifications, round trips, order, and
near-misses."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from couchids import (
    BASE36_V7,
    SEQ10,
    SEQ36,
    TID62,
    ULID,
    UTC_RANDOM,
    UUID464,
    V7,
    V7S,
    IdForm,
    InvalidArgumentError,
    InvalidIdError,
    InvalidTimeError,
    decode,
)
from couchids.core.keys import window_keys
from couchids.idforms import radix
from couchids.idforms.base36 import BASE36_V7_UNPADDED, uuid_text
from couchids.idforms.constants import ALPHABET, BASE36_ALPHABET, ULID_ALPHABET
from couchids.idforms.couchid import COUCH_RANDOM, UtcIdForm
from couchids.idforms.forms import NAMED_FORMS, form_named
from couchids.idforms.tid62 import tid62_text
from couchids.idforms.times import EPOCH, MAX_MS, to_datetime, to_ms
from couchids.idforms.ulid import ulid_text
from couchids.idforms.v7 import uuid7_from

Y2000, Y2100 = to_ms("2000-01-01"), to_ms("2100-01-01")
UTC_LAST = (16**14 - 1) // 1000  # 14 hex digits of microseconds: 4253-05-31
TID62_FIRST, TID62_LAST = to_ms("2020-01-01"), (1_577_836_800 + 2**32) * 1000 - 1

#: Every form with a sortable time, and the latest time each can hold.
TIME_FORMS: list[tuple[IdForm, int]] = [
    (TID62, TID62_LAST),
    (BASE36_V7, MAX_MS),
    (UTC_RANDOM, Y2100 - 1),
    (UtcIdForm("-n1"), UTC_LAST),
    (ULID, MAX_MS),
    (V7, MAX_MS),
    (V7S, MAX_MS),
]
FIRST = {TID62: TID62_FIRST, UTC_RANDOM: Y2000}


def first_ms(form: IdForm) -> int:
    return FIRST.get(form, 0)


def at_precision(ms: int, form: IdForm) -> int:
    return ms - ms % form.unit_ms


# -- known answers ---------------------------------------------------------------------------


def test_tid62_layout() -> None:
    # The specification's layout: seconds since 2020-01-01 in the top 4 of 12 bytes, 8 random
    # bytes below, base62 in 17 characters. 2025-12-30T12:00:00Z is 189,259,200 seconds after
    # the epoch. (The specification's example says 189,388,800 for that time, which is
    # 2026-01-01, and its example id "0B4kZ7mNpQrStUvWx" decodes to 2034: both illustrate the
    # shape, not a computed value.)
    assert TID62.key(to_ms("2025-12-30T12:00:00Z") // 1000) == "04XVaYIDfO3SmYAds"
    assert TID62.parse("04XVaYIDfO3SmYAds") == to_ms("2025-12-30T12:00:00Z")
    # Random bytes 01 23 45 67 89 ab cd ef after the same seconds.
    assert TID62.parse("04XVaYIJisigHzUpr") == to_ms("2025-12-30T12:00:00Z")
    assert TID62.parse("0" * 17) == TID62_FIRST
    # 2**96 - 1: the last second of the runway with every random bit set.
    assert TID62.parse("1f2SI9UJPXvb7vdJ1") == TID62_LAST - 999
    assert TID62.new("2025-12-30T12:00:00Z").startswith("04XVaY")


def test_tid62_runway() -> None:
    for outside in ("2019-12-31T23:59:59Z", TID62_LAST + 1):
        with pytest.raises(InvalidTimeError, match="outside the tid62 runway"):
            TID62.new(outside)
    with pytest.raises(InvalidIdError, match="above 1f2SI9UJPXvb7vdJ1"):
        TID62.parse("1f2SI9UJPXvb7vdJ2")


KNOWN_UUID7 = uuid.UUID("018cc251-f400-7000-8000-000000000000")  # 2024-01-01T00:00:00Z


def test_base36_from_known_bits() -> None:
    # The 128-bit number in base36, zero-padded to 25: CouchDB's uuid_v7 base_36 format.
    assert radix.decode("03awvyp9xoayogohoeqqhhlhc", radix_alphabet36()) == KNOWN_UUID7.int
    assert BASE36_V7.parse("03awvyp9xoayogohoeqqhhlhc") == to_ms("2024-01-01")
    assert BASE36_V7.key(to_ms("2024-01-01")) < "03awvyp9xoayogohoeqqhhlhc"
    # The Identifiers article writes it unpadded: 24 characters, read by length.
    assert BASE36_V7_UNPADDED.parse("3awvyp9xoayogohoeqqhhlhc") == to_ms("2024-01-01")
    assert decode("acct_3awvyp9xoayogohoeqqhhlhc").type == "acct"
    with pytest.raises(InvalidArgumentError, match="padded"):
        BASE36_V7_UNPADDED.new()
    # A base36 number that is not a UUIDv7 (version 4) is refused, by parse and row filter.
    not_v7 = radix.encode(KNOWN_UUID7.int & ~(0xF << 76) | (4 << 76), 25, radix_alphabet36())
    with pytest.raises(InvalidIdError, match="not a UUIDv7"):
        BASE36_V7.parse(not_v7)
    assert not BASE36_V7.matcher()(not_v7)
    assert BASE36_V7.matcher()("03awvyp9xoayogohoeqqhhlhc")


def radix_alphabet36() -> str:
    return "0123456789abcdefghijklmnopqrstuvwxyz"


def test_rfc9562_and_base_16_from_known_bits() -> None:
    assert V7.parse(str(KNOWN_UUID7)) == to_ms("2024-01-01")
    assert V7S.parse(KNOWN_UUID7.hex) == to_ms("2024-01-01")


def test_ulid_against_the_reference_implementation() -> None:
    # ulid/javascript test.js: encodeTime(1469918176385, 10) == "01ARYZ6S41"; and
    # test/node/uuid.spec.ts: ULID <-> UUID pairs (the same 128 bits).
    assert ULID.key(1469918176385) == "01ARYZ6S41"
    assert ULID.parse("01ARYZ6S41TSV4RRFFQ69G5FAV") == 1469918176385
    assert ULID.new(1469918176385).startswith("01ARYZ6S41")
    pairs = [
        ("01ARYZ6S41TSV4RRFFQ69G5FAV", "01563DF3-6481-D676-4C61-EFB99302BD5B"),
        ("01JQ4T23H220KM7X0B3V1109DQ", "0195C9A1-0E22-1027-43F4-0B1EC21025B7"),
        ("01JQ4T8BHJR0A5YKX7SVTVX0YN", "0195C9A4-2E32-C014-5F4F-A7CEF5BE83D5"),
        ("01JQ4T8X6CA54VSH0AANN0SWCX", "0195C9A4-74CC-5149-BCC4-0A556A0CF19D"),
    ]
    for text, as_uuid in pairs:
        assert radix.decode(text, ULID_ALPHABET) == uuid.UUID(as_uuid).int
        assert ULID.parse(text) == uuid.UUID(as_uuid).int >> 80
    assert ULID.key(2**48 - 1) == "7ZZZZZZZZZ"


def test_couchdb_utc_forms() -> None:
    us = to_ms("2024-01-01") * 1000 + 1  # one microsecond after midnight
    body = f"{us:014x}" + "0123456789abcdef01"
    assert UTC_RANDOM.read(body) == us
    decoded = decode(body)
    assert decoded.form == UTC_RANDOM
    assert decoded.timestamp == datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    suffixed = UtcIdForm("-node1")
    assert decode(f"{us:014x}-node1", form=suffixed).timestamp == decoded.timestamp
    with pytest.raises(InvalidIdError, match="the suffix '-node1'"):
        suffixed.parse(f"{us:014x}-node2")
    with pytest.raises(InvalidArgumentError, match="printable ASCII"):
        UtcIdForm("a b")
    # CouchDB's random/sequential ids hold no time: decoding with form= says so.
    assert decode("4e17c12963f4bee0e6ec90da54804894", form=COUCH_RANDOM).timestamp is None


def test_utc_random_runway() -> None:
    # Any 32 hex digits read as a time up to 4253; a utc_random id holds one in 2000-2100.
    for outside in (Y2000 - 1, Y2100):
        with pytest.raises(InvalidTimeError, match="outside the utc_random runway"):
            UTC_RANDOM.new(outside)
    assert UTC_RANDOM.parse(UTC_RANDOM.new(Y2000)) == Y2000
    assert UTC_RANDOM.parse(UTC_RANDOM.new(Y2100 - 1)) == Y2100 - 1
    v7s_of_2024 = KNOWN_UUID7.hex  # reads as a utc_random time in 1983
    for body in ("0" * 32, v7s_of_2024, f"{Y2100 * 1000:014x}" + "0" * 18):
        with pytest.raises(InvalidIdError, match="outside the utc_random runway"):
            UTC_RANDOM.read(body)
    assert decode(v7s_of_2024).form == V7S
    # A window over every time stays inside the runway: its keys end at 2100, not at the end
    # of the type, and begin at 2000, above every v7s id made before 2087.
    keys = window_keys(UTC_RANDOM, "t", 0, MAX_MS)
    assert keys is not None
    assert (keys.low, keys.high) == (f"t:{Y2000 * 1000:014x}", f"t:{Y2100 * 1000:014x}")
    assert "t:" + V7S.new(to_ms("2086-12-31")) < keys.low


def test_uuid464() -> None:
    text = "AYzCUfQAcACAAAAAAAAAAA"  # KNOWN_UUID7 in base64url without padding
    assert UUID464.read(text) == to_ms("2024-01-01") * 1000
    v4 = UUID464.new()
    assert len(v4) == 22 and UUID464.read(v4) is None
    assert uuid.UUID(bytes=__import__("base64").urlsafe_b64decode(v4 + "==")).version == 4
    # A fixed version 4 UUID: 0.2% of random ones also read, by chance, as another form's
    # id with a time outside 2000-2100, which decode reports instead.
    v4 = "ASNFZ4mrTe-BI0VniavN7w"  # 01234567-89ab-4def-8123-456789abcdef
    with pytest.raises(InvalidIdError, match="holds no time"):
        decode(v4)  # a reading without a time is never guessed
    decoded = decode(v4, form=UUID464)
    assert (decoded.form, decoded.timestamp) == (UUID464, None)
    with pytest.raises(InvalidIdError, match="the last one A, Q, g or w"):
        UUID464.parse(text[:-1] + "B")
    with pytest.raises(InvalidArgumentError, match="not in byte order"):
        window_keys(UUID464, None, 0, 1000)


def test_seq_forms() -> None:
    assert (SEQ10.encode(0), SEQ10.encode(SEQ10.max_ordinal)) == ("0" * 10, "9" * 10)
    assert (SEQ36.encode(35), SEQ36.encode(36**7 - 1)) == ("000000z", "z" * 7)
    assert SEQ36.ordinal("0000010") == 36
    for form, bad in ((SEQ10, -1), (SEQ10, 10**10), (SEQ36, 36**7), (SEQ10, True)):
        with pytest.raises(InvalidArgumentError, match="ordinal is an int"):
            form.encode(bad)
    for form, body in ((SEQ10, "12345"), (SEQ10, "123456789a"), (SEQ36, "000000Z")):
        with pytest.raises(InvalidIdError):
            form.read(body)
    decoded = decode("order-0000000042", form=SEQ10.with_separator("-"))
    assert (decoded.type, decoded.timestamp, str(decoded.form)) == ("order", None, "seq10")
    with pytest.raises(InvalidIdError, match="holds no time"):
        decode("order-0000000042")  # a form without a time is read only when named
    with pytest.raises(InvalidArgumentError, match="need a counter"):
        SEQ10.new()
    with pytest.raises(InvalidArgumentError, match="hold no time"):
        window_keys(SEQ36, None, 0, 1000)


def test_presets_are_named() -> None:
    for form in (TID62, BASE36_V7, UTC_RANDOM, ULID, UUID464, SEQ10, SEQ36, V7S):
        assert form_named(str(form)) == form
    assert form_named("utc_id:-x") == UtcIdForm("-x")
    with pytest.raises(InvalidArgumentError, match="known: kuuid"):
        form_named("uuid4")


# -- the fast encoders against plain ones ----------------------------------------------------


def plain_digits(value: int, width: int, alphabet: str) -> str:
    """The reference: one division per character, most significant character first."""
    digits = []
    for _ in range(width):
        value, digit = divmod(value, len(alphabet))
        digits.append(alphabet[digit])
    assert value == 0, "the value needs more characters"
    return "".join(reversed(digits))


#: RFC 4648's base32 alphabet, in the order of Crockford's.
RFC4648_TO_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", ULID_ALPHABET.encode())


def crockford_by_base64(value: int) -> str:
    """A ULID's text from the standard library: 160 bits of RFC 4648 base32, whose first 6
    characters are the 30 zero bits above the 130 that 26 characters hold."""
    rfc = base64.b32encode(value.to_bytes(20, "big"))
    assert rfc[:6] == b"AAAAAA"
    return rfc[6:].translate(RFC4648_TO_CROCKFORD).decode()


def near_powers(base: int, width: int) -> list[int]:
    """Values next to every power of ``base`` up to ``base**width``: where carries cross the
    chunks a fast encoder splits the number into."""
    return sorted(
        {max(0, base**k + d) for k in range(width + 1) for d in (-1, 0, 1)}
        - {base**width, base**width + 1}
    )


@settings(max_examples=2000)
@given(
    st.one_of(st.integers(min_value=0, max_value=36**25 - 1), st.sampled_from(near_powers(36, 25)))
)
def test_base36_text_is_the_plain_base36_of_the_number(value: int) -> None:
    text = uuid_text(value)
    assert text == plain_digits(value, 25, BASE36_ALPHABET)
    assert text == radix.encode(value, 25, BASE36_ALPHABET)
    assert int(text, 36) == value


@settings(max_examples=2000)
@given(st.integers(min_value=0, max_value=2**130 - 1))
def test_ulid_text_is_crockford_base32_of_the_number(value: int) -> None:
    text = ulid_text(value)
    assert text == plain_digits(value, 26, ULID_ALPHABET)
    assert text == crockford_by_base64(value)


@settings(max_examples=2000)
@given(
    st.one_of(st.integers(min_value=0, max_value=62**17 - 1), st.sampled_from(near_powers(62, 17)))
)
def test_tid62_text_is_the_plain_base62_of_the_number(value: int) -> None:
    text = tid62_text(value)
    assert text == plain_digits(value, 17, ALPHABET)
    assert text == radix.encode(value, 17, ALPHABET)


@pytest.mark.parametrize(
    ("encode", "too_big"), [(uuid_text, 36**25), (tid62_text, 62**17)], ids=["base36", "tid62"]
)
def test_fast_encoders_refuse_what_does_not_fit(encode: Callable[[int], str], too_big: int) -> None:
    for value in (-1, too_big):
        with pytest.raises(ValueError, match="does not fit"):
            encode(value)


@settings(max_examples=2000)
@given(st.integers(min_value=0, max_value=MAX_MS), st.integers(min_value=0, max_value=2**80 - 1))
def test_forms_write_their_number_as_the_plain_encoders_do(ms: int, random: int) -> None:
    us = ms * 1000
    v7_bits = random >> 6
    assert BASE36_V7.compose(us, v7_bits) == plain_digits(
        uuid7_from(ms, v7_bits), 25, BASE36_ALPHABET
    )
    assert ULID.compose(us, random) == crockford_by_base64((ms << 80) | random)
    seconds = TID62_FIRST // 1000 + ms % 2**32
    tid62_bits = random >> 16
    assert TID62.compose(seconds * 10**6, tid62_bits) == plain_digits(
        ((seconds - TID62_FIRST // 1000) << 64) | tid62_bits, 17, ALPHABET
    )


# -- properties ------------------------------------------------------------------------------


@st.composite
def form_and_time(draw: st.DrawFn) -> tuple[IdForm, int]:
    form, last = draw(st.sampled_from(TIME_FORMS))
    return form, draw(st.integers(min_value=first_ms(form), max_value=last))


@given(form_and_time(), st.sampled_from([None, "user", "sensor-260:reading"]))
def test_read_of_make_is_the_time_at_precision(
    case: tuple[IdForm, int], doc_type: str | None
) -> None:
    form, ms = case
    doc_id = form.new(to_datetime(ms), type=doc_type)  # an int before 1980 could be seconds
    body = doc_id[len(form.type_prefix(doc_type)) :]
    assert form.parse(body) == at_precision(ms, form)
    decoded = decode(doc_id, form=form)
    assert decoded.type == doc_type
    assert decoded.timestamp == EPOCH + timedelta(milliseconds=at_precision(ms, form))
    assert form.matcher(form.type_prefix(doc_type))(doc_id)


@given(
    st.sampled_from([f for f, _ in TIME_FORMS if not isinstance(f, UtcIdForm)]),
    st.integers(min_value=TID62_FIRST, max_value=Y2100 - 1),
    st.sampled_from([":", "-", "_"]),
)
def test_decode_infers_the_form_inside_2000_2100(form: IdForm, ms: int, sep: str) -> None:
    typed = form.with_separator(sep)
    for doc_id, doc_type in (
        (form.new(to_datetime(ms)), None),
        (typed.new(to_datetime(ms), type="acct"), "acct"),
    ):
        decoded = decode(doc_id)
        assert (decoded.form, decoded.type) == (typed if doc_type else form, doc_type)


@given(form_and_time(), st.integers(min_value=0, max_value=MAX_MS))
def test_ids_sort_like_their_times(case: tuple[IdForm, int], other: int) -> None:
    form, ms = case
    _, last = next(t for t in TIME_FORMS if t[0] == form)
    assume(first_ms(form) <= other <= last)
    a, b = sorted((ms, other))
    assume(a // form.unit_ms != b // form.unit_ms)
    # Byte order (what _all_docs uses), which for ASCII is Python's str order.
    assert form.new(to_datetime(a)).encode() < form.new(to_datetime(b)).encode()


@given(form_and_time(), st.integers(min_value=0, max_value=3))
def test_window_keys_hold_exactly_the_ids_inside(case: tuple[IdForm, int], spread: int) -> None:
    form, ms = case
    start = max(first_ms(form), ms - 10**spread)
    end = ms + 10**spread
    keys = window_keys(form, "user", start, end)
    doc_id = form.new(to_datetime(ms), type="user")
    inside = start <= at_precision(ms, form) < end
    in_range = keys is not None and keys.low <= doc_id < keys.high
    assert in_range == inside
    # Neighbouring types never leak in ('user' against 'users').
    if keys is not None:
        assert not keys.low <= form.new(to_datetime(ms), type="users") < keys.high


NEAR_MISSES = [
    (TID62, "04XVaYIDfO3SmYAd"),  # length - 1
    (TID62, "04XVaYIDfO3SmYAds0"),  # length + 1
    (TID62, "04XVaYIDfO3SmYA-s"),  # alphabet
    (BASE36_V7, "03awvyp9xoayogohoeqqhhlh"),
    (BASE36_V7, "03AWVYP9XOAYOGOHOEQQHHLHC"),  # upper case
    (BASE36_V7, "zzzzzzzzzzzzzzzzzzzzzzzzz"),  # above 2**128
    (ULID, "01ARYZ6S41TSV4RRFFQ69G5FA"),
    (ULID, "01ARYZ6S41TSV4RRFFQ69G5FAVV"),
    (ULID, "01ARYZ6S41TSV4RRFFQ69G5FAI"),  # I is not Crockford
    (ULID, "01aryz6s41tsv4rrffq69g5fav"),  # lower case does not sort with upper case
    (ULID, "81ARYZ6S41TSV4RRFFQ69G5FAV"),  # above 128 bits
    (ULID, "7ZZZZZZZZZTSV4RRFFQ69G5FAV"),  # past 9999-12-31
    (UTC_RANDOM, "0" * 31),
    (UTC_RANDOM, "0" * 33),
    (UTC_RANDOM, "060dd710212000" + "G" * 18),
    (UTC_RANDOM, "060DD710212000" + "0" * 18),  # upper-case hex
    (UUID464, "AYzCUfQAcACAAAAAAAAAA"),
    (UUID464, "AYzCUfQAcACAAAAAAAAA+A"),
]


@pytest.mark.parametrize(("form", "body"), NEAR_MISSES, ids=repr)
def test_near_misses_are_refused(form: IdForm, body: str) -> None:
    with pytest.raises(InvalidIdError):
        form.read(body)
    assert not form.matcher()(body) or (form.has_time and body.startswith("7ZZ"))


@pytest.mark.parametrize(("form", "last"), TIME_FORMS, ids=str)
def test_wrong_prefix_is_refused(form: IdForm, last: int) -> None:
    doc_id = form.new(min(last, to_ms("2024-01-01")), type="user")
    for other in ("users", "use", "User", "user2", "a:user"):
        assert not form.matcher(form.type_prefix(other))(doc_id)
    with pytest.raises(InvalidIdError):
        decode("x" + doc_id[4:].replace(":", "!", 1), form=form)


@pytest.mark.parametrize("form", [*NAMED_FORMS.values(), UtcIdForm("-n")], ids=str)
@pytest.mark.parametrize("value", [None, 42, b"001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn"])
def test_every_form_refuses_what_is_not_a_string(form: IdForm, value: object) -> None:
    with pytest.raises(InvalidIdError, match="is not an id: ids are strings"):
        form.read(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("form", [*NAMED_FORMS.values(), UtcIdForm("-n")], ids=str)
def test_a_refusal_is_asked_only_of_what_read_refuses(form: IdForm) -> None:
    body = "0" * (form.length - 2) + "42" if form.kind.startswith("seq") else form.new()
    with pytest.raises(ValueError, match="read refuses nothing"):
        form.refusal(body)
