"""The ``couchids`` command, run in-process through ``main(argv)`` and once as a real process.

Queries run against the local server; ``responses`` stands in only for what PouchDB Server
cannot answer (401 for a server without admins, 429). Ground truth is always the documents
the test inserted and the times it chose for them.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import responses
from faultproxy import FaultProxy
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1
from kuuid_node import KuuidNode

import couchids
from couchids.cli import reading
from couchids.cli.main import EXIT_BAD_INPUT, EXIT_OK, EXIT_SERVER, main, parse_time
from couchids.core.pages import DEFAULT_PARALLEL
from couchids.core.windows import DEFAULT_PAGE_SIZE
from couchids.errors import InvalidTimeError
from couchids.idforms.forms import KUUID, KUUID_MS, KUUID_MS_REVERSE, KUUID_REVERSE, V7S, IdForm
from couchids.idforms.times import now_ms, to_ms

HOUR_MS = 3_600_000
# kuuid's README: an id made at 2018-01-01T00:00:00Z starts with this prefix.
PREFIX_2018 = "001eVnWK"
KUUID_2018_USER = "user:001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn"
PASSWORD = "pa55-Wr0ng-s3cret"
APIKEY = "k3y-0f-n0-acc0unt-XYZ"


# -- helpers ----------------------------------------------------------------------------------


class Run:
    """What one ``main(argv)`` call returned and printed."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    @property
    def json(self) -> list[Any]:
        return [json.loads(line) for line in self.lines]

    def error_line(self) -> str:
        """The one error line; fails unless stderr holds exactly one ``couchids: error:`` line."""
        lines = self.err.splitlines()
        assert len(lines) == 1, self.err
        assert lines[0].startswith("couchids: error: "), self.err
        assert "Traceback" not in self.err
        return lines[0]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Any:
    def call(*argv: str) -> Run:
        code = main(list(argv))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return call


@pytest.fixture(autouse=True)
def no_server_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No configuration from this machine: ibmcloudant also reads credentials files and VCAP."""
    for name in list(os.environ):
        if name.startswith("CLOUDANT_") or name in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def server(couch_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The local server, configured the way a user would: CLOUDANT_URL and noauth."""
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    return couch_url


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def iso(ms: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)).isoformat()


def insert(client: CloudantV1, db: str, docs: list[dict[str, Any]]) -> None:
    result = client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
    assert all("error" not in row for row in result), result


def make_docs(
    form: IdForm, doc_type: str | None, times: list[int], label: str
) -> list[dict[str, Any]]:
    """One document per time, its id made at that time; ``made`` records the time."""
    return [
        {"_id": form.new(ms, type=doc_type), "made": ms, "label": label, "n": i}
        for i, ms in enumerate(times)
    ]


def strip_rev(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in doc.items() if k != "_rev"} for doc in docs]


@pytest.fixture
def seeded(client: CloudantV1, db: str) -> dict[str, Any]:
    """Users, orders and untyped documents spread over 2024-01-01, plus a design document."""
    base = to_ms("2024-01-01")
    users = make_docs(KUUID, "user", [base + i * HOUR_MS for i in range(7)], "user")
    orders = make_docs(KUUID, "order", [base + i * HOUR_MS + 1000 for i in range(4)], "order")
    plain = make_docs(KUUID, None, [base + i * HOUR_MS + 2000 for i in range(3)], "plain")
    design = [{"_id": "_design/x", "views": {}}]
    insert(client, db, [*users, *orders, *plain, *design])
    return {"db": db, "base": base, "user": users, "order": orders, "plain": plain}


def newest_first(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(docs, key=lambda doc: doc["made"], reverse=True)


# -- parse_time -------------------------------------------------------------------------------

NOW = 1_714_566_600_250  # 2024-05-01T12:30:00.250Z


@pytest.mark.parametrize(
    ("text", "ago_ms"),
    [
        ("now", 0),
        ("0s", 0),
        ("45s", 45_000),
        ("90m", 90 * 60_000),
        ("24h", 24 * HOUR_MS),
        ("24H", 24 * HOUR_MS),
        (" 7d ", 7 * 24 * HOUR_MS),
        ("2w", 14 * 24 * HOUR_MS),
    ],
)
def test_parse_time_counts_back_from_now(text: str, ago_ms: int) -> None:
    assert parse_time(text, NOW) == NOW - ago_ms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01", "2024-05-01T00:00:00+00:00"),
        ("2024-05-01T12:30:00Z", "2024-05-01T12:30:00+00:00"),
        ("2024-05-01T14:30:00.5+02:00", "2024-05-01T12:30:00.500000+00:00"),
        ("2024-05-01t12:30:00z", "2024-05-01T12:30:00+00:00"),
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999000+00:00"),
    ],
)
def test_parse_time_reads_iso(text: str, expected: str) -> None:
    assert iso(parse_time(text, NOW)) == expected


@pytest.mark.parametrize("text", ["yesterday", "24", "h", "-3h", "1.5h", "3y", "24 hours", ""])
def test_parse_time_refuses_and_lists_what_it_takes(text: str) -> None:
    with pytest.raises(InvalidTimeError) as caught:
        parse_time(text, NOW)
    assert "ISO-8601" in str(caught.value) and "24h" in str(caught.value)


def test_parse_time_refuses_a_second_60_that_is_no_leap_second() -> None:
    with pytest.raises(InvalidTimeError, match="leap second, which comes only at 23:59:60 UTC"):
        parse_time("2024-05-01T12:30:60Z", NOW)


def test_parse_time_refuses_before_1970() -> None:
    with pytest.raises(InvalidTimeError, match="1970"):
        parse_time("3000w", NOW)
    with pytest.raises(InvalidTimeError, match="1970"):
        parse_time("1969-12-31", NOW)


# -- new --------------------------------------------------------------------------------------


def test_new_at_2018_gives_distinct_ids_with_krs_prefix(run: Any) -> None:
    result = run("new", "--at", "2018-01-01", "-n", "3")
    assert result.code == EXIT_OK and result.err == ""
    assert len(result.lines) == 3 and len(set(result.lines)) == 3
    assert all(line.startswith(PREFIX_2018) and len(line) == 32 for line in result.lines)


def test_new_default_is_one_kuuid_made_now(run: Any) -> None:
    before = now_ms() // 1000 * 1000
    made = run("new")
    after = now_ms()
    assert made.code == EXIT_OK and len(made.lines) == 1
    (info,) = run("decode", made.lines[0]).json
    assert info["form"] == "kuuid" and info["type"] is None
    stamp = to_ms(info["timestamp"])
    assert before <= stamp <= after


@pytest.mark.parametrize(
    ("flags", "form", "kind", "reverse", "millisecond", "stamp"),
    [
        ([], "kuuid", "kuuid", False, False, "2024-05-01T12:30:00Z"),
        (["--reverse"], "kuuid-reverse", "kuuid", True, False, "2024-05-01T12:30:00Z"),
        (["--ms"], "kuuid-ms", "kuuid", False, True, "2024-05-01T12:30:00.250Z"),
        (
            ["--ms", "--reverse"],
            "kuuid-ms-reverse",
            "kuuid",
            True,
            True,
            "2024-05-01T12:30:00.250Z",
        ),
        (["--short"], "kuuid-short", "kuuid", False, False, "2024-05-01T12:30:00Z"),
        (
            ["--short", "--reverse"],
            "kuuid-short-reverse",
            "kuuid",
            True,
            False,
            "2024-05-01T12:30:00Z",
        ),
        (["--v7"], "v7", "v7", False, True, "2024-05-01T12:30:00.250Z"),
        (["--v7s"], "v7s", "v7s", False, True, "2024-05-01T12:30:00.250Z"),
    ],
)
def test_new_in_each_form_decodes_to_its_type_form_and_time(
    run: Any,
    flags: list[str],
    form: str,
    kind: str,
    reverse: bool,
    millisecond: bool,
    stamp: str,
) -> None:
    made = run("new", *flags, "--type", "user", "-n", "4", "--at", "2024-05-01T12:30:00.250Z")
    assert made.code == EXIT_OK and len(set(made.lines)) == 4
    assert all(line.startswith("user:") for line in made.lines)
    decoded = run("decode", *made.lines)
    assert decoded.code == EXIT_OK and decoded.err == ""
    expected = {
        "type": "user",
        "timestamp": stamp,
        "form": form,
        "kind": kind,
        "reverse": reverse,
        "millisecond": millisecond,
    }
    for line, info in zip(made.lines, decoded.json, strict=True):
        assert info == {"id": line, **expected}


def test_new_at_a_time_ago(run: Any) -> None:
    before = now_ms() - 90 * 60_000
    made = run("new", "--ms", "--at", "90m")
    after = now_ms() - 90 * 60_000
    stamp = to_ms(run("decode", *made.lines).json[0]["timestamp"])
    assert before <= stamp <= after


def test_new_n_zero_prints_nothing(run: Any) -> None:
    result = run("new", "-n", "0")
    assert (result.code, result.out, result.err) == (EXIT_OK, "", "")


# -- decode -----------------------------------------------------------------------------------


def test_decode_known_kuuid_id(run: Any) -> None:
    result = run("decode", KUUID_2018_USER)
    assert result.code == EXIT_OK
    assert result.json == [
        {
            "id": KUUID_2018_USER,
            "type": "user",
            "timestamp": "2018-01-01T00:00:00Z",
            "form": "kuuid",
            "kind": "kuuid",
            "reverse": False,
            "millisecond": False,
        }
    ]


def test_decode_ids_made_by_kuuid_itself(run: Any, kuuid_node: KuuidNode) -> None:
    ms = NOW
    calls = [("id", ms), ("idr", ms), ("ids", ms), ("idsr", ms), ("idms", ms), ("idmsr", ms)]
    ids = kuuid_node.make(calls)
    result = run("decode", *ids)
    assert result.code == EXIT_OK
    got = [(info["form"], info["timestamp"]) for info in result.json]
    assert got == [
        ("kuuid", "2024-05-01T12:30:00Z"),
        ("kuuid-reverse", "2024-05-01T12:30:00Z"),
        ("kuuid-short", "2024-05-01T12:30:00Z"),
        ("kuuid-short-reverse", "2024-05-01T12:30:00Z"),
        ("kuuid-ms", "2024-05-01T12:30:00.250Z"),
        ("kuuid-ms-reverse", "2024-05-01T12:30:00.250Z"),
    ]


def test_decode_reads_stdin_when_given_no_ids(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    v7s_id = V7S.new("2024-05-01T12:30:00.250Z", type="order")
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{KUUID_2018_USER}\n\n  {v7s_id}  \n"))
    result = run("decode")
    assert result.code == EXIT_OK
    assert [(i["id"], i["form"], i["timestamp"]) for i in result.json] == [
        (KUUID_2018_USER, "kuuid", "2018-01-01T00:00:00Z"),
        (v7s_id, "v7s", "2024-05-01T12:30:00.250Z"),
    ]


def test_decode_without_ids_on_a_terminal_says_what_it_wants(
    run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", FakeTerminal(KUUID_2018_USER + "\n"))
    result = run("decode")
    assert result.code == EXIT_BAD_INPUT and result.out == ""
    assert "stdin" in result.error_line()


def test_decode_reports_each_bad_id_and_decodes_the_rest(run: Any) -> None:
    result = run("decode", "not-an-id", KUUID_2018_USER, "_bad:001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn")
    assert result.code == EXIT_BAD_INPUT
    assert [info["id"] for info in result.json] == [KUUID_2018_USER]
    errors = result.err.splitlines()
    assert len(errors) == 2 and all(line.startswith("couchids: error: ") for line in errors)
    assert "'not-an-id'" in errors[0] and "_bad:" in errors[1]
    assert "Traceback" not in result.err


def test_decode_flags_choose_the_reading(run: Any) -> None:
    # A reverse millisecond id of 1990 has no reading in 2000-2100: only the flags can read it.
    old = KUUID_MS_REVERSE.new("1990-06-01T08:00:00.125Z")
    assert run("decode", old).code == EXIT_BAD_INPUT
    result = run("decode", "--reverse", "--ms", old)
    assert result.code == EXIT_OK
    assert result.json[0]["timestamp"] == "1990-06-01T08:00:00.125Z"
    assert result.json[0]["form"] == "kuuid-ms-reverse"
    # And --forward/--seconds rule the true reading out.
    assert run("decode", "--forward", "--seconds", old).code == EXIT_BAD_INPUT


def test_decode_refuses_opposite_flags(run: Any) -> None:
    result = run("decode", "--reverse", "--forward", KUUID_2018_USER)
    assert result.code == EXIT_BAD_INPUT and result.out == ""
    assert "--forward" in result.error_line()


@pytest.mark.parametrize(
    ("doc_id", "form"),
    [
        ("abcdefg", "seq36"),
        ("user:hello12", "seq36"),
        ("5551234567", "seq10"),
        ("aH8609vI7eP05X4Gc3QFvw", "uuid464"),  # a random token, as token_urlsafe(16) makes
    ],
)
def test_decode_reads_forms_without_a_time_only_when_named(
    run: Any, doc_id: str, form: str
) -> None:
    refused = run("decode", doc_id)
    assert refused.code == EXIT_BAD_INPUT and refused.out == ""
    line = refused.error_line()
    assert "holds no time" in line and f"--form {form}" in line
    named = run("decode", "--form", form, doc_id)
    assert named.code == EXIT_OK
    assert named.json[0]["form"] == form
    assert (named.json[0]["timestamp"], named.json[0]["millisecond"]) == (None, None)


def test_decode_says_the_same_of_a_short_body_after_any_type(run: Any) -> None:
    lines = [run("decode", doc_id).error_line() for doc_id in ("user:admin", "order:admin")]
    assert lines[0].replace("'user:admin'", "ID") == lines[1].replace("'order:admin'", "ID")
    assert "this one has 5" in lines[0]


# -- latest and window against the server -----------------------------------------------------


def test_latest_newest_of_a_type(run: Any, server: str, seeded: dict[str, Any]) -> None:
    result = run("latest", seeded["db"], "-n", "3", "--type", "user")
    assert result.code == EXIT_OK and result.err == ""
    assert strip_rev(result.json) == strip_rev(newest_first(seeded["user"])[:3])
    assert all(doc["_rev"].startswith("1-") for doc in result.json)


def test_latest_default_untyped_and_more_than_exist(
    run: Any, server: str, seeded: dict[str, Any]
) -> None:
    result = run("latest", seeded["db"], "-n", "50")
    assert result.code == EXIT_OK
    assert strip_rev(result.json) == strip_rev(newest_first(seeded["plain"]))


def test_latest_in_another_form(run: Any, server: str, client: CloudantV1, db: str) -> None:
    base = to_ms("2024-03-01")
    docs = make_docs(KUUID_REVERSE, "event", [base + i * 1000 for i in range(5)], "event")
    insert(client, db, docs)
    result = run("latest", db, "-n", "2", "--type", "event", "--reverse")
    assert strip_rev(result.json) == strip_rev(newest_first(docs)[:2])
    # Read as forward ids, reverse ids are foreign: no document.
    assert run("latest", db, "-n", "2", "--type", "event").json == []


@pytest.mark.parametrize("order", [[], ["--oldest-first"]])
def test_window_between_two_times(
    run: Any, server: str, seeded: dict[str, Any], order: list[str]
) -> None:
    base = seeded["base"]
    since, until = iso(base + HOUR_MS), iso(base + 5 * HOUR_MS)
    result = run(
        "window", seeded["db"], "--since", since, "--until", until, "--type", "user", *order
    )
    assert result.code == EXIT_OK and result.err == ""
    inside = [d for d in seeded["user"] if base + HOUR_MS <= d["made"] < base + 5 * HOUR_MS]
    expected = newest_first(inside)
    if order:
        expected.reverse()
    assert len(expected) == 4
    assert strip_rev(result.json) == strip_rev(expected)


@pytest.mark.parametrize("page_size", ["1", "2", "3", "1000"])
def test_window_ids_only_pages_through_everything(
    run: Any, server: str, seeded: dict[str, Any], page_size: str
) -> None:
    result = run(
        "window",
        seeded["db"],
        "--since",
        "2023-12-31",
        "--until",
        "2024-01-02",
        "--type",
        "order",
        "--ids-only",
        "--oldest-first",
        "--batch-size",
        page_size,
    )
    assert result.code == EXIT_OK
    assert result.lines == [doc["_id"] for doc in sorted(seeded["order"], key=lambda d: d["made"])]


@pytest.mark.parametrize(("parallel", "page_size"), [("1", "200"), ("6", "20")])
def test_window_reads_as_many_slices_at_a_time_as_parallel_says(
    run: Any,
    server: str,
    client: CloudantV1,
    db: str,
    monkeypatch: pytest.MonkeyPatch,
    parallel: str,
    page_size: str,
) -> None:
    # Each _all_docs request waits at the proxy for a second one (or half a second): page
    # after page, none ever has company; six slices keep more in flight than the default.
    start = to_ms("2024-03-01")
    docs = [{"_id": KUUID_MS.new(start + k * 1000, type="ord")} for k in range(600)]
    insert(client, db, docs)
    with FaultProxy(server) as proxy:
        # Six slices are first held until more than the default's are in hand at once.
        crowd = 2 if parallel == "1" else DEFAULT_PARALLEL + 2
        proxy.hold_for_company("_all_docs", seconds=0.5, crowd=crowd)
        monkeypatch.setenv("CLOUDANT_URL", proxy.url)
        result = run(
            "window",
            db,
            "--since",
            iso(start),
            "--until",
            iso(start + 600_000),
            "--type",
            "ord",
            "--ms",
            "--ids-only",
            "--oldest-first",
            "--parallel",
            parallel,
            "--batch-size",
            page_size,
        )
    assert result.code == EXIT_OK
    assert result.lines == [doc["_id"] for doc in docs]
    if parallel == "1":
        assert proxy.most_in_flight == 1
    else:
        assert DEFAULT_PARALLEL + 1 < proxy.most_in_flight <= int(parallel) + 1


@pytest.mark.parametrize("command", ["latest", "window"])
def test_latest_and_window_ride_out_a_lost_answer(
    run: Any,
    server: str,
    client: CloudantV1,
    db: str,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    start = to_ms("2024-03-01")
    docs = [{"_id": KUUID_MS.new(start + k * 1000, type="ord")} for k in range(3)]
    insert(client, db, docs)
    with FaultProxy(server) as proxy:
        for method in ("GET", "POST"):
            proxy.fail("503-before", method=method, path=f"^/{db}/_all_docs")
        monkeypatch.setenv("CLOUDANT_URL", proxy.url)
        only = ["--since", iso(start), "--until", iso(start + 60_000), "--ids-only"]
        result = run(command, db, *(only if command == "window" else []), "--type", "ord", "--ms")
        assert "503-before" in [entry.outcome for entry in proxy.log]
    assert (result.code, result.err) == (EXIT_OK, "")
    ids = result.lines if command == "window" else [doc["_id"] for doc in result.json]
    assert sorted(ids) == [doc["_id"] for doc in docs]


def test_window_reads_the_library_pages_unless_told(
    run: Any, server: str, client: CloudantV1, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = to_ms("2024-03-01")
    docs = [{"_id": KUUID_MS.new(start + k * 1000, type="ord")} for k in range(4000)]
    insert(client, db, docs)
    reads = {}
    for flags in ([], ["--batch-size", str(DEFAULT_PAGE_SIZE)], ["--batch-size", "4000"]):
        with FaultProxy(server) as proxy:
            monkeypatch.setenv("CLOUDANT_URL", proxy.url)
            result = run(
                "window",
                db,
                *("--since", iso(start), "--until", iso(start + 4_000_000)),
                *("--type", "ord", "--ms", "--ids-only", "--oldest-first"),
                *flags,
            )
        assert result.code == EXIT_OK
        assert result.lines == [doc["_id"] for doc in docs]
        reads[" ".join(flags)] = len(proxy.requests("POST", f"/{db}/_all_docs"))
    # The command reads the pages the library reads (batch_size's default), and bigger ones
    # only when told.
    assert reads[""] == reads[f"--batch-size {DEFAULT_PAGE_SIZE}"] > reads["--batch-size 4000"]


def test_window_relative_times(run: Any, server: str, client: CloudantV1, db: str) -> None:
    now = now_ms()
    # Half-hour offsets keep every document away from the 24h and 2h edges.
    times = [now - HOUR_MS // 2 - k * HOUR_MS for k in range(30)]
    docs = make_docs(V7S, "log", times, "log")
    insert(client, db, docs)
    result = run("window", db, "--since", "24h", "--type", "log", "--v7s")
    assert strip_rev(result.json) == strip_rev(
        newest_first([d for d in docs if d["made"] >= now - 24 * HOUR_MS])
    )
    older = run(
        "window", db, "--since", "2w", "--until", "2h", "--type", "log", "--v7s", "--ids-only"
    )
    assert older.lines == [d["_id"] for d in newest_first(docs) if d["made"] < now - 2 * HOUR_MS]


def test_window_writes_each_document_as_the_server_sent_it(
    run: Any, server: str, client: CloudantV1, db: str
) -> None:
    # More than one block of output (64 KiB), text beyond ASCII, and a number beyond 64 bits.
    base = to_ms("2024-03-01")
    docs = [
        {"_id": couchids.id(base + k * 1000, type="note"), "text": f"Grüße, 東京 {k}" * 20}
        for k in range(300)
    ]
    docs[7]["big"] = 123456789012345678901234567890
    body = json.dumps({"docs": docs}).encode()
    assert client.post_bulk_docs(db=db, bulk_docs=body).get_status_code() == 201
    result = run(
        "window", db, "--since", iso(base), "--until", iso(base + 300_000), "--type", "note"
    )
    assert result.code == EXIT_OK and result.err == ""
    sent = client.post_all_docs_as_stream(db=db, include_docs=True).get_result().text
    expected = [row["doc"] for row in json.loads(sent)["rows"]]
    assert [json.loads(line) for line in result.lines] == expected[::-1]  # newest first
    assert len(result.out.encode()) > 1 << 16


def test_window_progress_on_a_terminal_only(
    run: Any, server: str, seeded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reading, "PROGRESS_EVERY", 2)
    argv = [
        "window",
        seeded["db"],
        "--since",
        "2024-01-01",
        "--until",
        "2024-01-02",
        "--type",
        "user",
    ]
    quiet = run(*argv)
    assert len(quiet.lines) == 7 and quiet.err == ""

    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    shown = run(*argv)
    assert len(shown.lines) == 7
    # Shown as pages come, each time another two documents are out; erased at the end.
    *counts, erase = [part for part in terminal.getvalue().split("\r") if part]
    shown = [int(re.fullmatch(r"couchids: (\d+) documents", part)[1]) for part in counts]
    assert shown and shown == sorted(set(shown)) and shown[-1] <= 7, counts
    assert all(b // 2 > a // 2 for a, b in itertools.pairwise([0, *shown])), counts
    assert erase == "\x1b[K"


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "mentions"),
    [
        (["new", "--v7", "--reverse"], "--reverse"),
        (["new", "--v7s", "--ms", "--short"], "--ms, --short"),
        (["new", "--v7", "--v7s"], "--v7s"),
        (["latest", "db", "--v7s", "--short"], "--short"),
        (["window", "db", "--since", "1h", "--v7", "--reverse"], "--reverse"),
        (["new", "-n", "-1"], "-n"),
        (["new", "--type", "_design"], "'_design'"),
        (["new", "--type", "a::b"], "'a::b'"),
        (["new", "--at", "yesterday"], "'yesterday'"),
        (["new", "--at", "1969-07-20"], "1970"),
        (["window", "db"], "--since"),
        (["window", "db", "--since", "1h", "--batch-size", "0"], "--batch-size"),
        (["window", "db", "--since", "1h", "--parallel", "0"], "--parallel"),
        (["latest"], "DB"),
        (["frobnicate"], "frobnicate"),
        ([], "COMMAND"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(run: Any, argv: list[str], mentions: str) -> None:
    result = run(*argv)
    assert result.code == EXIT_BAD_INPUT and result.out == ""
    assert mentions in result.error_line()


@pytest.mark.parametrize(
    "argv",
    [
        ["window", "DB", "--since", "last week"],
        ["window", "DB", "--since", "1h", "--until", "2h"],
        ["latest", "DB", "--type", "-bad type-"],
        ["window", "DB", "--since", "1h", "--type", "_users"],
    ],
)
def test_bad_input_with_a_server_is_exit_2(
    run: Any, server: str, seeded: dict[str, Any], argv: list[str]
) -> None:
    argv = [seeded["db"] if arg == "DB" else arg for arg in argv]
    result = run(*argv)
    assert result.code == EXIT_BAD_INPUT and result.out == ""
    result.error_line()


def test_help_and_version(run: Any) -> None:
    for command in ([], ["new"], ["decode"], ["latest"], ["window"]):
        shown = run(*command, "--help")
        assert shown.code == EXIT_OK and "examples:" in shown.out and "usage: couchids" in shown.out
    version = run("--version")
    assert (version.code, version.out.strip()) == (EXIT_OK, f"couchids {couchids.__version__}")


def test_no_server_configured(run: Any) -> None:
    result = run("latest", "orders")
    assert result.code == EXIT_BAD_INPUT
    line = result.error_line()
    assert "CLOUDANT_URL" in line and "CLOUDANT_AUTH_TYPE" in line and "noauth" in line


def test_url_without_auth_type_says_to_set_it(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # ibmcloudant then picks container authentication, which fails outside IBM Cloud.
    monkeypatch.setenv("CLOUDANT_URL", f"http://127.0.0.1:{closed_port()}")
    result = run("window", "orders", "--since", "1h")
    assert result.code == EXIT_BAD_INPUT
    assert "CLOUDANT_AUTH_TYPE is not set" in result.error_line()
    assert "noauth" in result.error_line()


def test_unknown_auth_type(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDANT_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "magic")
    result = run("latest", "orders")
    assert result.code == EXIT_BAD_INPUT and "'magic'" in result.error_line()


def test_unreachable_server(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("CLOUDANT_URL", url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    result = run("latest", "orders")
    assert result.code == EXIT_SERVER and result.out == ""
    line = result.error_line()
    assert "could not reach" in line and url in line


def test_missing_database(run: Any, server: str) -> None:
    for argv in (["latest", "no_such_db"], ["window", "no_such_db", "--since", "1d"]):
        result = run(*argv)
        assert result.code == EXIT_SERVER and result.out == ""
        assert "'no_such_db' does not exist" in result.error_line()


#: Every subcommand that takes the name of something on the server, given a name nothing
#: there has: what the one error line must say.
NOTHING_NAMED = [
    (["latest", "no_such_db"], "'no_such_db' does not exist"),
    (["window", "no_such_db", "--since", "1d"], "'no_such_db' does not exist"),
    (["count", "no_such_db", "--since", "1d"], "'no_such_db' does not exist"),
    (["count", "no_such_db", "--since", "1d", "--all-types"], "'no_such_db' does not exist"),
    (["histogram", "no_such_db", "--since", "1d"], "'no_such_db' does not exist"),
    (["export", "no_such_db", "--since", "1d"], "'no_such_db' does not exist"),
    (["expire", "no_such_db", "--before", "1d", "--type", "t"], "'no_such_db' does not exist"),
    (["expire", "no_such_db", "--before", "1d", "--type", "t", "--yes"], "'no_such_db' does"),
    (["tail", "no_such_db"], "'no_such_db' does not exist"),
    (["rekey", "no_such_db", "other_db"], "'no_such_db' does not exist"),
    (["rekey", "no_such_db", "other_db", "--create-target"], "'no_such_db' does not exist"),
    (["latest", "--series", "no_such", "--period", "day"], "'no_such' of days"),
    (["count", "--series", "no_such", "--period", "week", "--since", "1d"], "'no_such' of ISO"),
    (["series", "list", "no_such", "--period", "month"], "'no_such' of months"),
    (["series", "expire", "no_such", "--period", "year", "--before", "1d"], "'no_such' of years"),
    (["replicate", "no_such_db", "other_db", "--since", "1d"], "'no_such_db'"),
    (["replication", "couchids-no-such-id"], "no replication 'couchids-no-such-id'"),
    (["replication", "couchids-no-such-id", "--cancel"], "no replication 'couchids-no-such"),
]


@pytest.mark.parametrize(
    ("argv", "says"), NOTHING_NAMED, ids=[" ".join(argv) for argv, _ in NOTHING_NAMED]
)
def test_a_name_nothing_on_the_server_has_is_never_a_success(
    run: Any,
    server: str,
    client: CloudantV1,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    says: str,
) -> None:
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "a secret")

    def databases() -> list[str]:  # CouchDB makes _users and _replicator when it likes
        return [name for name in client.get_all_dbs().get_result() if not name.startswith("_")]

    before = databases()
    result = run(*argv)
    assert (result.code, result.out) == (EXIT_SERVER, "")
    line = result.error_line()
    assert says in line and "check CLOUDANT_URL" not in line
    # Nothing was made for the name: no database, no _replicator document.
    assert databases() == before
    assert not Path("rekey-mapping.ndjson").exists()


@pytest.mark.needs("couchdb")
def test_a_cancelled_replication_is_no_unknown_one(
    run: Any, server: str, client: CloudantV1
) -> None:
    # A cancelled replication leaves its deleted document: showing and cancelling it again
    # succeed (cancelling twice is no error); only an id never written is refused. CouchDB
    # only: PouchDB Server's replicator ends its process when a running job's document is
    # deleted (an uncaught not_found), which takes every later test of the process with it.
    doc_id = f"couchids-test-{uuid.uuid4().hex}"
    body = {"source": "http://127.0.0.1:9/a", "target": "http://127.0.0.1:9/b"}
    with contextlib.suppress(ApiException):
        client.put_database(db="_replicator")
    client.put_document(db="_replicator", doc_id=doc_id, document=body).get_result()
    for _ in range(20):  # the server's replicator may write its state into it meanwhile
        rev = client.get_document(db="_replicator", doc_id=doc_id).get_result()["_rev"]
        try:
            client.delete_document(db="_replicator", doc_id=doc_id, rev=rev).get_result()
            break
        except ApiException as error:
            assert error.status_code == 409
    shown = run("replication", doc_id)
    assert (shown.code, shown.err) == (EXIT_OK, "")
    assert shown.json[0]["state"] == "cancelled"
    again = run("replication", doc_id, "--cancel")
    assert (again.code, again.json) == (EXIT_OK, [{"replication": doc_id, "cancelled": False}])


def test_guidance_in_a_message_is_never_masked(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The URL pattern a message gives is no URL with credentials, and the help's examples
    # (https://bob:secret@...) are printed as written.
    monkeypatch.setenv("CLOUDANT_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    line = run("replicate", "shop", "ftp://host/db", "--since", "1d").error_line()
    assert "http(s)://[user:password@]host[:port]/db" in line and "***" not in line
    helped = run("replicate", "--help")
    assert "https://bob:secret@backup.example.com/shop" in helped.out and "***" not in helped.out


LOOPBACK = "http://127.0.0.1:59841"


@responses.activate
def test_wrong_credentials(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDANT_URL", LOOPBACK)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "basic")
    monkeypatch.setenv("CLOUDANT_USERNAME", "bob")
    monkeypatch.setenv("CLOUDANT_PASSWORD", PASSWORD)
    responses.get(
        f"{LOOPBACK}/orders",
        status=401,
        json={"error": "unauthorized", "reason": "Name or password is incorrect."},
    )
    result = run("latest", "orders")
    assert result.code == EXIT_SERVER and result.out == ""
    assert "401" in result.error_line() and "CLOUDANT_PASSWORD" in result.error_line()
    # The credentials were sent (so the 401 was an answer to them), and never shown.
    assert str(responses.calls[0].request.headers["Authorization"]).startswith("Basic ")
    assert PASSWORD not in result.err


@responses.activate
@pytest.mark.parametrize("command", ["window", "latest"])
def test_rate_limited(run: Any, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    monkeypatch.setenv("CLOUDANT_URL", LOOPBACK)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    responses.get(f"{LOOPBACK}/orders", json={"db_name": "orders", "props": {}})
    responses.post(
        f"{LOOPBACK}/orders/_all_docs",
        status=429,
        json={"error": "too_many_requests", "reason": "You've exceeded your rate limit allowance."},
    )
    since = ["--since", "1d"] if command == "window" else []
    result = run(command, "orders", *since, "--timeout", "1")
    assert result.code == EXIT_SERVER and result.out == ""
    line = result.error_line()
    assert "rate limited" in line and f"{command} on 'orders'" in line
    # The advice is the command's: its flag, never the library's couchids.connect(rate=...).
    assert "give it a longer --timeout, run fewer commands" in line
    assert "couchids.connect" not in line and "rate=" not in line


# Every credential a configuration can hold, placed where an error message could pick it up.
@pytest.mark.parametrize(
    "setting",
    [
        {"CLOUDANT_URL": f"http://bob:{PASSWORD}@127.0.0.1:PORT", "CLOUDANT_AUTH_TYPE": "noauth"},
        {"CLOUDANT_URL": f"http://bob:{PASSWORD}@127.0.0.1:PORT"},
        {
            "CLOUDANT_URL": f"http://bob:{PASSWORD}@127.0.0.1:PORT",
            "CLOUDANT_AUTH_TYPE": "wrong",
        },
        {
            "CLOUDANT_URL": "http://127.0.0.1:PORT",
            "CLOUDANT_AUTH_TYPE": "couchdb_session",
            "CLOUDANT_USERNAME": "bob",
            "CLOUDANT_PASSWORD": PASSWORD,
        },
        {
            # The IAM token service is pointed at loopback too: nothing leaves the machine.
            "CLOUDANT_URL": "http://127.0.0.1:PORT",
            "CLOUDANT_AUTH_TYPE": "iam",
            "CLOUDANT_APIKEY": APIKEY,
            "CLOUDANT_AUTH_URL": "http://127.0.0.1:PORT",
        },
    ],
)
def test_credentials_never_printed_when_unreachable(
    run: Any, monkeypatch: pytest.MonkeyPatch, setting: dict[str, str]
) -> None:
    port = str(closed_port())
    for name, value in setting.items():
        monkeypatch.setenv(name, value.replace("PORT", port))
    result = run("window", "orders", "--since", "1d")
    assert result.code in (EXIT_SERVER, EXIT_BAD_INPUT)
    result.error_line()
    for secret in (PASSWORD, APIKEY, f"bob:{PASSWORD}"):
        assert secret not in result.err and secret not in result.out


@responses.activate
@pytest.mark.parametrize("auth", ["basic", "url"])
def test_credentials_masked_even_when_the_server_echoes_them(
    run: Any, monkeypatch: pytest.MonkeyPatch, auth: str
) -> None:
    # A server (or proxy) that repeats what it was sent puts the secret into the error reason.
    url = LOOPBACK
    if auth == "basic":
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "basic")
        monkeypatch.setenv("CLOUDANT_USERNAME", "bob")
        monkeypatch.setenv("CLOUDANT_PASSWORD", PASSWORD)
    else:
        # requests sends the user:password of a URL as Basic authentication (and keeps it in
        # the URL it matches against).
        url = LOOPBACK.replace("//", f"//bob:{PASSWORD}@")
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    monkeypatch.setenv("CLOUDANT_URL", url)
    responses.get(
        f"{url}/orders",
        status=403,
        json={"error": "forbidden", "reason": f"user bob with password {PASSWORD} may not read"},
    )
    result = run("latest", "orders")
    assert result.code == EXIT_SERVER
    line = result.error_line()
    assert "403" in line and "password ***" in line
    assert str(responses.calls[0].request.headers["Authorization"]).startswith("Basic ")
    assert PASSWORD not in result.err


class BrokenPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_broken_pipe_exits_quietly(
    run: Any, server: str, seeded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", BrokenPipe())
    for argv in (
        ["new", "-n", "5"],
        [
            "window",
            seeded["db"],
            "--since",
            "2024-01-01",
            "--until",
            "2024-01-02",
            "--type",
            "user",
        ],
    ):
        result = run(*argv)
        assert (result.code, result.err) == (EXIT_OK, "")


# -- as a real process ------------------------------------------------------------------------


def command() -> list[str]:
    """The installed console script next to this Python, else ``python -m couchids``."""
    script = Path(sys.executable).with_name("couchids")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "couchids"]


def process_env(extra: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CLOUDANT_") and k != "VCAP_SERVICES"
    }
    return {**env, "NO_PROXY": "127.0.0.1,localhost", **extra}


def test_real_process_against_the_server(
    couch_url: str, seeded: dict[str, Any], tmp_path: Path
) -> None:
    env = process_env({"CLOUDANT_URL": couch_url, "CLOUDANT_AUTH_TYPE": "noauth"})

    def couchids_run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command(), *argv], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )

    latest_run = couchids_run("latest", seeded["db"], "-n", "3", "--type", "user")
    assert latest_run.returncode == 0 and latest_run.stderr == ""
    got = [json.loads(line) for line in latest_run.stdout.splitlines()]
    assert strip_rev(got) == strip_rev(newest_first(seeded["user"])[:3])

    base = seeded["base"]
    window_run = couchids_run(
        "window",
        seeded["db"],
        "--since",
        iso(base),
        "--until",
        iso(base + 3 * HOUR_MS),
        "--type",
        "order",
        "--ids-only",
        "--oldest-first",
    )
    assert window_run.returncode == 0 and window_run.stderr == ""
    assert window_run.stdout.splitlines() == [
        d["_id"]
        for d in sorted(seeded["order"], key=lambda d: d["made"])
        if d["made"] < base + 3 * HOUR_MS
    ]

    missing = couchids_run("latest", "no_such_db")
    assert missing.returncode == EXIT_SERVER
    assert missing.stdout == "" and missing.stderr.startswith("couchids: error: ")
    assert len(missing.stderr.splitlines()) == 1


def test_real_process_stops_quietly_when_the_reader_does(tmp_path: Path) -> None:
    # Far more than a pipe buffers: the command is still writing when the reader goes away.
    process = subprocess.Popen(
        [*command(), "new", "-n", "200000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=process_env({}),
        cwd=tmp_path,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=60) == 0
    assert len(first.strip()) == 32 and err == b""


def test_python_dash_m(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "couchids", "decode", KUUID_2018_USER],
        env=process_env({}),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["timestamp"] == "2018-01-01T00:00:00Z"


# -- every form by name ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "sep"),
    [("tid62", "-"), ("base36_v7", "_"), ("ulid", ":"), ("utc_random", ":")],
)
def test_new_and_decode_every_form_by_name(run: Any, name: str, sep: str) -> None:
    made = run(
        "new", "--form", name, "--sep", sep, "--type", "acct", "-n", "3", "--at", "2025-06-01"
    )
    assert made.code == EXIT_OK and len(set(made.lines)) == 3
    assert all(line.startswith("acct" + sep) for line in made.lines)
    decoded = run("decode", "--form", name, "--sep", sep, *made.lines)
    assert decoded.code == EXIT_OK, decoded.err
    for info in decoded.json:
        assert (info["type"], info["form"]) == ("acct", name)
        assert info["timestamp"].startswith("2025-06-01T00:00:00")


def test_form_names_and_old_flags_do_not_mix(run: Any) -> None:
    assert run("new", "--form", "tid62", "--ms").code == 2
    assert run("new", "--form", "nope").code == 2
    assert run("new", "--sep", "-").code == 2
    assert "kuuid-ms" in run("new", "--form", "nope").err
    # The old flags still work.
    assert run("decode", "--ms", run("new", "--ms").lines[0]).json[0]["millisecond"] is True


def test_latest_and_window_by_form_name_and_across_types(
    run: Any, server: str, client: CloudantV1, db: str
) -> None:
    base = to_ms("2024-03-01")
    form = couchids.TID62.with_separator("-")
    ids = {form.new(base + i * 1000, type=f"k{i % 3}"): base + i * 1000 for i in range(9)}
    insert(client, db, [{"_id": i} for i in ids] + [{"_id": "_design/x"}, {"_id": "k1-nope"}])
    newest = sorted(ids, key=ids.__getitem__, reverse=True)
    got = run("latest", db, "-n", "4", "--form", "tid62", "--sep", "-", "--all-types")
    assert [d["_id"] for d in got.json] == newest[:4]
    one = run("latest", db, "-n", "9", "--form", "tid62", "--sep", "-", "--type", "k1")
    assert [d["_id"] for d in one.json] == [i for i in newest if i.startswith("k1-")]
    win = run(
        "window", db, "--since", iso(base + 2000), "--until", iso(base + 7000),
        "--form", "tid62", "--sep", "-", "--all-types", "--ids-only", "--oldest-first",
    )  # fmt: skip
    assert win.lines == [i for i in newest[::-1] if base + 2000 <= ids[i] < base + 7000]
    assert run("latest", db, "--all-types", "--type", "k1").code == 2
