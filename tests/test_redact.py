"""Masking a given secret where it stands as the credential, and nowhere else: a password that
is an ordinary word must not turn couchids' own words into ``***`` (which tells the password to
anyone who knows the message), and a secret inside a longer word is not that secret."""

from __future__ import annotations

import asyncio
import http.client
import io
import json
import logging
import re
import traceback
from urllib.parse import quote

import pytest
import responses
from faultproxy import client_for
from hostileserver import HostileServer
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibm_cloud_sdk_core.logger import LoggingFilter, get_logger
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import aio
from couchids.cli.main import main
from couchids.drivers.config import mask_sdk_logs
from couchids.drivers.redact import MASK, redact

#: A password that is an ordinary word, and one in couchids' own messages.
WORD = "pass"
STRONG = "Zq9-marker-S3cret"


@pytest.mark.parametrize(
    "text",
    [
        "the window ends (2020) before it starts (2030); pass start <= end",
        "pass start <= end",
        "the request passed, bypassing the passage",
        "pass: the key; pass= a form's key",
    ],
)
def test_an_ordinary_word_is_left_where_it_reads_as_a_word(text: str) -> None:
    assert redact(text, [WORD]) == text


@pytest.mark.parametrize(
    "text",
    [
        f"the server said '{WORD}'",
        f'{{"reason": "{WORD}"}}',
        f"pw={WORD}&x=1",
        f"user=bob:{WORD}",
        f"next=http%3A%2F%2Fbob%3A{WORD}%40db.local",
        f"(/{WORD}/x)",
        f"the token `{WORD}` is refused",
        WORD,
    ],
)
def test_an_ordinary_word_is_masked_where_it_stands_as_a_value(text: str) -> None:
    masked = redact(text, [WORD])
    assert MASK in masked and WORD not in masked.replace("password", ""), masked


@pytest.mark.parametrize(
    "text",
    [
        f"http://bob:{WORD}@db.local/x",
        f"Authorization: Basic {WORD}",
        f"Cookie: AuthSession={WORD}",
        f'{{"password": "{WORD}"}}',
    ],
)
def test_the_credential_shapes_mask_an_ordinary_word_too(text: str) -> None:
    masked = redact(text, [WORD])
    assert WORD not in masked.replace("password", ""), masked


@pytest.mark.parametrize(
    "text",
    [
        f"user bob with password {STRONG} may not",
        f"said%20{STRONG}%20here",
        f"'line\\n{STRONG}'",
        f"{STRONG}.",
        f"[{STRONG}]",
    ],
)
def test_a_secret_is_masked_wherever_it_stands_whole(text: str) -> None:
    assert STRONG not in redact(text, [STRONG]), redact(text, [STRONG])


def test_a_secret_inside_a_longer_word_is_not_that_secret() -> None:
    assert redact("hunter22 and xhunter2", ["hunter2"]) == "hunter22 and xhunter2"


def test_every_encoding_of_a_secret_is_masked_where_it_stands_whole() -> None:
    odd = "p@ss:w/rd"
    for form in (odd, quote(odd, safe=""), quote(odd)):
        assert form not in redact(f"said {form} here", [odd])
        assert form not in redact(f"said {form}", [odd])


def test_couchids_messages_keep_their_words_with_an_ordinary_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLOUDANT_URL", f"http://bob:{WORD}@127.0.0.1:9")
    monkeypatch.setenv("CLOUDANT_PASSWORD", WORD)
    # The arguments are checked before anything is sent.
    with pytest.raises(couchids.InvalidTimeError) as caught:
        list(
            couchids.Database(client_for("http://127.0.0.1:9"), "db").window(
                "2030-01-01", "2020-01-01"
            )
        )
    message = str(caught.value)
    assert message.endswith("; pass start <= end") and MASK not in message, message


def test_the_sdk_log_of_a_prepared_request_masks_the_url_credentials(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mask_sdk_logs()
    with caplog.at_level(logging.DEBUG):
        get_logger().debug("Prepared request [%s %s]", "GET", f"http://bob:{STRONG}@host/db")
    assert [record.getMessage() for record in caplog.records] == [
        f"Prepared request [GET http://{MASK}@host/db]"
    ]


#: A password holding what ends an unquoted value: a space, a quote, a comma, a brace.
SPACED = 'Zq9 mArk"S3c,rEt}x'


@pytest.mark.parametrize(
    "text",
    [
        '{"auth": {"basic": {"username": "bob", "password": "Zq9 mArk\\"S3c,rEt}x"}}}',
        "{'password': 'Zq9 mArk\"S3c,rEt}x', 'x': 1}",
        '{\\"password\\": \\"Zq9 mArk S3c,rEt}x\\", \\"x\\": 1}',
        'body={"password":"Zq9 mArk\\"S3c,rEt}x',  # cut short by a quote's length
    ],
)
def test_a_quoted_field_is_masked_to_its_closing_quote(text: str) -> None:
    masked = redact(text)
    assert not [piece for piece in ("Zq9", "mArk", "S3c", "rEt") if piece in masked], masked


def test_the_debug_log_of_a_session_login_masks_a_password_with_a_quote(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At DEBUG ibmcloudant has http.client print what it sends: the login's JSON body as a
    bytes repr, in which the password's escaped quote reads ``\\\\"``."""
    monkeypatch.setattr(http.client.HTTPConnection, "debuglevel", 0)  # the SDK sets it
    caplog.set_level(logging.DEBUG)
    with HostileServer("echo") as server:
        client = couchids.connect(
            server.url, auth_type="couchdb_session", username="bob", password=SPACED
        )
        client.set_http_config({"proxies": {"http": None, "https": None}})
        with pytest.raises(couchids.ServerError):
            couchids.Database(client, "hostile").latest(1)
    assert '"password"' in caplog.text  # the body was logged
    leaked = [piece for piece in ("Zq9", "mArk", "S3c", "rEt") if piece in caplog.text]
    assert not leaked, caplog.text


#: A password holding a quote then a comma (and a space, an apostrophe, a backslash), which in
#: the repr of a JSON body reads as a closing quote and the next field.
CLOSING = 'Zq9",mArk S3c\',\\rEt\\",x\u00fcn'


@pytest.mark.parametrize("sdk", [False, True], ids=["as-sent", "sdk-filtered"])
@pytest.mark.parametrize("password", [CLOSING, 'Zq9",mArk', 'Zq9", "mArk": "S3c', 'Zq9"}mArk'])
def test_the_repr_of_a_json_body_is_masked_to_the_end_of_its_password(
    password: str, sdk: bool
) -> None:
    """http.client's DEBUG ``send: b'...'`` line, as sent or as ibmcloudant's core logs it (its
    filter masks a field to the first quote, the rest of the value left after it): a quote the
    password holds reads ``\\"`` there, and one followed by a comma or a brace is no end."""

    def sent(password: str) -> str:
        body = json.dumps({"user": "bob", "password": password, "n": 1}).encode()
        line = f"send: {body!r}"
        return LoggingFilter.filter_message(line) if sdk else line

    masked = redact(sent(password))
    assert masked == sent(MASK).replace("[redacted]", MASK), masked


def test_the_debug_log_of_a_session_login_masks_a_password_with_a_quote_and_a_comma(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http.client.HTTPConnection, "debuglevel", 0)  # the SDK sets it
    caplog.set_level(logging.DEBUG)
    with HostileServer("echo") as server:
        client = couchids.connect(
            server.url, auth_type="couchdb_session", username="bob", password=CLOSING
        )
        client.set_http_config({"proxies": {"http": None, "https": None}})
        with pytest.raises(couchids.ServerError):
            couchids.Database(client, "hostile").latest(1)
    assert '"password"' in caplog.text  # the body was logged
    leaked = [
        piece for piece in ("Zq9", "mArk", "S3c", "rEt", "xc3", "\u00fcn") if piece in caplog.text
    ]
    assert not leaked, caplog.text


@pytest.mark.parametrize(
    "settings",
    [
        {"CLOUDANT_USERNAME": "admin", "CLOUDANT_PASSWORD": "admin"},
        {"CLOUDANT_URL": "http://admin:admin@HOST"},
    ],
    ids=["variables", "url"],
)
def test_a_password_that_is_the_user_name_leaves_the_name_in_messages(
    settings: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``user '***' with its password`` would tell the password, and hide the name."""
    with HostileServer("session-refused") as server:
        monkeypatch.setenv("CLOUDANT_URL", server.url)
        monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "couchdb_session")
        for name, value in settings.items():
            monkeypatch.setenv(name, value.replace("HOST", server.url.removeprefix("http://")))
        client = couchids.connect()
        client.set_http_config({"proxies": {"http": None, "https": None}})
        with pytest.raises(couchids.UnauthorizedError) as caught:
            couchids.Database(client, "hostile").latest(1)
    assert "user 'admin' with its password" in str(caught.value), caught.value


#: A message of couchids, with its own words in brackets and a URL's scheme.
UNREACHED = (
    "latest on 'shop' (GET /shop): could not reach the server: Connection refused; check "
    "CLOUDANT_URL (http://127.0.0.1:9) and that the server is up; target='https://db/edge'"
)


@pytest.mark.parametrize("password", ["http", "https", "GET"])
def test_words_in_brackets_and_a_url_s_scheme_are_no_value(password: str) -> None:
    """``(***://127.0.0.1:9)`` or ``(*** /shop)`` would tell the password."""
    assert redact(UNREACHED, [password]) == UNREACHED


@pytest.mark.parametrize("text", [f"({WORD})", f"[{WORD}]", f"{{{WORD}}}", f"<{WORD}>"])
def test_an_ordinary_word_in_brackets_is_masked(text: str) -> None:
    assert redact(text, [WORD]) == text[0] + MASK + text[-1]


@pytest.mark.parametrize("password", ["shop", "orders-2024"])
def test_a_password_that_is_the_database_name_leaves_the_name_in_messages(
    password: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``latest on '***' (GET /***)`` would tell the password: couchids' naming of the database
    and of its request, and a path the server or the network library repeats, keep the name."""
    monkeypatch.setenv("CLOUDANT_URL", f"http://bob:{password}@127.0.0.1:9")
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    seen: dict[str, list[str]] = {}
    with pytest.raises(couchids.ServerError) as caught:
        couchids.Database(couchids.connect(), password).with_options(timeout=5).latest(1)
    seen["blocking"] = outputs_of(caught.value)

    async def in_aio() -> None:
        async with aio.connect() as client:
            await aio.AsyncDatabase(client, password).with_options(timeout=5).latest(1)

    with pytest.raises(couchids.ServerError) as caught:
        asyncio.run(in_aio())
    seen["aio"] = outputs_of(caught.value)
    capsys.readouterr()
    code = main(["latest", password, "--timeout", "5"])
    seen["command"] = list(capsys.readouterr())
    assert code != 0
    head = f"latest on {password!r} (GET /{password}): could not reach the server"
    for where, texts in seen.items():
        assert head in "".join(texts), (where, texts)
        said = "".join(texts)
        # A URL's user info is masked: http://***@127.0.0.1:9.
        assert not re.search(r"'\*\*\*'|/\*\*\*(?!@)", said), (where, texts)


def test_a_password_that_is_the_database_name_is_masked_where_it_stands_as_a_credential(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the database's name is left: the same word as a value in the server's words is
    masked."""
    password, server = "orders-2024", "http://couch.example"
    monkeypatch.setenv("CLOUDANT_PASSWORD", password)
    reason = f"POST /{password}/_all_docs refused bob:{password} ({password})"
    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url(server)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for method in (responses.GET, responses.POST):
            mock.add(
                method,
                re.compile(re.escape(server) + ".*"),
                json={"error": "forbidden", "reason": reason},
                status=403,
            )
        with pytest.raises(couchids.UnauthorizedError) as caught:
            couchids.Database(client, password).latest(1)
    message = str(caught.value)
    assert message.startswith(f"latest on {password!r} (GET /{password}): "), message
    assert f"forbidden: POST /{password}/_all_docs refused " in message, message
    assert message.count(password) == 3 and " (***);" in message, message


def outputs_of(exc: BaseException) -> list[str]:
    """An error's ``str``, ``repr``, traceback (causes included) and ``logging.exception``."""
    stream = io.StringIO()
    logger = logging.Logger("couchids-redact-test")
    logger.addHandler(logging.StreamHandler(stream))
    try:
        raise exc
    except BaseException:
        logger.exception("failed")
    return [str(exc), repr(exc), "".join(traceback.format_exception(exc)), stream.getvalue()]


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("cookie=AuthSession=Zq9c00k; sent as user 'bob'", "cookie=***; sent as user 'bob'"),
        ("Cookie: AuthSession=Zq9c00k; other=1, then more", "Cookie: ***, then more"),
        ("Set-Cookie: sid=Zq9c00k; Path=/; HttpOnly", "Set-Cookie: ***; HttpOnly"),
        ('cookie: sid="Zq9c00k" was sent', "cookie: *** was sent"),
        ("{'Cookie': 'sid=Zq9c00k'}", "{'Cookie': '***'}"),
    ],
)
def test_a_cookie_value_ends_where_a_cookie_value_ends(text: str, masked: str) -> None:
    """RFC 6265: no space, ``;``, ``,`` or quote in a cookie's value (but a value in double
    quotes); the words after it are the message's, not the cookie's."""
    assert redact(text) == masked


def test_a_session_cookie_a_server_repeats_leaves_the_words_after_it() -> None:
    """The echoing server ends its words with the request's cookie; couchids' advice after it
    (``; sent as user 'bob' ...``) is read whole, in both APIs."""
    seen: dict[str, str] = {}
    with HostileServer("echo", cookie="Zq9c00kie") as server:

        def client() -> CloudantV1:
            made = couchids.connect(
                server.url, auth_type="couchdb_session", username="bob", password="Zq9-pw-S3c"
            )
            made.set_http_config({"proxies": {"http": None, "https": None}})
            return made

        with pytest.raises(couchids.UnauthorizedError) as caught:
            couchids.Database(client(), "hostile").latest(1)
        seen["blocking"] = str(caught.value)

        async def in_aio() -> None:
            async with aio.AsyncClient(client()) as ac:
                await aio.AsyncDatabase(ac, "hostile").latest(1)

        with pytest.raises(couchids.UnauthorizedError) as caught:
            asyncio.run(in_aio())
        seen["aio"] = str(caught.value)
    said = "cookie=***; sent as user 'bob' with its password (the username and password arguments)"
    for where, message in seen.items():
        assert said in message and "Zq9" not in message, (where, message)
