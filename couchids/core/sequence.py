"""Ordinals handed out by the database itself: unique across threads, processes, machines and
the nodes of a cluster, for the seq10 / seq36 id forms.

A :class:`Sequence` is a name in a database. Its numbers are handed out in blocks: a writer
claims the next block of ``block`` numbers with one request and then hands them out from
memory, so concurrent writers do not queue on one document. A block is a document of its own,
``couchids-seq:<name>:<first number, 20 digits>`` holding ``{"end": <one past its last>}``,
and a new block starts where the highest block ends; :mod:`couchids.core.claim` creates it (a block
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

Pure: a block's claim is a program (see :mod:`couchids.core.effects`); the
:class:`couchids.Sequence` and :class:`couchids.aio.AsyncSequence` objects hand out its numbers.
"""

from __future__ import annotations

import random
from typing import Final

from couchids.core.answers import KeySpan, answer_error, expect_rows
from couchids.core.asking import ask
from couchids.core.claim import Claim
from couchids.core.effects import Program, Sleep, path, post_json
from couchids.core.facts import FactsCache
from couchids.core.policy import MAX_BACKOFF, RetryPolicy
from couchids.core.revisions import live_leaves
from couchids.errors import AllocationFailed, InvalidArgumentError
from couchids.idforms.seq import SeqForm

__all__ = [
    "BLOCK_PREFIX",
    "DEFAULT_BLOCK",
    "block_id",
    "check_sequence",
    "claim_block",
    "seq_prefix",
]

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


def check_sequence(name: object, block: object) -> None:
    """A sequence's ``name`` and ``block``, checked (else InvalidArgumentError)."""
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


def seq_prefix(form: object, doc_type: str | None) -> str:
    """The prefix of a seq id of ``doc_type`` in ``form``, both checked."""
    if not isinstance(form, SeqForm):
        raise InvalidArgumentError(
            f"form={form!r}: a sequence numbers ids of couchids.SEQ10 or couchids.SEQ36"
        )
    return form.type_prefix(doc_type)


def claim_block(
    known: FactsCache, db: str, name: str, block: int, policy: RetryPolicy
) -> Program[tuple[int, int]]:
    """Claim the next free block of ``block`` numbers of sequence ``name``: ``(start, end)``.

    Raises:
        AllocationFailed: no block could be claimed in 50 tries.
    """
    start = yield from _after_highest(known, db, name, policy)
    for attempt in range(_CLAIM_TRIES):
        end = start + block
        doc_id = block_id(name, start)
        if (yield from Claim(known, db, doc_id, {"end": end}, policy).run()) is not None:
            return start, end
        # Taken: others are claiming too. Jump to the highest block (a writer that only
        # stepped from block to block would trail them), never to before the end of the
        # one just met. A random wait, doubling with each loss, spreads out writers that
        # keep meeting (as Ethernet does after a collision).
        # Past the deadline the next request ends with ServerTimeoutError.
        yield Sleep.within(policy, random.uniform(0, min(MAX_BACKOFF, policy.backoff * 2**attempt)))
        highest = yield from _after_highest(known, db, name, policy)
        start = max(highest, (yield from _end_of(known, db, name, start, policy)) or start)
    raise AllocationFailed(
        f"sequence {name!r} in {db!r}: no block could be claimed in "
        f"{_CLAIM_TRIES} tries, each start taken by another writer or not confirmed by "
        "a quorum of copies; nothing was handed out"
    )


def _after_highest(known: FactsCache, db: str, name: str, policy: RetryPolicy) -> Program[int]:
    """Where the next block starts, as far as the index shows: 1 when there is none."""
    span = KeySpan(block_id(name, 10**_START_DIGITS - 1), block_id(name, 0), descending=True)
    options = {"start_key": span.start, "end_key": span.end, "descending": True, "limit": 1}
    reply = yield from ask(post_json(path(db, "_all_docs"), options), policy, db)
    rows = expect_rows(reply.body, policy, db, sent=reply.sent, span=span)
    if not rows:
        return 1
    highest = str(rows[0].get("id"))
    digits = highest[len(block_id(name, 0)) - _START_DIGITS :]
    if not (digits.isascii() and digits.isdigit() and len(digits) == _START_DIGITS):
        raise answer_error(
            policy, db, f"{highest!r:.80} is not a block id of sequence {name!r}", reply.sent
        )
    start = int(digits)
    return (yield from _end_of(known, db, name, start, policy)) or start


def _end_of(
    known: FactsCache, db: str, name: str, start: int, policy: RetryPolicy
) -> Program[int | None]:
    """Where the block at ``start`` ends, read from every copy; ``None`` if none stands.

    Every live revision counts, the largest end wins: a revision a writer gave up and has
    not deleted yet may say a different end (writers may claim blocks of other sizes),
    and skipping past it only leaves a gap.
    """
    doc_id = block_id(name, start)
    ends: list[int] = []
    for leaf in (yield from live_leaves(known, db, doc_id, policy)):
        end = leaf.get("end")
        if isinstance(end, bool) or not isinstance(end, int) or end <= start:
            raise answer_error(
                policy,
                db,
                f"sequence block {doc_id!r} has end={end!r:.40}, not a whole number past "
                "its start: was it changed by hand?",
            )
        ends.append(end)
    return max(ends, default=None)
