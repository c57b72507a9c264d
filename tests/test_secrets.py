"""No credential in any output: a marker password in every credential setting and URL form,
through every error path of the library and the command.

Captured for each failure: the exception's ``str`` and ``repr``, the whole chained traceback
as ``traceback.format_exception`` and ``logging.exception`` print it, and stdout/stderr. With IAM
authentication the tokens the token service gave are secrets too. Every operation and command
the server's answers make fail must have failed, and said so naming itself and its database (the
command refusing a URL without a scheme names the setting), so that there was something to look at.

Each test runs its operations (or commands) at once. The default run takes every setting with
the server that puts what it was sent into its errors, and every other mode with one setting;
the full run (``-m full``, which CI runs) every setting with every mode.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import re
import traceback
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import responses
from _sync.test_hostile import OPERATIONS as HOSTILE_OPERATIONS
from _sync.test_hostile import SUCCEEDS, Operation
from concurrently import each_at_once
from hostileserver import MODES, HostileServer, TokenService, trust_one_certificate
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from test_hostile import COMMAND_SUCCEEDS, COMMANDS, DB, PATIENT, TARGET, Commands, Ran

import couchids
from couchids import ServerTimeoutError, aio
from couchids.drivers.redact import redact

MARK = "Zq9-marker-S3cret"
#: A password that must be percent-encoded in a URL.
ODD_MARK = "Zq9/marker@S3c:ret"
COOKIE_MARK = "Zq9-cookie-marker"
#: ``Authorization: Basic`` of the user and either password.
BASIC_MARKS = tuple(base64.b64encode(f"bob:{mark}".encode()).decode() for mark in (MARK, ODD_MARK))
MARKERS = (MARK, ODD_MARK, quote(ODD_MARK, safe=""), COOKIE_MARK, *BASIC_MARKS)

SETTINGS = {
    "url": {"CLOUDANT_URL": f"http://bob:{MARK}@HOST", "CLOUDANT_AUTH_TYPE": "noauth"},
    "url-no-scheme": {"CLOUDANT_URL": f"bob:{MARK}@HOST", "CLOUDANT_AUTH_TYPE": "noauth"},
    "url-encoded": {
        "CLOUDANT_URL": f"http://bob:{quote(ODD_MARK, safe='')}@HOST",
        "CLOUDANT_AUTH_TYPE": "noauth",
    },
    "basic": {
        "CLOUDANT_URL": "http://HOST",
        "CLOUDANT_AUTH_TYPE": "basic",
        "CLOUDANT_USERNAME": "bob",
        "CLOUDANT_PASSWORD": MARK,
    },
    "session": {
        "CLOUDANT_URL": "http://HOST",
        "CLOUDANT_AUTH_TYPE": "couchdb_session",
        "CLOUDANT_USERNAME": "bob",
        "CLOUDANT_PASSWORD": MARK,
    },
    "iam": {
        # The token service is the hostile server too: nothing leaves loopback.
        "CLOUDANT_URL": "http://HOST",
        "CLOUDANT_AUTH_TYPE": "iam",
        "CLOUDANT_APIKEY": MARK,
        "CLOUDANT_AUTH_URL": "http://HOST",
    },
    "iam-token": {
        # A token service that gives tokens, which the echoing server puts into its errors.
        "CLOUDANT_URL": "http://HOST",
        "CLOUDANT_AUTH_TYPE": "iam",
        "CLOUDANT_APIKEY": MARK,
        "CLOUDANT_AUTH_URL": "TOKENS",
    },
}
#: A replication's target on another server, whose password the replicator is given (in the
#: ``_replicator`` document, which the echoing server repeats): never contacted by the client.
URL_TARGET = f"http://carol:{quote(ODD_MARK, safe='')}@127.0.0.1:9/edge"


def replicate(client: CloudantV1, db: str, target: str) -> object:
    return couchids.Database(client, db).replicate(target, "2020-01-01", type="t")


def aio_replicate(client: CloudantV1, db: str, target: str) -> object:
    async def main() -> object:
        async with aio.AsyncClient(client) as ac:
            return await aio.AsyncDatabase(ac, db).replicate(target, "2020-01-01", type="t")

    return asyncio.run(main())


#: test_hostile's operations, and replicate: into a database of the server, and into a URL
#: with a password, in both APIs.
OPERATIONS: dict[str, Operation] = {
    **HOSTILE_OPERATIONS,
    "replicate": lambda c, db, t: replicate(c, db, "edge"),
    "replicate-url": lambda c, db, t: replicate(c, db, URL_TARGET),
    "aio.replicate": lambda c, db, t: aio_replicate(c, db, "edge"),
    "aio.replicate-url": lambda c, db, t: aio_replicate(c, db, URL_TARGET),
}
# Silence is covered by test_hostile; here it would only wait.
LOUD_MODES = [mode for mode in MODES if mode != "silent"]


@pytest.fixture(autouse=True)
def one_certificate(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Clients of loopback servers load a small trust store (see hostileserver)."""
    if "couch_url" not in request.fixturenames:  # the server under test may speak HTTPS
        trust_one_certificate(monkeypatch, tmp_path_factory.getbasetemp())


def setting_and_mode() -> list[Any]:
    """Every (setting, mode); those outside the default run marked ``full``."""
    settings = list(SETTINGS)
    everyday = {(setting, "echo") for setting in settings} | {("session", "session-refused")}
    others = [mode for mode in LOUD_MODES if mode not in ("echo", "session-refused")]
    everyday |= {(settings[i % len(settings)], mode) for i, mode in enumerate(others)}
    return [
        pytest.param(
            setting,
            mode,
            id=f"{setting}-{mode}",
            marks=() if (setting, mode) in everyday else pytest.mark.full,
        )
        for mode in LOUD_MODES
        for setting in settings
    ]


def outputs_of(exc: BaseException) -> list[str]:
    stream = io.StringIO()
    # A logger of its own (not the manager's), as operations fail in several threads at once.
    logger = logging.Logger("couchids-secrets-test")
    logger.addHandler(logging.StreamHandler(stream))
    try:
        raise exc
    except BaseException:
        logger.exception("the operation failed")
    return [str(exc), repr(exc), "".join(traceback.format_exception(exc)), stream.getvalue()]


def says_what_failed(operation: str, texts: list[str]) -> list[str]:
    """What is wrong with the outputs :func:`outputs_of` collected of a failed ``operation``: each
    is there and names the operation and its database, so that looking for secrets in them
    looks at something."""
    name = operation.removesuffix("-now").removesuffix("-url").removeprefix("aio.")
    said = (f"{name} on {DB!r}", f"{name} on {TARGET!r}")
    if len(texts) != 4 or not all(texts):
        return [f"{operation}: outputs missing or empty: {texts!r}"]
    message, representation, trace, logged = texts
    first = message.splitlines()[0]
    wrong = [
        where
        for where, right in (
            ("str", message.startswith(said)),
            ("repr", any(each in representation for each in said)),
            ("traceback", first in trace),
            ("log", logged.startswith("the operation failed") and first in logged),
        )
        if not right
    ]
    return [f"{operation}: the {where} does not say {name} failed: {texts!r}" for where in wrong]


def says_the_command_failed(command: str, ran: Ran, setting: str = "") -> bool:
    """Whether the command's stderr is the error naming its operation and database (or, given
    a URL without a scheme, which the command refuses before it asks anything, the setting)."""
    if setting == "url-no-scheme":
        return ran.err.startswith("couchids: error: CLOUDANT_URL=") and "no http://" in ran.err
    return ran.err.startswith(
        (f"couchids: error: {command} on {DB!r}", f"couchids: error: {command} on {TARGET!r}")
    )


def leaks(texts: dict[str, list[str]], secrets: list[str]) -> list[str]:
    """``where: text`` for each text holding one of ``secrets``."""
    return [
        f"{where}: {text}"
        for where, each in texts.items()
        for text in each
        if any(secret in text for secret in secrets)
    ]


def set_environment(
    monkeypatch: pytest.MonkeyPatch, setting: str, host: str, tokens: str = ""
) -> None:
    for name, value in SETTINGS[setting].items():
        monkeypatch.setenv(name, value.replace("HOST", host).replace("TOKENS", tokens))


@pytest.mark.parametrize(("setting", "mode"), setting_and_mode())
def test_no_secret_in_any_library_output(
    setting: str, mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, list[str]] = {}
    with HostileServer(mode, cookie=COOKIE_MARK) as server, TokenService() as iam:
        set_environment(monkeypatch, setting, server.url.removeprefix("http://"), iam.url)

        def run(operation: str) -> None:
            client = CloudantV1.new_instance()
            client.set_http_config({"proxies": {"http": None, "https": None}})
            try:
                OPERATIONS[operation](client, "hostile", PATIENT)
            except Exception as exc:
                seen[operation] = outputs_of(exc)

        each_at_once({operation: partial(run, operation) for operation in OPERATIONS})
    out, err = capsys.readouterr()
    seen["stdout and stderr"] = [out, err]
    quiet = [op for op in OPERATIONS if op not in seen and (mode, op) not in SUCCEEDS]
    assert not quiet, f"these passed against {mode}, leaving nothing to look at: {quiet}"
    unsaid = [wrong for op in OPERATIONS if op in seen for wrong in says_what_failed(op, seen[op])]
    assert not unsaid, "\n".join(unsaid)
    if setting == "iam-token":
        assert iam.tokens, "the token service gave no token"
    found = leaks(seen, [*MARKERS, *iam.tokens])
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("setting", "mode"), setting_and_mode())
def test_no_secret_in_any_command_output(
    setting: str,
    mode: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "k")
    monkeypatch.chdir(tmp_path)  # rekey's mapping file
    commands = Commands(monkeypatch)
    ran: dict[str, Ran] = {}
    with HostileServer(mode, cookie=COOKIE_MARK) as server, TokenService() as iam:
        set_environment(monkeypatch, setting, server.url.removeprefix("http://"), iam.url)

        def run(command: str) -> None:
            argv = [command, "hostile", *COMMANDS[command], "--timeout", str(PATIENT)]
            ran[command] = commands.run(argv)

        each_at_once({command: partial(run, command) for command in COMMANDS})
    out, err = capsys.readouterr()  # what any other thread wrote
    quiet = [
        command
        for command in COMMANDS
        if not says_the_command_failed(command, ran[command], setting)
        and not (
            (mode, command) in COMMAND_SUCCEEDS and ran[command].code == 0 and ran[command].out
        )
    ]
    assert not quiet, f"these reported no error against {mode}: " + "\n".join(
        f"{command}: {ran[command]}" for command in quiet
    )
    if setting == "iam-token":
        assert iam.tokens, "the token service gave no token"
    seen = {command: [ran[command].out, ran[command].err] for command in COMMANDS}
    found = leaks({**seen, "other threads": [out, err]}, [*MARKERS, *iam.tokens])
    assert not found, "\n".join(found)


#: The replications of :data:`OPERATIONS`.
REPLICATIONS = {name: run for name, run in OPERATIONS.items() if "replicate" in name}


@pytest.mark.parametrize(("setting", "mode"), setting_and_mode())
def test_no_secret_in_a_replication_sent(
    setting: str,
    mode: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """replicate against a server whose welcome says CouchDB: the ``_replicator`` document is
    sent, holding the credentials the replicator is given (the client's, the URL target's
    password), and the echoing server repeats it in its error."""
    caplog.set_level(logging.DEBUG)
    seen: dict[str, list[str]] = {}
    with HostileServer(mode, cookie=COOKIE_MARK, couchdb=True) as server, TokenService() as iam:
        set_environment(monkeypatch, setting, server.url.removeprefix("http://"), iam.url)

        def run(operation: str) -> None:
            client = CloudantV1.new_instance()
            client.set_http_config({"proxies": {"http": None, "https": None}})
            try:
                job = REPLICATIONS[operation](client, "hostile", PATIENT)
            except Exception as exc:
                seen[operation] = outputs_of(exc)
                # The error names the operation, and the database it failed on.
                assert seen[operation][0].startswith("replicate on "), seen[operation]
            else:
                seen[operation] = [repr(job)]

        each_at_once({operation: partial(run, operation) for operation in REPLICATIONS})
    out, err = capsys.readouterr()
    if mode == "echo" and setting not in ("url-no-scheme", "iam"):  # "iam": no token
        for operation in REPLICATIONS:  # the document was sent, and repeated
            assert '"target"' in seen[operation][0], seen[operation]
    seen["stdout and stderr"] = [out, err]
    seen["log records"] = [caplog.text]
    found = leaks(seen, [*MARKERS, *iam.tokens])
    assert not found, "\n".join(found)


def test_no_secret_when_the_token_service_never_answers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, list[str]] = {}
    commands = Commands(monkeypatch)
    with TokenService(silent=True) as iam:
        set_environment(monkeypatch, "iam", iam.url.removeprefix("http://"))
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # for the command's token request

        def library(name: str) -> None:
            client = CloudantV1.new_instance()
            client.set_http_config({**client.http_config, "proxies": {"http": None, "https": None}})
            with pytest.raises(ServerTimeoutError) as caught:
                OPERATIONS[name](client, "hostile", 1.5)
            seen[name] = outputs_of(caught.value)
            assert not says_what_failed(name, seen[name]), says_what_failed(name, seen[name])
            assert "did not answer the token request" in seen[name][0], seen[name]

        def command() -> None:
            ran = commands.run(["latest", "hostile", "--timeout", "1.5"])
            seen["couchids latest"] = [ran.out, ran.err]
            assert says_the_command_failed("latest", ran), ran.err
            assert "did not answer the token request" in ran.err, ran.err

        each_at_once(
            {"latest": partial(library, "latest"), "create": partial(library, "create")}
            | {"couchids latest": command}
        )
    out, err = capsys.readouterr()
    seen["other threads"] = [out, err]
    assert {"latest", "create", "couchids latest"} <= set(seen), list(seen)
    found = leaks(seen, [MARK])
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        f"Failed to parse: http://alice:{MARK}@127.0.0.1:1/x",
        f"Failed to parse: alice:{MARK}@127.0.0.1:1",
        f"url=https://alice:{MARK}@db.example/x?y=1",
        f"(bob:{MARK}@[::1]:5984/db)",
        f"Authorization: Basic {MARK}",
        f"{{'Authorization': 'Bearer {MARK}'}}",
        f"Cookie: AuthSession={MARK}; other=1",
        f"set-cookie=AuthSession={MARK}",
        f'{{"password": "{MARK}"}}',
        f"grant_type=apikey&apikey={MARK}",
        f"access_token={MARK}",
    ],
)
def test_redact_masks_every_shape(text: str) -> None:
    assert MARK not in redact(text)


def test_redact_masks_given_secrets_in_every_encoding() -> None:
    for form in (ODD_MARK, quote(ODD_MARK, safe=""), quote(ODD_MARK)):
        assert ODD_MARK not in redact(f"said {form} here", [ODD_MARK])
        assert form not in redact(f"said {form} here", [ODD_MARK])


#: A password holding what ends a value that is not quoted: a space, a quote, a comma, a brace,
#: letters outside ASCII; each piece of it that must not be seen.
SPACED_MARK = 'Zq9 mArk"S3c,rEt}\u00fcn\u00ef'
SPACED_PIECES = ("Zq9", "mArk", "S3c", "rEt", "\u00fcn\u00ef", "\\u00fcn\\u00ef")


def test_no_piece_of_a_password_with_spaces_in_a_replication_sent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ``_replicator`` document the echoing server repeats holds the client's password and
    the URL target's, each a JSON string with a space, an escaped quote and a comma in it."""
    seen: dict[str, list[str]] = {}
    target = f"http://carol:{quote(SPACED_MARK, safe='')}@127.0.0.1:9/edge"
    with HostileServer("echo", couchdb=True) as server:
        for name, run in (("replicate", replicate), ("aio.replicate", aio_replicate)):
            client = couchids.connect(
                server.url, auth_type="basic", username="bob", password=SPACED_MARK
            )
            client.set_http_config({"proxies": {"http": None, "https": None}})
            with pytest.raises(couchids.ServerError) as caught:
                run(client, "hostile", target)
            seen[name] = outputs_of(caught.value)
            assert '"target"' in seen[name][0], seen[name]  # the document was repeated
    seen["stdout and stderr"] = list(capsys.readouterr())
    found = leaks(seen, list(SPACED_PIECES))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("padding", range(350, 372, 3))
def test_a_long_reason_is_never_cut_inside_a_url_s_user_info(padding: int) -> None:
    """A reason longer than a message quotes, cut where a URL's user info has no ``@`` yet,
    which masking then would not recognise, in both APIs."""
    server = "http://couch.example"
    reason = "x" * padding + f" upstream http://bob:{MARK}@db.internal/shop refused"
    answer = {"error": "forbidden", "reason": reason}
    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url(server)
    seen: dict[str, list[str]] = {}
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for method in (responses.GET, responses.POST):
            mock.add(method, re.compile(re.escape(server) + ".*"), json=answer, status=403)
        with pytest.raises(couchids.UnauthorizedError) as caught:
            couchids.Database(client, "shop").latest(1)
        seen["blocking"] = outputs_of(caught.value)

    async def in_aio() -> None:
        mock = httpx.MockTransport(lambda request: httpx.Response(403, json=answer))
        async with httpx.AsyncClient(transport=mock) as http, aio.AsyncClient(client, http) as ac:
            await aio.AsyncDatabase(ac, "shop").latest(1)

    with pytest.raises(couchids.UnauthorizedError) as caught:
        asyncio.run(in_aio())
    seen["aio"] = outputs_of(caught.value)
    assert all("forbidden: xxx" in texts[0] for texts in seen.values()), seen
    found = leaks(seen, [MARK[:k] for k in range(4, len(MARK) + 1)])
    assert not found, "\n".join(found)


@pytest.mark.parametrize("made", ["new_instance", "arguments"])
def test_a_client_s_own_password_is_masked_as_a_configured_one(
    made: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server repeating the password in its words: masked for a client of another service's
    settings (``new_instance("other")``, ``CloudantV1.new_instance("other")``) or of arguments,
    as for one of the ``CLOUDANT_*`` settings, in both APIs."""
    server = "http://couch.example"
    for name, value in {"URL": server, "AUTH_TYPE": "basic", "USERNAME": "bob"}.items():
        monkeypatch.setenv(f"OTHER_{name}", value)
    monkeypatch.setenv("OTHER_PASSWORD", MARK)
    answer = {"error": "forbidden", "reason": f"bob may not read this with {MARK}"}

    def client() -> CloudantV1:
        if made == "new_instance":
            return CloudantV1.new_instance(service_name="other")
        return couchids.connect(server, auth_type="basic", username="bob", password=MARK)

    seen: dict[str, list[str]] = {}
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for method in (responses.GET, responses.POST):
            mock.add(method, re.compile(re.escape(server) + ".*"), json=answer, status=403)
        with pytest.raises(couchids.UnauthorizedError) as caught:
            couchids.Database(client(), "shop").latest(1)
        seen["blocking"] = outputs_of(caught.value)

    async def in_aio() -> None:
        mock = httpx.MockTransport(lambda request: httpx.Response(403, json=answer))
        if made == "new_instance":
            async with aio.new_instance("other", transport=mock) as ac:
                await aio.AsyncDatabase(ac, "shop").latest(1)
        else:
            async with (
                httpx.AsyncClient(transport=mock) as http,
                aio.AsyncClient(client(), http) as ac,
            ):
                await aio.AsyncDatabase(ac, "shop").latest(1)

    with pytest.raises(couchids.UnauthorizedError) as caught:
        asyncio.run(in_aio())
    seen["aio"] = outputs_of(caught.value)
    assert all("bob may not read this with ***" in texts[0] for texts in seen.values()), seen
    found = leaks(seen, [MARK])
    assert not found, "\n".join(found)
