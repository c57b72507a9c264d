"""Ordinals handed out by the database itself, for the seq10 / seq36 id forms: the blocking
:class:`Sequence` (how blocks are claimed is described in :mod:`couchids.core.sequence`).
"""

from __future__ import annotations

import threading
from dataclasses import replace

from ibmcloudant.cloudant_v1 import CloudantV1

from .core.protocol import DEFAULT_BACKOFF, DEFAULT_RETRIES, DEFAULT_TIMEOUT, RetryPolicy
from .core.sequence import (
    BLOCK_PREFIX,
    DEFAULT_BLOCK,
    block_id,
    check_sequence,
    claim_block,
    seq_prefix,
)
from .seq import SEQ10, SeqForm
from .server import check_client, check_db, known_facts, run

__all__ = ["BLOCK_PREFIX", "DEFAULT_BLOCK", "Sequence", "block_id"]


class Sequence:
    """A named sequence of whole numbers, from 1, kept in database ``db``.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database that holds the sequence (usually the one its ids go into).
        name: the sequence's name: letters, digits, ``_`` and ``-`` (such as the type of the
            documents it numbers).
        block: numbers claimed at a time (1 to 1,000,000): larger blocks mean fewer requests
            and larger gaps when a writer stops.
        retries, backoff: as for :func:`couchids.create`.
        timeout: seconds each call of :meth:`next` (or ``new_id``) may take, the claim
            of a new block with its retries included (default 60); ``None`` leaves it to the
            client's own timeouts.

    Raises:
        InvalidArgumentError: not a ``CloudantV1`` client, a bad database name, name, block
            or timeout.

    :meth:`next` is safe to call from many threads.

    >>> invoices = Sequence(client, "shop", "invoices")  # doctest: +SKIP
    >>> invoices.next(), invoices.next()  # doctest: +SKIP
    (1, 2)
    """

    def __init__(
        self,
        client: CloudantV1,
        db: str,
        name: str,
        *,
        block: int = DEFAULT_BLOCK,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self._policy = RetryPolicy.checked(retries, backoff, timeout, "Sequence.next")
        client, db = check_client(client), check_db(db)
        check_sequence(name, block)
        self.client, self.db, self.name, self.block = client, db, name, block
        self._lock = threading.Lock()
        self._next = self._end = 0

    def __repr__(self) -> str:
        return f"Sequence(db={self.db!r}, name={self.name!r}, block={self.block})"

    def next(self) -> int:
        """The next number: from this writer's block, or from a new block claimed for it.

        Raises:
            AllocationFailed: no block could be claimed in 50 tries (many writers claiming
                at once, or a cluster whose copies do not confirm writes).
            ServerError: the server failed (as for :func:`couchids.create`);
                ``ServerTimeoutError`` when the ``timeout`` ran out.
        """
        return self._take("Sequence.next")

    def _take(self, operation: str) -> int:
        with self._lock:
            if self._next >= self._end:
                policy = replace(self._policy, operation=operation).renewed()
                claim = claim_block(
                    known_facts(self.client), self.db, self.name, self.block, policy
                )
                self._next, self._end = run(self.client, claim)
            number = self._next
            self._next += 1
            return number

    def new_id(self, *, type: str | None = None, form: SeqForm = SEQ10) -> str:
        """A new id of a seq form: ``form.type_prefix(type) + form.encode(self.next())``.

        Args:
            type: the document type written before the number (with the form's separator).
            form: :data:`couchids.SEQ10` (10 decimal digits) or :data:`couchids.SEQ36`
                (7 base36 characters), with any separator.

        Raises:
            InvalidArgumentError: ``form`` is not a seq form, or the number no longer fits
                its width.
            InvalidTypeError: ``type`` breaks the type rule.
            AllocationFailed, ServerError: as :meth:`next`.

        >>> invoices.new_id(type="invoice")  # doctest: +SKIP
        'invoice:0000000003'
        """
        prefix = seq_prefix(form, type)  # checked before a number is taken
        return prefix + form.encode(self._take("Sequence.new_id"))
