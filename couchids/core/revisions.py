"""Revisions on every copy: every live leaf of a document (:func:`live_leaves`), the deletion
of a revision couchids wrote itself on every copy (:func:`delete_revision`), and the leaf
CouchDB shows as the document (:func:`winner`)."""

from __future__ import annotations

import hashlib
from typing import Any

from couchids.core.answers import answer_error, describe
from couchids.core.asking import MISSING, ask
from couchids.core.effects import Program, Request, path, post_json
from couchids.core.facts import FactsCache, database_facts
from couchids.core.policy import RetryPolicy


def live_leaves(
    known: FactsCache, db: str, doc_id: str, policy: RetryPolicy
) -> Program[list[dict[str, Any]]]:
    """Every live (not deleted) leaf revision of ``doc_id``, read from every copy.

    ``GET /{db}/{doc_id}?open_revs=all&r=N`` with ``N`` the database's copies: a revision held
    by only one copy (a cluster write that reached fewer copies than a quorum, or two first
    writes of one id that reached different copies) is seen as long as that copy answers. An
    empty list means no copy that answered holds a live revision.
    """
    copies = (yield from database_facts(known, db, policy)).copies
    # Attachment data too: a compressed one's digest is not the MD5 of its bytes.
    params = {"open_revs": "all", "r": str(copies), "attachments": "true"}
    reply = yield from ask(Request("GET", path(db, doc_id), params), policy, db, expect=(MISSING,))
    if reply is MISSING:
        return []
    if not isinstance(reply.body, list):
        raise answer_error(
            policy,
            db,
            f"open_revs=all of {doc_id!r} answered {describe(reply.body)}, not a list",
            reply.sent,
        )
    leaves = [entry.get("ok") for entry in reply.body if isinstance(entry, dict)]
    live = [leaf for leaf in leaves if isinstance(leaf, dict) and not leaf.get("_deleted")]
    for leaf in live:
        if not isinstance(leaf.get("_rev"), str):
            raise answer_error(
                policy, db, f"a revision of {doc_id!r} has no _rev: {describe(leaf)}", reply.sent
            )
    return live


def delete_revision(db: str, doc_id: str, rev: str, policy: RetryPolicy) -> Program[None]:
    """Delete revision ``rev`` of ``doc_id`` (one couchids wrote itself) on every copy, the
    ones that do not hold it yet included.

    The deletion is written as replication writes it: a tombstone whose parent is ``rev``
    (``_bulk_docs`` with ``new_edits=false``). A plain ``DELETE ?rev=`` is refused by a copy
    that lacks ``rev``, so on a cluster a majority of such copies answers 409 while the copy
    that holds it (paused, or behind) never hears of the deletion, and ``rev`` comes back as
    a live conflict once that copy catches up. The tombstone is taken by every copy, joins
    ``rev``'s history wherever the two meet, and is the same revision on every attempt, so
    writing it again changes nothing.
    """
    start, _, digest = rev.partition("-")
    if not start.isdigit() or not digest:
        raise answer_error(policy, db, f"{describe(rev)} is not a revision", None)
    tomb = hashlib.md5(f"couchids-delete:{rev}".encode(), usedforsecurity=False).hexdigest()
    child = int(start) + 1
    tombstone = {
        "_id": doc_id,
        "_rev": f"{child}-{tomb}",
        "_deleted": True,
        "_revisions": {"start": child, "ids": [tomb, digest]},
    }
    body = {"docs": [tombstone], "new_edits": False}
    reply = yield from ask(post_json(path(db, "_bulk_docs"), body), policy, db)
    rows = reply.body if isinstance(reply.body, list) else [reply.body]
    refused = [row for row in rows if not isinstance(row, dict) or "error" in row]
    if refused:
        raise answer_error(
            policy, db, f"the deletion of {doc_id!r} {rev} was refused: {describe(refused[0])}"
        )


def winner(leaves: list[dict[str, Any]]) -> dict[str, Any]:
    """The leaf CouchDB shows as the document: the longest history, then the highest rev."""

    def rank(leaf: dict[str, Any]) -> tuple[int, str]:
        pos, _, digest = str(leaf["_rev"]).partition("-")
        return (int(pos) if pos.isdigit() else 0, digest)

    return max(leaves, key=rank)
