"""couchids.connect (couchids/drivers/connecting.py): a client from CLOUDANT_* or arguments,
and errors that say what to set; and the README's Quickstart, which uses it, run twice."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import responses
from ibm_cloud_sdk_core.authenticators import (
    BasicAuthenticator,
    IAMAuthenticator,
    NoAuthAuthenticator,
)
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from test_readme import python_blocks

import couchids
from couchids import InvalidArgumentError, aio, connect
from couchids.cli.main import EXIT_BAD_INPUT, main
from couchids.drivers.connecting import cloudant_client

PASSWORD = "pa55-Wr0ng-s3cret"
APIKEY = "k3y-0f-n0-acc0unt-XYZ"
LOOPBACK = "http://127.0.0.1:59841"


@pytest.fixture(autouse=True)
def no_server_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No configuration from this machine: ibmcloudant also reads credentials files and VCAP."""
    for name in list(os.environ):
        if name.startswith("CLOUDANT_") or name in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)


def refused(**kwargs: str) -> str:
    with pytest.raises(InvalidArgumentError) as info:
        connect(**kwargs)
    message = str(info.value)
    for secret in (PASSWORD, APIKEY):
        assert secret not in message
    return message


def test_no_url_says_what_to_set() -> None:
    message = refused()
    assert "set CLOUDANT_URL, e.g. http://127.0.0.1:5984" in message
    assert "CLOUDANT_AUTH_TYPE to noauth" in message and "iam with CLOUDANT_APIKEY" in message


@pytest.mark.parametrize("url", ["127.0.0.1:5984", "localhost:5984", "db.example:443/x"])
def test_a_url_without_a_scheme_gets_http_suggested(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.setenv("CLOUDANT_URL", url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    message = refused()
    assert message == (
        f"CLOUDANT_URL={url!r} has no http:// or https:// scheme: write it with its scheme, "
        f"e.g. http://{url}"
    )
    # The same from the argument, named as the argument.
    assert refused(url=url).startswith(f"url={url!r} has no http://")


def test_a_url_of_another_scheme() -> None:
    message = refused(url="ftp://127.0.0.1", auth_type="noauth")
    assert "give an http:// or https:// URL, e.g. http://127.0.0.1:5984" in message


def test_a_url_without_a_scheme_never_shows_its_password() -> None:
    message = refused(url=f"bob:{PASSWORD}@127.0.0.1:5984", auth_type="basic")
    assert "has no http:// or https:// scheme" in message and "***@127.0.0.1:5984" in message


def test_a_missing_auth_type_lists_the_accepted_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDANT_URL", LOOPBACK)
    message = refused()
    assert message.startswith("CLOUDANT_AUTH_TYPE is not set (nor auth_type=)")
    assert "container authentication" in message
    for name in ("noauth", "basic", "couchdb_session", "iam", "bearertoken", "vpc"):
        assert name in message


@pytest.mark.parametrize(("where", "named"), [("env", "CLOUDANT_AUTH_TYPE"), ("arg", "auth_type")])
def test_an_unknown_auth_type_lists_the_accepted_ones(
    monkeypatch: pytest.MonkeyPatch, where: str, named: str
) -> None:
    monkeypatch.setenv("CLOUDANT_URL", LOOPBACK)
    if where == "env":
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "magic")
        message = refused()
    else:
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")  # the argument wins
        message = refused(auth_type="magic")
    assert message.startswith(f"{named}='magic' is not an authentication type: use noauth for ")
    assert "basic or couchdb_session with CLOUDANT_USERNAME and CLOUDANT_PASSWORD" in message


@pytest.mark.parametrize("kind", ["basic", "couchdb_session"])
def test_password_types_need_the_credentials(kind: str) -> None:
    message = refused(url=LOOPBACK, auth_type=kind, username="bob")
    assert message.startswith(
        f"{kind} authentication needs CLOUDANT_USERNAME and CLOUDANT_PASSWORD"
    )


def test_iam_needs_an_api_key() -> None:
    assert "needs CLOUDANT_APIKEY" in refused(url=LOOPBACK, auth_type="IAM")


def test_an_sdk_refusal_is_a_couchids_error_without_the_secret() -> None:
    # ibmcloudant refuses credentials in braces or quotes, which a pasted secret may keep.
    message = refused(url=LOOPBACK, auth_type="basic", username="bob", password=f'"{PASSWORD}"')
    assert message.startswith("ibmcloudant could not set up basic authentication (")


def test_arguments_of_the_wrong_type() -> None:
    with pytest.raises(InvalidArgumentError, match="url=: give a str"):
        connect(5)  # type: ignore[arg-type]


def test_noauth_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDANT_URL", LOOPBACK)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "NoAuth")
    monkeypatch.setenv("CLOUDANT_ENABLE_RETRIES", "true")
    client = connect()
    assert isinstance(client, CloudantV1) and isinstance(client.authenticator, NoAuthAuthenticator)
    assert client.service_url == LOOPBACK
    # The rest of the configuration is read as CloudantV1.new_instance() reads it.
    assert client.retry_config is not None and client.retry_config.total > 0


def test_arguments_take_the_place_of_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDANT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    client = connect(LOOPBACK, auth_type="basic", username="bob", password=PASSWORD)
    assert client.service_url == LOOPBACK
    assert isinstance(client.authenticator, BasicAuthenticator)
    assert client.authenticator.username == "bob"


def test_iam_when_an_api_key_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    # ibmcloudant's own rule; nothing is asked of the token service until a request is made.
    monkeypatch.setenv("CLOUDANT_APIKEY", APIKEY)
    client = connect(LOOPBACK)
    assert isinstance(client.authenticator, IAMAuthenticator)


@responses.activate
@pytest.mark.parametrize("kind", [None, "basic"])
def test_user_info_in_the_url_is_basic_authentication(kind: str | None) -> None:
    client = connect(f"http://bob:{PASSWORD}@127.0.0.1:59841", auth_type=kind)
    assert isinstance(client.authenticator, BasicAuthenticator)
    # The credentials go in the Authorization header, not in the URL the client uses (and logs).
    assert client.service_url == LOOPBACK
    responses.get(f"{LOOPBACK}/", json={"couchdb": "Welcome"})
    assert client.get_server_information().get_result() == {"couchdb": "Welcome"}
    sent = responses.calls[0].request
    assert sent.url == f"{LOOPBACK}/"
    assert sent.headers["Authorization"] == BasicAuthenticator("bob", PASSWORD).authorization_header


def test_couchdb_session_takes_the_user_info_too() -> None:
    client = connect(f"http://bob:{PASSWORD}@127.0.0.1:59841", auth_type="couchdb_session")
    assert isinstance(client.authenticator, CouchDbSessionAuthenticator)
    assert client.service_url == LOOPBACK


def test_noauth_keeps_the_url_as_given() -> None:
    # Said explicitly: requests then sends the URL's user info itself.
    url = f"http://bob:{PASSWORD}@127.0.0.1:59841"
    assert connect(url, auth_type="noauth").service_url == url


def test_the_client_talks_to_the_local_server(
    couch_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    if "@" not in couch_url:  # with user info (a CouchDB), basic is the default
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    info = couchids.connect().get_server_information().get_result()
    assert "version" in info


def test_the_quickstart_runs_again_and_again(
    couch_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    quickstart = compile(python_blocks()[0], "README.md Quickstart", "exec")
    client = connect()
    assert "quickstart" not in client.get_all_dbs().get_result()
    try:
        for _ in range(2):
            exec(quickstart, {"__name__": "readme"})
        printed = capsys.readouterr().out.splitlines()
        # Each run prints an id and the orders: the keyed order, stored once.
        orders = couchids.Database(client, "quickstart").latest(10, type="order")
        assert [doc["n"] for doc in orders] == [1] and len(printed) == 4
        assert printed[1] == printed[3] == str(orders)
    finally:
        client.delete_database(db="quickstart")


# -- the server's URL, couchids.aio.connect, and the command's words ----------------------------


def test_a_database_in_the_url_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    message = refused(url="http://127.0.0.1:5984/shop", auth_type="noauth")
    assert message == (
        "url='http://127.0.0.1:5984/shop' names a database ('shop'): give the server's URL, "
        "http://127.0.0.1:5984, and name the database apart (couchids.Database(client, name), "
        "the command's DB argument)"
    )
    monkeypatch.setenv("CLOUDANT_URL", f"http://bob:{PASSWORD}@127.0.0.1:5984/shop/")
    assert refused().startswith("CLOUDANT_URL='http://***@127.0.0.1:5984/shop/' names a database")


#: Configurations connect() refuses, each as (variables, arguments).
REFUSALS = [
    ({}, {}),
    ({"CLOUDANT_URL": LOOPBACK}, {}),
    ({"CLOUDANT_URL": LOOPBACK, "CLOUDANT_AUTH_TYPE": "magic"}, {}),
    ({"CLOUDANT_URL": LOOPBACK, "CLOUDANT_AUTH_TYPE": "basic"}, {}),
    ({"CLOUDANT_URL": LOOPBACK, "CLOUDANT_AUTH_TYPE": "iam"}, {}),
    ({}, {"url": "127.0.0.1:5984", "auth_type": "noauth"}),
    ({}, {"url": f"http://bob:{PASSWORD}/x@127.0.0.1:5984", "auth_type": "basic"}),
    ({}, {"url": LOOPBACK + "/shop", "auth_type": "noauth"}),
    ({}, {"url": LOOPBACK, "auth_type": "couchdb_session", "username": "bob"}),
]


@pytest.mark.parametrize(("variables", "arguments"), REFUSALS)
def test_aio_connect_refuses_alike(
    variables: dict[str, str], arguments: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    message = refused(**arguments)
    with pytest.raises(InvalidArgumentError) as caught:
        aio.connect(**arguments)
    assert str(caught.value) == message


def test_aio_connect_makes_a_client_of_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDANT_URL", f"http://bob:{PASSWORD}@127.0.0.1:59841")
    client = aio.connect(connections=3, trust_env=False)
    assert isinstance(client, aio.AsyncClient)
    assert isinstance(client.cloudant.authenticator, BasicAuthenticator)
    assert client.cloudant.service_url == LOOPBACK
    with pytest.raises(InvalidArgumentError, match="connections"):
        aio.connect(connections=0)
    asyncio.run(client.aclose())


@pytest.mark.parametrize(
    "variables",
    [
        *(variables for variables, arguments in REFUSALS if not arguments),
        {"CLOUDANT_AUTH_TYPE": "noauth"},  # no URL: ibmcloudant's would be a placeholder's
        {"CLOUDANT_URL": "127.0.0.1:5984", "CLOUDANT_AUTH_TYPE": "noauth"},
        {"CLOUDANT_URL": "ftp://127.0.0.1:5984", "CLOUDANT_AUTH_TYPE": "noauth"},
    ],
)
def test_aio_new_instance_refuses_as_connect_does(
    variables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The two ways to make an asyncio client from the configuration say the same, before
    # anything is sent; another service's refusal names its own variables.
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    # connect()'s message, without its advice of arguments new_instance() does not take.
    with pytest.raises(InvalidArgumentError) as checked:
        cloudant_client(arguments=False)
    message = str(checked.value)
    with pytest.raises(InvalidArgumentError) as caught:
        aio.new_instance()
    assert str(caught.value) == message
    for name in list(variables):
        monkeypatch.delenv(name)
        monkeypatch.setenv(name.replace("CLOUDANT_", "OTHER_DB_"), variables[name])
    with pytest.raises(InvalidArgumentError) as caught:
        aio.new_instance("other-db")
    assert str(caught.value) == message.replace("CLOUDANT_", "OTHER_DB_")
    assert "CLOUDANT_" not in str(caught.value)


def test_aio_new_instance_of_another_service_reads_its_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTHER_URL", f"http://bob:{PASSWORD}@127.0.0.1:59841")
    monkeypatch.setenv("OTHER_AUTH_TYPE", "basic")
    client = aio.new_instance("other", trust_env=False)
    assert isinstance(client.cloudant.authenticator, BasicAuthenticator)
    assert client.cloudant.service_url == LOOPBACK
    asyncio.run(client.aclose())


@pytest.mark.parametrize(("variables", "arguments"), [r for r in REFUSALS if not r[1]])
def test_the_command_names_the_variables_only(
    variables: dict[str, str],
    arguments: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert main(["latest", "shop"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("couchids: error: ")
    # The command has no flags for connect()'s arguments (url=, auth_type=, ...).
    for word in ("url=", "auth_type=", "argument", "pass "):
        assert word not in err, err
