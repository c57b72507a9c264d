"""Queries on ``_all_docs``: the newest documents, and the documents of a time window.

The key range comes from :mod:`couchids.keys`; this module sends it through the caller's
``ibmcloudant`` client, keeps only rows whose id is of the requested form and type (never a
design document, another type, or a foreign id that happens to sort inside the range), and
pages with keyset paging: each page starts at the last id of the one before (CouchDB's
``startkey`` is inclusive, so that row comes back and is dropped). Never ``skip``: rows shift
under concurrent inserts and a large ``skip`` is slow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ibmcloudant.cloudant_v1 import CloudantV1

from .errors import InvalidArgumentError, InvalidTimeError
from .forms import KUUID, IdForm
from .keys import KeyRange, window_keys
from .pages import DEFAULT_PARALLEL, RangeFetch, SlicePlan, fetch_page, sliced_pages
from .server import is_partitioned
from .times import MAX_MS, TimeLike, to_ms

__all__ = ["DEFAULT_PAGE_SIZE", "PARTITION_QUERY_LIMIT", "latest", "window"]

#: Rows a page of :func:`window` asks for by default. Two pages are held at a time, so this
#: bounds memory; fewer, larger requests cost less per row (bench/bench_query.py: at 2000 a
#: 50,000-document window takes about as long as one unpaged request, in a fifteenth of its
#: memory).
DEFAULT_PAGE_SIZE = 2000
#: Cloudant answers at most this many rows to one partition query.
PARTITION_QUERY_LIMIT = 2000
#: After a first page of ``n`` rows that held foreign ids, :func:`latest` reads pages of this.
_LATEST_REFILL = 100

Row = dict[str, Any]
Fetch = Callable[[str, int], list[Row]]
Match = Callable[[str], object]


def window(
    client: CloudantV1,
    db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    newest_first: bool = True,
    include_docs: bool = True,
    page_size: int | None = None,
    parallel: int | None = None,
) -> Iterator[Row]:
    """Stream the documents whose id holds a time ``t`` with ``start <= t < end``.

    ``t`` is the time at the id's precision: a second-precision id made at 12:00:00.700 holds
    12:00:00.

    The same documents come back in either direction. Memory stays at two pages: while the
    caller works through one page, the next is being fetched.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        start, end: any time couchids accepts (``None`` is now); ``end`` is exclusive.
        type: only ids ``type:<id>``; ``None`` for untyped ids only.
        form: the id layout the database uses (:data:`couchids.KUUID` and friends).
        newest_first: the order of the answer.
        include_docs: yield documents; ``False`` yields ``_all_docs`` rows
            (``{"id", "key", "value"}``).
        page_size: rows per request (default :data:`DEFAULT_PAGE_SIZE`, 2000); a
            partition query asks for at most 1999, so that no request's ``limit`` (the next
            pages ask for one more row) exceeds Cloudant's 2000.
        parallel: how many time slices of the window are read at a time (default
            :data:`couchids.pages.DEFAULT_PARALLEL`); the documents still come in order, and
            memory stays at about ``parallel + 2`` pages. 1 reads page after page.

    Raises:
        InvalidTimeError: unreadable times, or ``end`` before ``start``.
        InvalidTypeError: ``type`` breaks the type rule.
        InvalidArgumentError: a bad ``page_size`` or ``form``.
        ServerError: (subclasses ``DatabaseNotFoundError``, ``UnauthorizedError``,
            ``RateLimitedError``) when the server fails, also in the middle of a stream.

    Example::

        for doc in couchids.window(client, "events", "2024-05-01", "2024-05-02", type="click"):
            print(doc["_id"])
    """
    start_ms, end_ms = to_ms(start), to_ms(end)
    if end_ms < start_ms:
        raise InvalidTimeError(
            f"the window ends ({end!r}) before it starts ({start!r}); pass start <= end"
        )
    size = DEFAULT_PAGE_SIZE if page_size is None else _check_count("page_size", page_size, 1)
    slices = DEFAULT_PARALLEL if parallel is None else _check_count("parallel", parallel, 1)
    return _Scan(client, db, form, type, start_ms, end_ms, newest_first, include_docs).run(
        size, size, prefetch=True, parallel=slices
    )


def latest(
    client: CloudantV1,
    db: str,
    n: int = 10,
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    include_docs: bool = True,
) -> list[Row]:
    """The newest ``n`` documents (fewer if fewer exist), newest first.

    One request once the client has seen the database, unless foreign ids sit among the
    newest: those are skipped and do not shorten the answer.

    Args: as :func:`window`; ``n`` is a non-negative int.

    Raises: as :func:`window`.

    Example::

        newest = couchids.latest(client, "events", 5, type="click")
        [doc["_id"] for doc in newest]  # ['click:001r31et...', ...]
    """
    _check_count("n", n, 0)
    if n == 0:
        return []
    scan = _Scan(client, db, form, type, 0, MAX_MS + 1, True, include_docs)
    out = []
    for row in scan.run(n, max(n, _LATEST_REFILL), prefetch=False):
        out.append(row)
        if len(out) == n:
            break
    return out


def _check_count(name: str, value: int, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidArgumentError(f"{name}={value!r}: must be an int >= {least}")
    return value


class _Scan:
    """One query: the fixed options of its requests, and the rows they return."""

    def __init__(
        self,
        client: CloudantV1,
        db: str,
        form: IdForm,
        doc_type: str | None,
        start_ms: int,
        end_ms: int,
        newest_first: bool,
        include_docs: bool,
    ) -> None:
        if not isinstance(form, IdForm):
            raise InvalidArgumentError(
                f"form={form!r}: pass an IdForm such as couchids.KUUID or couchids.V7S"
            )
        self.client, self.db, self.form, self.doc_type = client, db, form, doc_type
        self.include_docs = include_docs
        self.start_ms, self.end_ms = start_ms, end_ms
        self.keys: KeyRange | None = window_keys(form, doc_type, start_ms, end_ms)
        self.newest_first = newest_first
        self._wanted = _matcher(form, self.keys.prefix if self.keys else "")

    def run(
        self, first_limit: int, next_limit: int, *, prefetch: bool, parallel: int = 1
    ) -> Iterator[Row]:
        # Learning whether the database is partitioned also proves it exists, so an empty
        # answer is never a missing database.
        partition = self.doc_type if is_partitioned(self.client, self.db) else None
        if partition is not None:
            first_limit = min(first_limit, PARTITION_QUERY_LIMIT - 1)
            next_limit = min(next_limit, PARTITION_QUERY_LIMIT - 1)
        if self.keys is None:
            return iter(())
        first_key, last_key, fetch = self._fetcher(self.keys, partition)
        if parallel > 1:
            plan = SlicePlan(
                self.form, self.doc_type, self.newest_first, self.start_ms, self.end_ms
            )
            pages = sliced_pages(fetch, plan, parallel, first_limit, self._wanted, self.keys.prefix)
            return self._hand_out(pages)
        return self._rows(
            lambda key, limit: fetch(key, last_key, limit),
            first_key,
            first_limit,
            next_limit,
            prefetch,
        )

    def _fetcher(self, keys: KeyRange, partition: str | None) -> tuple[str, str, RangeFetch]:
        """The keys the scan starts and ends at, and a function fetching a page of keys."""
        first, last, descending = keys.bounds(newest_first=self.newest_first, form=self.form)

        def fetch(start_key: str, end_key: str, limit: int) -> list[Row]:
            options = {
                "start_key": start_key,
                "end_key": end_key,
                "limit": limit,
                "descending": descending,
                "include_docs": self.include_docs,
            }
            return fetch_page(self.client, self.db, partition, options, self.include_docs)

        return first, last, fetch

    def _rows(
        self, fetch: Fetch, first_key: str, first_limit: int, next_limit: int, prefetch: bool
    ) -> Iterator[Row]:
        executor = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="couchids-page")
            if prefetch
            else None
        )
        try:
            key: str | None = first_key
            limit = first_limit
            pending = executor.submit(fetch, first_key, limit) if executor else None
            after = None
            while key is not None:
                rows = pending.result() if pending is not None else fetch(key, limit)
                more = len(rows) == limit
                if after is not None and rows and rows[0]["id"] == after:
                    rows = rows[1:]
                # A full page may have more after it: the next starts at its last id.
                after = key = rows[-1]["id"] if more and rows else None
                limit = next_limit + 1
                pending = None
                if key is not None and executor is not None:
                    pending = executor.submit(fetch, key, limit)
                yield from self._hand_out((rows,))
        finally:
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)

    def _hand_out(self, pages: Iterable[list[Row]]) -> Iterator[Row]:
        """The wanted rows of ``pages`` (their documents, when asked for)."""
        wanted = self._wanted
        for rows in pages:
            if self.include_docs:
                for row in rows:
                    if wanted(row["id"]):
                        yield row["doc"]
            else:
                for row in rows:
                    if wanted(row["id"]):
                        yield row


def _matcher(form: IdForm, prefix: str) -> Match:
    """Whether a row's id is ``prefix`` followed by an id of ``form``.

    Rows come from the window's exact key range, and an id of the form inside that range
    holds a time inside the window (tests/test_keys.py proves it for every form), so the
    id's time need not be decoded again: one regex per row does.
    """
    return form.id_pattern(prefix).fullmatch
