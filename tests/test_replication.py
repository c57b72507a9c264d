"""Time-window replication (couchids/core/replication.py, Database.replicate).

Pure: the regex of a key range matches exactly ``low <= s < high`` in code-point order (a
property test with Python's ``re`` on bytes, the semantics CouchDB's Erlang ``re`` has; and,
where ``escript`` is installed, against Erlang's ``re`` itself); the selector of a window
matches exactly the ids couchids' own window keeps; endpoints carry credentials only in their
``auth`` objects; bad input is refused before anything is sent.

Integration (CouchDB, one node and the cluster): ground truth of a window with noise around
it, with mixed-case kuuid keys at its bounds (a window whose keys run from ``...W`` to
``...q``, which ICU collation would read as an empty range: CouchDB 3.4.3 compares ``_id``
raw, any other field by ICU, as the last test shows); all types; a continuous replication
picks up a new document, and stops once cancelled. PouchDB Server's replicator ignores a
selector: there ``replicate`` refuses and starts nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import responses
from conftest import drop_database, fresh_database
from faultproxy import FaultProxy, client_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ibm_cloud_sdk_core import ApiException
from ibm_cloud_sdk_core.authenticators import (
    BasicAuthenticator,
    BearerTokenAuthenticator,
    IAMAuthenticator,
    NoAuthAuthenticator,
)
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import CouchDBCluster

import couchids
from couchids import (
    ALL_TYPES,
    BASE36_V7,
    KUUID,
    KUUID_MS,
    KUUID_REVERSE,
    TID62,
    ULID,
    UTC_RANDOM,
    UUID464,
    V7,
    V7S,
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidTimeError,
    InvalidTypeError,
    ReplicationFailed,
    ServerTimeoutError,
    aio,
    kuuid,
)
from couchids.cli.main import EXIT_BAD_INPUT, EXIT_OK, EXIT_SERVER, main
from couchids.core import replication as core
from couchids.core.effects import Request, Response, Send, Sleep, path
from couchids.core.facts import DatabaseFacts, FactsCache
from couchids.core.keys import in_window, window_keys
from couchids.core.policy import RetryPolicy
from couchids.drivers.access import server_access
from couchids.drivers.blocking import run as couchids_run
from couchids.drivers.redact import redact
from couchids.idforms.times import to_ms

# -- the regex of a key range ----------------------------------------------------------------------

#: Characters of the id alphabets, and the ones a regex or UTF-8 could trip on.
EDGES = [
    *"0189AZaz:;_-./[]\\^${}()|?*+\n\x00\x7f\x80\xff",
    *("\u00e9", "\u07ff", "\u0800", "\uffef", "\ufff0", "\uffff", "\U00010000"),
    *("\U0001f600", "\U0010ffff"),
]
ALPHABET = st.sampled_from(EDGES) | st.characters(
    min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=("Cs",)
)
TEXT = st.text(ALPHABET, max_size=7)


def matches(pattern: str, s: str) -> bool:
    """What CouchDB's ``$regex`` does: Erlang ``re`` (no options) on the id's UTF-8 bytes;
    Python's ``re`` with a bytes pattern reads the same subset the same way."""
    return re.compile(pattern.encode("ascii")).match(s.encode()) is not None


@st.composite
def near(draw: st.DrawFn) -> tuple[str, str, str]:
    """Bounds, and a string near one of them: a prefix of it, it with a character changed or
    added, or anything."""
    low, high = draw(TEXT), draw(TEXT)
    base = draw(st.sampled_from([low, high]))
    cut = draw(st.integers(0, len(base)))
    how = draw(st.sampled_from(["prefix", "change", "extend", "free", "same"]))
    if how == "prefix":
        s = base[:cut]
    elif how == "change":
        s = base[:cut] + draw(ALPHABET) + draw(TEXT)
    elif how == "extend":
        s = base + draw(TEXT)
    elif how == "same":
        s = base
    else:
        s = draw(TEXT)
    return low, high, s


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near())
def test_the_range_regex_matches_exactly_the_range(case: tuple[str, str, str]) -> None:
    low, high, s = case
    pattern = core.range_regex(low, high)
    assert pattern.isascii() and pattern.startswith("^")
    assert matches(pattern, s) == (low <= s < high), (low, high, s, pattern)


@pytest.mark.parametrize(
    ("low", "high", "inside", "outside"),
    [
        (
            "user:001eVnWK",
            "user:001eVnWL",
            ["user:001eVnWK", "user:001eVnWKzz"],
            ["user:001eVnWL", "user:001eVnWJ", "user:001eVnW", "user:001eVnWk"],
        ),
        ("a", "a\x00", ["a"], ["a\x00", "", "b", "A"]),
        ("", "b", ["", "a", "a\U0010ffff", "\x00"], ["b", "ba", "é"]),
        ("[", "^", ["[", "\\", "]x", "]"], ["^", "Z", "_"]),
        ("a.b", "a.c", ["a.b", "a.bz"], ["a-b", "aXb", "a.c"]),
        ("x\n", "x\x0b", ["x\n", "x\nz"], ["x", "x\x0b"]),
        ("\U0001f600", "\U0010ffff", ["\U0001f600", "\U0001f601"], ["\uffff", "\U0010ffff"]),
        ("b", "a", [], ["a", "b", "ab"]),
        ("a", "a", [], ["a"]),
    ],
)
def test_the_range_regex_at_its_edges(
    low: str, high: str, inside: list[str], outside: list[str]
) -> None:
    pattern = core.range_regex(low, high)
    assert [s for s in inside if not matches(pattern, s)] == []
    assert [s for s in outside if matches(pattern, s)] == []


ERLANG_CHECK = r"""
main([File]) ->
    {ok, Bin} = file:read_file(File),
    io:format("~s~n", [loop(Bin, [])]).
loop(<<>>, Acc) -> lists:reverse(Acc);
loop(<<L1:32, P:L1/binary, L2:32, S:L2/binary, Rest/binary>>, Acc) ->
    Got = case re:run(S, P, [{capture, none}]) of match -> $1; nomatch -> $0 end,
    loop(Rest, [Got | Acc]).
"""


@pytest.mark.skipif(shutil.which("escript") is None, reason="needs Erlang's escript")
def test_erlangs_re_reads_the_regexes_as_python_does(tmp_path: Path) -> None:
    # The regexes go to CouchDB's mango_selector, which runs re:run(Id, Regex, [{capture,
    # none}]) with the pattern compiled with no options: check that reading of them directly.
    import random

    rnd = random.Random(24)
    cases = []
    for _ in range(2000):
        low, high = sorted(
            "".join(rnd.choice(EDGES) for _ in range(rnd.randint(0, 5))) for _ in "ab"
        )
        base = rnd.choice([low, high])
        s = base[: rnd.randint(0, len(base))] + "".join(
            rnd.choice(EDGES) for _ in range(rnd.randint(0, 2))
        )
        cases.append((core.range_regex(low, high), s, low <= s < high))
    data = tmp_path / "cases.bin"
    with data.open("wb") as out:
        for pattern, s, _ in cases:
            for part in (pattern.encode(), s.encode()):
                out.write(len(part).to_bytes(4, "big") + part)
    script = tmp_path / "check.escript"
    script.write_text(ERLANG_CHECK)
    answer = subprocess.run(
        ["escript", str(script), str(data)], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()
    assert answer == "".join("1" if want else "0" for _, _, want in cases)


# -- the selector of a window ----------------------------------------------------------------------


def selects(selector: dict[str, Any], doc_id: str) -> bool:
    """Mango's reading of the selectors couchids builds ($or, $and, $regex, $in on _id)."""
    if "$or" in selector:
        return any(selects(s, doc_id) for s in selector["$or"])
    if "$and" in selector:
        return all(selects(s, doc_id) for s in selector["$and"])
    ((op, arg),) = selector["_id"].items()
    if op == "$in":
        return doc_id in arg
    assert op == "$regex"
    return matches(arg, doc_id)


SORTABLE = [KUUID, KUUID_MS, KUUID_REVERSE, V7, V7S, TID62, ULID, BASE36_V7, UTC_RANDOM]
TIMES = st.integers(to_ms("2000-01-01"), to_ms("2099-12-01"))


@settings(max_examples=150, deadline=None)
@given(
    form=st.sampled_from(SORTABLE),
    start=TIMES,
    length=st.integers(0, 10_000_000),
    made=st.lists(st.integers(-5_000_000, 15_000_000), min_size=1, max_size=12),
    doc_type=st.sampled_from([None, "order", "user"]),
)
def test_the_selector_keeps_exactly_what_window_keeps(
    form: Any, start: int, length: int, made: list[int], doc_type: str | None
) -> None:
    end = start + length
    selector = core.window_selector(["order", None], start, end, form)
    keeps = {t: in_window(form, t, start, end) for t in ("order", None)}
    for offset in made:
        try:
            doc_id = form.new(max(start + offset, 0), type=doc_type)
        except InvalidTimeError:  # outside the form's runway (tid62 starts in 2020)
            continue
        wanted = doc_type in keeps and keeps[doc_type](doc_id)
        assert selects(selector, doc_id) == wanted, (form, doc_id, start, end)


def test_the_selector_leaves_out_foreign_ids_inside_the_key_range() -> None:
    start, end = to_ms("2024-05-01T00:00:20Z"), to_ms("2024-05-01T00:00:40Z")
    selector = core.window_selector(["order"], start, end, KUUID)
    keys = window_keys(KUUID, "order", start, end)
    assert keys is not None
    inside = couchids.id("2024-05-01T00:00:30Z", type="order")
    assert selects(selector, inside)
    for foreign in (
        inside + "x",
        inside[:-1],
        keys.low,
        "_design/x",
        inside.replace("order", "Order"),
    ):
        assert not selects(selector, foreign), foreign
    # Untyped ids: the key range of the untyped window can reach typed ids; the shape cannot.
    untyped = core.window_selector([None], start, to_ms("9999-01-01"), KUUID)
    assert selects(untyped, couchids.id("2024-05-01T00:00:30Z"))
    assert not selects(untyped, inside) and not selects(untyped, "_design/x")


def test_an_empty_window_selects_nothing() -> None:
    t = to_ms("2024-05-01T00:00:20.500Z")
    assert core.window_selector(["order"], t, t + 100, KUUID) == {"_id": {"$in": []}}
    assert core.window_selector([], 0, t, KUUID) == {"_id": {"$in": []}}


def test_the_shape_regex_keeps_to_the_common_subset() -> None:
    for form in SORTABLE:
        pattern = core.shape_regex(form, "t:")
        assert pattern.isascii() and pattern.endswith(core.END)
        assert "\\Z" not in pattern and "$" not in pattern and "\\d" not in pattern
        assert "\\w" not in pattern and "\\s" not in pattern and "." not in pattern
        made = form.new(to_ms("2024-05-01"), type="t")
        assert matches(pattern, made) and not matches(pattern, made + "\n")


# -- endpoints and credentials ---------------------------------------------------------------------


def test_user_info_moves_out_of_the_url() -> None:
    e = core.url_endpoint("HTTPS://b%40b:p%3Aw%40rd@DB.example.com:443/edge%2Fone/")
    assert e.url == "https://DB.example.com:443/edge%2Fone"
    assert e.body() == {
        "url": "https://DB.example.com:443/edge%2Fone",
        "auth": {"basic": {"username": "b@b", "password": "p:w@rd"}},
    }
    assert "p:w@rd" not in repr(e) and "p%3Aw" not in repr(e)
    assert core.url_endpoint("http://host/db").body() == {"url": "http://host/db"}


def test_the_clients_credentials_go_into_the_source_and_a_target_on_its_server() -> None:
    source, target = core.endpoints("http://admin:s3cret@127.0.0.1:5984/", None, "shop", "edge")
    assert source.body() == {
        "url": "http://127.0.0.1:5984/shop",
        "auth": {"basic": {"username": "admin", "password": "s3cret"}},
    }
    assert target.url == "http://127.0.0.1:5984/edge" and target.credentials == source.credentials
    # A URL elsewhere without credentials gets none; one on this server gets the client's.
    _, elsewhere = core.endpoints(
        "http://admin:s3cret@127.0.0.1:5984", None, "shop", "http://other:5984/x"
    )
    assert elsewhere.credentials is None
    _, here = core.endpoints(
        "http://admin:s3cret@127.0.0.1:5984", None, "shop", "http://127.0.0.1:5984/x"
    )
    assert here.credentials == source.credentials
    # The server's own URL, for a server that reaches itself elsewhere.
    source, target = core.endpoints(
        "http://admin:s3cret@127.0.0.1:15984",
        None,
        "shop",
        "edge",
        "http://root:pw@127.0.0.1:5984/",
    )
    assert source.url == "http://127.0.0.1:5984/shop" and target.url == "http://127.0.0.1:5984/edge"
    assert source.body()["auth"]["basic"] == {"username": "root", "password": "pw"}
    iam = core.Credentials("iam", secret="KEY")
    source, _ = core.endpoints("https://acct.cloudant.com", iam, "shop", "edge")
    assert source.body() == {
        "url": "https://acct.cloudant.com/shop",
        "auth": {"iam": {"api_key": "KEY"}},
    }
    assert "KEY" not in repr(source)


#: Spellings of the database ``shop`` of the server at ``http://127.0.0.1:5984``, as the target
#: of a replication from it: each is the source itself.
SOURCE_SPELLINGS = [
    "shop",
    "http://127.0.0.1:5984/shop",
    "http://127.0.0.1:5984/shop/",
    "HTTP://127.0.0.1:5984/shop//",
    "http://admin:0ther-pw@127.0.0.1:5984/shop",
    "Http://admin@127.0.0.1:5984///shop///",
    # the path, as CouchDB reads it: empty and dot segments, percent-encoding
    "http://127.0.0.1:5984//shop",
    "http://127.0.0.1:5984/./shop",
    "http://127.0.0.1:5984/x/../shop",
    "http://127.0.0.1:5984/x/y/../../shop/.",
    "http://127.0.0.1:5984/../shop",
    "http://127.0.0.1:5984/%2e/shop",
    "http://127.0.0.1:5984/x/%2E%2E/shop",
    "http://127.0.0.1:5984/%73hop",
    "http://127.0.0.1:5984/sh%6F%70",
    "http://127.0.0.1:5984/shop%2F",
    # the port
    "http://127.0.0.1:05984/shop",
    # the host: the loopback's names and an address's spellings
    "http://localhost:5984/shop",
    "http://LOCALHOST.:5984/shop",
    "http://[::1]:5984/shop",
    "http://[0:0:0:0:0:0:0:1]:5984/shop",
    "http://[::ffff:127.0.0.1]:5984/shop",
    "http://127.1:5984/shop",
    "http://2130706433:5984/shop",
    "http://0x7f.0.0.1:5984/shop",
    "http://0177.0.0.1:5984/shop",
    "http://127.0.0.%31:5984/shop",
]


@pytest.mark.parametrize("target", SOURCE_SPELLINGS)
def test_a_target_that_is_the_source_is_refused(target: str) -> None:
    with pytest.raises(InvalidArgumentError, match="is the source database itself") as caught:
        core.endpoints("http://admin:s3cret@127.0.0.1:5984", None, "shop", target)
    assert "s3cret" not in str(caught.value) and "0ther-pw" not in str(caught.value)


@pytest.mark.parametrize(
    ("server", "db", "target"),
    [
        ("http://127.0.0.1:5984", "a/b", "http://127.0.0.1:5984/a%2Fb"),
        ("http://127.0.0.1:5984", "a/b", "http://127.0.0.1:5984/a%2fb/"),
        ("http://127.0.0.1:5984", "a/b", "http://127.0.0.1:5984/a/b"),
        ("http://127.0.0.1:5984", "a/b", "a/b"),
        ("https://h.example", "shop", "HTTPS://H.EXAMPLE:443/shop"),
        ("https://h.example", "shop", "https://h.example./shop"),
        ("http://h.example:80", "shop", "http://h.example//shop"),
        ("http://h.example/couch/", "shop", "http://h.example/couch//shop"),
        ("http://h.example/couch/", "shop", "http://h.example/x/../couch/./shop"),
        ("http://[::1]:5984", "shop", "http://localhost:5984/shop"),
    ],
)
def test_the_source_is_recognised_on_any_server(server: str, db: str, target: str) -> None:
    with pytest.raises(InvalidArgumentError, match="is the source database itself"):
        core.endpoints(server, None, db, target)


def test_the_same_name_on_another_server_or_port_is_not_the_source() -> None:
    others = ("http://127.0.0.1:5985/shop", "https://127.0.0.1:5984/shop", "http://h/shop")
    for target in (
        *others,
        "http://localhost:5985/shop",
        "http://127.0.0.2:5984/shop",
        "http://127.2:5984/shop",
        "http://[::2]:5984/shop",
        "http://127.0.0.1:5984/shop2",
        "http://127.0.0.1:5984/x/shop",
        "http://127.0.0.1:5984/shop/x",
        "http://127.0.0.1:5984/shop/x/..x",
        "http://127.0.0.1:5984/Shop",
    ):
        core.endpoints("http://127.0.0.1:5984", None, "shop", target)
    assert core.url_endpoint("http://h:80/db").same_database(core.url_endpoint("http://H/db/"))


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("ftp://bob:pw1234@host/db", "not a database URL"),
        ("http://bob:pw1234@host", "names no database"),
        ("http://bob:pw1234@host/db?x=1", "no query or fragment"),
        ("http://bob:pw1234@host:99999/db", "not a URL"),
        ("Not A Name", "not a CouchDB database name"),
    ],
)
def test_a_bad_target_is_refused_without_its_credentials(target: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        core.endpoints("http://127.0.0.1:5984", None, "shop", target)
    assert "pw1234" not in str(caught.value)


def test_the_credentials_of_each_authenticator() -> None:
    def client(auth: Any, url: str = "https://h.example") -> CloudantV1:
        c = CloudantV1(authenticator=auth)
        c.set_service_url(url)
        return c

    assert server_access(client(NoAuthAuthenticator(), "http://a:b@h")) == ("http://a:b@h", None)
    assert server_access(client(BasicAuthenticator("u", "p")))[1] == core.Credentials(
        "basic", "u", "p"
    )
    session = server_access(client(CouchDbSessionAuthenticator("u", "p")))[1]
    assert session == core.Credentials("basic", "u", "p")
    iam = server_access(client(IAMAuthenticator("apikey-123")))[1]
    assert iam is not None and iam.auth() == {"iam": {"api_key": "apikey-123"}}
    with pytest.raises(InvalidArgumentError, match="supported: basic or couchdb_session") as caught:
        server_access(client(BearerTokenAuthenticator("tok-secret")))
    assert "tok-secret" not in str(caught.value)


def test_the_handle_and_its_messages_show_no_credentials() -> None:
    source, target = core.endpoints(
        "http://admin:s3cret@127.0.0.1:5984", None, "shop", "http://bob:pw9876@far.example/x"
    )
    plan = core.plan(
        "shop",
        source,
        target,
        "2024-05-01",
        None,
        type="order",
        form=KUUID,
        continuous=False,
        create_target=True,
        doc_id="couchids-1",
    )
    job = couchids.Replication(CloudantV1(authenticator=NoAuthAuthenticator()), [plan])
    assert "s3cret" not in repr(job) and "pw9876" not in repr(job)
    shown = "couchids-1: 'http://127.0.0.1:5984/shop' -> 'http://far.example/x', one-shot"
    assert repr(job) == f"Replication({shown})"
    plan = core.plan(
        "shop",
        source,
        target,
        "2024-05-01",
        None,
        type="order",
        form=KUUID,
        continuous=True,
        create_target=True,
    )
    assert "s3cret" not in repr(plan) and "pw9876" not in repr(plan)


# -- bad input: refused before anything is sent ---------------------------------------------------

#: A client of a server that is not there: anything sent would fail with a ServerError.
NOWHERE = "http://admin:s3cret@127.0.0.1:9"


@pytest.fixture
def nowhere() -> CloudantV1:
    c = CloudantV1(authenticator=NoAuthAuthenticator())
    c.set_service_url(NOWHERE)
    return c


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"target": "shop"}, InvalidArgumentError),
        ({"target": "http://127.0.0.1:9/shop/"}, InvalidArgumentError),
        ({"start": "2024-06-01", "end": "2024-05-01"}, InvalidTimeError),
        ({"start": "yesterday-ish"}, InvalidTimeError),
        ({"type": "Bad Type"}, InvalidTypeError),
        ({"form": UUID464}, InvalidArgumentError),
        ({"form": "kuuid"}, InvalidArgumentError),
        ({"continuous": "yes"}, InvalidArgumentError),
        ({"create_target": 1}, InvalidArgumentError),
        ({"server_url": "not a url"}, InvalidArgumentError),
    ],
)
def test_bad_input_is_refused_before_anything_is_sent(
    nowhere: CloudantV1, options: dict[str, Any], error: type[Exception]
) -> None:
    args = {"target": "edge", "start": "2024-05-01", "end": None, **options}
    with pytest.raises(error) as caught:
        couchids.Database(nowhere, "shop").replicate(
            args.pop("target"), args.pop("start"), args.pop("end"), **args
        )
    assert "s3cret" not in str(caught.value)

    async def on_aio() -> None:
        async with aio.AsyncClient(nowhere) as ac:
            again = {"target": "edge", "start": "2024-05-01", "end": None, **options}
            with pytest.raises(error):
                await aio.AsyncDatabase(ac, "shop").replicate(
                    again.pop("target"), again.pop("start"), again.pop("end"), **again
                )

    asyncio.run(on_aio())


# -- against servers -------------------------------------------------------------------------------

#: The window: kuuid keys (seconds) from 001s1xOW to 001s1xOq, upper case to lower case at
#: their last character, which ICU collation would read as an empty range.
START = datetime(2024, 5, 1, 0, 0, 20, tzinfo=UTC)
END = START + timedelta(seconds=20)
TYPES = ("order", "user", "click")


def made(doc_type: str | None, at: datetime) -> str:
    return couchids.id(at, type=doc_type)


@pytest.fixture
def history(client: CloudantV1, db: str) -> dict[str, set[str]]:
    """The source: per type (and untyped), an id each second from 3 s before the window to
    3 s after it, ids a day off, a design document and foreign ids inside the key range.
    Returns the ids in the window per type (``None``: untyped), the ground truth, and under
    ``"order onwards"`` the order ids from the window's start on."""
    truth: dict[str | None, set[str]] = {t: set() for t in (*TYPES, None)}
    onwards: dict[str | None, set[str]] = {t: set() for t in (*TYPES, None)}
    docs: list[dict[str, Any]] = []
    assert kuuid.prefix(START).endswith("W") and kuuid.prefix(END).endswith("q")
    for doc_type in (*TYPES, None):
        for second in range(-3, 24):
            at = START + timedelta(seconds=second, milliseconds=500 * (second % 2))
            doc_id = made(doc_type, at)
            docs.append({"_id": doc_id, "t": at.isoformat()})
            if START <= at.replace(microsecond=0) < END:
                truth[doc_type].add(doc_id)
            if at.replace(microsecond=0) >= START:
                onwards[doc_type].add(doc_id)
        for far in (timedelta(days=-1), timedelta(days=1), timedelta(days=400)):
            docs.append({"_id": made(doc_type, START + far)})
            if far > timedelta(0):
                onwards[doc_type].add(docs[-1]["_id"])
    inside = made("order", START + timedelta(seconds=5))
    lower_case = "order:" + kuuid.prefix(START + timedelta(seconds=5)).lower() + inside[14:]
    docs += [
        {"_id": "_design/noise", "views": {}},
        {"_id": inside + "x"},
        {"_id": inside[:-3]},
        {"_id": lower_case},  # a valid id, of a time after the window
        {"_id": "Order:" + inside[6:]},  # an id of the type Order, in the window
        {"_id": "no-time-here"},
    ]
    truth["Order"] = {"Order:" + inside[6:]}
    truth["order onwards"] = onwards["order"] | {lower_case}
    client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
    return truth  # type: ignore[return-value]


def live_revisions(client: CloudantV1, doc_id: str) -> list[str]:
    """The live revisions of the ``_replicator`` document ``doc_id``, read from every copy."""
    copies = client.get_database_information(db="_replicator").get_result()["cluster"]["n"]
    request = client.prepare_request(
        method="GET",
        url=f"/_replicator/{doc_id}",
        headers={"Accept": "application/json"},
        params={"open_revs": "all", "r": str(copies)},
    )
    leaves = client.send(request).get_result()
    return [leaf["ok"]["_rev"] for leaf in leaves if not leaf["ok"].get("_deleted")]


def ids_in(client: CloudantV1, db: str) -> set[str]:
    """The ids in ``db`` (none while it does not exist: the replicator creates it)."""
    try:
        rows = client.post_all_docs(db=db).get_result()["rows"]
    except ApiException as error:
        if error.status_code != 404:
            raise
        return set()
    return {row["id"] for row in rows}


@pytest.fixture
def server_url(couch_server: Any) -> str | None:
    """Where CouchDB reaches itself: on the cluster the client's URL is a proxy in this
    process, so the replicator is given a node's own URL."""
    return couch_server.url if isinstance(couch_server, CouchDBCluster) else None


@pytest.fixture
def targets(client: CloudantV1) -> Iterator[list[str]]:
    """Names for targets (made by the replications), deleted after the test, with their
    replication documents."""
    names: list[str] = []
    yield names
    for name in names:
        with contextlib.suppress(Exception):
            client.delete_database(db=name)


def new_target(targets: list[str]) -> str:
    name = f"test_{uuid.uuid4().hex}_copy"
    targets.append(name)
    return name


class Handle:
    """A replication handle of either API, with blocking methods."""

    def __init__(self, job: Any, call: Callable[[Any], Any]) -> None:
        self.job, self.call = job, call

    def wait(self, timeout: float | None = None) -> core.ReplicationStatus:
        return self.call(self.job.wait(timeout))  # type: ignore[no-any-return]

    def status(self) -> core.ReplicationStatus:
        return self.call(self.job.status())  # type: ignore[no-any-return]

    def cancel(self) -> bool:
        return self.call(self.job.cancel())  # type: ignore[no-any-return]


@pytest.fixture(params=["blocking", "aio"])
def replicate(
    request: pytest.FixtureRequest, client: CloudantV1
) -> Iterator[Callable[..., Handle]]:
    """``replicate(db, target, start, end, **options)`` through one API; every replication
    started is cancelled after the test."""
    started: list[Handle] = []
    if request.param == "blocking":

        def call(value: Any) -> Any:
            return value

        def start(db: str, *args: Any, **options: Any) -> Handle:
            handle = Handle(couchids.Database(client, db).replicate(*args, **options), call)
            started.append(handle)
            return handle

        yield start
    else:
        loop = asyncio.new_event_loop()
        ac = aio.AsyncClient(client)
        call = loop.run_until_complete

        def start(db: str, *args: Any, **options: Any) -> Handle:
            job = call(aio.AsyncDatabase(ac, db).replicate(*args, **options))
            assert isinstance(job, aio.AsyncReplication)
            handle = Handle(job, call)
            started.append(handle)
            return handle

        yield start
    for handle in started:
        handle.cancel()
    if request.param == "aio":
        loop.run_until_complete(ac.aclose())
        loop.close()


@pytest.mark.needs("couchdb")
def test_a_one_shot_replication_copies_exactly_the_window_of_a_type(
    client: CloudantV1,
    db: str,
    history: dict[str, set[str]],
    replicate: Callable[..., Handle],
    targets: list[str],
    server_url: str | None,
) -> None:
    target = new_target(targets)
    job = replicate(db, target, START, END, type="order", server_url=server_url)
    done = job.wait(120)
    assert done.state == "completed" and done.doc_write_failures == 0
    assert ids_in(client, target) == history["order"]
    assert done.docs_written == len(history["order"]) == 20
    # Its document was removed as it completed; the deletion keeps the counts.
    (doc_id,) = job.job.doc_ids
    assert live_revisions(client, doc_id) == []
    again = job.status()
    assert (again.state, again.docs_written) == ("completed", 20)
    assert job.cancel() is False and job.status().state == "completed"


@pytest.mark.needs("couchdb")
def test_all_types_copies_every_type_present_and_no_untyped_id(
    client: CloudantV1,
    db: str,
    history: dict[str, set[str]],
    replicate: Callable[..., Handle],
    targets: list[str],
    server_url: str | None,
) -> None:
    target = new_target(targets)
    job = replicate(db, target, START, END, type=ALL_TYPES, server_url=server_url)
    job.wait(120)
    want = set().union(*(history[t] for t in (*TYPES, "Order")))
    assert len(want) == 3 * 20 + 1
    assert ids_in(client, target) == want


@pytest.mark.needs("couchdb")
def test_untyped_ids_of_a_window(
    client: CloudantV1,
    db: str,
    history: dict[str, set[str]],
    replicate: Callable[..., Handle],
    targets: list[str],
    server_url: str | None,
) -> None:
    target = new_target(targets)
    replicate(db, target, START, END, server_url=server_url).wait(120)
    assert ids_in(client, target) == history[None]  # type: ignore[index]


def poll(check: Callable[[], bool], seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.5)
    return check()


def scheduled(client: CloudantV1, doc_id: str) -> bool:
    """Whether the scheduler has a job of replication document ``doc_id``."""
    jobs = client.get_scheduler_jobs().get_result()["jobs"]
    return any(job.get("doc_id") == doc_id for job in jobs)


@pytest.mark.needs("couchdb")
def test_a_continuous_replication_picks_up_new_documents_until_cancelled(
    client: CloudantV1,
    db: str,
    history: dict[str, set[str]],
    replicate: Callable[..., Handle],
    targets: list[str],
    server_url: str | None,
) -> None:
    target = new_target(targets)
    job = replicate(db, target, START, type="order", continuous=True, server_url=server_url)
    assert job.wait(120).state == "running"
    assert poll(lambda: history["order onwards"] <= ids_in(client, target))
    later = made("order", datetime.now(UTC))
    client.post_document(db=db, document={"_id": later}).get_result()
    assert poll(lambda: later in ids_in(client, target)), "the new document never arrived"
    assert ids_in(client, target) == history["order onwards"] | {later}
    # A deletion in the window is replicated too.
    rev = client.get_document(db=db, doc_id=later).get_result()["_rev"]
    client.delete_document(db=db, doc_id=later, rev=rev).get_result()
    assert poll(lambda: later not in ids_in(client, target)), "the deletion never arrived"

    assert job.cancel() is True
    (doc_id,) = job.job.doc_ids
    assert poll(lambda: not scheduled(client, doc_id)), "the scheduler still runs it"
    assert poll(lambda: job.status().state == "cancelled")
    orphan = made("order", datetime.now(UTC))
    sentinel = made("sentinel", datetime.now(UTC))
    client.post_document(db=db, document={"_id": orphan}).get_result()
    client.post_document(db=db, document={"_id": sentinel}).get_result()
    # A replication of the sentinel, written after the orphan, into the same target: once it
    # has arrived, the cancelled one would have had its chance at the orphan.
    replicate(db, target, START, type="sentinel", server_url=server_url).wait(120)
    assert sentinel in ids_in(client, target)
    assert orphan not in ids_in(client, target)


def replications_naming(client: CloudantV1, name: str) -> list[str]:
    """The ids of the ``_replicator`` documents that name ``name`` (a test's own database)."""
    rows = client.post_all_docs(db="_replicator", include_docs=True).get_result()["rows"]
    return [row["id"] for row in rows if name in json.dumps(row.get("doc"))]


@pytest.mark.needs("couchdb")
def test_a_missing_target_not_to_be_created_starts_nothing(
    client: CloudantV1, db: str, replicate: Callable[..., Handle], server_url: str | None
) -> None:
    # The replicator would only fail it on the server, after the call returned.
    missing = f"test_{uuid.uuid4().hex}_missing"
    with pytest.raises(DatabaseNotFoundError) as caught:
        replicate(db, missing, START, END, type="order", create_target=False, server_url=server_url)
    assert str(caught.value) == (
        f"replicate on {db!r}: the target database {missing!r} does not exist and "
        "create_target is False (the command's --no-create-target): create it first, or let "
        "the replication create it. Nothing was started."
    )
    assert caught.value.status == 404
    assert replications_naming(client, missing) == []
    assert missing not in client.get_all_dbs().get_result()


@pytest.mark.needs("couchdb")
def test_a_replication_that_cannot_run_raises_why_without_credentials(
    client: CloudantV1,
    couch_url: str,
    db: str,
    replicate: Callable[..., Handle],
    server_url: str | None,
) -> None:
    # A target on another server (here the same one behind a proxy, another port) is the
    # replicator's to reach: a missing one fails the replication.
    missing = f"test_{uuid.uuid4().hex}_missing"
    with FaultProxy(couch_url) as proxy:
        job = replicate(
            db,
            f"{proxy.url}/{missing}",
            START,
            END,
            type="order",
            create_target=False,
            server_url=server_url,
        )
        with pytest.raises(ReplicationFailed, match=r"not_found|could not open|not found") as e:
            job.wait(120)
    assert "pass@" not in str(e.value) and ":pass" not in str(e.value)


@pytest.mark.needs("couchdb")
def test_a_missing_source_starts_nothing(
    client: CloudantV1, replicate: Callable[..., Handle], targets: list[str]
) -> None:
    # Its replication would only crash on the server, retried for ever (db_not_found).
    missing = f"test_{uuid.uuid4().hex}_nothing"
    with pytest.raises(DatabaseNotFoundError, match=f"'{missing}' does not exist"):
        replicate(missing, new_target(targets), START, END, type="order")
    rows = client.post_all_docs(db="_replicator", include_docs=True).get_result()["rows"]
    assert [row["id"] for row in rows if missing in json.dumps(row.get("doc"))] == []


@pytest.mark.needs("couchdb")
def test_a_target_naming_the_source_sends_nothing(
    client: CloudantV1, db: str, couch_url: str, replicate: Callable[..., Handle]
) -> None:
    bare = re.sub(r"//[^@/]*@", "//", couch_url)
    for target in (
        db,
        f"{bare}/{db}/",
        f"{couch_url.upper().replace('ADMIN:PASS', 'admin:pass')}/{db}",
    ):
        with pytest.raises(InvalidArgumentError, match="source database itself"):
            replicate(db, target, START, END, type="order")
    # No replication document names the database (its name is the test's own). A count of
    # _replicator's documents would not do: a cluster's copies answer it as they catch up
    # with other tests' cancelled replications.
    rows = client.post_all_docs(db="_replicator", include_docs=True).get_result()["rows"]
    assert [row["id"] for row in rows if db in json.dumps(row.get("doc"))] == []


@pytest.mark.needs("couchdb")
def test_no_spelling_of_the_source_sends_a_request(client: CloudantV1, couch_url: str) -> None:
    # The database's name starts with "shop", so that the table's spellings of "shop" (some
    # percent-encoded) become spellings of it with the rest of its name after them.
    suffix = f"_{uuid.uuid4().hex}"
    db = "shop" + suffix
    client.put_database(db=db).get_result()
    try:
        with FaultProxy(couch_url) as proxy:
            port = str(urlsplit(proxy.url).port)
            spellings = [
                re.sub(r"(shop|%73hop|sh%6F%70)", r"\g<1>" + suffix, t).replace("5984", port)
                for t in SOURCE_SPELLINGS
                # a five-digit port with a leading 0 has six digits: not a port
                if ":05984/" not in t or len(port) < 5
            ]
            assert len(spellings) >= 20 and f"http://127.0.0.1:{port}//{db}" in spellings
            through = client_for(proxy.url)

            async def in_aio(target: str) -> None:
                async with aio.AsyncClient(through) as ac:
                    await aio.AsyncDatabase(ac, db).replicate(target, START, END, type="order")

            for target in spellings:
                with pytest.raises(InvalidArgumentError, match="source database itself"):
                    couchids.Database(through, db).replicate(target, START, END, type="order")
                with pytest.raises(InvalidArgumentError, match="source database itself"):
                    asyncio.run(in_aio(target))
            assert proxy.log == [], "a request was sent"
            # The control: a target that is another database goes through the same proxy.
            client.put_database(db=f"{db}_copy").get_result()
            other = couchids.Database(through, db).replicate(
                f"{db}_copy", START, END, type="order", create_target=False
            )
            assert proxy.requests("PUT", "/_replicator/")
            other.cancel()
    finally:
        drop_database(client, db)
        drop_database(client, f"{db}_copy")


@pytest.mark.needs("pouchdb")
def test_pouchdb_server_cannot_replicate_a_window(
    client: CloudantV1, db: str, replicate: Callable[..., Handle], targets: list[str]
) -> None:
    target = new_target(targets)
    with pytest.raises(ReplicationFailed, match="PouchDB Server cannot replicate a time window"):
        replicate(db, target, START, END, type="order")
    assert target not in client.get_all_dbs().get_result()


# -- the command -----------------------------------------------------------------------------------


@pytest.fixture
def configured(couch_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    return couch_url


@pytest.mark.needs("couchdb")
def test_the_command_replicates_a_window_and_prints_its_counts(
    client: CloudantV1,
    db: str,
    history: dict[str, set[str]],
    configured: str,
    targets: list[str],
    server_url: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = new_target(targets)
    argv = ["replicate", db, target, "--since", START.isoformat(), "--until", END.isoformat()]
    argv += ["--type", "order"] + (["--server-url", server_url] if server_url else [])
    assert main(argv) == EXIT_OK
    out, err = capsys.readouterr()
    line = json.loads(out)
    assert line["state"] == "completed" and line["docs_written"] == 20, (out, err)
    assert line["replication"].startswith("couchids-")
    assert ids_in(client, target) == history["order"]
    assert "pass" not in out + err and "note:" not in err
    # Its document was removed as it completed; it still shows as completed.
    assert live_revisions(client, line["replication"]) == []
    assert main(["replication", line["replication"]]) == EXIT_OK
    shown = json.loads(capsys.readouterr().out)
    assert (shown["state"], shown["docs_written"]) == ("completed", 20)


@pytest.mark.needs("couchdb")
def test_the_command_says_why_a_replication_copied_nothing(
    client: CloudantV1,
    db: str,
    configured: str,
    targets: list[str],
    server_url: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    typed = [made("order", START + timedelta(seconds=s)) for s in range(3)]
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": i} for i in typed]}).get_result()
    argv = ["replicate", db, "", "--since", START.isoformat(), "--until", END.isoformat()]
    argv += ["--server-url", server_url] if server_url else []
    # Without --type: the untyped ids of the window, of which there are none.
    argv[2] = new_target(targets)
    assert main(argv) == EXIT_OK
    out, err = capsys.readouterr()
    assert json.loads(out)["docs_written"] == 0
    note = f"couchids: note: no untyped {KUUID} ids in {db!r}; it holds ids of types order: "
    assert err == note + "pass --type order or --all-types\n"
    # With it: the three, and no note.
    argv[2] = new_target(targets)
    assert main([*argv, "--type", "order"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert json.loads(out)["docs_written"] == 3 and err == ""


@pytest.mark.needs("couchdb")
def test_the_command_refuses_the_source_as_target(
    db: str, configured: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replicate", db, db, "--since", "1d"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("couchids: error: ") and "source database itself" in err
    assert err.count("\n") == 1
    assert main(["replicate", db, "x", "--since", "1d", "--type", "a", "--all-types"]) == 2


@pytest.mark.needs("couchdb")
def test_the_command_fails_a_missing_target_it_may_not_create(
    client: CloudantV1,
    db: str,
    configured: str,
    server_url: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    missing = f"test_{uuid.uuid4().hex}_missing"
    argv = ["replicate", db, missing, "--since", "1d", "--no-create-target", "--no-wait"]
    assert main(argv + (["--server-url", server_url] if server_url else [])) == EXIT_SERVER
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"couchids: error: replicate on {db!r}: the target database {missing!r} does not exist "
        "and create_target is False (the command's --no-create-target): create it first, or "
        "let the replication create it. Nothing was started.\n"
    )
    assert replications_naming(client, missing) == []


@pytest.mark.needs("pouchdb")
def test_the_command_on_pouchdb_server_says_why_it_cannot(
    db: str, configured: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replicate", db, "elsewhere", "--since", "90d"]) == EXIT_SERVER
    err = capsys.readouterr().err
    assert err.startswith("couchids: error: ") and "PouchDB Server cannot replicate" in err
    # The server answered: no advice to check that it is up.
    assert err.count("\n") == 1 and "check CLOUDANT_URL" not in err


# -- waiting, on scripted answers ------------------------------------------------------------------


def drive(program: Any, answer: Callable[[Request], tuple[int, Any]]) -> Any:
    """Run a core program, answering each request with ``answer`` (status, JSON body) and
    sleeping its sleeps; return its result."""
    outcome: Any = None
    while True:
        try:
            effect = program.send(outcome)
        except StopIteration as done:
            return done.value
        if isinstance(effect, Send):
            status, body = answer(effect.request)
            outcome = Response(status, json.dumps(body).encode(), "application/json")
        elif isinstance(effect, Sleep):
            time.sleep(min(effect.seconds, 0.05))
            outcome = None
        else:
            raise AssertionError(effect)


def scripted(*states: dict[str, Any]) -> Callable[[Request], tuple[int, Any]]:
    """Answers of a replication document that goes through ``states`` (the scheduler's
    answers, one per poll; the last repeats): ``{"state": None}`` is "not listed yet"."""
    left = list(states)

    def answer(request: Request) -> tuple[int, Any]:
        if request.path.startswith("/_scheduler/docs/"):
            now = left.pop(0) if len(left) > 1 else left[0]
            if now.get("state") is None:
                return 404, {"error": "not_found", "reason": "missing"}
            return 200, {"doc_id": "couchids-1", "database": "_replicator", **now}
        if request.method == "GET" and request.path == "/_replicator":
            return 200, {"db_name": "_replicator"}
        if request.method == "GET" and request.path.startswith("/_replicator/"):
            return 200, [{"ok": {"_id": "couchids-1", "_rev": "1-a"}}]
        raise AssertionError(request)

    return answer


def waited(answer: Callable[[Request], tuple[int, Any]], **options: Any) -> core.ReplicationStatus:
    options.setdefault("continuous", False)
    options.setdefault("timeout", 5.0)
    program = core.wait(
        FactsCache(), ["couchids-1"], mask=partial(redact, secrets=["s3cret"]), **options
    )
    return drive(program, answer)  # type: ignore[no-any-return]


DONE = {"state": "completed", "info": {"docs_read": 3, "docs_written": 3, "doc_write_failures": 0}}


def test_a_replicator_database_made_meanwhile_is_taken() -> None:
    """A missing ``_replicator`` is created as any database is: ``412 file_exists`` (another
    made it first, or this run's attempt whose answer was lost) is that database, not a
    failure, and the replication's document is written into it."""
    source, target = core.endpoints("http://127.0.0.1:5984", None, "shop", "edge")
    each = core.plan(
        "shop", source, target, 0, None, type="t", form=UTC_RANDOM, continuous=False,
        create_target=True,
    )  # fmt: skip
    known = FactsCache()
    known.server_kind = "couchdb"
    known["shop"] = DatabaseFacts(partitioned=False, copies=1)
    doc = path("_replicator", each.doc_id)
    sent: list[str] = []

    def answer(request: Request) -> tuple[int, Any]:
        sent.append(f"{request.method} {request.path}")
        if request.path == "/_replicator":
            return 412, {"error": "file_exists", "reason": "The database already exists."}
        if len(sent) == 1:
            return 404, {"error": "not_found", "reason": "Database does not exist."}
        return 201, {"ok": True, "id": each.doc_id, "rev": "1-a"}

    policy = RetryPolicy.checked(0, 0, 5.0, "replicate")
    assert drive(core.start(known, [each], policy), answer) == [each.doc_id]
    assert sent == [f"PUT {doc}", "PUT /_replicator", f"PUT {doc}"]


def test_wait_polls_until_completed_and_returns_the_counts() -> None:
    answer = scripted({"state": None}, {"state": "initializing"}, {"state": "running"}, DONE)
    done = waited(answer)
    assert (done.state, done.docs_read, done.docs_written, done.doc_write_failures) == (
        "completed",
        3,
        3,
        0,
    )


def test_wait_returns_once_a_continuous_replication_runs() -> None:
    answer = scripted({"state": "pending"}, {"state": "running", "info": {"changes_pending": 7}})
    running = waited(answer, continuous=True)
    assert running.state == "running" and running.changes_pending == 7


@pytest.mark.parametrize(
    ("state", "reason", "message"),
    [
        ("failed", "invalid selector for s3cret", "the server gave up on it: invalid selector"),
        ("crashing", "db_not_found: could not open http://a:s3cret@x/", "is crashing: db_not_fo"),
        ("error", "unauthorized: s3cret refused", "is error: unauthorized"),
    ],
)
def test_wait_raises_why_a_replication_will_not_end(state: str, reason: str, message: str) -> None:
    answer = scripted({"state": "running"}, {"state": state, "info": {"error": reason}})
    with pytest.raises(ReplicationFailed, match=message) as caught:
        waited(answer)
    assert "s3cret" not in str(caught.value) and "***" in str(caught.value)


@pytest.mark.parametrize("password", ["http", "db", "open", "not"])
def test_a_password_that_is_a_word_of_the_servers_reason_is_not_masked_out_of_it(
    password: str,
) -> None:
    """A reason masked wherever it holds the password as a string would tell the password
    (``***_not_found``, ``could not open ***://``): it is masked where it stands as one."""
    server = "https://couch.example"
    reason = "db_not_found: could not open http://127.0.0.1:9/edge/"

    def answer(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        where, method = str(request.url).removeprefix(server).split("?")[0], request.method
        body: dict[str, Any] = {"error": "unexpected", "reason": f"{method} {where}"}
        status = 200
        if where in ("", "/"):
            body = {"couchdb": "Welcome", "version": "3.4.3", "vendor": {"name": "Apache"}}
        elif where == "/shop":
            body = {"db_name": "shop", "props": {}}
        elif method == "PUT" and where.startswith("/_replicator/"):
            status, body = 201, {"ok": True, "id": where.split("/")[-1], "rev": "1-a"}
        elif where.startswith("/_scheduler/docs/_replicator/"):
            body = {"doc_id": where.split("/")[-1], "state": "failed", "info": {"error": reason}}
        else:
            status = 500
        return status, {}, json.dumps(body)

    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for method in (responses.GET, responses.PUT):
            mock.add_callback(
                method,
                re.compile(re.escape(server) + ".*"),
                callback=answer,
                content_type="application/json",
            )
        client = CloudantV1(authenticator=BasicAuthenticator("bob", password))
        client.set_service_url(server)
        job = couchids.Database(client, "shop").replicate(
            f"http://carol:{password}@127.0.0.1:9/edge", START, END, type="order"
        )
        assert job.status().error == reason
        with pytest.raises(ReplicationFailed) as caught:
            job.wait(5)
    assert str(caught.value).endswith(f"the server gave up on it: {reason}"), caught.value


def test_status_info_masks_the_credentials_in_the_servers_info() -> None:
    """``info`` is the server's own object, its reason and any other text in it masked as
    ``error`` is: a crashing replication's ``info.error`` can quote a URL with its password."""
    reason = "db_not_found: could not open http://a:s3cret@x/"
    info = {"error": reason, "docs_read": 2, "note": ["said s3cret", {"url": "http://a:s3cret@x"}]}
    answer = scripted({"state": "crashing", "info": info})
    program = core.status(
        FactsCache(), ["couchids-1"], RetryPolicy.checked(0, 0, 5.0, "status"),
        partial(redact, secrets=["s3cret"]),
    )  # fmt: skip
    now = drive(program, answer)
    shown = repr(now.info)
    assert "s3cret" not in shown and now.info["couchids-1"]["docs_read"] == 2, shown
    assert now.info["couchids-1"]["error"] == now.error == reason.replace("a:s3cret", "***"), shown


def test_wait_waits_out_a_crash_that_may_mend_then_says_it_still_crashes() -> None:
    answer = scripted({"state": "crashing", "info": {"error": "econnrefused"}})
    with pytest.raises(ReplicationFailed, match=r"still crashing after 0\.3s: econnrefused"):
        waited(answer, timeout=0.3)
    mended = scripted({"state": "crashing", "info": {"error": "econnrefused"}}, DONE)
    assert waited(mended).state == "completed"


def test_wait_times_out_on_a_replication_still_under_way() -> None:
    with pytest.raises(ServerTimeoutError, match=r"still running after 0\.3s"):
        waited(scripted({"state": "running"}), timeout=0.3)


def test_wait_on_a_cancelled_replication_says_so() -> None:
    def gone(request: Request) -> tuple[int, Any]:
        if request.path == "/_replicator":
            return 200, {"db_name": "_replicator"}
        if request.path.startswith("/_replicator/"):  # open_revs=all: the deletion
            return 200, [{"ok": {"_id": "couchids-1", "_rev": "2-b", "_deleted": True}}]
        return 404, {"error": "not_found", "reason": "deleted"}

    with pytest.raises(ReplicationFailed, match="it was cancelled"):
        waited(gone)
    assert drive(core.status(FactsCache(), ["couchids-1"], POLICY), gone).state == "cancelled"
    assert drive(core.cancel(FactsCache(), ["couchids-1"], POLICY), gone) is False


def never_written(request: Request) -> tuple[int, Any]:
    """The answers about an id no replication document ever had."""
    if request.path == "/_replicator":
        return 200, {"db_name": "_replicator"}
    return 404, {"error": "not_found", "reason": "missing"}


@pytest.mark.parametrize(
    "program",
    [
        lambda: core.status(FactsCache(), ["couchids-1"], POLICY),
        lambda: core.cancel(FactsCache(), ["couchids-1"], POLICY),
        lambda: core.wait(FactsCache(), ["couchids-1"], continuous=False, timeout=5.0),
    ],
    ids=["status", "cancel", "wait"],
)
def test_an_id_no_replication_ever_had_is_no_cancelled_one(program: Any) -> None:
    # No document, live or deleted: a typo or another server, not a cancelled replication
    # (status would say "cancelled", and cancel would succeed, for nothing).
    with pytest.raises(ReplicationFailed, match="no replication 'couchids-1' on this server") as e:
        drive(program(), never_written)
    assert e.value.status == 404


def test_a_completed_replications_document_is_removed_and_still_reads_completed() -> None:
    recorded = {"_replication_state": "completed", "source": {"url": "http://h/db"}}
    stored: dict[str, Any] = {"live": [{"_id": "couchids-1", "_rev": "2-a", **recorded}]}

    def answer(request: Request) -> tuple[int, Any]:
        if request.path == "/_replicator":
            return 200, {"db_name": "_replicator"}
        if request.path.startswith("/_scheduler/docs/"):
            if "tombstone" in stored:
                # A cluster's node lists a document deleted a moment ago, without a state.
                return 200, {"doc_id": "couchids-1", "state": None, "info": None}
            return 200, {"doc_id": "couchids-1", **DONE}
        if request.method == "GET" and request.path == "/_replicator/couchids-1":
            leaves = [stored["tombstone"]] if "tombstone" in stored else stored["live"]
            return 200, [{"ok": leaf} for leaf in leaves]
        if request.method == "PUT" and request.path == "/_replicator/couchids-1":
            assert request.body is not None
            stored["tombstone"] = {**json.loads(request.body), "_rev": "3-b"}
            return 200, {"ok": True, "id": "couchids-1", "rev": "3-b"}
        raise AssertionError(request)

    first = drive(core.status(FactsCache(), ["couchids-1"], POLICY), answer)
    assert (first.state, first.docs_written) == ("completed", 3)
    counts = {"docs_read": 3, "docs_written": 3, "doc_write_failures": 0}
    assert stored["tombstone"] == {
        "_id": "couchids-1",
        "_rev": "3-b",
        "_deleted": True,
        core.COMPLETED_FIELD: counts,
    }
    # Another process, later: the deletion says it completed, and with what counts.
    again = drive(core.status(FactsCache(), ["couchids-1"], POLICY), answer)
    assert (again.state, again.docs_written, again.docs_read) == ("completed", 3, 3)
    assert drive(core.cancel(FactsCache(), ["couchids-1"], POLICY), answer) is False


def test_a_document_that_does_not_record_its_end_yet_is_kept() -> None:
    # The scheduler says completed before the replicator wrote it into the document (a
    # cluster): deleting now would race that write.
    def answer(request: Request) -> tuple[int, Any]:
        if request.path == "/_replicator":
            return 200, {"db_name": "_replicator"}
        if request.path.startswith("/_scheduler/docs/"):
            return 200, {"doc_id": "couchids-1", **DONE}
        if request.method == "GET" and request.path == "/_replicator/couchids-1":
            return 200, [{"ok": {"_id": "couchids-1", "_rev": "1-a"}}]
        raise AssertionError(request)  # no deletion

    assert drive(core.status(FactsCache(), ["couchids-1"], POLICY), answer).state == "completed"


def test_a_completed_replication_stays_completed_when_the_scheduler_forgets_it() -> None:
    ended: dict[str, Any] = {}
    assert waited(scripted(DONE), ended=ended).state == "completed"
    again = drive(core.status(FactsCache(), ["couchids-1"], POLICY, ended=ended), scripted({}))
    assert again.state == "completed" and again.docs_written == 3


POLICY = RetryPolicy.checked(0, 0, 5.0, "status")


@pytest.mark.needs("couchdb")
def test_no_credential_reaches_the_logs(
    client: CloudantV1,
    db: str,
    history: dict[str, set[str]],
    targets: list[str],
    server_url: str | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = new_target(targets)
    with caplog.at_level(logging.DEBUG):
        job = couchids.Database(client, db).replicate(
            target, START, END, type="order", server_url=server_url
        )
        job.wait(120)
        job.status()
        job.cancel()
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "PUT /_replicator/" in text  # the requests were logged
    assert "admin:pass" not in text and '"password"' not in text and '"pass"' not in text


@pytest.mark.needs("couchdb")
def test_how_couchdb_compares_a_selectors_range(client: CloudantV1, db: str) -> None:
    # Why the window's selector does not lean on $gte/$lt: Mango compares a selector's values
    # by ICU collation (a < A < b), except _id, which CouchDB 3.4.3 compares raw (bytes, the
    # order of _all_docs). The same range on _id and on another field holding the id:
    ids = ["AA", "Ab", "B0", "aa", "ab", "b", "bb"]
    docs = [{"_id": i, "k": i} for i in ids]
    client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()

    def selected(field: str) -> set[str]:
        selector = {field: {"$gte": "A", "$lt": "b"}}
        answer = client.post_changes(db=db, filter="_selector", selector=selector).get_result()
        return {row["id"] for row in answer["results"]}

    assert selected("_id") == {i for i in ids if "A" <= i < "b"} == {"AA", "Ab", "B0", "aa", "ab"}
    assert selected("k") == {"AA", "Ab", "aa", "ab"}  # ICU: "B0" sorts after "b"


@pytest.mark.needs("couchdb")
def test_one_handle_watches_the_replications_of_several_databases(
    client: CloudantV1,
    db: str,
    history: dict[str, set[str]],
    targets: list[str],
    server_url: str | None,
) -> None:
    # What a series replicates: each period database into one target, one handle for all.
    other = fresh_database(client)
    try:
        more = {made("order", START + timedelta(seconds=s)) for s in range(-2, 3)}
        client.post_bulk_docs(db=other, bulk_docs={"docs": [{"_id": i} for i in more]})
        url, credentials = server_access(client)
        target = new_target(targets)
        plans = []
        for source in (db, other):
            ends = core.endpoints(url, credentials, source, target, server_url)
            plans.append(
                core.plan(
                    source,
                    *ends,
                    START,
                    END,
                    type="order",
                    form=KUUID,
                    continuous=False,
                    create_target=True,
                )
            )
        policy = RetryPolicy.checked(0, 0, 60.0, "replicate")
        assert couchids_run(client, core.start(FactsCache(), plans, policy)) == [
            plan.doc_id for plan in plans
        ]
        job = couchids.Replication(client, plans)
        assert len(job.doc_ids) == 2 and job.sources[1].endswith("/" + other)
        done = job.wait(120)
        in_window = {i for i in more if i >= made("order", START)[:14]}
        assert done.state == "completed" and done.docs_written == 20 + len(in_window) == 23
        assert ids_in(client, target) == history["order"] | in_window
        assert [live_revisions(client, doc_id) for doc_id in job.doc_ids] == [[], []]
        assert job.cancel() is False and job.status().state == "completed"
    finally:
        drop_database(client, other)


@pytest.mark.needs("couchdb")
def test_the_commands_start_show_and_cancel_a_continuous_replication(
    client: CloudantV1,
    db: str,
    history: dict[str, set[str]],
    configured: str,
    targets: list[str],
    server_url: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = new_target(targets)
    argv = ["replicate", db, target, "--since", START.isoformat(), "--type", "order"]
    argv += ["--continuous"] + (["--server-url", server_url] if server_url else [])
    assert main(argv) == EXIT_OK
    out, err = capsys.readouterr()
    doc_id = json.loads(out)["replication"]
    assert f"couchids replication {doc_id} --cancel" in err
    assert poll(lambda: history["order onwards"] <= ids_in(client, target))
    assert main(["replication", doc_id]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["state"] == "running"
    assert main(["replication", doc_id, "--cancel"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == {"replication": doc_id, "cancelled": True}
    assert main(["replication", doc_id, "--cancel"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["cancelled"] is False
    assert poll(lambda: not scheduled(client, doc_id))


@pytest.mark.parametrize(
    "target",
    ["http://127.0.0.1:5984/shop", "http://127.0.0.1:5984/%73hop/", "http://LOCALHOST:5984/shop"],
)
def test_a_plan_refuses_a_target_that_is_its_source_whoever_made_the_endpoints(
    target: str,
) -> None:
    # A series plans its periods from endpoints it made itself, without check_target: the
    # plan's own refusal is what keeps a source from being its own target there.
    source = core.url_endpoint("http://localhost:5984/shop")
    with pytest.raises(InvalidArgumentError, match="is the source database itself"):
        core.plan(
            "shop",
            source,
            core.url_endpoint(target),
            START,
            END,
            type="order",
            form=couchids.KUUID,
            continuous=False,
            create_target=False,
        )


def test_the_command_says_how_to_cancel_a_replication_that_keeps_crashing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """couchids replicate names the command that cancels a replication the server keeps
    retrying, not the library's cancel()."""
    from couchids.cli import main as cli

    server = "https://couch.example"
    reason = "unauthorized: the target refused carol"

    def answer(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        where, method = str(request.url).removeprefix(server).split("?")[0], request.method
        body: dict[str, Any] = {"error": "unexpected", "reason": f"{method} {where}"}
        status = 200
        if where in ("", "/"):
            body = {"couchdb": "Welcome", "version": "3.4.3", "vendor": {"name": "Apache"}}
        elif where == "/shop":
            body = {"db_name": "shop", "props": {}}
        elif method == "PUT" and where.startswith("/_replicator/"):
            status, body = 201, {"ok": True, "id": where.split("/")[-1], "rev": "1-a"}
        elif where.startswith("/_scheduler/docs/_replicator/"):
            body = {"doc_id": where.split("/")[-1], "state": "crashing", "info": {"error": reason}}
        else:
            status = 500
        return status, {}, json.dumps(body)

    for name in ("CLOUDANT_APIKEY", "VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDANT_URL", server)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "basic")
    monkeypatch.setenv("CLOUDANT_USERNAME", "bob")
    monkeypatch.setenv("CLOUDANT_PASSWORD", "pw")
    argv = ["replicate", "shop", "http://carol:pw@127.0.0.1:9/edge", "--since", "1d"]
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for method in (responses.GET, responses.PUT, responses.POST, responses.HEAD):
            mock.add_callback(
                method,
                re.compile(re.escape(server) + ".*"),
                callback=answer,
                content_type="application/json",
            )
        assert cli.main([*argv, "--type", "order"]) == cli.EXIT_SERVER
    err = capsys.readouterr().err
    doc_id = re.search(r"replication (couchids-\S+) is crashing", err)
    assert doc_id is not None, err
    assert f"cancel it with couchids replication {doc_id[1]} --cancel" in err, err
    assert "cancel()" not in err, err
