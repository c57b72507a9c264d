"""couchids for asyncio: :class:`AsyncDatabase`, the same operations as
:class:`couchids.Database` as coroutines and async iterators, over ``httpx``.

Install with ``pip install 'couchids[async]'``. :class:`AsyncClient` sends the requests
(:mod:`couchids.drivers.aio`); :class:`AsyncDatabase` and :class:`AsyncSequence`
(:mod:`couchids.aio.database`) are the handles of one database, :class:`AsyncSeries`
(:mod:`couchids.aio.series`) that of a series of databases, one per period. Cancelling a
coroutine, or closing an async iterator mid-stream, cancels the requests it started and leaves
no task behind.

Example::

    import asyncio

    from couchids import aio

    async def newest_clicks():
        async with aio.new_instance() as client:
            return await aio.AsyncDatabase(client, "events").latest(10, type="click")

    print(asyncio.run(newest_clicks()))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from couchids.aio.database import AsyncDatabase, AsyncSequence
from couchids.aio.replication import AsyncReplication
from couchids.aio.series import AsyncSeries
from couchids.deprecated import OPERATIONS, operations
from couchids.drivers.aio import CONNECTIONS, AsyncClient, new_instance

if TYPE_CHECKING:
    # Deprecated (see couchids.deprecated): the methods of AsyncDatabase(client, db).
    archive: Callable[..., Any]
    bulk_create: Callable[..., Any]
    bulk_create_iter: Callable[..., Any]
    count: Callable[..., Any]
    create: Callable[..., Any]
    create_short: Callable[..., Any]
    expire: Callable[..., Any]
    export: Callable[..., Any]
    follow: Callable[..., Any]
    histogram: Callable[..., Any]
    latest: Callable[..., Any]
    rekey: Callable[..., Any]
    window: Callable[..., Any]

__all__ = [
    "CONNECTIONS",
    "AsyncClient",
    "AsyncDatabase",
    "AsyncReplication",
    "AsyncSequence",
    "AsyncSeries",
    "new_instance",
]

globals().update(operations(AsyncDatabase, __name__, OPERATIONS))
