"""The programs of :meth:`couchids.Database.latest` and :meth:`~couchids.Database.window`,
for either driver.

The key range comes from :mod:`couchids.core.keys`; a program keeps only rows whose id is of the
requested form and type (never a design document, another type, or a foreign id that happens
to sort inside the range), and pages with keyset paging: each page starts at the last id of
the one before (CouchDB's ``startkey`` is inclusive, so that row comes back and is dropped).
Never ``skip``: rows shift under concurrent inserts and a large ``skip`` is slow.

Pure: the arguments are checked here, once for both APIs, and the programs emit pages of
documents (or rows) for a driver to hand out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from couchids.core.alltypes import each_type, merge_by_time, types_present
from couchids.core.arguments import count as check_count
from couchids.core.arguments import flag as check_flag
from couchids.core.arguments import window as check_window
from couchids.core.effects import END, Emit, Program, Puller
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import KeyRange, check_time_form, resume_point, window_keys
from couchids.core.pages import (
    DEFAULT_PARALLEL,
    PageRequest,
    RangeFetch,
    Slice,
    SlicePlan,
    fetch_page,
    first_request,
    keyset,
    sliced_pages,
)
from couchids.core.policy import RetryPolicy
from couchids.errors import InvalidArgumentError
from couchids.idforms.constants import TYPE_SEPARATOR
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import IdForm
from couchids.idforms.times import MAX_MS, TimeLike

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "PARTITION_QUERY_LIMIT",
    "Opening",
    "WindowRead",
    "latest",
    "newest",
    "scan_pages",
    "window",
]

#: Rows a page of :meth:`~couchids.Database.window` asks for by default. Two pages are held
#: at a time, so this bounds memory; fewer, larger requests cost less per row
#: (bench/bench_query.py: at 2000 a 50,000-document window takes about as long as one unpaged
#: request, in a fifteenth of its memory).
DEFAULT_PAGE_SIZE: Final = 2000
#: Cloudant answers at most this many rows to one partition query.
PARTITION_QUERY_LIMIT: Final = 2000
#: After a first page of ``n`` rows that held foreign ids, :func:`latest` reads pages of this.
LATEST_REFILL: Final = 100

Row = dict[str, Any]


class WindowRead:
    """A window of one database, its arguments checked (:func:`window`): :meth:`pages` reads
    it, :meth:`open` reads the answer to its first request ahead of that."""

    def __init__(
        self, scan: _Scan | Callable[[], Program[None]], batch_size: int, parallel: int
    ) -> None:
        self._scan, self._size, self._parallel = scan, batch_size, parallel

    def pages(self, opened: Opening | None = None) -> Program[None]:
        """Emits the pages of the window; ``opened`` is what :meth:`open` read, or ``None``."""
        if not isinstance(self._scan, _Scan):
            return self._scan()
        size = self._size
        return self._scan.run(size, size, prefetch=True, parallel=self._parallel, opened=opened)

    def open(self) -> Program[Opening | None]:
        """The answer to the first page request of :meth:`pages`, read ahead: a series reads
        the next period's database so while the caller works through the one before. A
        missing database raises (as :meth:`pages` does). ``None`` for a window of every type
        (its first requests are for the types present)."""
        if not isinstance(self._scan, _Scan):
            return None
        return (yield from self._scan.open(self._size, self._size, parallel=self._parallel))


def window(
    known: FactsCache,
    db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | AllTypes | None,
    form: IdForm,
    newest_first: bool,
    include_docs: bool,
    batch_size: int | None,
    timeout: float | None,
    parallel: int | None,
) -> WindowRead:
    """The window of :meth:`couchids.Database.window` (see there): its ``pages()`` are the
    program emitting the pages of the answer (:class:`WindowRead`).

    ``known`` is the driver's cache of :class:`~couchids.core.facts.DatabaseFacts`.
    The arguments are checked now, before anything is sent.
    """
    policy = RetryPolicy.checked(0, 0, timeout, "window")
    start_ms, end_ms = check_window(start, end)
    size = DEFAULT_PAGE_SIZE if batch_size is None else check_count("batch_size", batch_size, 1)
    check_flag("newest_first", newest_first)
    slices = DEFAULT_PARALLEL if parallel is None else check_count("parallel", parallel, 1)
    if type is ALL_TYPES:
        _check_scan(form, include_docs)
        return WindowRead(
            lambda: _all_types_window(
                known, db, policy, start_ms, end_ms, form, newest_first, include_docs, size, slices
            ),
            size,
            slices,
        )
    scan = _Scan(known, db, form, type, start_ms, end_ms, newest_first, include_docs, policy)
    return WindowRead(scan, size, slices)


def scan_pages(
    known: FactsCache,
    db: str,
    form: IdForm,
    doc_type: str | None,
    start_ms: int,
    end_ms: int,
    policy: RetryPolicy,
    *,
    include_docs: bool,
    after: str | None = None,
    attachments: bool = False,
    conflicts: bool = False,
    batch_size: int = DEFAULT_PAGE_SIZE,
    parallel: int = DEFAULT_PARALLEL,
) -> Program[None]:
    """Emits the pages of a window of ``form`` and ``doc_type`` from ``start_ms`` to
    ``end_ms``, oldest first, as :func:`window` reads them (``parallel`` time slices at a
    time): its documents, or with ``include_docs=False`` its rows. ``after`` (an
    id handed out before, a checkpoint's) resumes just past it (refused when it is no id of
    the window's type and form: :func:`~couchids.core.keys.resume_point`); ``attachments``
    includes attachment data in the documents, ``conflicts`` their ``_conflicts``. What
    counting, export and archive read."""
    scan = _Scan(
        known,
        db,
        form,
        doc_type,
        start_ms,
        end_ms,
        False,
        include_docs,
        policy,
        after=after,
        attachments=attachments,
        conflicts=conflicts,
    )
    return scan.run(batch_size, batch_size, prefetch=True, parallel=parallel)


def _all_types_window(
    known: FactsCache,
    db: str,
    policy: RetryPolicy,
    start_ms: int,
    end_ms: int,
    form: IdForm,
    newest_first: bool,
    include_docs: bool,
    size: int,
    slices: int,
) -> Program[None]:
    types = yield from types_present(db, form.separator, policy)
    streams = [
        _Scan(
            known, db, form, t, start_ms, end_ms, newest_first, include_docs, policy.renewed()
        ).run(size, size, prefetch=True, parallel=slices)
        for t in types
    ]
    yield from merge_by_time(streams, form, newest_first=newest_first, include_docs=include_docs)


def latest(
    known: FactsCache,
    db: str,
    n: int,
    *,
    type: str | AllTypes | None,
    form: IdForm,
    include_docs: bool,
    timeout: float | None,
) -> Program[list[Row]]:
    """The program of :meth:`couchids.Database.latest` (see there): returns the newest ``n``.

    The arguments are checked now, before the program runs.
    """
    policy = RetryPolicy.checked(0, 0, timeout, "latest")
    check_count("n", n, 0)
    _check_scan(form, include_docs)
    return newest(known, db, n, type=type, form=form, include_docs=include_docs, policy=policy)


def newest(
    known: FactsCache,
    db: str,
    n: int,
    *,
    type: str | AllTypes | None,
    form: IdForm,
    include_docs: bool,
    policy: RetryPolicy,
    start_ms: int = 0,
    end_ms: int = MAX_MS + 1,
) -> Program[list[Row]]:
    """The newest ``n`` documents (or rows) of ``type`` in ``db`` whose id holds a time
    ``start_ms <= t < end_ms``, newest first: :func:`latest` within a window, for the
    operation of ``policy`` (a series reads each period's database within its period). The
    caller checks the arguments (as :func:`latest` does)."""
    if type is ALL_TYPES:
        return _all_types_latest(known, db, n, form, include_docs, policy, start_ms, end_ms)
    scan = _Scan(known, db, form, type, start_ms, end_ms, True, include_docs, policy)
    return _first(scan.run(n, max(n, LATEST_REFILL), prefetch=False), n)


def _all_types_latest(
    known: FactsCache,
    db: str,
    n: int,
    form: IdForm,
    include_docs: bool,
    policy: RetryPolicy,
    start_ms: int,
    end_ms: int,
) -> Program[list[Row]]:
    if n == 0:
        return []
    types = yield from types_present(db, form.separator, policy)

    def newest(t: str) -> Program[list[Row]]:
        scan = _Scan(known, db, form, t, start_ms, end_ms, True, include_docs, policy.renewed())
        return _first(scan.run(n, max(n, LATEST_REFILL), prefetch=False), n)

    each = yield from each_type(newest, types)
    merged = merge_by_time(
        [_emitting(rows) for rows in each], form, newest_first=True, include_docs=include_docs
    )
    return (yield from _first(merged, n))


def _emitting(rows: list[Row]) -> Program[None]:
    yield Emit(rows)


def _first(pages: Program[None], n: int) -> Program[list[Row]]:
    """The first ``n`` rows ``pages`` emits; it is closed then, asking for no more."""
    out: list[Row] = []
    puller = Puller(pages)
    try:
        while len(out) < n:
            page = yield from puller.next()
            if page is END:
                break
            out.extend(page[: n - len(out)])
    finally:
        puller.close()
    return out


def _check_scan(form: IdForm, include_docs: bool) -> None:
    check_flag("include_docs", include_docs)
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(
            f"form={form!r}: pass an IdForm such as couchids.KUUID or couchids.V7S"
        )
    check_time_form(form)


@dataclass(frozen=True)
class Opening:
    """The answer to a scan's first page request, read ahead of the scan (``_Scan.open``):
    ``request`` is ``(start_key, end_key, limit)`` (``None`` for a window holding no id), and
    a scan uses ``rows`` only when its own first request is that one."""

    request: PageRequest | None
    rows: list[Row]


class _Reading(NamedTuple):
    """How a scan reads (``_Scan._reading``)."""

    request: PageRequest
    fetch: RangeFetch
    pages: Callable[[list[Row] | None], Program[None]]


class _Scan:
    """One query: the fixed options of its requests, and the rows they return. ``after`` (an
    id handed out before) resumes just past it; ``attachments`` adds attachment data,
    ``conflicts`` the documents' ``_conflicts``."""

    def __init__(
        self,
        known: FactsCache,
        db: str,
        form: IdForm,
        doc_type: str | None,
        start_ms: int,
        end_ms: int,
        newest_first: bool,
        include_docs: bool,
        policy: RetryPolicy,
        *,
        after: str | None = None,
        attachments: bool = False,
        conflicts: bool = False,
    ) -> None:
        _check_scan(form, include_docs)
        self.after, self.attachments, self.conflicts = after, attachments, conflicts
        self.known, self.db, self.form, self.doc_type = known, db, form, doc_type
        self.include_docs, self.policy = include_docs, policy
        self.start_ms, self.end_ms = start_ms, end_ms
        self.keys: KeyRange | None = window_keys(form, doc_type, start_ms, end_ms)
        self.newest_first = newest_first
        self._wanted = matcher(form, self.keys)

    def run(
        self,
        first_limit: int,
        next_limit: int,
        *,
        prefetch: bool,
        parallel: int = 1,
        opened: Opening | None = None,
    ) -> Program[None]:
        """Emits the wanted rows (or documents), a page at a time; ``opened`` is the answer
        to the first request, read ahead (:meth:`open`)."""
        reading = yield from self._reading(first_limit, next_limit, prefetch, parallel)
        if reading is None:
            return
        first = opened.rows if opened is not None and opened.request == reading.request else None
        puller = Puller(reading.pages(first))
        try:
            while True:
                page = yield from puller.next()
                if page is END:
                    return
                wanted = self._wanted_of(page)
                # The page's rows hold its documents, and the program that read it holds
                # the page until the next one comes: emptied, it keeps no document alive
                # once the caller is done with it.
                page.clear()
                yield Emit(wanted)
                del wanted
        finally:
            puller.close()

    def open(self, first_limit: int, next_limit: int, *, parallel: int = 1) -> Program[Opening]:
        """Reads the answer to the first request :meth:`run` (with the same arguments) sends,
        ahead of it: a series reads the next period's database so while the caller works
        through the one before. A missing database raises, as in :meth:`run`."""
        reading = yield from self._reading(first_limit, next_limit, True, parallel)
        if reading is None:
            return Opening(None, [])
        return Opening(reading.request, (yield from reading.fetch(*reading.request)))

    def _reading(
        self, first_limit: int, next_limit: int, prefetch: bool, parallel: int
    ) -> Program[_Reading | None]:
        """How the scan reads: its first page request, and its pages given the answer to
        that request (read ahead, or ``None``); ``None`` when the window holds no id."""
        # Learning whether the database is partitioned also proves it exists, so an empty
        # answer is never a missing database.
        facts = yield from database_facts(self.known, self.db, self.policy)
        if self.keys is None:
            return None
        partition = partition_of(self.keys.prefix) if facts.partitioned else None
        if partition is not None:
            first_limit = min(first_limit, PARTITION_QUERY_LIMIT - 1)
            next_limit = min(next_limit, PARTITION_QUERY_LIMIT - 1)
        first_key, last_key, fetch = self._fetcher(self.keys, partition)
        if parallel > 1 or self.after is not None:
            plan = SlicePlan(
                self.form, self.doc_type, self.newest_first, self.start_ms, self.end_ms
            )
            if self.after is not None:
                what = f"an id of the window ({self.form} ids of {self.keys.prefix or 'no type'})"
                descending = self.newest_first != self.form.reverse
                # A checkpoint of another type or form is refused; one outside the window is
                # clamped to it by the plan.
                ours = self.form.matcher(self.keys.prefix)
                resume_point(self.keys, self.after, descending=descending, wanted=ours, what=what)
                plan.resume(self.after, self.keys.prefix)
            prefix, wanted = self.keys.prefix, self._wanted
            request = first_request(plan, first_limit)
            if request is None:
                return None
            return _Reading(
                request,
                fetch,
                lambda first: sliced_pages(
                    fetch, plan, parallel, first_limit, wanted, prefix, first
                ),
            )
        piece = Slice(first_key, last_key)
        request = first_request(piece, first_limit)
        assert request is not None  # a slice is a request
        return _Reading(
            request,
            fetch,
            lambda first: keyset(fetch, piece, first_limit, next_limit, prefetch, first),
        )

    def _fetcher(self, keys: KeyRange, partition: str | None) -> tuple[str, str, RangeFetch]:
        """The keys the scan starts and ends at, and a function fetching a page of keys."""
        first, last, descending = keys.bounds(newest_first=self.newest_first, form=self.form)

        def fetch(start_key: str, end_key: str, limit: int) -> Program[list[Row]]:
            options = {
                "start_key": start_key,
                "end_key": end_key,
                "limit": limit,
                "descending": descending,
                "include_docs": self.include_docs,
            }
            if self.attachments:
                options["attachments"] = True
            if self.conflicts:
                options["conflicts"] = True
            # The first page shares the deadline of the database lookup; later pages have
            # their own.
            policy = self.policy if start_key == first else self.policy.renewed()
            return fetch_page(self.db, partition, options, self.include_docs, policy)

        return first, last, fetch

    def _wanted_of(self, rows: list[Row]) -> list[Row]:
        """The wanted rows of a page (their documents, when asked for)."""
        wanted = self._wanted
        if self.include_docs:
            # A document deleted between the index read and the document read has no doc.
            return [row["doc"] for row in rows if wanted(row["id"]) and row["doc"] is not None]
        return [row for row in rows if wanted(row["id"])]


def matcher(form: IdForm, keys: KeyRange | None) -> Any:
    """Whether a row's id is the range's prefix followed by an id of ``form``, inside the
    range: ``low <= id < high``, checked here whatever the server answered.

    An id of the form inside the window's exact key range holds a time inside the window
    (tests/test_keys.py proves it for every form), so the id's time need not be decoded:
    two comparisons and one regex per row do, and the range's high bound itself, which
    ``inclusive_end`` lets in, is dropped.
    """
    if keys is None:
        return form.matcher("")
    wanted, low, high = form.matcher(keys.prefix), keys.low, keys.high
    return lambda doc_id: low <= doc_id < high and wanted(doc_id)


def partition_of(prefix: str) -> str | None:
    """The partition ids starting with ``prefix`` live in: the part before the first colon,
    or ``None`` when the prefix has no colon (such ids cannot be in a partitioned database,
    so the query reads the global index).

    >>> partition_of("sensor-260:reading-"), partition_of("user:"), partition_of("user-")
    ('sensor-260', 'user', None)
    """
    partition, colon, _ = prefix.partition(TYPE_SEPARATOR)
    return partition if colon and partition else None
