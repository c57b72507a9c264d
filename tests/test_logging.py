"""couchids' log records (couchids.drivers.log): one DEBUG record per request either driver sends,
an INFO record per retry, no credential in any record of any logger (couchids', the SDK's,
the HTTP library's), a NullHandler on the package's logger, and the command's ``-v``.

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
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from apis import Async, Blocking
from faultproxy import FaultProxy, client_for

import couchids
from couchids import ServerError
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
    """ibmcloudant turns on ``http.client``'s wire dump (to its logger) when its logger is at
    DEBUG as a client is made: put it back after the test."""
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


def http_loggers(api: Blocking | Async) -> tuple[str, ...]:
    """The loggers that see every request: couchids', the SDK's (it prepares the request, URL
    and all) and the HTTP library's."""
    library = ("urllib3",) if isinstance(api, Blocking) else ("httpx", "httpcore")
    return ("couchids.request", "ibm-cloud-sdk-core", *library)


def test_the_package_logger_has_a_null_handler_once_anything_can_log() -> None:
    # In a fresh interpreter: the drivers (which log) bring the NullHandler; the id forms
    # alone (`couchids new`) load no logging at all.
    probe = (
        "import sys, couchids; assert 'logging' not in sys.modules, 'logging loaded'; "
        "import couchids.drivers.aio, logging; "
        "print([type(h).__name__ for h in logging.getLogger('couchids').handlers])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['NullHandler']"


def test_each_request_sent_is_one_debug_record(
    api: Blocking | Async, db: str, proxy: CredentialProxy, logged: pytest.LogCaptureFixture
) -> None:
    client = client_for(proxy.url_with_credentials())
    api.create(client, db, {"note": BODY_MARK})
    api.bulk_create(client, db, [{"n": 1}, {"n": 2}])
    assert len(api.latest(client, db, 5)) == 3
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    assert api.count(client, db, hour.replace(year=2000), hour.replace(year=2100)) == 3

    records = requests_logged(logged.records)
    seen = Counter((entry.method, urlsplit(entry.path).path) for entry in proxy.log)
    assert Counter((r.couchids_method, r.couchids_path) for r in records) == seen
    assert {"GET", "PUT", "POST"} <= {method for method, _ in seen}
    assert any(path.endswith("/_all_docs") for _, path in seen)
    for record in records:
        line = REQUEST_LINE.fullmatch(record.getMessage())
        assert line is not None, record.getMessage()
        assert line[1] == record.couchids_method and line[2] == record.couchids_path
        assert int(line[3]) == record.couchids_status and 200 <= record.couchids_status < 300
        assert record.couchids_failure is None
        assert record.couchids_attempt == int(line[5]) == 1
        assert isinstance(record.couchids_ms, float) and record.couchids_ms >= 0
        assert record.couchids_db == db and record.couchids_operation
        assert "?" not in record.couchids_path and "@" not in record.getMessage()
        assert BODY_MARK not in str(vars(record))
    # The credentials were sent (by requests, or httpx's Basic auth), and logged nowhere.
    assert proxy.authorizations and set(proxy.authorizations) == {f"Basic {BASIC}"}
    assert_no_credential(logged.records, *http_loggers(api))


def test_a_retry_is_an_info_record_and_attempt_two(
    api: Blocking | Async, db: str, proxy: CredentialProxy, logged: pytest.LogCaptureFixture
) -> None:
    client = client_for(proxy.url_with_credentials())
    proxy.fail("503-before", method="PUT", times=1)
    api.create(client, db, {"n": 1}, type="order", backoff=0.01)

    puts = [r for r in requests_logged(logged.records) if r.couchids_method == "PUT"]
    assert [(r.couchids_status, r.couchids_attempt) for r in puts] == [(503, 1), (201, 2)]
    assert [e.outcome for e in proxy.requests("PUT")] == ["503-before", "forwarded"]
    (retry,) = retries_logged(logged.records)
    assert retry.couchids_path == puts[0].couchids_path == puts[1].couchids_path
    assert retry.couchids_reason == "HTTP 503" and retry.couchids_attempt == 2
    assert 0 <= retry.couchids_wait <= 0.01
    assert re.fullmatch(
        rf"retrying PUT /{db}/order%3A\S+ after HTTP 503, in 0\.\d\d s \(attempt 2 of 5\)",
        retry.getMessage(),
    ), retry.getMessage()
    assert retries_logged(logged.records)[0].created <= puts[1].created
    assert_no_credential(logged.records, *http_loggers(api))


def test_the_clients_own_retries(
    api: Blocking | Async, db: str, proxy: CredentialProxy, logged: pytest.LogCaptureFixture
) -> None:
    client = client_for(proxy.url_with_credentials())
    client.enable_retries(max_retries=2, retry_interval=0.05)
    proxy.fail("503-before", method="POST", path="_all_docs", times=1)
    assert api.latest(client, db, 1) == []

    sent = proxy.requests("POST", "_all_docs")
    assert sent[0].outcome == "503-before"
    posts = [r for r in requests_logged(logged.records) if r.couchids_method == "POST"]
    assert all(r.couchids_attempt == 1 for r in posts)
    if isinstance(api, Async):
        # couchids.aio makes the client's retries itself: each request is a record.
        assert [r.couchids_status for r in posts] == [503] + [200] * (len(sent) - 1)
        (retry,) = retries_logged(logged.records)
        assert retry.couchids_client_retry == 1 and retry.couchids_reason == "HTTP 503"
        assert "(the client's retry 1 of 2)" in retry.getMessage()
    else:
        # urllib3 makes them inside one request of couchids' (and logs each itself).
        assert [r.couchids_status for r in posts] == [200] * (len(sent) - 1)
        assert retries_logged(logged.records) == []
        assert any(
            "Retry" in r.getMessage() for r in logged.records if r.name == "urllib3.connectionpool"
        )
    assert_no_credential(logged.records, *http_loggers(api))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_request_without_an_answer_says_what_happened(
    api: Blocking | Async, logged: pytest.LogCaptureFixture
) -> None:
    client = client_for(f"http://{USER}:{PASSWORD}@127.0.0.1:{closed_port()}")
    with pytest.raises(ServerError):
        api.latest(client, "db", 1)
    (record,) = requests_logged(logged.records)
    assert record.couchids_status is None and record.couchids_failure == "connection refused"
    assert re.fullmatch(r"GET /db connection refused \d+ ms \(attempt 1\)", record.getMessage()), (
        record.getMessage()
    )
    assert_no_credential(logged.records, "couchids.request", "ibm-cloud-sdk-core")


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
