"""The programs of a series of databases (:class:`couchids.Series`): a database per period.

The series ``events`` of months keeps the documents made in November 2026 in the database
``events-2026-11`` (:mod:`couchids.core.periods` names them). A read across periods is the
operation of one database run on each period's database in turn, its window clamped to that
period, so a document stored in the wrong period's database (by hand, or by a writer whose
clock was wrong) is never read twice, nor out of order. A period whose database does not
exist, or is dropped while it is read, is an empty period; any other failure is raised.

Pure: no I/O; the handles (:mod:`couchids.aio.series`, and ``couchids.series`` generated from
it) run these.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, TextIO, TypeVar

from couchids.core import counting, expiry, exporting, windows
from couchids.core.alltypes import MAX_STEP_PAGE, Landed, each_type, types_present, walk_types
from couchids.core.answers import answer_error, check_listing, describe
from couchids.core.arguments import called, gave
from couchids.core.arguments import count as check_count
from couchids.core.arguments import documents as check_documents
from couchids.core.arguments import function as check_function
from couchids.core.asking import MISSING, ask
from couchids.core.counting import Bucket, bucket_edges, parse_every
from couchids.core.document import check_new
from couchids.core.effects import END, Emit, Program, Puller, Request, Start, Wait, path
from couchids.core.expiry import ExpireReport
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import KeyRange, next_text, window_keys
from couchids.core.options import Options
from couchids.core.periods import MAX_AHEAD, Period, SeriesLayout, period_of
from couchids.core.policy import RetryPolicy
from couchids.core.scan import Checkpoint, check_one_form, check_resumes, range_pages
from couchids.core.short import short_day
from couchids.core.writes import all_stored, check_functions_of_documents
from couchids.errors import (
    DatabaseLimitError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidIdError,
    InvalidInputError,
    InvalidTimeError,
    InvalidTypeError,
    ServerError,
    WriteResult,
)
from couchids.idforms.doctypes import AllTypes, scope_prefix
from couchids.idforms.idform import IdForm
from couchids.idforms.times import TimeLike, now_ms, to_datetime, to_ms

__all__ = [
    "CAPACITY_PATH",
    "MAX_AHEAD",
    "PERIOD_WORKERS",
    "PeriodDocs",
    "PlacedResults",
    "SeriesExpireReport",
    "SeriesLayout",
    "count",
    "create_database",
    "drop_database",
    "expire",
    "export",
    "headroom",
    "histogram",
    "id_time",
    "latest",
    "list_databases",
    "make_missing",
    "period_spans",
    "prepare",
    "route_documents",
    "window",
]

T = TypeVar("T")
Row = dict[str, Any]
Doc = Mapping[str, Any]
#: A database of the series and the part of a window in its period: ``(name, start, end)``.
Span = tuple[str, int, int]

#: Period databases :meth:`couchids.Series.count`, ``histogram`` and ``expire`` (the periods
#: after its cutoff) read at a time.
PERIOD_WORKERS: Final = 4
#: The servers whose ``_all_dbs`` lists its names sorted, inside the keys asked for.
SORTED_ALL_DBS: Final = frozenset({"couchdb", "cloudant"})
#: Where IBM Cloudant says how many databases an instance may hold:
#: ``{"current": {"databases": {"total": 200}}}`` (IBM Cloudant API, "Retrieve maximum
#: allowed database count", https://cloud.ibm.com/apidocs/cloudant#getcapacitydatabasesinformation;
#: it needs the manager role or ``_admin``).
CAPACITY_PATH: Final = "/_api/v2/user/capacity/databases"
#: Words of a refusal to create a database that speak of a cap on their number rather than of
#: a permission: Cloudant answers the database past its cap with ``403`` and does not
#: document the words (https://cloud.ibm.com/docs/Cloudant?topic=Cloudant-limits).
_CAP_WORDS: Final = re.compile(r"\b(limit|quota|maximum|exceed(s|ed)?|too many)\b", re.I)
#: What to do about the cap, in every message about it.
_CAP_ADVICE: Final = (
    "drop the oldest periods with Series.expire(before, dry_run=False) (a series holds one "
    "database per period it keeps: periods x retention must stay under the cap, with the "
    "server's other databases), use a longer period (every='week', 'month' or 'year'), or "
    "ask for a higher cap (IBM Cloudant since March 2025: 200 databases on Standard, 20 on "
    "Lite, https://cloud.ibm.com/docs/Cloudant?topic=Cloudant-limits)"
)


# -- the databases ------------------------------------------------------------------------


def list_databases(
    known: FactsCache, layout: SeriesLayout, policy: RetryPolicy
) -> Program[list[tuple[Period, str]]]:
    """The series' databases that exist, each with its period, oldest first: one
    ``GET /_all_dbs``, keys around ``<prefix>-``.

    Only a name that is exactly one of the series' period names counts (another series whose
    prefix starts the same, ``events-x``, or another kind of period never does). The answer
    is checked (:func:`~couchids.core.answers.check_listing`): each name once, and from CouchDB
    and Cloudant in byte order inside the keys (PouchDB Server ignores the keys).

    Raises:
        ServerError: (or a subclass) the server failed, or answered wrongly;
            ``UnauthorizedError`` when the credentials may not list databases (CouchDB 3
            lets only admins do it, unless ``[chttpd] admin_only_all_dbs`` is false).
    """
    # No database name holds a '.', the byte after '-'.
    head, end = layout.prefix + "-", layout.prefix + "."
    keys = {"start_key": json.dumps(head), "end_key": json.dumps(end)}
    names, sent = yield from _all_dbs(policy, layout.prefix, keys)
    try:
        check_listing(
            "_all_dbs", names, policy, layout.prefix, sent=sent, ordered=True, low=head, high=end
        )
    except ServerError:
        if (yield from counting.server_kind(known, policy, layout.prefix)) in SORTED_ALL_DBS:
            raise
        check_listing("_all_dbs", names, policy, layout.prefix, sent=sent)
    return sorted((period, name) for name in names if (period := layout.period(name)))


def _all_dbs(
    policy: RetryPolicy, db: str, params: dict[str, str] | None = None
) -> Program[tuple[list[str], str]]:
    """The names ``GET /_all_dbs`` answers, and the request as sent."""
    reply = yield from ask(Request("GET", "/_all_dbs", params), policy, db)
    names = reply.body
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        problem = f"_all_dbs answered {describe(names)}, not a list of names"
        raise answer_error(policy, db, problem, reply.sent)
    return names, reply.sent


def create_database(
    known: FactsCache,
    name: str,
    *,
    partitioned: bool,
    policy: RetryPolicy,
    max_databases: int | None = None,
) -> Program[bool]:
    """Create the database ``name`` (``?partitioned=true`` with ``partitioned``) unless it
    exists: whether this call made it.

    Safe to race: ``412 file_exists`` is a database another made (or this call's earlier
    attempt, whose answer was lost); after a 5xx or a lost answer (a cluster can answer
    ``500`` though it made the database), ``GET /{db}`` decides. A ``403`` is the server's
    cap on databases when its answer speaks of a limit, or the server holds as many as the
    cap (``max_databases``, else Cloudant's ``CAPACITY_PATH``); else it is raised as it
    came.

    Raises:
        DatabaseLimitError: the server holds as many databases as it allows.
        ServerError: (or a subclass) the database could not be made.
    """
    params = {"partitioned": "true"} if partitioned else None
    known.pop(name, None)  # a database of that name dropped since is not this one
    try:
        yield from ask(Request("PUT", path(name), params), policy, name)
        return True
    except ServerError as exc:
        if exc.status == 412:
            return False
        failure = exc
    if failure.status == 403:  # a cap on databases, or a permission refused
        if _CAP_WORDS.search(str(failure).partition("(HTTP 403)")[2]):
            why = "its answer speaks of a limit"
        else:
            try:
                room = yield from _room(known, max_databases, policy, name)
            except ServerError:
                raise failure from None  # a cap or count that cannot be read proves nothing
            if room is None or room[1] < room[0]:
                raise failure
            why = f"it holds {room[1]} databases, and allows {room[0]}"
        raise DatabaseLimitError(
            f"{policy.operation} on {name!r} (PUT {path(name)}): the server refused to create "
            f"the database (HTTP 403): {why}; nothing was written to it: {_CAP_ADVICE}",
            failure.status,
        ) from failure
    if 0 < failure.status < 500:
        raise failure
    try:
        there = yield from ask(Request("GET", path(name)), policy, name, expect=(MISSING,))
    except ServerError:
        raise failure from None
    if there is MISSING:
        raise failure
    return False


def _room(
    known: FactsCache, max_databases: int | None, policy: RetryPolicy, db: str
) -> Program[tuple[int, int] | None]:
    """The most databases the server holds (``max_databases``; else, on IBM Cloudant, its
    :data:`CAPACITY_PATH`) and how many it holds, the series' and others (one ``GET
    /_all_dbs``); ``None`` where the cap is not known or the credentials may not read it.
    ``ServerError`` when the server fails or answers in another shape."""
    cap = max_databases
    if cap is None:
        if (yield from counting.server_kind(known, policy, db)) != "cloudant":
            return None
        try:
            reply = yield from ask(Request("GET", CAPACITY_PATH), policy, db)
        except ServerError as exc:
            if exc.status in (401, 403, 404):
                return None  # the manager role is needed, or an older instance has no such thing
            raise
        current = reply.body.get("current") if isinstance(reply.body, dict) else None
        databases = current.get("databases") if isinstance(current, dict) else None
        cap = databases.get("total") if isinstance(databases, dict) else None
        if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
            raise answer_error(
                policy, db, f"{CAPACITY_PATH} answered {describe(reply.body)}", reply.sent
            )
    names, sent = yield from _all_dbs(policy, db)
    check_listing("_all_dbs", names, policy, db, sent=sent)
    return cap, len(names)


def headroom(
    known: FactsCache,
    layout: SeriesLayout,
    ahead: int,
    policy: RetryPolicy,
    max_databases: int | None,
) -> Program[str | None]:
    """What :meth:`couchids.Series.prepare` warns about once it made its databases, or
    ``None``: a server whose cap on databases leaves room for no more than ``ahead`` new ones
    (:func:`_room`; ``ServerError`` when it cannot be read)."""
    room = yield from _room(known, max_databases, policy, layout.prefix)
    if room is None:
        return None
    cap, held = room
    free = max(cap - held, 0)
    if free > ahead:
        return None
    source = f"max_databases={cap}" if max_databases is not None else CAPACITY_PATH
    return (
        f"series {layout.prefix!r} of {layout.every}s: the server holds {held} databases and "
        f"allows {cap} ({source}): {free} more can be created, so the database of the "
        f"{_ordinal(ahead + free + 1)} {layout.every} after this one will be refused, and "
        f"the writes of that {layout.every} with it; {_CAP_ADVICE}"
    )


def _ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ..., ``11th``, ``21st``."""
    last = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{last}"


def make_missing(
    known: FactsCache,
    layout: SeriesLayout,
    names: Sequence[str],
    policy: RetryPolicy,
    max_databases: int | None,
) -> Program[None]:
    """Make sure each database of ``names`` exists (``GET /{db}`` for each this client does
    not know yet, ``PUT`` for each missing one), so that the server's cap refuses a whole
    :meth:`couchids.Series.bulk_create` before a document is sent: every lookup and creation
    by ``policy``'s one deadline."""
    for name in names:
        if name in known:
            continue
        try:
            yield from database_facts(known, name, policy)
        except DatabaseNotFoundError:
            yield from create_database(
                known,
                name,
                partitioned=layout.partitioned,
                policy=policy,
                max_databases=max_databases,
            )


def drop_database(
    known: FactsCache, layout: SeriesLayout, name: str, before_ms: int, policy: RetryPolicy
) -> Program[bool]:
    """Delete the database ``name`` of a period of ``layout`` that ended by ``before_ms``:
    whether this call deleted it (``False``: it was gone already). Checked right before the
    ``DELETE``, whoever called: no other database is ever deleted.

    Raises:
        InvalidArgumentError: ``name`` is no database of the series, or its period ends after
            ``before_ms``; nothing is sent.
        ServerError: (or a subclass) the server failed.
    """
    period = layout.period(name)
    if period is None:
        raise InvalidArgumentError(
            f"{name!r} is no database of the series {layout.prefix!r} of {layout.every}s: not "
            "deleted"
        )
    if period.end_ms > before_ms:
        raise InvalidArgumentError(
            f"the period of {name!r} ends at {period.end.isoformat()}, after "
            f"{to_datetime(before_ms).isoformat()}: not deleted"
        )
    answer = yield from ask(Request("DELETE", path(name)), policy, name, expect=(MISSING,))
    known.pop(name, None)
    return answer is not MISSING


def prepare(
    known: FactsCache,
    layout: SeriesLayout,
    now_ms: int,
    ahead: int,
    policy: RetryPolicy,
    max_databases: int | None = None,
) -> Program[list[str]]:
    """The program of :meth:`couchids.Series.prepare`: creates the databases of the period of
    ``now_ms`` and of the ``ahead`` periods after it, in time order, and returns their names.
    ``ahead``, and periods past the form's last time, are refused before a request is sent;
    a database the server's cap refuses raises :class:`DatabaseLimitError` (those before it
    are made)."""
    check_count("ahead", ahead, 0, most=MAX_AHEAD)
    periods = [layout.period_at(now_ms)]
    for _ in range(ahead):
        periods.append(layout.period_at(periods[-1].following().start_ms))
    names = [layout.name(p) for p in periods]

    def create() -> Program[list[str]]:
        for name in names:
            yield from create_database(
                known,
                name,
                partitioned=layout.partitioned,
                policy=policy,
                max_databases=max_databases,
            )
        return names

    return create()


# -- writing into periods ---------------------------------------------------------------


@dataclass
class PeriodDocs:
    """The documents of one bulk write that belong to one period.

    Attributes:
        period, name: the period, and its database.
        positions: each document's position in the input.
        docs: the documents, in input order.
        times: each document's own time, by ``id()`` of the document (see :meth:`time_of`).
    """

    period: Period
    name: str
    positions: list[int] = field(default_factory=list)
    docs: list[Doc] = field(default_factory=list)
    times: dict[int, TimeLike] = field(default_factory=dict)

    def time_of(self, doc: Doc) -> TimeLike:
        """The time of ``doc`` (one of :attr:`docs`) as routing read it: what its id is made
        for, so that the id holds a time of this period."""
        return self.times[id(doc)]

    def to_write_again(self, handled: Sequence[WriteResult]) -> list[int]:
        """The positions in :attr:`docs` to write again once the database is made, after a
        write that ended with ``DatabaseNotFoundError`` having handled ``handled`` (the
        error's ``results``): those it did not reach, and those refused for the missing
        database, which were not stored. Any other result stands."""
        return [
            at
            for at in range(len(self.docs))
            if at >= len(handled)
            or (
                isinstance(handled[at].error, DatabaseNotFoundError)
                and handled[at].error.stored is False  # type: ignore[union-attr]
            )
        ]

    def merged(
        self, handled: Sequence[WriteResult], again: list[int], rewritten: Sequence[WriteResult]
    ) -> list[WriteResult]:
        """The results of every document: those of ``handled`` that stand, and for the
        positions ``again`` (:meth:`to_write_again`) those of ``rewritten``, in order."""
        results: list[WriteResult | None] = [*handled, *[None] * (len(self.docs) - len(handled))]
        for at, result in zip(again, rewritten, strict=True):
            results[at] = result
        return [result for result in results if result is not None]


def route_documents(
    layout: SeriesLayout,
    docs: Iterable[Doc],
    *,
    key_of: Callable[[Doc], str] | None,
    time_of: Callable[[Doc], TimeLike] | None,
    now: datetime,
) -> tuple[int, list[PeriodDocs]]:
    """How many documents ``docs`` holds, and their periods, oldest first, each with its
    documents: the routing of :meth:`couchids.Series.bulk_create`, every document checked
    (:func:`~couchids.core.document.check_new`) before anything is written. A document's time
    is ``time_of(doc)``, read once; else the time in its own ``_id``; else ``now``, one time
    for the whole call.

    Raises:
        InvalidArgumentError: ``docs`` is not an iterable of documents, a document cannot be
            stored or routed (an own ``_id`` of another form), ``time_of`` or ``key_of`` is
            not a function, ``time_of`` failed, or ``key_of`` came without ``time_of``.
        InvalidTimeError: a document's time is unreadable or past the form's last time.
    """
    check_documents("docs", docs)
    check_functions_of_documents(key_of, time_of)
    parts: dict[Period, PeriodDocs] = {}
    for position, doc in enumerate(docs):
        label = f"document {position}"
        check_new(doc, label)
        own = doc.get("_id")
        if time_of is not None:
            when: TimeLike = called("time_of", time_of, doc, label)
        elif own is not None:
            when = layout.time_of_id(own)
        else:
            when = now
        try:
            period = layout.period_at(to_ms(when))
        except InvalidTimeError as exc:
            if time_of is not None:
                raise gave("time_of", when, label, exc) from None
            raise InvalidTimeError(f"{label}: {exc}") from None
        part = parts.setdefault(period, PeriodDocs(period, layout.name(period)))
        part.positions.append(position)
        part.docs.append(doc)
        part.times[id(doc)] = when
    total = sum(len(part.docs) for part in parts.values())
    return total, sorted(parts.values(), key=lambda part: part.period)


class PlacedResults:
    """The results of a bulk write into several periods, put back in input order."""

    def __init__(self, total: int) -> None:
        self._results: list[WriteResult | None] = [None] * total

    def place(self, part: PeriodDocs, results: Sequence[WriteResult]) -> None:
        """The results of ``part``'s documents, from the first on (fewer when its write
        ended early)."""
        for position, result in zip(part.positions, results, strict=False):
            self._results[position] = result

    def handled(self) -> list[WriteResult]:
        """The results placed so far, in input order."""
        return [result for result in self._results if result is not None]

    def finish(self) -> list[WriteResult]:
        """Every result in input order; :class:`~couchids.BulkWriteError` when some
        documents were not stored."""
        return all_stored(self.handled())


# -- reading across periods ---------------------------------------------------------------
# Each program is the one of one database run on each period's database, its window clamped
# to the period (:func:`_per_period`); it checks its arguments when it is made.


def window(
    known: FactsCache,
    layout: SeriesLayout,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | AllTypes | None,
    newest_first: bool,
    include_docs: bool,
    options: Options,
) -> Program[None]:
    """The program of :meth:`couchids.Series.window`: emits the pages of each period's
    window (:func:`couchids.core.windows.window`), in the window's order, reading the answer to
    each database's first request while the caller works through the one before."""

    def part(name: str, a: int, b: int) -> windows.WindowRead:
        return windows.window(
            known,
            name,
            to_datetime(a),
            to_datetime(b),
            type=type,
            form=layout.form,
            newest_first=newest_first,
            include_docs=include_docs,
            options=options,
        )

    def run(spans: list[Span]) -> Program[None]:
        reads = [part(*span) for span in (spans[::-1] if newest_first else spans)]
        ahead: object = None
        for index, read in enumerate(reads):
            handle = ahead if index else (yield Start(read.open()))
            if index + 1 < len(reads):
                ahead = yield Start(reads[index + 1].open())
            try:
                opened = yield Wait(handle)
            except DatabaseNotFoundError:
                continue
            yield from _period(read.pages(opened))

    return _per_period(known, layout, options.policy("window"), start, end, part, run)


def latest(
    known: FactsCache,
    layout: SeriesLayout,
    n: int,
    *,
    type: str | AllTypes | None,
    include_docs: bool,
    options: Options,
) -> Program[list[Row]]:
    """The program of :meth:`couchids.Series.latest`: the newest ``n`` across the periods,
    newest database first (:func:`couchids.core.windows.newest` within each period),
    stopping once ``n`` are found."""
    form = layout.form
    # Checks the arguments.
    windows.latest(
        known, layout.prefix, n, type=type, form=form, include_docs=include_docs, options=options
    )
    policy = options.policy("latest")

    def run() -> Program[list[Row]]:
        found: list[Row] = []
        if n == 0:
            return found
        for period, name in reversed((yield from list_databases(known, layout, policy))):
            newest = windows.newest(
                known,
                name,
                n - len(found),
                type=type,
                form=form,
                include_docs=include_docs,
                policy=policy,
                start_ms=period.start_ms,
                end_ms=period.end_ms,
            )
            found += yield from _unless_missing(newest, [])
            if len(found) >= n:
                break
        return found

    return run()


def count(
    known: FactsCache,
    layout: SeriesLayout,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | AllTypes | None,
    index_only: bool,
    options: Options,
) -> Program[int]:
    """The program of :meth:`couchids.Series.count`: the sum of each period's count
    (:func:`couchids.core.counting.count`), :data:`PERIOD_WORKERS` databases at a time."""
    policy = options.policy("count")

    def part(name: str, a: int, b: int) -> Program[int]:
        return counting.count(
            known,
            name,
            to_datetime(a),
            to_datetime(b),
            type=type,
            form=layout.form,
            index_only=index_only,
            options=options,
        )

    def run(spans: list[Span]) -> Program[int]:
        return sum((yield from _each_period(part, spans, 0)))

    return _per_period(known, layout, policy, start, end, part, run)


def histogram(
    known: FactsCache,
    layout: SeriesLayout,
    start: TimeLike,
    end: TimeLike,
    *,
    every: str | timedelta,
    type: str | None,
    index_only: bool,
    options: Options,
) -> Program[list[Bucket]]:
    """The program of :meth:`couchids.Series.histogram`: the buckets of one database's
    histogram of ``[start, end)`` (:func:`~couchids.core.counting.bucket_edges`), each the
    sum of the periods' histograms of their parts of it. A period's histogram has the same
    inner edges, and edges at its period's start and end, so each of its buckets lies inside
    one bucket of the whole window."""
    policy = options.policy("histogram")
    # Read once: a time ago and now are the same instants for the edges and the periods.
    start, end = _instants(start, end)

    def part(name: str, a: int, b: int) -> Program[list[Bucket]]:
        return counting.histogram(
            known,
            name,
            to_datetime(a),
            to_datetime(b),
            every=every,
            type=type,
            form=layout.form,
            index_only=index_only,
            options=options,
        )

    def run(spans: list[Span]) -> Program[list[Bucket]]:
        edges = bucket_edges(to_ms(start), to_ms(end), parse_every(every))
        counts, none = [0] * (len(edges) - 1), list[Bucket]()
        for buckets in (yield from _each_period(part, spans, none)):
            for bucket in buckets:
                counts[bisect.bisect_right(edges, to_ms(bucket.start)) - 1] += bucket.count
        return [
            Bucket(to_datetime(a), to_datetime(b), n)
            for (a, b), n in zip(itertools.pairwise(edges), counts, strict=True)
        ]

    return _per_period(known, layout, policy, start, end, part, run)


def export(
    known: FactsCache,
    layout: SeriesLayout,
    start: TimeLike,
    end: TimeLike,
    out: TextIO,
    *,
    type: str | None,
    csv: Sequence[str] | None,
    checkpoint: Checkpoint | None,
    on_progress: Callable[[Checkpoint], None] | None,
    options: Options,
) -> Program[Checkpoint]:
    """The program of :meth:`couchids.Series.export`: the periods' windows written one after
    the other by one writer (:func:`~couchids.core.exporting.write_documents`), as one
    database's export (one CSV header). A checkpoint's ``last_id`` resumes just after that
    document, in whichever period it lies: the periods that end by its time are not read."""
    policy = options.policy("export")
    batch_size, parallel = options.batch("export"), options.slices("export")
    columns, mark = exporting.check_output(out, csv, checkpoint)
    check_function("on_progress", on_progress)

    def part(name: str, a: int, b: int) -> Program[None]:
        return exporting.window_documents(
            known,
            name,
            to_datetime(a),
            to_datetime(b),
            type,
            layout.form,
            mark,
            batch_size,
            policy.renewed(),
            parallel=parallel,
        )

    def run(spans: list[Span]) -> Program[None]:
        done = None
        if mark.last_id is not None:
            # An id of no export of the series is refused by the first period read.
            with contextlib.suppress(InvalidInputError):
                done = period_of(layout.every, layout.time_of_id(mark.last_id))
        if done is not None:
            # One of the series' time, but a document of its period's database only (unless
            # that database was dropped since, as expire drops an ended period's).
            checked = check_resumes(layout.name(done), mark, policy.renewed())
            yield from _unless_missing(checked, None)
            spans = [span for span in spans if span[2] > done.start_ms]
        for span in spans:
            yield from _period(part(*span))

    pages = _per_period(known, layout, policy, start, end, part, run)
    return exporting.write_documents(pages, out, columns, mark, on_progress)


def _per_period(
    known: FactsCache,
    layout: SeriesLayout,
    policy: RetryPolicy,
    start: TimeLike,
    end: TimeLike,
    part: Callable[[str, int, int], object],
    run: Callable[[list[Span]], Program[T]],
) -> Program[T]:
    """``run`` of the :func:`period_spans` of ``[start, end)``. Making ``part``, the program
    of one database, for the whole window checks the arguments now."""
    start_ms, end_ms = (to_ms(when) for when in _instants(start, end))
    part(layout.prefix, start_ms, end_ms)

    def read() -> Program[T]:
        return (yield from run((yield from period_spans(known, layout, policy, start_ms, end_ms))))

    return read()


def _instants(start: TimeLike, end: TimeLike) -> tuple[datetime, datetime]:
    """``start`` and ``end`` (``None``: now) as instants, a time ago and now read from one
    reading of the clock, which the periods' programs read alike."""
    now = now_ms()
    return to_datetime(to_ms(start, now=now)), to_datetime(to_ms(end, now=now))


def period_spans(
    known: FactsCache, layout: SeriesLayout, policy: RetryPolicy, start_ms: int, end_ms: int
) -> Program[list[Span]]:
    """The series' databases whose period overlaps ``[start_ms, end_ms)`` (:func:`list_databases`),
    oldest first, each with the part of the window in its period: ``(name, start, end)``."""
    listed = yield from list_databases(known, layout, policy)
    return [
        (name, max(start_ms, period.start_ms), min(end_ms, period.end_ms))
        for period, name in listed
        if period.overlaps(start_ms, end_ms)
    ]


def _each_period(
    part: Callable[[str, int, int], Program[T]], spans: list[Span], missing: T
) -> Program[list[T]]:
    """``part`` of each of ``spans``, :data:`PERIOD_WORKERS` at a time, in their order;
    ``missing`` for a database that does not exist."""
    return each_type(lambda span: _unless_missing(part(*span), missing), spans, PERIOD_WORKERS)


# -- retention --------------------------------------------------------------------------


@dataclass
class SeriesExpireReport:
    """What :meth:`couchids.Series.expire` did (or, in a dry run, would do).

    Attributes:
        dry_run: nothing was changed.
        before: the time before which documents go.
        dropped: the databases of the whole periods that ended by ``before``, oldest first:
            deleted with everything in them (in a dry run: that would be). One holding an id
            of a time at or after ``before``, or one whose time the series cannot read, is not
            dropped but expired as ``boundary`` is.
        boundary: the database of the period holding ``before``, whose every id was read,
            or ``None`` (no such database, or ``before`` starts a period).
        deleted: documents deleted from the databases that stay: ``boundary`` and the later
            ones (in a dry run: that would be).
        expired: the :class:`~couchids.core.expiry.ExpireReport` of each database that stays
            and held documents older than ``before`` (``boundary``'s always), by name, with
            its conflicts and failures.
        unread: ids in ``boundary`` (and in an ended period not dropped) that hold no time
            the series can read (neither an id of its form, typed or not, nor a short id):
            kept, since nothing says whether they are older than ``before``; deal with them
            by hand. Design documents stay and are
            not listed.

    Example::

        report = events.expire("2026-01-15")  # a dry run: what would go
        report.dropped  # ['events-2025-11', 'events-2025-12']
        report.boundary, report.deleted  # ('events-2026-01', 412)
        report.expired  # {'events-2026-01': ExpireReport(matched=412, ...)}
        report.unread  # ['import-7'], kept: its time cannot be read
    """

    dry_run: bool
    before: datetime
    dropped: list[str] = field(default_factory=list)
    boundary: str | None = None
    deleted: int = 0
    expired: dict[str, ExpireReport] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)

    @property
    def conflicts(self) -> list[str]:
        """Ids of documents changed since they were read: left alone."""
        return [doc_id for report in self.expired.values() for doc_id in report.conflicts]

    @property
    def failed(self) -> list[tuple[str, str]]:
        """``(id, reason)`` of documents the server refused to delete."""
        return [failure for report in self.expired.values() for failure in report.failed]


def expire(
    known: FactsCache,
    layout: SeriesLayout,
    before: TimeLike,
    *,
    dry_run: bool,
    purge: bool,
    options: Options,
) -> Program[SeriesExpireReport]:
    """The program of :meth:`couchids.Series.expire`; the arguments are checked now, as
    :func:`couchids.core.expiry.expire` checks them."""
    policy, batch_size = options.policy("expire"), options.batch("expire")
    before_ms = to_ms(before)
    # Checks the arguments.
    expiry.expire(
        known,
        layout.prefix,
        to_datetime(before_ms),
        type=None,
        form=layout.form,
        dry_run=dry_run,
        purge=purge,
        checkpoint=None,
        on_progress=None,
        options=options,
    )
    report = SeriesExpireReport(dry_run=dry_run, before=to_datetime(before_ms))

    def database(at: tuple[Period, str], whole: bool) -> Program[ExpireReport | None]:
        return _expire_database(
            known,
            layout,
            at,
            report,
            policy,
            batch_size,
            purge=purge,
            whole=whole,
            batch_bytes=options.batch_bytes,
        )

    def add(name: str, each: ExpireReport | None, whole: bool) -> None:
        if each is not None and (whole or each.matched or each.conflicts or each.failed):
            report.expired[name] = each
            report.deleted += each.matched if dry_run else each.deleted

    def run() -> Program[SeriesExpireReport]:
        listed = yield from list_databases(known, layout, policy.renewed())
        if purge and not dry_run:
            # A purge the server cannot do is refused before any database is dropped or any
            # document deleted: asked of the first database of the series that still exists.
            for _, name in listed:
                with contextlib.suppress(DatabaseNotFoundError):
                    yield from expiry.check_purge(known, name, policy.renewed())
                    break
        # The boundary period first: an expiry refused there is refused before any database
        # is dropped. The series' writers put every document in the database of its id's
        # time, so a later period's database holds no older id of theirs; one stored there by
        # other means goes too.
        for period, name in listed:
            if period.start_ms < before_ms < period.end_ms:
                report.boundary = name
                add(name, (yield from database((period, name), True)), True)
        # A period that ended is dropped whole only when it holds no id of a time at or
        # after ``before`` (stored there by other means): one that does is expired as the
        # boundary is, id by id, and stays with what is not older.
        ended: list[tuple[Period, str]] = []
        for period, name in listed:
            if period.end_ms <= before_ms:
                holds = holds_later(
                    known, layout, name, period.start_ms, before_ms, policy.renewed()
                )
                if (yield from _unless_missing(holds, False)):
                    add(name, (yield from database((period, name), True)), True)
                else:
                    ended.append((period, name))
        later = [(period, name) for period, name in listed if period.start_ms >= before_ms]
        found = yield from each_type(lambda at: database(at, False), later, PERIOD_WORKERS)
        for (_, name), each in zip(later, found, strict=True):
            add(name, each, False)
        for _, name in ended:
            report.dropped.append(name)
            if not dry_run:
                yield from drop_database(known, layout, name, before_ms, policy.renewed())
        return report

    return run()


def _expire_database(
    known: FactsCache,
    layout: SeriesLayout,
    at: tuple[Period, str],
    report: SeriesExpireReport,
    policy: RetryPolicy,
    batch_size: int,
    *,
    purge: bool,
    whole: bool,
    batch_bytes: int,
) -> Program[ExpireReport | None]:
    """Delete the documents of the database ``at`` whose id holds a time before the report's
    (:func:`id_time`; design documents stay); ``None`` when it does not exist. ``whole``
    (the boundary period's) reads every id and reports those whose time cannot be read,
    else only the rows :func:`older_rows` finds. A loose form's ids of a type count only
    once :func:`~couchids.core.scan.check_one_form` trusts them."""
    (period, name), form, before_ms = at, layout.form, to_ms(report.before)
    checked: set[str | None] | None = set() if form.loose else None

    def check(doc_type: str | None) -> Program[bool]:
        if checked is not None:
            try:
                yield from check_one_form(known, name, form, doc_type, policy.renewed())
            except InvalidTypeError:
                return False
            checked.add(doc_type)
        return True

    def goes(doc_id: str) -> bool:
        if doc_id.startswith("_design/"):
            return False
        ms = time_of(doc_id)
        if ms is None and whole:
            report.unread.append(doc_id)
        return ms is not None and ms < before_ms

    try:
        if whole and checked is not None:
            # Every type is checked before any id is deleted.
            types = yield from types_present(name, form.separator, policy.renewed())
            for doc_type in [None, *types]:
                yield from check(doc_type)
        if purge and not report.dry_run:
            yield from expiry.check_purge(known, name, policy.renewed())
        time_of = id_time(layout, period.start_ms, checked)
        if whole:
            rows = expiry.index_rows(known, name, policy, batch_size=batch_size)
        else:
            rows = older_rows(known, name, form, before_ms, policy, batch_size, check)
        each = ExpireReport(dry_run=report.dry_run)
        return (
            yield from expiry.expire_rows(
                known, name, rows, goes, each, policy, purge=purge, batch_bytes=batch_bytes
            )
        )
    except DatabaseNotFoundError:
        return None


def holds_later(
    known: FactsCache,
    layout: SeriesLayout,
    db: str,
    near_ms: int,
    before_ms: int,
    policy: RetryPolicy,
) -> Program[bool]:
    """Whether ``db`` holds an id that expire keeps: one the series reads (:func:`id_time`, a
    short id's year read near ``near_ms``) of a time at or after ``before_ms``, or one whose
    time it cannot read (but a design document). The walk of
    :func:`~couchids.core.alltypes.walk_types`, plus each type's key ranges outside the
    form's ids older than ``before_ms``, read until such an id is found (two requests a type
    where it holds none)."""
    form, time_of, found = layout.form, id_time(layout, near_ms), False

    def visit(landed: Landed) -> Program[None]:
        nonlocal found
        for row, step in landed:
            if found or row["id"].startswith("_design/"):
                continue
            if step.doc_type is None:
                found = kept(row["id"])
                continue
            try:
                outside = _outside_older(form, step.doc_type, before_ms)
            except InvalidTypeError:
                found = True  # no id of the series is of a type that breaks the type rule
                continue
            for keys in outside:
                pages = Puller(
                    range_pages(known, db, keys, form, policy, doc_type=step.doc_type, wanted=_any)
                )
                try:
                    while not found and (page := (yield from pages.next())) is not END:
                        found = any(kept(each["id"]) for each in page)
                finally:
                    pages.close()

    def kept(doc_id: str) -> bool:
        ms = time_of(doc_id)
        return ms is None or ms >= before_ms

    yield from walk_types(db, form.separator, policy, visit, renew=True, untyped_page=MAX_STEP_PAGE)
    return found


def _any(_: str) -> bool:
    return True


def _outside_older(form: IdForm, doc_type: str, before_ms: int) -> list[KeyRange]:
    """The key ranges of the ids of ``doc_type`` but those of ``form``'s ids older than
    ``before_ms``: later times, and ids written like no id of the form."""
    prefix = form.type_prefix(doc_type)
    top = next_text(prefix)
    older = window_keys(form, doc_type, 0, before_ms)
    if older is None:
        return [KeyRange(prefix, top, prefix)]
    return [KeyRange(prefix, older.low, prefix), KeyRange(older.high, top, prefix)]


def older_rows(
    known: FactsCache,
    db: str,
    form: IdForm,
    before_ms: int,
    policy: RetryPolicy,
    batch_size: int,
    check: Callable[[str | None], Program[bool]],
) -> Program[None]:
    """Emits ``_all_docs`` rows of ``db`` in key order, ``batch_size`` at most at a time,
    among which lies every id older than ``before_ms`` of the layouts a series writes (the
    form's ids, untyped or of a type, and short ids); the caller picks them by their time.
    A :func:`~couchids.core.alltypes.walk_types` that reads the range before ``before_ms``
    of a type whose first id sorts before it, and jumps over the others: about one request
    per type where a database holds only its own period's ids. A type ``check(type)``
    (``None``: untyped) refuses is jumped over."""

    def visit(landed: Landed) -> Program[None]:
        for typed, run in itertools.groupby(landed, lambda at: at[1].doc_type is not None):
            if not typed:
                rows = [row for row, _ in run]
                for at in range(0, len(rows), batch_size):  # what expire_rows deletes at once
                    yield Emit(rows[at : at + batch_size])
                continue
            for row, step in run:
                try:
                    older = window_keys(form, step.doc_type, 0, before_ms)
                except InvalidTypeError:
                    continue  # no id of the form is of a type that breaks the type rule
                if (
                    older is not None
                    and row["id"] < older.high
                    and (yield from check(step.doc_type))
                ):
                    yield from range_pages(
                        known,
                        db,
                        older,
                        form,
                        policy,
                        doc_type=step.doc_type,
                        batch_size=batch_size,
                        wanted=lambda _: True,
                    )

    yield from check(None)
    page = max(batch_size, MAX_STEP_PAGE)
    yield from walk_types(db, form.separator, policy, visit, renew=True, untyped_page=page)


def id_time(
    layout: SeriesLayout, near_ms: int, types: set[str | None] | None = None
) -> Callable[[str], int | None]:
    """A function giving the time (ms) an id holds as the series reads it, or ``None``: an
    id of the series' form, untyped or after a type or ``partition:type`` scope and the
    form's separator (only the types of ``types``, when given; ``None`` there stands for
    untyped ids), or a short id (:func:`~couchids.core.short.short_day`, its year read near
    ``near_ms``). Pure.

    >>> from couchids.idforms.forms import KUUID
    >>> from couchids.idforms.times import to_ms
    >>> time_of = id_time(SeriesLayout("events", "month", KUUID), to_ms("2026-03-01T00:00Z"))
    >>> at = to_ms("2026-03-02T10:00:00Z")
    >>> [time_of(i) == at for i in (KUUID.new(at), KUUID.new(at, type="t"))]
    [True, True]
    >>> time_of("260302-bc") == to_ms("2026-03-02T00:00Z"), time_of("zzz"), time_of("t:260302-bc")
    (True, None, None)
    """
    form = layout.form
    length, separator, matches = form.length, form.separator, form.matcher()
    scopes: dict[str, bool] = {}

    def known_scope(head: str) -> bool:
        if not head:
            return types is None or None in types
        if head not in scopes:
            scope = head[: -len(separator)]
            try:
                scope_prefix(scope, separator)
                scopes[head] = types is None or scope in types
            except InvalidTypeError:
                scopes[head] = False
        return scopes[head]

    def time_of(doc_id: str) -> int | None:
        head, body = doc_id[: len(doc_id) - length], doc_id[len(doc_id) - length :]
        if (
            len(doc_id) >= length
            and (not head or head.endswith(separator))
            and matches(body)
            and known_scope(head)
        ):
            try:
                return form.parse(body)
            except InvalidIdError:
                pass
        return short_day(doc_id, near_ms)

    return time_of


# -- helpers ------------------------------------------------------------------------------


def _unless_missing(program: Program[T], missing: T) -> Program[T]:
    """What ``program`` returns, or ``missing`` when its database does not exist (never
    made, or dropped while it ran): a period without a database holds nothing."""
    try:
        return (yield from program)
    except DatabaseNotFoundError:
        return missing


def _period(part: Program[None]) -> Program[None]:
    """Emits the pages ``part`` emits; a missing database (or one dropped while it is read)
    ends it, as an empty period."""
    puller = Puller(part)
    try:
        while (page := (yield from puller.next())) is not END:
            yield Emit(page)
    except DatabaseNotFoundError:
        return
    finally:
        puller.close()
