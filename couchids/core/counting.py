"""Counting the ids of a time window, and a histogram of counts per time bucket.

What is counted are the ids :meth:`couchids.Database.window` returns, read as it reads them
(:func:`~couchids.core.windows.scan_pages`: the ids of the window's key range, no documents, in
time slices read in parallel); a histogram buckets them in that one scan. With
``index_only=True`` a key range is counted from the server's ``offset`` instead (CouchDB,
Cloudant): every id in it, in one ``limit=1`` request per key, trusted only when every answer
names the same ``update_seq``, else (and on PouchDB Server) scanned. The rules a user relies on
are in docs/guide/lifecycle.md.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal

from couchids.core.alltypes import each_type, types_present
from couchids.core.answers import KeySpan, answer_error, describe, expect_object, expect_rows
from couchids.core.arguments import flag as check_flag
from couchids.core.arguments import window as check_window
from couchids.core.asking import ask
from couchids.core.defaults import DEFAULT_WORKERS
from couchids.core.effects import END, Program, Puller, Request, path, post_json
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import KeyRange, check_time_form, window_keys
from couchids.core.options import Options
from couchids.core.policy import RetryPolicy
from couchids.core.scan import check_one_form
from couchids.core.updateseq import shard_sequences
from couchids.core.windows import scan_pages
from couchids.errors import InvalidArgumentError
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import IdForm
from couchids.idforms.times import DurationLike, TimeLike, duration_ms, to_datetime

__all__ = [
    "BUCKET_ORIGIN_MS",
    "DEFAULT_WORKERS",
    "MAX_BUCKETS",
    "SAME_SEQ_ROUNDS",
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

#: How many times an index-only count reads again the offsets answered at another
#: ``update_seq`` than the others before it scans instead (writes kept landing between them).
SAME_SEQ_ROUNDS: Final = 5


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
    index_only: bool,
    options: Options,
    operation: str = "count",
) -> Program[int]:
    """The program of :meth:`couchids.Database.count`: the count of ids of ``form`` and
    ``type`` in ``[start, end)`` within ``options``, ``operation`` naming the call in messages;
    arguments checked now. ``type=ALL_TYPES`` counts the ids of every type present."""
    policy = options.policy(operation)
    span = check_window(start, end)
    check_time_form(form)
    check_flag("index_only", index_only)
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
            counted = _counts(known, db, [span], form, each, index_only, options, policy)
            found += sum((yield from counted))
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
    index_only: bool,
    options: Options,
) -> Program[list[Bucket]]:
    """The program of :meth:`couchids.Database.histogram`: the counts per bucket of ``every``
    in ``[start, end)`` within ``options``; arguments checked now."""
    policy = options.policy("histogram")
    start_ms, end_ms = check_window(start, end)
    check_time_form(form)
    check_flag("index_only", index_only)
    every_ms = parse_every(every)
    buckets = -(-(end_ms - start_ms) // every_ms) + 1
    if buckets > MAX_BUCKETS:
        raise InvalidArgumentError(
            f"every={every!r}: the window would hold about {buckets:,} buckets, more than "
            f"{MAX_BUCKETS:,}; give a wider every or a shorter window"
        )
    form.type_prefix(type)
    spans = list(itertools.pairwise(bucket_edges(start_ms, end_ms, every_ms)))

    def buckets_of() -> Program[list[Bucket]]:
        counts = yield from _counts(known, db, spans, form, type, index_only, options, policy)
        return [
            Bucket(to_datetime(a), to_datetime(b), n)
            for (a, b), n in zip(spans, counts, strict=True)
        ]

    return buckets_of()


def _counts(
    known: FactsCache,
    db: str,
    spans: list[tuple[int, int]],
    form: IdForm,
    doc_type: str | None,
    index_only: bool,
    options: Options,
    policy: RetryPolicy,
) -> Program[list[int]]:
    """The number of ids of ``form`` and ``doc_type`` in each of the adjacent time ``spans``:
    from one scan of their ids, read as a window reads them; with ``index_only``, from offsets
    where the server has them and they were read at one ``update_seq``."""
    ranges = [window_keys(form, doc_type, a, b) for a, b in spans]
    # A missing database raises, even for an empty window.
    yield from database_facts(known, db, policy)
    yield from check_one_form(known, db, form, doc_type, policy)
    present = [(span, keys) for span, keys in zip(spans, ranges, strict=True) if keys is not None]
    if not present:
        return [0] * len(spans)
    counts: list[int] | None = None
    if index_only and (yield from counts_by_offset(known, policy, db)):
        parallel = options.slices("histogram")
        counts = yield from _offset_counts(db, [keys for _, keys in present], parallel, policy)
    if counts is None:
        counts = yield from _scan_counts(known, db, present, form, doc_type, options, policy)
    found = {keys: n for (_, keys), n in zip(present, counts, strict=True)}
    return [0 if each is None else found[each] for each in ranges]


def _offset_counts(
    db: str, ranges: list[KeyRange], parallel: int, policy: RetryPolicy
) -> Program[list[int] | None]:
    """The number of rows in each of ``ranges`` from the offsets at their keys, ``parallel``
    requests at a time, or ``None`` when they could not all be read in one state.

    An offset is summed over the shards, each read by one of its copies, and ``update_seq``
    names those copies and their sequences (:func:`~couchids.core.updateseq.shard_sequences`):
    offsets answered with the same were read from the same copies in the same state, so their
    differences count rows. The keys missing in the state most keys were read in (on a tie the
    newest, then the one answered most often) are read again, up to :data:`SAME_SEQ_ROUNDS`
    times in all."""
    keys = sorted({key for each in ranges for key in (each.low, each.high)})
    seen: dict[Hashable, dict[str, int]] = {}  # a state -> key -> offset
    newness: dict[Hashable, int] = {}
    answered: Counter[Hashable] = Counter()
    unread = keys
    for _ in range(SAME_SEQ_ROUNDS):
        marks = yield from each_type(lambda key: _mark(db, key, policy), unread, parallel)
        for key, (offset, seq) in zip(unread, marks, strict=True):
            if seq is None:
                return None  # a server that does not tell its update_seq proves nothing
            state = shard_sequences(seq)
            seen.setdefault(state, {})[key] = offset
            newness[state], answered[state] = _seq_number(seq), answered[state] + 1
        best = seen[max(seen, key=lambda s: (len(seen[s]), newness[s], answered[s]))]
        unread = [key for key in keys if key not in best]
        if not unread:
            return [_difference(best[r.low], best[r.high], policy, db) for r in ranges]
    return None


def _difference(low: int, high: int, policy: RetryPolicy, db: str) -> int:
    """The rows between two offsets read at one ``update_seq``."""
    if high < low:
        # Read in one state of the database, a lower second offset is a server whose offset
        # is no row count.
        raise answer_error(
            policy,
            db,
            f"_all_docs answered offsets that do not count rows ({low} then {high}, at one "
            "update_seq); count without index_only=True",
        )
    return high - low


def _mark(db: str, key: str, policy: RetryPolicy) -> Program[tuple[int, str | None]]:
    """The offset of ``key`` (the number of rows below it), and the ``update_seq`` of the
    database it was read in (``None`` if the server did not say)."""
    each = policy.renewed()
    # stable: the same copy of each shard answers every request (measured on a 3-node CouchDB
    # 3.4.3: without it one of three copies answers each, and two requests in a row named one
    # update_seq about a third of the time). One row, which must lie at or past the key: a
    # server that ignored start_key is refused.
    query = {"start_key": key, "limit": 1, "update_seq": True, "stable": True}
    asked = post_json(path(db, "_all_docs"), query)
    reply = yield from ask(asked, each, db)
    body = expect_object(reply.body, each, db, sent=reply.sent)
    value, seq = body.get("offset"), body.get("update_seq")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise answer_error(
            each,
            db,
            f"_all_docs answered no row offset ({describe(value)}); count without index_only=True",
            reply.sent,
        )
    expect_rows(reply.body, each, db, sent=reply.sent, span=KeySpan(key, None))
    if isinstance(seq, int) and not isinstance(seq, bool):
        return value, str(seq)  # CouchDB 1's: one number
    return value, seq if isinstance(seq, str) and seq else None


def _seq_number(seq: str) -> int:
    """The number a CouchDB ``update_seq`` starts with (its shards' sequences summed), which
    orders the states of one database; 0 when it has none."""
    number = seq.partition("-")[0]
    return int(number) if number.isdigit() else 0


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
    present: list[tuple[tuple[int, int], KeyRange]],
    form: IdForm,
    doc_type: str | None,
    options: Options,
    policy: RetryPolicy,
) -> Program[list[int]]:
    """Counts of the ids of ``form`` in each key range of ``present`` (with its time span,
    adjacent), from one scan of the ids as :meth:`couchids.Database.window` reads them (its
    ``batch_size`` and ``parallel`` time slices)."""
    locate = _locate([keys for _, keys in present])
    start_ms, end_ms = present[0][0][0], present[-1][0][1]
    counts = [0] * len(present)
    pages = Puller(
        scan_pages(
            known,
            db,
            form,
            doc_type,
            start_ms,
            end_ms,
            policy,
            include_docs=False,
            batch_size=options.batch("window"),
            parallel=options.slices("window"),
        )
    )
    while (page := (yield from pages.next())) is not END:
        for row in page:
            slot = locate(row["id"])
            if slot is not None:
                counts[slot] += 1
    return counts
