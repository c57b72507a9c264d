"""What newer Apache CouchDB offers (its main branch, 3.6, which needs Erlang/OTP 26+ and does
not run here): ``follow(since=<time>)`` on ``_changes?since=<RFC 3339 time>``, and
``set_deleted_retention`` on ``PUT /{db}/_auto_purge``; and where a server lacks them, the
exact fallback and the clear refusal, on the servers that run here.

The answers of CouchDB main are recorded from its documentation and source (apache/couchdb at
a6778e5d4): src/docs/src/api/database/changes.rst ("Time-based changes feeds", the
``_time_seq`` endpoint), src/docs/src/api/database/misc.rst (``/{db}/_auto_purge``,
``/{db}/_time_seq``), src/chttpd/src/chttpd_db.erl (``handle_auto_purge_req`` answers 201
where misc.rst shows 202), src/fabric/src/fabric_view_changes.erl (``RFC3339_TIME``, the only
form of a time ``since`` read) and version.mk (main's builds say 3.5.2). What CouchDB 3.4.3
answers (checked on the local build): ``GET /{db}/_time_seq`` and ``GET /{db}/_auto_purge``
``404 not_found missing``; ``_changes?since=<time>`` ``400 bad_request``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx
import pytest
import responses
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import V7S, aio
from couchids.errors import DatabaseNotFoundError, InvalidArgumentError, ServerError
from couchids.idforms.times import to_ms

URL = "http://couchdb-main.test"
#: Main's welcome: its version.mk still says 3.5.2, so the version tells nothing of 3.6.
WELCOME = {"couchdb": "Welcome", "version": "3.5.2", "features": ["access-ready", "partitioned"]}
INFO = {"db_name": "db", "update_seq": "112-g1AAAA", "props": {}, "cluster": {"n": 1}}
#: GET /db/_time_seq, from changes.rst.
TIME_SEQ = {
    "time_seq": {
        "00000000-ffffffff": {
            "node1@127.0.0.1": [["2026-01-09T15:00:00Z", 10], ["2026-01-09T18:00:00Z", 2]]
        }
    }
}
SINCE = "2026-01-09T19:01:02Z"
#: The ids of changes.rst's example: made at 18:11, in the bin of 18:00 that holds the time.
BEFORE = ["019ba3f4f9b77e06900cf8b631821a3a", "019ba3f51e077f0c82ca136136de2d7f"]
#: Made at 19:30 (V7S.new(timestamp="2026-01-09T19:30:00Z")): after the time asked.
AFTER = "019ba43cb2c0749f8fa6a5fd721fad8c"
MISSING = {"error": "not_found", "reason": "missing"}


def change(doc_id: str, seq: int) -> dict[str, Any]:
    rev = "1-967a00dff5e02add41819138abb3284d"
    return {
        "changes": [{"rev": rev}],
        "id": doc_id,
        "seq": f"{seq}-g1AAAA",
        "doc": {"_id": doc_id, "_rev": rev, "n": seq},
    }


#: _changes?since=2026-01-09T19:01:02Z: from the start of the bin of 18:00 (changes.rst).
CHANGES = {
    "last_seq": "113-g1AAAA",
    "pending": 0,
    "results": [change(BEFORE[0], 111), change(BEFORE[1], 112), change(AFTER, 113)],
}


class Recorded:
    """A server answering from a table of ``(method, path)``: ``(status, JSON)``, anything
    else ``404 not_found missing``, which keeps what was sent; for both APIs (``responses``
    for the blocking client, an ``httpx.MockTransport`` for the asyncio one)."""

    def __init__(self, answers: dict[tuple[str, str], tuple[int, Any]]) -> None:
        self.answers = {("GET", "/"): (200, WELCOME), ("GET", "/db"): (200, INFO), **answers}
        self.sent: list[tuple[str, str, dict[str, str], Any]] = []

    def answer(self, method: str, url: str, body: bytes | None) -> tuple[int, bytes]:
        parts = urlsplit(url)
        where = unquote(parts.path)
        if body and body[:2] == b"\x1f\x8b":  # the clients gzip a large body
            body = gzip.decompress(body)
        self.sent.append((method, where, dict(parse_qsl(parts.query)), body and json.loads(body)))
        status, answer = self.answers.get((method, where), (404, MISSING))
        return status, json.dumps(answer).encode()

    def paths(self) -> list[tuple[str, str]]:
        return [(method, where) for method, where, _, _ in self.sent]

    def run(self, api: str, call: Callable[[Any], Any]) -> Any:
        """``call(handle)`` for the database ``db`` (ids of V7S) in the API ``api``: what it
        returns, awaited in the asyncio API."""
        client = CloudantV1(authenticator=NoAuthAuthenticator())
        client.set_service_url(URL)
        if api == "blocking":
            with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
                for method in ("GET", "PUT", "POST"):
                    mock.add_callback(method, re.compile(re.escape(URL) + ".*"), self._callback)
                answer = call(couchids.Database(client, "db", form=V7S))
                return list(answer) if hasattr(answer, "__next__") else answer

        def handle(request: httpx.Request) -> httpx.Response:
            status, body = self.answer(request.method, str(request.url), request.content or None)
            return httpx.Response(status, content=body, headers={"content-type": JSON})

        async def main() -> Any:
            transport = httpx.MockTransport(handle)
            async with (
                httpx.AsyncClient(transport=transport) as http,
                aio.AsyncClient(client, http) as ac,
            ):
                answer = call(aio.AsyncDatabase(ac, "db", form=V7S))
                if hasattr(answer, "__aiter__"):
                    return [doc async for doc in answer]
                return await answer

        return asyncio.run(main())

    def _callback(self, request: Any) -> tuple[int, dict[str, str], bytes]:
        body = request.body
        if hasattr(body, "read"):
            body = body.read()
        if isinstance(body, str):
            body = body.encode()
        status, answer = self.answer(request.method, request.url, body or None)
        return status, {"content-type": JSON}, answer


JSON = "application/json"


@pytest.fixture(params=["blocking", "aio"])
def api(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def followed(api: str, server: Recorded, **options: Any) -> list[str]:
    docs = server.run(api, lambda db: db.follow(wait=False, **options))
    return [doc["_id"] for doc in docs]


# -- follow(since=<time>) where the server reads a time (recorded) ------------------------------


def test_follow_since_a_time_asks_changes_from_that_time_and_keeps_only_later_ids(api: str) -> None:
    """``_changes?since=2026-01-09T19:01:02Z`` answers from the bin of 18:00 (changes.rst):
    the rows of 18:11 are filtered out by the time in their ids, the one of 19:30 is kept."""
    server = Recorded(
        {("GET", "/db/_time_seq"): (200, TIME_SEQ), ("POST", "/db/_changes"): (200, CHANGES)}
    )
    assert followed(api, server, since="2026-01-09T19:01:02.500Z") == [AFTER]
    (changes,) = [params for method, where, params, _ in server.sent if where == "/db/_changes"]
    assert changes["since"] == SINCE  # the only form CouchDB reads: cut to the second
    assert changes["include_docs"] == "true"
    # Without since, the same answer is followed whole: the filter is the time's.
    again = Recorded({("POST", "/db/_changes"): (200, CHANGES)})
    assert followed(api, again, since_seq="0") == [*BEFORE, AFTER]


def test_follow_since_a_time_resumes_from_the_checkpoint_and_still_filters(api: str) -> None:
    server = Recorded(
        {("GET", "/db/_time_seq"): (200, TIME_SEQ), ("POST", "/db/_changes"): (200, CHANGES)}
    )
    mark = couchids.Checkpoint(since_seq="110-g1AAAA")
    assert followed(api, server, since=SINCE, checkpoint=mark) == [AFTER]
    assert ("GET", "/db/_time_seq") not in server.paths()  # the checkpoint says where
    (changes,) = [params for method, where, params, _ in server.sent if where == "/db/_changes"]
    assert changes["since"] == "110-g1AAAA" and mark.since_seq == "113-g1AAAA"


def test_follow_since_a_time_keeps_the_time_out_of_the_checkpoint(api: str) -> None:
    """The checkpoint's ``since_seq`` is a ``_changes`` sequence, never the time ``_changes``
    was asked from: ``None`` while the first batch is yielded (a follow resumed then begins
    at the time again), then the answer's ``last_seq``."""
    answers = {("GET", "/db/_time_seq"): (200, TIME_SEQ), ("POST", "/db/_changes"): (200, CHANGES)}
    mark = couchids.Checkpoint()
    saved: list[str] = []

    def inside(db: Any) -> Any:
        docs = db.follow(since=SINCE, checkpoint=mark, wait=False)
        if api == "blocking":
            return [saved.append(mark.to_json()) for _ in docs]

        async def each() -> list[None]:
            return [saved.append(mark.to_json()) async for _ in docs]

        return each()

    Recorded(answers).run(api, inside)
    assert [json.loads(text)["since_seq"] for text in saved] == [None]
    assert mark.since_seq == "113-g1AAAA"
    again = Recorded(answers)
    resumed = couchids.Checkpoint.from_json(saved[0])
    assert followed(api, again, since=SINCE, checkpoint=resumed) == [AFTER]
    (changes,) = [params for method, where, params, _ in again.sent if where == "/db/_changes"]
    assert changes["since"] == SINCE and resumed.since_seq == "113-g1AAAA"


def test_follow_since_a_time_takes_a_form_of_time_and_not_since_seq(api: str) -> None:
    server = Recorded({})
    with pytest.raises(InvalidArgumentError, match="since_seq"):
        server.run(api, lambda db: db.follow(since=SINCE, since_seq="0"))
    with pytest.raises(InvalidArgumentError, match="uuid464"):
        server.run(api, lambda db: db.follow(since=SINCE, form=couchids.UUID464))
    assert server.sent == []


# -- set_deleted_retention (recorded) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("retention", "ttl"),
    [(timedelta(days=90), "90_days"), (5400, "90_min"), (1000, "1000_sec"), (None, "infinity")],
)
def test_set_deleted_retention_puts_auto_purge(api: str, retention: Any, ttl: str) -> None:
    """misc.rst: ``PUT /db/_auto_purge`` ``{"deleted_document_ttl": "3_hour"}``; chttpd_db.erl
    answers ``201 {"ok": true}``; the GET before it answers the settings."""
    server = Recorded(
        {
            ("GET", "/db/_auto_purge"): (200, {}),
            ("PUT", "/db/_auto_purge"): (201, {"ok": True}),
        }
    )
    assert server.run(api, lambda db: db.set_deleted_retention(retention)) is None
    assert server.paths() == [
        ("GET", "/db"),
        ("GET", "/db/_auto_purge"),
        ("PUT", "/db/_auto_purge"),
    ]
    assert server.sent[-1][3] == {"deleted_document_ttl": ttl}


def test_set_deleted_retention_where_the_server_has_no_auto_purge(api: str) -> None:
    """CouchDB 3.4.3 answers ``GET /db/_auto_purge`` with ``404 not_found missing``: nothing is
    PUT, and the error says what has the setting."""
    server = Recorded({})
    with pytest.raises(ServerError) as refused:
        server.run(api, lambda db: db.set_deleted_retention(timedelta(days=90)))
    assert refused.value.status == 501
    assert "keeps no auto purge settings" in str(refused.value)
    assert "CouchDB 3.6" in str(refused.value) and "purge=True" in str(refused.value)
    assert ("PUT", "/db/_auto_purge") not in server.paths()


@pytest.mark.parametrize("bad", [0, 0.5, 1.5, -3, "90d", True, timedelta(0)])
def test_set_deleted_retention_refuses_a_bad_retention_before_sending(api: str, bad: Any) -> None:
    server = Recorded({})
    with pytest.raises(InvalidArgumentError, match="retention="):
        server.run(api, lambda db: db.set_deleted_retention(bad))
    assert server.sent == []


def test_a_missing_database_is_not_a_server_without_the_feature(api: str) -> None:
    missing = {"error": "not_found", "reason": "Database does not exist."}
    server = Recorded({("GET", "/db"): (404, missing)})
    with pytest.raises(DatabaseNotFoundError):
        server.run(api, lambda db: db.set_deleted_retention(60))
    with pytest.raises(DatabaseNotFoundError):
        followed(api, server, since=SINCE)


# -- the servers that run here ------------------------------------------------------------------

T = to_ms("2026-01-09T19:01:02Z")
HOUR = 3_600_000


def test_follow_since_a_time_is_exact_without_time_changes(
    api: str, client: CloudantV1, db: str
) -> None:
    """PouchDB Server and CouchDB 3.4.3 cannot start ``_changes`` at a time: the documents
    of ids from the time on are read first, oldest first, then those stored after the call;
    ids older than the time never come, whatever was stored when."""
    handle = couchids.Database(client, db)
    made = {}
    for offset in (-2 * HOUR, -HOUR, -1000, 0, 60_000, HOUR):
        made[offset] = handle.create({"at": offset}, type="r", timestamp=T + offset).id
    handle.create({"at": "other"}, type="s", timestamp=T + HOUR)
    wanted = [made[offset] for offset in (0, 60_000, HOUR)]

    if api == "blocking":
        stream = handle.follow(type="r", since=T, wait=False)  # "now" is pinned by the call
        late_new = handle.create({"at": "late"}, type="r", timestamp=T + 2 * HOUR).id
        late_old = handle.create({"at": "late"}, type="r", timestamp=T - 3 * HOUR).id
        got = [doc["_id"] for doc in stream]
    else:

        async def main() -> list[str]:
            async with aio.AsyncClient(client) as ac:
                adb = aio.AsyncDatabase(ac, db)
                return [doc["_id"] async for doc in adb.follow(type="r", since=T, wait=False)]

        got = asyncio.run(main())
        late_new = late_old = ""
    expected = [*wanted, late_new] if late_new else wanted
    assert got[: len(wanted)] == wanted  # the window first, oldest first
    assert set(got) == set(expected)  # the late one may come twice: at least once
    assert late_old not in got or not late_old


@pytest.mark.needs("couchdb")
def test_follow_since_a_time_on_couchdb_343_falls_back(client: CloudantV1, db: str) -> None:
    """CouchDB 3.4.3 answers ``GET /{db}/_time_seq`` with a 404 (and a time ``since`` with a
    400): couchids asks it no ``_changes`` at a time."""
    handle = couchids.Database(client, db)
    kept = handle.create({"n": 1}, type="r", timestamp=T).id
    handle.create({"n": 0}, type="r", timestamp=T - HOUR)
    assert [doc["_id"] for doc in handle.follow(type="r", since=T, wait=False)] == [kept]


def test_set_deleted_retention_on_a_server_without_it_changes_nothing(
    api: str, client: CloudantV1, db: str
) -> None:
    couchids.Database(client, db).create({"n": 1})
    before = client.post_all_docs(db=db).get_result()["rows"]

    async def main() -> None:
        async with aio.AsyncClient(client) as ac:
            await aio.AsyncDatabase(ac, db).set_deleted_retention(60)

    with pytest.raises(ServerError) as refused:
        if api == "blocking":
            couchids.Database(client, db).set_deleted_retention(60)
        else:
            asyncio.run(main())
    assert refused.value.status == 501
    assert client.post_all_docs(db=db).get_result()["rows"] == before
