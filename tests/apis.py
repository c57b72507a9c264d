"""The two APIs behind one face, so one test body checks both: the methods of
``couchids.Database``, and those of ``couchids.aio.AsyncDatabase`` (run on a fresh event loop
per call, over an ``AsyncClient`` made from the test's ``CloudantV1`` client, so both send to
the same server with the same authentication). Iterators are read into lists."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Iterable
from typing import Any

from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import WriteResult, aio

#: The handle's options (couchids.Options) a test may pass with the arguments of a call.
KNOBS = ("timeout", "retries", "backoff", "parallel", "batch_size", "batch_bytes", "document_bytes")


def tuned(handle: Any, options: dict[str, Any]) -> Any:
    """``handle`` with the options among ``options`` (which loses them): a test passes
    ``timeout=5`` with a call's arguments, as a program passes it to ``with_options``; and a
    ``form``, the handle's (which ``export`` and ``rekey`` use)."""
    if "form" in options:
        handle = type(handle)(handle.client, handle.name, form=options.pop("form"))
    knobs = {name: options.pop(name) for name in KNOBS if name in options}
    return handle.with_options(**knobs) if knobs else handle


class Blocking:
    name = "blocking"

    def latest(self, client: CloudantV1, db: str, n: int = 10, **options: Any) -> list[Any]:
        return tuned(couchids.Database(client, db), options).latest(n, **options)

    def window(
        self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any
    ) -> list[Any]:
        return list(tuned(couchids.Database(client, db), options).window(start, end, **options))

    def create(self, client: CloudantV1, db: str, doc: Any, **options: Any) -> WriteResult:
        return tuned(couchids.Database(client, db), options).create(doc, **options)

    def bulk_create(
        self, client: CloudantV1, db: str, docs: Iterable[Any], **options: Any
    ) -> list[WriteResult]:
        return tuned(couchids.Database(client, db), options).bulk_create(docs, **options)

    def create_short(self, client: CloudantV1, db: str, doc: Any, **options: Any) -> WriteResult:
        return tuned(couchids.Database(client, db), options).create_short(doc, **options)

    def numbers(
        self, client: CloudantV1, db: str, name: str, count: int, **options: Any
    ) -> list[int]:
        """``count`` numbers from one Sequence object."""
        sequence = tuned(couchids.Database(client, db), options).sequence(name, **options)
        return [sequence.next() for _ in range(count)]

    def count(self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any) -> int:
        return tuned(couchids.Database(client, db), options).count(start, end, **options)

    def histogram(
        self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any
    ) -> list[Any]:
        return tuned(couchids.Database(client, db), options).histogram(start, end, **options)

    def expire(self, client: CloudantV1, db: str, before: Any, **options: Any) -> Any:
        return tuned(couchids.Database(client, db), options).expire(before, **options)

    def export(self, client: CloudantV1, db: str, start: Any, end: Any, out: Any, **o: Any) -> Any:
        return tuned(couchids.Database(client, db), o).export(start, end, out, **o)

    def archive(
        self, client: CloudantV1, db: str, target: str, start: Any, end: Any, **o: Any
    ) -> Any:
        return tuned(couchids.Database(client, db), o).archive(target, start, end, **o)

    def follow(
        self, client: CloudantV1, db: str, *, stop: int | None = None, **options: Any
    ) -> list[Any]:
        """The documents ``follow`` yields, until it ends (``wait=False``) or ``stop`` came."""
        stream = tuned(couchids.Database(client, db), options).follow(**options)
        return list(itertools.islice(stream, stop))

    def rekey(self, client: CloudantV1, source: str, target: str, **options: Any) -> Any:
        return tuned(couchids.Database(client, source), options).rekey(target, **options)


class Async:
    name = "aio"

    def latest(self, client: CloudantV1, db: str, n: int = 10, **options: Any) -> list[Any]:
        async def call(ac: aio.AsyncClient) -> list[Any]:
            return await tuned(aio.AsyncDatabase(ac, db), options).latest(n, **options)

        return _on_a_loop(client, call)

    def window(
        self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any
    ) -> list[Any]:
        async def call(ac: aio.AsyncClient) -> list[Any]:
            return [
                doc
                async for doc in tuned(aio.AsyncDatabase(ac, db), options).window(
                    start, end, **options
                )
            ]

        return _on_a_loop(client, call)

    def create(self, client: CloudantV1, db: str, doc: Any, **options: Any) -> WriteResult:
        async def call(ac: aio.AsyncClient) -> WriteResult:
            return await tuned(aio.AsyncDatabase(ac, db), options).create(doc, **options)

        return _on_a_loop(client, call)

    def bulk_create(
        self, client: CloudantV1, db: str, docs: Iterable[Any], **options: Any
    ) -> list[WriteResult]:
        async def call(ac: aio.AsyncClient) -> list[WriteResult]:
            return await tuned(aio.AsyncDatabase(ac, db), options).bulk_create(docs, **options)

        return _on_a_loop(client, call)

    def create_short(self, client: CloudantV1, db: str, doc: Any, **options: Any) -> WriteResult:
        async def call(ac: aio.AsyncClient) -> WriteResult:
            return await tuned(aio.AsyncDatabase(ac, db), options).create_short(doc, **options)

        return _on_a_loop(client, call)

    def numbers(
        self, client: CloudantV1, db: str, name: str, count: int, **options: Any
    ) -> list[int]:
        async def call(ac: aio.AsyncClient) -> list[int]:
            sequence = tuned(aio.AsyncDatabase(ac, db), options).sequence(name, **options)
            return [await sequence.next() for _ in range(count)]

        return _on_a_loop(client, call)

    def count(self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any) -> int:
        return _call(
            client,
            lambda ac: tuned(aio.AsyncDatabase(ac, db), options).count(start, end, **options),
        )

    def histogram(
        self, client: CloudantV1, db: str, start: Any, end: Any, **options: Any
    ) -> list[Any]:
        return _call(
            client,
            lambda ac: tuned(aio.AsyncDatabase(ac, db), options).histogram(start, end, **options),
        )

    def expire(self, client: CloudantV1, db: str, before: Any, **options: Any) -> Any:
        return _call(
            client, lambda ac: tuned(aio.AsyncDatabase(ac, db), options).expire(before, **options)
        )

    def export(self, client: CloudantV1, db: str, start: Any, end: Any, out: Any, **o: Any) -> Any:
        return _call(
            client, lambda ac: tuned(aio.AsyncDatabase(ac, db), o).export(start, end, out, **o)
        )

    def archive(
        self, client: CloudantV1, db: str, target: str, start: Any, end: Any, **o: Any
    ) -> Any:
        return _call(
            client, lambda ac: tuned(aio.AsyncDatabase(ac, db), o).archive(target, start, end, **o)
        )

    def follow(
        self, client: CloudantV1, db: str, *, stop: int | None = None, **options: Any
    ) -> list[Any]:
        async def call(ac: aio.AsyncClient) -> list[Any]:
            got: list[Any] = []
            async with contextlib.aclosing(
                tuned(aio.AsyncDatabase(ac, db), options).follow(**options)
            ) as stream:  # type: ignore[type-var]
                async for doc in stream:
                    got.append(doc)
                    if len(got) == stop:
                        break
            return got

        return _on_a_loop(client, call)

    def rekey(self, client: CloudantV1, source: str, target: str, **options: Any) -> Any:
        return _call(
            client,
            lambda ac: tuned(aio.AsyncDatabase(ac, source), options).rekey(target, **options),
        )


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
