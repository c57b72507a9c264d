"""The lifecycle subcommands of ``couchids``, run through main() against the local server."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import drop_database, fresh_database
from faultproxy import FaultProxy, all_docs
from ibmcloudant.cloudant_v1 import CloudantV1
from test_counting import by_offset
from test_expiry import populate
from test_query import insert

import couchids
from couchids import KUUID, V7S
from couchids.cli import lifecycle
from couchids.cli.main import EXIT_BAD_INPUT, main
from couchids.core.keys import window_keys
from couchids.core.pages import DEFAULT_PARALLEL
from couchids.idforms.times import to_ms

SINCE, UNTIL = "2024-04-30T12:00:00Z", "2024-05-02T12:00:00Z"


@pytest.fixture
def server(couch_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_count_and_histogram_print_the_windows_number_among_child_ids(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """couchids count and histogram print what window prints: child documents
    (order:<id>:line1) and ids of other forms are left out; --index-only counts every id of
    the key range on CouchDB (PouchDB Server reads the ids there too)."""
    at = to_ms("2024-05-01")
    made = [KUUID.new(at + k * 60_000, type="order") for k in range(30)]
    others = [V7S.new(at + k * 60_000, type="order") for k in range(5)]
    ids = [*made, *(i + ":line1" for i in made), *others]
    insert(client, db, ids)
    keys = window_keys(KUUID, "order", at, to_ms("2024-05-02"))
    assert keys is not None
    in_range = sum(1 for i in ids if keys.low <= i < keys.high)
    assert in_range > len(made)  # the children
    window = ["--since", "2024-05-01", "--until", "2024-05-02", "--type", "order"]
    assert run(capsys, "count", db, *window) == (0, "30\n", "")
    status, out, _ = run(capsys, "histogram", db, *window, "--every", "6h", "--format", "csv")
    assert status == 0 and out.splitlines()[1:] == [
        "2024-05-01T00:00:00Z,2024-05-01T06:00:00Z,30",
        "2024-05-01T06:00:00Z,2024-05-01T12:00:00Z,0",
        "2024-05-01T12:00:00Z,2024-05-01T18:00:00Z,0",
        "2024-05-01T18:00:00Z,2024-05-02T00:00:00Z,0",
    ]
    status, out, _ = run(capsys, "count", db, *window, "--index-only")
    assert (status, int(out)) == (0, in_range if by_offset(client) else len(made))


def test_count_histogram_export_expire(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doomed = populate(client, db, KUUID, 60)
    status, out, _ = run(capsys, "count", db, "--since", SINCE, "--until", UNTIL, "--type", "ord")
    total = int(out)
    window = couchids.Database(client, db).window(SINCE, UNTIL, type="ord", include_docs=False)
    assert status == 0 and total == len(list(window)) > 0
    status, out, _ = run(
        capsys,
        "histogram",
        db,
        "--since",
        SINCE,
        "--until",
        UNTIL,
        "--type",
        "ord",
        "--every",
        "1d",
        "--format",
        "json",
    )
    days = [json.loads(line) for line in out.splitlines()]
    # The library's buckets: the first starts at SINCE (half a day), as counted.
    assert status == 0 and len(days) == 3 and days[0]["start"] == SINCE
    assert [d["end"] for d in days] == [
        "2024-05-01T00:00:00Z",
        "2024-05-02T00:00:00Z",
        "2024-05-02T12:00:00Z",
    ]
    library = couchids.Database(client, db).histogram(SINCE, UNTIL, every="1d", type="ord")
    assert [d["count"] for d in days] == [b.count for b in library]
    assert sum(d["count"] for d in days) == total
    status, out, _ = run(
        capsys,
        "histogram",
        db,
        "--since",
        SINCE,
        "--until",
        UNTIL,
        "--type",
        "ord",
        "--format",
        "csv",
        "--index-only",
    )
    assert out.splitlines()[0] == "start,end,count" and len(out.splitlines()) == 49
    status, out, err = run(
        capsys, "export", db, "--since", SINCE, "--until", UNTIL, "--type", "ord"
    )
    lines = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and err == ""  # no progress bar when not on a terminal
    half = lines[len(lines) // 2]["_id"]
    status, rest, _ = run(
        capsys, "export", db, "--since", SINCE, "--until", UNTIL, "--type", "ord", "--after", half
    )
    assert [json.loads(line) for line in rest.splitlines()] == lines[len(lines) // 2 + 1 :]
    before = set(all_docs(client, db))
    status, out, _ = run(capsys, "expire", db, "--before", "2024-05-01T12:00:00Z", "--type", "ord")
    assert status == 0 and f"would delete {len(doomed)}" in out
    assert set(all_docs(client, db)) == before
    status, out, _ = run(
        capsys, "expire", db, "--before", "2024-05-01T12:00:00Z", "--type", "ord", "--yes"
    )
    assert status == 0 and f"deleted {len(doomed)}" in out
    assert set(all_docs(client, db)) == before - doomed


def test_tail_prints_the_type_as_json_lines(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    populate(client, db, KUUID, 61)
    status, out, _ = run(capsys, "tail", db, "--type", "ord", "--since-seq", "0")
    ids = [json.loads(line)["_id"] for line in out.splitlines()]
    assert status == 0 and ids and all(i.startswith("ord:") for i in ids)


def test_tail_since_a_time_prints_the_ids_from_that_time(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tail --since TIME`` is ``follow(since=TIME)``: the documents whose id holds that time
    or a later one, oldest first, whenever they were stored; not with ``--since-seq``."""
    at = to_ms("2024-05-01T12:00:00Z")
    handle = couchids.Database(client, db)
    made = [handle.create({"n": n}, type="ord", timestamp=at + n * 60_000).id for n in (-1, 0, 2)]
    handle.create({"n": 9}, type="other", timestamp=at)
    status, out, err = run(capsys, "tail", db, "--type", "ord", "--since", "2024-05-01T12:00:00Z")
    assert (status, err) == (0, "")
    assert [json.loads(line)["_id"] for line in out.splitlines()] == made[1:]
    status, _, err = run(capsys, "tail", db, "--since", "1h", "--since-seq", "0")
    assert status == 2 and "--since TIME or --since-seq SEQ" in err


def test_tail_stopped_says_the_since_seq_to_continue_with(
    server: None,
    client: CloudantV1,
    db: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C prints the checkpoint's ``since_seq`` as ``--since-seq``; before a follow since a
    time has a sequence, the same command."""
    handle = couchids.Database(client, db)
    for n in range(5):
        handle.create({"n": n}, type="ord")
    write = lifecycle._write_docs
    reads = iter([True, False])

    def interrupted(docs: Any, limit: int | None, deadline: float | None) -> int:
        if next(reads):
            write(docs, limit, deadline)
        raise KeyboardInterrupt

    monkeypatch.setattr(lifecycle, "_write_docs", interrupted)
    status, out, err = run(capsys, "tail", db, "--type", "ord", "--since-seq", "0")
    assert status == 130 and len(out.splitlines()) == 5
    seq = err.split("continue with --since-seq ")[1].strip()
    status, _, err = run(capsys, "tail", db, "--type", "ord", "--since", "1h")
    assert status == 130 and "continue with the same command" in err
    monkeypatch.setattr(lifecycle, "_write_docs", write)
    made = [handle.create({"n": n}, type="ord").id for n in (5, 6)]
    status, out, _ = run(capsys, "tail", db, "--type", "ord", "--since-seq", seq)
    assert status == 0 and [json.loads(line)["_id"] for line in out.splitlines()] == sorted(made)


def test_failures_are_one_line(server: None, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "count", "test_missing_db", "--since", "1d", "--type", "x")
    assert status == 1 and err.count("\n") == 1 and "does not exist" in err
    status, _, err = run(capsys, "histogram", "x", "--since", "1d", "--every", "soon")
    assert status == 2 and err.count("\n") == 1


@pytest.mark.parametrize("parallel", ["1", None])
def test_export_reads_as_many_slices_at_a_time_as_parallel_says(
    couch_url: str,
    client: CloudantV1,
    db: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    parallel: str | None,
) -> None:
    # Each _all_docs request waits at the proxy for a second one (or half a second): page
    # after page, none ever has company.
    start = to_ms("2024-05-01")
    ids = [KUUID.new(start + k * 30_000, type="ord") for k in range(3000)]
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": i} for i in ids]}).get_result()
    slices = [] if parallel is None else ["--parallel", parallel]
    with FaultProxy(couch_url) as proxy:
        proxy.hold_for_company("_all_docs", seconds=0.5)
        monkeypatch.setenv("CLOUDANT_URL", proxy.url)
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
        status, out, _ = run(
            capsys, "export", db, "--since", SINCE, "--until", UNTIL, "--type", "ord", *slices
        )
    assert status == 0 and [json.loads(line)["_id"] for line in out.splitlines()] == ids
    if parallel is None:
        assert 1 < proxy.most_in_flight <= DEFAULT_PARALLEL + 1
    else:
        assert proxy.most_in_flight == 1


def test_histogram_buckets_are_the_librarys(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # --since 7d (now, less seven days) and --every 1d: the first bucket starts at --since,
    # so that nothing older is counted, and the others at UTC midnights.
    status, out, _ = run(
        capsys, "histogram", db, "--since", "7d", "--every", "1d", "--format", "json"
    )
    days = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and len(days) in (8, 7)  # 7: now is a UTC midnight
    assert all(day["start"].endswith("T00:00:00Z") for day in days[1:])
    assert [day["end"] for day in days[:-1]] == [day["start"] for day in days[1:]]
    status, out, _ = run(
        capsys, "histogram", db, "--since", "3h", "--every", "15m", "--format", "csv"
    )
    starts = [line.split(",")[0] for line in out.splitlines()[1:]]
    assert status == 0 and all(start[14:16] in ("00", "15", "30", "45") for start in starts[1:])
    assert all(start.endswith(":00Z") for start in starts[1:])


def test_histogram_bars_line_up_after_a_partial_first_bucket(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # --since 3h starts the first bucket at now less three hours, to the millisecond: its
    # label is as long as it needs (milliseconds, not microseconds), and the counts line up.
    status, out, _ = run(capsys, "histogram", db, "--since", "3h", "--every", "1h")
    lines = out.splitlines()
    assert status == 0 and len(lines) in (3, 4), out
    assert re.fullmatch(r"\S+T\d\d:\d\d:\d\d(\.\d{3})?Z", lines[0].split()[0]), lines[0]
    columns = {re.match(r"\S+ +\d+", line).end() for line in lines}  # type: ignore[union-attr]
    assert len(columns) == 1, out


def test_weekly_histogram_weeks_start_on_monday(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # 2024-05-02 is a Thursday, as 1970-01-01 was: a week from it is no bucket's edge.
    at = [to_ms(t) for t in ("2024-05-02", "2024-05-05T23:59:59Z", "2024-05-06", "2024-05-13")]
    client.post_bulk_docs(
        db=db, bulk_docs={"docs": [{"_id": KUUID.new(t, type="w")} for t in at]}
    ).get_result()
    window = ("--since", "2024-05-02", "--until", "2024-05-20", "--type", "w")
    status, out, _ = run(capsys, "histogram", db, *window, "--every", "1w", "--format", "json")
    weeks = [json.loads(line) for line in out.splitlines()]
    assert status == 0
    assert [(w["start"], w["count"]) for w in weeks] == [
        ("2024-05-02T00:00:00Z", 2),
        ("2024-05-06T00:00:00Z", 1),
        ("2024-05-13T00:00:00Z", 1),
    ]
    library = couchids.Database(client, db).histogram(
        "2024-05-02", "2024-05-20", every="1w", type="w"
    )
    assert [w["start"] for w in weeks] == [
        b.start.isoformat().replace("+00:00", "Z") for b in library
    ]


def test_count_all_types_counts_every_type_as_latest_reads_them(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    at = to_ms("2024-05-01T12:00:00Z")
    ids = [KUUID.new(at + k * 1000, type=t) for t in ("a", "b") for k in range(3)]
    ids += [KUUID.new(at), "_design/x"]
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": i} for i in ids]}).get_result()
    window = ("--since", "2024-05-01", "--until", "2024-05-02")
    status, out, err = run(capsys, "count", db, *window, "--all-types")
    assert (status, out, err) == (0, "6\n", "")
    status, out, _ = run(capsys, "count", db, *window)
    assert (status, out) == (0, "1\n")
    status, _, err = run(capsys, "count", db, *window, "--all-types", "--type", "a")
    assert status == 2 and err.count("\n") == 1 and "--all-types" in err


def test_tail_stops_after_limit_documents(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    populate(client, db, KUUID, 62)
    status, out, _ = run(capsys, "tail", db, "--type", "ord", "--since-seq", "0", "--limit", "3")
    assert status == 0 and len(out.splitlines()) == 3
    # Also while following: PouchDB Server would hold the long poll open for ever after.
    tail = ("tail", db, "--type", "ord", "--since-seq", "0")
    status, out, _ = run(capsys, *tail, "-f", "--limit", "2")
    assert status == 0 and len(out.splitlines()) == 2


def test_tail_for_a_while_prints_what_arrives_and_stops(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Documents keep arriving, one every 0.2 s, for as long as the tail runs, so that some
    # arrive after it started however slowly it starts on a busy machine.
    made: list[str] = []
    done = threading.Event()

    def write_while_tailing() -> None:
        while not done.is_set():
            doc_id = KUUID.new(type="ord")
            client.put_document(db=db, doc_id=doc_id, document={"_id": doc_id}).get_result()
            made.append(doc_id)
            time.sleep(0.2)

    writer = threading.Thread(target=write_while_tailing)
    began = time.monotonic()
    writer.start()
    try:
        status, out, err = run(capsys, "tail", db, "--type", "ord", "--for", "3")
    finally:
        done.set()
        writer.join()
    took = time.monotonic() - began
    assert (status, err) == (0, "")
    seen = [json.loads(line)["_id"] for line in out.splitlines()]
    # What it printed arrived while it ran: written ids, each once.
    assert seen and len(set(seen)) == len(seen) and set(seen) <= set(made)
    # It waits its time, and not for ever (generous: the machine may be busy).
    assert 3 <= took < 60


def test_tail_for_nothing(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    began = time.monotonic()
    assert run(capsys, "tail", db, "--for", "1") == (0, "", "")
    assert 1 <= time.monotonic() - began < 30


@pytest.mark.parametrize(
    "argv", [["--for", "soon"], ["--for", "0"], ["--for", "1.5m"], ["--limit", "0"]]
)
def test_tail_refuses_bad_limits(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "tail", "db", *argv)
    assert status == 2 and out == "" and err.count("\n") == 1 and argv[1] in err


def test_rekey_creates_its_target_when_asked_and_says_where_the_mapping_goes(
    server: None,
    client: CloudantV1,
    db: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "a secret")
    client.put_document(db=db, doc_id="a1", document={"created": "2024-05-01T08:00:00Z"})
    target = db + "_new"
    argv = ["rekey", db, target, "--time-field", "created", "--type", "order"]
    try:
        status, out, err = run(capsys, *argv)
        assert status == 1 and out == "" and f"'{target}' does not exist" in err
        assert target not in client.get_all_dbs().get_result()
        assert not (tmp_path / "rekey-mapping.ndjson").exists()  # nothing written, no file
        status, out, err = run(capsys, *argv, "--create-target")
        assert (status, out) == (0, "copied 1, already there 0, skipped 0, refused 0\n")
        assert err == "couchids: old and new ids appended to rekey-mapping.ndjson\n"
        (line,) = (tmp_path / "rekey-mapping.ndjson").read_text().splitlines()
        assert json.loads(line)["old"] == "a1"
        assert list(all_docs(client, target)) == [json.loads(line)["new"]]
    finally:
        client.delete_database(db=target)
    _, helped, _ = run(capsys, "rekey", "--help")
    assert "--create-target" in helped
    assert "rekey-mapping.ndjson in the current directory" in " ".join(helped.split())


def test_ctrl_c_in_an_export_prints_where_to_resume(
    server: None,
    client: CloudantV1,
    db: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C after the first batch: what was exported is out, the exit status is 130, and the
    --after ID printed resumes with the rest."""
    handle = couchids.Database(client, db)
    made = sorted(handle.create({"n": n}, type="ord").id for n in range(5))  # export's order
    moved = lifecycle._Bar.__call__

    def interrupted(bar: Any, mark: object) -> None:
        moved(bar, mark)
        raise KeyboardInterrupt

    monkeypatch.setattr(lifecycle._Bar, "__call__", interrupted)
    argv = ["export", db, "--since", "1h", "--type", "ord", "--batch-size", "2", "--parallel", "1"]
    status, out, err = run(capsys, *argv)
    done = [json.loads(line)["_id"] for line in out.splitlines()]
    assert status == 130 and done == made[:2], (out, err)
    assert err == f"couchids: stopped after 2 documents; resume with --after {made[1]}\n"
    monkeypatch.setattr(lifecycle._Bar, "__call__", moved)
    status, out, _ = run(capsys, *argv, "--after", made[1])
    assert status == 0 and [json.loads(line)["_id"] for line in out.splitlines()] == made[2:]


def test_rekey_names_its_flags_in_what_it_could_not_copy(
    server: None,
    client: CloudantV1,
    db: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "a secret")
    client.put_document(db=db, doc_id="a1", document={"created": "2024-05-01T08:00:00Z"})
    target = db + "_new"
    try:
        status, _, err = run(capsys, "rekey", db, target, "--create-target")
    finally:
        client.delete_database(db=target)
    assert status == 0 and "not copied: a1: " in err, err
    assert "give --time-field" in err and "time_field" not in err, err


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "--since", "1d", "--after", "notanid"],
        ["expire", "--before", "1d", "--type", "ev", "--after", "order:001xX0kr4L1mds3"],
    ],
    ids=["export", "expire"],
)
def test_a_refused_after_is_named_as_the_flag(
    server: None, db: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(capsys, argv[0], db, *argv[1:])
    assert status == EXIT_BAD_INPUT, err
    assert f"--after '{argv[-1]}' is no" in err and "leave out --after" in err, err
    assert "checkpoint" not in err, err


def test_an_after_of_another_database_is_refused(
    server: None, client: CloudantV1, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The --after another database's export printed skipped this one's documents before it."""
    populate(client, db, KUUID, 61)
    other = fresh_database(client)
    try:
        populate(client, other, KUUID, 62)
        window = ["--since", SINCE, "--until", UNTIL, "--type", "ord"]
        _, theirs, _ = run(capsys, "export", other, *window)
        lines = theirs.splitlines()
        foreign = json.loads(lines[len(lines) // 2])["_id"]
        for argv in (
            ["export", db, *window, "--after", foreign],
            ["expire", db, "--before", UNTIL, "--type", "ord", "--yes", "--after", foreign],
        ):
            before = set(all_docs(client, db))
            status, out, err = run(capsys, *argv)
            assert status == EXIT_BAD_INPUT and out == "", (out, err)
            assert f"--after {foreign!r} is no document of {db!r}" in err, err
            assert "leave out --after" in err and "checkpoint" not in err, err
            assert set(all_docs(client, db)) == before
    finally:
        drop_database(client, other)


def test_an_expire_a_failure_ends_says_what_it_deleted(
    couch_url: str,
    client: CloudantV1,
    db: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second page's deletions fail for good: the first page's were gone unsaid."""
    handle = couchids.Database(client, db)
    made = sorted(handle.create({"n": n}, type="ord").id for n in range(30))
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    with FaultProxy(couch_url) as proxy:
        proxy.fail("503-before", method="POST", path="/_bulk_docs", after=1, times=50)
        monkeypatch.setenv("CLOUDANT_URL", proxy.url)
        argv = [
            "expire",
            db,
            "--before",
            "2100-01-01",
            "--type",
            "ord",
            "--batch-size",
            "10",
            "--yes",
        ]
        status, _, err = run(capsys, *argv)
    assert status == 1 and set(all_docs(client, db)) == set(made[10:]), err
    assert "10 documents were deleted before it" in err, err
    assert f"expire again with --after {made[9]!r} deletes the rest" in err, err


def test_tail_names_itself_in_a_servers_failure(
    couch_url: str, db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tail`` is the library's follow: its failure names the command typed, not follow."""
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    with FaultProxy(couch_url) as proxy:
        proxy.fail("503-before", method="POST", path="/_changes", times=10)
        monkeypatch.setenv("CLOUDANT_URL", proxy.url)
        status, _, err = run(capsys, "tail", db, "--since-seq", "0")
    assert status == 1 and err.startswith(f"couchids: error: tail on {db!r}"), err
    assert "follow" not in err, err


def test_ctrl_c_while_expire_counts_says_nothing_was_deleted(
    server: None,
    client: CloudantV1,
    db: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from couchids.core import counting

    handle = couchids.Database(client, db)
    made = sorted(handle.create({"n": n}, type="ord").id for n in range(3))

    def interrupted(*_: object, **__: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(counting, "count", interrupted)
    status, out, err = run(capsys, "expire", db, "--before", "1s", "--type", "ord", "--yes")
    assert status == 130 and out == "", (out, err)
    assert err == "couchids: stopped while counting, before anything was deleted\n", err
    assert sorted(doc["_id"] for doc in handle.window(0, "2100-01-01", type="ord")) == made


@pytest.mark.parametrize("seq", ["abc", "", "-5", "1.5"])
def test_tail_refuses_what_is_no_sequence(
    server: None, db: str, seq: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """PouchDB Server began somewhere of its own for such a --since-seq; CouchDB answers 400."""
    status, out, err = run(capsys, "tail", db, "--since-seq", seq)
    assert status == EXIT_BAD_INPUT and out == "", err
    assert f"argument --since-seq: {seq!r} is no _changes sequence" in err, err
