"""Short daily ids: ``YYMMDD-<nonce>``, such as ``260107-bc``, allocated without collisions.

The nonce is 2 letters (400 ids a day), then 3 (8000) when 10 random 2-letter tries found no
free id, drawn from letters that spell no words and cannot be misread
(:data:`~couchids.constants.SHORT_ID_ALPHABET`).

Each try is a :class:`~couchids.claim.Claim`: **a writer owns its id exactly when its PUT is
answered ``201 Created``**, and a try given up leaves nothing of its own behind; the guarantee,
and where it weakens, is stated in :mod:`couchids.claim`. So a claimed id holds exactly one
live revision, the owner's, on a single node and on a cluster alike.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from ibmcloudant.cloudant_v1 import CloudantV1

from .claim import ALLOC_FIELD, Claim
from .constants import SHORT_ID_ALPHABET, SHORT_ID_DATE_FORMAT
from .core.protocol import DEFAULT_BACKOFF, DEFAULT_RETRIES, DEFAULT_TIMEOUT, RetryPolicy
from .core.writes import WriteResult, written
from .document import check_new
from .errors import AllocationFailed, InvalidArgumentError, ServerError
from .server import check_client, check_db
from .times import TimeLike, to_datetime, to_ms

__all__ = [
    "ALLOC_FIELD",
    "NONCE_ATTEMPTS",
    "SHORT_ID",
    "create_short",
    "format_day",
    "random_nonce",
]

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
        rng: the random source (see :type:`NonceSource`); default the operating system's
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
        doc: the document, a JSON object without ``_id``, ``couchids_alloc`` or a top-level
            ``_`` field other than ``_attachments``.
        now: the time whose UTC date starts the id (default the current time).
        rng: the random source for nonces (see :func:`~couchids.short.random_nonce`);
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
    policy = RetryPolicy.checked(retries, backoff, timeout, "create_short")
    client, db = check_client(client), check_db(db)
    check_new(doc, "the document", own_id=False)
    if ALLOC_FIELD in doc:
        raise InvalidArgumentError(
            f"the document has {ALLOC_FIELD!r}: create_short sets the allocation token itself"
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
            claim = Claim(client, db, doc_id, doc, policy)
            try:
                result = claim.run()
            except ServerError as exc:
                # The revision a lost answer may have left carries this try's token.
                maybe = claim.attempts.maybe_carried_out or claim.answered
                written(exc, doc_id, None if maybe else False)
                raise
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
