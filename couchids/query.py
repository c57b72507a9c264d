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

from .alltypes import each_type, merge_by_time, types_present
from .constants import TYPE_SEPARATOR
from .doctypes import ALL_TYPES, AllTypes
from .errors import InvalidArgumentError, InvalidTimeError
from .forms import KUUID, IdForm
from .keys import KeyRange, check_time_form, window_keys
from .pages import DEFAULT_PARALLEL, RangeFetch, SlicePlan, fetch_page, sliced_pages
from .server import (
    DEFAULT_TIMEOUT,
    RetryPolicy,
    check_client,
    check_db,
    is_partitioned,
)
from .times import MAX_MS, TimeLike, to_datetime, to_ms

__all__ = ["DEFAULT_PAGE_SIZE", "PARTITION_QUERY_LIMIT", "latest", "window"]

#: Rows a page of :func:`~couchids.window` asks for by default. Two pages are held at a time,
#: so this bounds memory; fewer, larger requests cost less per row (bench/bench_query.py: at 2000 a
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
    type: str | AllTypes | None = None,
    form: IdForm = KUUID,
    newest_first: bool = True,
    include_docs: bool = True,
    page_size: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
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
        type: only ids ``type:<id>`` (or ``type<separator><id>`` for the form's separator);
            ``None`` for untyped ids only; :data:`couchids.ALL_TYPES` for the ids of every
            type, merged by time (the types are found with one request each; see
            :mod:`couchids.alltypes`). ``None`` keeps meaning "untyped" rather than
            "everything": a database may hold both, and an all-types query reads one request
            per type, a cost a caller should choose by name.
        form: the id layout the database uses (:data:`couchids.KUUID` and friends).
        newest_first: the order of the answer.
        include_docs: yield documents; ``False`` yields ``_all_docs`` rows
            (``{"id", "key", "value"}``).
        page_size: rows per request (default :data:`~couchids.query.DEFAULT_PAGE_SIZE`, 2000); a
            partition query asks for at most 1999, so that no request's ``limit`` (the next
            pages ask for one more row) exceeds Cloudant's 2000.
        timeout: seconds each request may take (the first, which looks the database up, and
            each page), or ``None`` for the client's own timeouts; default
            ``DEFAULT_TIMEOUT`` (60).
        parallel: how many time slices of the window are read at a time (default
            ``couchids.pages.DEFAULT_PARALLEL``); the documents still come in order, and
            memory stays at about ``parallel + 2`` pages. 1 reads page after page.

    Raises:
        InvalidTimeError: unreadable times, or ``end`` before ``start``.
        InvalidTypeError: ``type`` breaks the type rule.
        InvalidArgumentError: not a ``CloudantV1`` client, a bad database name, a
            ``newest_first``/``include_docs`` that is not a bool, or a bad ``page_size``,
            ``form`` or ``timeout``.
        ServerError: (subclasses ``DatabaseNotFoundError``, ``UnauthorizedError``,
            ``RateLimitedError``, ``ServerTimeoutError``) when the server fails or answers
            something that is not CouchDB's, also in the middle of a stream.

    Example::

        for doc in couchids.window(client, "events", "2024-05-01", "2024-05-02", type="click"):
            print(doc["_id"])
    """
    policy = RetryPolicy.checked(0, 0, timeout, "window")
    start_ms, end_ms = to_ms(start), to_ms(end)
    if end_ms < start_ms:
        raise InvalidTimeError(
            f"the window ends ({_iso(end_ms)}) before it starts ({_iso(start_ms)}); "
            "pass start <= end"
        )
    size = DEFAULT_PAGE_SIZE if page_size is None else _check_count("page_size", page_size, 1)
    _check_flag("newest_first", newest_first)
    slices = DEFAULT_PARALLEL if parallel is None else _check_count("parallel", parallel, 1)
    if type is ALL_TYPES:
        client, db = check_client(client), check_db(db)
        types = types_present(client, db, check_time_form(form).separator, policy=policy)
        streams = [
            window(
                client,
                db,
                start_ms,
                end_ms,
                type=t,
                form=form,
                newest_first=newest_first,
                include_docs=include_docs,
                page_size=size,
                timeout=timeout,
                parallel=slices,
            )
            for t in types
        ]
        return merge_by_time(streams, form, newest_first=newest_first, include_docs=include_docs)
    scan = _Scan(client, db, form, type, start_ms, end_ms, newest_first, include_docs, policy)
    return scan.run(size, size, prefetch=True, parallel=slices)


def latest(
    client: CloudantV1,
    db: str,
    n: int = 10,
    *,
    type: str | AllTypes | None = None,
    form: IdForm = KUUID,
    include_docs: bool = True,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> list[Row]:
    """The newest ``n`` documents (fewer if fewer exist), newest first.

    One request once the client has seen the database, unless foreign ids sit among the
    newest: those are skipped and do not shorten the answer.

    With ``type=ALL_TYPES``: the newest ``n`` across every type, one request to find each
    type and one to read its newest ``n``.

    Args: as :func:`window`; ``n`` is a non-negative int; ``timeout`` bounds the whole call
        (each type's query, with ``ALL_TYPES``).

    Raises: as :func:`window`.

    Example::

        newest = couchids.latest(client, "events", 5, type="click")
        [doc["_id"] for doc in newest]  # ['click:001r31et...', ...]
        couchids.latest(client, "events", 5, type=couchids.ALL_TYPES)  # any type
    """
    policy = RetryPolicy.checked(0, 0, timeout, "latest")
    _check_count("n", n, 0)
    if type is ALL_TYPES:
        client, db = check_client(client), check_db(db)
        if n == 0:
            return []
        types = types_present(client, db, check_time_form(form).separator, policy=policy)
        each = each_type(
            lambda t: latest(
                client, db, n, type=t, form=form, include_docs=include_docs, timeout=timeout
            ),
            types,
        )
        merged = merge_by_time(each, form, newest_first=True, include_docs=include_docs)
        return [row for _, row in zip(range(n), merged, strict=False)]
    scan = _Scan(client, db, form, type, 0, MAX_MS + 1, True, include_docs, policy)
    if n == 0:
        return []
    out = []
    for row in scan.run(n, max(n, _LATEST_REFILL), prefetch=False):
        out.append(row)
        if len(out) == n:
            break
    return out


def _iso(ms: int) -> str:
    return to_datetime(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name}={value!r}: must be True or False")


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
        policy: RetryPolicy,
    ) -> None:
        client, db = check_client(client), check_db(db)
        _check_flag("include_docs", include_docs)
        if not isinstance(form, IdForm):
            raise InvalidArgumentError(
                f"form={form!r}: pass an IdForm such as couchids.KUUID or couchids.V7S"
            )
        check_time_form(form)
        self.client, self.db, self.form, self.doc_type = client, db, form, doc_type
        self.include_docs, self.policy = include_docs, policy
        self.start_ms, self.end_ms = start_ms, end_ms
        self.keys: KeyRange | None = window_keys(form, doc_type, start_ms, end_ms)
        self.newest_first = newest_first
        self._wanted = _matcher(form, self.keys)

    def run(
        self, first_limit: int, next_limit: int, *, prefetch: bool, parallel: int = 1
    ) -> Iterator[Row]:
        # Learning whether the database is partitioned also proves it exists, so an empty
        # answer is never a missing database.
        partition = None
        if is_partitioned(self.client, self.db, self.policy) and self.keys is not None:
            partition = partition_of(self.keys.prefix)
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
            # The first page shares the deadline of the database lookup; later pages have
            # their own.
            policy = self.policy if start_key == first else self.policy.renewed()
            return fetch_page(self.client, self.db, partition, options, self.include_docs, policy)

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
                    # A document deleted between the index read and the document read.
                    if wanted(row["id"]) and row["doc"] is not None:
                        yield row["doc"]
            else:
                for row in rows:
                    if wanted(row["id"]):
                        yield row


def _matcher(form: IdForm, keys: KeyRange | None) -> Match:
    """Whether a row's id is the range's prefix followed by an id of ``form``.

    Rows come from the window's exact key range, and an id of the form inside that range
    holds a time inside the window (tests/test_keys.py proves it for every form), so the
    id's time need not be decoded again: one regex per row does, and the range's high bound
    itself, which ``inclusive_end`` lets in, is dropped.
    """
    if keys is None:
        return form.matcher("")
    wanted, high = form.matcher(keys.prefix), keys.high
    return lambda doc_id: doc_id != high and wanted(doc_id)


def partition_of(prefix: str) -> str | None:
    """The partition ids starting with ``prefix`` live in: the part before the first colon,
    or ``None`` when the prefix has no colon (such ids cannot be in a partitioned database,
    so the query reads the global index).

    >>> partition_of("sensor-260:reading-"), partition_of("user:"), partition_of("user-")
    ('sensor-260', 'user', None)
    """
    partition, colon, _ = prefix.partition(TYPE_SEPARATOR)
    return partition if colon and partition else None
