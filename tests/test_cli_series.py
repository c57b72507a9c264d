"""The command line of a series: ``couchids series list|prepare|expire`` and ``--series PREFIX
--period PERIOD`` in place of ``DB`` on the reading subcommands, run through ``main(argv)``
against every test server.

A series of days (``test_<hex>-2026-03-01`` ...) holds documents over five days of March 2026,
the 3rd without a database (a missing period in the middle), written with couchids.Series:
``r`` documents at the edges of each day and in between, and untyped ones. What the command
prints must be what the library answers and what the test wrote; ``series expire`` must change
nothing as a dry run and, with ``--yes``, drop exactly the databases of the whole days before
the cutoff and delete exactly the older documents of the day holding it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids.cli.main import EXIT_BAD_INPUT, EXIT_OK, EXIT_SERVER, main
from couchids.core.periods import period_of
from couchids.idforms.times import now_ms, to_ms

SECOND = 1000
HOUR = 3600 * SECOND
DAY = 24 * HOUR
#: The days with documents (2026-03-03 has none, so no database).
DAYS = [to_ms(f"2026-03-0{n}") for n in (1, 2, 4, 5)]
#: The offsets in each day of its ``r`` documents, and of its untyped one.
TYPED = [0, 6 * HOUR, 12 * HOUR, DAY - SECOND]
UNTYPED = [9 * HOUR]


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Any:
    def call(*argv: str) -> Run:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return call


@pytest.fixture(autouse=True)
def no_server_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No configuration from this machine: ibmcloudant also reads credentials files and VCAP."""
    import os

    for name in list(os.environ):
        if name.startswith("CLOUDANT_") or name in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def server(couch_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    return couch_url


def series_dbs(client: CloudantV1, prefix: str) -> list[str]:
    names: list[str] = client.get_all_dbs().get_result()
    return sorted(name for name in names if name.startswith(prefix + "-"))


@pytest.fixture
def prefix(client: CloudantV1) -> Iterator[str]:
    """A series prefix of this test alone; every database of it is dropped afterwards."""
    name = f"test_{uuid.uuid4().hex}"
    yield name
    every: list[str] = client.get_all_dbs().get_result()
    for db in (db for db in every if db.startswith(name)):
        try:
            client.delete_database(db=db)
        except ApiException as error:
            if error.status_code != 404:
                raise


@pytest.fixture
def seeded(client: CloudantV1, prefix: str) -> dict[str, Any]:
    """The documents of the module docstring, written through couchids.Series; the truth."""
    series = couchids.Series(client, prefix, every="day")
    typed = [{"at": day + offset, "kind": "r"} for day in DAYS for offset in TYPED]
    plain = [{"at": day + offset, "kind": "plain"} for day in DAYS for offset in UNTYPED]
    made = series.bulk_create(typed, type="r", time_of=lambda doc: doc["at"])
    made += series.bulk_create(plain, time_of=lambda doc: doc["at"])
    docs = [{**doc, "_id": result.id} for doc, result in zip(typed + plain, made, strict=True)]
    return {"series": series, "docs": docs}


def ids(client: CloudantV1, db: str) -> set[str]:
    rows = client.post_all_docs(db=db).get_result()["rows"]
    return {row["id"] for row in rows}


def name(prefix: str, day: str) -> str:
    return f"{prefix}-2026-03-{day}"


SERIES = ("--period", "day")


# -- couchids series list / prepare ------------------------------------------------------------


def test_list_is_the_series_databases_oldest_first(
    run: Any, server: str, prefix: str, seeded: dict[str, Any], client: CloudantV1
) -> None:
    # A database of another series whose prefix starts the same, and one of months: not listed.
    for other in (f"{prefix}-x-2026-03-01", f"{prefix}-2026-03"):
        client.put_database(db=other)
    listed = run("series", "list", prefix, *SERIES)
    assert (listed.code, listed.err) == (EXIT_OK, "")
    assert listed.lines == [name(prefix, d) for d in ("01", "02", "04", "05")]
    assert listed.lines == seeded["series"].databases()
    as_json = run("series", "list", prefix, *SERIES, "--json")
    rows = [json.loads(line) for line in as_json.lines]
    assert rows[0] == {
        "db": name(prefix, "01"),
        "start": "2026-03-01T00:00:00Z",
        "end": "2026-03-02T00:00:00Z",
    }
    assert [row["db"] for row in rows] == listed.lines
    months = run("series", "list", prefix, "--period", "month")
    assert months.lines == [f"{prefix}-2026-03"]


NO_DATABASES = (
    "couchids: error: the series '{prefix}' of {kind} (named like {prefix}-{named}) has no "
    "databases on this server (couchids series prepare {prefix} --period {period} creates "
    "them)\n"
)


def test_list_of_a_series_without_databases_fails(run: Any, server: str, prefix: str) -> None:
    # Nothing on the server has the name: that is no empty success (a misspelt prefix, the
    # wrong --period), as a missing database is not.
    listed = run("series", "list", prefix, "--period", "week")
    assert (listed.code, listed.out) == (EXIT_SERVER, "")
    assert listed.err == NO_DATABASES.format(
        prefix=prefix, kind="ISO weeks", named="2026-w48", period="week"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["latest", "-n", "3"],
        ["window", "--since", "2026-03-01"],
        ["count", "--since", "2026-03-01"],
        ["count", "--since", "2026-03-01", "--all-types"],
        ["histogram", "--since", "2026-03-01", "--every", "1d"],
        ["export", "--since", "2026-03-01"],
    ],
    ids=lambda argv: argv[0] + ("-all-types" if "--all-types" in argv else ""),
)
def test_every_read_of_a_series_without_databases_fails(
    run: Any, server: str, prefix: str, argv: list[str]
) -> None:
    command, *rest = argv
    result = run(command, "--series", prefix, "--period", "month", *rest)
    assert (result.code, result.out) == (EXIT_SERVER, "")
    assert result.err == NO_DATABASES.format(
        prefix=prefix, kind="months", named="2026-11", period="month"
    )


def test_expire_of_a_series_without_databases_fails(run: Any, server: str, prefix: str) -> None:
    for yes in ([], ["--yes"]):
        result = run("series", "expire", prefix, *SERIES, "--before", "1d", *yes)
        assert (result.code, result.out) == (EXIT_SERVER, "")
        assert result.err == NO_DATABASES.format(
            prefix=prefix, kind="days", named="2026-11-25", period="day"
        )


def test_prepare_makes_the_current_and_next_periods_once(
    run: Any, server: str, prefix: str, client: CloudantV1
) -> None:
    def expected() -> list[str]:
        period = period_of("day", now_ms())
        names = [f"{prefix}-{period.suffix}"]
        for _ in range(2):
            period = period.following()
            names.append(f"{prefix}-{period.suffix}")
        return names

    before = expected()
    made = run("series", "prepare", prefix, *SERIES, "--ahead", "2")
    assert (made.code, made.err) == (EXIT_OK, "")
    assert made.lines in (before, expected())  # (the day may end meanwhile)
    assert series_dbs(client, prefix) == made.lines
    again = run("series", "prepare", prefix, *SERIES, "--ahead", "2")
    assert again.code == EXIT_OK and again.lines in (made.lines, expected())
    assert run("series", "list", prefix, *SERIES).lines == series_dbs(client, prefix)
    assert run("series", "prepare", prefix, "--period", "year", "--ahead", "0").lines == [
        f"{prefix}-{period_of('year', now_ms()).suffix}"
    ]


def test_prepare_warns_on_stderr_near_max_databases(
    run: Any, server: str, prefix: str, client: CloudantV1
) -> None:
    """``--max-databases N`` is ``Series(max_databases=N)``: prepare counts the server's
    databases and warns (one line on stderr, in the command's words, exit status 0) when no
    more than ``--ahead`` more can be made; with room to spare it says nothing."""
    others = len(client.get_all_dbs().get_result())
    roomy = run("series", "prepare", prefix, *SERIES, "--ahead", "2", "--max-databases", "100000")
    assert (roomy.code, roomy.err) == (EXIT_OK, "") and len(roomy.lines) == 3
    # The three databases are made; the cap leaves room for one more, within --ahead 2.
    cap = others + 4
    near = run("series", "prepare", prefix, *SERIES, "--ahead", "2", "--max-databases", str(cap))
    assert near.code == EXIT_OK and near.lines in (roomy.lines, series_dbs(client, prefix)[-3:])
    (line,) = near.err.splitlines()
    assert line.startswith(f"couchids: warning: series {prefix!r} of days: the server holds ")
    held = len(client.get_all_dbs().get_result())
    assert f"holds {held} databases and allows {cap} (--max-databases {cap})" in line
    assert f"{cap - held} more can be created" in line
    bad = run("series", "prepare", prefix, *SERIES, "--max-databases", "0")
    assert bad.code == EXIT_BAD_INPUT and "--max-databases" in bad.err


@pytest.mark.needs("couchdb")
def test_prepare_partitioned(run: Any, server: str, prefix: str, client: CloudantV1) -> None:
    made = run("series", "prepare", prefix, "--period", "month", "--partitioned")
    assert made.code == EXIT_OK and len(made.lines) == 2
    for db in made.lines:
        info = client.get_database_information(db=db).get_result()
        assert info["props"].get("partitioned") is True


# -- couchids series expire ---------------------------------------------------------------------


def test_expire_is_a_dry_run_unless_yes(
    run: Any, server: str, prefix: str, seeded: dict[str, Any], client: CloudantV1
) -> None:
    dbs = series_dbs(client, prefix)
    held = {db: ids(client, db) for db in dbs}
    cutoff = "2026-03-04T12:00:00Z"
    boundary = name(prefix, "04")
    # The boundary day loses its r documents of 00:00 and 06:00 and its untyped one of 09:00.
    older = {
        doc["_id"] for doc in seeded["docs"] if to_ms("2026-03-04") <= doc["at"] < to_ms(cutoff)
    }
    assert len(older) == 3

    plan = run("series", "expire", prefix, *SERIES, "--before", cutoff)
    assert (plan.code, plan.err) == (EXIT_OK, "")
    assert plan.lines == [
        f"would drop {name(prefix, '01')}",
        f"would drop {name(prefix, '02')}",
        f"would delete 3 documents of {boundary} made before 2026-03-04T12:00:00Z",
        "would drop 2 databases and delete 3 documents (dry run; --yes drops and deletes them)",
    ]
    assert {db: ids(client, db) for db in series_dbs(client, prefix)} == held

    done = run("series", "expire", prefix, *SERIES, "--before", cutoff, "--yes")
    assert (done.code, done.err) == (EXIT_OK, "")
    assert done.lines == [
        f"dropped {name(prefix, '01')}",
        f"dropped {name(prefix, '02')}",
        f"deleted 3 documents of {boundary} made before 2026-03-04T12:00:00Z",
        "dropped 2 databases, deleted 3, already gone 0, purged 0",
    ]
    assert series_dbs(client, prefix) == [boundary, name(prefix, "05")]
    assert ids(client, boundary) == held[boundary] - older
    assert ids(client, name(prefix, "05")) == held[name(prefix, "05")]

    again = run("series", "expire", prefix, *SERIES, "--before", cutoff, "--yes")
    assert again.code == EXIT_OK
    assert again.lines == [
        f"deleted 0 documents of {boundary} made before 2026-03-04T12:00:00Z",
        "dropped 0 databases, deleted 0, already gone 0, purged 0",
    ]
    assert series_dbs(client, prefix) == [boundary, name(prefix, "05")]


def test_expire_names_the_ids_whose_time_it_cannot_read_and_keeps_them(
    run: Any, server: str, prefix: str, seeded: dict[str, Any], client: CloudantV1
) -> None:
    boundary, cutoff = name(prefix, "04"), "2026-03-04T12:00:00Z"
    client.put_document(db=boundary, doc_id="import-7", document={})
    for flags in ((), ("--yes",)):
        done = run("series", "expire", prefix, *SERIES, "--before", cutoff, *flags)
        assert done.code == 1
        assert done.err == "couchids: no time the series can read, kept: import-7\n"
        assert f"documents of {boundary} made before" in done.lines[-2]
    assert "import-7" in ids(client, boundary)


def test_expire_drops_no_ended_period_holding_an_id_whose_time_it_cannot_read(
    run: Any, server: str, prefix: str, seeded: dict[str, Any], client: CloudantV1
) -> None:
    """Such a period was dropped with the id, the dry run silent: it is expired id by id."""
    ended, cutoff = name(prefix, "02"), "2026-03-04T12:00:00Z"
    client.put_document(db=ended, doc_id="user:profile-42", document={})
    for flags in ((), ("--yes",)):
        done = run("series", "expire", prefix, *SERIES, "--before", cutoff, *flags)
        assert done.code == 1, done.err
        assert done.err == "couchids: no time the series can read, kept: user:profile-42\n"
        assert not any(line.endswith(ended) for line in done.lines), done.lines
        assert any(f"documents of {ended} made before" in line for line in done.lines)
    assert ids(client, ended) == {"user:profile-42"}


# -- the reading subcommands on a series --------------------------------------------------------

SINCE, UNTIL = "2026-03-01T12:00:00Z", "2026-03-05T06:00:01Z"


def test_window_across_periods_is_the_library_answer(
    run: Any, server: str, prefix: str, seeded: dict[str, Any]
) -> None:
    series = seeded["series"]
    truth = sorted(
        (doc for doc in seeded["docs"] if doc["kind"] == "r"),
        key=lambda doc: doc["at"],
    )
    truth = [doc for doc in truth if to_ms(SINCE) <= doc["at"] < to_ms(UNTIL)]
    assert len(truth) == 12
    window = ("--since", SINCE, "--until", UNTIL, "--type", "r")
    newest = run("window", "--series", prefix, *SERIES, *window)
    assert (newest.code, newest.err) == (EXIT_OK, "")
    docs = [json.loads(line) for line in newest.lines]
    assert docs == list(series.window(SINCE, UNTIL, type="r"))
    assert [doc["_id"] for doc in docs] == [doc["_id"] for doc in reversed(truth)]
    oldest = run("window", "--series", prefix, *SERIES, *window, "--oldest-first", "--ids-only")
    assert oldest.lines == [doc["_id"] for doc in truth]
    # Pages of one row: still every document once, in order, across the periods.
    paged = run("window", "--series", prefix, *SERIES, *window, "--batch-size", "1", "--ids-only")
    assert paged.lines == [doc["_id"] for doc in reversed(truth)]


def test_count_histogram_latest_export_are_the_library_answers(
    run: Any, server: str, prefix: str, seeded: dict[str, Any]
) -> None:
    series = seeded["series"]
    window = ("--since", SINCE, "--until", UNTIL)
    counted = run("count", "--series", prefix, *SERIES, *window, "--type", "r")
    assert (counted.code, counted.out) == (EXIT_OK, "12\n")
    assert series.count(SINCE, UNTIL, type="r") == 12
    untyped = run("count", "--series", prefix, *SERIES, *window)
    assert untyped.out == "2\n"  # 2 and 4 March at 09:00

    days = run(
        "histogram", "--series", prefix, *SERIES, *window, "--type", "r", "--every", "1d",
        "--format", "json",
    )  # fmt: skip
    assert days.code == EXIT_OK
    buckets = [json.loads(line) for line in days.lines]
    # The library's buckets: the first starts at SINCE (12:00, so half a day: nothing made
    # before SINCE is counted), the next at midnights, as for one database.
    library = series.histogram(SINCE, UNTIL, every="1d", type="r")
    assert [b["count"] for b in buckets] == [b.count for b in library] == [2, 4, 0, 4, 2]
    assert [b["start"] for b in buckets[:2]] == [SINCE, "2026-03-02T00:00:00Z"]
    assert buckets[0]["end"] == "2026-03-02T00:00:00Z"

    newest = run("latest", "--series", prefix, *SERIES, "-n", "6", "--type", "r")
    assert newest.code == EXIT_OK
    assert [json.loads(line) for line in newest.lines] == series.latest(6, type="r")
    assert len(newest.lines) == 6

    exported = run("export", "--series", prefix, *SERIES, *window, "--type", "r")
    assert (exported.code, exported.err) == (EXIT_OK, "")
    lines = [json.loads(line) for line in exported.lines]
    assert [doc["_id"] for doc in lines] == [
        doc["_id"] for doc in series.window(SINCE, UNTIL, type="r", newest_first=False)
    ]
    # --after resumes in whichever period the id lies.
    half = lines[4]["_id"]
    rest = run("export", "--series", prefix, *SERIES, *window, "--type", "r", "--after", half)
    assert [json.loads(line) for line in rest.lines] == lines[5:]
    as_csv = run("export", "--series", prefix, *SERIES, *window, "--type", "r", "--csv", "_id,at")
    assert as_csv.lines[0] == "_id,at" and len(as_csv.lines) == 13


def test_empty_answers_from_a_series_say_why(
    run: Any, server: str, prefix: str, seeded: dict[str, Any], client: CloudantV1
) -> None:
    outside = run(
        "window", "--series", prefix, *SERIES, "--since", "2026-02-01", "--until", "2026-02-10"
    )
    assert (outside.code, outside.out) == (EXIT_OK, "")
    assert outside.err == (
        f"couchids: note: no database of the series '{prefix}' of days (named like "
        f"{prefix}-2026-11-25) holds a time from 2026-02-01T00:00:00Z to "
        f"2026-02-10T00:00:00Z: it has {name(prefix, '01')} to {name(prefix, '05')}\n"
    )
    # Ids of the type r, asked for as ULIDs: the newest database read says what it holds.
    other_form = run(
        "count", "--series", prefix, *SERIES, "--since", SINCE, "--until", UNTIL,
        "--type", "r", "--form", "ulid",
    )  # fmt: skip
    assert (other_form.code, other_form.out) == (EXIT_OK, "0\n")
    assert other_form.err.startswith("couchids: note: ")
    assert name(prefix, "05") in other_form.err and other_form.err.count("\n") == 1


# -- usage errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "mentions"),
    [
        (["window", "--since", "1d"], "give a database DB, or a series"),
        (["count", "--since", "1d"], "give a database DB, or a series"),
        (["window", "db", "--series", "ev", "--period", "day", "--since", "1d"], "not both"),
        (["latest", "--series", "ev"], "--series needs --period"),
        (["histogram", "db", "--period", "day", "--since", "1d"], "--period needs --series"),
        (["export", "--series", "ev", "--period", "fortnight", "--since", "1d"], "fortnight"),
        (["window", "--series", "Events", "--period", "day", "--since", "1d"], "'Events'"),
        (["latest", "--series", "ev", "--period", "day", "--form", "seq10"], "seq10"),
        (["window", "--series", "ev", "--period", "day", "--since", "soon"], "'soon'"),
        (["series"], "COMMAND"),
        (["series", "list", "ev"], "--period"),
        (["series", "list", "ev", "--period", "fortnight"], "fortnight"),
        (["series", "list", "1events", "--period", "month"], "'1events'"),
        (["series", "prepare", "ev", "--period", "day", "--ahead", "367"], "'367'"),
        (["series", "prepare", "ev", "--period", "day", "--ahead", "-1"], "'-1'"),
        (["series", "expire", "ev", "--period", "day"], "--before"),
        (["series", "expire", "ev", "--period", "day", "--before", "soon"], "'soon'"),
        (["series", "expire", "ev", "--period", "day", "--before", "1d", "--v7", "--ms"], "--v7"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(run: Any, argv: list[str], mentions: str) -> None:
    # Refused before a server is needed: none is configured here.
    result = run(*argv)
    assert (result.code, result.out) == (EXIT_BAD_INPUT, "")
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("couchids: error: "), result.err
    assert mentions in lines[0] and "no server is configured" not in lines[0]


def test_bad_input_creates_and_drops_nothing(
    run: Any, server: str, prefix: str, seeded: dict[str, Any], client: CloudantV1
) -> None:
    dbs = series_dbs(client, prefix)
    fresh = f"{prefix}y"
    for argv in (
        ["series", "prepare", fresh, *SERIES, "--ahead", "400"],
        ["series", "prepare", fresh.upper(), *SERIES],
        ["series", "expire", prefix, *SERIES, "--before", "soon", "--yes"],
        ["series", "expire", prefix, *SERIES, "--before", "1d", "--yes", "--form", "seq10"],
        ["series", "expire", prefix.upper(), *SERIES, "--before", "1d", "--yes"],
    ):
        result = run(*argv)
        assert result.code == EXIT_BAD_INPUT and result.err.startswith("couchids: error: ")
        assert result.err.count("\n") == 1 and result.out == "", argv
    assert series_dbs(client, prefix) == dbs
    assert series_dbs(client, fresh) == []
