"""Counting the ids of a time window, and a histogram of counts per time bucket.

What is counted are the ids :meth:`couchids.Database.window` returns. Where the server's
``offset`` counts rows (CouchDB, Cloudant), a key range is two small requests, each also reading
the first :data:`~couchids.core.scan.PROBE_ROWS` ids at its key: a range where one of those is
no id of the form (or that may hold other ids: :func:`~couchids.core.keys.reaches_other_ids`)
is scanned instead, as every range is with ``exact=True`` or on PouchDB Server. The rules a
user relies on are in docs/guide/lifecycle.md.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal

from couchids.core.alltypes import each_type, types_present
from couchids.core.answers import KeySpan, answer_error, describe, expect_object, expect_rows
from couchids.core.arguments import count as check_count
from couchids.core.arguments import flag as check_flag
from couchids.core.arguments import window as check_window
from couchids.core.asking import ask
from couchids.core.defaults import DEFAULT_WORKERS
from couchids.core.effects import END, Program, Puller, Request, path, post_json
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import KeyRange, check_time_form, reaches_other_ids, window_keys
from couchids.core.options import Options
from couchids.core.policy import RetryPolicy
from couchids.core.scan import PROBE_ROWS, check_one_form
from couchids.core.windows import scan_pages
from couchids.errors import InvalidArgumentError
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import IdForm
from couchids.idforms.times import DurationLike, TimeLike, duration_ms, to_datetime

__all__ = [
    "BUCKET_ORIGIN_MS",
    "DEFAULT_WORKERS",
    "MAX_BUCKETS",
    "Bucket",
    "bucket_edges",
    "count",
    "counts_by_offset",
    "histogram",
    "parse_every",
    "server_kind",
]

ServerKind = Literal["couchdb", "cloudant", "pouchdb", "other"]

#: The most buckets a :func:`histogram` holds: refused before any request beyond that.
MAX_BUCKETS: Final = 100_000
#: Bucket edges are whole multiples of the bucket's width from this time, Monday
#: 1970-01-05T00:00Z (in ms since 1970): weeks start on Monday, as ISO weeks and the weekly
#: periods of a series do (1970-01-01 was a Thursday), and whole hours and UTC midnights
#: are such multiples too.
BUCKET_ORIGIN_MS: Final = 4 * 86_400_000


@dataclass(frozen=True)
class Bucket:
    """The documents made in ``start <= t < end``: ``count`` of them."""

    start: datetime
    end: datetime
    count: int


def parse_every(every: DurationLike) -> int:
    """The bucket width in milliseconds: a duration (:func:`~couchids.idforms.times.duration_ms`),
    such as ``"1h"``, ``"15m"``, ``"1d"``, ``"1w"`` or a timedelta.

    Raises:
        InvalidArgumentError: anything else, or a width under one millisecond.

    >>> parse_every("1h"), parse_every(timedelta(days=1))
    (3600000, 86400000)
    """
    ms = duration_ms(every, "every")
    if ms < 1:
        raise InvalidArgumentError(f"every={every!r}: a bucket is at least one millisecond")
    return ms


def bucket_edges(start_ms: int, end_ms: int, every_ms: int) -> list[int]:
    """The edges of buckets of ``every_ms`` covering ``[start_ms, end_ms)``: inner edges are
    whole multiples of ``every_ms`` from :data:`BUCKET_ORIGIN_MS`, the first and last are
    ``start_ms`` and ``end_ms`` (a partial first bucket is labelled by its start).

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
    """Which server this is, from its welcome (``GET /``), asked once per client: ``"pouchdb"``
    (``"express-pouchdb"``), ``"cloudant"`` (a ``"couchdb"`` welcome from IBM Cloudant),
    ``"couchdb"`` or ``"other"``."""
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
    """Whether the server's ``_all_docs`` ``offset`` counts the rows before the start key:
    CouchDB's and Cloudant's do, PouchDB Server's (always 0) and unknown servers' do not."""
    return (yield from server_kind(known, policy, db)) in ("couchdb", "cloudant")


def count(
    known: FactsCache,
    db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | AllTypes | None,
    form: IdForm,
    exact: bool,
    options: Options,
    operation: str = "count",
) -> Program[int]:
    """The program of :meth:`couchids.Database.count`: the count of ids of ``form`` and
    ``type`` in ``[start, end)`` within ``options``, ``operation`` naming the call in messages;
    arguments checked now. ``type=ALL_TYPES`` counts the ids of every type present."""
    policy = options.policy(operation)
    span = check_window(start, end)
    check_time_form(form)
    check_flag("exact", exact)
    if type is not ALL_TYPES:
        form.type_prefix(type)  # InvalidTypeError, before anything is sent

    def total() -> Program[int]:
        if type is ALL_TYPES:
            # A missing database raises, not an empty list of types.
            yield from database_facts(known, db, policy)
            types: list[str | None] = list((yield from types_present(db, form.separator, policy)))
        else:
            types = [type]
        found = 0
        for each in types:
            found += sum((yield from _counts(known, policy, db, [span], form, each, exact, 1)))
        return found

    return total()


def histogram(
    known: FactsCache,
    db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    every: str | timedelta,
    type: str | None,
    form: IdForm,
    exact: bool,
    options: Options,
) -> Program[list[Bucket]]:
    """The program of :meth:`couchids.Database.histogram`: the counts per bucket of ``every``
    in ``[start, end)`` within ``options``, ``parallel`` requests at a time; arguments checked
    now."""
    policy, parallel = options.policy("histogram"), options.slices("histogram")
    start_ms, end_ms = check_window(start, end)
    check_time_form(form)
    check_flag("exact", exact)
    every_ms = parse_every(every)
    parallel = check_count("parallel", parallel)
    buckets = -(-(end_ms - start_ms) // every_ms) + 1
    if buckets > MAX_BUCKETS:
        raise InvalidArgumentError(
            f"every={every!r}: the window would hold about {buckets:,} buckets, more than "
            f"{MAX_BUCKETS:,}; give a wider every or a shorter window"
        )
    form.type_prefix(type)
    spans = list(itertools.pairwise(bucket_edges(start_ms, end_ms, every_ms)))

    def buckets_of() -> Program[list[Bucket]]:
        counts = yield from _counts(known, policy, db, spans, form, type, exact, parallel)
        return [
            Bucket(to_datetime(a), to_datetime(b), n)
            for (a, b), n in zip(spans, counts, strict=True)
        ]

    return buckets_of()


def _counts(
    known: FactsCache,
    policy: RetryPolicy,
    db: str,
    spans: list[tuple[int, int]],
    form: IdForm,
    doc_type: str | None,
    exact: bool,
    parallel: int,
) -> Program[list[int]]:
    """The number of ids of ``form`` and ``doc_type`` in each of the adjacent time ``spans``:
    by offsets, ``parallel`` requests at a time, where they can be trusted; else by a scan."""
    ranges = [window_keys(form, doc_type, a, b) for a, b in spans]
    # A missing database raises, even for an empty window.
    yield from database_facts(known, db, policy)
    yield from check_one_form(known, db, form, doc_type, policy)
    present = [keys for keys in ranges if keys is not None]
    if not present:
        return [0] * len(spans)
    counts: dict[KeyRange, int] = {}
    trusted = [] if exact else [keys for keys in present if not reaches_other_ids(keys)]
    if trusted and (yield from counts_by_offset(known, policy, db)):
        edges = sorted({key for keys in trusted for key in (keys.low, keys.high)})
        offsets, seen = yield from _marks(db, edges, parallel, policy)
        # A range in which an id seen at a key is not an id of the form is scanned instead.
        locate, wanted = _locate(trusted), form.matcher(trusted[0].prefix)
        foreign = {trusted[slot] for i in seen if (slot := locate(i)) is not None and not wanted(i)}
        for keys in (keys for keys in trusted if keys not in foreign):
            low, high = offsets[keys.low], offsets[keys.high]
            if high < low:
                # Documents added between the two requests cannot make this negative; a server
                # whose offset is not a row count can.
                raise answer_error(
                    policy,
                    db,
                    f"_all_docs answered offsets that do not count rows ({low} then {high}); "
                    "count with exact=True",
                )
            counts[keys] = high - low
        # The other ranges are scanned one by one: far apart, one scan would read between them.
        for span, each in zip(spans, ranges, strict=True):
            if each is not None and each not in counts:
                scanned = yield from _scan_counts(known, db, [span], [each], form, doc_type, policy)
                counts[each] = scanned[0]
    else:
        present_spans = [span for span, each in zip(spans, ranges, strict=True) if each]
        scanned = yield from _scan_counts(known, db, present_spans, present, form, doc_type, policy)
        counts = dict(zip(present, scanned, strict=True))
    return [0 if each is None else counts[each] for each in ranges]


def _marks(
    db: str, keys: list[str], parallel: int, policy: RetryPolicy
) -> Program[tuple[dict[str, int], set[str]]]:
    """The offset of each key (the number of ids below it), and the ids among the first
    :data:`PROBE_ROWS` at each key; one request a key, ``parallel`` requests at a time."""

    def mark(key: str) -> Program[tuple[int, list[str]]]:
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
        return value, [row["id"] for row in rows]

    marks = yield from each_type(mark, keys, parallel)
    seen = {doc_id for _, ids in marks for doc_id in ids}
    return {key: offset for key, (offset, _) in zip(keys, marks, strict=True)}, seen


def _locate(ranges: list[KeyRange]) -> Callable[[str], int | None]:
    """The index in ``ranges`` (disjoint) of the one holding an id, or ``None``."""
    order = sorted(range(len(ranges)), key=lambda i: ranges[i].low)
    lows = [ranges[i].low for i in order]

    def locate(doc_id: str) -> int | None:
        slot = bisect.bisect_right(lows, doc_id) - 1
        return order[slot] if slot >= 0 and doc_id < ranges[order[slot]].high else None

    return locate


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
    locate = _locate(ranges)
    start_ms, end_ms = min(a for a, _ in spans), max(b for _, b in spans)
    counts = [0] * len(ranges)
    pages = Puller(
        scan_pages(known, db, form, doc_type, start_ms, end_ms, policy, include_docs=False)
    )
    while (page := (yield from pages.next())) is not END:
        for row in page:
            slot = locate(row["id"])
            if slot is not None:
                counts[slot] += 1
    return counts
