"""The exact HTTP requests of couchids.query, pinned with ``responses`` (nothing leaves the
process), and what a real server cannot be made to show: the limits a partition query asks
for at the edges of Cloudant's 2000-row cap, 429s, 401s, 500s.

Behaviour against a real server is proven elsewhere: in tests/test_query.py on every test
server, and for partitioned databases (typed queries read their partition and stay under the
cap, untyped ones read the global index) in tests/test_partitioned.py on CouchDB.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import responses
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import (
    KUUID,
    KUUID_REVERSE,
    V7S,
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidTimeError,
    RateLimitedError,
    ServerError,
    UnauthorizedError,
)
from couchids.idforms.forms import IdForm

URL = "http://127.0.0.1:5984"
ALL_DOCS = f"{URL}/db/_all_docs"
PARTITION_ALL_DOCS = f"{URL}/db/_partition/user/_all_docs"
# kuuid 1.0.3 publishes prefix("2018-01-01T00:00:00Z") == "001eVnWK": the second after it is
# "001eVnWL", and prefixReverse of the same second is "zzyLUCTf" (see shared/vectors).
NEW_YEAR = 1_514_764_800_000
NEW_YEAR_KEY, NEXT_SECOND_KEY = "001eVnWK", "001eVnWL"


@pytest.fixture(autouse=True)
def no_hints(caplog: pytest.LogCaptureFixture) -> None:
    """The requests pinned here are the reads' own: an empty answer's explanation (a WARNING
    of couchids) is off, as any program turns it off."""
    caplog.set_level(logging.ERROR, "couchids")


@pytest.fixture
def http() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


@pytest.fixture
def client() -> CloudantV1:
    service = CloudantV1(authenticator=NoAuthAuthenticator())
    service.set_service_url(URL)
    return service


def body(call: Any) -> dict[str, Any]:
    """The JSON a request sent (ibmcloudant gzips request bodies by default)."""
    raw = call.request.body
    if call.request.headers.get("content-encoding") == "gzip":
        raw = gzip.decompress(raw)
    parsed: dict[str, Any] = json.loads(raw)
    return parsed


def posts(http: responses.RequestsMock) -> list[dict[str, Any]]:
    return [body(c) for c in http.calls if c.request.method == "POST"]


def row(doc_id: str) -> dict[str, Any]:
    return {
        "id": doc_id,
        "key": doc_id,
        "value": {"rev": "1-a"},
        "doc": {"_id": doc_id, "_rev": "1-a"},
    }


def database(http: responses.RequestsMock, *, partitioned: bool = False) -> None:
    props = {"partitioned": True} if partitioned else {}
    http.get(f"{URL}/db", json={"db_name": "db", "doc_count": 0, "props": props})


def ids_between(form: IdForm, start: int, count: int) -> list[str]:
    """``count`` ids of type ``user`` one millisecond apart, in ``_all_docs`` order."""
    return sorted(form.new(start + i, type="user") for i in range(count))


def test_a_window_sends_its_keys_direction_and_limit(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    database(http)
    http.post(ALL_DOCS, json={"total_rows": 0, "offset": 0, "rows": []})
    got = list(
        couchids.Database(client, "db")
        .with_options(batch_size=50)
        .window(NEW_YEAR, NEW_YEAR + 1000, type="user")
    )
    assert got == []
    assert posts(http) == [
        {
            "start_key": "user:" + NEXT_SECOND_KEY,
            "end_key": "user:" + NEW_YEAR_KEY,
            "descending": True,
            "include_docs": True,
            "limit": 25,  # the first request of a sliced window asks for half a page
        }
    ]
    assert http.calls[1].request.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("form", "newest_first", "descending"),
    [(KUUID, True, True), (KUUID, False, False), (KUUID_REVERSE, True, False)],
)
def test_the_direction_follows_the_form(
    http: responses.RequestsMock,
    client: CloudantV1,
    form: IdForm,
    newest_first: bool,
    descending: bool,
) -> None:
    database(http)
    http.post(ALL_DOCS, json={"rows": []})
    list(
        couchids.Database(client, "db", form=form).window(
            NEW_YEAR, NEW_YEAR + 1000, newest_first=newest_first
        )
    )
    [sent] = posts(http)
    assert sent["descending"] is descending
    assert sent["limit"] == couchids.core.windows.DEFAULT_PAGE_SIZE // 2  # the first of slices
    # The high key is sent first when descending; a reverse id's key for this second is the
    # one kuuid publishes for prefixReverse.
    if form is KUUID_REVERSE:
        assert sent["start_key"] == "zzyLUCTf"
    assert (sent["start_key"] > sent["end_key"]) is descending


def test_rows_only_when_docs_are_not_asked_for(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    database(http)
    ids = ids_between(KUUID_REVERSE, NEW_YEAR, 3)
    http.post(ALL_DOCS, json={"rows": [row(i) for i in ids]})
    got = list(
        couchids.Database(client, "db", form=KUUID_REVERSE).window(
            NEW_YEAR, NEW_YEAR + 1000, type="user", include_docs=False
        )
    )
    assert posts(http)[0]["include_docs"] is False
    assert got == [row(i) for i in ids]


def test_the_next_page_starts_at_the_last_id_and_asks_one_more(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    database(http)
    ids = ids_between(V7S, NEW_YEAR, 7)
    # Ascending: pages of 3, each later page repeating the previous page's last row.
    http.post(ALL_DOCS, json={"rows": [row(i) for i in ids[0:3]]})
    http.post(ALL_DOCS, json={"rows": [row(i) for i in ids[2:6]]})
    http.post(ALL_DOCS, json={"rows": [row(i) for i in ids[5:7]]})
    got = (
        couchids.Database(client, "db", form=V7S)
        .with_options(batch_size=3, parallel=1)
        .window(NEW_YEAR, NEW_YEAR + 1000, type="user", newest_first=False)
    )
    assert [d["_id"] for d in got] == ids
    sent = posts(http)
    assert [(s["start_key"], s["limit"]) for s in sent[1:]] == [(ids[2], 4), (ids[5], 4)]
    # The far end of the range is the same on every page.
    assert len({s["end_key"] for s in sent}) == 1
    assert {s["descending"] for s in sent} == {False}


def test_a_short_page_ends_the_scan(http: responses.RequestsMock, client: CloudantV1) -> None:
    database(http)
    ids = ids_between(KUUID, NEW_YEAR, 2)
    # Newest first, as a window reads by default.
    http.post(ALL_DOCS, json={"rows": [row(i) for i in reversed(ids)]})
    for parallel in (1, 2):  # one page of 3; the first of slices, half a page of 6
        page_size = 3 * parallel
        got = (
            couchids.Database(client, "db")
            .with_options(batch_size=page_size, parallel=parallel)
            .window(NEW_YEAR, NEW_YEAR + 1000, type="user")
        )
        assert len(list(got)) == 2
    assert [sent["limit"] for sent in posts(http)] == [3, 3]


def test_the_database_is_looked_up_once_per_client(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    database(http)
    http.post(ALL_DOCS, json={"rows": []})
    for _ in range(3):
        couchids.Database(client, "db").latest(2, type="user")
    list(couchids.Database(client, "db").window(NEW_YEAR, NEW_YEAR + 1000))
    assert [c.request.method for c in http.calls] == ["GET", "POST", "POST", "POST", "POST"]
    other = CloudantV1(authenticator=NoAuthAuthenticator())
    other.set_service_url(URL)
    couchids.Database(other, "db").latest(2, type="user")
    assert [c.request.method for c in http.calls[5:]] == ["GET", "POST"]


@pytest.mark.parametrize("parallel", [1, 3])
@pytest.mark.parametrize("page_size", [1998, 1999, 2000, 5000])
def test_partition_requests_never_ask_for_more_than_2000_rows(
    http: responses.RequestsMock, client: CloudantV1, page_size: int, parallel: int
) -> None:
    database(http, partitioned=True)
    ids = ids_between(KUUID_REVERSE, NEW_YEAR - 5000, 2001)  # never more than 2000 per answer

    def answer(request: Any) -> tuple[int, dict[str, str], str]:
        sent = json.loads(gzip.decompress(request.body))
        assert sent["limit"] <= couchids.core.windows.PARTITION_QUERY_LIMIT
        low, high = sent["start_key"], sent["end_key"]
        page = [i for i in ids if low <= i <= high][: sent["limit"]]
        return 200, {}, json.dumps({"rows": list(map(row, page))})

    http.add_callback(
        responses.POST, PARTITION_ALL_DOCS, callback=answer, content_type="application/json"
    )
    got = list(
        couchids.Database(client, "db", form=KUUID_REVERSE)
        .with_options(batch_size=page_size, parallel=parallel)
        .window(0, NEW_YEAR, type="user")
    )
    assert len(got) == len(ids)
    limits = [s["limit"] for s in posts(http)]
    assert max(limits) <= 2000
    assert len(limits) >= 2
    first = min(page_size, 1999)
    assert limits[0] == (first if parallel == 1 else first // 2)


def test_a_429_is_retried_when_the_client_retries(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    client.enable_retries(max_retries=2, retry_interval=0.01)
    database(http)
    ids = ids_between(KUUID, NEW_YEAR, 1)
    http.post(ALL_DOCS, status=429, json={"error": "too_many_requests", "reason": "slow down"})
    http.post(ALL_DOCS, json={"rows": [row(i) for i in ids]})
    assert [d["_id"] for d in couchids.Database(client, "db").latest(1, type="user")] == ids
    assert len(posts(http)) == 2


def test_429s_past_the_retries_raise_rate_limited(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    client.enable_retries(max_retries=2, retry_interval=0.01)
    database(http)
    http.post(ALL_DOCS, status=429, json={"error": "too_many_requests", "reason": "slow down"})
    with pytest.raises(RateLimitedError) as caught:
        couchids.Database(client, "db").with_options(timeout=1).latest(1, type="user")
    assert caught.value.status == 429
    assert caught.value.__cause__ is not None
    # The client's 3 attempts, and again after a pause while the deadline allowed.
    assert len(posts(http)) > 3 and len(posts(http)) % 3 == 0


def test_a_429_without_client_retries_is_sent_again_until_the_deadline(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    database(http)
    http.post(ALL_DOCS, status=429, json={"error": "too_many_requests", "reason": "slow down"})
    with pytest.raises(RateLimitedError, match="before the call's deadline"):
        couchids.Database(client, "db").with_options(timeout=1).latest(1, type="user")
    # 0.25 s, then 0.5 s: the window held none of this client's requests (others fill it).
    assert 2 <= len(posts(http)) <= 8


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_raise_unauthorized(
    http: responses.RequestsMock, client: CloudantV1, status: int
) -> None:
    http.get(f"{URL}/db", status=status, json={"error": "unauthorized", "reason": "no"})
    with pytest.raises(UnauthorizedError) as caught:
        couchids.Database(client, "db").latest(1)
    assert caught.value.status == status


def test_a_missing_database_raises_not_found_before_any_row(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    http.get(
        f"{URL}/db", status=404, json={"error": "not_found", "reason": "Database does not exist."}
    )
    with pytest.raises(DatabaseNotFoundError):
        couchids.Database(client, "db").window(NEW_YEAR, NEW_YEAR + 1000)
    # Not cached as "unpartitioned": the next call asks again.
    http.get(
        f"{URL}/db", status=404, json={"error": "not_found", "reason": "Database does not exist."}
    )
    with pytest.raises(DatabaseNotFoundError):
        couchids.Database(client, "db").latest()


def test_a_server_error_on_a_later_page_is_raised_from_the_stream(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    database(http)
    ids = ids_between(KUUID, NEW_YEAR, 3)[::-1]
    http.post(ALL_DOCS, json={"rows": [row(i) for i in ids]})
    http.post(ALL_DOCS, status=500, json={"error": "unknown_error", "reason": "function_clause"})
    stream = (
        couchids.Database(client, "db")
        .with_options(batch_size=3)
        .window(NEW_YEAR, NEW_YEAR + 1000, type="user")
    )
    got = []
    with pytest.raises(ServerError) as caught:
        for doc in stream:
            got.append(doc["_id"])
    assert got == ids
    assert caught.value.status == 500
    assert type(caught.value) is ServerError


def test_latest_makes_one_request_once_warm(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    database(http)
    ids = ids_between(KUUID, NEW_YEAR, 10)[::-1]
    http.post(ALL_DOCS, json={"rows": [row(i) for i in ids]})
    couchids.Database(client, "db").latest(10, type="user")
    before = len(http.calls)
    assert [d["_id"] for d in couchids.Database(client, "db").latest(10, type="user")] == ids
    assert len(http.calls) - before == 1
    assert posts(http)[-1]["limit"] == 10


def test_latest_reads_on_past_foreign_ids(http: responses.RequestsMock, client: CloudantV1) -> None:
    database(http)
    ids = ids_between(KUUID, NEW_YEAR, 3)[::-1]
    stubs = ["user:" + NEXT_SECOND_KEY + "-notes", "user:" + NEXT_SECOND_KEY]  # descending
    http.post(ALL_DOCS, json={"rows": [row(i) for i in [*stubs, ids[0]]]})
    http.post(ALL_DOCS, json={"rows": [row(i) for i in ids]})
    got = couchids.Database(client, "db").latest(3, type="user")
    assert [d["_id"] for d in got] == ids
    first, second = posts(http)
    assert first["limit"] == 3
    assert second["start_key"] == ids[0]
    assert second["limit"] == couchids.core.windows.LATEST_REFILL + 1


def test_bad_arguments_send_nothing(client: CloudantV1) -> None:
    with responses.RequestsMock() as http:
        with pytest.raises(InvalidTimeError):
            couchids.Database(client, "db").window(NEW_YEAR + 1, NEW_YEAR)
        with pytest.raises(InvalidArgumentError):
            couchids.Database(client, "db").with_options(batch_size=0).window(
                NEW_YEAR, NEW_YEAR + 1
            )
        with pytest.raises(InvalidArgumentError):
            couchids.Database(client, "db").latest(-1)
        with pytest.raises(InvalidArgumentError):
            couchids.Database(client, "db").latest(True)
        assert couchids.Database(client, "db").latest(0) == []
        assert len(http.calls) == 0


def test_a_document_that_is_not_its_rows_is_refused(
    http: responses.RequestsMock, client: CloudantV1
) -> None:
    # A row inside the window holding another document, made eleven days later: what a window
    # hands out, an export writes and an archive copies then deletes is the document, while
    # the window's check is of the row's id.
    inside, later = (couchids.id(NEW_YEAR + ms, type="user") for ms in (5, 10**9))
    doc = {"_id": later, "_rev": "1-a"}
    database(http)
    http.post(ALL_DOCS, json={"rows": [{"id": inside, "key": inside, "value": {}, "doc": doc}]})
    change = {"seq": 1, "id": inside, "changes": [{"rev": "1-a"}], "doc": doc}
    http.post(f"{URL}/db/_changes", json={"results": [change], "last_seq": 1})
    handle = couchids.Database(client, "db").with_options(parallel=1)
    holds = f"not a CouchDB answer: row '{inside}' holds dict {{'_id': '{later}'"
    with pytest.raises(ServerError, match=holds):
        list(handle.window(NEW_YEAR, NEW_YEAR + 1000, type="user"))
    with pytest.raises(ServerError, match=holds):
        handle.export(NEW_YEAR, NEW_YEAR + 1000, out=io.StringIO(), type="user")
    listed = f"not a CouchDB answer: _changes listed '{inside}' with dict {{'_id': '{later}'"
    with pytest.raises(ServerError, match=listed):
        list(handle.follow(type="user", since_seq=0, wait=False))
