"""The handle of a time-window replication, which
:meth:`couchids.aio.AsyncDatabase.replicate` starts.

``couchids/aio/replication.py`` holds the asyncio handle (``couchids.aio.AsyncReplication``),
written by hand; ``couchids/replication.py`` holds the blocking one
(``couchids.Replication``), generated from it by ``scripts/unasync.py``. What is sent, and
why a replication is a ``_replicator`` document, is in :mod:`couchids.core.replication`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from couchids.core import replication
from couchids.core.defaults import DEFAULT_TIMEOUT
from couchids.core.policy import RetryPolicy
from couchids.core.replication import ReplicationPlan, ReplicationStatus
from couchids.drivers.aio import (
    AsyncClient,
    check_client,
    known_facts,
    run,
)
from couchids.errors import InvalidArgumentError

__all__ = ["AsyncReplication"]


class AsyncReplication:
    """A replication running on the server: watch it, wait for it, cancel it.

    It is one ``_replicator`` document per source database (:attr:`doc_ids`); the server
    runs it whether or not this object lives, and keeps a continuous one running until it is
    cancelled (also across restarts). A one-shot replication's documents are removed once
    :meth:`status` or :meth:`wait` sees them completed, so that ``_replicator`` does not fill
    with finished replications: their deletions keep the counts, and the status still reads
    ``completed``, from any process. Its repr and messages never show credentials.

    Args:
        client: the client that started it.
        plans: what was started, one :class:`~couchids.core.replication.ReplicationPlan`
            per ``_replicator`` document (all one-shot or all continuous).

    Attributes:
        doc_ids: the ids of its documents in the server's ``_replicator`` database.
        sources: the source databases (URLs, without credentials), one per document.
        target: the target database of the first document (a URL, without credentials).
        continuous: whether it keeps copying new documents of the window.

    .. needs couchdb: PouchDB Server's replicator ignores a selector

    Example::

        job = await shop.replicate("shop-edge", "2024-05-01", "2024-06-01", type="order")
        stats = await job.wait(600)  # ReplicationStatus(state='completed', docs_written=...)
    """

    def __init__(self, client: AsyncClient, plans: Sequence[ReplicationPlan]) -> None:
        if not plans:
            raise InvalidArgumentError("plans=[]: a replication has at least one plan")
        self.client = check_client(client)
        self.doc_ids: tuple[str, ...] = tuple(plan.doc_id for plan in plans)
        self.sources: tuple[str, ...] = tuple(plan.source.url for plan in plans)
        self.target = plans[0].target.url
        self.continuous = plans[0].continuous
        self._secrets = tuple(secret for plan in plans for secret in plan.secrets())
        self._facts = known_facts(client)
        #: The documents seen completed or failed (see couchids.core.replication.status).
        self._ended: dict[str, dict[str, Any]] = {}

    def __repr__(self) -> str:
        kind = "continuous" if self.continuous else "one-shot"
        ids = ", ".join(self.doc_ids)
        sources = ", ".join(map(repr, self.sources))
        return f"AsyncReplication({ids}: {sources} -> {self.target!r}, {kind})"

    async def status(self, *, timeout: float | None = DEFAULT_TIMEOUT) -> ReplicationStatus:
        """Where the replication stands now, from the server's ``_scheduler/docs``.

        Args:
            timeout: seconds the whole call may take (a request or two per document, with
                their retries); default 60.

        Returns:
            A :class:`~couchids.core.replication.ReplicationStatus`: its ``state``
            (``initializing``, ``running``, ``pending``, ``crashing``, ``error``,
            ``failed``, ``completed``, or ``cancelled`` once its document is gone) and the
            server's counts (``docs_read``, ``docs_written``, ``doc_write_failures``, ...).
            The documents of a one-shot replication seen ``completed`` are removed
            (:func:`~couchids.core.replication.remove_completed`).

        Raises:
            ServerError: (and subclasses) the server failed.

        .. needs couchdb: PouchDB Server's replicator ignores a selector

        Example::

            (await job.status()).state  # 'running'
        """
        policy = RetryPolicy.within(timeout, "status")
        program = replication.status(self._facts, self.doc_ids, policy, self._secrets, self._ended)
        return await run(self.client, program)

    async def wait(self, timeout: float | None = None) -> ReplicationStatus:
        """Wait until a one-shot replication has completed, and return its final status (the
        server's counts); a continuous one until it is ``running`` (it never completes).

        Polls ``_scheduler/docs``, every 0.25 s at first, then less often, up to every second.
        A one-shot replication's documents are removed once it completed (see :meth:`status`).

        Args:
            timeout: seconds to wait at most, ``None`` (the default) for as long as it takes.
                It bounds the whole wait: every request of every poll, its retries and the
                pauses between polls. Without it, each poll still gives up after 60 s
                without an answer (``ServerTimeoutError``).

        Raises:
            ReplicationFailed: the server gave up on it (``failed``), it was cancelled, or it
                is crashing on an error that retrying does not mend (a database not found,
                credentials refused) or still crashing when ``timeout`` ran out; the message
                says the server's reason.
            ServerTimeoutError: ``timeout`` ran out while it was still under way (it goes
                on: wait again, or cancel it), or while the server did not answer a poll.
            ServerError: (and subclasses) the server failed.

        .. needs couchdb: PouchDB Server's replicator ignores a selector

        Example::

            done = await job.wait(timeout=3600)
            done.docs_written, done.doc_write_failures  # (1200, 0)
        """
        program = replication.wait(
            self._facts,
            self.doc_ids,
            continuous=self.continuous,
            timeout=timeout,
            secrets=self._secrets,
            ended=self._ended,
        )
        return await run(self.client, program)

    async def cancel(self, *, timeout: float | None = DEFAULT_TIMEOUT) -> bool:
        """Stop the replication: delete its ``_replicator`` documents. Safe to call again.

        Documents it copied stay in the target.

        Args:
            timeout: seconds the whole call may take, every read, deletion and retry
                included; default 60.

        Returns:
            Whether a document of it was still there to delete (not for a one-shot
            replication seen completed: its documents were removed then).

        Raises:
            ServerError: (and subclasses) the server failed.

        .. needs couchdb: PouchDB Server's replicator ignores a selector

        Example::

            await job.cancel()  # True; again: False
        """
        policy = RetryPolicy.within(timeout, "cancel")
        program = replication.cancel(self._facts, self.doc_ids, policy)
        return await run(self.client, program)
