"""Counting the documents of a time window, and a histogram of counts per time bucket.

What is counted are the ids of the form and type made in the window: the ids
:meth:`couchids.Database.window` returns.

On CouchDB (and Cloudant) ``_all_docs?startkey=K`` answers ``offset``, the number of rows
before ``K`` (on a cluster, summed over the shards), so the ids in a key range number
``offset(high) - offset(low)``: two small requests whatever the size of the window.
PouchDB Server's ``offset`` is always 0, so there the ids are scanned (``_all_docs`` pages
without documents, read as time slices in parallel as :meth:`couchids.Database.window` reads them)
and only ids of the form counted.

**Foreign ids.** An offset counts every id in the key range, not only ids of the form: a
document named ``user:001eVnWK-notes`` sits among ``user:`` kuuid ids of that second, ids of
another form of the type can sort among them (kuuid ids of another length have the same
keys), and an untyped range that runs to the top of the index also holds ``_design/``
documents (a typed range never holds design documents or other types). So each offset
request also asks for the first :data:`~couchids.core.scan.PROBE_ROWS` ids at its key (the same
request, no extra one), and a range in which one of those is not an id of the form is counted
by a scan of that range instead. A range of at most that many ids is therefore always exact;
in a larger one, foreign ids past its first ones are counted. An untyped range that reaches
past every key of its form (a window ending after the form's last time: tid62 after 2156,
millisecond kuuid after 8888) or across ``_design/`` holds every typed and design document in
between, and is always scanned (:func:`couchids.core.keys.reaches_other_ids`). ``exact=True`` scans
every range (a read of the window's ids). For a loose form (``utc_random``) a type that also holds
CouchDB's ``random`` ids is refused (:func:`couchids.core.scan.check_one_form`): a scan cannot tell
those apart either.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Literal

from couchids.core.alltypes import types_present
from couchids.core.answers import KeySpan, answer_error, describe, expect_object, expect_rows
from couchids.core.arguments import count as check_count
from couchids.core.arguments import flag as check_flag
from couchids.core.arguments import window as check_window
from couchids.core.asking import ask
from couchids.core.effects import END, Program, Puller, Request, Start, Wait, path, post_json
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import KeyRange, reaches_other_ids, window_keys
from couchids.core.policy import RetryPolicy
from couchids.core.scan import PROBE_ROWS, check_one_form
from couchids.core.windows import scan_pages
from couchids.errors import InvalidArgumentError
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import IdForm
from couchids.idforms.times import TimeLike, to_datetime

__all__ = [
    "BUCKET_ORIGIN_MS",
    "DEFAULT_WORKERS",
    "MAX_BUCKETS",
    "Bucket",
    "bucket_edges",
    "counted",
    "counts_by_offset",
    "histogram",
    "parse_every",
    "server_kind",
]

ServerKind = Literal["couchdb", "cloudant", "pouchdb", "other"]

#: Offset requests :func:`histogram` has in flight at once.
DEFAULT_WORKERS: Final = 8
#: The most buckets a :func:`histogram` holds: refused before any request beyond that.
MAX_BUCKETS: Final = 100_000
#: Bucket edges are whole multiples of the bucket's width from this time, Monday
#: 1970-01-05T00:00Z (in ms since 1970): weeks start on Monday, as ISO weeks and the weekly
#: periods of a series do (1970-01-01 was a Thursday), and whole hours and UTC midnights
#: are such multiples too.
BUCKET_ORIGIN_MS: Final = 4 * 86_400_000

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

    Inner edges are whole multiples of ``every_ms`` from :data:`BUCKET_ORIGIN_MS`, Monday
    1970-01-05T00:00Z (whole hours, UTC midnights, Mondays for weeks); the first and last
    edges are ``start_ms`` and ``end_ms`` themselves: a window that does not start on an edge
    has a partial first bucket, labelled by its start.

    >>> bucket_edges(90, 310, 100)
    [90, 100, 200, 300, 310]
    >>> bucket_edges(100, 100, 100)
    [100]
    >>> from couchids.idforms.times import to_datetime, to_ms
    >>> week = parse_every("1w")
    >>> [to_datetime(ms).strftime("%a %d") for ms in bucket_edges(to_ms("2024-05-01"),
    ...  to_ms("2024-05-20"), week)]
    ['Wed 01', 'Mon 06', 'Mon 13', 'Mon 20']
    """
    first = start_ms - (start_ms - BUCKET_ORIGIN_MS) % every_ms + every_ms
    return [start_ms, *range(first, end_ms, every_ms), end_ms] if end_ms > start_ms else [start_ms]


def server_kind(known: FactsCache, policy: RetryPolicy, db: str) -> Program[ServerKind]:
    """Which server this is, from its welcome (``GET /``), asked once per client (for an
    operation of ``policy`` on ``db``, which a failure's message names).

    ``"pouchdb"`` (PouchDB Server says ``"express-pouchdb"``), ``"cloudant"`` (a
    ``"couchdb"`` welcome whose vendor is IBM Cloudant), ``"couchdb"`` (any other
    ``"couchdb"`` welcome) or ``"other"``.
    """
    if known.server_kind is not None:
        return known.server_kind  # type: ignore[return-value]
    welcome = (yield from ask(Request("GET", "/"), policy, db)).body
    kind: ServerKind = "other"
    if isinstance(welcome, dict):
        vendor_info = welcome.get("vendor")
        vendor = str(vendor_info.get("name", "") if isinstance(vendor_info, dict) else "").lower()
        version = welcome.get("version")
        known.server_version = version if isinstance(version, str) else None
        if "express-pouchdb" in welcome:
            kind = "pouchdb"
        elif "couchdb" in welcome:
            kind = "cloudant" if "cloudant" in vendor else "couchdb"
    known.server_kind = kind
    return kind


def counts_by_offset(known: FactsCache, policy: RetryPolicy, db: str) -> Program[bool]:
    """Whether the server's ``_all_docs`` ``offset`` counts the rows before the start key.

    True for Apache CouchDB and Cloudant, False for PouchDB Server (whose offset is always
    0) and servers that do not say what they are.
    """
    return (yield from server_kind(known, policy, db)) in ("couchdb", "cloudant")


def counted(
    known: FactsCache,
    policy: RetryPolicy,
    db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | AllTypes | None,
    form: IdForm,
    exact: bool,
) -> Program[int]:
    """The program of :meth:`couchids.Database.count`, for the operation of ``policy`` (whose
    messages name it); arguments checked now. ``type=ALL_TYPES`` counts the ids of every
    type present (not the untyped ones), as ``latest`` and ``window`` read them."""
    start_ms, end_ms = check_window(start, end)
    _check_form(form)
    check_flag("exact", exact)
    if type is ALL_TYPES:
        return _count_all_types(known, policy, db, (start_ms, end_ms), form, exact)
    if type is not None:
        form.type_prefix(type)  # InvalidTypeError, before anything is sent
    return _count(known, policy, db, (start_ms, end_ms), form, type, exact)


def _count_all_types(
    known: FactsCache,
    policy: RetryPolicy,
    db: str,
    span: tuple[int, int],
    form: IdForm,
    exact: bool,
) -> Program[int]:
    """The sum of each type's count: the types present now (one request per type,
    :func:`~couchids.core.alltypes.types_present`), then two requests per type on CouchDB."""
    # A missing database raises, not an empty list of types.
    yield from database_facts(known, db, policy)
    total = 0
    for doc_type in (yield from types_present(db, form.separator, policy)):
        total += yield from _count(known, policy, db, span, form, doc_type, exact)
    return total


def _count(
    known: FactsCache,
    policy: RetryPolicy,
    db: str,
    span: tuple[int, int],
    form: IdForm,
    doc_type: str | None,
    exact: bool,
) -> Program[int]:
    keys = window_keys(form, doc_type, *span)
    # A missing database raises, even for an empty window.
    yield from database_facts(known, db, policy)
    yield from check_one_form(known, db, form, doc_type, policy)
    if keys is None:
        return 0
    if (
        not exact
        and not reaches_other_ids(keys)
        and (yield from counts_by_offset(known, policy, db))
    ):
        marks = yield from _marks(db, [keys.low, keys.high], 1, policy)
        if not _foreign([keys], marks, form):
            return _difference(db, marks, keys, policy)
    return sum((yield from _scan_counts(known, db, [span], [keys], form, doc_type, policy)))


def histogram(
    known: FactsCache,
    policy: RetryPolicy,
    db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    every: str | timedelta,
    type: str | None,
    form: IdForm,
    exact: bool,
    parallel: int,
) -> Program[list[Bucket]]:
    """The program of :meth:`couchids.Database.histogram`; arguments checked now."""
    start_ms, end_ms = check_window(start, end)
    _check_form(form)
    check_flag("exact", exact)
    every_ms = parse_every(every)
    parallel = check_count("parallel", parallel)
    buckets = -(-(end_ms - start_ms) // every_ms) + 1
    if buckets > MAX_BUCKETS:
        raise InvalidArgumentError(
            f"every={every!r}: the window would hold about {buckets:,} buckets, more than "
            f"{MAX_BUCKETS:,}; give a wider every or a shorter window"
        )
    edges = bucket_edges(start_ms, end_ms, every_ms)
    spans = list(itertools.pairwise(edges))
    ranges = [window_keys(form, type, a, b) for a, b in spans]
    return _histogram(known, policy, db, spans, ranges, form, type, exact, parallel)


def _histogram(
    known: FactsCache,
    policy: RetryPolicy,
    db: str,
    spans: list[tuple[int, int]],
    ranges: list[KeyRange | None],
    form: IdForm,
    doc_type: str | None,
    exact: bool,
    parallel: int,
) -> Program[list[Bucket]]:
    yield from database_facts(known, db, policy)
    yield from check_one_form(known, db, form, doc_type, policy)
    present = [keys for keys in ranges if keys is not None]
    present_spans = [span for span, keys in zip(spans, ranges, strict=True) if keys is not None]
    counts: list[int] = []
    if not present:
        counts = [0] * len(spans)
    elif not exact and (yield from counts_by_offset(known, policy, db)):
        wanted = sorted({key for keys in present for key in (keys.low, keys.high)})
        marks = yield from _marks(db, wanted, parallel, policy)
        foreign = _foreign(present, marks, form)
        foreign += [keys for keys in present if reaches_other_ids(keys)]
        for span, keys in zip(spans, ranges, strict=True):
            if keys is None:
                counts.append(0)
            elif keys in foreign:
                found = yield from _scan_counts(known, db, [span], [keys], form, doc_type, policy)
                counts.append(sum(found))
            else:
                counts.append(_difference(db, marks, keys, policy))
    else:
        found = yield from _scan_counts(known, db, present_spans, present, form, doc_type, policy)
        each = iter(found)
        counts = [0 if keys is None else next(each) for keys in ranges]
    return [
        Bucket(to_datetime(a), to_datetime(b), n) for (a, b), n in zip(spans, counts, strict=True)
    ]


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
    db: str, keys: list[str], parallel: int, policy: RetryPolicy
) -> Program[dict[str, _Mark]]:
    """The offset of each key and its first :data:`PROBE_ROWS` ids, one request a key,
    ``parallel`` requests at a time."""

    def mark(key: str) -> Program[_Mark]:
        each = policy.renewed()
        asked = post_json(path(db, "_all_docs"), {"start_key": key, "limit": PROBE_ROWS})
        reply = yield from ask(asked, each, db)
        value = expect_object(reply.body, each, db, sent=reply.sent).get("offset")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise answer_error(
                each,
                db,
                f"_all_docs answered no row offset ({describe(value)}); count with exact=True",
                reply.sent,
            )
        rows = expect_rows(reply.body, each, db, sent=reply.sent, span=KeySpan(key, None))
        return _Mark(value, [row["id"] for row in rows])

    if parallel == 1 or len(keys) == 1:
        found = {}
        for key in keys:
            found[key] = yield from mark(key)
        return found
    started = []
    for key in keys[:parallel]:
        started.append((yield Start(mark(key))))
    marks: dict[str, _Mark] = {}
    for index, key in enumerate(keys):
        marks[key] = yield Wait(started[index])
        if index + parallel < len(keys):
            started.append((yield Start(mark(keys[index + parallel]))))
    return marks


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
    known: FactsCache,
    db: str,
    spans: list[tuple[int, int]],
    ranges: list[KeyRange],
    form: IdForm,
    doc_type: str | None,
    policy: RetryPolicy,
) -> Program[list[int]]:
    """Counts of the ids of ``form`` in each of ``ranges`` (the key ranges of the adjacent
    time ``spans``), from one scan of the ids in time slices read in parallel."""
    ordered = sorted(range(len(ranges)), key=lambda i: ranges[i].low)
    lows = [ranges[i].low for i in ordered]
    start_ms, end_ms = min(a for a, _ in spans), max(b for _, b in spans)
    counts = [0] * len(ranges)
    pages = Puller(
        scan_pages(known, db, form, doc_type, start_ms, end_ms, policy, include_docs=False)
    )
    while (page := (yield from pages.next())) is not END:
        for doc_id in _ids(page):
            slot = bisect.bisect_right(lows, doc_id) - 1
            if slot >= 0 and doc_id < ranges[ordered[slot]].high:
                counts[ordered[slot]] += 1
    return counts


def _ids(page: Iterable[dict[str, Any]]) -> Iterable[str]:
    return (row["id"] for row in page)
