"""Short daily ids ``YYMMDD-<nonce>``, such as ``260107-bc``, allocated without collisions.

The blocking API: :func:`create_short` runs the program of :mod:`couchids.core.short` (where
the allocation, and the guarantee it gives, are described) through the caller's
``ibmcloudant`` client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ibmcloudant.cloudant_v1 import CloudantV1

from .core import short
from .core.protocol import DEFAULT_BACKOFF, DEFAULT_RETRIES, DEFAULT_TIMEOUT
from .core.short import ALLOC_FIELD, NONCE_ATTEMPTS, SHORT_ID, NonceSource, format_day, random_nonce
from .core.writes import WriteResult
from .server import check_client, check_db, known_facts, run
from .times import TimeLike

__all__ = [
    "ALLOC_FIELD",
    "NONCE_ATTEMPTS",
    "SHORT_ID",
    "create_short",
    "format_day",
    "random_nonce",
]


def create_short(
    client: CloudantV1,
    db: str,
    doc: Mapping[str, Any],
    *,
    now: TimeLike = None,
    rng: NonceSource | None = None,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> WriteResult:
    """Store a new document under a free short id ``YYMMDD-<nonce>`` of the UTC day of ``now``.

    Tries 10 random 2-letter nonces, then 10 of 3 letters; :mod:`couchids.core.short` says how an id
    is claimed so that two writers never own one, on a cluster too. The stored document is
    ``doc`` plus the field ``couchids_alloc``, a random token that tells which write stored it
    (keep or drop it in later updates; couchids reads it only while allocating). ``doc`` itself
    is not changed: the id is in the result. A lost answer is retried with the same id and
    token, so the document is stored once; on a single copy a retry that meets its own first
    write keeps that id (``duplicate=True``), on a cluster it gives the id up and tries another.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        doc: the document, a JSON object without ``_id``, ``couchids_alloc`` or a top-level
            ``_`` field other than ``_attachments``.
        now: the time whose UTC date starts the id (default the current time).
        rng: the random source for nonces (see :func:`~couchids.core.short.random_nonce`);
            default ``secrets``.
        retries, backoff: as for :func:`couchids.create`.
        timeout: seconds the whole call may take, every try and retry included (default 60);
            ``None`` leaves each request to the client's own timeouts.

    Returns:
        :class:`~couchids.WriteResult` with ``id``, ``rev`` and ``duplicate``.

    Raises:
        AllocationFailed: none of the 20 tries could be claimed (taken ids, or, on a cluster,
            writes fewer copies than a quorum took); nothing was stored.
        InvalidArgumentError: ``doc`` is not a JSON object or has ``_id``, ``_rev``,
            ``_deleted`` or ``couchids_alloc``, a setting is out of range, ``client`` is not a
            ``CloudantV1`` or ``db`` not a database name.
        ServerError: as for :func:`couchids.create`, with the id of the try that failed in
            ``doc_id`` and ``stored`` saying whether it may have been stored (with its token).

    >>> result = create_short(client, "posts", {"title": "hello"})  # doctest: +SKIP
    >>> result.id  # doctest: +SKIP
    '260107-bc'
    """
    client, db = check_client(client), check_db(db)
    program = short.create_short(
        known_facts(client),
        db,
        doc,
        now=now,
        rng=rng,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
    )
    return run(client, program)
