# Generated from couchids/aio/replication.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""The handle of a time-window replication, which :meth:`couchids.aio.AsyncDatabase.replicate`
starts.

``couchids/aio/replication.py`` is written by hand (``couchids.aio.AsyncReplication``);
``couchids/replication.py`` (``couchids.Replication``) is generated from it by
``scripts/unasync.py``. What is sent, and why, is in :mod:`couchids.core.replication`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from ibmcloudant.cloudant_v1 import CloudantV1

from couchids.core import replication
from couchids.core.defaults import DEFAULT_TIMEOUT
from couchids.core.policy import RetryPolicy
from couchids.core.replication import ReplicationPlan, ReplicationStatus
from couchids.drivers.blocking import (
    check_client,
    known_facts,
    run,
)
from couchids.drivers.redact import redact
from couchids.errors import InvalidArgumentError
from couchids.idforms.times import SecondsLike

__all__ = ["Replication"]


class Replication:
    """A replication running on the server: watch it, wait for it, cancel it.

    It is one ``_replicator`` document per source database (:attr:`doc_ids`), which the server
    runs whether or not this object lives (a continuous one until cancelled, across restarts). A
    one-shot replication's documents are removed once :meth:`status` or :meth:`wait` sees them
    completed; their status still reads ``completed``, from any process. Its repr and messages
    never show credentials.

    Args:
        client: the client that started it.
        plans: one :class:`~couchids.core.replication.ReplicationPlan` per ``_replicator``
            document (all one-shot or all continuous).

    Attributes:
        doc_ids: the ids of its documents in the server's ``_replicator`` database.
        sources: the source databases (URLs, without credentials), one per document.
        target: the target database of the first document (a URL, without credentials).
        continuous: whether it keeps copying new documents of the window.

    .. needs couchdb: PouchDB Server's replicator ignores a selector

    Example::

        job = shop.replicate("shop-edge", "2024-05-01", "2024-06-01", type="order")
        stats = job.wait(600)  # ReplicationStatus(state='completed', docs_written=...)
    """

    def __init__(self, client: CloudantV1, plans: Sequence[ReplicationPlan]) -> None:
        if not plans:
            raise InvalidArgumentError("plans=[]: a replication has at least one plan")
        self.client = check_client(client)
        self.doc_ids: tuple[str, ...] = tuple(plan.doc_id for plan in plans)
        self.sources: tuple[str, ...] = tuple(plan.source.url for plan in plans)
        self.target = plans[0].target.url
        self.continuous = plans[0].continuous
        #: What masks the server's reasons: every credential, this replication's by value.
        self._mask = partial(
            redact, secrets=[secret for plan in plans for secret in plan.secrets()]
        )
        self._facts = known_facts(client)
        #: The documents seen completed or failed (see couchids.core.replication.status).
        self._ended: dict[str, dict[str, Any]] = {}

    def __repr__(self) -> str:
        kind = "continuous" if self.continuous else "one-shot"
        ids = ", ".join(self.doc_ids)
        sources = ", ".join(map(repr, self.sources))
        return f"Replication({ids}: {sources} -> {self.target!r}, {kind})"

    def status(self, *, timeout: SecondsLike | None = DEFAULT_TIMEOUT) -> ReplicationStatus:
        """Where the replication stands now, from the server's ``_scheduler/docs``, within
        ``timeout`` seconds.

        Returns:
            A :class:`~couchids.core.replication.ReplicationStatus`: its ``state``
            (``initializing``, ``running``, ``pending``, ``crashing``, ``error``, ``failed``,
            ``completed``, or ``cancelled`` once its document is gone) and the server's counts.

        .. needs couchdb: PouchDB Server's replicator ignores a selector

        Example::

            (job.status()).state  # 'running'
        """
        policy = RetryPolicy.within(timeout, "status")
        program = replication.status(self._facts, self.doc_ids, policy, self._mask, self._ended)
        return run(self.client, program)

    def wait(self, timeout: SecondsLike | None = None) -> ReplicationStatus:
        """Wait until a one-shot replication has completed and return its final status; a continuous
        one until it is ``running``.

        Polls ``_scheduler/docs``, every 0.25 s at first, up to every second. ``timeout`` bounds the
        whole wait; ``None`` (the default) waits as long as it takes, each poll within 60 s.

        Raises:
            ReplicationFailed: the server gave up on it, it was cancelled, or it crashes on an error
                retrying does not mend (or still crashed when ``timeout`` ran out), with the
                server's reason.
            ServerTimeoutError: ``timeout`` ran out while it was under way (it goes on: wait again,
                or cancel it).

        .. needs couchdb: PouchDB Server's replicator ignores a selector

        Example::

            done = job.wait(timeout=3600)
            done.docs_written, done.doc_write_failures  # (1200, 0)
        """
        program = replication.wait(
            self._facts,
            self.doc_ids,
            continuous=self.continuous,
            timeout=timeout,
            mask=self._mask,
            ended=self._ended,
        )
        return run(self.client, program)

    def cancel(self, *, timeout: SecondsLike | None = DEFAULT_TIMEOUT) -> bool:
        """Stop the replication: delete its ``_replicator`` documents, within ``timeout`` seconds.
        Safe to call again; what it copied stays in the target.

        Returns:
            Whether a document of it was still there to delete.

        .. needs couchdb: PouchDB Server's replicator ignores a selector

        Example::

            job.cancel()  # True; again: False
        """
        policy = RetryPolicy.within(timeout, "cancel")
        program = replication.cancel(self._facts, self.doc_ids, policy)
        return run(self.client, program)
