"""The test servers (scripts/localserver.py) do what the integration tests need.

Also pins the PouchDB Server 4.2.0 behaviours that differ from CouchDB, and the CouchDB
behaviours couchids relies on, so a change of server version that alters them is noticed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import NPM_FLAGS, CouchDBCluster, LocalServer, LocalServerError, install_pouchdb

REPO = Path(__file__).resolve().parents[1]


def ids(result: dict[str, object]) -> list[str]:
    rows = result["rows"]
    assert isinstance(rows, list)
    return [row["id"] for row in rows]


@pytest.fixture
def abcde(client: CloudantV1, db: str) -> str:
    client.post_bulk_docs(
        db=db, bulk_docs={"docs": [{"_id": i, "n": n} for n, i in enumerate("abcde")]}
    )
    return db


def test_fixtures_are_marked_integration(request: pytest.FixtureRequest, db: str) -> None:
    assert request.node.get_closest_marker("integration") is not None


def test_server_answers(client: CloudantV1, couch_url: str) -> None:
    info = client.get_server_information().get_result()
    assert info.get("couchdb") == "Welcome" or info.get("express-pouchdb") == "Welcome!"


@pytest.mark.needs("pouchdb")
def test_pouchdb_runs_on_loopback(client: CloudantV1, couch_url: str) -> None:
    assert couch_url.startswith("http://127.0.0.1:")
    assert client.get_server_information().get_result()["express-pouchdb"] == "Welcome!"


@pytest.mark.needs("couchdb")
def test_couchdb_is_apache_couchdb_3(client: CloudantV1) -> None:
    info = client.get_server_information().get_result()
    assert info["couchdb"] == "Welcome"
    assert info["version"].startswith("3.")


@pytest.mark.needs("cluster")
def test_the_cluster_has_three_joined_nodes_and_three_copies(
    client: CloudantV1, cluster: CouchDBCluster, db: str
) -> None:
    membership = client.get_membership_information().get_result()
    assert len(membership["cluster_nodes"]) == len(membership["all_nodes"]) == 3
    assert len(cluster.node_urls) == 3
    assert client.get_database_information(db=db).get_result()["cluster"]["n"] == 3


def test_create_then_409_on_recreate(client: CloudantV1, db: str) -> None:
    created = client.put_document(db=db, doc_id="a", document={"v": 1}).get_result()
    assert created["ok"] is True

    with pytest.raises(ApiException) as conflict:
        client.put_document(db=db, doc_id="a", document={"v": 2})
    assert conflict.value.status_code == 409

    assert client.get_document(db=db, doc_id="a").get_result()["v"] == 1
    assert client.get_database_information(db=db).get_result()["doc_count"] == 1


def test_bulk_docs_reports_each_row(client: CloudantV1, abcde: str) -> None:
    response = client.post_bulk_docs(db=abcde, bulk_docs={"docs": [{"_id": "a"}, {"_id": "f"}]})
    assert response.get_status_code() == 201  # even though one row failed
    first, second = response.get_result()
    assert first["id"] == "a" and first["error"] == "conflict"
    assert second["id"] == "f" and second["ok"] is True


def test_all_docs_start_key_end_key(client: CloudantV1, abcde: str) -> None:
    # ibmcloudant sends these as "start_key"/"end_key" in a POST body.
    result = client.post_all_docs(db=abcde, start_key="b", end_key="d").get_result()
    assert ids(result) == ["b", "c", "d"]

    exclusive = client.post_all_docs(db=abcde, start_key="b", end_key="d", inclusive_end=False)
    assert ids(exclusive.get_result()) == ["b", "c"]


def test_all_docs_descending_swaps_the_keys(client: CloudantV1, abcde: str) -> None:
    newest_first = client.post_all_docs(db=abcde, start_key="d", end_key="b", descending=True)
    assert ids(newest_first.get_result()) == ["d", "c", "b"]

    exclusive = client.post_all_docs(
        db=abcde, start_key="d", end_key="b", descending=True, inclusive_end=False
    )
    assert ids(exclusive.get_result()) == ["d", "c"]

    # Keys in ascending order with descending=true: an empty 200, as CouchDB answers.
    wrong_order = client.post_all_docs(db=abcde, start_key="b", end_key="d", descending=True)
    assert ids(wrong_order.get_result()) == []


def test_all_docs_limit_and_include_docs(client: CloudantV1, abcde: str) -> None:
    result = client.post_all_docs(db=abcde, start_key="b", limit=2, include_docs=True).get_result()
    assert ids(result) == ["b", "c"]
    assert [row["doc"]["n"] for row in result["rows"]] == [1, 2]
    assert result["total_rows"] == 5

    last_two = client.post_all_docs(db=abcde, descending=True, limit=2).get_result()
    assert ids(last_two) == ["e", "d"]


def test_all_docs_orders_ascii_ids_bytewise(client: CloudantV1, db: str) -> None:
    mixed = ["a", "B", "_design/x", "~", ":", "0", "user:1", "user;"]
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": i} for i in mixed]})
    listed = ids(client.post_all_docs(db=db).get_result())
    assert listed == sorted(mixed, key=lambda i: i.encode())


@pytest.mark.needs("pouchdb")
def test_quirk_offset_is_always_zero(client: CloudantV1, abcde: str) -> None:
    # CouchDB would answer offset 2 (rows before "c"); PouchDB Server answers `skip` (0).
    assert client.post_all_docs(db=abcde, start_key="c").get_result()["offset"] == 0


@pytest.mark.needs("couchdb")
def test_couchdb_offset_counts_the_rows_before_the_start_key(
    client: CloudantV1, abcde: str
) -> None:
    for key, before in [("a", 0), ("c", 2), ("cc", 3), ("z", 5)]:
        answer = client.post_all_docs(db=abcde, start_key=key, limit=0).get_result()
        assert (answer["offset"], answer["rows"]) == (before, [])


@pytest.mark.needs("couchdb")
def test_couchdb_lists_every_id_in_utf8_byte_order(client: CloudantV1, db: str) -> None:
    every = ["a", "\xe9", "\u0100", "\ufff0", "\U0001f600"]
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": i} for i in every]})
    assert ids(client.post_all_docs(db=db).get_result()) == sorted(every, key=str.encode)


@pytest.mark.needs("pouchdb")
def test_quirk_open_ended_scan_stops_at_xff(client: CloudantV1, db: str) -> None:
    # PouchDB's leveldb layer ends an open-ended scan at "\xff": ids above it are only listed
    # when a key bounds that end explicitly. CouchDB lists them all. kuuid ids are ASCII.
    high = ["\u0100", "\ufff0", "\U0001f600"]
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": i} for i in ["a", "\xe9", *high]]})
    assert ids(client.post_all_docs(db=db).get_result()) == ["a", "\xe9"]
    assert ids(client.post_all_docs(db=db, descending=True).get_result()) == ["\xe9", "a"]

    bounded = client.post_all_docs(db=db, start_key="\xe9", end_key="\uffff\uffff").get_result()
    # JavaScript (UTF-16 code unit) order: the astral emoji sorts before U+FFF0, whereas
    # CouchDB (UTF-8 bytes) sorts it last.
    assert ids(bounded) == ["\xe9", "\u0100", "\U0001f600", "\ufff0"]
    # A NUL inside an id is stored and ordered like any other character.
    client.put_document(db=db, doc_id="a\x00b", document={})
    nul = client.post_all_docs(db=db, start_key="a", end_key="a\x00\uffff").get_result()
    assert ids(nul) == ["a", "a\x00b"]


def test_missing_install_is_a_clear_error(tmp_path: Path) -> None:
    with (
        pytest.raises(LocalServerError, match="scripts/bootstrap"),
        LocalServer(node_modules=tmp_path),
    ):
        pass


@pytest.mark.parametrize("installs", [True, False], ids=["installed", "failed"])
def test_a_server_started_during_an_install_waits_for_it(tmp_path: Path, installs: bool) -> None:
    """``localserver.py`` started while scripts/bootstrap installs node/ (npm ci has emptied
    node_modules) says it waits for that install, and starts the server once it is done, or
    says what is missing when the install left nothing. The install is this test, which holds
    bootstrap's lock and puts this checkout's node_modules in place before letting it go."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    (root / "node").mkdir()
    (root / ".stamps").mkdir()
    shutil.copy(REPO / "scripts" / "localserver.py", root / "scripts")
    shutil.copy(REPO / "node" / "package-lock.json", root / "node")
    script, show_url = (
        root / "scripts" / "localserver.py",
        "import os; print(os.environ['CLOUDANT_URL'])",
    )
    with open(root / ".stamps" / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run = subprocess.Popen(
            [sys.executable, str(script), "--", sys.executable, "-c", show_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "NO_PROXY": "127.0.0.1,localhost"},
        )
        assert run.stderr is not None
        assert run.stderr.readline() == (
            f"localserver: waiting for the install in progress in {root / 'node'} to end "
            f"(scripts/bootstrap, or another localserver.py --install, holds "
            f"{root / '.stamps' / 'lock'}; npm ci empties node_modules before it installs)\n"
        )
        if installs:
            (root / "node" / "node_modules").symlink_to(REPO / "node" / "node_modules")
    out, err = run.communicate(timeout=300)
    if installs:
        assert (run.returncode, err) == (0, ""), err
        assert out.startswith("http://127.0.0.1:"), out
    else:
        assert run.returncode == 1 and out == ""
        assert err.startswith("localserver: PouchDB Server is not installed"), err


def npm_stub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An npm first on PATH that logs its folder and arguments, and for ``ci`` makes the
    pouchdb-server script; the log's path."""
    bin_dir, log = tmp_path / "bin", tmp_path / "npm.log"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(
        f'#!/bin/sh\necho "$PWD $*" >> {log}\n'
        '[ "$1" = ci ] && mkdir -p node_modules/pouchdb-server/bin '
        "&& touch node_modules/pouchdb-server/bin/pouchdb-server\n"
    )
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def test_install_runs_npm_ci_with_bootstrap_flags_only_when_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = npm_stub(tmp_path, monkeypatch)
    node_dir = tmp_path / "checkout" / "node"
    node_dir.mkdir(parents=True)
    shutil.copy(REPO / "node" / "package-lock.json", node_dir)
    assert install_pouchdb(node_dir) is True
    assert log.read_text().splitlines() == [f"{node_dir} ci {' '.join(NPM_FLAGS)}"]
    # An install that is there is never touched: npm ci would empty node_modules first.
    assert install_pouchdb(node_dir) is False
    assert len(log.read_text().splitlines()) == 1
    # scripts/bootstrap installs with the same flags, so its stamp stays true.
    bootstrap = (Path(__file__).resolve().parents[1] / "scripts" / "bootstrap").read_text()
    assert f"npm_flags=({' '.join(NPM_FLAGS)})" in bootstrap


def test_a_failed_install_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    npm_stub(tmp_path, monkeypatch).parent.joinpath("bin", "npm").write_text("#!/bin/sh\nexit 3\n")
    node_dir = tmp_path / "node"
    node_dir.mkdir()
    with pytest.raises(LocalServerError, match=r"npm ci in .*node failed \(exit status 3\)"):
        install_pouchdb(node_dir)


def test_exit_ends_the_server_process_group() -> None:
    with LocalServer() as server:
        url, pid = server.url, server.pid
        assert pid is not None
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with direct.open(url + "/", timeout=5) as response:
            assert response.status == 200
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    with pytest.raises(LocalServerError):
        _ = server.url


def test_a_parallel_run_hands_out_the_tests_in_units() -> None:
    # conftest.pytest_xdist_make_scheduler hands out the units of conftest.unit_of.
    from conftest import unit_of

    def shares(module: str) -> bool:
        return module == "tests/test_shared.py"

    ids = ["[cluster]", "[blocking-cluster]", "[aio-cluster]", "[cluster-kuuid0]", "[a-cluster-b]"]
    # By file name, whatever the folder: the twins in tests/_async and tests/_sync split too.
    first = ("tests/test_aio.py", "tests/test_exporting.py", "tests/_async/test_counting.py")
    for module in (*first, "tests/_sync/test_bent_server.py", "tests/_sync/test_exporting.py"):
        assert {unit_of(f"{module}::test_y{i}", shares) for i in ids} == {"cluster"}
    second = ("tests/test_following.py", "tests/test_shared.py", "tests/test_x.py")
    for module in (*second, "tests/_async/test_query.py", "tests/_sync/test_write.py"):
        assert {unit_of(f"{module}::test_y{i}", shares) for i in ids} == {"cluster-2"}
    others = ["[pouchdb]", "[couchdb-cluster_name]", "[blocking-couchdb]", "", "[cluster_x]"]
    for i in others:
        nodeid = f"tests/test_x.py::test_cluster{i}"
        assert unit_of(nodeid, shares) == nodeid
    shared = {
        "[pouchdb]": "tests/test_shared.py[pouchdb]",
        "[honest-latest-pouchdb-aio]": "tests/test_shared.py[pouchdb]",
        "[couchdb-cluster_name]": "tests/test_shared.py[couchdb]",
        "[url]": "tests/test_shared.py[url]",
        "": "tests/test_shared.py[]",
        "[x-y]": "tests/test_shared.py[]",
    }
    for i, unit in shared.items():
        assert unit_of(f"tests/test_shared.py::test_z{i}", shares) == unit


def test_the_modules_that_share_a_fixture_are_found_by_their_source() -> None:
    from conftest import MODULE_FIXTURE

    here = Path(__file__).parent
    found = {
        str(p.relative_to(here))
        for p in here.glob("**/test_*.py")
        if MODULE_FIXTURE.search(p.read_text())
    }
    batched = ("test_bent_server.py", "test_resume_points.py")
    assert {
        "test_docs.py",
        *(f"_{api}/{name}" for api in ("async", "sync") for name in batched),
    } <= found
    assert "test_keys.py" not in found and "test_localserver.py" not in found


def test_without_a_command_it_prints_lines_a_shell_exports(tmp_path: Path) -> None:
    """``python scripts/localserver.py`` prints what to paste into another shell: pasted, the
    lines set the variables for the programs that shell runs."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "localserver.py"
    server = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        lines = [server.stdout.readline(), server.stdout.readline()]
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=60)
    pasted = "".join(lines) + "python3 -c 'import os; print(os.environ[\"CLOUDANT_URL\"])'\n"
    shown = subprocess.run(
        ["sh", "-c", pasted], capture_output=True, text=True, check=True, timeout=60
    )
    url = lines[0].strip().removeprefix("export CLOUDANT_URL=")
    assert url.startswith("http://127.0.0.1:") and shown.stdout == url + "\n", lines
    assert lines[1] == "export CLOUDANT_AUTH_TYPE=noauth\n"


def test_ctrl_c_is_the_commands_and_the_server_stays_until_it_ends(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole foreground process group: a command that goes on after it (a
    Python prompt dropping a line) keeps its server; one it stops exits 128 + SIGINT."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "localserver.py"
    child = tmp_path / "child.py"
    child.write_text(
        "import os, sys, time, urllib.request\n"
        "try:\n    print('ready', flush=True)\n    time.sleep(60)\n"
        "except KeyboardInterrupt:\n"
        "    if sys.argv[1] == 'stops':\n        raise\n"
        "opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n"
        "print(opener.open(os.environ['CLOUDANT_URL'] + '/', timeout=10).status)\n"
    )
    for mode, status, out in (("goes-on", 0, "ready\n200\n"), ("stops", 130, "ready\n")):
        run = subprocess.Popen(
            [sys.executable, str(script), "--", sys.executable, str(child), mode],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # a process group of its own, as a terminal's job is
        )
        assert run.stdout is not None and run.stdout.readline() == "ready\n"
        os.killpg(run.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        rest, _ = run.communicate(timeout=60)
        assert (run.returncode, "ready\n" + rest) == (status, out), mode
