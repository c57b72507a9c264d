"""Claiming a new id on CouchDB so that two writers never both own it, on a cluster too.

``PUT`` without ``_rev`` creates a document only if the id is free (else 409). On a cluster each
of the ``n`` copies decides that alone, so two writers of one new id that reach different copies
first can both be accepted; their revisions then become conflicting leaves, and the
deterministic winner need not be the one a quorum took. So:

**A writer owns an id exactly when its PUT is answered ``201 Created``.** CouchDB answers 201
only when a write quorum of copies (a majority, ``n // 2 + 1``) took the write, and a copy takes
a first write only when it holds no live revision of the id, so two writers can never both get
201 for one id: two majorities of one set of copies share a copy.

Every other outcome gives the id up:

- ``202 Accepted`` (fewer copies than a quorum took it: the others refused, or did not answer
  in time): the writer deletes its own revision again.
- ``409 Conflict``: taken. A copy that lagged behind may still have taken our write while the
  majority refused it, and a retry after a lost answer may meet our own earlier attempt: the
  writer looks for its revision among the leaves of every copy, by the random token it stored
  (field ``couchids_alloc``), and deletes it. (With one copy — a single node, PouchDB Server —
  an earlier attempt that is there was accepted whole, and the id is kept.)

So a claimed id holds exactly one live revision, the owner's: the revisions a writer gave up
are deleted, never another writer's. The guarantee needs what CouchDB and Cloudant do by
default: a 201 only after a majority of copies took the write. It weakens on a server made to
answer 201 from fewer copies (a ``w`` below a majority); when a writer whose answer was lost
cannot reach the copy holding its revision to delete it; and when a copy was paused past the
cluster's failure detection (about 60 s): writes sent to it meanwhile are taken when it
resumes, after their writers gave those ids up having seen nothing of theirs there. Such a
revision stays as a conflict beside the owner's until removed by hand; its token tells which
write left it. No id is owned twice in any of these cases.

A revision given up is deleted with a tombstone written as replication writes it
(:func:`~couchids.core.revisions.delete_revision`): copies that never held it take the deletion
too, and hand it on to the copy that does.

Short daily ids (:mod:`couchids.core.short`) and sequence blocks (:mod:`couchids.core.sequence`) are
claimed this way. Pure: a claim is a program (see :mod:`couchids.core.effects`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any, Final

from couchids.core.answers import revision
from couchids.core.asking import CONFLICT, Attempts, ask
from couchids.core.effects import Program, Request, path
from couchids.core.facts import FactsCache, database_facts
from couchids.core.policy import RetryPolicy
from couchids.core.revisions import delete_revision, live_leaves
from couchids.errors import WriteResult

__all__ = ["ALLOC_FIELD", "Claim"]

#: The field of a stored document that holds the token of the write that claimed its id.
ALLOC_FIELD: Final = "couchids_alloc"


class Claim:
    """One try at a new id: write the document with a fresh token; keep the id only on a 201.

    >>> claim = Claim(known, "db", "260107-bc", {"n": 1}, RetryPolicy(0, 0))  # doctest: +SKIP
    >>> couchids.drivers.blocking.run(client, claim.run())  # doctest: +SKIP
    WriteResult(id='260107-bc', rev='1-...', duplicate=False)
    """

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
        self.payload = json.dumps({**doc, ALLOC_FIELD: self.token}, separators=(",", ":"))
        #: Whether this try stored a revision and deleted it again.
        self.gave_up = False
        #: What the failed attempts of the PUT tell; whether the PUT was answered at all.
        self.attempts = Attempts()
        self.answered = False

    def run(self) -> Program[WriteResult | None]:
        """The result if this write owns the id; ``None`` if it gave the id up."""
        put = Request("PUT", path(self.db, self.doc_id), body=self.payload.encode())
        answer = yield from ask(
            put, self.policy, self.db, expect=(CONFLICT,), attempts=self.attempts
        )
        self.answered = True
        if answer is not CONFLICT:
            if answer.status != 202:
                return WriteResult(self.doc_id, revision(answer.body, self.policy, self.db))
            ours = [revision(answer.body, self.policy, self.db)]
        else:
            # Even a 409 may leave our revision on a copy that lagged behind (the majority
            # refused it, that copy took it), as may an earlier attempt whose answer was lost.
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
