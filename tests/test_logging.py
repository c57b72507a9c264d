"""couchids' log records (couchids.drivers.log): one DEBUG record per request either driver sends,
an INFO record per retry, no credential in any record of any logger (couchids', the SDK's,
the HTTP library's), a NullHandler on the package's logger, and the command's ``-v``. The
records of both APIs are tested from one source, tests/_async/test_logging.py.

The client's URL carries ``user:password@``; a proxy in front of the local server takes those
credentials off every request (keeping what it saw, to show they were sent) and counts the
requests, to compare with the records.
"""

from __future__ import annotations

import base64
import http.client
import logging
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from faultproxy import FaultProxy

import couchids
from couchids.cli.main import EXIT_OK, main

USER = "logbob"
PASSWORD = "Zq9-log-S3cret"
#: ``Authorization: Basic`` of the user and password, as requests and httpx send it.
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
MARKERS = (PASSWORD, BASIC)
#: A document field's value: a body is never in couchids' records.
BODY_MARK = "Zq9-body-marker"
#: ``METHOD /path STATUS N ms (attempt N)``.
REQUEST_LINE = re.compile(r"(GET|HEAD|POST|PUT|DELETE) (/\S*) (\d{3}) (\d+) ms \(attempt (\d+)\)")


class CredentialProxy(FaultProxy):
    """A FaultProxy that takes the client's ``Authorization`` off each request (forwarding the
    upstream's own, if its URL has one) and keeps what it saw in :attr:`authorizations`."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.authorizations: list[str | None] = []

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self
        base: Any = super()._handler_class()

        class Handler(base):  # type: ignore[misc]
            def _relay(self) -> None:
                proxy.authorizations.append(self.headers.get("Authorization"))
                del self.headers["Authorization"]
                super()._relay()

        return Handler

    def url_with_credentials(self) -> str:
        return self.url.replace("http://", f"http://{USER}:{PASSWORD}@")


@pytest.fixture
def proxy(couch_url: str) -> Iterator[CredentialProxy]:
    with CredentialProxy(couch_url) as proxy:
        yield proxy


@pytest.fixture(autouse=True)
def http_client_debug() -> Iterator[None]:
    yield from restoring_http_client_debug()


def restoring_http_client_debug() -> Iterator[None]:
    """ibmcloudant turns on ``http.client``'s wire dump (to its logger) when its logger is at
    DEBUG as a client is made: put it back after the test (a fixture's body)."""
    level, printer = http.client.HTTPConnection.debuglevel, vars(http.client).get("print")
    yield
    http.client.HTTPConnection.debuglevel = level
    if printer is None:
        vars(http.client).pop("print", None)
    else:
        http.client.print = printer  # type: ignore[attr-defined]


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every logger's records, from DEBUG up (set before the test's clients are made, so that
    ibmcloudant's wire dump is on too)."""
    caplog.set_level(logging.DEBUG)
    return caplog


def requests_logged(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [r for r in records if r.name == "couchids.request" and r.levelno == logging.DEBUG]


def retries_logged(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [r for r in records if r.name == "couchids.request" and r.levelno == logging.INFO]


def assert_no_credential(records: list[logging.LogRecord], *loggers: str) -> None:
    """No marker in any record's message or any of its attributes; and records of each of
    ``loggers`` (a prefix of the name) were among them, so that they were looked at."""
    for record in records:
        texts = [record.getMessage(), *map(repr, vars(record).values())]
        if isinstance(record.args, tuple):
            texts += map(str, record.args)
        for text in texts:
            for marker in MARKERS:
                assert marker not in text, f"{record.name}: {text[:300]}"
    names = {record.name for record in records}
    for prefix in loggers:
        assert any(name.startswith(prefix) for name in names), f"no record of {prefix}: {names}"


def test_the_package_logger_has_no_handler_so_that_its_warnings_show() -> None:
    # In a fresh interpreter: no handler of couchids' own (no NullHandler), so that a WARNING
    # reaches logging's last resort where nothing is configured; the id forms alone
    # (`couchids new`) load no logging at all.
    probe = (
        "import sys, couchids; assert 'logging' not in sys.modules, 'logging loaded'; "
        "import couchids.drivers.aio, logging; "
        "print([type(h).__name__ for h in logging.getLogger('couchids').handlers])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


#: A read of a type the database does not hold, by both APIs, with no logging configured.
_UNCONFIGURED = """
import asyncio, sys
import couchids
from couchids import aio

name = sys.argv[1]
print(couchids.Database(couchids.connect(), name).latest(3, type="oder"))

async def main():
    async with aio.connect() as client:
        return await aio.AsyncDatabase(client, name).count("2024-05-01", "2024-05-03", type="oder")

print(asyncio.run(main()))
"""


def test_without_logging_configured_the_hint_shows_on_stderr_and_the_command_notes_once(
    couch_url: str, db: str
) -> None:
    client = couchids.connect(couch_url, auth_type="noauth")
    for doc_type in ("order", "user"):
        couchids.Database(client, db).create({}, type=doc_type, timestamp="2024-05-01T12:00:00Z")
    env = {**os.environ, "CLOUDANT_URL": couch_url, "CLOUDANT_AUTH_TYPE": "noauth"}
    done = subprocess.run(
        [sys.executable, "-c", _UNCONFIGURED, db], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "0"]
    why = f"no ids of type 'oder' in {db!r}; it holds ids of types order, user"
    assert done.stderr.splitlines() == [
        f"latest on {db!r} found nothing: {why}: pass type= one of them",
        f"count on {db!r} found nothing: {why}: pass type= one of them",
    ]
    # The command's note, in its flags' words, and once: the library's is off in the command.
    command = [sys.executable, "-m", "couchids", "latest", db, "-n", "3", "--type", "oder"]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == f"couchids: note: {why}: pass --type with one of them\n"


def test_the_command_asks_the_server_why_once(
    couch_url: str, db: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The library's hint is off while the command runs: no WARNING, and the explanation's
    # requests are sent once, for the command's note.
    couchids.Database(couchids.connect(couch_url, auth_type="noauth"), db).create({}, type="a")
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    caplog.set_level(logging.DEBUG, "couchids")
    assert main(["latest", db, "--type", "oder"]) == EXIT_OK
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    reads = [r for r in caplog.records if getattr(r, "couchids_operation", "") == "explain_empty"]
    with_hint = len(reads)
    caplog.clear()
    assert couchids.Database(couchids.connect(), db).explain_empty(type="oder") is not None
    alone = [r for r in caplog.records if getattr(r, "couchids_operation", "") == "explain_empty"]
    assert with_hint == len(alone) > 0


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def configured(
    proxy: CredentialProxy, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> CredentialProxy:
    """The command configured as a user would, with the credentials in CLOUDANT_URL."""
    for name in list(os.environ):
        if name.startswith("CLOUDANT_") or name in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("CLOUDANT_URL", proxy.url_with_credentials())
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    return proxy


@pytest.mark.parametrize("flag", [[], ["-v"], ["-vv"], ["--verbose"]])
def test_the_command_prints_the_records_with_v(
    flag: list[str],
    db: str,
    client: Any,
    configured: CredentialProxy,
    capsys: pytest.CaptureFixture[str],
) -> None:
    couchids.Database(client, db).create({"n": 1})
    before = list(logging.getLogger("couchids").handlers)
    assert main([*flag, "latest", db, "-n", "1"]) == EXIT_OK
    err = capsys.readouterr().err
    assert configured.authorizations == [f"Basic {BASIC}"] * len(configured.log)
    for marker in MARKERS:
        assert marker not in err
    # The handler and levels were put back.
    assert logging.getLogger("couchids").handlers == before
    assert logging.getLogger("couchids").level == logging.getLogger("urllib3").level == 0
    if not flag:
        assert err == ""
        return
    lines = err.splitlines()
    mine = [line for line in lines if line.startswith("couchids: ")]
    assert mine and len(mine) == len(configured.log)
    assert f"couchids: POST /{db}/_all_docs 200 " in err
    for line in mine:
        assert REQUEST_LINE.fullmatch(line.removeprefix("couchids: ")), line
    library = [line for line in lines if line.startswith("urllib3.")]
    assert len(library) + len(mine) == len(lines)
    if flag == ["-vv"]:
        assert any("Starting new HTTP connection" in line for line in library)
        assert any(f'"POST /{db}/_all_docs' in line for line in library)
    else:
        assert library == []
