"""``couchids import``, run through main() as a user runs it, against every test server: rows
of NDJSON and CSV, from a file and from stdin, stored at the times they hold (what ``count``
and ``window`` then find), a rerun with ``--key-field`` storing nothing twice, bad rows and
refused ones named by their line while the others are stored, and a series as the target."""

from __future__ import annotations

import io
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids.cli.main import EXIT_BAD_INPUT, EXIT_OK, EXIT_SERVER, main
from couchids.cli.options import iso
from couchids.idforms.decode import decode
from couchids.idforms.keyed import keyed_id
from couchids.idforms.times import to_datetime, to_ms

MINUTE = 60_000
START = to_ms("2024-05-01T00:00:00Z")


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    def call(*argv: str, stdin: str | None = None) -> Run:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(argv))
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return call


@pytest.fixture
def server(couch_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def prefix(client: CloudantV1) -> Iterator[str]:
    """A series prefix of this test alone; every database of it is dropped afterwards."""
    name = f"test_{uuid.uuid4().hex}"
    yield name
    for db in client.get_all_dbs().get_result():
        if db.startswith(name):
            try:
                client.delete_database(db=db)
            except ApiException as error:
                if error.status_code != 404:
                    raise


def ndjson(rows: list[Any]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def docs_of(client: CloudantV1, db: str) -> list[dict[str, Any]]:
    rows = client.post_all_docs(db=db, include_docs=True).get_result()["rows"]
    return [row["doc"] for row in rows]


def test_600_rows_are_stored_at_the_times_they_hold(
    run: Any, server: None, client: CloudantV1, db: str
) -> None:
    # Every minute from START: ISO strings and ints of epoch milliseconds, as rows have them.
    rows = [
        {"at": START + n * MINUTE if n % 2 else iso(START + n * MINUTE), "n": n} for n in range(600)
    ]
    Path("orders.ndjson").write_text(ndjson(rows), encoding="utf-8")
    argv = ("orders.ndjson", "--time-field", "at", "--type", "order", "--batch-size", "250")
    result = run("-v", "import", db, *argv)
    assert (result.code, result.lines) == (EXIT_OK, ["stored 600, already there 0, failed 0"])
    # In batches of 250 rows, and no progress bar when stderr is no terminal.
    said = result.err.splitlines()
    assert len(said) == 3 and all(f"POST /{db}/_bulk_docs 201" in line for line in said)
    since, until = iso(START), iso(START + 600 * MINUTE)
    counted = run("count", db, "--since", since, "--until", until, "--type", "order")
    assert counted.lines == ["600"]
    # The 100 minutes from the 200th hold exactly the rows of those minutes.
    middle = (iso(START + 200 * MINUTE), iso(START + 300 * MINUTE))
    counted = run("count", db, "--since", middle[0], "--until", middle[1], "--type", "order")
    assert counted.lines == ["100"]
    window = run("window", db, "--since", since, "--until", until, "--type", "order")
    found = [json.loads(line) for line in window.lines]
    assert sorted(doc["n"] for doc in found) == list(range(600))
    for doc in found:
        assert decode(doc["_id"]).timestamp == to_datetime(START + doc["n"] * MINUTE)
        assert doc["_id"].startswith("order:") and doc["at"] == rows[doc["n"]]["at"]


def test_a_rerun_with_key_field_stores_nothing_twice(
    run: Any, server: None, client: CloudantV1, db: str
) -> None:
    rows = [{"at": START + n * MINUTE, "order": f"A-{n}", "total": n} for n in range(120)]
    Path("orders.ndjson").write_text(ndjson(rows), encoding="utf-8")
    argv = ("import", db, "orders.ndjson", "--time-field", "at", "--key-field", "order")
    first = run(*argv, "--batch-size", "50")
    assert first.lines == ["stored 120, already there 0, failed 0"]
    again = run(*argv)
    assert (again.code, again.lines) == (EXIT_OK, ["stored 0, already there 120, failed 0"])
    stored = docs_of(client, db)
    assert sorted(doc["order"] for doc in stored) == sorted(row["order"] for row in rows)
    # The keyed ids of the library: what Database.create(key=...) would make.
    assert {doc["_id"] for doc in stored} == {keyed_id(row["order"], row["at"]) for row in rows}


def test_csv_from_a_file_and_from_stdin(
    run: Any, server: None, client: CloudantV1, db: str
) -> None:
    text = (
        'created,number,total\r\n2024-05-01T10:00:00Z,7,12.50\r\n2024-05-01T11:00:00Z,8,"1,000"\r\n'
    )
    Path("orders.csv").write_text(text, encoding="utf-8")
    argv = ("--time-field", "created", "--key-field", "number", "--type", "order")
    result = run("import", db, "orders.csv", *argv)  # .csv: read as CSV
    assert result.lines == ["stored 2, already there 0, failed 0"]
    stored = sorted(docs_of(client, db), key=lambda doc: doc["number"])
    # CSV's values stay strings.
    assert [(d["number"], d["total"], d["created"]) for d in stored] == [
        ("7", "12.50", "2024-05-01T10:00:00Z"),
        ("8", "1,000", "2024-05-01T11:00:00Z"),
    ]
    assert [decode(d["_id"]).timestamp for d in stored] == [
        to_datetime(to_ms("2024-05-01T10:00:00Z")),
        to_datetime(to_ms("2024-05-01T11:00:00Z")),
    ]
    # The same rows on stdin, with --csv: the same keyed ids, so already there.
    piped = run("import", db, "--csv", *argv, stdin=text)
    assert piped.lines == ["stored 0, already there 2, failed 0"]
    as_json = run("import", db, "-", *argv, stdin=text)  # without --csv: NDJSON, not JSON
    assert as_json.code == 1 and "line 1: not JSON" in as_json.err


def test_ndjson_from_stdin_with_the_flags_anywhere(
    run: Any, server: None, client: CloudantV1, db: str
) -> None:
    rows = [{"at": "2024-05-01T12:00:00Z", "n": n} for n in range(3)]
    result = run("import", "--time-field", "at", db, "--type", "e", stdin=ndjson(rows))
    assert result.lines == ["stored 3, already there 0, failed 0"]
    assert {decode(d["_id"]).type for d in docs_of(client, db)} == {"e"}
    Path("more.ndjson").write_text(ndjson(rows), encoding="utf-8")
    result = run("import", db, "--type", "e", "more.ndjson", "--time-field", "at")
    assert result.lines == ["stored 3, already there 0, failed 0"]
    assert len(docs_of(client, db)) == 6


def test_bad_rows_are_named_by_line_and_the_others_stored(
    run: Any, server: None, client: CloudantV1, db: str
) -> None:
    lines = [
        '{"at": "2024-05-01T12:00:00Z", "n": 1}',  # 1
        "",  # 2: blank, no row
        "{not json",  # 3
        '{"n": 4}',  # 4: no time
        '{"at": "yesterday", "n": 5}',  # 5
        '{"at": "2024-05-01T12:05:00Z", "n": 6, "_rev": "1-abc"}',  # 6
        "[1, 2]",  # 7
        '{"at": "2024-05-01T12:08:00Z", "n": 8}',  # 8
        '{"at": "2024-05-01T12:09:00Z", "n": NaN}',  # 9
        '{"at": "2024-05-01T12:10:00Z", "n": "\udcff"}',  # 10: a byte that is no UTF-8
        '{"at": "2024-05-01T12:11:00Z", "n": "\u00e9"}',  # 11
    ]
    text = "\n".join(lines) + "\n"
    Path("rows.ndjson").write_bytes(text.encode("utf-8", "surrogateescape"))
    result = run("import", db, "rows.ndjson", "--time-field", "at", "--batch-size", "2")
    assert result.code == 1
    assert result.lines == ["stored 3, already there 0, failed 7"]
    named = [line.split(":")[1].strip() for line in result.err.splitlines()]
    assert named == ["line 3", "line 4", "line 5", "line 6", "line 7", "line 9", "line 10"]
    assert "no field 'at' (--time-field)" in result.err and "not UTF-8" in result.err
    assert "'yesterday'" in result.err and "_rev" in result.err
    assert sorted(map(str, (doc["n"] for doc in docs_of(client, db)))) == ["1", "8", "\u00e9"]
    # Resumed after line 7: only line 8 is read again (and stored again: no --key-field).
    resumed = run("import", db, "rows.ndjson", "--time-field", "at", "--after-line", "7")
    assert resumed.lines == ["stored 2, already there 0, failed 2"]
    assert "line 9" in resumed.err and "line 3" not in resumed.err


def test_a_refused_row_is_named_and_the_others_stored(
    run: Any, server: None, client: CloudantV1, db: str
) -> None:
    at = "2024-05-01T12:00:00Z"
    rows = [
        {"at": at, "k": 1, "v": "a"},
        {"at": at, "k": 2, "v": "x" * 1_100_000},  # over the 1 MB a document may be
        {"at": at, "k": 3, "v": "c"},
    ]
    Path("rows.ndjson").write_text(ndjson(rows), encoding="utf-8")
    argv = ("import", db, "rows.ndjson", "--time-field", "at", "--key-field", "k")
    result = run(*argv)
    assert (result.code, result.lines) == (1, ["stored 2, already there 0, failed 1"])
    (said,) = result.err.splitlines()
    assert said.startswith("couchids: line 2: not stored: ") and "document_bytes" in said
    # Other content under a keyed id already stored: a conflict, named; nothing overwritten.
    rows[0]["v"], rows[1]["v"] = "changed", "b"
    Path("rows.ndjson").write_text(ndjson(rows), encoding="utf-8")
    result = run(*argv)
    assert (result.code, result.lines) == (1, ["stored 1, already there 1, failed 1"])
    (said,) = result.err.splitlines()
    assert said.startswith("couchids: line 1: not stored: ") and "different document" in said
    assert sorted(doc["v"] for doc in docs_of(client, db)) == ["a", "b", "c"]


def test_a_series_stores_each_row_in_its_period(
    run: Any, server: None, client: CloudantV1, prefix: str
) -> None:
    rows = [
        {"at": "2026-11-30T23:59:00Z", "n": 1},
        {"at": "2026-12-01T00:01:00Z", "n": 2},
        {"at": "2026-12-15T08:00:00Z", "n": 3},
    ]
    Path("readings.ndjson").write_text(ndjson(rows), encoding="utf-8")
    series = ("--series", prefix, "--period", "month")
    argv = ("import", *series, "readings.ndjson", "--time-field", "at", "--type", "reading")
    result = run(*argv)
    assert (result.code, result.lines) == (EXIT_OK, ["stored 3, already there 0, failed 0"])
    assert [doc["n"] for doc in docs_of(client, f"{prefix}-2026-11")] == [1]
    assert sorted(doc["n"] for doc in docs_of(client, f"{prefix}-2026-12")) == [2, 3]
    window = run(
        "window", *series, "--since", "2026-11-01", "--until", "2027-01-01", "--type", "reading"
    )
    assert [json.loads(line)["n"] for line in window.lines] == [3, 2, 1]


def test_a_batch_that_fails_stops_the_import_and_says_where_to_resume(
    run: Any, server: None, client: CloudantV1
) -> None:
    missing = f"test_{uuid.uuid4().hex}"
    rows = [{"at": START, "n": n} for n in range(3)]
    result = run("import", missing, "--time-field", "at", stdin=ndjson(rows))
    assert result.code == EXIT_SERVER
    assert result.lines == ["stored 0, already there 0, failed 0"]
    assert "stopped in the batch of lines 1 to 3, none of its rows were stored" in result.err
    assert "resume with the same command" in result.err and "does not exist" in result.err


def test_usage_is_checked_before_a_row_is_read(run: Any, server: None, db: str) -> None:
    result = run("import", db, "--key-field", "k", stdin="")
    assert result.code == EXIT_BAD_INPUT and "--key-field needs --time-field" in result.err
    result = run("import", db, "nowhere.ndjson")
    assert result.code == EXIT_BAD_INPUT and "'nowhere.ndjson': cannot read it" in result.err
    result = run("import", db, "--type", "bad type", stdin="{}\n")
    assert result.code == EXIT_BAD_INPUT and result.out == ""


class Interrupted(io.StringIO):
    """stdin whose reader presses Ctrl-C where a line ``STOP`` would come."""

    def __next__(self) -> str:
        line = super().__next__()
        if line == "STOP\n":
            raise KeyboardInterrupt
        return line


def test_ctrl_c_says_where_to_resume_and_a_keyed_rerun_finishes(
    run: Any,
    server: None,
    client: CloudantV1,
    db: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = ndjson([{"at": START + n * MINUTE, "n": n} for n in range(7)])
    head, tail = rows.splitlines(keepends=True)[:5], rows.splitlines(keepends=True)[5:]
    monkeypatch.setattr(sys, "stdin", Interrupted("".join([*head, "STOP\n", *tail])))
    argv = ("import", db, "--time-field", "at", "--key-field", "n", "--batch-size", "2")
    stopped = run(*argv)
    # Lines 1 to 4 in two batches; line 5 read for the third, not sent.
    assert (stopped.code, stopped.lines) == (130, ["stored 4, already there 0, failed 0"])
    assert stopped.err == (
        "couchids: stopped in the batch of lines 5 to 5, none of its rows were stored; "
        "resume with --after-line 4\n"
    )
    assert sorted(doc["n"] for doc in docs_of(client, db)) == [0, 1, 2, 3]
    resumed = run(*argv, "--after-line", "4", stdin=rows)
    assert resumed.lines == ["stored 3, already there 0, failed 0"]
    again = run(*argv, stdin=rows)  # from the start: keyed, so nothing twice
    assert again.lines == ["stored 0, already there 7, failed 0"]
    assert sorted(doc["n"] for doc in docs_of(client, db)) == list(range(7))


def test_ctrl_c_while_a_batch_is_written_says_it_may_be_stored(
    run: Any,
    server: None,
    client: CloudantV1,
    db: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C as the second batch's answer comes: its rows are stored, unseen; resumed after the
    first batch, the keyed rerun counts them already there."""
    rows = ndjson([{"at": START + n * MINUTE, "n": n} for n in range(5)])
    writes = couchids.Database.bulk_create
    calls = []

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        results = writes(*args, **kwargs)
        calls.append(len(results))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return results

    monkeypatch.setattr(couchids.Database, "bulk_create", interrupted)
    argv = ("import", db, "--time-field", "at", "--key-field", "n", "--batch-size", "2")
    stopped = run(*argv, stdin=rows)
    assert (stopped.code, stopped.lines) == (130, ["stored 2, already there 0, failed 0"])
    assert stopped.err == (
        "couchids: stopped in the batch of lines 3 to 4, some of its rows may be stored (a "
        "rerun counts them already there); resume with --after-line 2\n"
    )
    monkeypatch.setattr(couchids.Database, "bulk_create", writes)
    resumed = run(*argv, "--after-line", "2", stdin=rows)
    assert resumed.lines == ["stored 1, already there 2, failed 0"]
    assert sorted(doc["n"] for doc in docs_of(client, db)) == list(range(5))
