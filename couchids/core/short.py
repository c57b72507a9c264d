"""Short daily ids: ``YYMMDD-<nonce>``, such as ``260107-bc``, allocated without collisions.

The nonce is 2 letters (400 ids a day), then 3 (8000) when 10 random 2-letter tries found no
free id, from letters that spell no words and cannot be misread (``SHORT_ID_ALPHABET``). Each
try is a ``Claim`` (:mod:`couchids.core.claim`): a writer owns its id exactly when its PUT is
answered ``201 Created`` (see that module for where the guarantee weakens). A short id holds
its UTC day with a two-digit year, which ``short_day`` reads back.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import Any, Final, Protocol, runtime_checkable

from couchids.core import arguments
from couchids.core.claim import ALLOC_FIELD, Claim
from couchids.core.document import check_new
from couchids.core.effects import Program
from couchids.core.facts import FactsCache
from couchids.core.options import Options
from couchids.core.policy import RetryPolicy
from couchids.core.writes import encode, written
from couchids.errors import AllocationFailed, InvalidArgumentError, ServerError, WriteResult
from couchids.idforms.constants import SHORT_ID_ALPHABET, SHORT_ID_DATE_FORMAT
from couchids.idforms.times import EPOCH, TimeLike, to_datetime, to_ms

__all__ = [
    "ALLOC_FIELD",
    "NONCE_ATTEMPTS",
    "SHORT_ID",
    "create_short",
    "format_day",
    "random_nonce",
    "short_day",
]

#: ``(nonce length, tries)``, in order: 10 tries of 2 letters, then 10 of 3.
NONCE_ATTEMPTS: Final = ((2, 10), (3, 10))
#: Every short id matches this (``SHORT_ID.fullmatch(doc_id)``).
SHORT_ID: Final = re.compile(
    rf"[0-9]{{6}}-[{SHORT_ID_ALPHABET}]{{{NONCE_ATTEMPTS[0][0]},{NONCE_ATTEMPTS[-1][0]}}}"
)

#: A short id's year is read within this many years before a time, or fewer after it.
SHORT_YEARS_BEFORE: Final = 50
_DAY_MS: Final = 86_400_000

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
    arguments.count("length", length)
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
    options: Options,
) -> Program[WriteResult]:
    """The program of :meth:`couchids.Database.create_short`; arguments checked now."""
    policy = options.policy("create_short")
    check_new(doc, "doc", own_id=False)
    if ALLOC_FIELD in doc:
        raise InvalidArgumentError(
            f"the document has {ALLOC_FIELD!r}: create_short sets the allocation token itself"
        )
    encode(doc, "the document")
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
                written(
                    exc,
                    doc_id,
                    None if maybe else False,
                    again="read it to find out (create_short again would pick another id)",
                )
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


# -- reading short ids back --------------------------------------------------------------


def short_day(doc_id: str, near_ms: int) -> int | None:
    """The start (ms since 1970) of the UTC day the short id ``doc_id`` holds, its two-digit
    year read from :data:`SHORT_YEARS_BEFORE` years before the year of ``near_ms`` to 49 after;
    ``None`` when it is no short id (or its digits name no date).

    >>> from couchids.idforms.times import to_datetime, to_ms
    >>> to_datetime(short_day("260107-bc", to_ms("2026-01-01T00:00Z"))).isoformat()
    '2026-01-07T00:00:00+00:00'
    >>> to_datetime(short_day("990101-bc", to_ms("2026-01-01T00:00Z"))).year
    1999
    >>> short_day("261307-bc", 0), short_day("260107-b", 0), short_day("user:260107-bc", 0)
    (None, None, None)
    """
    if not isinstance(doc_id, str) or SHORT_ID.fullmatch(doc_id) is None:
        return None
    first = _first_year(near_ms)
    year = first + (int(doc_id[:2]) - first) % 100
    try:
        day = date(year, int(doc_id[2:4]), int(doc_id[4:6]))
    except ValueError:  # no such date, or past 9999
        return None
    return _day_ms(day)


def _first_year(near_ms: int) -> int:
    return max(1, to_datetime(near_ms).year - SHORT_YEARS_BEFORE)


def _day_ms(day: date) -> int:
    return (day - EPOCH.date()).days * _DAY_MS
