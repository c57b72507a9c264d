"""Every operation of couchids.aio's handles and, in the generated twin, of the blocking ones,
against servers that are not a good CouchDB (tests/hostileserver.py: HTML pages, truncated
JSON, wrong types, null documents, errors inside 200 answers, silence and connections closed
mid-body), a refused session login and an IAM token service that never answers: whatever they
do, the operation raises a couchids error whose message names it, never a Python internals
error, by its deadline. (The command's cases are in tests/test_hostile.py.)

The cases of a test are independent, so a test runs them all at once, each on an event loop of
its own (:func:`concurrently.each_at_once_on_loops`), and names every case that failed.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
from concurrently import each_at_once_on_loops
from conftest import drop_database, fresh_database
from faultproxy import FaultProxy, client_for
from hostileserver import (
    CUT_SHORT_TOKEN,
    MODES,
    TEXT,
    TRUNCATED,
    HostileServer,
    TokenService,
    trust_one_certificate,
)
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import free_port
from test_hostile import (
    DB,
    PATIENT,
    SLACK,
    TARGET,
    TIMEOUT,
    check_failure,
    iam_client,
    session_authenticator,
)

import couchids
from couchids.drivers.aio import AsyncClient

from .helpers import close, database, listed

Operation = Callable[[AsyncClient, str, float], Any]
OPERATIONS: dict[str, Operation] = {
    "latest": lambda c, db, t: database(c, db, timeout=t).latest(3),
    "window": lambda c, db, t: listed(
        database(c, db, timeout=t).window("2020-01-01", "2030-01-01")
    ),
    "create": lambda c, db, t: database(c, db, timeout=t, backoff=0).create({"n": 1}),
    "bulk_create": lambda c, db, t: database(c, db, timeout=t, backoff=0).bulk_create(
        [{"n": 1}, {"n": 2}]
    ),
    "create_short": lambda c, db, t: database(c, db, timeout=t, backoff=0).create_short({"n": 1}),
    "bulk_create_iter": lambda c, db, t: listed(
        database(c, db, timeout=t, backoff=0).bulk_create_iter(iter([{"n": 1}]))
    ),
    "count": lambda c, db, t: database(c, db, timeout=t).count("2020-01-01", "2030-01-01"),
    "histogram": lambda c, db, t: database(c, db, timeout=t).histogram(
        "2020-01-01", "2030-01-01", every="1w"
    ),
    "expire": lambda c, db, t: database(c, db, timeout=t, backoff=0).expire(
        "2030-01-01", type=None, dry_run=False
    ),
    "export": lambda c, db, t: database(c, db, timeout=t).export(
        "2020-01-01", "2030-01-01", out=io.StringIO()
    ),
    "archive": lambda c, db, t: database(c, db, timeout=t, backoff=0).archive(
        TARGET, "2020-01-01", "2030-01-01", expire=True
    ),
    "follow": lambda c, db, t: listed(database(c, db, timeout=t).follow(since_seq=0, wait=False)),
    "follow-now": lambda c, db, t: listed(database(c, db, timeout=t).follow(wait=False)),
    "rekey": lambda c, db, t: database(c, db, timeout=t).rekey(TARGET, secret=b"k"),
    "Sequence.next": lambda c, db, t: database(c, db, timeout=t, backoff=0).sequence("n").next(),
    "Sequence.new_id": lambda c, db, t: database(c, db, timeout=t).sequence("n").new_id(),
}
#: Modes in which an operation may succeed: the server's answers to it were good ones.
SUCCEEDS = {
    ("null-docs", "create"),
    ("null-docs", "bulk_create"),
    ("null-docs", "create_short"),
    ("null-docs", "bulk_create_iter"),
    # Counting and deleting read ids, not documents; the deletes are answered well.
    ("null-docs", "count"),
    ("null-docs", "histogram"),
    ("null-docs", "expire"),
}
ClientOver = Callable[[CloudantV1], AsyncClient]


@pytest.fixture(autouse=True)
def one_certificate(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Clients of loopback servers load a small trust store (see hostileserver)."""
    trust_one_certificate(monkeypatch, tmp_path_factory.getbasetemp())


@pytest.mark.parametrize("mode", MODES)
async def test_every_operation_against_a_hostile_server(
    mode: str, async_client_for: ClientOver
) -> None:
    each_at_once_on_loops(
        {
            operation: partial(operation_against, mode, operation, async_client_for)
            for operation in OPERATIONS
        }
    )


async def operation_against(mode: str, operation: str, client_over: ClientOver) -> None:
    with HostileServer(mode) as server:
        client = client_over(client_for(server.url))
        started = time.monotonic()
        try:
            await OPERATIONS[operation](client, DB, TIMEOUT if mode == "silent" else PATIENT)
        except Exception as exc:
            took = time.monotonic() - started
            check_failure(exc, operation)
            if mode == "silent":
                assert isinstance(exc, couchids.ServerTimeoutError), repr(exc)
                # Without the deadline the client's own read timeout (150 s) would apply.
                assert took < TIMEOUT + SLACK, took
        else:
            assert (mode, operation) in SUCCEEDS, f"{operation} passed against {mode}"
        finally:
            await close(client)


async def test_a_text_answer_is_described_by_its_type_on_reads_and_writes_alike(
    async_client_for: ClientOver,
) -> None:
    # A read's _all_docs answer is taken as bytes, a write's decoded: each told it as text.
    each_at_once_on_loops(
        {operation: partial(text_against, operation, async_client_for) for operation in OPERATIONS}
    )


async def test_json_cut_short_is_described_alike_on_reads_and_writes(
    async_client_for: ClientOver,
) -> None:
    each_at_once_on_loops(
        {
            operation: partial(text_against, operation, async_client_for, "truncated")
            for operation in OPERATIONS
        }
    )


async def text_against(operation: str, client_over: ClientOver, mode: str = "text") -> None:
    with HostileServer(mode) as server:
        client = client_over(client_for(server.url))
        try:
            with pytest.raises(couchids.ServerError) as failed:
                await OPERATIONS[operation](client, DB, PATIENT)
        finally:
            await close(client)
        message = str(failed.value)
        said = f"not a CouchDB answer: text/plain ({len(TEXT)} bytes)"
        if mode == "truncated":
            said = f"not a CouchDB answer: JSON cut short ({len(TRUNCATED)} bytes)"
        assert said in message, (operation, message)


async def test_session_login_refused_is_unauthorized(async_client_for: ClientOver) -> None:
    with HostileServer("session-refused") as server:

        async def login_refused(operation: str) -> None:
            # A fresh client each time: ibmcloudant paces a login after a failed one.
            cloudant = CloudantV1(authenticator=session_authenticator("bob", "wrong-password"))
            cloudant.set_service_url(server.url)
            client = async_client_for(cloudant)
            try:
                with pytest.raises(couchids.UnauthorizedError) as caught:
                    await OPERATIONS[operation](client, DB, PATIENT)
            finally:
                await close(client)
            check_failure(caught.value, operation)
            assert "CLOUDANT_PASSWORD" in str(caught.value)

        each_at_once_on_loops(
            {operation: partial(login_refused, operation) for operation in OPERATIONS}
        )


async def test_a_token_service_that_never_answers_ends_every_operation_by_the_deadline(
    async_client_for: ClientOver,
) -> None:
    each_at_once_on_loops(
        {
            operation: partial(token_never_comes, operation, async_client_for)
            for operation in OPERATIONS
        }
    )


async def token_never_comes(operation: str, client_over: ClientOver) -> None:
    with TokenService(silent=True) as iam:
        client = client_over(iam_client(iam.url, iam.url))
        started = time.monotonic()
        try:
            with pytest.raises(couchids.ServerTimeoutError) as caught:
                await OPERATIONS[operation](client, DB, TIMEOUT)
        finally:
            await close(client)
        took = time.monotonic() - started
    check_failure(caught.value, operation)
    assert "did not answer the token request" in str(caught.value)
    assert took < TIMEOUT + SLACK, took
    if operation in ("create", "bulk_create", "bulk_create_iter"):
        assert caught.value.stored is False, "the write was never sent"


async def test_a_token_cut_short_is_told_as_any_answer_cut_short(
    async_client_for: ClientOver,
) -> None:
    """An IAM token's answer cut short reached a server, and is told as every operation tells
    JSON cut short, never as a server not reached."""
    with TokenService(cut_short=True) as iam:
        client = async_client_for(iam_client(iam.url, iam.url))
        try:
            with pytest.raises(couchids.ServerError) as failed:
                await database(client, DB, retries=0).latest(3)
        finally:
            await close(client)
    cut = f"the login's answer could not be read: JSON cut short ({len(CUT_SHORT_TOKEN)} bytes)"
    assert str(failed.value).endswith(cut), str(failed.value)


async def test_a_connection_refused_or_closed_is_told_in_the_same_words_by_both_apis(
    async_client_for: ClientOver, couch_url: str, db: str
) -> None:
    # The two drivers map their HTTP libraries' failures separately: each names the cause in
    # the socket's words, never an exception's class or repr.
    nobody = async_client_for(client_for(f"http://127.0.0.1:{free_port()}"))
    with pytest.raises(couchids.ServerError) as refused:
        await database(nobody, DB, retries=0).latest(3)
    assert str(refused.value).endswith("could not reach the server: Connection refused")
    with FaultProxy(couch_url) as proxy:
        proxy.fail("drop-before", method="POST", path="_all_docs", times=1)
        dropped = async_client_for(client_for(proxy.url))
        with pytest.raises(couchids.ServerError) as closed:
            await database(dropped, db, retries=0).latest(3)
    assert str(closed.value).endswith(
        "the answer broke off: the connection closed before the whole answer came"
    ), str(closed.value)
    with HostileServer("close-mid-body") as server:
        cut = async_client_for(client_for(server.url))
        with pytest.raises(couchids.ServerError) as broke:
            await database(cut, DB, retries=0).latest(3)
    assert str(broke.value).endswith("the answer broke off: the connection closed mid-body")
    for error in (refused.value, closed.value, broke.value):
        assert error.status == 0 and type(error) is couchids.ServerError


async def test_a_5xx_after_the_clients_own_retries_is_told_in_the_servers_words(
    async_client_for: ClientOver, couch_url: str, db: str
) -> None:
    # With enable_retries(), urllib3 ends the blocking client's retries with "Max retries
    # exceeded", which holds no word of the server's; both APIs say what the server said.
    with FaultProxy(couch_url) as proxy:
        proxy.fail("503-before", method="POST", path="_all_docs", times=10)
        cloudant = client_for(proxy.url)
        cloudant.enable_retries(max_retries=1, retry_interval=0.01)
        with pytest.raises(couchids.ServerError) as failed:
            await database(async_client_for(cloudant), db, retries=0).latest(3)
        assert len(proxy.requests("POST", "_all_docs")) == 2  # the client's retry was made
    message = str(failed.value)
    assert failed.value.status == 503 and type(failed.value) is couchids.ServerError
    assert message.endswith(
        "the server answered HTTP 503: service_unavailable: answer lost by the test proxy"
    ), message


async def test_a_follow_answered_in_another_shape_names_the_request(
    async_client_for: ClientOver,
) -> None:
    with HostileServer("wrong-types") as server:
        client = async_client_for(client_for(server.url))
        for since in (0, "now"):  # from a sequence, and from now
            with pytest.raises(couchids.ServerError) as failed:
                follow = database(client, DB, timeout=PATIENT).follow(since_seq=since, wait=False)
                await listed(follow)
            message = str(failed.value)
            head = f"follow on {DB!r} (POST /{DB}/_changes): not a CouchDB answer: "
            assert message.startswith(head), (since, message)


@pytest.fixture
def target(client: CloudantV1) -> Iterator[str]:
    name = fresh_database(client)
    yield name
    drop_database(client, name)


#: Operations that meet a request answered in another shape once a real server answered the
#: ones before it well: (the operation, with the target database; the request answered so).
SHAPED: dict[str, tuple[Callable[[Any, str], Any], str, str]] = {
    "expire": (lambda d, t: d.expire("2030-01-01", type=None, dry_run=False), "POST", "_bulk_docs"),
    "expire, purging": (
        lambda d, t: d.expire("2030-01-01", type=None, dry_run=False, purge=True),
        "POST",
        "_purge",
    ),
    "archive, copying": (
        lambda d, t: d.archive(t, "2020-01-01", "2030-01-01"),
        "POST",
        "_bulk_docs",
    ),
    "archive, reading back": (
        lambda d, t: d.archive(t, "2020-01-01", "2030-01-01"),
        "POST",
        "_bulk_get",
    ),
    "create_short": (lambda d, t: d.create_short({"n": 1}), "PUT", ""),
    "create": (lambda d, t: d.create({"n": 1}), "PUT", ""),
    "bulk_create": (lambda d, t: d.bulk_create([{"n": 1}]), "POST", "_bulk_docs"),
}


@pytest.mark.parametrize("case", [case for case in SHAPED if "purging" not in case])
async def test_a_write_answered_in_another_shape_names_the_request(
    case: str,
    async_client_for: ClientOver,
    async_client: AsyncClient,
    couch_url: str,
    db: str,
    target: str,
) -> None:
    await shaped(case, async_client_for, async_client, couch_url, db, target)


@pytest.mark.needs("couchdb")
async def test_a_purge_answered_in_another_shape_names_the_request(
    async_client_for: ClientOver,
    async_client: AsyncClient,
    couch_url: str,
    db: str,
    target: str,
) -> None:
    await shaped("expire, purging", async_client_for, async_client, couch_url, db, target)


async def shaped(
    case: str,
    async_client_for: ClientOver,
    async_client: AsyncClient,
    couch_url: str,
    db: str,
    target: str,
) -> None:
    act, method, endpoint = SHAPED[case]
    await database(async_client, db).bulk_create([{"n": n} for n in range(3)])
    with FaultProxy(couch_url) as proxy:
        # The purge of expire's own deletions, after the empty one that checks for _purge.
        after = 1 if endpoint == "_purge" else 0
        proxy.fail("shape-after", method=method, path=f"^/[^/]+/{endpoint}", after=after)
        client = async_client_for(client_for(proxy.url))
        with pytest.raises(couchids.ServerError) as failed:
            await act(database(client, db, retries=0), target)
        (bent,) = [entry for entry in proxy.log if entry.outcome == "shape-after"]
        await close(client)
    message = str(failed.value)
    asked = f"{method} {bent.path.split('?')[0]}"
    assert f" ({asked}): not a CouchDB answer: " in message, message


async def test_a_lookup_after_a_conflict_answered_without_revisions_names_the_request(
    async_client_for: ClientOver, async_client: AsyncClient, couch_url: str, db: str
) -> None:
    """A bulk write of a document stored already reads it back by key after the 409; an
    answer whose document has no _rev names that lookup."""
    doc = {"_id": "stored-once", "n": 1}
    await database(async_client, db).bulk_create([doc])
    with FaultProxy(couch_url) as proxy:
        proxy.fail("unrevised-after", method="POST", path=r"^/[^/]+/_all_docs")
        client = async_client_for(client_for(proxy.url))
        with pytest.raises(couchids.ServerError) as failed:
            await database(client, db, retries=0).bulk_create([doc])
        assert not proxy.pending()
        await close(client)
    message = str(failed.value)
    assert f" (POST /{db}/_all_docs): not a CouchDB answer: " in message, message
