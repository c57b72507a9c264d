"""The Cloudant-rules server (tests/cloudantproxy.py) keeps each rule of its table: every row is
provoked once and answered as the row says, and a request just inside it passes through to
the real server behind (its log says ``forwarded``)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from cloudantproxy import APIKEY, RULE, RULES, CloudantProxy, Plan, request_class
from faultproxy import client_for, update_count
from ibm_cloud_sdk_core.authenticators import IAMAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

Start = Callable[..., CloudantProxy]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        session.trust_env = False  # loopback only, whatever the environment names
        yield session


def refused(answer: requests.Response, rule: str) -> dict[str, Any]:
    """Checks that ``answer`` is the refusal of ``rule``; its JSON body."""
    body: dict[str, Any] = answer.json()
    assert answer.status_code == RULE[rule].status, (answer.status_code, body)
    assert body["error"] == RULE[rule].error
    assert isinstance(body["reason"], str)
    return body


def last(proxy: CloudantProxy) -> str:
    return proxy.log[-1].outcome


#: The test that provokes each row of the table.
COVERED = {
    "read": "test_rate_limit_per_class",
    "write": "test_rate_limit_per_class",
    "query": "test_rate_limit_per_class",
    "request-body": "test_request_body_limit",
    "document-size": "test_document_limit",
    "database-cap": "test_database_cap",
    "no-purge": "test_no_purge",
    "partition-limit": "test_partition_limit",
    "partition-timeout": "test_partition_timeout",
    "iam-only": "test_iam_only",
    "login": "test_lockout",
    "lockout": "test_lockout",
}


def test_every_row_is_provoked_and_cited() -> None:
    assert set(COVERED) == {rule.name for rule in RULES}
    for name in set(COVERED.values()):
        assert callable(globals()[name])
    for rule in RULES:
        assert rule.source and rule.what


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        ("GET", "/", None),
        ("GET", "/_all_dbs", None),
        ("GET", "/db", None),
        ("PUT", "/db", None),
        ("DELETE", "/db", None),
        ("POST", "/_replicate", None),
        ("GET", "/db/doc", "read"),
        ("HEAD", "/db/doc", "read"),
        ("GET", "/db/_design/d", "read"),
        ("GET", "/db/_local/x", "read"),
        ("GET", "/db/_partition/p/_all_docs", "read"),
        ("POST", "/db/_partition/p/_find", "read"),
        ("GET", "/db/_partition/p/_design/d/_view/v", "read"),
        ("PUT", "/db/doc", "write"),
        ("DELETE", "/db/doc", "write"),
        ("POST", "/db", "write"),
        ("POST", "/db/_bulk_docs", "write"),
        ("GET", "/db/_all_docs", "query"),
        ("POST", "/db/_all_docs", "query"),
        ("POST", "/db/_bulk_get", "query"),
        ("POST", "/db/_find", "query"),
        ("GET", "/db/_changes", "query"),
        ("GET", "/db/_design/d/_view/v", "query"),
        ("GET", "/db/_design/d/_search/s", "query"),
    ],
)
def test_request_classes(method: str, path: str, kind: str | None) -> None:
    segments = path.strip("/").split("/") if path.strip("/") else []
    assert request_class(method, segments) == kind


def test_rate_limit_per_class(start: Start, http: requests.Session, db: str) -> None:
    clock = Clock()
    proxy = start(plan=Plan(reads=3, writes=2, queries=1), clock=clock)
    base = f"{proxy.url}/{db}"
    sends = {
        "read": lambda n: http.get(f"{base}/missing{n}"),
        "write": lambda n: http.put(f"{base}/w{uuid.uuid4().hex}", json={"n": n}),
        "query": lambda n: http.get(f"{base}/_all_docs"),
    }
    limits = {"read": 3, "write": 2, "query": 1}
    for kind, send in sends.items():
        for n in range(limits[kind]):
            answer = send(n)
            assert answer.status_code != 429 and last(proxy) == "forwarded", kind
            assert answer.headers["X-Cloudant-Request-Class"] == kind
        body = refused(send(99), kind)
        assert f"limit of {limits[kind]} requests per second for {kind} class" in body["reason"]
        # Uncounted requests pass while every class is spent.
        assert http.get(f"{base}").status_code == 200
    clock.now += 0.999  # still inside the sliding second
    for kind, send in sends.items():
        refused(send(99), kind)
    clock.now += 0.001  # the first requests leave the window
    for kind, send in sends.items():
        assert send(100).status_code != 429, kind
    assert proxy.refused == {"read": 2, "write": 2, "query": 2}


def test_request_body_limit(
    start: Start, http: requests.Session, client: CloudantV1, db: str
) -> None:
    proxy = start(plan=None, max_request_bytes=1000)
    before = update_count(client, db)
    docs = {"docs": [{"_id": f"d{i}", "text": "x" * 80} for i in range(10)]}
    size = len(json.dumps(docs))
    assert size > 1000
    answer = http.post(
        f"{proxy.url}/{db}/_bulk_docs",
        data=json.dumps(docs),
        headers={"Content-Type": "application/json"},
    )
    refused(answer, "request-body")
    assert update_count(client, db) == before  # refused whole: nothing stored
    docs["docs"] = docs["docs"][:5]
    answer = http.post(f"{proxy.url}/{db}/_bulk_docs", json=docs)
    assert answer.status_code == 201 and last(proxy) == "forwarded"
    assert len(answer.json()) == 5


def test_document_limit(start: Start, http: requests.Session, client: CloudantV1, db: str) -> None:
    proxy = start(plan=None, max_document_bytes=500)
    before = update_count(client, db)
    small, big = {"_id": "small", "t": "x" * 400}, {"_id": "big", "t": "x" * 600}
    answer = http.post(f"{proxy.url}/{db}/_bulk_docs", json={"docs": [small, big]})
    assert refused(answer, "document-size")["reason"] == "big"
    answer = http.put(f"{proxy.url}/{db}/big", json={"t": "x" * 600})
    assert refused(answer, "document-size")["reason"] == "big"
    assert update_count(client, db) == before  # nothing of either request stored
    # The body is measured, not _id: a document of 492 body bytes and a long id passes.
    inside = {"_id": "i" * 200, "t": "x" * 484}
    answer = http.post(f"{proxy.url}/{db}/_bulk_docs", json={"docs": [small, inside]})
    assert answer.status_code == 201 and last(proxy) == "forwarded"


def test_database_cap(start: Start, http: requests.Session, client: CloudantV1) -> None:
    proxy = start(plan=None, max_databases=2)
    names = [f"test_{uuid.uuid4().hex}" for _ in range(3)]
    try:
        for name in names[:2]:
            assert http.put(f"{proxy.url}/{name}").status_code == 201
        refused(http.put(f"{proxy.url}/{names[2]}"), "database-cap")
        assert http.get(f"{proxy.url}/{names[2]}").status_code == 404  # not made
        assert http.delete(f"{proxy.url}/{names[0]}").status_code == 200
        assert http.put(f"{proxy.url}/{names[2]}").status_code == 201
        assert proxy.databases == {names[1], names[2]}
    finally:
        for name in names:
            http.delete(f"{proxy.url}/{name}")


def test_no_purge(start: Start, http: requests.Session, db: str) -> None:
    proxy = start(plan=None)
    refused(http.post(f"{proxy.url}/{db}/_purge", json={"x": ["1-a"]}), "no-purge")
    open_proxy = start(plan=None, purge=True)
    answer = http.post(f"{open_proxy.url}/{db}/_purge", json={"x": ["1-a"]})
    assert last(open_proxy) == "forwarded"
    assert answer.json().get("error") != "not_implemented" or answer.status_code != 501


def test_partition_limit(start: Start, http: requests.Session, db: str) -> None:
    proxy = start(plan=None)
    url = f"{proxy.url}/{db}/_partition/p/_all_docs"
    body = refused(http.get(url, params={"limit": 2001}), "partition-limit")
    assert body["reason"] == "Limit is too large, must not exceed 2000"
    refused(http.post(url, json={"limit": 2001}), "partition-limit")
    http.get(url, params={"limit": 2000})
    assert last(proxy) == "forwarded"


@pytest.mark.needs("couchdb")
def test_partition_default_limit(start: Start, client: CloudantV1, partitioned_db: str) -> None:
    docs = [{"_id": f"p:{i:03}"} for i in range(5)]
    client.post_bulk_docs(db=partitioned_db, bulk_docs={"docs": docs})
    proxy = start(plan=None, partition_limit=3)
    through = client_for(proxy.url)
    rows = through.post_partition_all_docs(db=partitioned_db, partition_key="p").get_result()
    assert [row["id"] for row in rows["rows"]] == ["p:000", "p:001", "p:002"]


def test_partition_timeout(start: Start, http: requests.Session, db: str) -> None:
    clock = Clock()

    def slow() -> float:
        clock.now += 6.0  # every reading of the clock is 6 s later
        return clock.now

    proxy = start(plan=None, clock=slow)
    refused(http.get(f"{proxy.url}/{db}/_partition/p/_all_docs"), "partition-timeout")
    fast = start(plan=None, clock=clock)
    http.get(f"{fast.url}/{db}/_partition/p/_all_docs")
    assert last(fast) == "forwarded"


def test_iam_only(start: Start, http: requests.Session, db: str) -> None:
    proxy = start(plan=None, iam_only=True)
    basic = "Basic " + base64.b64encode(b"admin:secret").decode()
    refused(http.get(f"{proxy.url}/{db}", headers={"Authorization": basic}), "iam-only")
    refused(http.get(f"{proxy.url}/{db}"), "iam-only")
    session = http.post(f"{proxy.url}/_session", data={"name": "admin", "password": "secret"})
    refused(session, "iam-only")
    refused(http.get(f"{proxy.url}/{db}", headers={"Authorization": "Bearer made-up"}), "iam-only")
    wrong = http.post(f"{proxy.url}/identity/token", data={"apikey": "wrong"})
    assert wrong.status_code == 400
    client = CloudantV1(authenticator=IAMAuthenticator(APIKEY, url=proxy.url))
    client.set_service_url(proxy.url)
    client.set_http_config({"proxies": {"http": None, "https": None}})
    assert client.get_database_information(db=db).get_result()["db_name"] == db
    assert last(proxy) == "forwarded"


def test_lockout(start: Start, http: requests.Session, db: str) -> None:
    clock = Clock()
    proxy = start(
        plan=None, users={"alice": "right"}, lockout_after=3, lockout_seconds=60, clock=clock
    )

    def as_alice(password: str) -> requests.Response:
        return http.get(f"{proxy.url}/{db}", auth=("alice", password))

    assert as_alice("right").status_code == 200 and last(proxy) == "forwarded"
    refused(http.get(f"{proxy.url}/{db}"), "login")
    for _ in range(3):
        body = refused(as_alice("wrong"), "login")
        assert body["reason"] == "Name or password is incorrect."
    body = refused(as_alice("right"), "lockout")
    assert "temporarily locked" in body["reason"]
    clock.now += 60
    assert as_alice("right").status_code == 200
    # A _session login gives a cookie that is taken in place of the password.
    login = http.post(f"{proxy.url}/_session", data={"name": "alice", "password": "right"})
    assert login.status_code == 200 and "AuthSession" in http.cookies
    assert http.get(f"{proxy.url}/{db}").status_code == 200


@pytest.fixture
def start(cloudant_proxy: Start) -> Start:
    return cloudant_proxy
