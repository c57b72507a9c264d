"""Claiming a new id so that two writers never both own it, on a cluster too (the guarantee
and its limits: ``create_short`` in ``docs/guide/writing.md``).

**A writer owns an id exactly when its create-if-absent PUT is answered 201**: CouchDB answers
201 only when a majority of the copies took the write, and a copy takes a first write only
when it holds no live revision of the id, so two majorities cannot both say 201. A 202 gives
the id up: the writer deletes its own revision. So does a 409, since a copy that lagged
behind, or an earlier attempt whose answer was lost, may hold our write: it is found among
every copy's leaves by the token stored in ``couchids_alloc``. A revision given up is deleted
with a tombstone every copy takes (:func:`~couchids.core.revisions.delete_revision`).

Short daily ids (:mod:`couchids.core.short`) and sequence blocks (:mod:`couchids.core.sequence`)
are claimed this way.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Final

from couchids.core.answers import revision
from couchids.core.asking import CONFLICT, Attempts, ask
from couchids.core.effects import Program, Request, path
from couchids.core.exactjson import encode
from couchids.core.facts import FactsCache, database_facts
from couchids.core.policy import RetryPolicy
from couchids.core.revisions import delete_revision, live_leaves
from couchids.errors import WriteResult

__all__ = ["ALLOC_FIELD", "Claim"]

#: The field of a stored document that holds the token of the write that claimed its id.
ALLOC_FIELD: Final = "couchids_alloc"


class Claim:
    """One try at a new id: write the document with a fresh token; keep the id only on a 201.
    A document that is not JSON is refused as a write refuses it (``InvalidArgumentError``)."""

    def __init__(
        self,
        known: FactsCache,
        db: str,
        doc_id: str,
        doc: Mapping[str, Any],
        policy: RetryPolicy,
    ) -> None:
        self.known, self.db, self.doc_id, self.policy = known, db, doc_id, policy
        self.token = secrets.token_hex(16)
        self.payload = encode({**doc, ALLOC_FIELD: self.token}, "the document")
        #: Whether this try stored a revision and deleted it again; what the failed attempts
        #: of the PUT tell; whether it was answered at all.
        self.gave_up = False
        self.attempts = Attempts()
        self.answered = False

    def run(self) -> Program[WriteResult | None]:
        """The result if this write owns the id; ``None`` if it gave the id up."""
        put = Request("PUT", path(self.db, self.doc_id), body=self.payload)
        answer = yield from ask(
            put, self.policy, self.db, expect=(CONFLICT,), attempts=self.attempts
        )
        self.answered = True
        if answer is not CONFLICT:
            if answer.status != 202:
                rev = revision(answer.body, self.policy, self.db, answer.sent)
                return WriteResult(self.doc_id, rev)
            ours = [revision(answer.body, self.policy, self.db, answer.sent)]
        else:
            leaves = yield from live_leaves(self.known, self.db, self.doc_id, self.policy)
            ours = [str(leaf["_rev"]) for leaf in leaves if leaf.get(ALLOC_FIELD) == self.token]
            facts = yield from database_facts(self.known, self.db, self.policy)
            if ours and len(leaves) == 1 and facts.copies == 1:
                # Our earlier attempt, whose answer was lost, was taken by the only copy.
                return WriteResult(self.doc_id, ours[0], duplicate=True)
        for rev in ours:
            yield from delete_revision(self.db, self.doc_id, rev, self.policy)
        self.gave_up = bool(ours)
        return None
