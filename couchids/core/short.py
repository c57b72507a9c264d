"""Short daily ids: ``YYMMDD-<nonce>``, such as ``260107-bc``, allocated without collisions.

The nonce is 2 letters (400 ids a day), then 3 (8000) when 10 random 2-letter tries found no
free id, from letters that spell no words and cannot be misread (``SHORT_ID_ALPHABET``). Each
try is a ``Claim`` (:mod:`couchids.core.claim`): a writer owns its id exactly when its PUT is
answered ``201 Created`` (see that module for where the guarantee weakens). A short id holds
its UTC day with a two-digit year: ``short_day``, ``short_ranges`` and
``short_id_pages`` read it back for a series' expiry.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import date, timedelta
from typing import Any, Final, Protocol, runtime_checkable

from couchids.core.claim import ALLOC_FIELD, Claim
from couchids.core.document import check_new
from couchids.core.effects import Emit, Program
from couchids.core.facts import FactsCache
from couchids.core.options import Options
from couchids.core.pages import all_docs
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
    "next_short_key",
    "random_nonce",
    "short_day",
    "short_id_pages",
    "short_ranges",
]

#: ``(nonce length, tries)``, in order: 10 tries of 2 letters, then 10 of 3.
NONCE_ATTEMPTS: Final = ((2, 10), (3, 10))
#: Every short id matches this (``SHORT_ID.fullmatch(doc_id)``).
SHORT_ID: Final = re.compile(
    rf"[0-9]{{6}}-[{SHORT_ID_ALPHABET}]{{{NONCE_ATTEMPTS[0][0]},{NONCE_ATTEMPTS[-1][0]}}}"
)

#: A short id's year is read within this many years before a time, or fewer after it.
SHORT_YEARS_BEFORE: Final = 50
#: Above every short id: ``:`` is the byte after ``9``.
_AFTER_DIGITS: Final = ":"
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


# -- reading short ids back --------------------------------------------------------------


def short_day(doc_id: str, near_ms: int) -> int | None:
    """The start (ms since 1970) of the UTC day the short id ``doc_id`` holds, its two-digit
    year read from :data:`SHORT_YEARS_BEFORE` years before the year of ``near_ms`` to 49 after;
    ``None`` when it is no short id (or its digits name no date).

    >>> from couchids.idforms.times import to_datetime, to_ms
    >>> to_datetime(short_day("260107-bc", to_ms("2026-01-01"))).isoformat()
    '2026-01-07T00:00:00+00:00'
    >>> to_datetime(short_day("990101-bc", to_ms("2026-01-01"))).year
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


def short_ranges(near_ms: int, before_ms: int) -> list[tuple[str, str]]:
    """The key ranges ``[low, high)`` holding the short ids (read near ``near_ms``, as
    :func:`short_day` does) whose day starts before ``before_ms``: two when the hundred years
    cross a century. Other ids may be inside them too: pick by :func:`short_day`.

    >>> from couchids.idforms.times import to_ms
    >>> short_ranges(to_ms("2026-03-05"), to_ms("2026-03-03T06:00:00Z"))
    [('76', ':'), ('00', '260304')]
    >>> short_ranges(to_ms("2026-03-05"), to_ms("1970-01-01"))
    []
    """
    first = _first_year(near_ms)
    # A day starts before before_ms exactly when it comes before the first day that starts
    # at or after it.
    moment = to_datetime(before_ms)
    day = moment.date()
    end = day if before_ms == _day_ms(day) else _next(day)
    if end is None or end.year >= first + 100:
        return [("0", _AFTER_DIGITS)]
    if end <= date(first, 1, 1):
        return []
    start_key, end_key = f"{first % 100:02d}", end.strftime(SHORT_ID_DATE_FORMAT)
    # The years from ``first`` read 'yy' up to 99, then from 00 (the next century).
    wraps = first % 100 != 0 and end.year >= (first // 100 + 1) * 100
    if not wraps:
        return [(start_key, end_key)]
    if end_key == "000101":
        return [(start_key, _AFTER_DIGITS)]
    return [(start_key, _AFTER_DIGITS), ("00", end_key)]


def next_short_key(doc_id: str) -> str | None:
    """The smallest key above ``doc_id`` (no short id) where a short id may sort, or ``None``:
    where a reading of short ids jumps past other ids among them.

    >>> next_short_key("001yw3U2AbCdEfGh"), next_short_key("26"), next_short_key("260307-bcdf")
    ('002000-', '260000-', '260307-bcdf\\x00')
    >>> next_short_key("2603079"), next_short_key("99z"), next_short_key("user:1")
    ('260308-', None, None)
    """
    digits = 0
    while digits < min(len(doc_id), 6) and "0" <= doc_id[digits] <= "9":
        digits += 1
    if digits == 6:
        if len(doc_id) == 6 or doc_id[6] < "-":
            return doc_id[:6] + "-"
        if doc_id[6] == "-":
            return doc_id + "\0"  # what sorts right after it
        following = int(doc_id[:6]) + 1
        return None if following > 999_999 else f"{following:06d}-"
    if digits == len(doc_id) or doc_id[digits] < "0":
        return doc_id[:digits] + "0" * (6 - digits) + "-"
    if digits == 0:
        return None
    following = int(doc_id[:digits]) + 1
    if following >= 10**digits:
        return None
    return f"{following:0{digits}d}" + "0" * (6 - digits) + "-"


def short_id_pages(
    db: str, low: str, high: str, policy: RetryPolicy, *, batch_size: int
) -> Program[None]:
    """Emits the ``_all_docs`` rows (ids and revisions) of the short ids ``low <= id < high``
    in ``db``, in key order, a page at a time; a run of other ids is jumped over in one request
    (:func:`next_short_key`), never read."""
    key: str | None = low
    while key is not None and key < high:
        options = {"start_key": key, "end_key": high, "limit": batch_size}
        rows = yield from all_docs(db, options, policy.renewed())
        page: list[dict[str, Any]] = []
        following: str | None = None
        for row in rows:
            doc_id = row["id"]
            if doc_id >= high:  # the end key, which inclusive_end lets in
                following = None
                break
            if SHORT_ID.fullmatch(doc_id) is None:
                following = next_short_key(doc_id)
                break
            page.append(row)
            following = doc_id + "\0"
        else:
            if len(rows) < batch_size:
                following = None
        if page:
            yield Emit(page)
        key = following


def _first_year(near_ms: int) -> int:
    return max(1, to_datetime(near_ms).year - SHORT_YEARS_BEFORE)


def _next(day: date) -> date | None:
    try:
        return day + timedelta(days=1)
    except OverflowError:
        return None


def _day_ms(day: date) -> int:
    return (day - EPOCH.date()).days * _DAY_MS
