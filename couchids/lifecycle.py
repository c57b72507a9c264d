"""The data lifecycle, blocking: count, histogram, expire, export, archive, follow, rekey.

Each function checks its client and databases and runs the program of its module in
:mod:`couchids.core` (``counting``, ``expiry``, ``exporting``, ``following``, ``rekeying``:
pure, where each operation is described) through the caller's ``ibmcloudant`` client.
:mod:`couchids.aio` runs the same programs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any, TextIO

from ibmcloudant.cloudant_v1 import CloudantV1

from .core import counting, expiry, exporting, following, rekeying
from .core.counting import DEFAULT_WORKERS, Bucket
from .core.expiry import DEFAULT_EXPIRE_BATCH, ExpireReport
from .core.exporting import ArchiveReport, Format
from .core.following import DEFAULT_FOLLOW_BATCH, DEFAULT_WAIT_MS
from .core.pages import DEFAULT_PARALLEL
from .core.protocol import DEFAULT_BACKOFF, DEFAULT_RETRIES, DEFAULT_TIMEOUT, RetryPolicy
from .core.rekeying import DEFAULT_REKEY_BATCH, RekeyReport
from .core.scan import Checkpoint, read_policy
from .core.windows import DEFAULT_PAGE_SIZE
from .forms import KUUID, IdForm
from .server import check_client, check_db, known_facts, run, stream
from .times import TimeLike

__all__ = [
    "archive",
    "count",
    "counted",
    "expire",
    "export",
    "follow",
    "histogram",
    "rekey",
]


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

    On CouchDB and Cloudant this is two ``limit=0`` requests whatever the window holds
    (plus, once per client, ``GET /`` and ``GET /{db}``); on PouchDB Server a scan of the
    window's ids. See the module notes on foreign ids.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        start, end: any time couchids accepts; ``end`` is exclusive.
        type: only ids ``type:<id>``; ``None`` for untyped ids.
        form: the id layout of the database.
        exact: scan the ids and count only ids of ``form`` (foreign ids in the range left
            out).
        timeout: seconds each request may take, retries included (default 60); ``None``
            leaves each request to the client's own timeouts.

    Raises:
        InvalidTimeError: unreadable times, or ``end`` before ``start``.
        InvalidTypeError: a bad ``type``.
        InvalidArgumentError: not a ``CloudantV1`` client, a bad database name, ``form``,
            ``exact`` or ``timeout``.
        ServerError: (and subclasses) the server failed or answered something that is not
            CouchDB's (``ServerTimeoutError`` when ``timeout`` ran out); a missing database is
            ``DatabaseNotFoundError``, never 0.

    Example::

        couchids.count(client, "orders", "2024-05-01", "2024-06-01", type="order")
    """
    return counted(
        read_policy(timeout, "count"), client, db, start, end, type=type, form=form, exact=exact
    )


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
    client, db = check_client(client), check_db(db)
    program = counting.counted(
        known_facts(client), policy, db, start, end, type=type, form=form, exact=exact
    )
    return run(client, program)


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
    CouchDB and Cloudant it costs one ``limit=0`` request per bucket edge, ``workers`` at a
    time; on PouchDB Server (or with ``exact``) one scan of the window's ids.

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
    client, db = check_client(client), check_db(db)
    program = counting.histogram(
        known_facts(client),
        policy,
        db,
        start,
        end,
        every=every,
        type=type,
        form=form,
        exact=exact,
        workers=workers,
    )
    return run(client, program)


def expire(
    client: CloudantV1,
    db: str,
    before: TimeLike,
    *,
    type: str | None,
    form: IdForm = KUUID,
    dry_run: bool = True,
    purge: bool = False,
    batch_size: int = DEFAULT_EXPIRE_BATCH,
    checkpoint: Checkpoint | None = None,
    on_progress: Callable[[ExpireReport], None] | None = None,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> ExpireReport:
    """Delete the documents of ``type`` whose id holds a time before ``before``.

    A dry run (the default) reads the same ids and reports how many would go. Safe to run
    again at any time, also after an interruption: what was deleted is no longer found, and a
    ``checkpoint`` from the earlier run skips what it already reported.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        before: documents made before this time go (exclusive).
        type: the document type (``None`` means untyped ids; it must be given).
        form: the id layout of the database; ids of other forms are never touched.
        dry_run: only count.
        purge: also purge the deleted revisions (CouchDB only; refused on Cloudant and
            PouchDB Server before anything is deleted).
        batch_size: documents per ``_bulk_docs`` request.
        checkpoint: continue after its ``last_id``; it is updated after every batch.
        on_progress: called with the report after every batch (for progress display; an
            exception raised there stops the run, and the checkpoint says where).
        retries, backoff: for lost answers, as in :func:`couchids.create`.
        timeout: seconds each request (a page read, a batch's delete, a purge) may take,
            retries included (default 60); ``None`` leaves it to the client's own timeouts.

    Raises:
        InvalidTimeError, InvalidTypeError, InvalidArgumentError: bad arguments (a client that
            is not ``CloudantV1``, a bad database name, ``dry_run``/``purge`` not a bool), or
            a purge the server cannot do.
        ServerError: (and subclasses) a request failed after the retries, ran out of
            ``timeout``, or was answered with something that is not CouchDB's.

    Example::

        report = couchids.expire(client, "events", "2024-01-01", type="click", dry_run=False)
        print(report.deleted, report.conflicts)
    """
    client, db = check_client(client), check_db(db)
    program = expiry.expire(
        known_facts(client),
        db,
        before,
        type=type,
        form=form,
        dry_run=dry_run,
        purge=purge,
        batch_size=batch_size,
        checkpoint=checkpoint,
        on_progress=on_progress,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
    )
    return run(client, program)


def export(
    client: CloudantV1,
    db: str,
    start: TimeLike,
    end: TimeLike,
    out: TextIO,
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    format: Format = "ndjson",
    fields: Sequence[str] | None = None,
    checkpoint: Checkpoint | None = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    on_progress: Callable[[Checkpoint], None] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    parallel: int = DEFAULT_PARALLEL,
) -> Checkpoint:
    """Write the documents made in ``[start, end)`` to ``out``, oldest first.

    ``ndjson`` writes each document as one line of JSON; ``csv`` writes a header of
    ``fields`` (unless resuming) and one row per document with those top-level fields (other
    values than strings and numbers as JSON, a missing field empty).

    Args:
        client, db, start, end, type, form: as for :func:`couchids.window`.
        out: a text stream (a file opened with ``newline=""`` for CSV).
        format: ``"ndjson"`` or ``"csv"``.
        fields: the CSV columns, such as ``["_id", "total"]`` (required for CSV).
        checkpoint: continue after its ``last_id``; updated after every document written.
        page_size: documents per request.
        on_progress: called with the checkpoint after every page.
        timeout: seconds each request (the database lookup, each page) may take, retries
            included (default 60); ``None`` leaves it to the client's own timeouts.
        parallel: time slices of the window read at a time, as for :func:`couchids.window`
            (default 3; ``couchids.query.REMOTE_PARALLEL`` for a server tens of
            milliseconds away; 1 reads page after page). Documents are written in order.

    Returns:
        :class:`~couchids.Checkpoint`: ``last_id`` is the last document written, ``done`` how many.

    Raises:
        InvalidArgumentError: not a ``CloudantV1`` client, a bad database name, ``format``,
            ``fields``, ``page_size``, ``parallel`` or ``timeout``.
        InvalidTimeError, InvalidTypeError: a bad window or type.
        ServerError: (and subclasses) a request failed after the retries, ran out of
            ``timeout`` or was answered with something that is not CouchDB's; the checkpoint
            says where to continue.

    Example::

        with open("may.ndjson", "w") as out:
            mark = couchids.export(client, "orders", "2024-05-01", "2024-06-01", out,
                                   type="order")
    """
    client, db = check_client(client), check_db(db)
    program = exporting.export(
        known_facts(client),
        db,
        start,
        end,
        out,
        type=type,
        form=form,
        format=format,
        fields=fields,
        checkpoint=checkpoint,
        page_size=page_size,
        on_progress=on_progress,
        timeout=timeout,
        parallel=parallel,
    )
    return run(client, program)


def archive(
    client: CloudantV1,
    db: str,
    target_db: str,
    start: TimeLike,
    end: TimeLike,
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    expire: bool = False,
    checkpoint: Checkpoint | None = None,
    page_size: int = 500,
    on_progress: Callable[[ArchiveReport], None] | None = None,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
    parallel: int = DEFAULT_PARALLEL,
) -> ArchiveReport:
    """Copy the documents made in ``[start, end)`` into ``target_db``; optionally delete them.

    Each document is copied with its revision and attachments (``_bulk_docs`` with
    ``new_edits=false``), so a copy made twice is the same revision, not a conflict: a re-run
    or a resumed run copies nothing twice. With ``expire=True`` each page is deleted from
    ``db`` right after the target stored it, by the revision that was copied: a document
    changed in between is reported in ``expired.conflicts`` and kept.

    Args:
        client, db, start, end, type, form: as for :func:`export`.
        target_db: an existing database to copy into.
        expire: delete the copied documents from ``db``.
        checkpoint, on_progress: as for :func:`export`.
        page_size: documents per request.
        retries, backoff: for lost answers, as in :func:`couchids.create`.
        timeout: seconds each request may take, retries included, as for :func:`export`.
        parallel: as for :func:`export`.

    Raises:
        as :func:`export`; ``DatabaseNotFoundError`` for a missing ``target_db``.

    Example::

        report = couchids.archive(client, "orders", "orders-2023", "2023-01-01",
                                  "2024-01-01", type="order", expire=True)
    """
    client, db, target_db = check_client(client), check_db(db), check_db(target_db)
    program = exporting.archive(
        known_facts(client),
        db,
        target_db,
        start,
        end,
        type=type,
        form=form,
        expire=expire,
        checkpoint=checkpoint,
        page_size=page_size,
        on_progress=on_progress,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
        parallel=parallel,
    )
    return run(client, program)


def follow(
    client: CloudantV1,
    db: str,
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    since: str | int = "now",
    checkpoint: Checkpoint | None = None,
    wait: bool = True,
    batch_size: int = DEFAULT_FOLLOW_BATCH,
    wait_ms: int = DEFAULT_WAIT_MS,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Iterator[dict[str, Any]]:
    """Yield the documents of ``type`` (ids of ``form``) as they are stored, oldest first.

    Each batch of changes is yielded in id-time order, oldest first. Delivery is at least
    once: ``checkpoint.since`` moves past a batch once all of it was yielded, so a caller that
    persists the checkpoint (:meth:`~couchids.Checkpoint.to_json`) and resumes with it sees
    every document, and those of a batch it stopped inside again. A document updated later
    comes again; deleted documents are not yielded.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        type, form: which ids to follow: those a :func:`couchids.window` of ``form`` and
            ``type`` could return (written with the form's separator, and for a time form
            holding a time its key ranges reach).
        since: ``"now"`` (only documents stored after this call), ``0`` (everything), or a
            ``_changes`` sequence. A ``checkpoint`` with a ``since`` takes precedence.
        checkpoint: continue from it; its ``since`` is updated after every batch.
        wait: keep waiting for new documents (long polling); ``False`` stops once caught up.
        batch_size: changes per request.
        wait_ms: how long one long-poll request waits.
        timeout: seconds each request may take, retries included (default 60), on top of
            ``wait_ms`` for a long-poll request; ``None`` leaves it to the client's own
            timeouts.

    Raises:
        InvalidArgumentError, InvalidTypeError: bad arguments (a client that is not
            ``CloudantV1``, a bad database name, ``wait`` not a bool, a bad ``timeout``).
        ServerError: (and subclasses) a request failed after the retries, ran out of
            ``timeout``, or was answered with something that is not CouchDB's.

    Example::

        mark = couchids.Checkpoint()
        for doc in couchids.follow(client, "orders", type="order", checkpoint=mark):
            print(doc["_id"])  # and save mark.to_json() now and then
    """
    client, db = check_client(client), check_db(db)
    begin, changes = following.follow(
        known_facts(client),
        db,
        type=type,
        form=form,
        since=since,
        checkpoint=checkpoint,
        wait=wait,
        batch_size=batch_size,
        wait_ms=wait_ms,
        timeout=timeout,
    )
    run(client, begin)
    return stream(client, changes)


def rekey(
    client: CloudantV1,
    source_db: str,
    target_db: str,
    *,
    key: bytes | str,
    time_field: str | None = None,
    type: str | None = None,
    form: IdForm = KUUID,
    mapping: TextIO | None = None,
    checkpoint: Checkpoint | None = None,
    batch_size: int = DEFAULT_REKEY_BATCH,
    on_progress: Callable[[RekeyReport], None] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> RekeyReport:
    """Copy every document of ``source_db`` into ``target_db`` under a time-sortable id.

    The time is the document's ``time_field`` (an ISO-8601 string or epoch milliseconds), or,
    without ``time_field``, the time in a CouchDB ``utc_random`` id (32 hex digits holding a
    time in 2000-2100, :data:`couchids.UTC_RANDOM`; other ids are skipped, and so are most of
    CouchDB's ``random`` ids, whose digits read as a time outside it). Design documents are not
    copied; nor are attachments (their stubs are dropped). The new id is
    :func:`~couchids.core.rekeying.derived_id`; documents are otherwise copied as they are, without
    ``_rev``.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        source_db, target_db: the databases (the target must exist).
        key: the secret for the random part of the new ids: keep it to re-run.
        time_field: the field holding each document's time.
        type: the type of the new ids (``order`` makes ``order:<id>``).
        form: the id layout to make.
        mapping: a text stream getting one JSON line ``{"old": ..., "new": ...}`` per copied
            document, as it goes (a re-run writes the lines again).
        checkpoint: continue after its ``last_id``; updated after every batch.
        batch_size: documents per request.
        on_progress: called with the report after every batch.
        timeout: seconds each request (a page read, a batch's write) may take, retries
            included (default 60); ``None`` leaves it to the client's own timeouts.

    Raises:
        InvalidArgumentError, InvalidTypeError: bad arguments (a client that is not
            ``CloudantV1``, a bad database name or ``timeout`` too).
        ServerError: (and subclasses) a request failed after the retries, ran out of
            ``timeout``, or was answered with something that is not CouchDB's.

    Example::

        with open("mapping.ndjson", "a") as out:
            couchids.rekey(client, "legacy", "orders", key=secret, time_field="created",
                           type="order", mapping=out)
    """
    client = check_client(client)
    source_db, target_db = check_db(source_db), check_db(target_db)
    program = rekeying.rekey(
        known_facts(client),
        source_db,
        target_db,
        key=key,
        time_field=time_field,
        type=type,
        form=form,
        mapping=mapping,
        checkpoint=checkpoint,
        batch_size=batch_size,
        on_progress=on_progress,
        timeout=timeout,
    )
    return run(client, program)
