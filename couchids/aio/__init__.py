"""couchids for asyncio: the handles of the blocking API, their operations as coroutines and
async iterators, over ``httpx`` (``pip install 'couchids[async]'``; without it, importing this
module raises ``couchids.errors.MissingExtraError``).

:func:`connect` makes a client as :func:`couchids.connect` does. Cancelling a coroutine, or
closing an async iterator mid-stream, cancels the requests it started and leaves no task behind.

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
