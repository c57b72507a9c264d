"""Errors that name the real cause (couchids/drivers/credentials.py): a refused login, basic,
CouchDB session or IAM, is an UnauthorizedError naming the credentials by where they came
from, before any database is reported missing; a server that wants credentials from a client
sending none names CLOUDANT_AUTH_TYPE. Both APIs (couchids.aio's handles here, the blocking
ones in the twin generated from this file), against the real servers (their own URLs:
the cluster's proxy would sign in for the client) and, for IAM, a token endpoint mocked with
``responses``."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import responses
from faultproxy import FaultProxy
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import Server

from couchids import DatabaseNotFoundError, ServerError, UnauthorizedError, connect
from couchids.core.urls import parse_url
from couchids.drivers.aio import AsyncClient

from .helpers import database

WRONG = "Zq9-wr0ng-pa55"
APIKEY = "k3y-0f-n0-acc0unt-XYZ"
MISSING = "test_no_such_database"
IAM_TOKEN_URL = "https://iam.cloud.ibm.com/identity/token"


@pytest.fixture(autouse=True)
def no_server_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No configuration from this machine: ibmcloudant also reads credentials files and VCAP."""
    for name in list(os.environ):
        if name.startswith("CLOUDANT_") or name in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def server_root(couch_server: Server) -> str:
    """The server's own URL (a cluster's first node), without its admin's credentials."""
    return parse_url(couch_server.url, "url", role="server").root


def a_user() -> str:
    """A user the server does not know: CouchDB locks a user out after a few failed logins,
    so each test fails its own (never the admin's)."""
    return f"nobody-{uuid.uuid4().hex[:10]}"


def set_environment(monkeypatch: pytest.MonkeyPatch, **settings: str) -> None:
    for name, value in settings.items():
        monkeypatch.setenv(f"CLOUDANT_{name.upper()}", value)


@pytest.mark.parametrize("kind", ["basic", "couchdb_session"])
async def test_a_refused_login_names_the_credentials_not_a_missing_database(
    kind: str,
    server_root: str,
    async_client_for: Callable[[CloudantV1], AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user = a_user()
    set_environment(monkeypatch, url=server_root, auth_type=kind, username=user, password=WRONG)
    with pytest.raises(UnauthorizedError) as caught:
        await database(async_client_for(connect()), MISSING).latest(1)
    message = str(caught.value)
    assert not isinstance(caught.value, DatabaseNotFoundError)
    assert message.startswith(f"latest on {MISSING!r}"), message
    assert f"user {user!r} with its password (CLOUDANT_USERNAME and CLOUDANT_PASSWORD)" in message
    if kind == "couchdb_session":
        assert "the couchdb_session login (POST /_session) was refused (HTTP 401" in message
    assert WRONG not in message and caught.value.status == 401


async def test_credentials_given_as_arguments_are_named_as_arguments(
    server_root: str, async_client_for: Callable[[CloudantV1], AsyncClient]
) -> None:
    user = a_user()
    client = connect(server_root, auth_type="couchdb_session", username=user, password=WRONG)
    with pytest.raises(UnauthorizedError) as caught:
        await database(async_client_for(client), MISSING).latest(1)
    assert f"user {user!r} with its password (the username and password arguments)" in str(
        caught.value
    )


async def test_credentials_in_the_url_are_named_so(
    server_root: str, async_client_for: Callable[[CloudantV1], AsyncClient]
) -> None:
    user = a_user()
    client = connect(server_root.replace("://", f"://{user}:{WRONG}@"), auth_type="basic")
    with pytest.raises(UnauthorizedError) as caught:
        await database(async_client_for(client), MISSING).latest(1)
    message = str(caught.value)
    assert f"user {user!r} with its password (the user:password@ of url)" in message
    assert WRONG not in message


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("where", ["environment", "argument"])
async def test_noauth_against_a_secured_server_names_the_auth_type(
    where: str,
    server_root: str,
    db: str,
    async_client_for: Callable[[CloudantV1], AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CouchDB 3 keeps a database to its admins by default: an anonymous read is refused.
    if where == "environment":
        set_environment(monkeypatch, url=server_root, auth_type="noauth")
        client = connect()
        named, advice = "CLOUDANT_AUTH_TYPE=noauth", "set CLOUDANT_AUTH_TYPE to basic"
    else:
        client = connect(server_root, auth_type="noauth")
        named, advice = "auth_type='noauth'", "pass auth_type='basic' or 'couchdb_session'"
    with pytest.raises(UnauthorizedError) as caught:
        await database(async_client_for(client), db).latest(1)
    message = str(caught.value)
    assert f"the client sends no credentials ({named}): {advice}" in message, message
    assert "CLOUDANT_USERNAME/CLOUDANT_PASSWORD or" not in message


@pytest.mark.needs("couchdb")  # PouchDB Server has no users to sign in as
async def test_the_right_credentials_still_sign_in(
    couch_server: Server,
    server_root: str,
    db: str,
    async_client_for: Callable[[CloudantV1], AsyncClient],
) -> None:
    admin = parse_url(couch_server.url, "url", role="server")
    assert admin.username is not None and admin.password is not None
    for kind in ("basic", "couchdb_session"):
        client = connect(
            server_root, auth_type=kind, username=admin.username, password=admin.password
        )
        assert await database(async_client_for(client), db).latest(1) == []


def iam_refuses(status: int, body: dict[str, Any]) -> None:
    responses.post(IAM_TOKEN_URL, status=status, json=body)


@responses.activate
@pytest.mark.parametrize("where", ["environment", "argument"])
async def test_an_api_key_the_token_service_refuses(
    where: str,
    async_client_for: Callable[[CloudantV1], AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iam_refuses(400, {"errorCode": "BXNIM0415E", "errorMessage": "Provided API key not found."})
    url = "https://acct.cloudant.example"
    if where == "environment":
        set_environment(monkeypatch, url=url, auth_type="iam", apikey=APIKEY)
        client, named = connect(), "the API key of CLOUDANT_APIKEY"
    else:
        client, named = connect(url, apikey=APIKEY), "the API key of the apikey argument"
    with pytest.raises(UnauthorizedError) as caught:
        await database(async_client_for(client), MISSING).latest(1)
    message = str(caught.value)
    assert message.startswith(f"latest on {MISSING!r}")
    assert "the IAM token request was refused (HTTP 400: Provided API key not found.)" in message
    assert message.endswith(named), message
    assert APIKEY not in message
    # Refused before anything was asked of the server, and not asked again.
    assert [call.request.url for call in responses.calls] == [IAM_TOKEN_URL]


@responses.activate
async def test_a_token_service_that_fails_is_not_a_refusal(
    async_client_for: Callable[[CloudantV1], AsyncClient],
) -> None:
    responses.post(IAM_TOKEN_URL, status=503, json={"errorMessage": "try later"})
    client = connect("https://acct.cloudant.example", apikey=APIKEY)
    with pytest.raises(ServerError) as caught:
        await database(async_client_for(client), MISSING).latest(1)
    assert not isinstance(caught.value, UnauthorizedError)
    assert "HTTP 503" in str(caught.value)


@pytest.mark.parametrize("kind", ["basic", "couchdb_session"])
async def test_a_refused_login_sends_no_second_batch(
    kind: str, server_root: str, async_client_for: Callable[[CloudantV1], AsyncClient]
) -> None:
    # Each failed login brings a lockout nearer: the batch after a refused one is never sent.
    with FaultProxy(server_root) as proxy:
        client = connect(proxy.url, auth_type=kind, username=a_user(), password=WRONG)
        handle = database(async_client_for(client), MISSING, batch_size=1)
        with pytest.raises(UnauthorizedError) as caught:
            await handle.bulk_create([{"n": n} for n in range(3)])
        logins = proxy.requests("POST", "/_session$" if kind == "couchdb_session" else "_bulk")
    assert len(logins) == 1, proxy.log
    assert WRONG not in str(caught.value)
