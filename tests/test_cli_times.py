"""The command's TIME and duration flags read as the library reads times (tests/test_times.py):
a TIME without an offset is local time, in the zone of the process (TZ); no plain numbers;
durations in units (``tail --for 2s``); and every bad value is one line naming its flag."""

from __future__ import annotations

import subprocess
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1
from test_cli import command, process_env
from test_query import insert

import couchids
from couchids.cli.main import EXIT_BAD_INPUT, EXIT_OK, main

MAY_1 = datetime(2024, 5, 1, tzinfo=UTC)
#: Times around May 1 2024 UTC: which of them fall on May 1 depends on the zone.
AROUND = [MAY_1 + timedelta(hours=h) for h in (-7, -3, 12, 20, 23, 26, 30)]


@pytest.fixture
def server(couch_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")


def on_may_1(zone: ZoneInfo | None) -> int:
    return sum(m.astimezone(zone or UTC).date() == date(2024, 5, 1) for m in AROUND)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["export", "shop", "--since", ""], "--since"),
        (["count", "shop", "--since", "24h", "--until", "nope"], "--until"),
        (["window", "shop", "--since", "yesterday"], "--since"),
        (["expire", "shop", "--before", "2024-13-01", "--type", "t"], "--before"),
        (["new", "--at", ""], "--at"),
        (["tail", "shop", "--since", "x"], "--since"),
        (["count", "shop", "--since", "99999d"], "--since"),
        (["window", "shop", "--since", "1714521600"], "--since"),  # a plain number
        (["tail", "shop", "--for", "soon"], "--for"),
        (["tail", "shop", "--for", "0s"], "--for"),
        (["histogram", "shop", "--since", "1d", "--every", "1hour"], "--every"),
        (["histogram", "shop", "--since", "1d", "--every", "0s"], "--every"),
        (["latest", "shop", "--timeout", "-1m"], "--timeout"),
        (["replicate", "shop", "copy", "--since", "1.5h"], "--since"),
        (
            ["expire", "--series", "events", "--period", "month", "--before", ""],
            "--before",
        ),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else value,
)
def test_a_bad_time_or_duration_is_one_line_naming_its_flag(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("couchids: error: "), err
    assert flag in err and "Traceback" not in err and "object at 0x" not in err
    assert "timedelta" not in err  # the library's words, not the command's


def test_a_plain_number_is_refused_as_a_guess(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "--at", "1714521600"]) == EXIT_BAD_INPUT
    assert "plain number" in capsys.readouterr().err


def test_tail_for_takes_units(server: None, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    # --for 2s waits two seconds for documents that do not come, then stops as asked.
    assert main(["tail", db, "--type", "t", "--for", "2s"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out == "" and "error" not in err


@pytest.mark.parametrize("since", ["2024-05-01", "2024-05-01T00:00:00", "2024-05-01 00:00"])
def test_a_time_without_offset_is_local_time_in_the_process(
    client: CloudantV1, db: str, couch_url: str, tmp_path: Path, local_zone: str, since: str
) -> None:
    insert(client, db, [couchids.id(moment, type="order") for moment in AROUND])
    env = process_env({"CLOUDANT_URL": couch_url, "CLOUDANT_AUTH_TYPE": "noauth", "TZ": local_zone})

    def count(*window: str) -> int:
        done = subprocess.run(
            [*command(), "count", db, "--type", "order", *window],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == EXIT_OK and done.stderr == "", done.stderr
        return int(done.stdout)

    local, utc = on_may_1(ZoneInfo(local_zone)), on_may_1(None)
    assert local != utc
    until = since.replace("-01", "-02", 1)
    assert count("--since", since, "--until", until) == local
    assert count("--since", "2024-05-01T00:00:00Z", "--until", "2024-05-02T00:00:00Z") == utc

    made = subprocess.run(
        [*command(), "new", "--at", "2024-05-01T12:00"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == EXIT_OK
    noon = datetime(2024, 5, 1, 12, tzinfo=ZoneInfo(local_zone))
    assert couchids.decode(made.stdout.strip()).timestamp == noon
