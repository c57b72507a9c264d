"""Database.explain_empty (couchids/core/explaining.py) and the note the command prints after an
answer, against the local server. Each explanation is checked by following its advice."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import (
    KUUID,
    KUUID_MS,
    SEQ10,
    TID62,
    V7S,
    DatabaseNotFoundError,
    InvalidArgumentError,
)
from couchids.cli.main import main
from couchids.idforms.constants import SHORT_BLOCKS
from couchids.idforms.forms import IdForm, KuuidForm

SINCE, UNTIL = "2024-05-01", "2024-05-03"
WHEN = "2024-05-01T12:00:00Z"


def insert(client: CloudantV1, db: str, ids: list[str]) -> None:
    result = client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": i} for i in ids]})
    assert all("error" not in row for row in result.get_result())


@pytest.fixture
def typed(client: CloudantV1, db: str) -> str:
    """A database of typed ids only, and a design document."""
    insert(client, db, [KUUID.new(WHEN, type=t) for t in ("order", "user", "order")])
    insert(client, db, ["_design/views"])
    return db


def test_untyped_query_of_typed_ids(client: CloudantV1, typed: str) -> None:
    assert couchids.Database(client, typed).latest(5) == []
    why = couchids.Database(client, typed).explain_empty()
    assert why == (
        f"no untyped kuuid ids in {typed!r}; it holds ids of types order, user: pass "
        "type='order' or type=couchids.ALL_TYPES"
    )
    # The advice finds them.
    assert len(couchids.Database(client, typed).latest(5, type="order")) == 2
    assert len(couchids.Database(client, typed).latest(5, type=couchids.ALL_TYPES)) == 3
    command = couchids.Database(client, typed).explain_empty(style="command")
    assert command is not None and command.endswith(": pass --type order or --all-types")


def test_a_misspelt_type(client: CloudantV1, typed: str) -> None:
    why = couchids.Database(client, typed).explain_empty(type="ordr")
    assert why == f"no ids of type 'ordr' in {typed!r}; it holds ids of types order, user: " + (
        "pass type= one of them"
    )
    command = couchids.Database(client, typed).explain_empty(type="ordr", style="command")
    assert command is not None and command.endswith(": pass --type with one of them")


def test_a_type_asked_of_untyped_ids(client: CloudantV1, db: str) -> None:
    insert(client, db, [KUUID.new(WHEN) for _ in range(3)])
    why = couchids.Database(client, db).explain_empty(type="order", style="command")
    assert why == f"no ids of type 'order' in {db!r}; its ids are untyped: leave out --type"


def test_ids_of_another_form(client: CloudantV1, db: str) -> None:
    ids = [V7S.new(WHEN) for _ in range(3)]
    insert(client, db, ids)
    assert couchids.Database(client, db).latest(5) == []
    why = couchids.Database(client, db).explain_empty()
    assert why is not None
    assert why.startswith(f"the untyped ids of {db!r} are not kuuid ids: they read as v7s (such as")
    assert why.endswith(": pass form=couchids.V7S")
    assert len(couchids.Database(client, db, form=couchids.V7S).latest(5)) == 3


def test_second_ids_asked_as_millisecond_ones(client: CloudantV1, db: str) -> None:
    # A second-precision kuuid id is also a well-formed millisecond one, of 1970.
    insert(client, db, [KUUID.new(WHEN, type="order") for _ in range(3)])
    why = couchids.Database(client, db).explain_empty(type="order", form=KUUID_MS, style="command")
    assert why is not None
    assert why.startswith(f"the ids of type 'order' in {db!r} are not kuuid-ms ids: they read as")
    assert why.endswith(": pass --form kuuid")


@pytest.mark.parametrize(
    ("made", "flags"),
    [
        (KuuidForm(random=3, millisecond=True), None),
        (KuuidForm(random=1, reverse=True), None),
        (KuuidForm(random=SHORT_BLOCKS, millisecond=True), ["--short", "--ms"]),
    ],
    ids=str,
)
def test_a_form_that_is_no_preset_is_suggested_as_it_can_be_made(
    client: CloudantV1,
    db: str,
    capsys: pytest.CaptureFixture[str],
    server: None,
    made: IdForm,
    flags: list[str] | None,
) -> None:
    # form_named() knows the presets only: the advice makes the form itself.
    insert(client, db, [made.new(WHEN, type="order") for _ in range(3)])
    why = couchids.Database(client, db).explain_empty(type="order")
    assert why is not None
    suggested = why.rpartition(": pass form=")[2]
    assert suggested.startswith("couchids.idforms.forms.KuuidForm(")
    form = eval(suggested, {"couchids": couchids})  # the advice, followed
    assert form == made
    assert len(couchids.Database(client, db, form=form).latest(5, type="order")) == 3
    # The command: the flags that make it, or no advice it cannot follow.
    assert main(["latest", db, "--type", "order"]) == 0
    err = capsys.readouterr().err
    if flags is None:
        assert err.endswith(
            f": the command names no such form: read them in Python with form={suggested}\n"
        )
    else:
        assert err.endswith(f": pass {' '.join(flags)}\n")
        assert main(["latest", db, "--type", "order", *flags]) == 0
        out, err = capsys.readouterr()
        assert len(out.splitlines()) == 3 and err == ""


def test_ids_without_a_time_under_a_separator(client: CloudantV1, db: str) -> None:
    insert(client, db, [f"inv-{SEQ10.encode(n)}" for n in range(3)])
    why = couchids.Database(client, db).explain_empty(
        type="inv", form=TID62.with_separator("-"), style="command"
    )
    assert why == (
        f"the ids of type 'inv' in {db!r} are not tid62 ids: they read as seq10 (which holds no "
        "time) (such as 'inv-0000000000'); time queries read only forms with a time"
    )


def test_ids_of_the_form_outside_the_window_need_no_explanation(
    client: CloudantV1, typed: str
) -> None:
    assert (
        list(couchids.Database(client, typed).window("2030-01-01", "2030-01-02", type="order"))
        == []
    )
    assert couchids.Database(client, typed).explain_empty(type="order") is None
    assert (
        couchids.Database(client, typed).explain_empty(type="order", form=KUUID.with_separator(":"))
        is None
    )


def test_an_empty_database_needs_no_explanation(client: CloudantV1, db: str) -> None:
    assert couchids.Database(client, db).explain_empty() is None
    insert(client, db, ["_design/only"])
    assert couchids.Database(client, db).explain_empty() is None
    assert couchids.Database(client, db).explain_empty(type="order") is None


def test_arguments_are_checked(client: CloudantV1, db: str) -> None:
    with pytest.raises(InvalidArgumentError, match="style="):
        couchids.Database(client, db).explain_empty(style="shell")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="form="):
        couchids.Database(client, db).explain_empty(form="kuuid")  # type: ignore[arg-type]
    with pytest.raises(DatabaseNotFoundError):
        couchids.Database(client, "test_no_such_database").explain_empty()


# -- the command -------------------------------------------------------------------------------


@pytest.fixture
def server(couch_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("CLOUDANT_") or name in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


EMPTY_UNTYPED = [
    ["latest", "DB"],
    ["window", "DB", "--since", SINCE, "--until", UNTIL],
    ["count", "DB", "--since", SINCE, "--until", UNTIL],
    ["histogram", "DB", "--since", SINCE, "--until", UNTIL, "--every", "1d", "--format", "csv"],
    ["export", "DB", "--since", SINCE, "--until", UNTIL],
]
#: What each prints when it finds nothing.
NOTHING = {
    "latest": "",
    "window": "",
    "count": "0\n",
    "histogram": "start,end,count\r\n"
    "2024-05-01T00:00:00Z,2024-05-02T00:00:00Z,0\r\n"
    "2024-05-02T00:00:00Z,2024-05-03T00:00:00Z,0\r\n",
    "export": "",
}


@pytest.mark.parametrize("argv", EMPTY_UNTYPED, ids=lambda argv: argv[0])
def test_the_command_explains_an_empty_untyped_answer(
    server: None, client: CloudantV1, typed: str, capsys: pytest.CaptureFixture[str], argv: Any
) -> None:
    argv = [typed if arg == "DB" else arg for arg in argv]
    status, out, err = run(capsys, *argv)
    assert (status, out) == (0, NOTHING[argv[0]])
    assert err == (
        f"couchids: note: no untyped kuuid ids in {typed!r}; it holds ids of types order, user: "
        "pass --type order or --all-types\n"
    )
    # With the advice, there is something, and no note.
    status, out, err = run(capsys, *argv, "--type", "order")
    assert status == 0 and out != NOTHING[argv[0]] and err == ""


def test_the_command_names_the_form_of_the_ids(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    insert(client, db, [V7S.new(WHEN) for _ in range(2)])
    status, out, err = run(capsys, "latest", db)
    assert (status, out) == (0, "")
    assert err.startswith(f"couchids: note: the untyped ids of {db!r} are not kuuid ids: ")
    assert err.endswith(": pass --form v7s\n")
    status, out, err = run(capsys, "latest", db, "--form", "v7s")
    assert status == 0 and len(out.splitlines()) == 2 and err == ""


def test_no_note_when_the_window_is_why(
    server: None, client: CloudantV1, typed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(
        capsys, "count", typed, "--since", "2020-01-01", "--until", "2020-02-01", "--type", "order"
    )
    assert (status, out, err) == (0, "0\n", "")
    status, out, err = run(capsys, "latest", typed, "--all-types", "-n", "0")
    assert (status, out, err) == (0, "", "")
