"""Every public operation and CLI subcommand against servers that are not a good CouchDB.

tests/hostileserver.py plays HTML pages, truncated JSON, wrong types, null documents, errors
inside 200 answers, silence and connections closed mid-body. Whatever it does, couchids raises
a couchids error whose message names the operation, never a Python internals error, and the
command prints one line, never a traceback.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from apis import Async
from faultproxy import client_for
from hostileserver import MODES, HostileServer
from ibm_cloud_sdk_core.authenticators import BasicAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids.cli import EXIT_SERVER, main

#: The timeout given to every operation; "silent" must end within it plus a second.
TIMEOUT = 1.5
ASYNC = Async()
DB = "hostile"
#: The second database of archive and rekey.
TARGET = "hostile-target"

Operation = Callable[[CloudantV1, str, float], object]
OPERATIONS: dict[str, Operation] = {
    "latest": lambda c, db, t: couchids.latest(c, db, 3, timeout=t),
    "window": lambda c, db, t: list(couchids.window(c, db, "2020-01-01", "2030-01-01", timeout=t)),
    "create": lambda c, db, t: couchids.create(c, db, {"n": 1}, timeout=t, backoff=0),
    "bulk_create": lambda c, db, t: couchids.bulk_create(
        c, db, [{"n": 1}, {"n": 2}], timeout=t, backoff=0
    ),
    "create_short": lambda c, db, t: couchids.create_short(c, db, {"n": 1}, timeout=t, backoff=0),
    "bulk_create_iter": lambda c, db, t: list(
        couchids.bulk_create_iter(c, db, iter([{"n": 1}]), timeout=t, backoff=0)
    ),
    "count": lambda c, db, t: couchids.count(c, db, "2020-01-01", "2030-01-01", timeout=t),
    "histogram": lambda c, db, t: couchids.histogram(
        c, db, "2020-01-01", "2030-01-01", every="1w", timeout=t
    ),
    "expire": lambda c, db, t: couchids.expire(
        c, db, "2030-01-01", type=None, dry_run=False, timeout=t, backoff=0
    ),
    "export": lambda c, db, t: couchids.export(
        c, db, "2020-01-01", "2030-01-01", io.StringIO(), timeout=t
    ),
    "archive": lambda c, db, t: couchids.archive(
        c, db, TARGET, "2020-01-01", "2030-01-01", expire=True, timeout=t, backoff=0
    ),
    "follow": lambda c, db, t: list(couchids.follow(c, db, since=0, wait=False, timeout=t)),
    "follow-now": lambda c, db, t: list(couchids.follow(c, db, wait=False, timeout=t)),
    "rekey": lambda c, db, t: couchids.rekey(c, db, TARGET, key=b"k", timeout=t),
    "Sequence.next": lambda c, db, t: couchids.Sequence(c, db, "n", timeout=t, backoff=0).next(),
    "Sequence.new_id": lambda c, db, t: couchids.Sequence(c, db, "n", timeout=t).new_id(),
    # The coroutines of couchids.aio, over an AsyncClient made from the same client.
    "aio.latest": lambda c, db, t: ASYNC.latest(c, db, 3, timeout=t),
    "aio.window": lambda c, db, t: ASYNC.window(c, db, "2020-01-01", "2030-01-01", timeout=t),
    "aio.create": lambda c, db, t: ASYNC.create(c, db, {"n": 1}, timeout=t, backoff=0),
    "aio.bulk_create": lambda c, db, t: ASYNC.bulk_create(
        c, db, [{"n": 1}, {"n": 2}], timeout=t, backoff=0
    ),
    "aio.create_short": lambda c, db, t: ASYNC.create_short(c, db, {"n": 1}, timeout=t, backoff=0),
    "aio.count": lambda c, db, t: ASYNC.count(c, db, "2020-01-01", "2030-01-01", timeout=t),
    "aio.histogram": lambda c, db, t: ASYNC.histogram(
        c, db, "2020-01-01", "2030-01-01", every="1w", timeout=t
    ),
    "aio.expire": lambda c, db, t: ASYNC.expire(
        c, db, "2030-01-01", type=None, dry_run=False, timeout=t, backoff=0
    ),
    "aio.export": lambda c, db, t: ASYNC.export(
        c, db, "2020-01-01", "2030-01-01", io.StringIO(), timeout=t
    ),
    "aio.follow": lambda c, db, t: ASYNC.follow(c, db, since=0, wait=False, timeout=t),
    "aio.rekey": lambda c, db, t: ASYNC.rekey(c, db, TARGET, key=b"k", timeout=t),
    "aio.Sequence.next": lambda c, db, t: ASYNC.numbers(c, db, "n", 1, timeout=t, backoff=0),
}
#: Modes in which an operation may succeed: the server's answers to it were good ones.
SUCCEEDS = {
    ("null-docs", "create"),
    ("null-docs", "bulk_create"),
    ("null-docs", "create_short"),
    ("null-docs", "bulk_create_iter"),
    # Counting and deleting read ids, not documents; the deletes are answered well.
    ("null-docs", "count"),
    ("null-docs", "histogram"),
    ("null-docs", "expire"),
    ("null-docs", "aio.create"),
    ("null-docs", "aio.bulk_create"),
    ("null-docs", "aio.create_short"),
    ("null-docs", "aio.count"),
    ("null-docs", "aio.histogram"),
    ("null-docs", "aio.expire"),
}


def check_failure(exc: BaseException, operation: str) -> None:
    assert isinstance(exc, couchids.ServerError), repr(exc)
    message = str(exc)
    name = operation.removesuffix("-now").removeprefix("aio.")
    assert message.startswith((f"{name} on {DB!r}", f"{name} on {TARGET!r}")), message
    assert "<html" not in message.lower() and len(message) < 600, message


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("operation", OPERATIONS)
def test_operation_against_a_hostile_server(mode: str, operation: str) -> None:
    with HostileServer(mode) as server:
        client = client_for(server.url)
        started = time.monotonic()
        try:
            OPERATIONS[operation](client, DB, TIMEOUT)
        except Exception as exc:
            check_failure(exc, operation)
            if mode == "silent":
                assert isinstance(exc, couchids.ServerTimeoutError)
                # Without the deadline the client's own read timeout (150 s) would apply.
                assert time.monotonic() - started < TIMEOUT + 1
        else:
            assert (mode, operation) in SUCCEEDS, f"{operation} passed against {mode}"


def test_session_login_refused_is_unauthorized() -> None:
    with HostileServer("session-refused") as server:
        for operation, run in OPERATIONS.items():
            # A fresh client each time: ibmcloudant paces a login after a failed one.
            client = CloudantV1(authenticator=session_authenticator("bob", "wrong-password"))
            client.set_service_url(server.url)
            with pytest.raises(couchids.UnauthorizedError) as caught:
                run(client, DB, TIMEOUT)
            check_failure(caught.value, operation)
            assert "CLOUDANT_PASSWORD" in str(caught.value)


def session_authenticator(user: str, password: str) -> Any:
    from ibmcloudant import CouchDbSessionAuthenticator

    return CouchDbSessionAuthenticator(user, password)


def test_a_silent_server_and_a_session_login_end_by_the_deadline() -> None:
    # The session login goes through the client's session, so the deadline bounds it too.
    with HostileServer("silent") as server:
        client = CloudantV1(authenticator=session_authenticator("bob", "pw"))
        client.set_service_url(server.url)
        started = time.monotonic()
        with pytest.raises(couchids.ServerTimeoutError):
            couchids.latest(client, DB, timeout=TIMEOUT)
        assert time.monotonic() - started < TIMEOUT + 1


@pytest.mark.parametrize("in_url", [True, False])
def test_a_401_names_the_credentials_that_were_refused(in_url: bool) -> None:
    with HostileServer("echo") as server:
        if in_url:
            client = client_for(server.url.replace("//", "//bob:pw@"))
        else:
            client = client_for(server.url)
            client.authenticator = BasicAuthenticator("bob", "pw")
        with pytest.raises(couchids.UnauthorizedError) as caught:
            couchids.latest(client, DB)
    message = str(caught.value)
    assert ("inside the server URL" in message) is in_url, message
    assert ("CLOUDANT_PASSWORD" in message) is not in_url, message


#: Each subcommand that talks to the server, with the arguments it needs after ``DB``.
COMMANDS: dict[str, list[str]] = {
    "latest": [],
    "window": ["--since", "2020-01-01"],
    "count": ["--since", "2020-01-01"],
    "histogram": ["--since", "2020-01-01", "--every", "1w"],
    "expire": ["--before", "2030-01-01", "--type", "t", "--yes"],
    "export": ["--since", "2020-01-01"],
    "tail": [],
    "rekey": [TARGET],
}
#: The library operation each subcommand runs (whose name its errors carry).
RUNS = {"tail": "follow"}
#: Modes in which a subcommand may succeed (as :data:`SUCCEEDS`).
COMMAND_SUCCEEDS = {("null-docs", "count"), ("null-docs", "histogram"), ("null-docs", "expire")}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command", COMMANDS)
def test_cli_against_a_hostile_server(
    mode: str,
    command: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "k")
    monkeypatch.chdir(tmp_path)  # rekey's mapping file
    with HostileServer(mode) as server:
        monkeypatch.setenv("CLOUDANT_URL", server.url)
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
        started = time.monotonic()
        code = main([command, DB, *COMMANDS[command], "--timeout", str(TIMEOUT)])
        took = time.monotonic() - started
    out, err = capsys.readouterr()
    if (mode, command) in COMMAND_SUCCEEDS and code == 0:
        return
    assert code == EXIT_SERVER, (out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    name = RUNS.get(command, command)
    assert lines[0].startswith(
        (f"couchids: error: {name} on {DB!r}", f"couchids: error: {name} on {TARGET!r}")
    ), lines[0]
    if mode == "silent":
        assert took < TIMEOUT + 1, took
