"""Every operation of couchids under IBM Cloudant's rules, through the Cloudant-rules server
(tests/cloudantproxy.py) in front of the server under test, in both APIs.

- **IAM only**: the proxy takes nothing but bearer tokens from its own token endpoint (IBM's
  ``POST /identity/token``), and refuses basic credentials and ``_session`` logins. Each
  operation of ``Database``, ``Series`` and ``Replication`` (and the command, for a few) runs
  with an ``IAMAuthenticator`` client and is checked for its exact result; the proxy refused
  none of its requests.
- **Sizes**: with a 1 MB request limit and a 100 KB document limit, the writes (``bulk_create``,
  ``bulk_create_iter``, ``create``, ``rekey``, ``archive``, a series' writes) store every
  document that fits exactly once and report the one that does not.
- **Cap**: what creates databases (a series' ``prepare`` and writes, ``rekey`` with
  ``create_target``) is refused past the cap with ``DatabaseLimitError``, nothing stored; a
  replication whose target the server's replicator would create fails (on CouchDB).
- **No purge**: ``expire(purge=True)`` is refused before anything is deleted.

(The rate limits are tests/test_pacing.py's.) Each case runs its operation on a small data
set: ``N`` documents of type ``click``, a minute apart from ``T0``, written straight to the
server. The cases of both APIs are written once, in tests/_async/test_cloudant_rules.py (and
its generated blocking twin); the setting, the data set and the tests of the proxy and the
command are here. The default run takes each case in one API, the other one under the
``full`` marker (CI runs both).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from cloudantproxy import APIKEY, CloudantProxy
from conftest import drop_database, fresh_database
from faultproxy import all_docs
from ibm_cloud_sdk_core.authenticators import BasicAuthenticator, IAMAuthenticator
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import (
    ServerError,
    UnauthorizedError,
)
from couchids.cli.main import EXIT_OK, main

#: The data set: N documents of type "click", one a minute from T0 (the last minutes of a day).
N = 10
T0 = datetime(2024, 5, 1, 23, 50, tzinfo=UTC)
END = T0 + timedelta(minutes=N)
MINUTE = timedelta(minutes=1)
#: rekey's secret for the random part of the new ids.
SECRET = b"k"
#: The proxy's limits in the size cases: a request, a document.
REQUEST_BYTES, DOCUMENT_BYTES = 1_000_000, 100_000


# -- the setting: an IAM-only Cloudant-rules server in front of the server under test ------------


@dataclass
class Setting:
    """What a case runs against: ``proxy`` (IAM only) in front of the server under test;
    ``iam`` a client of the proxy with IBM Cloud IAM; ``admin`` a client of the server itself,
    to check what is stored; ``db`` a database holding the data set, whose ids (oldest first)
    are ``ids``; ``kind`` the server under test."""

    proxy: CloudantProxy
    iam: CloudantV1
    admin: CloudantV1
    db: str
    ids: list[str]
    kind: str

    def stored(self, db: str | None = None) -> dict[str, dict[str, Any]]:
        return all_docs(self.admin, db or self.db)

    def name(self, suffix: str) -> str:
        """A database name of the test's own (dropped after it)."""
        return f"{self.db}-{suffix}"


def iam_client(proxy: CloudantProxy) -> CloudantV1:
    """A client that signs in with an API key at the proxy's token endpoint."""
    client = CloudantV1(authenticator=IAMAuthenticator(APIKEY, url=proxy.url))
    client.set_service_url(proxy.url)
    client.set_http_config({"proxies": {"http": None, "https": None}})
    return client


def made_at(doc: dict[str, Any]) -> datetime:
    return T0 + doc["n"] * MINUTE


@pytest.fixture
def setting(
    cloudant_proxy: Callable[..., CloudantProxy],
    client: CloudantV1,
    couch_server: Any,
) -> Iterator[Callable[..., Setting]]:
    yield from a_setting(cloudant_proxy, client, couch_server)


def a_setting(
    cloudant_proxy: Callable[..., CloudantProxy],
    client: CloudantV1,
    couch_server: Any,
) -> Iterator[Callable[..., Setting]]:
    """``setting(**proxy_options)``: the data set in a new database, and an IAM-only proxy
    (plan=None: no rate limit) with those options; every database of the test is dropped (a
    fixture's body)."""
    made: list[str] = []

    def start(**options: Any) -> Setting:
        db = fresh_database(client)
        made.append(db)
        docs = [{"n": n, "at": made_at({"n": n}).isoformat()} for n in range(N)]
        results = couchids.Database(client, db).bulk_create(docs, type="click", time_of=made_at)
        proxy = cloudant_proxy(plan=None, iam_only=True, **options)
        ids = [r.id for r in results]
        return Setting(proxy, iam_client(proxy), client, db, ids, couch_server.kind)

    yield start
    for name in client.get_all_dbs().get_result():
        if any(name.startswith(db) for db in made):
            drop_database(client, name)


# -- both APIs, one sample -----------------------------------------------------------------------


def sampled(cases: Iterable[str], module: str) -> list[Any]:
    """The names of ``cases`` as parameters of a test of ``module`` (``__name__`` of
    tests/_async/test_cloudant_rules.py or of its blocking twin): each case runs in both APIs,
    one of them in the default run (the blocking one for the first case, then alternating),
    the other marked ``full``."""
    turn = 1 if "_async" in module.split(".") else 0
    return [
        pytest.param(name, marks=[pytest.mark.full] if (index + turn) % 2 else [])
        for index, name in enumerate(cases)
    ]


# -- the control, and the command ----------------------------------------------------------------


def test_the_proxy_takes_nothing_but_its_tokens(setting: Callable[..., Setting]) -> None:
    """The control: basic credentials, a ``_session`` login and no credentials are refused
    (and each operation's client would have failed with them)."""
    s = setting()
    basic = CloudantV1(authenticator=BasicAuthenticator("admin", "pass"))
    session = CloudantV1(authenticator=CouchDbSessionAuthenticator("admin", "pass"))
    for other in (basic, session):
        other.set_service_url(s.proxy.url)
        other.set_http_config({"proxies": {"http": None, "https": None}})
        with pytest.raises(UnauthorizedError):
            couchids.Database(other, s.db).latest(1, type="click")
    with requests.Session() as http:
        http.trust_env = False
        assert http.get(f"{s.proxy.url}/{s.db}").status_code == 401
        login = base64.b64encode(b"admin:pass").decode()
        answer = http.get(f"{s.proxy.url}/{s.db}", headers={"Authorization": f"Basic {login}"})
        assert answer.status_code == 401
    assert s.proxy.refused["iam-only"] >= 4


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            [
                "count",
                "DB",
                "--type",
                "click",
                "--since",
                T0.isoformat(),
                "--until",
                END.isoformat(),
            ],
            f"{N}\n",
        ),
        (["latest", "DB", "--type", "click", "-n", "2"], None),
    ],
    ids=["count", "latest"],
)
def test_the_command_signs_in_with_iam_only(
    argv: list[str],
    expected: str | None,
    setting: Callable[..., Setting],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    s = setting()
    for name in ("CLOUDANT_USERNAME", "CLOUDANT_PASSWORD", "VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    for variable, value in (
        ("URL", s.proxy.url),
        ("AUTH_TYPE", "iam"),
        ("APIKEY", APIKEY),
        ("AUTH_URL", s.proxy.url),
    ):
        monkeypatch.setenv(f"CLOUDANT_{variable}", value)
    assert main([s.db if arg == "DB" else arg for arg in argv]) == EXIT_OK
    out, err = capsys.readouterr()
    if expected is not None:
        assert out == expected
    else:
        assert [json.loads(line)["_id"] for line in out.splitlines()] == s.ids[::-1][:2]
    assert err == "" and APIKEY not in out
    assert s.proxy.tokens and not s.proxy.refused


# -- sizes: a request at most 1 MB, a document at most 100 KB --------------------------------------


#: Documents of 4 KB (300 of them: 1.2 MB, over one request) and one of 200 KB.
SMALL = [{"n": n, "at": (T0 + n * MINUTE).isoformat(), "pad": "x" * 4000} for n in range(300)]
BIG = {"n": -1, "at": T0.isoformat(), "pad": "x" * 200_000}


def sized(setting: Callable[..., Setting]) -> Setting:
    return setting(max_request_bytes=REQUEST_BYTES, max_document_bytes=DOCUMENT_BYTES)


def with_big(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*docs[:150], BIG, *docs[150:]]


def only_the_big_failed(results: list[Any]) -> list[Any]:
    failed = [r for r in results if r.error is not None]
    assert len(failed) == 1 and len(results) == len(SMALL) + 1
    error = failed[0].error
    assert isinstance(error, ServerError) and error.status == 413, error
    return [r for r in results if r.error is None]


def past_day(day: int) -> datetime:
    return datetime(2024, 2, 1 + day, 12, tzinfo=UTC)


def fill_with_big(s: Setting) -> str:
    """The 300 small documents and the big one in a new source database, written straight;
    the big one's id."""
    source = s.name("big")
    s.admin.put_database(db=source).get_result()
    handle = couchids.Database(s.admin, source)
    results = handle.bulk_create(
        with_big(SMALL), type="big", time_of=lambda d: T0 + d["n"] * MINUTE
    )
    assert all(r.ok for r in results)
    return next(r.id for r, doc in zip(results, with_big(SMALL), strict=True) if doc is BIG)
