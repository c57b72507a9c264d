"""Ordinals handed out by the database itself: unique across threads, processes, machines and
the nodes of a cluster, for the seq10 / seq36 id forms.

A :class:`Sequence` is a name in a database. Its numbers are handed out in blocks: a writer
claims the next block of ``block`` numbers with one request and then hands them out from
memory, so concurrent writers do not queue on one document. A block is a document of its own,
``couchids-seq:<name>:<first number, 20 digits>`` holding ``{"end": <one past its last>}``,
and a new block starts where the highest block ends; :mod:`couchids.claim` creates it (a block
is owned exactly when its ``PUT`` is answered 201, so two writers never own one block, on a
cluster too). A claim that finds its start taken reads where that block ends, from every copy,
and tries there: blocks follow one another without overlapping, whatever sizes writers use.

Why not one counter document advanced with its revision (read ``{"next": n}``, write
``n + block`` with ``_rev``; a 409 means retry)? On a cluster, two updates of one revision can
each be taken by a different copy; both revisions then stay as leaves of the counter, and a
later writer that reads the losing leaf can update it again and hand out the same block twice.
A block document is only ever created, never updated, so there is no revision to build on.

**Gaps**: numbers of a block that its writer never hands out (the process ended, or the
:class:`Sequence` was dropped) are never used. Numbers are unique and, within one
:class:`Sequence` object, increasing; across writers they are not in time order.

The block documents are the sequence's state: deleting one lets its numbers be handed out
again. Each is a few dozen bytes; they sort together under ``couchids-seq:``, away from typed
ids, and on a partitioned database they make the partition ``couchids-seq``.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import replace
from typing import Final

from ibmcloudant.cloudant_v1 import CloudantV1

from .claim import Claim
from .core.protocol import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    MAX_BACKOFF,
    RetryPolicy,
    answer_error,
    describe,
    expect_object,
    path,
    post_json,
)
from .errors import AllocationFailed, InvalidArgumentError
from .seq import SEQ10, SeqForm
from .server import check_client, check_db, live_leaves, request

__all__ = ["BLOCK_PREFIX", "DEFAULT_BLOCK", "Sequence", "block_id"]

#: Every block document's id starts with this.
BLOCK_PREFIX: Final = "couchids-seq:"
#: Numbers a writer claims at a time, unless told otherwise.
DEFAULT_BLOCK: Final = 100
#: Digits of a block's first number in its id: byte order is number order up to 10**20 - 1.
_START_DIGITS: Final = 20
#: Claims tried before giving up (each a start found taken by another writer meanwhile).
_CLAIM_TRIES: Final = 50


def block_id(name: str, start: int) -> str:
    """The id of the block of sequence ``name`` that starts at ``start``.

    >>> block_id("invoices", 101)
    'couchids-seq:invoices:00000000000000000101'
    """
    return f"{BLOCK_PREFIX}{name}:{start:0{_START_DIGITS}d}"


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
        if (
            not isinstance(name, str)
            or not name
            or not all(c.isascii() and (c.isalnum() or c in "_-") for c in name)
        ):
            raise InvalidArgumentError(
                f"name={name!r}: a sequence name is letters, digits, '_' and '-'"
            )
        if isinstance(block, bool) or not isinstance(block, int) or not 1 <= block <= 10**6:
            raise InvalidArgumentError(f"block={block!r}: an int from 1 to 1000000")
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
                self._next, self._end = self._claim(policy)
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
        if not isinstance(form, SeqForm):
            raise InvalidArgumentError(
                f"form={form!r}: a sequence numbers ids of couchids.SEQ10 or couchids.SEQ36"
            )
        prefix = form.type_prefix(type)  # checked before a number is taken
        return prefix + form.encode(self._take("Sequence.new_id"))

    def _claim(self, policy: RetryPolicy) -> tuple[int, int]:
        start = self._after_highest(policy)
        for attempt in range(_CLAIM_TRIES):
            end = start + self.block
            doc_id = block_id(self.name, start)
            if Claim(self.client, self.db, doc_id, {"end": end}, policy).run() is not None:
                return start, end
            # Taken: others are claiming too. Jump to the highest block (a writer that only
            # stepped from block to block would trail them), never to before the end of the
            # one just met. A random wait, doubling with each loss, spreads out writers that
            # keep meeting (as Ethernet does after a collision).
            wait = random.uniform(0, min(MAX_BACKOFF, policy.backoff * 2**attempt))
            left = policy.remaining()
            # Past the deadline the next request ends with ServerTimeoutError.
            time.sleep(wait if left is None else max(0.0, min(wait, left)))
            start = max(self._after_highest(policy), self._end_of(start, policy) or start)
        raise AllocationFailed(
            f"sequence {self.name!r} in {self.db!r}: no block could be claimed in "
            f"{_CLAIM_TRIES} tries, each start taken by another writer or not confirmed by "
            "a quorum of copies; nothing was handed out"
        )

    def _after_highest(self, policy: RetryPolicy) -> int:
        """Where the next block starts, as far as the index shows: 1 when there is none."""
        options = {
            "start_key": block_id(self.name, 10**_START_DIGITS - 1),
            "end_key": block_id(self.name, 0),
            "descending": True,
            "limit": 1,
        }
        reply = request(
            self.client, self.db, post_json(path(self.db, "_all_docs"), options), policy
        )
        rows = expect_object(reply.body, policy, self.db, "rows")["rows"]
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise answer_error(policy, self.db, f"_all_docs answered rows {describe(rows)}")
        if not rows:
            return 1
        highest = str(rows[0].get("id"))
        digits = highest[len(block_id(self.name, 0)) - _START_DIGITS :]
        if not (digits.isascii() and digits.isdigit() and len(digits) == _START_DIGITS):
            raise answer_error(
                policy, self.db, f"{highest!r:.80} is not a block id of sequence {self.name!r}"
            )
        start = int(digits)
        return self._end_of(start, policy) or start

    def _end_of(self, start: int, policy: RetryPolicy) -> int | None:
        """Where the block at ``start`` ends, read from every copy; ``None`` if none stands.

        Every live revision counts, the largest end wins: a revision a writer gave up and has
        not deleted yet may say a different end (writers may claim blocks of other sizes),
        and skipping past it only leaves a gap.
        """
        doc_id = block_id(self.name, start)
        ends: list[int] = []
        for leaf in live_leaves(self.client, self.db, doc_id, policy):
            end = leaf.get("end")
            if isinstance(end, bool) or not isinstance(end, int) or end <= start:
                raise answer_error(
                    policy,
                    self.db,
                    f"sequence block {doc_id!r} has end={end!r:.40}, not a whole number past "
                    "its start: was it changed by hand?",
                )
            ends.append(end)
        return max(ends, default=None)
