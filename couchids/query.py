"""Queries on ``_all_docs``: the newest documents, and the documents of a time window.

The blocking API: each function checks its client and database and runs the program of
:mod:`couchids.core.windows` (which says what is asked and kept) through the caller's
``ibmcloudant`` client (:mod:`couchids.server`). :mod:`couchids.aio` runs the same programs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ibmcloudant.cloudant_v1 import CloudantV1

from .core import alltypes, windows
from .core.pages import DEFAULT_PARALLEL, REMOTE_PARALLEL, handed_on
from .core.protocol import DEFAULT_TIMEOUT, RetryPolicy
from .core.windows import DEFAULT_PAGE_SIZE, PARTITION_QUERY_LIMIT
from .doctypes import AllTypes
from .forms import KUUID, IdForm
from .server import check_client, check_db, known_facts, run, stream
from .times import TimeLike

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_PARALLEL",
    "PARTITION_QUERY_LIMIT",
    "REMOTE_PARALLEL",
    "latest",
    "types_present",
    "window",
]

Row = dict[str, Any]


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
            :mod:`couchids.core.alltypes`). ``None`` keeps meaning "untyped" rather than
            "everything": a database may hold both, and an all-types query reads one request
            per type, a cost a caller should choose by name.
        form: the id layout the database uses (:data:`couchids.KUUID` and friends).
        newest_first: the order of the answer.
        include_docs: yield documents; ``False`` yields ``_all_docs`` rows
            (``{"id", "key", "value"}``).
        page_size: rows per request (default :data:`~couchids.query.DEFAULT_PAGE_SIZE`, 2000); a
            partition query asks for at most 1999, so that no request's ``limit`` (the next
            pages ask for one more row) exceeds Cloudant's 2000. With ``parallel`` above 1
            the first request asks for half a page, and so do the time slices after it.
        timeout: seconds each request may take (the first, which looks the database up, and
            each page), or ``None`` for the client's own timeouts; default
            ``DEFAULT_TIMEOUT`` (60).
        parallel: how many time slices of the window are read at a time (default
            ``couchids.query.DEFAULT_PARALLEL``); the documents still come in order, and
            memory stays at about ``parallel + 2`` pages; a document handed out is not kept.
            1 reads page after page. For a server tens of milliseconds away,
            ``couchids.query.REMOTE_PARALLEL`` (8) hides more of the round trips.

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
    pages = window_pages(
        client,
        db,
        start,
        end,
        type=type,
        form=form,
        newest_first=newest_first,
        include_docs=include_docs,
        page_size=page_size,
        timeout=timeout,
        parallel=parallel,
    )
    return _flat(pages)


def window_pages(
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
) -> Iterator[list[Row]]:
    """:func:`window`'s answer a page at a time: each a list of documents (or rows) that is
    the caller's to keep or empty. For a caller that handles whole pages (the ``couchids
    window`` command writes each as one block); the first page is read by the call."""
    client, db = check_client(client), check_db(db)
    program = windows.window(
        known_facts(client),
        db,
        start,
        end,
        type=type,
        form=form,
        newest_first=newest_first,
        include_docs=include_docs,
        page_size=page_size,
        timeout=timeout,
        parallel=parallel,
    )
    pages = stream(client, program)
    # The first page is read now, so that a missing database or a refused request is raised
    # by the call, not by the first step of the loop over its answer.
    first = next(pages, None)
    return _following(first, pages)


def _following(first: list[Row] | None, pages: Iterator[list[Row]]) -> Iterator[list[Row]]:
    """``first``, then the rest of ``pages``."""
    if first is not None:
        yield first
        del first
        yield from pages


def types_present(
    client: CloudantV1, db: str, separator: str = ":", *, timeout: float | None = DEFAULT_TIMEOUT
) -> list[str]:
    """The types of the ids ``<type><separator>…`` in ``db``, in ``_all_docs`` order: about one
    ``_all_docs`` request per type, never the type's rows (see :mod:`couchids.core.alltypes`).

    A type is listed when some id starts with it and the separator, whatever follows.

    Raises:
        ServerError: (or a subclass, such as ``DatabaseNotFoundError``) the server failed.

    Example::

        couchids.query.types_present(client, "shop")  # ['invoice', 'order', 'user']
    """
    client, db = check_client(client), check_db(db)
    policy = RetryPolicy.checked(0, 0, timeout, "types_present")
    return run(client, alltypes.types_present(db, separator, policy))


def _flat(pages: Iterator[list[Row]]) -> Iterator[Row]:
    """The rows of the pages, in order. Each is let go of as it is handed on, so the page
    being worked through holds only the rows still to come."""
    for page in pages:
        yield from handed_on(page)


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
    client, db = check_client(client), check_db(db)
    program = windows.latest(
        known_facts(client), db, n, type=type, form=form, include_docs=include_docs, timeout=timeout
    )
    return run(client, program)
