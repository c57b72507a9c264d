"""The programs of :meth:`couchids.Database.latest` and :meth:`~couchids.Database.window`.

The key range comes from :mod:`couchids.core.keys`; only rows whose id is of the requested form
and type inside that range are kept (never a design document, another type, or a foreign id
that sorts inside the range). Pages use keyset paging: each starts at the last id of the one
before (``startkey`` is inclusive, so that row comes back and is dropped), never ``skip``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from couchids.core.alltypes import each_type, merge_by_time, types_present
from couchids.core.arguments import count as check_count
from couchids.core.arguments import flag as check_flag
from couchids.core.arguments import window as check_window
from couchids.core.defaults import DEFAULT_PAGE_SIZE
from couchids.core.effects import END, Emit, Program, Puller
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import KeyRange, check_time_form, in_window, resume_point, window_keys
from couchids.core.options import Options
from couchids.core.pages import (
    DEFAULT_PARALLEL,
    PageRequest,
    RangeFetch,
    Slice,
    SlicePlan,
    all_docs,
    keyset,
    sliced_pages,
)
from couchids.core.policy import RetryPolicy
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
        """The answer to the first page request of :meth:`pages`, read ahead (a series reads
        the next period's database so while the caller works through the one before); a
        missing database raises. ``None`` for a window of every type."""
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
    options: Options,
) -> WindowRead:
    """The window of :meth:`couchids.Database.window` (see there); arguments checked now."""
    policy = options.policy("window")
    start_ms, end_ms = check_window(start, end)
    size, slices = options.batch("window"), options.slices("window")
    check_flag("newest_first", newest_first)
    if type is not ALL_TYPES:
        scan = _Scan(known, db, form, type, start_ms, end_ms, newest_first, include_docs, policy)
        return WindowRead(scan, size, slices)
    _check_scan(form, include_docs)

    def every_type() -> Program[None]:
        types = yield from types_present(db, form.separator, policy)
        streams = [
            _Scan(
                known, db, form, t, start_ms, end_ms, newest_first, include_docs, policy.renewed()
            ).run(size, size, prefetch=True, parallel=slices)
            for t in types
        ]
        yield from merge_by_time(
            streams, form, newest_first=newest_first, include_docs=include_docs
        )

    return WindowRead(every_type, size, slices)


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
    """Emits the pages of a window, oldest first, as :func:`window` reads them: its documents,
    or its rows. ``after`` (a checkpoint's id) resumes just past it
    (:func:`~couchids.core.keys.resume_point`); ``attachments`` and ``conflicts`` add those to
    the documents. What counting, export and archive read."""
    scan = _Scan(known, db, form, doc_type, start_ms, end_ms, False, include_docs, policy)
    scan.after, scan.attachments, scan.conflicts = after, attachments, conflicts
    return scan.run(batch_size, batch_size, prefetch=True, parallel=parallel)


def latest(
    known: FactsCache,
    db: str,
    n: int,
    *,
    type: str | AllTypes | None,
    form: IdForm,
    include_docs: bool,
    options: Options,
) -> Program[list[Row]]:
    """The program of :meth:`couchids.Database.latest` (see there); arguments checked now."""
    policy = options.policy("latest")
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
    ``start_ms <= t < end_ms``, newest first: :func:`latest` within a window, for the operation
    of ``policy``. The caller checks the arguments."""

    def of_type(t: str | None) -> Program[list[Row]]:
        scan = _Scan(known, db, form, t, start_ms, end_ms, True, include_docs, policy)
        scan.renew = False  # the newest n: one deadline for the whole call
        return _first(scan.run(n, max(n, LATEST_REFILL), prefetch=False), n)

    if type is not ALL_TYPES:
        return of_type(type)

    def every_type() -> Program[list[Row]]:
        if n == 0:
            return []
        types = yield from types_present(db, form.separator, policy)
        each = yield from each_type(of_type, types)
        merged = merge_by_time(
            [_emitting(rows) for rows in each], form, newest_first=True, include_docs=include_docs
        )
        return (yield from _first(merged, n))

    return every_type()


def _emitting(rows: list[Row]) -> Program[None]:
    yield Emit(rows)


def _first(pages: Program[None], n: int) -> Program[list[Row]]:
    """The first ``n`` rows ``pages`` emits; it is closed then, asking for no more."""
    out: list[Row] = []
    puller = Puller(pages)
    try:
        while len(out) < n and (page := (yield from puller.next())) is not END:
            out.extend(page[: n - len(out)])
    finally:
        puller.close()
    return out


def _check_scan(form: IdForm, include_docs: bool) -> None:
    check_flag("include_docs", include_docs)
    check_time_form(form)


@dataclass(frozen=True)
class Opening:
    """The answer to a scan's first page request, read ahead (``_Scan.open``): a scan uses
    ``rows`` only when its own first request is ``request`` (``None``: the window holds no id)."""

    request: PageRequest | None
    rows: list[Row]


#: How a scan reads: its first request, a fetch, and its pages given the first answer.
_Reading = tuple[PageRequest, RangeFetch, Callable[[list[Row] | None], Program[None]]]


class _Scan:
    """One query: the fixed options of its requests, and the rows they return. ``after`` (an
    id handed out before) resumes just past it; ``attachments`` and ``conflicts`` add those;
    ``renew`` gives each page after the first a deadline of its own (a stream's)."""

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
    ) -> None:
        _check_scan(form, include_docs)
        self.after: str | None = None
        self.attachments = self.conflicts = False
        self.renew = True
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
        request, _, pages = reading
        first = opened.rows if opened is not None and opened.request == request else None
        puller = Puller(pages(first))
        wanted = self._wanted
        try:
            while (page := (yield from puller.next())) is not END:
                if self.include_docs:
                    # A document deleted between the index read and the document read has no doc.
                    kept = [
                        row["doc"] for row in page if wanted(row["id"]) and row["doc"] is not None
                    ]
                else:
                    kept = [row for row in page if wanted(row["id"])]
                # The reader holds the page until the next one comes: emptied, it keeps no
                # document alive once the caller is done with it.
                page.clear()
                yield Emit(kept)
                del kept
        finally:
            puller.close()

    def open(self, first_limit: int, next_limit: int, *, parallel: int = 1) -> Program[Opening]:
        """Reads the answer to the first request :meth:`run` (with the same arguments) sends;
        a missing database raises, as in :meth:`run`."""
        reading = yield from self._reading(first_limit, next_limit, True, parallel)
        if reading is None:
            return Opening(None, [])
        request, fetch, _ = reading
        return Opening(request, (yield from fetch(*request)))

    def _reading(
        self, first_limit: int, next_limit: int, prefetch: bool, parallel: int
    ) -> Program[_Reading | None]:
        """How the scan reads; ``None`` when the window holds no id."""
        # Learning whether the database is partitioned also proves it exists, so an empty
        # answer is never a missing database.
        facts = yield from database_facts(self.known, self.db, self.policy)
        keys = self.keys
        if keys is None:
            return None
        partition = partition_of(keys.prefix) if facts.partitioned else None
        if partition is not None:
            first_limit = min(first_limit, PARTITION_QUERY_LIMIT - 1)
            next_limit = min(next_limit, PARTITION_QUERY_LIMIT - 1)
        first_key, last_key, descending = keys.bounds(
            newest_first=self.newest_first, form=self.form
        )

        fixed: dict[str, Any] = {"descending": descending, "include_docs": self.include_docs}
        if self.attachments:
            fixed["attachments"] = True
        if self.conflicts:
            fixed["conflicts"] = True

        def fetch(start_key: str, end_key: str, limit: int) -> Program[list[Row]]:
            options = {"start_key": start_key, "end_key": end_key, "limit": limit, **fixed}
            # The first page shares the deadline of the database lookup.
            renew = self.renew and start_key != first_key
            policy = self.policy.renewed() if renew else self.policy
            docs = self.include_docs
            return all_docs(self.db, options, policy, partition=partition, include_docs=docs)

        if parallel == 1 and self.after is None:
            piece = Slice(first_key, last_key)
            return (
                piece.request(first_limit),
                fetch,
                lambda first: keyset(
                    fetch, piece, next_limit, first_limit=first_limit, prefetch=prefetch, rows=first
                ),
            )
        plan = SlicePlan(self.form, self.doc_type, self.newest_first, self.start_ms, self.end_ms)
        if self.after is not None:
            # A checkpoint of another type or form is refused; one outside the window is
            # clamped to it by the plan.
            what = f"an id of the window ({self.form} ids of {keys.prefix or 'no type'})"
            descending = self.newest_first != self.form.reverse
            wanted = in_window(self.form, self.doc_type, 0, MAX_MS + 1)
            resume_point(keys, self.after, descending=descending, wanted=wanted, what=what)
            plan.resume(self.after, keys.prefix)
        request = plan.first_request(first_limit)
        if request is None:
            return None
        return (
            request,
            fetch,
            lambda first: sliced_pages(
                fetch, plan, parallel, first_limit, self._wanted, keys.prefix, first
            ),
        )


def matcher(form: IdForm, keys: KeyRange | None) -> Callable[[str], bool]:
    """Whether a row's id is the range's prefix followed by an id of ``form``, inside the range
    (``low <= id < high``, whatever the server answered). An id of the form inside the exact
    key range holds a time inside the window (tests/test_keys.py proves it for every form), so
    its time need not be decoded."""
    if keys is None:
        return form.matcher("")
    wanted, low, high = form.matcher(keys.prefix), keys.low, keys.high
    return lambda doc_id: low <= doc_id < high and wanted(doc_id)


def partition_of(prefix: str) -> str | None:
    """The partition ids starting with ``prefix`` live in (the part before the first colon), or
    ``None`` when the prefix has no colon (the query reads the global index).

    >>> partition_of("sensor-260:reading-"), partition_of("user:"), partition_of("user-")
    ('sensor-260', 'user', None)
    """
    partition, colon, _ = prefix.partition(TYPE_SEPARATOR)
    return partition if colon and partition else None
