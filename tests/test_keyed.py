"""keyed_id: one idempotency key and one time always make the same id, of any form."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from couchids import (
    BASE36_V7,
    KUUID,
    KUUID_MS,
    KUUID_MS_REVERSE,
    KUUID_REVERSE,
    SEQ10,
    SHORT,
    SHORT_REVERSE,
    TID62,
    ULID,
    UTC_RANDOM,
    UUID464,
    V7,
    V7S,
    IdForm,
    InvalidArgumentError,
    InvalidTimeError,
    InvalidTypeError,
    decode,
)
from couchids.idforms.base62 import decode as base62_decode
from couchids.idforms.couchid import UtcIdForm
from couchids.idforms.keyed import KEY_HASH_PERSON, keyed_id

FORMS = [KUUID, KUUID_MS, KUUID_REVERSE, KUUID_MS_REVERSE, SHORT, SHORT_REVERSE, V7, V7S]
FORMS += [IdForm(random=1), IdForm(random=3, millisecond=True)]
WHEN = datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_a_keyed_id_is_an_id_of_its_form_at_its_time(form: IdForm) -> None:
    doc_id = keyed_id("settle:table-7:hand-42", WHEN, type="settlement", form=form)
    assert doc_id.startswith("settlement:")
    body = doc_id.removeprefix("settlement:")
    assert form.id_pattern().fullmatch(body), "queries of this form find it"
    assert form.parse(body) // form.unit_ms == int(WHEN.timestamp() * 1000) // form.unit_ms
    assert doc_id == keyed_id("settle:table-7:hand-42", WHEN, type="settlement", form=form)


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_the_random_part_is_the_hash_of_the_key(form: IdForm) -> None:
    digest = hashlib.blake2b(b"k", digest_size=16, person=KEY_HASH_PERSON).digest()
    doc_id = keyed_id("k", WHEN, form=form)
    if form.kind == "kuuid":
        blocks = [doc_id[8 + 6 * i : 14 + 6 * i] for i in range(form.random)]
        words = [int.from_bytes(digest[4 * i : 4 * i + 4]) for i in range(form.random)]
        assert [base62_decode(b) for b in blocks] == words
    else:
        bits = int(doc_id.replace("-", ""), 16)
        rand_a, rand_b = (bits >> 64) & 0xFFF, bits & ((1 << 62) - 1)
        assert (rand_a << 62) | rand_b == int.from_bytes(digest) >> (128 - 74)


def test_other_keys_times_types_and_forms_give_other_ids() -> None:
    base = keyed_id("k", WHEN, type="a")
    assert keyed_id("k2", WHEN, type="a") != base
    assert keyed_id("k", "2024-05-01T12:00:01Z", type="a") != base
    assert keyed_id("k", WHEN, type="b") != base
    assert keyed_id("k", WHEN, type="a", form=KUUID_MS) != base
    # The same second, at second precision: the same id.
    assert keyed_id("k", "2024-05-01T12:00:00.999Z", type="a") == base


def test_the_same_key_makes_the_same_id_in_another_process() -> None:
    code = (
        "import couchids; from couchids.idforms.keyed import keyed_id; "
        "print(keyed_id('k', '2024-05-01', form=couchids.V7))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert other == keyed_id("k", "2024-05-01", form=V7)


@given(st.text(min_size=1), st.integers(946_684_800_000, 4_102_444_799_999))  # 2000-2099
def test_keyed_ids_decode_to_their_time(key: str, ms: int) -> None:
    try:
        doc_id = keyed_id(key, ms, form=KUUID_MS)
    except InvalidArgumentError:
        assert any(0xD800 <= ord(c) <= 0xDFFF for c in key), "only lone surrogates are refused"
        return
    assert decode(doc_id).timestamp == datetime.fromtimestamp(ms / 1000, UTC)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "words"),
    [
        (("", WHEN), {}, InvalidArgumentError, "non-empty string"),
        ((7, WHEN), {}, InvalidArgumentError, "key=7"),
        (("k", None), {}, InvalidArgumentError, "own time"),
        (("k", 1.5), {}, InvalidTimeError, "float"),
        (("k", WHEN), {"type": "_x"}, InvalidTypeError, "not a valid document type"),
        (("k", WHEN), {"form": "kuuid"}, InvalidArgumentError, "forms that hold a time"),
        (("k", WHEN), {"form": SEQ10}, InvalidArgumentError, "forms that hold a time"),
        (("k", WHEN), {"form": UUID464}, InvalidArgumentError, "forms that hold a time"),
        (("k", "2019-12-31"), {"form": TID62}, InvalidTimeError, "tid62 runway"),
        # No random part to take the key: every key of a millisecond would be one document.
        (("k", WHEN), {"form": UtcIdForm("-n1")}, InvalidArgumentError, "no random part"),
    ],
)
def test_keyed_id_refuses_bad_arguments(
    args: tuple[object, ...], kwargs: dict[str, object], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        keyed_id(*args, **kwargs)  # type: ignore[arg-type]


OTHER_FORMS = [
    TID62,
    TID62.with_separator("-"),
    BASE36_V7.with_separator("_"),
    ULID,
    UTC_RANDOM,
    UtcIdForm("-n1"),
]


@pytest.mark.parametrize("form", OTHER_FORMS, ids=lambda f: f"{f}{f.separator}")
def test_keyed_ids_of_every_time_form(form: IdForm) -> None:
    if not form.random_bits:  # utc_id: refused (test_keyed_id_refuses_bad_arguments)
        with pytest.raises(InvalidArgumentError, match="no random part"):
            keyed_id("settle:table-7:hand-42", WHEN, type="settlement", form=form)
        return
    doc_id = keyed_id("settle:table-7:hand-42", WHEN, type="settlement", form=form)
    prefix = "settlement" + form.separator
    body = doc_id.removeprefix(prefix)
    assert doc_id.startswith(prefix) and form.matcher()(body), "queries of this form find it"
    us = form.read(body)
    assert us is not None and us // 1000 // form.unit_ms == 1714564800123 // form.unit_ms
    assert decode(doc_id, form=form).type == "settlement"
    assert doc_id == keyed_id("settle:table-7:hand-42", WHEN, type="settlement", form=form)
    other = keyed_id("settle:table-7:hand-43", WHEN, type="settlement", form=form)
    assert other != doc_id
    # The random part is the top bits of the key's hash, as compose writes them.
    digest = int.from_bytes(
        hashlib.blake2b(b"settle:table-7:hand-42", digest_size=16, person=KEY_HASH_PERSON).digest()
    )
    assert body == form.compose(us, digest >> (128 - form.random_bits))


def test_new_and_compose_write_the_same_layout() -> None:
    """new() is compose() with fresh bits: both hold the same time."""
    for form in OTHER_FORMS:
        assert form.read(form.new(WHEN)) == form.read(form.compose(1714564800123000, 0))
