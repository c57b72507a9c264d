"""Counting the documents of a time window, and a histogram of counts per time bucket.

What is counted are the ids of the form and type made in the window: the ids
:func:`couchids.window` returns.

On CouchDB (and Cloudant) ``_all_docs?startkey=K`` answers ``offset``, the number of rows
before ``K`` (on a cluster, summed over the shards), so the ids in a key range number
``offset(high) - offset(low)``: two small requests whatever the size of the window.
PouchDB Server's ``offset`` is always 0, so there the ids are scanned (``_all_docs`` pages
without documents) and only ids of the form counted.

**Foreign ids.** An offset counts every id in the key range, not only ids of the form: a
document named ``user:001eVnWK-notes`` sits among ``user:`` kuuid ids of that second, ids of
another form of the type can sort among them (kuuid ids of another length have the same
keys), and an untyped range that runs to the top of the index also holds ``_design/``
documents (a typed range never holds design documents or other types). So each offset
request also asks for the first :data:`~couchids.scan.PROBE_ROWS` ids at its key (the same
request, no extra one), and a range in which one of those is not an id of the form is counted
by a scan of that range instead. A range of at most that many ids is therefore always exact;
in a larger one, foreign ids past its first ones are counted. ``exact=True`` scans every range
(a read of the window's ids). For a loose form (``utc_random``) a type that also holds
CouchDB's ``random`` ids is refused (:func:`couchids.scan.check_one_form`): a scan cannot tell
those apart either.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
import weakref
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Literal

from ibmcloudant.cloudant_v1 import CloudantV1

from .errors import InvalidArgumentError, InvalidTimeError
from .forms import KUUID, IdForm
from .keys import KeyRange, window_keys
from .scan import (
    PROBE_ROWS,
    check_flag,
    check_one_form,
    checked_target,
    range_pages,
    read_policy,
)
from .server import (
    DEFAULT_TIMEOUT,
    RetryPolicy,
    answer_error,
    database_facts,
    describe,
    expect_object,
    expect_rows,
    request,
)
from .times import TimeLike, to_datetime, to_ms

__all__ = [
    "DEFAULT_WORKERS",
    "Bucket",
    "bucket_edges",
    "count",
    "counted",
    "counts_by_offset",
    "histogram",
    "parse_every",
    "server_kind",
]

ServerKind = Literal["couchdb", "cloudant", "pouchdb", "other"]

#: Offset requests :func:`histogram` has in flight at once.
DEFAULT_WORKERS: Final = 8

_EVERY = re.compile(r"(\d+)\s*(ms|s|m|h|d|w)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


@dataclass(frozen=True)
class Bucket:
    """The documents made in ``start <= t < end``: ``count`` of them."""

    start: datetime
    end: datetime
    count: int


def parse_every(every: str | timedelta) -> int:
    """The bucket width in milliseconds: ``"1h"``, ``"15m"``, ``"1d"``, ``"1w"`` or a timedelta.

    Raises:
        InvalidArgumentError: anything else, or a width under one millisecond.

    >>> parse_every("1h"), parse_every(timedelta(days=1))
    (3600000, 86400000)
    """
    if isinstance(every, timedelta):
        ms = every // timedelta(milliseconds=1)
    elif isinstance(every, str) and (found := _EVERY.fullmatch(every.strip().lower())):
        ms = int(found[1]) * _UNIT_MS[found[2]]
    else:
        raise InvalidArgumentError(
            f"every={every!r}: give a timedelta or a whole number with a unit, such as "
            "'30s', '15m', '1h', '1d' or '1w'"
        )
    if ms < 1:
        raise InvalidArgumentError(f"every={every!r}: a bucket is at least one millisecond")
    return ms


def bucket_edges(start_ms: int, end_ms: int, every_ms: int) -> list[int]:
    """The edges of buckets of ``every_ms`` covering ``[start_ms, end_ms)``, aligned to UTC.

    Inner edges are multiples of ``every_ms`` since 1970-01-01T00:00Z (whole hours, UTC
    midnights); the first and last edges are ``start_ms`` and ``end_ms`` themselves.

    >>> bucket_edges(90, 310, 100)
    [90, 100, 200, 300, 310]
    >>> bucket_edges(100, 100, 100)
    [100]
    """
    first = (start_ms // every_ms + 1) * every_ms
    return [start_ms, *range(first, end_ms, every_ms), end_ms] if end_ms > start_ms else [start_ms]


_kinds: weakref.WeakKeyDictionary[CloudantV1, ServerKind] = weakref.WeakKeyDictionary()
_kinds_lock = threading.Lock()


def server_kind(
    client: CloudantV1, policy: RetryPolicy | None = None, db: str = "the server"
) -> ServerKind:
    """Which server the client talks to, from its welcome (``GET /``), asked once per client
    (for an operation of ``policy`` on ``db``, which a failure's message names).

    ``"pouchdb"`` (PouchDB Server says ``"express-pouchdb"``), ``"cloudant"`` (a
    ``"couchdb"`` welcome whose vendor is IBM Cloudant), ``"couchdb"`` (any other
    ``"couchdb"`` welcome) or ``"other"``.
    """
    with _kinds_lock:
        known = _kinds.get(client)
    if known is not None:
        return known
    policy = policy or read_policy(DEFAULT_TIMEOUT, "request")
    welcome = request(db, client.get_server_information, policy.renewed()).body
    kind: ServerKind = "other"
    if isinstance(welcome, dict):
        vendor_info = welcome.get("vendor")
        vendor = str(vendor_info.get("name", "") if isinstance(vendor_info, dict) else "").lower()
        if "express-pouchdb" in welcome:
            kind = "pouchdb"
        elif "couchdb" in welcome:
            kind = "cloudant" if "cloudant" in vendor else "couchdb"
    with _kinds_lock:
        _kinds[client] = kind
    return kind


def counts_by_offset(
    client: CloudantV1, policy: RetryPolicy | None = None, db: str = "the server"
) -> bool:
    """Whether the server's ``_all_docs`` ``offset`` counts the rows before the start key.

    True for Apache CouchDB and Cloudant, False for PouchDB Server (whose offset is always
    0) and servers that do not say what they are.
    """
    return server_kind(client, policy, db) in ("couchdb", "cloudant")


def count(
    client: CloudantV1,
    db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    exact: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> int:
    """The number of documents whose id holds a time ``t`` with ``start <= t < end``.

    On CouchDB and Cloudant this is two small requests whatever the window holds (plus,
    once per client, ``GET /`` and ``GET /{db}``), or a scan of the window's ids when the first
    ids of the window are not all of the form; on PouchDB Server a scan. See the module notes
    on foreign ids.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        start, end: any time couchids accepts; ``end`` is exclusive.
        type: only ids ``type:<id>``; ``None`` for untyped ids.
        form: the id layout of the database.
        exact: scan the ids (only ids of ``form`` are counted), also where offsets would do:
            for a type that may hold foreign ids deeper in the window than its first ones.
        timeout: seconds each request may take, retries included (default 60); ``None``
            leaves each request to the client's own timeouts.

    Raises:
        InvalidTimeError: unreadable times, or ``end`` before ``start``.
        InvalidTypeError: a bad ``type``.
        InvalidArgumentError: not a ``CloudantV1`` client, a bad database name, ``form``,
            ``exact`` or ``timeout``; a loose ``form`` (``utc_random``) whose type also holds
            ids it cannot tell from its own.
        ServerError: (and subclasses) the server failed or answered something that is not
            CouchDB's (``ServerTimeoutError`` when ``timeout`` ran out); a missing database is
            ``DatabaseNotFoundError``, never 0.

    Example::

        couchids.count(client, "orders", "2024-05-01", "2024-06-01", type="order")
    """
    policy = read_policy(timeout, "count")
    return counted(policy, client, db, start, end, type=type, form=form, exact=exact)


def counted(
    policy: RetryPolicy,
    client: CloudantV1,
    db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | None,
    form: IdForm,
    exact: bool,
) -> int:
    """:func:`count` for the operation of ``policy`` (whose messages name it)."""
    client, db = checked_target(client, db)
    start_ms, end_ms = _window(start, end)
    _check_form(form)
    check_flag("exact", exact)
    keys = window_keys(form, type, start_ms, end_ms)
    database_facts(client, db, policy)  # a missing database raises, even for an empty window
    check_one_form(client, db, form, type, policy)
    if keys is None:
        return 0
    if not exact and counts_by_offset(client, policy, db):
        marks = _marks(client, db, [keys.low, keys.high], 1, policy)
        if not _foreign([keys], marks, form):
            return _difference(db, marks, keys, policy)
    return sum(_scan_counts(client, db, [keys], form, type, policy))


def histogram(
    client: CloudantV1,
    db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    every: str | timedelta = "1h",
    type: str | None = None,
    form: IdForm = KUUID,
    exact: bool = False,
    workers: int = DEFAULT_WORKERS,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> list[Bucket]:
    """Counts per bucket of ``every``, aligned to UTC, covering ``[start, end)``.

    Inner bucket edges fall on multiples of ``every`` since 1970-01-01T00:00Z (whole hours,
    UTC midnights); the first bucket starts at ``start`` and the last ends at ``end``. On
    CouchDB and Cloudant it costs one small request per bucket edge, ``workers`` at a time,
    and a scan of each bucket whose first ids are not all of the form; on PouchDB Server (or
    with ``exact``) one scan of the window's ids.

    Args:
        client, db, start, end, type, form, exact, timeout: as for :func:`count`.
        every: the bucket width: ``"1h"``, ``"1d"``, ``"15m"``, ``"1w"`` or a timedelta.
        workers: offset requests in flight at once.

    Raises:
        InvalidArgumentError: a bad ``every`` or ``workers``; and what :func:`count` raises.

    Example::

        for bucket in couchids.histogram(client, "orders", "2024-05-01", "2024-05-08",
                                         every="1d", type="order"):
            print(bucket.start.date(), bucket.count)
    """
    policy = read_policy(timeout, "histogram")
    client, db = checked_target(client, db)
    start_ms, end_ms = _window(start, end)
    _check_form(form)
    check_flag("exact", exact)
    every_ms = parse_every(every)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidArgumentError(f"workers={workers!r}: must be an int >= 1")
    edges = bucket_edges(start_ms, end_ms, every_ms)
    spans = list(itertools.pairwise(edges))
    ranges = [window_keys(form, type, a, b) for a, b in spans]
    database_facts(client, db, policy)
    check_one_form(client, db, form, type, policy)
    present = [keys for keys in ranges if keys is not None]
    if not present:
        counts = [0] * len(spans)
    elif not exact and counts_by_offset(client, policy, db):
        wanted = sorted({key for keys in present for key in (keys.low, keys.high)})
        marks = _marks(client, db, wanted, workers, policy)
        foreign = _foreign(present, marks, form)
        counts = []
        for keys in ranges:
            if keys is None:
                counts.append(0)
            elif keys in foreign:
                counts.append(sum(_scan_counts(client, db, [keys], form, type, policy)))
            else:
                counts.append(_difference(db, marks, keys, policy))
    else:
        found = iter(_scan_counts(client, db, present, form, type, policy))
        counts = [0 if keys is None else next(found) for keys in ranges]
    return [
        Bucket(to_datetime(a), to_datetime(b), n) for (a, b), n in zip(spans, counts, strict=True)
    ]


def _window(start: TimeLike, end: TimeLike) -> tuple[int, int]:
    start_ms, end_ms = to_ms(start), to_ms(end)
    if end_ms < start_ms:
        raise InvalidTimeError(
            f"the window ends ({end!r}) before it starts ({start!r}); pass start <= end"
        )
    return start_ms, end_ms


def _check_form(form: object) -> None:
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(
            f"form={form!r}: pass an IdForm such as couchids.KUUID or couchids.V7S"
        )


@dataclass(frozen=True)
class _Mark:
    """What ``_all_docs`` answers at a key: the number of ids below it, and the first ids at
    or after it."""

    offset: int
    ids: list[str]


def _marks(
    client: CloudantV1, db: str, keys: list[str], workers: int, policy: RetryPolicy
) -> dict[str, _Mark]:
    """The offset of each key and its first :data:`PROBE_ROWS` ids, one request a key."""

    def mark(key: str) -> _Mark:
        each = policy.renewed()
        answer = request(
            db, lambda: client.post_all_docs(db=db, start_key=key, limit=PROBE_ROWS), each
        ).body
        value = expect_object(answer, each, db).get("offset")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise answer_error(
                each,
                db,
                f"_all_docs answered no row offset ({describe(value)}); count with exact=True",
            )
        return _Mark(value, [row["id"] for row in expect_rows(answer, each, db)])

    if workers == 1 or len(keys) == 1:
        return {key: mark(key) for key in keys}
    with ThreadPoolExecutor(max_workers=min(workers, len(keys))) as pool:
        return dict(zip(keys, pool.map(mark, keys), strict=True))


def _foreign(ranges: list[KeyRange], marks: dict[str, _Mark], form: IdForm) -> list[KeyRange]:
    """The ranges in which an id seen at a key is not an id of ``form``."""
    ordered = sorted(ranges, key=lambda keys: keys.low)
    lows = [keys.low for keys in ordered]
    wanted = form.matcher(ordered[0].prefix)
    found = []
    for doc_id in sorted({i for mark in marks.values() for i in mark.ids}):
        slot = bisect.bisect_right(lows, doc_id) - 1
        if slot < 0 or doc_id >= ordered[slot].high or wanted(doc_id):
            continue
        if ordered[slot] not in found:
            found.append(ordered[slot])
    return found


def _difference(db: str, marks: dict[str, _Mark], keys: KeyRange, policy: RetryPolicy) -> int:
    low, high = marks[keys.low].offset, marks[keys.high].offset
    if high < low:
        # Documents added between the two requests cannot make this negative; a server whose
        # offset is not a row count can.
        raise answer_error(
            policy,
            db,
            f"_all_docs answered offsets that do not count rows ({low} then {high}); "
            "count with exact=True",
        )
    return high - low


def _scan_counts(
    client: CloudantV1,
    db: str,
    ranges: list[KeyRange],
    form: IdForm,
    doc_type: str | None,
    policy: RetryPolicy,
) -> list[int]:
    """Counts of the ids of ``form`` in each of ``ranges`` (adjacent key ranges), from one
    scan."""
    ordered = sorted(range(len(ranges)), key=lambda i: ranges[i].low)
    lows = [ranges[i].low for i in ordered]
    whole = KeyRange(
        low=min(keys.low for keys in ranges),
        high=max(keys.high for keys in ranges),
        prefix=ranges[0].prefix,
    )
    wanted = form.matcher(whole.prefix)
    counts = [0] * len(ranges)
    for page in range_pages(client, db, whole, form, policy, doc_type=doc_type):
        for doc_id in _ids(page):
            if not wanted(doc_id):
                continue
            slot = bisect.bisect_right(lows, doc_id) - 1
            if slot >= 0 and doc_id < ranges[ordered[slot]].high:
                counts[ordered[slot]] += 1
    return counts


def _ids(page: Iterable[dict[str, Any]]) -> Iterable[str]:
    return (row["id"] for row in page)
