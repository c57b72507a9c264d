"""Every public operation and CLI subcommand against servers that are not a good CouchDB.

tests/hostileserver.py plays HTML pages, truncated JSON, wrong types, null documents, errors
inside 200 answers, silence and connections closed mid-body. Whatever it does, couchids raises
a couchids error whose message names the operation, never a Python internals error, and the
command prints one line, never a traceback. Its IAM token service that never answers ends every
operation and command by its deadline too.

Every operation of both APIs meets them in tests/_async/test_hostile.py, written once; this
module holds the servers' cases of the command and of one API. The cases of a test are
independent (each has its own server, or shares one that keeps no state), so a test runs them
all at once (:func:`concurrently.each_at_once`) and names every case that failed.
"""

from __future__ import annotations

import io
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import pytest
from concurrently import each_at_once
from faultproxy import client_for
from hostileserver import MODES, HostileServer, TokenService, trust_one_certificate
from ibm_cloud_sdk_core.authenticators import BasicAuthenticator, IAMAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import free_port

import couchids
from couchids.cli.main import EXIT_SERVER, main

#: The timeout given to every operation; "silent" must end within it plus :data:`SLACK`.
TIMEOUT = 1.5
#: How much later than its deadline an operation may end. Generous, for a loaded 2-core machine
#: running many cases at once: what it tells apart is the deadline from the client's own read
#: timeout (150 s) or a token request's, which would apply without it.
SLACK = 3.0
#: The timeout of cases that are not about the deadline: long enough that no loaded machine turns
#: the bad answer under test into a timeout. (Every bad answer comes at once; the slowest case
#: ends in about a second.)
PATIENT = 30.0
DB = "hostile"
#: The second database of archive and rekey.
TARGET = "hostile-target"


@pytest.fixture(autouse=True)
def one_certificate(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Clients of loopback servers load a small trust store (see hostileserver)."""
    if "couch_url" not in request.fixturenames:  # the server under test may speak HTTPS
        trust_one_certificate(monkeypatch, tmp_path_factory.getbasetemp())


def check_failure(exc: BaseException, operation: str) -> None:
    assert isinstance(exc, couchids.ServerError), repr(exc)
    message = str(exc)
    name = operation.removesuffix("-now").removeprefix("aio.")
    assert message.startswith((f"{name} on {DB!r}", f"{name} on {TARGET!r}")), message
    assert "<html" not in message.lower() and len(message) < 600, message


# --- Running the independent cases of a test at once ----------------------------------------


class ThreadOutput:
    """Stands for ``sys.stdout`` or ``sys.stderr`` while commands run at once: a thread that
    called :meth:`capture` gets its own stream (like capsys's), any other writes to ``shared``."""

    def __init__(self, shared: TextIO) -> None:
        self.shared = shared
        self.local = threading.local()

    def capture(self) -> None:
        self.local.written = io.BytesIO()
        self.local.stream = io.TextIOWrapper(
            self.local.written, encoding="utf-8", newline="", write_through=True
        )

    def release(self) -> str:
        """What this thread wrote since :meth:`capture`; later writes go to ``shared``."""
        written: bytes = self.local.written.getvalue()
        del self.local.stream, self.local.written
        return written.decode()

    def __getattr__(self, name: str) -> Any:
        return getattr(getattr(self.local, "stream", self.shared), name)


@dataclass
class Ran:
    """What one run of the command did."""

    code: int
    out: str
    err: str
    took: float


class Commands:
    """Runs the ``couchids`` command (:func:`couchids.cli.main.main`) in the calling thread with its
    own stdout and stderr, so that many threads can run it at once (in one environment).

    Made in the test itself: pytest sets ``sys.stdout`` and ``sys.stderr`` again between a
    fixture's setup and the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stdout, self.stderr = ThreadOutput(sys.stdout), ThreadOutput(sys.stderr)
        monkeypatch.setattr(sys, "stdout", self.stdout)
        monkeypatch.setattr(sys, "stderr", self.stderr)

    def run(self, argv: list[str]) -> Ran:
        self.stdout.capture()
        self.stderr.capture()
        started = time.monotonic()
        try:
            code = main(argv)
        finally:
            took = time.monotonic() - started
            out, err = self.stdout.release(), self.stderr.release()
        return Ran(code, out, err, took)


# --- Every operation in every mode ----------------------------------------------------------


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
            couchids.Database(client, DB).with_options(timeout=TIMEOUT).latest()
        assert time.monotonic() - started < TIMEOUT + SLACK


@pytest.mark.parametrize("in_url", [True, False])
def test_a_401_names_the_credentials_that_were_refused(in_url: bool) -> None:
    with HostileServer("echo") as server:
        if in_url:
            client = client_for(server.url.replace("//", "//bob:pw@"))
        else:
            client = client_for(server.url)
            client.authenticator = BasicAuthenticator("bob", "pw")
        with pytest.raises(couchids.UnauthorizedError) as caught:
            couchids.Database(client, DB).latest()
    message = str(caught.value)
    assert ("user 'bob' with its password (the user:password@ of" in message) is in_url, message
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
#: Modes in which a subcommand may succeed (as :data:`SUCCEEDS`).
COMMAND_SUCCEEDS = {("null-docs", "count"), ("null-docs", "histogram"), ("null-docs", "expire")}


@pytest.mark.parametrize("mode", MODES)
def test_every_command_against_a_hostile_server(
    mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    commands = Commands(monkeypatch)
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "k")
    monkeypatch.chdir(tmp_path)  # rekey's mapping file
    with HostileServer(mode) as server:
        monkeypatch.setenv("CLOUDANT_URL", server.url)
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")

        def command_against(command: str) -> None:
            timeout = TIMEOUT if mode == "silent" else PATIENT
            ran = commands.run([command, DB, *COMMANDS[command], "--timeout", str(timeout)])
            if (mode, command) in COMMAND_SUCCEEDS and ran.code == 0:
                return
            assert ran.code == EXIT_SERVER, (ran.out, ran.err)
            lines = ran.err.splitlines()
            assert len(lines) == 1 and "Traceback" not in ran.err, ran.err
            # The command names itself (tail, not the follow it runs).
            assert lines[0].startswith(
                (
                    f"couchids: error: {command} on {DB!r}",
                    f"couchids: error: {command} on {TARGET!r}",
                )
            ), lines[0]
            if mode == "silent":
                assert ran.took < TIMEOUT + SLACK, ran.took

        each_at_once({command: partial(command_against, command) for command in COMMANDS})
    # Nor did any other thread write to stderr.
    assert not capsys.readouterr().err


#: The blocking operations the token tests below run again and again (every operation of both
#: APIs meets the hostile servers in tests/_async/test_hostile.py).
OPERATIONS: dict[str, Callable[[CloudantV1, str, float], object]] = {
    "latest": lambda c, db, t: couchids.Database(c, db).with_options(timeout=t).latest(3),
    "create": lambda c, db, t: (
        couchids.Database(c, db).with_options(timeout=t, backoff=0).create({"n": 1})
    ),
}


# --- IAM authentication: the token request goes around the client's session ---------------

APIKEY = "iam-apikey-of-the-tests"


def iam_client(token_url: str, url: str) -> CloudantV1:
    """A client with IAM authentication against the token service at ``token_url``."""
    client = CloudantV1(authenticator=IAMAuthenticator(APIKEY, url=token_url))
    client.set_service_url(url)
    # Loopback only; ibmcloudant's own timeouts (150 s to read, the token request's too) stay.
    client.set_http_config({**client.http_config, "proxies": {"http": None, "https": None}})
    return client


def test_operations_with_iam_authentication_ask_for_one_token(
    couch_url: str, db: str, client: CloudantV1
) -> None:
    with TokenService() as iam:
        authenticated = iam_client(iam.url, couch_url)
        one = couchids.Database(authenticated, db).with_options(timeout=PATIENT).create({"n": 1})
        more = (
            couchids.Database(authenticated, db)
            .with_options(timeout=PATIENT)
            .bulk_create([{"n": 2}, {"n": 3}])
        )
        found = couchids.Database(authenticated, db).with_options(timeout=PATIENT).latest(5)
    assert sorted(doc["_id"] for doc in found) == sorted([one.id, *(r.id for r in more)])
    assert iam.requests == 1, "the token is kept and used again"


def test_a_token_renewal_that_never_comes_ends_each_operation_by_the_deadline(
    couch_url: str, db: str
) -> None:
    # A token good for 5 s is renewed for every request (ibmcloudant takes it for expired 10 s
    # early).
    earlier = set(threading.enumerate())
    with TokenService(lifetime=5) as iam:
        client = iam_client(iam.url, couch_url)
        couchids.Database(client, db).with_options(timeout=PATIENT).create({"n": 1})
        iam.silent = True
        for run in (OPERATIONS["latest"], OPERATIONS["create"], OPERATIONS["latest"]):
            started = time.monotonic()
            with pytest.raises(couchids.ServerTimeoutError, match="the token request"):
                run(client, db, TIMEOUT)
            assert time.monotonic() - started < TIMEOUT + SLACK
        # The later operations waited for the request under way, in its one thread.
        assert iam.requests == 2
        waiting = [t for t in set(threading.enumerate()) - earlier if t.name == "couchids-token"]
        assert len(waiting) == 1, waiting


def test_while_a_renewal_never_comes_the_token_held_is_used(couch_url: str, db: str) -> None:
    with TokenService() as iam:
        client = iam_client(iam.url, couch_url)
        first = couchids.Database(client, db).with_options(timeout=PATIENT).create({"n": 1})
        iam.silent = True
        client.authenticator.token_manager.refresh_time = 0  # due for renewal, still good
        started = time.monotonic()
        # The operation that renews it waits for the renewal, as with ibmcloudant alone.
        with pytest.raises(couchids.ServerTimeoutError, match="the token request"):
            couchids.Database(client, db).with_options(timeout=TIMEOUT).latest()
        assert time.monotonic() - started < TIMEOUT + SLACK
        found = couchids.Database(client, db).with_options(timeout=PATIENT).latest()
        assert [doc["_id"] for doc in found] == [first.id]
        assert iam.requests == 2


def test_after_a_failed_token_request_the_next_operation_asks_again_at_once() -> None:
    # ibmcloudant would make the next token request wait a minute after the failed one.
    with HostileServer("null-docs") as server:
        client = iam_client(f"http://127.0.0.1:{free_port()}", server.url)
        for operation in ("latest", "create", "latest"):
            started = time.monotonic()
            with pytest.raises(couchids.ServerError, match="Connection refused") as caught:
                OPERATIONS[operation](client, DB, TIMEOUT)
            assert time.monotonic() - started < TIMEOUT + SLACK
            check_failure(caught.value, operation)


def test_cli_with_a_token_service_that_never_answers_ends_by_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    commands = Commands(monkeypatch)
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "k")
    monkeypatch.chdir(tmp_path)  # rekey's mapping file
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with TokenService(silent=True) as iam:
        monkeypatch.setenv("CLOUDANT_URL", iam.url)
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "iam")
        monkeypatch.setenv("CLOUDANT_APIKEY", APIKEY)
        monkeypatch.setenv("CLOUDANT_AUTH_URL", iam.url)

        def token_never_comes(command: str) -> None:
            ran = commands.run([command, DB, *COMMANDS[command], "--timeout", str(TIMEOUT)])
            assert ran.code == EXIT_SERVER, (ran.out, ran.err)
            lines = ran.err.splitlines()
            assert len(lines) == 1 and "Traceback" not in ran.err, ran.err
            assert lines[0].startswith(f"couchids: error: {command} on "), lines[0]
            assert "did not answer the token request" in lines[0], lines[0]
            assert lines[0].endswith("check CLOUDANT_AUTH_URL and that the token service is up")
            assert APIKEY not in ran.out + ran.err
            assert ran.took < TIMEOUT + SLACK, ran.took

        each_at_once({command: partial(token_never_comes, command) for command in COMMANDS})
    # Nothing else was written to stderr, by any thread.
    out, err = capsys.readouterr()
    assert not err and APIKEY not in out, (out, err)
