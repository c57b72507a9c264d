"""couchids for asyncio: :class:`AsyncDatabase`, the same operations as
:class:`couchids.Database` as coroutines and async iterators, over ``httpx``.

Install with ``pip install 'couchids[async]'`` (without ``httpx``, importing this module raises
``couchids.errors.MissingExtraError`` saying so). :func:`connect` makes a client as
:func:`couchids.connect` does, with the same checks and messages; :class:`AsyncClient` sends
the requests (:mod:`couchids.drivers.aio`); :class:`AsyncDatabase` and :class:`AsyncSequence`
(:mod:`couchids.aio.database`) are the handles of one database, :class:`AsyncSeries`
(:mod:`couchids.aio.series`) that of a series of databases, one per period. Cancelling a
coroutine, or closing an async iterator mid-stream, cancels the requests it started and leaves
no task behind.

Example::

    import asyncio

    from couchids import aio

    async def newest_clicks():
        async with aio.connect() as client:  # CLOUDANT_URL, CLOUDANT_AUTH_TYPE, ...
            return await aio.AsyncDatabase(client, "events").latest(10, type="click")

    print(asyncio.run(newest_clicks()))
"""

from __future__ import annotations

from couchids.aio.database import AsyncDatabase, AsyncSequence
from couchids.aio.replication import AsyncReplication
from couchids.aio.series import AsyncSeries
from couchids.drivers.aio import CONNECTIONS, AsyncClient, connect, new_instance

__all__ = [
    "CONNECTIONS",
    "AsyncClient",
    "AsyncDatabase",
    "AsyncReplication",
    "AsyncSequence",
    "AsyncSeries",
    "connect",
    "new_instance",
]
