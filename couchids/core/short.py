"""Short daily ids: ``YYMMDD-<nonce>``, such as ``260107-bc``, allocated without collisions.

The nonce is 2 letters (400 ids a day), then 3 (8000) when 10 random 2-letter tries found no
free id, drawn from letters that spell no words and cannot be misread
(``SHORT_ID_ALPHABET``).

Each try is a ``Claim``: **a writer owns its id exactly when its PUT is
answered ``201 Created``**, and a try given up leaves nothing of its own behind; the guarantee,
and where it weakens, is stated in :mod:`couchids.core.claim`. So a claimed id holds exactly one
live revision, the owner's, on a single node and on a cluster alike.

Pure: the allocation is a program (see :mod:`couchids.core.protocol`);
:meth:`couchids.Database.create_short` and :meth:`couchids.aio.AsyncDatabase.create_short` run it.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from couchids.core.claim import ALLOC_FIELD, Claim
from couchids.core.document import check_new
from couchids.core.protocol import FactsCache, Program, RetryPolicy, check_keys
from couchids.core.writes import written
from couchids.errors import AllocationFailed, InvalidArgumentError, ServerError
from couchids.idforms.constants import SHORT_ID_ALPHABET, SHORT_ID_DATE_FORMAT
from couchids.idforms.times import TimeLike, to_datetime, to_ms
from couchids.results import WriteResult

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
    known: FactsCache,
    db: str,
    doc: Mapping[str, Any],
    *,
    now: TimeLike,
    rng: NonceSource | None,
    retries: int,
    backoff: float,
    timeout: float | None,
) -> Program[WriteResult]:
    """The program of :meth:`couchids.Database.create_short` (see there); arguments checked now."""
    policy = RetryPolicy.checked(retries, backoff, timeout, "create_short")
    check_new(doc, "the document", own_id=False)
    if ALLOC_FIELD in doc:
        raise InvalidArgumentError(
            f"the document has {ALLOC_FIELD!r}: create_short sets the allocation token itself"
        )
    try:
        check_keys(doc)
        json.dumps(doc, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"the document is not JSON: {exc}") from None
    return _allocate(known, db, doc, format_day(now), rng, policy)


def _allocate(
    known: FactsCache,
    db: str,
    doc: Mapping[str, Any],
    day: str,
    rng: NonceSource | None,
    policy: RetryPolicy,
) -> Program[WriteResult]:
    tried: list[str] = []
    unconfirmed = 0
    for length, tries in NONCE_ATTEMPTS:
        for _ in range(tries):
            doc_id = f"{day}-{random_nonce(length, rng)}"
            tried.append(doc_id)
            claim = Claim(known, db, doc_id, doc, policy)
            try:
                result = yield from claim.run()
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
