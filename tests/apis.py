"""The two APIs behind one face, so one test body checks both: the blocking functions of
couchids, and the coroutines of couchids.aio (run on a fresh event loop per call, over an
``AsyncClient`` made from the test's ``CloudantV1`` client, so both send to the same server
with the same authentication)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Iterable
from typing import Any

from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import WriteResult, aio


class Blocking:
    name = "blocking"

    def latest(self, client: CloudantV1, db: str, n: int = 10, **options: Any) -> list[Any]:
        return couchids.latest(client, db, n, **options)

    def window(
        self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any
    ) -> list[Any]:
        return list(couchids.window(client, db, start, end, **options))

    def create(self, client: CloudantV1, db: str, doc: Any, **options: Any) -> WriteResult:
        return couchids.create(client, db, doc, **options)

    def bulk_create(
        self, client: CloudantV1, db: str, docs: Iterable[Any], **options: Any
    ) -> list[WriteResult]:
        return couchids.bulk_create(client, db, docs, **options)

    def create_short(self, client: CloudantV1, db: str, doc: Any, **options: Any) -> WriteResult:
        return couchids.create_short(client, db, doc, **options)

    def numbers(
        self, client: CloudantV1, db: str, name: str, count: int, **options: Any
    ) -> list[int]:
        """``count`` numbers from one Sequence object."""
        sequence = couchids.Sequence(client, db, name, **options)
        return [sequence.next() for _ in range(count)]

    def count(self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any) -> int:
        return couchids.count(client, db, start, end, **options)

    def histogram(
        self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any
    ) -> list[Any]:
        return couchids.histogram(client, db, start, end, **options)

    def expire(self, client: CloudantV1, db: str, before: Any, **options: Any) -> Any:
        return couchids.expire(client, db, before, **options)

    def export(self, client: CloudantV1, db: str, start: Any, end: Any, out: Any, **o: Any) -> Any:
        return couchids.export(client, db, start, end, out, **o)

    def archive(
        self, client: CloudantV1, db: str, target: str, start: Any, end: Any, **o: Any
    ) -> Any:
        return couchids.archive(client, db, target, start, end, **o)

    def follow(
        self, client: CloudantV1, db: str, *, stop: int | None = None, **options: Any
    ) -> list[Any]:
        """The documents ``follow`` yields, until it ends (``wait=False``) or ``stop`` came."""
        stream = couchids.follow(client, db, **options)
        return list(itertools.islice(stream, stop))

    def rekey(self, client: CloudantV1, source: str, target: str, **options: Any) -> Any:
        return couchids.rekey(client, source, target, **options)


class Async:
    name = "aio"

    def latest(self, client: CloudantV1, db: str, n: int = 10, **options: Any) -> list[Any]:
        async def call(ac: aio.AsyncClient) -> list[Any]:
            return await aio.latest(ac, db, n, **options)

        return _on_a_loop(client, call)

    def window(
        self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any
    ) -> list[Any]:
        async def call(ac: aio.AsyncClient) -> list[Any]:
            return [doc async for doc in aio.window(ac, db, start, end, **options)]

        return _on_a_loop(client, call)

    def create(self, client: CloudantV1, db: str, doc: Any, **options: Any) -> WriteResult:
        async def call(ac: aio.AsyncClient) -> WriteResult:
            return await aio.create(ac, db, doc, **options)

        return _on_a_loop(client, call)

    def bulk_create(
        self, client: CloudantV1, db: str, docs: Iterable[Any], **options: Any
    ) -> list[WriteResult]:
        async def call(ac: aio.AsyncClient) -> list[WriteResult]:
            return await aio.bulk_create(ac, db, docs, **options)

        return _on_a_loop(client, call)

    def create_short(self, client: CloudantV1, db: str, doc: Any, **options: Any) -> WriteResult:
        async def call(ac: aio.AsyncClient) -> WriteResult:
            return await aio.create_short(ac, db, doc, **options)

        return _on_a_loop(client, call)

    def numbers(
        self, client: CloudantV1, db: str, name: str, count: int, **options: Any
    ) -> list[int]:
        async def call(ac: aio.AsyncClient) -> list[int]:
            sequence = aio.AsyncSequence(ac, db, name, **options)
            return [await sequence.next() for _ in range(count)]

        return _on_a_loop(client, call)

    def count(self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any) -> int:
        return _call(client, lambda ac: aio.count(ac, db, start, end, **options))

    def histogram(
        self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any
    ) -> list[Any]:
        return _call(client, lambda ac: aio.histogram(ac, db, start, end, **options))

    def expire(self, client: CloudantV1, db: str, before: Any, **options: Any) -> Any:
        return _call(client, lambda ac: aio.expire(ac, db, before, **options))

    def export(self, client: CloudantV1, db: str, start: Any, end: Any, out: Any, **o: Any) -> Any:
        return _call(client, lambda ac: aio.export(ac, db, start, end, out, **o))

    def archive(
        self, client: CloudantV1, db: str, target: str, start: Any, end: Any, **o: Any
    ) -> Any:
        return _call(client, lambda ac: aio.archive(ac, db, target, start, end, **o))

    def follow(
        self, client: CloudantV1, db: str, *, stop: int | None = None, **options: Any
    ) -> list[Any]:
        async def call(ac: aio.AsyncClient) -> list[Any]:
            got: list[Any] = []
            async with contextlib.aclosing(aio.follow(ac, db, **options)) as stream:  # type: ignore[type-var]
                async for doc in stream:
                    got.append(doc)
                    if len(got) == stop:
                        break
            return got

        return _on_a_loop(client, call)

    def rekey(self, client: CloudantV1, source: str, target: str, **options: Any) -> Any:
        return _call(client, lambda ac: aio.rekey(ac, source, target, **options))


def _call(client: CloudantV1, coroutine: Any) -> Any:
    """``coroutine(async_client)`` awaited on a fresh loop."""

    async def call(ac: aio.AsyncClient) -> Any:
        return await coroutine(ac)

    return _on_a_loop(client, call)


def _on_a_loop(client: CloudantV1, call: Any) -> Any:
    async def main() -> Any:
        async with aio.AsyncClient(client) as ac:
            return await call(ac)

    return asyncio.run(main())


APIS = [Blocking(), Async()]
Api = Blocking | Async
