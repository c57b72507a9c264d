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
    """Every live leaf revision of ``doc_id`` on every copy that answers (``open_revs=all``
    with ``r`` = the copies: a revision held by one copy only is seen too)."""
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


def delete_revision(db: str, doc_id: str, rev: str, policy: RetryPolicy) -> Program[str]:
    """Delete revision ``rev`` of ``doc_id`` (one couchids wrote itself) on every copy, the
    ones that do not hold it yet included; return the tombstone's revision.

    It is a tombstone child of ``rev`` written as replication writes it (``new_edits=false``),
    the same on every attempt. A plain ``DELETE ?rev=`` would be refused by the copies that
    lack ``rev``, and the one that holds it would bring it back as a live conflict.
    """
    start, _, digest = rev.partition("-")
    if not start.isdigit() or not digest:
        raise answer_error(policy, db, f"{describe(rev)} is not a revision", None)
    tomb = hashlib.md5(f"couchids-delete:{rev}".encode(), usedforsecurity=False).hexdigest()
    child = int(start) + 1
    revision = f"{child}-{tomb}"
    tombstone = {
        "_id": doc_id,
        "_rev": revision,
        "_deleted": True,
        "_revisions": {"start": child, "ids": [tomb, digest]},
    }
    body = {"docs": [tombstone], "new_edits": False}
    reply = yield from ask(post_json(path(db, "_bulk_docs"), body), policy, db)
    rows = reply.body if isinstance(reply.body, list) else [reply.body]
    refused = [row for row in rows if not isinstance(row, dict) or "error" in row]
    if refused:
        raise answer_error(
            policy,
            db,
            f"the deletion of {doc_id!r} {rev} was refused: {describe(refused[0])}",
            reply.sent,
        )
    return revision


def winner(leaves: list[dict[str, Any]]) -> dict[str, Any]:
    """The leaf CouchDB shows as the document: the longest history, then the highest rev."""

    def rank(leaf: dict[str, Any]) -> tuple[int, str]:
        pos, _, digest = str(leaf["_rev"]).partition("-")
        return (int(pos) if pos.isdigit() else 0, digest)

    return max(leaves, key=rank)
