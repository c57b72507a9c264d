"""No credential in any output: a marker password in every credential setting and URL form,
through every error path of the library and the command.

Captured for each failure: the exception's ``str`` and ``repr``, the whole chained traceback
as ``traceback.format_exception`` and ``logging.exception`` print it, and stdout/stderr. With IAM
authentication the tokens the token service gave are secrets too.
"""

from __future__ import annotations

import io
import logging
import traceback
from pathlib import Path
from urllib.parse import quote

import pytest
from hostileserver import MODES, HostileServer, TokenService
from ibmcloudant.cloudant_v1 import CloudantV1
from test_hostile import COMMANDS, OPERATIONS

from couchids import ServerTimeoutError
from couchids.cli import main
from couchids.redact import redact

MARK = "Zq9-marker-S3cret"
#: A password that must be percent-encoded in a URL.
ODD_MARK = "Zq9/marker@S3c:ret"
COOKIE_MARK = "Zq9-cookie-marker"
MARKERS = (MARK, ODD_MARK, quote(ODD_MARK, safe=""), COOKIE_MARK)

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
# Silence is covered by test_hostile; here it would only wait.
LOUD_MODES = [mode for mode in MODES if mode != "silent"]


def outputs_of(exc: BaseException) -> list[str]:
    stream = io.StringIO()
    logger = logging.getLogger("couchids-secrets-test")
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    try:
        try:
            raise exc
        except BaseException:
            logger.exception("the operation failed")
    finally:
        logger.removeHandler(handler)
    return [str(exc), repr(exc), "".join(traceback.format_exception(exc)), stream.getvalue()]


def set_environment(
    monkeypatch: pytest.MonkeyPatch, setting: str, host: str, tokens: str = ""
) -> None:
    for name, value in SETTINGS[setting].items():
        monkeypatch.setenv(name, value.replace("HOST", host).replace("TOKENS", tokens))


@pytest.mark.parametrize("mode", LOUD_MODES)
@pytest.mark.parametrize("setting", SETTINGS)
def test_no_secret_in_any_library_output(
    setting: str, mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with HostileServer(mode, cookie=COOKIE_MARK) as server, TokenService() as iam:
        set_environment(monkeypatch, setting, server.url.removeprefix("http://"), iam.url)
        seen: list[str] = []
        for run in OPERATIONS.values():
            client = CloudantV1.new_instance()
            client.set_http_config({"proxies": {"http": None, "https": None}})
            try:
                run(client, "hostile", 5.0)
            except Exception as exc:
                seen += outputs_of(exc)
    out, err = capsys.readouterr()
    seen += [out, err]
    assert seen, "something failed"
    for text in seen:
        for marker in (*MARKERS, *iam.tokens):
            assert marker not in text, text


@pytest.mark.parametrize("mode", LOUD_MODES)
@pytest.mark.parametrize("setting", SETTINGS)
def test_no_secret_in_any_command_output(
    setting: str,
    mode: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "k")
    monkeypatch.chdir(tmp_path)  # rekey's mapping file
    with HostileServer(mode, cookie=COOKIE_MARK) as server, TokenService() as iam:
        set_environment(monkeypatch, setting, server.url.removeprefix("http://"), iam.url)
        for command, rest in COMMANDS.items():
            main([command, "hostile", *rest, "--timeout", "5"])
    out, err = capsys.readouterr()
    assert "couchids: error:" in err
    for marker in (*MARKERS, *iam.tokens):
        assert marker not in out and marker not in err, err


def test_no_secret_when_the_token_service_never_answers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[str] = []
    with TokenService(silent=True) as iam:
        set_environment(monkeypatch, "iam", iam.url.removeprefix("http://"))
        for name in ("latest", "create"):
            client = CloudantV1.new_instance()
            client.set_http_config({**client.http_config, "proxies": {"http": None, "https": None}})
            with pytest.raises(ServerTimeoutError) as caught:
                OPERATIONS[name](client, "hostile", 1.5)
            seen += outputs_of(caught.value)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        main(["latest", "hostile", "--timeout", "1.5"])
    out, err = capsys.readouterr()
    assert "did not answer the token request" in err
    for text in [*seen, out, err]:
        assert MARK not in text, text


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
