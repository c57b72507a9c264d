"""Ordinals handed out by the database itself, for the seq10 / seq36 id forms: unique across
threads, processes, machines and the nodes of a cluster.

A sequence's numbers are claimed in blocks: a block is a document of its own,
``couchids-seq:<name>:<first number, 20 digits>`` holding ``{"end": <one past its last>}``,
created as :mod:`couchids.core.claim` claims ids (owned exactly when its ``PUT`` is answered
201), and a new block starts where the highest one ends. A block is only ever created, never
updated: one counter document updated by revision could, on a cluster, keep two leaves and
hand out one block twice. What a user sees (gaps, the block documents) is in the guide's
"Ordinal ids" (``docs/guide/ids.md``).
"""

from __future__ import annotations

import random
import re
from typing import Final

from couchids.core import arguments
from couchids.core.answers import answer_error
from couchids.core.claim import Claim
from couchids.core.effects import Program, Sleep
from couchids.core.facts import FactsCache
from couchids.core.pages import all_docs
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
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise InvalidArgumentError(
            f"name={name!r}: a sequence name is letters, digits, '_' and '-'"
        )
    arguments.count("block", block, most=10**6)


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
        # Taken: jump to the highest block (stepping block by block would trail the other
        # writers), never before the end of the one just met, after a random wait that
        # doubles with each loss (as Ethernet does after a collision).
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
    high, low = block_id(name, 10**_START_DIGITS - 1), block_id(name, 0)
    options = {"start_key": high, "end_key": low, "descending": True, "limit": 1}
    rows = yield from all_docs(db, options, policy)
    if not rows:
        return 1
    highest = str(rows[0].get("id"))
    digits = highest[len(block_id(name, 0)) - _START_DIGITS :]
    if not (digits.isascii() and digits.isdigit() and len(digits) == _START_DIGITS):
        raise answer_error(policy, db, f"{highest!r:.80} is not a block id of sequence {name!r}")
    start = int(digits)
    return (yield from _end_of(known, db, name, start, policy)) or start


def _end_of(
    known: FactsCache, db: str, name: str, start: int, policy: RetryPolicy
) -> Program[int | None]:
    """Where the block at ``start`` ends, read from every copy; ``None`` if none stands. The
    largest end of its live revisions wins (one given up but not deleted yet may say another
    end): skipping past it only leaves a gap."""
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
