"""Arguments that used to escape as Python's own exceptions (or gave a silently wrong result)
are couchids errors that say what is accepted, in both APIs; and every failure of the command
is one ``couchids: error: ...`` line with its documented status. The cases of both APIs are
written once, in tests/_async/test_bad_arguments.py.

The library cases run against a client of a closed port: an argument check that is missing
would let a request go out and fail with a ``ServerError`` instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

import pytest
from conftest import drop_database, fresh_database
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_arguments import closed_port

import couchids
from couchids import Checkpoint
from couchids.cli.main import EXIT_BAD_INPUT, EXIT_OK, EXIT_SERVER, main
from couchids.errors import InvalidArgumentError
from couchids.idforms.times import to_ms

C = client_for(f"http://127.0.0.1:{closed_port()}")
LONE = "\ud800"
SINCE, UNTIL = "2024-05-01T00:00:00Z", "2024-05-02T00:00:00Z"


# -- checkpoints ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"last_id": 5},
        {"last_id": ""},
        {"last_id": b"order:1"},
        {"last_id": "order:" + LONE},
        {"since_seq": 1.5},
        {"since_seq": True},
        {"since_seq": ["0"]},
        {"done": -1},
        {"done": True},
        {"done": 1.0},
        {"done": "3"},
    ],
    ids=repr,
)
def test_a_checkpoint_checks_its_fields(fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError, match="Checkpoint") as caught:
        Checkpoint(**fields)
    name = next(iter(fields))
    assert f"{name}=" in str(caught.value)


def test_a_checkpoint_takes_what_follow_and_the_scans_use() -> None:
    assert Checkpoint("order:1", None, 0).last_id == "order:1"
    assert Checkpoint(since_seq="12-g1AAAA").since_seq == "12-g1AAAA"
    # PouchDB's (and CouchDB 1's) sequences are ints, and follow sends them as they are.
    saved = Checkpoint(since_seq=7, done=3).to_json()
    assert json.loads(saved) == {"last_id": None, "since_seq": 7, "done": 3}
    assert Checkpoint.from_json(saved) == Checkpoint(since_seq=7, done=3)


@pytest.mark.parametrize(
    "text",
    [
        '{"done":1e999}',
        '{"done":-1}',
        '{"done":2.5}',
        '{"last_id":5}',
        '{"since_seq":{}}',
        '{"since":"12-g1AAAA"}',
        '{"last_id":"a","dne":3}',
        "[1]",
        "null",
        "not json",
        "[" * 100_000,
    ],
    ids=lambda text: text[:20],
)
def test_from_json_refuses_what_is_no_checkpoint(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="is not a couchids checkpoint"):
        Checkpoint.from_json(text)


OPERATIONS = ["expire", "export", "archive", "rekey", "follow"]


# -- export's out and fields ------------------------------------------------------------------


# -- ids that are not valid Unicode -----------------------------------------------------------


# -- times whose tzinfo fails -----------------------------------------------------------------


class Offset(tzinfo):
    def __init__(self, offset: object) -> None:
        self.offset = offset

    def utcoffset(self, dt: datetime | None) -> Any:
        return self.offset

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None


class Failing(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        raise RuntimeError("the zone database is gone")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


def test_a_tzinfo_within_a_day_still_counts() -> None:
    east = datetime(2024, 5, 1, 12, tzinfo=Offset(timedelta(hours=23, minutes=59)))
    assert to_ms(east) == to_ms("2024-04-30T12:01:00Z")


# -- what export writes, against the server ---------------------------------------------------


def _populate(client: CloudantV1, db: str, *docs: dict[str, Any]) -> list[str]:
    ids = []
    for n, doc in enumerate(docs):
        at = f"2024-05-01T00:00:{n:02}Z"
        ids.append(couchids.Database(client, db).create(doc, type="ord", timestamp=at).id)
    return ids


# CouchDB refuses a document holding a lone surrogate (400 invalid UTF-8 JSON); PouchDB Server
# stores it, and export must write it back exactly.


# -- the command ------------------------------------------------------------------------------


@pytest.fixture
def server(couch_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The command pointed at the local server: in this process, and the environment for a
    command run in another."""
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    yield {**os.environ, "PYTHONUNBUFFERED": ""}


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("couchids: error: "), err
    return lines[0]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def command(
    env: dict[str, str], *argv: str, stdout: Any = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "couchids", *argv],
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("fields", ["", ",", "_id,", "_id,,name", " , "])
def test_the_command_refuses_an_empty_csv_field(
    server: Any, client: CloudantV1, db: str, fields: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _populate(client, db, {"name": "a"})
    status, out, err = run(capsys, "export", db, "--since", SINCE, "--type", "ord", "--csv", fields)
    assert status == EXIT_BAD_INPUT and out == ""
    assert "--csv" in one_error_line(err)


def test_the_command_refuses_a_mapping_it_cannot_append_to(
    server: Any,
    client: CloudantV1,
    db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _populate(client, db, {"name": "a"})
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "secret")
    target = fresh_database(client)
    try:
        for mapping, why in [
            (tmp_path / "missing" / "map.ndjson", "No such file or directory"),
            (tmp_path, "Is a directory"),
        ]:
            status, out, err = run(capsys, "rekey", db, target, "--mapping", str(mapping))
            assert status == EXIT_BAD_INPUT and out == ""
            line = one_error_line(err)
            assert "--mapping" in line and why in line
        assert client.post_all_docs(db=target).get_result()["rows"] == []
    finally:
        drop_database(client, target)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize(
    "argv",
    [["export", "--type", "ord"], ["window", "--type", "ord"], ["latest", "--type", "ord"]],
    ids=lambda argv: argv[0],
)
def test_a_full_disk_is_one_line(
    server: dict[str, str],
    client: CloudantV1,
    db: str,
    argv: list[str],
    unbuffered: str,
) -> None:
    _populate(client, db, {"name": "a"}, {"name": "b"})
    since = [] if argv[0] == "latest" else ["--since", SINCE]
    with open("/dev/full", "w") as full:
        done = command(
            {**server, "PYTHONUNBUFFERED": unbuffered}, argv[0], db, *argv[1:], *since, stdout=full
        )
    assert done.returncode == EXIT_SERVER
    assert "No space left on device" in one_error_line(done.stderr)


def test_an_ascii_stdout(server: dict[str, str], client: CloudantV1, db: str) -> None:
    docs = [{"name": "café ☕"}, {"name": "plain"}]
    _populate(client, db, *docs)
    ascii_out = {**server, "PYTHONIOENCODING": "ascii"}
    window = ["--since", SINCE, "--until", UNTIL, "--type", "ord"]
    # NDJSON escapes what the encoding lacks: the same JSON.
    done = command(ascii_out, "export", db, *window)
    assert done.returncode == EXIT_OK and done.stderr == ""
    assert [json.loads(line)["name"] for line in done.stdout.splitlines()] == ["café ☕", "plain"]
    assert done.stdout.isascii()
    # CSV cannot escape: one line saying what to set.
    done = command(ascii_out, "export", db, *window, "--csv", "_id,name")
    assert done.returncode == EXIT_BAD_INPUT
    assert "PYTHONIOENCODING=utf-8" in one_error_line(done.stderr)
    # Nor can a histogram's bars.
    done = command(ascii_out, "histogram", db, *window, "--format", "spark")
    assert done.returncode == EXIT_BAD_INPUT
    assert "PYTHONIOENCODING=utf-8" in one_error_line(done.stderr)


def test_a_reader_that_stops_early_is_no_error(
    server: dict[str, str], client: CloudantV1, db: str
) -> None:
    _populate(client, db, *({"n": n} for n in range(5)))
    for name in ("export", "window"):
        with subprocess.Popen(
            [sys.executable, "-m", "couchids", name, db, "--since", SINCE, "--type", "ord"],
            env=server,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as process:
            assert process.stdout is not None and process.stderr is not None
            process.stdout.close()  # before the first line: every write meets a closed pipe
            err = process.stderr.read()
            assert process.wait(timeout=120) == EXIT_OK and err == b"", (name, err)
