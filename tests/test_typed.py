"""Typed id classes: making, checking and parsing ids, str behaviour, and static types."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
import typing_check
from ibmcloudant.cloudant_v1 import CloudantV1

from couchids import (
    KUUID_MS_REVERSE,
    V7,
    V7S,
    Database,
    InvalidIdError,
    InvalidTypeError,
    TypedId,
    decode,
)

REPO = Path(__file__).resolve().parent.parent
WHEN = datetime(2024, 5, 1, 12, 30, 15, 250000, tzinfo=UTC)


class TtUserId(TypedId, type="tt-user"):
    pass


class TtOrderId(TypedId, type="tt-order", form=V7S):
    pass


class TtV7Base(TypedId, form=V7):
    """An abstract base: no type, only a form for its subclasses."""


class TtEventId(TtV7Base, type="tt-event"):
    pass


class TtLogId(TypedId, type="tt-log", form=KUUID_MS_REVERSE):
    pass


# --- making ids ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "form", "when"),
    [
        (TtUserId, "kuuid", WHEN.replace(microsecond=0)),
        (TtOrderId, "v7s", WHEN),
        (TtEventId, "v7", WHEN),
        (TtLogId, "kuuid-ms-reverse", WHEN),
    ],
)
def test_new_makes_an_id_of_the_class_type_form_and_time(
    cls: type[TypedId], form: str, when: datetime
) -> None:
    made = cls.new(WHEN)
    assert type(made) is cls
    assert made.startswith(f"{cls.doc_type}:")
    assert made.timestamp == when
    assert (made.decoded.type, str(made.decoded.form), made.decoded.timestamp) == (
        cls.doc_type,
        form,
        when,
    )
    assert made.decoded.id == made


def test_new_ids_are_distinct_and_default_to_now() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    ids = {TtUserId.new() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(before <= i.timestamp <= datetime.now(UTC) for i in ids)


def test_the_decoded_id_agrees_with_decode() -> None:
    made = TtUserId.new(WHEN)
    assert made.decoded == decode(str(made))


# --- checking ids -------------------------------------------------------------------------


def test_wrapping_a_valid_string_keeps_it() -> None:
    text = str(TtOrderId.new())
    wrapped = TtOrderId(text)
    assert type(wrapped) is TtOrderId and wrapped == text


@pytest.mark.parametrize(
    ("cls", "value", "words"),
    [
        (TtUserId, "tt-order:001xUbdD1RZ8cs0WUopX3WJ9DN1zkRze", "has type 'tt-order'"),
        (TtUserId, "001xUbdD1RZ8cs0WUopX3WJ9DN1zkRze", "has no type"),
        (TtUserId, "tt-user:abc", "has 3 characters"),
        (TtUserId, "tt-user:001xUbdD1RZ8cs0WUopX3WJ9DN1zkRz!", "not a kuuid id"),
        (TtUserId, "tt-user:001xUbdD1RZ8cs0WUopX3WJ9DN4zzzzz", "above 4gfFC3"),
        (TtOrderId, "tt-order:01a1fc1d84f066e994ad35f6f997013d", "version 7"),
        (TtOrderId, "tt-order:01a1fc1d-84f0-76e9-94ad-35f6f997013d", "has 36 characters"),
        (TtUserId, 42, "ids are strings"),
    ],
)
def test_wrapping_a_bad_string_says_what_is_wrong(
    cls: type[TypedId], value: str, words: str
) -> None:
    with pytest.raises(InvalidIdError, match=words) as caught:
        cls(value)
    assert cls.__name__ in str(caught.value)


def test_abstract_classes_make_and_wrap_nothing() -> None:
    for cls in (TypedId, TtV7Base):
        with pytest.raises(TypeError, match="abstract"):
            cls("tt-event:x")
        with pytest.raises(TypeError, match="abstract"):
            cls.new()


# --- parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [TtUserId, TtOrderId, TtEventId, TtLogId])
def test_parse_finds_the_class_of_the_type(cls: type[TypedId]) -> None:
    text = str(cls.new(WHEN))
    parsed = TypedId.parse(text)
    assert type(parsed) is cls and parsed == text
    assert type(cls.parse(text)) is cls


def test_parse_of_an_unknown_type_lists_the_known_ones() -> None:
    with pytest.raises(InvalidIdError, match="unknown type 'nobody'") as caught:
        TypedId.parse("nobody:001xUbdD1RZ8cs0WUopX3WJ9DN1zkRze")
    assert "tt-order, tt-user" in str(caught.value)
    with pytest.raises(InvalidIdError, match="no type"):
        TypedId.parse("001xUbdD1RZ8cs0WUopX3WJ9DN1zkRze")


def test_parse_on_a_class_accepts_only_its_own_ids() -> None:
    with pytest.raises(InvalidIdError, match="an id of TtOrderId, not of TtUserId"):
        TtUserId.parse(str(TtOrderId.new()))
    assert type(TtV7Base.parse(str(TtEventId.new()))) is TtEventId


def test_parse_checks_the_body_too() -> None:
    with pytest.raises(InvalidIdError, match="TtUserId"):
        TypedId.parse("tt-user:too-short")


# --- registration -------------------------------------------------------------------------


def test_a_type_belongs_to_one_class() -> None:
    with pytest.raises(InvalidTypeError, match=r"'tt-user' is already used by .*TtUserId"):

        class Impostor(TypedId, type="tt-user"):
            pass

    assert type(TypedId.parse(str(TtUserId.new()))) is TtUserId


def test_redefining_the_same_class_replaces_it() -> None:
    def define() -> type[TypedId]:
        class TtCellId(TypedId, type="tt-cell"):
            pass

        return TtCellId

    first, second = define(), define()
    assert first is not second
    assert type(TypedId.parse(str(first.new()))) is second


def test_a_bad_type_is_refused_at_class_creation() -> None:
    with pytest.raises(InvalidTypeError, match="not a valid document type"):

        class Bad(TypedId, type="has space"):
            pass


def test_a_subclass_of_a_concrete_class_needs_its_own_type() -> None:
    with pytest.raises(TypeError, match="give it a type of its own"):

        class Admin(TtUserId):
            pass


def test_the_form_must_be_an_id_form() -> None:
    with pytest.raises(TypeError, match="IdForm"):

        class Odd(TypedId, type="tt-odd", form="v7"):  # type: ignore[arg-type]
            pass


# --- str behaviour ------------------------------------------------------------------------


def test_typed_ids_behave_as_their_string() -> None:
    made = TtUserId.new()
    text = str(made)
    assert type(text) is str
    assert made == text and text == made and hash(made) == hash(text)
    assert {text: 1}[made] == 1 and {made: 1}[text] == 1
    assert json.dumps({"_id": made}) == json.dumps({"_id": text})
    assert repr(made) == f"TtUserId({text!r})"
    assert f"{made}" == text
    restored = pickle.loads(pickle.dumps(made))
    assert type(restored) is TtUserId and restored == made


def test_ibmcloudant_and_create_take_typed_ids(client: CloudantV1, db: str) -> None:
    user = TtUserId.new()
    client.put_document(db=db, doc_id=user, document={"_id": user, "n": 1})
    assert client.get_document(db=db, doc_id=user).get_result()["_id"] == user
    order = TtOrderId.new()
    result = Database(client, db).create({"_id": order, "user": user}, type="tt-order")
    assert result.id == order
    stored = client.get_document(db=db, doc_id=order).get_result()
    assert stored["user"] == user and TypedId.parse(stored["_id"]) == order


# --- static typing ------------------------------------------------------------------------


def test_the_typing_check_module_runs() -> None:
    out = typing_check.main()
    assert out[0] == out[1].upper()


def mypy(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent(code))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-error-summary",
            str(snippet),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
        check=False,
    )


SNIPPET = """
    from couchids import V7S, TypedId

    class UserId(TypedId, type="user"): ...
    class OrderId(TypedId, type="order", form=V7S): ...

    def greet(user: UserId) -> str:
        return "hello " + user

    greet({arg})
"""


def test_mypy_refuses_an_order_id_where_a_user_id_is_expected(tmp_path: Path) -> None:
    refused = mypy(tmp_path, SNIPPET.format(arg="OrderId.new()"))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert '"OrderId"; expected "UserId"  [arg-type]' in refused.stdout, refused.stdout
    # The control: the same code with a UserId passes, so the refusal is about the type.
    accepted = mypy(tmp_path, SNIPPET.format(arg="UserId.new()"))
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr


# --- every form, every separator ----------------------------------------------------------

from couchids import BASE36_V7, TID62, ULID, UTC_RANDOM  # noqa: E402


class TcAccountId(TypedId, prefix="tc-acct", form=BASE36_V7.with_separator("_")):
    pass


class TcSesId(TypedId, prefix="tc-ses", form=ULID.with_separator("_")):
    pass


class TcSessionId(TypedId, prefix="tc-session", form=ULID.with_separator("_")):
    pass


class TcUserId(TypedId, type="tc-u", form=TID62.with_separator("-")):
    pass


class TcHitId(TypedId, type="tc-hit", form=UTC_RANDOM):
    pass


@pytest.mark.parametrize("cls", [TcAccountId, TcSesId, TcSessionId, TcUserId, TcHitId])
def test_every_form_makes_checks_and_parses(cls: type[TypedId]) -> None:
    made = cls.new("2025-06-01T10:00:00Z")
    assert made.startswith(cls.id_prefix) and cls.id_prefix[-1] == cls.form.separator
    assert made.timestamp.isoformat() == "2025-06-01T10:00:00+00:00"
    assert type(TypedId.parse(str(made))) is cls and cls(str(made)) == made
    body = str(made)[len(cls.id_prefix) :]
    # Near misses: the body one character short or long, another separator.
    for bad in (cls.id_prefix + body[:-1], str(made) + "0", f"{cls.doc_type}!{body}"):
        with pytest.raises(InvalidIdError):
            cls(bad)


def test_parsing_checks_the_whole_prefix() -> None:
    session = TcSessionId.new()
    assert type(TypedId.parse(str(session))) is TcSessionId
    with pytest.raises(InvalidIdError, match="TcSesId"):
        TcSesId(str(session))
    with pytest.raises(InvalidIdError, match="unknown type 'tc-sess'"):
        TypedId.parse("tc-sess_" + str(session).split("_", 1)[1])


def test_a_prefix_belongs_to_one_class_whatever_its_separator() -> None:
    with pytest.raises(InvalidTypeError, match=r"'tc-acct' is already used by .*TcAccountId"):

        class Impostor(TypedId, prefix="tc-acct", form=BASE36_V7):
            pass

    with pytest.raises(TypeError, match="not both"):

        class Both(TypedId, type="tc-both", prefix="tc-both"):
            pass


def test_the_identifiers_article_pattern() -> None:
    """The seed's AccountId, as one class statement."""
    acct = TcAccountId.new()
    assert len(acct) == len("tc-acct_") + 25
    assert TcAccountId.parse(str(acct)) == acct and repr(acct).startswith("TcAccountId('")


# --- pydantic -----------------------------------------------------------------------------


def test_typed_ids_validate_as_pydantic_fields() -> None:
    import re

    pydantic = pytest.importorskip("pydantic")

    class Account(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        id: TcAccountId
        owner: TtUserId
        any_id: TypedId

    acct, user = TcAccountId.new(), TtUserId.new()
    model = Account(id=str(acct), owner=str(user), any_id=str(user))
    assert type(model.id) is TcAccountId and type(model.any_id) is TtUserId
    assert json.loads(model.model_dump_json()) == {
        "id": acct,
        "owner": user,
        "any_id": user,
    }
    with pytest.raises(pydantic.ValidationError, match="TcAccountId"):
        Account(id="tc-acct_nope", owner=str(user), any_id=str(user))
    with pytest.raises(pydantic.ValidationError, match="not a TtUserId"):
        Account(id=str(acct), owner=str(acct), any_id=str(user))
    schema = Account.model_json_schema()["properties"]
    for field, cls, good, bad in (
        ("id", TcAccountId, acct, TcSesId.new()),
        ("owner", TtUserId, user, TtOrderId.new()),
    ):
        pattern = schema[field]["pattern"]
        assert pattern == cls.json_pattern()
        assert re.search(pattern, good) and not re.search(pattern, bad)
    assert "pattern" not in schema["any_id"]
