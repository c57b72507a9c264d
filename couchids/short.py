"""Short daily ids: ``YYMMDD-<nonce>``, such as ``260107-bc``, allocated without collisions.

The nonce is 2 letters (400 ids a day), then 3 (8000) when 10 random 2-letter tries found no
free id, drawn from letters that spell no words and cannot be misread
(:data:`~couchids.constants.SHORT_ID_ALPHABET`).

Allocation uses CouchDB itself: ``PUT`` without ``_rev`` creates the document only if the id
is free (else 409). On a cluster each of the ``n`` copies decides that alone, so two writers of
one new id that reach different copies first can both be accepted; their revisions then become
conflicting leaves, and the deterministic winner need not be the one a quorum took. So:

**A writer owns its id exactly when its PUT is answered ``201 Created``.** CouchDB answers 201
only when a write quorum of copies (a majority, ``n // 2 + 1``) took the write, and a copy takes
a first write only when it holds no live revision of the id, so two writers can never both get
201 for one id: two majorities of one set of copies share a copy.

Every other outcome gives the id up, and the writer tries another nonce:

- ``202 Accepted`` (fewer copies than a quorum took it: the others refused, or did not answer
  in time): the writer deletes its own revision again.
- ``409 Conflict``: taken. A copy that lagged behind may still have taken our write while the
  majority refused it, and a retry after a lost answer may meet our own earlier attempt: the
  writer looks for its revision among the leaves of every copy, by the random token it stored
  (field :data:`ALLOC_FIELD`), and deletes it. (With one copy — a single node, PouchDB Server —
  an earlier attempt that is there was accepted whole, and the id is kept.)

So a claimed id holds exactly one live revision, the owner's: the revisions a writer gave up
are deleted, never another writer's. The guarantee needs what CouchDB and Cloudant do by
default: a 201 only after a majority of copies took the write. It weakens on a server made to
answer 201 from fewer copies (a ``w`` below a majority), and when a writer whose answer was lost
cannot reach the copy holding its revision to delete it (the revision then stays as a conflict
until removed by hand; its token tells which write left it).
"""

from __future__ import annotations

import io
import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from ibmcloudant.cloudant_v1 import CloudantV1

from .constants import SHORT_ID_ALPHABET, SHORT_ID_DATE_FORMAT
from .errors import AllocationFailed, InvalidArgumentError
from .server import (
    CONFLICT,
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    JSON,
    RetryPolicy,
    check_client,
    check_db,
    database_facts,
    delete_revision,
    live_leaves,
    request,
    revision,
)
from .times import TimeLike, to_datetime, to_ms
from .write import WriteResult

__all__ = [
    "ALLOC_FIELD",
    "NONCE_ATTEMPTS",
    "SHORT_ID",
    "create_short",
    "format_day",
    "random_nonce",
]

#: The field of a stored document that holds the token of the write that allocated its id.
ALLOC_FIELD: Final = "couchids_alloc"
#: ``(nonce length, tries)``, in order: 10 tries of 2 letters, then 10 of 3.
NONCE_ATTEMPTS: Final = ((2, 10), (3, 10))
#: Every short id matches this (``SHORT_ID.fullmatch(doc_id)``).
SHORT_ID: Final = re.compile(
    rf"[0-9]{{6}}-[{SHORT_ID_ALPHABET}]{{{NONCE_ATTEMPTS[0][0]},{NONCE_ATTEMPTS[-1][0]}}}"
)

_system_random = secrets.SystemRandom()


@runtime_checkable
class SupportsChoice(Protocol):
    """A random source with ``choice``, such as ``random.Random(seed)``."""

    def choice(self, seq: Sequence[str]) -> str: ...


#: A random source for nonces: an object with ``choice`` (one call per letter), or a callable
#: that takes the nonce length and returns a whole nonce.
NonceSource = SupportsChoice | Callable[[int], str]


def format_day(now: TimeLike = None) -> str:
    """The ``YYMMDD`` of the UTC date of ``now`` (default: the current time).

    >>> format_day("2026-01-07T23:59:59Z"), format_day("2026-01-07T23:30:00-01:00")
    ('260107', '260108')
    """
    return to_datetime(to_ms(now)).strftime(SHORT_ID_DATE_FORMAT)


def random_nonce(length: int, rng: NonceSource | None = None) -> str:
    """A nonce of ``length`` letters from the short-id alphabet.

    Args:
        length: letters in the nonce (at least 1).
        rng: the random source (see :data:`NonceSource`); default the operating system's
            cryptographic generator (``secrets``), so nonces cannot be predicted.

    Raises:
        InvalidArgumentError: a bad ``length``, or a callable ``rng`` returned something other
            than ``length`` letters of the alphabet.

    >>> import random
    >>> nonce = random_nonce(3, random.Random(7))
    >>> len(nonce), set(nonce) <= set("bcdfghjkmnpqrstvwxyz")
    (3, True)
    """
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise InvalidArgumentError(f"length={length!r}: a nonce has an int >= 1 of letters")
    source: NonceSource = _system_random if rng is None else rng
    if isinstance(source, SupportsChoice):
        return "".join(source.choice(SHORT_ID_ALPHABET) for _ in range(length))
    if not callable(source):
        raise InvalidArgumentError(
            f"rng={rng!r}: pass an object with .choice (such as random.Random) or a callable "
            "taking the nonce length"
        )
    nonce = source(length)
    if (
        not isinstance(nonce, str)
        or len(nonce) != length
        or not set(nonce) <= set(SHORT_ID_ALPHABET)
    ):
        raise InvalidArgumentError(
            f"rng returned {nonce!r} for a {length}-letter nonce; a nonce is {length} letters "
            f"of {SHORT_ID_ALPHABET!r}"
        )
    return nonce


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

    Tries 10 random 2-letter nonces, then 10 of 3 letters; the module docstring says how an id
    is claimed so that two writers never own one, on a cluster too. The stored document is
    ``doc`` plus the field ``couchids_alloc``, a random token that tells which write stored it
    (keep or drop it in later updates; couchids reads it only while allocating). ``doc`` itself
    is not changed: the id is in the result. A lost answer is retried with the same id and
    token, so the document is stored once; on a single copy a retry that meets its own first
    write keeps that id (``duplicate=True``), on a cluster it gives the id up and tries another.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        doc: the document, a JSON object without ``_id``, ``_rev`` or ``couchids_alloc``.
        now: the time whose UTC date starts the id (default the current time).
        rng: the random source for nonces (see :func:`random_nonce`); default ``secrets``.
        retries, backoff: as for :func:`couchids.create`.
        timeout: seconds the whole call may take, every try and retry included (default 60);
            ``None`` leaves each request to the client's own timeouts.

    Returns:
        :class:`~couchids.WriteResult` with ``id``, ``rev`` and ``duplicate``.

    Raises:
        AllocationFailed: none of the 20 tries could be claimed (taken ids, or, on a cluster,
            writes fewer copies than a quorum took); nothing was stored.
        InvalidArgumentError: ``doc`` is not a JSON object or has ``_id``, ``_rev`` or
            ``couchids_alloc``, a setting is out of range, ``client`` is not a ``CloudantV1``
            or ``db`` not a database name.
        ServerError: as for :func:`couchids.create`.

    >>> result = create_short(client, "posts", {"title": "hello"})  # doctest: +SKIP
    >>> result.id  # doctest: +SKIP
    '260107-bc'
    """
    policy = RetryPolicy.checked(retries, backoff, timeout, "create_short")
    client, db = check_client(client), check_db(db)
    if not isinstance(doc, Mapping):
        raise InvalidArgumentError(
            f"the document is a {type(doc).__name__}; a document is a JSON object (a dict)"
        )
    for field in ("_id", "_rev", ALLOC_FIELD):
        if field in doc:
            raise InvalidArgumentError(
                f"the document has {field!r}: create_short chooses the id and the allocation "
                "token itself and only creates new documents"
            )
    try:
        json.dumps(doc, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"the document is not JSON: {exc}") from None
    day = format_day(now)
    tried: list[str] = []
    unconfirmed = 0
    for length, tries in NONCE_ATTEMPTS:
        for _ in range(tries):
            doc_id = f"{day}-{random_nonce(length, rng)}"
            tried.append(doc_id)
            claim = _Claim(client, db, doc_id, doc, policy)
            result = claim.run()
            if result is not None:
                return result
            unconfirmed += claim.gave_up
    doubt = (
        f" ({unconfirmed} of them stored without a quorum of copies confirming them, and "
        "given up: is a node of the cluster down or lagging?)"
        if unconfirmed
        else ""
    )
    raise AllocationFailed(
        f"no free short id for {day} in {db!r}: none of {len(tried)} tries "
        f"({', '.join(f'{t} of {n} letters' for n, t in NONCE_ATTEMPTS)}) could be claimed"
        f"{doubt}, the last {tried[-1]!r}; nothing was stored"
    )


class _Claim:
    """One candidate id: write it with a fresh token; keep it only on a 201."""

    def __init__(
        self,
        client: CloudantV1,
        db: str,
        doc_id: str,
        doc: Mapping[str, Any],
        policy: RetryPolicy,
    ) -> None:
        self.client, self.db, self.doc_id, self.policy = client, db, doc_id, policy
        self.token = secrets.token_hex(16)
        self.payload = json.dumps({**doc, ALLOC_FIELD: self.token}, separators=(",", ":"))
        #: Whether this try stored a revision and deleted it again.
        self.gave_up = False

    def run(self) -> WriteResult | None:
        """The result if this write owns the id; ``None`` if it gave the id up."""
        answer = request(self.db, self._put, self.policy, expect=(CONFLICT,))
        if answer is not CONFLICT:
            if answer.status != 202:
                return WriteResult(self.doc_id, revision(answer.body, self.policy, self.db))
            ours = [revision(answer.body, self.policy, self.db)]
        else:
            # Even a 409 may leave our revision on a copy that lagged behind (the majority
            # refused it, that copy took it), as may an earlier attempt whose answer was lost.
            leaves = live_leaves(self.client, self.db, self.doc_id, self.policy)
            ours = [str(leaf["_rev"]) for leaf in leaves if leaf.get(ALLOC_FIELD) == self.token]
            if (
                ours
                and len(leaves) == 1
                and database_facts(self.client, self.db, self.policy).copies == 1
            ):
                # Our earlier attempt, whose answer was lost, was taken by the only copy.
                return WriteResult(self.doc_id, ours[0], duplicate=True)
        for rev in ours:
            delete_revision(self.client, self.db, self.doc_id, rev, self.policy)
        self.gave_up = bool(ours)
        return None

    def _put(self) -> Any:
        return self.client.put_document(
            db=self.db,
            doc_id=self.doc_id,
            document=io.BytesIO(self.payload.encode()),
            content_type=JSON,
        )
