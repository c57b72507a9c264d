"""couchids.aio: what only the asyncio driver does. Cancelling a call or leaving an ``async for``
early leaves no task and no request behind; retries as the SDK's (``Retry-After``); every
authenticator of ibmcloudant prepares its requests; the client is checked. The answers
themselves are checked for both APIs by the operation tests, written once in tests/_async."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
import pytest
from faultproxy import client_for
from hostileserver import HostileServer
from ibm_cloud_sdk_core.authenticators import Authenticator, BasicAuthenticator
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import COUCHDB_ADMIN

import couchids
from couchids import KUUID, aio
from couchids.idforms.times import to_ms

T0 = to_ms("2024-05-01")


class Counting(httpx.AsyncBaseTransport):
    """A transport that counts the requests in flight (sent, answer not yet read)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.in_flight = 0
        self.peak = 0
        self.sent = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.sent += 1
        try:
            response = await self.inner.handle_async_request(request)
            await response.aread()
            return response
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        await self.inner.aclose()


def others() -> set[asyncio.Task[Any]]:
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


@pytest.fixture
def filled(client: CloudantV1, db: str) -> str:
    ids = [KUUID.new(T0 + k * 1000, type="e") for k in range(300)]
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": i} for i in ids]}).get_result()
    return db


def test_leaving_a_window_early_leaves_no_task_and_no_request(
    client: CloudantV1, filled: str
) -> None:
    async def main() -> None:
        transport = Counting()
        async with aio.AsyncClient(client, httpx.AsyncClient(transport=transport)) as ac:
            stream = (
                aio.AsyncDatabase(ac, filled)
                .with_options(batch_size=10, parallel=4)
                .window(T0, T0 + 300_000, type="e")
            )
            got = [await anext(stream) for _ in range(15)]
            assert len(got) == 15
            assert others(), "slices are being read ahead"
            await stream.aclose()  # type: ignore[attr-defined]
            assert others() == set()
            assert transport.in_flight == 0
            sent = transport.sent
            await asyncio.sleep(0.1)
            assert transport.sent == sent, "nothing is sent after the close"

    asyncio.run(main())


def test_cancelling_a_call_to_a_silent_server_leaves_no_task_and_no_request() -> None:
    async def main(url: str) -> None:
        transport = Counting()
        async with aio.AsyncClient(client_for(url), httpx.AsyncClient(transport=transport)) as ac:
            calls = [
                asyncio.ensure_future(
                    aio.AsyncDatabase(ac, "db").with_options(timeout=None).latest(3)
                ),
                asyncio.ensure_future(
                    _all(
                        aio.AsyncDatabase(ac, "db")
                        .with_options(timeout=None)
                        .window(T0, T0 + 1000, type="e")
                    )
                ),
                asyncio.ensure_future(
                    aio.AsyncDatabase(ac, "db").with_options(timeout=None).create({"n": 1})
                ),
            ]
            await asyncio.sleep(0.3)
            assert transport.in_flight == len(calls), "each waits for its answer"
            for call in calls:
                call.cancel()
            for call in calls:
                with pytest.raises(asyncio.CancelledError):
                    await call
            assert others() == set()
            assert transport.in_flight == 0

    with HostileServer("silent") as server:
        asyncio.run(main(server.url))


def test_a_silent_server_ends_by_the_deadline() -> None:
    async def main(url: str) -> None:
        async with aio.AsyncClient(client_for(url)) as ac:
            started = time.monotonic()
            with pytest.raises(couchids.ServerTimeoutError, match=r"^latest on 'db' \(GET /db\)"):
                await aio.AsyncDatabase(ac, "db").with_options(timeout=0.5).latest()
            assert time.monotonic() - started < 1.5

    with HostileServer("silent") as server:
        asyncio.run(main(server.url))


async def _all(stream: Any) -> list[Any]:
    return [item async for item in stream]


def test_retries_are_the_clients_and_obey_retry_after(couch_url: str, db: str) -> None:
    # The proxy answers 503 twice with no Retry-After; the client's retries (as enable_retries
    # sets them) send the write again, and couchids sees one success.
    from faultproxy import FaultProxy

    with FaultProxy(couch_url) as proxy:
        proxy.fail("503-before", method="PUT", times=2)
        cloudant = client_for(proxy.url)
        cloudant.enable_retries(max_retries=2, retry_interval=0.01)

        async def main() -> couchids.WriteResult:
            async with aio.AsyncClient(cloudant) as ac:
                return await aio.AsyncDatabase(ac, db).with_options(retries=0).create({"n": 1})

        result = asyncio.run(main())
        assert result.ok
        assert [e.outcome for e in proxy.requests("PUT")][:2] == ["503-before", "503-before"]
        assert len(proxy.requests("PUT")) == 3


@pytest.mark.needs("couchdb")
def test_the_authenticators_of_ibmcloudant_prepare_the_requests(
    couch_server: Any, client: CloudantV1, filled: str
) -> None:
    # The server itself (on the cluster: its first node, not the test proxy, which logs in
    # for its callers), without the credentials its URL carries.
    plain = couch_server.url.replace(f"{COUCHDB_ADMIN[0]}:{COUCHDB_ADMIN[1]}@", "")
    assert plain != couch_server.url
    user, password = COUCHDB_ADMIN
    for authenticator in (
        BasicAuthenticator(user, password),
        CouchDbSessionAuthenticator(user, password),
    ):
        cloudant = CloudantV1(authenticator=authenticator)
        cloudant.set_service_url(plain)

        async def main(cloudant: CloudantV1 = cloudant) -> list[dict[str, Any]]:
            async with aio.AsyncClient(cloudant) as ac:
                return await aio.AsyncDatabase(ac, filled).latest(2, type="e")

        assert asyncio.run(main()) == couchids.Database(client, filled).latest(2, type="e")
    refused = CloudantV1(authenticator=BasicAuthenticator(user, "wrong-" + uuid.uuid4().hex))
    refused.set_service_url(plain)

    async def denied() -> None:
        async with aio.AsyncClient(refused) as ac:
            await aio.AsyncDatabase(ac, filled).latest(2, type="e")

    with pytest.raises(couchids.UnauthorizedError) as caught:
        asyncio.run(denied())
    assert "wrong-" not in str(caught.value)


class BrokenTokens(Authenticator):
    """An authenticator that asks a token service (so it runs on a thread) and has a bug."""

    def authentication_type(self) -> str:
        return "iam"

    def validate(self) -> None:
        pass

    def authenticate(self, req: dict[str, Any]) -> None:
        raise ZeroDivisionError("a bug in the authenticator")


def test_an_authenticator_that_fails_on_its_thread_fails_the_call() -> None:
    async def main(url: str) -> None:
        cloudant = CloudantV1(authenticator=BrokenTokens())
        cloudant.set_service_url(url)
        async with aio.AsyncClient(cloudant) as ac:
            with pytest.raises(ZeroDivisionError, match="bug in the authenticator"):
                await asyncio.wait_for(
                    aio.AsyncDatabase(ac, "db").with_options(timeout=None).latest(), 10
                )

    with HostileServer("silent") as server:
        asyncio.run(main(server.url))


def test_new_instance_reads_the_cloudant_variables(
    couch_url: str, filled: str, client: CloudantV1, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")

    async def main() -> list[dict[str, Any]]:
        async with aio.new_instance(connections=2, headers={"X-Trace": "t"}) as ac:
            got = await aio.AsyncDatabase(ac, filled).latest(3, type="e", include_docs=False)
        assert ac.http.is_closed, "the client new_instance made is closed with it"
        assert ac.http.headers["X-Trace"] == "t", "httpx options reach httpx"
        return got

    assert asyncio.run(main()) == couchids.Database(client, filled).latest(
        3, type="e", include_docs=False
    )


def test_requests_in_flight_are_at_most_connections(client: CloudantV1, filled: str) -> None:
    # httpx's own pool would take all 20 at once (its default keeps 100 connections); couchids
    # queues them itself, so httpx's pool never holds more than it can send.
    async def main() -> list[list[dict[str, Any]]]:
        transport = Counting()
        async with aio.AsyncClient(
            client, httpx.AsyncClient(transport=transport), connections=3
        ) as ac:
            got = await asyncio.gather(
                *(aio.AsyncDatabase(ac, filled).latest(2, type="e") for _ in range(20))
            )
        assert transport.sent >= 20
        assert transport.peak == 3
        return got

    expected = couchids.Database(client, filled).latest(2, type="e")
    assert asyncio.run(main()) == [expected] * 20


@pytest.mark.parametrize("connections", [0, -1, 1.5, True, "3"])
def test_connections_is_a_positive_int(client: CloudantV1, connections: object) -> None:
    with pytest.raises(couchids.InvalidArgumentError, match="connections="):
        aio.AsyncClient(client, connections=connections)  # type: ignore[arg-type]


@pytest.mark.parametrize("client", [None, "http://127.0.0.1:5984", object()])
def test_the_client_must_be_an_async_client(client: object) -> None:
    with pytest.raises(couchids.InvalidArgumentError, match="AsyncClient"):
        aio.AsyncDatabase(client, "db").window(T0, T0 + 1)  # type: ignore[arg-type]
    with pytest.raises(couchids.InvalidArgumentError, match="AsyncClient"):
        asyncio.run(aio.AsyncDatabase(client, "db").latest())  # type: ignore[arg-type]
