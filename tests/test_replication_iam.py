"""Replication with IAM credentials (Database.replicate with an IAM client).

The API key goes into the ``_replicator`` document in the form the server's replicator reads:
``auth.iam.api_key`` on IBM Cloudant, ``auth.ibm.api_key`` on Apache CouchDB (its
``couch_replicator_auth_ibm`` plugin), chosen by the server's welcome; and nowhere else: not
in a message, a repr, a log record, nor the command's output.

With ``responses``: IBM's token endpoint and a Cloudant (or CouchDB) server, checking the
exact document PUT to ``_replicator``. With the Cloudant-rules proxy in IAM-only mode in front
of a CouchDB node: basic credentials and ``_session`` are refused, the IAM client is taken,
and the ``_replicator`` document holds the API key (the 3.4.3 node has no IAM plugin, so the
document is checked, not the copy).
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import logging
import os
import re
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import responses
from cloudantproxy import APIKEY as PROXY_APIKEY
from cloudantproxy import CloudantProxy
from conftest import drop_database, fresh_database
from ibm_cloud_sdk_core.authenticators import IAMAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import aio
from couchids.cli.main import EXIT_OK, main
from couchids.core import replication as core

APIKEY = "iam-k3y-N0t-t0-b3-s33n-7Q"
TOKEN_URL = "https://iam.cloud.ibm.com/identity/token"
SERVER = "https://acct.cloudant.example"
START, END = datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 2, tzinfo=UTC)
CLOUDANT_WELCOME = {
    "couchdb": "Welcome",
    "version": "3.3.3",
    "vendor": {"name": "IBM Cloudant", "version": "8521", "variant": "paas"},
}
COUCHDB_WELCOME = {
    "couchdb": "Welcome",
    "version": "3.5.3",
    "vendor": {"name": "The Apache Software Foundation"},
}


@pytest.fixture(autouse=True)
def no_server_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No configuration from this machine: ibmcloudant also reads credentials files and VCAP."""
    for name in list(os.environ):
        if name.startswith("CLOUDANT_") or name in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)


def test_the_auth_object_is_the_one_each_server_reads() -> None:
    iam = core.Credentials("iam", secret="KEY")
    assert iam.auth("cloudant") == {"iam": {"api_key": "KEY"}}
    assert iam.auth("couchdb") == {"ibm": {"api_key": "KEY"}}
    basic = core.Credentials("basic", "u", "p")
    for server in ("cloudant", "couchdb"):
        assert basic.auth(server) == {"basic": {"username": "u", "password": "p"}}
    source, target = core.endpoints(SERVER, iam, "shop", "edge")
    assert "KEY" not in repr(source) + repr(target) + repr(iam)
    assert repr(source) == f"Endpoint('{SERVER}/shop', IAM auth)"


# -- responses: IBM's token endpoint and the server ----------------------------------------------


def a_jwt(claims: dict[str, Any]) -> str:
    """An unsigned-looking JWT (the SDK reads its times, it checks no signature)."""

    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


TOKEN = a_jwt({"iat": 1700000000, "exp": 4102444800, "sub": "test"})


class Cloudant:
    """IBM's token endpoint (``responses``) and a server with ``welcome``, to the blocking
    client (``responses``) and to the asyncio one (:meth:`http`, an ``httpx`` mock).
    ``written``: the documents PUT to ``_replicator``. Every request to the server must carry
    the bearer token, and none the API key."""

    def __init__(self, welcome: dict[str, Any], *, echo: bool = False) -> None:
        self.welcome = welcome
        #: Refuse the ``_replicator`` document, quoting it in the reason (a hostile server).
        self.echo = echo
        self.written: list[dict[str, Any]] = []
        responses.post(
            TOKEN_URL,
            json={
                "access_token": TOKEN,
                "refresh_token": "r",
                "token_type": "Bearer",
                "expires_in": 3600,
                "expiration": 4102444800,
            },
        )
        for method in (responses.GET, responses.PUT):
            responses.add_callback(
                method,
                re.compile(re.escape(SERVER) + ".*"),
                callback=self._blocking,
                content_type="application/json",
            )

    def answer(
        self, method: str, url: str, headers: Any, body: bytes
    ) -> tuple[int, dict[str, Any]]:
        assert headers.get("Authorization") == f"Bearer {TOKEN}"
        assert APIKEY not in url and APIKEY not in str(dict(headers))
        path = url.removeprefix(SERVER).split("?")[0]
        if method == "GET" and path in ("", "/"):
            return 200, self.welcome
        if method == "GET" and path == "/shop":
            return 200, {"db_name": "shop", "doc_count": 0, "props": {}}
        if method == "PUT" and path.startswith("/_replicator/couchids-"):
            if headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            self.written.append(json.loads(body))
            if self.echo:
                return 400, {"error": "bad_request", "reason": body.decode()}
            return 201, {"ok": True, "id": path.split("/")[-1], "rev": "1-a"}
        if method == "GET" and path.startswith("/_scheduler/docs/_replicator/"):
            doc_id = path.split("/")[-1]
            return 200, {"doc_id": doc_id, "database": "_replicator", "state": "running"}
        return 500, {"error": "unexpected", "reason": f"{method} {path}"}

    def _blocking(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        body = request.body if isinstance(request.body, bytes) else str(request.body).encode()
        status, reply = self.answer(str(request.method), str(request.url), request.headers, body)
        return status, {}, json.dumps(reply)

    def http(self) -> httpx.AsyncClient:
        def handle(request: httpx.Request) -> httpx.Response:
            status, reply = self.answer(
                request.method, str(request.url), request.headers, request.read()
            )
            return httpx.Response(status, json=reply)

        return httpx.AsyncClient(transport=httpx.MockTransport(handle))


def the_document(written: list[dict[str, Any]], auth: dict[str, Any]) -> None:
    (doc,) = written
    assert doc["_id"].startswith("couchids-")
    selector = core.window_selector(["order"], 1714521600000, 1714608000000, couchids.KUUID)
    assert doc == {
        "_id": doc["_id"],
        "source": {"url": f"{SERVER}/shop", "auth": auth},
        "target": {"url": f"{SERVER}/edge", "auth": auth},
        "selector": selector,
        "continuous": True,
        "create_target": True,
    }


def iam_client() -> CloudantV1:
    client = CloudantV1(authenticator=IAMAuthenticator(APIKEY))
    client.set_service_url(SERVER)
    return client


@responses.activate
@pytest.mark.parametrize(
    ("welcome", "auth"),
    [
        (CLOUDANT_WELCOME, {"iam": {"api_key": APIKEY}}),
        (COUCHDB_WELCOME, {"ibm": {"api_key": APIKEY}}),
    ],
    ids=["cloudant", "couchdb"],
)
@pytest.mark.parametrize("which", ["blocking", "aio"])
def test_an_iam_client_writes_the_api_key_the_server_reads(
    welcome: dict[str, Any],
    auth: dict[str, Any],
    which: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Cloudant(welcome)
    caplog.set_level(logging.DEBUG)
    if which == "blocking":
        job = couchids.Database(iam_client(), "shop").replicate(
            "edge", START, END, type="order", continuous=True
        )
        shown = repr(job) + repr(job.status())
    else:

        async def in_aio() -> str:
            async with server.http() as http, aio.AsyncClient(iam_client(), http) as ac:
                job = await aio.AsyncDatabase(ac, "shop").replicate(
                    "edge", START, END, type="order", continuous=True
                )
                return repr(job) + repr(await job.status())

        shown = asyncio.run(in_aio())
    the_document(server.written, auth)
    assert "running" in shown
    assert APIKEY not in shown
    assert APIKEY not in caplog.text
    assert TOKEN_URL in [call.request.url for call in responses.calls]


@responses.activate
def test_the_command_shows_no_api_key(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Cloudant(CLOUDANT_WELCOME)
    caplog.set_level(logging.DEBUG)
    for name, value in (("URL", SERVER), ("AUTH_TYPE", "iam"), ("APIKEY", APIKEY)):
        monkeypatch.setenv(f"CLOUDANT_{name}", value)
    argv = ["replicate", "shop", "edge", "--since", START.isoformat(), "--until", END.isoformat()]
    assert main([*argv, "--type", "order", "--continuous"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert json.loads(out)["state"] == "running"
    the_document(server.written, {"iam": {"api_key": APIKEY}})
    assert APIKEY not in out + err + caplog.text


@responses.activate
@pytest.mark.parametrize("which", ["blocking", "aio"])
def test_a_refused_document_shows_no_api_key(which: str, caplog: pytest.LogCaptureFixture) -> None:
    server = Cloudant(CLOUDANT_WELCOME, echo=True)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(couchids.ServerError) as caught:
        if which == "blocking":
            couchids.Database(iam_client(), "shop").replicate("edge", START, END, type="order")
        else:

            async def in_aio() -> None:
                async with server.http() as http, aio.AsyncClient(iam_client(), http) as ac:
                    await aio.AsyncDatabase(ac, "shop").replicate("edge", START, END, type="order")

            asyncio.run(in_aio())
    assert server.written, "the document was not sent"
    shown = "".join(traceback.format_exception(caught.value)) + repr(caught.value) + caplog.text
    assert APIKEY not in shown
    assert "replicate on '_replicator'" in str(caught.value)


# -- the Cloudant-rules proxy, IAM only, in front of a CouchDB node ------------------------------


@pytest.fixture
def iam_only(
    cloudant_proxy: Callable[..., CloudantProxy], client: CloudantV1
) -> Iterator[tuple[CloudantProxy, str]]:
    """An IAM-only proxy in front of the server under test, and a new database behind it."""
    db = fresh_database(client)
    try:
        yield cloudant_proxy(plan=None, iam_only=True), db
    finally:
        drop_database(client, db)


def proxied_iam_client(proxy: CloudantProxy) -> CloudantV1:
    c = CloudantV1(authenticator=IAMAuthenticator(PROXY_APIKEY, url=proxy.url))
    c.set_service_url(proxy.url)
    c.set_http_config({"proxies": {"http": None, "https": None}})
    return c


def replicator_doc(client: CloudantV1, doc_id: str) -> dict[str, Any]:
    doc: dict[str, Any] = client.get_document(db="_replicator", doc_id=doc_id).get_result()
    return doc


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("which", ["blocking", "aio"])
def test_an_iam_only_instance_gets_the_api_key_in_the_replicator_document(
    iam_only: tuple[CloudantProxy, str],
    client: CloudantV1,
    which: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxy, db = iam_only
    http = requests.Session()
    http.trust_env = False
    basic = "Basic " + base64.b64encode(b"admin:secret").decode()
    assert http.get(f"{proxy.url}/{db}", headers={"Authorization": basic}).status_code == 401
    assert (
        http.post(f"{proxy.url}/_session", data={"name": "a", "password": "b"}).status_code == 401
    )
    caplog.set_level(logging.DEBUG)
    target = f"{db}-edge"
    shown: list[str] = []

    def check(doc_id: str) -> None:
        doc = replicator_doc(client, doc_id)
        # Behind the proxy is Apache CouchDB (its welcome says so): the key goes where
        # CouchDB's couch_replicator_auth_ibm reads it.
        auth = {"ibm": {"api_key": PROXY_APIKEY}}
        assert doc["source"] == {"url": f"{proxy.url}/{db}", "auth": auth}
        assert doc["target"] == {"url": f"{proxy.url}/{target}", "auth": auth}

    try:
        if which == "blocking":
            job = couchids.Database(proxied_iam_client(proxy), db).replicate(
                target, START, END, type="order", continuous=True
            )
            shown.append(repr(job))
            try:
                check(job.doc_ids[0])
            finally:
                job.cancel()
        else:

            async def in_aio() -> None:
                async with aio.AsyncClient(proxied_iam_client(proxy)) as ac:
                    job = await aio.AsyncDatabase(ac, db).replicate(
                        target, START, END, type="order", continuous=True
                    )
                    shown.append(repr(job))
                    try:
                        check(job.doc_ids[0])
                    finally:
                        await job.cancel()

            asyncio.run(in_aio())
        assert PROXY_APIKEY not in "".join(shown) + caplog.text
        assert proxy.refused["iam-only"] >= 2
    finally:
        if target in client.get_all_dbs().get_result():
            drop_database(client, target)
