# Generated from tests/_async/test_logging.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""couchids' log records through couchids.aio's handles and, in the generated twin, the
blocking ones: one DEBUG record per request either driver sends, an INFO record per retry, no
credential in any record of any logger (couchids', the SDK's, the HTTP library's).

The client's URL carries ``user:password@``; a proxy in front of the local server takes those
credentials off every request (keeping what it saw, to show they were sent) and counts the
requests, to compare with the records. (The proxy, the package's logger and the command's
``-v`` are in tests/test_logging.py.)
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest
from faultproxy import client_for
from ibmcloudant.cloudant_v1 import CloudantV1
from test_logging import (
    BASIC,
    BODY_MARK,
    PASSWORD,
    REQUEST_LINE,
    USER,
    CredentialProxy,
    assert_no_credential,
    closed_port,
    requests_logged,
    restoring_http_client_debug,
    retries_logged,
)

from couchids import ServerError

from .helpers import asyncio_api, database


@pytest.fixture
def proxy(couch_url: str) -> Iterator[CredentialProxy]:
    with CredentialProxy(couch_url) as proxy:
        yield proxy


@pytest.fixture(autouse=True)
def http_client_debug() -> Iterator[None]:
    yield from restoring_http_client_debug()


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every logger's records, from DEBUG up (set before the test's clients are made, so that
    ibmcloudant's wire dump is on too)."""
    caplog.set_level(logging.DEBUG)
    return caplog


def http_loggers(client: object) -> tuple[str, ...]:
    """The loggers that see every request: couchids', the SDK's (it prepares the request, URL
    and all) and the HTTP library's."""
    library = ("httpx", "httpcore") if asyncio_api(client) else ("urllib3",)
    return ("couchids.request", "ibm-cloud-sdk-core", *library)


def test_each_request_sent_is_one_debug_record(
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
    db: str,
    proxy: CredentialProxy,
    logged: pytest.LogCaptureFixture,
) -> None:
    cloudant = client_for(proxy.url_with_credentials())
    client = blocking_client_for(cloudant)
    database(client, db).create({"note": BODY_MARK})
    database(client, db).bulk_create([{"n": 1}, {"n": 2}])
    assert len(database(client, db).latest(5)) == 3
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    assert database(client, db).count(hour.replace(year=2000), hour.replace(year=2100)) == 3

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
    assert_no_credential(logged.records, *http_loggers(client))


def test_a_retry_is_an_info_record_and_attempt_two(
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
    db: str,
    proxy: CredentialProxy,
    logged: pytest.LogCaptureFixture,
) -> None:
    cloudant = client_for(proxy.url_with_credentials())
    client = blocking_client_for(cloudant)
    proxy.fail("503-before", method="PUT", times=1)
    database(client, db, backoff=0.01).create({"n": 1}, type="order")

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
    assert_no_credential(logged.records, *http_loggers(client))


def test_the_clients_own_retries(
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
    db: str,
    proxy: CredentialProxy,
    logged: pytest.LogCaptureFixture,
) -> None:
    cloudant = client_for(proxy.url_with_credentials())
    cloudant.enable_retries(max_retries=2, retry_interval=0.05)
    client = blocking_client_for(cloudant)
    proxy.fail("503-before", method="POST", path="_all_docs", times=1)
    assert database(client, db).latest(1) == []

    sent = proxy.requests("POST", "_all_docs")
    assert sent[0].outcome == "503-before"
    posts = [r for r in requests_logged(logged.records) if r.couchids_method == "POST"]
    assert all(r.couchids_attempt == 1 for r in posts)
    if asyncio_api(client):
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
    assert_no_credential(logged.records, *http_loggers(client))


def test_a_request_without_an_answer_says_what_happened(
    blocking_client_for: Callable[[CloudantV1], CloudantV1], logged: pytest.LogCaptureFixture
) -> None:
    client = blocking_client_for(client_for(f"http://{USER}:{PASSWORD}@127.0.0.1:{closed_port()}"))
    with pytest.raises(ServerError):
        database(client, "db", retries=0).latest(1)  # one request, and its record
    (record,) = requests_logged(logged.records)
    assert record.couchids_status is None and record.couchids_failure == "connection refused"
    assert re.fullmatch(r"GET /db connection refused \d+ ms \(attempt 1\)", record.getMessage()), (
        record.getMessage()
    )
    assert_no_credential(logged.records, "couchids.request", "ibm-cloud-sdk-core")
