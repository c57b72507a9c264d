"""couchids.core.urls: a server's or database's URL is read once, and a user name or password
holding a reserved character unencoded, a bad host or port, a server URL with a path, are
refused with messages that show no part of the password. Encoded, every character works:
through couchids.connect, couchids.aio.connect and a replication's target."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from ibm_cloud_sdk_core.authenticators import BasicAuthenticator
from ibmcloudant import CouchDbSessionAuthenticator

from couchids import InvalidArgumentError, aio, connect
from couchids.core import replication
from couchids.core.urls import parse_url, shown

#: Every character a password must hold percent-encoded in a URL (RFC 3986's gen-delims,
#: "%", a space).
RESERVED = ["@", ":", "/", "?", "#", "%", "[", "]", " "]
HOST = "127.0.0.1:59841"


def password_with(char: str) -> str:
    return f"Zq9x{char}Wv7k{char}Pm3s"


def pieces(password: str) -> list[str]:
    """The parts of ``password`` a message could show: each run between reserved characters,
    and the whole."""
    return [password, *(part for part in re.split(r"[@:/?#%\[\] ]", password) if part)]


def assert_nothing_of(password: str, message: str) -> None:
    shown_parts = [part for part in pieces(password) if part in message]
    assert not shown_parts, f"{shown_parts} of the password in: {message}"


@pytest.mark.parametrize("char", RESERVED, ids=repr)
@pytest.mark.parametrize("role", ["server", "database"])
def test_a_raw_reserved_character_in_the_password_is_refused_unseen(char: str, role: str) -> None:
    password = password_with(char)
    path = "/shop" if role == "database" else ""
    with pytest.raises(InvalidArgumentError) as caught:
        parse_url(f"http://bob:{password}@{HOST}{path}", "url", role=role)  # type: ignore[arg-type]
    message = str(caught.value)
    assert_nothing_of(password, message)
    assert message.startswith("url='http://***@") or "is not a" in message, message


# (The first ":" ends the user name.)
@pytest.mark.parametrize("char", [c for c in RESERVED if c != ":"], ids=repr)
def test_a_raw_reserved_character_in_the_user_name_is_refused(char: str) -> None:
    with pytest.raises(InvalidArgumentError, match="must be percent-encoded"):
        parse_url(f"http://b{char}b:pw@{HOST}", "url", role="server")


@pytest.mark.parametrize("char", RESERVED, ids=repr)
def test_a_percent_encoded_password_reads_back_whole(char: str) -> None:
    password = password_with(char)
    user = f"b{char}b"
    for role, path in (("server", ""), ("server", "/"), ("database", "/shop")):
        parsed = parse_url(
            f"HTTP://{quote(user, safe='')}:{quote(password, safe='')}@{HOST}{path}",
            "url",
            role=role,  # type: ignore[arg-type]
        )
        assert (parsed.username, parsed.password) == (user, password)
        assert parsed.bare == f"http://{HOST}{path.rstrip('/')}"
        assert password not in repr(parsed) and quote(password, safe="") not in repr(parsed)


@pytest.mark.parametrize("char", RESERVED, ids=repr)
def test_connect_takes_encoded_credentials_and_refuses_raw_ones(char: str) -> None:
    password = password_with(char)
    for make in (connect, aio.connect):
        for kind, authenticator in (
            ("basic", BasicAuthenticator),
            ("couchdb_session", CouchDbSessionAuthenticator),
        ):
            made = make(f"http://bob:{quote(password, safe='')}@{HOST}", auth_type=kind)
            cloudant = getattr(made, "cloudant", made)
            assert isinstance(cloudant.authenticator, authenticator)
            assert cloudant.service_url == f"http://{HOST}"
            manager = getattr(cloudant.authenticator, "token_manager", cloudant.authenticator)
            assert (manager.username, manager.password) == ("bob", password)
            with pytest.raises(InvalidArgumentError) as caught:
                make(f"http://bob:{password}@{HOST}", auth_type=kind)
            assert_nothing_of(password, str(caught.value))


@pytest.mark.parametrize("char", RESERVED, ids=repr)
def test_a_replication_target_takes_encoded_credentials_and_refuses_raw_ones(char: str) -> None:
    password = password_with(char)
    target = replication.url_endpoint(f"https://bob:{quote(password, safe='')}@db.example/edge")
    assert target.credentials == replication.Credentials("basic", "bob", password)
    assert target.url == "https://db.example/edge"
    with pytest.raises(InvalidArgumentError) as caught:
        replication.endpoints(
            f"http://{HOST}", None, "shop", f"https://bob:{password}@db.example/edge"
        )
    assert_nothing_of(password, str(caught.value))
    # The URL the server reaches itself at, too.
    encoded = f"http://bob:{quote(password, safe='')}@127.0.0.1:5984/"
    source, _ = replication.endpoints(f"http://{HOST}", None, "shop", "edge", encoded)
    assert source.url == "http://127.0.0.1:5984/shop"
    assert source.credentials == replication.Credentials("basic", "bob", password)
    with pytest.raises(InvalidArgumentError) as caught:
        replication.endpoints(
            f"http://{HOST}", None, "shop", "edge", f"http://bob:{password}@127.0.0.1:5984"
        )
    assert str(caught.value).startswith("server_url='http://***@127.0.0.1:5984'")
    assert_nothing_of(password, str(caught.value))


def test_the_password_that_sent_requests_to_another_host() -> None:
    # urlsplit and requests read the host as "t", the port as "", and the rest of the
    # password as the path.
    url = "http://user:S3cr@t:/%40pw-tail@127.0.0.1:15984"
    with pytest.raises(InvalidArgumentError) as caught:
        connect(url, auth_type="basic")
    message = str(caught.value)
    assert message.startswith("url='http://***@127.0.0.1:15984': its user name or password")
    for part in ("S3cr", "pw-tail", "%40pw"):
        assert part not in message


@pytest.mark.parametrize(
    "url",
    [
        "http://admin:S3cretPw",  # "@host" forgotten: the password reads as a port
        "http://admin:123456789",
        "http://adm in:S3cretPw/x",
        "http://[::1:S3cretPw",
    ],
)
def test_without_user_info_what_follows_a_colon_is_not_shown(url: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        parse_url(url, "CLOUDANT_URL", role="server")
    message = str(caught.value)
    assert "S3cretPw" not in message and "123456789" not in message, message


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://h:99999", "its port is not a number from 1 to 65535"),
        ("http://h:0", "its port is not a number from 1 to 65535"),
        ("http://h:59x", "its port is not a number from 1 to 65535"),
        ("http://h:", "its port is not a number from 1 to 65535"),
        ("http://h_:5984/", None),
        ("http://ho st:5984", "its host is not a host name or IP address"),
        ("http://h;x:5984", "its host is not a host name or IP address"),
        ("http://:5984", "names no host"),
        ("http://[::1:5984", "its host is not an IPv6 address in brackets"),
        ("http://[::1]x", "its host is not an IPv6 address in brackets"),
        ("http://[::1]:5984", None),
        ("http://127.0.0.%31:5984", None),
        ("http://h/?x=1", "a server URL has no query or fragment"),
        ("http://h#top", "a server URL has no query or fragment"),
        ("http://h:5984/shop", "names a database ('shop'): give the server's URL, http://h:5984,"),
        ("http://h:5984/couch/db/", "has a path ('/couch/db/')"),
        ("ftp://h", "has no http:// or https:// scheme: give an http:// or https:// URL"),
        ("h:5984", "has no http:// or https:// scheme: write it with its scheme, e.g. http://h"),
    ],
)
def test_hosts_ports_and_paths_of_a_server_url(url: str, said: str | None) -> None:
    if said is None:
        assert parse_url(url, "CLOUDANT_URL", role="server").scheme == "http"
        return
    with pytest.raises(InvalidArgumentError) as caught:
        parse_url(url, "CLOUDANT_URL", role="server")
    assert said in str(caught.value)
    assert str(caught.value).startswith("CLOUDANT_URL='")


def test_a_database_url_names_a_database() -> None:
    assert parse_url("http://h/a%2Fb/", "target", role="database").bare == "http://h/a%2Fb"
    with pytest.raises(InvalidArgumentError, match="names no database: add /dbname"):
        parse_url("http://h/", "target", role="database")
    with pytest.raises(InvalidArgumentError, match="not a database URL"):
        parse_url("h/db", "target", role="database")


def test_shown_masks_everything_before_the_last_at() -> None:
    assert shown("http://bob:a@b/c?d#e@f@host:1/db") == "http://***@host:1/db"
    assert shown("bob:pw@host") == "***@host"
    assert shown("http://host/db") == "http://host/db"
