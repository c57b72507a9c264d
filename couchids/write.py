"""Writing new documents under sortable ids, safely under retries and re-runs.

The blocking API: each function checks its client and database and runs the program of
:mod:`couchids.core.writes` (the write protocol, pure) through the caller's ``ibmcloudant``
client (:mod:`couchids.server`). :mod:`couchids.aio` runs the same programs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ibmcloudant.cloudant_v1 import CloudantV1

from .core import writes
from .core.protocol import DEFAULT_BACKOFF, DEFAULT_RETRIES, DEFAULT_TIMEOUT
from .core.writes import DEFAULT_BATCH_SIZE, Collected, Doc, KeyOf, TimeOf, WriteResult
from .errors import CouchidsError
from .forms import KUUID, IdForm
from .server import check_client, check_db, known_facts, run, stream
from .times import TimeLike

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_RETRIES",
    "WriteResult",
    "bulk_create",
    "bulk_create_iter",
    "bulk_stream",
    "create",
]


def create(
    client: CloudantV1,
    db: str,
    doc: Doc,
    *,
    type: str | None = None,
    timestamp: TimeLike = None,
    key: str | None = None,
    form: IdForm = KUUID,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> WriteResult:
    """Store a new document under a new sortable id, exactly once even when retried.

    The id is ``form.new(timestamp, type=type)``; with ``key``, the id that key names at
    ``timestamp`` (:func:`~couchids.keyed_id`); or the document's own ``_id``. A lost answer
    (connection error, timeout, 5xx, 429) is retried with the same id after a short backoff
    (a 429's ``Retry-After`` is obeyed, up to 30 s); a 409 is resolved by reading the stored
    document back. ``doc`` itself is not changed: the id is in the result.

    With a key, running the same call again (after a crash, in a re-run of a whole job) finds
    the document stored and returns it with ``duplicate=True``, or raises
    :class:`~couchids.ConflictError` when different content stands under the id.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        doc: the document, a JSON object; of the top-level ``_`` fields only ``_id`` and
            ``_attachments`` (see :mod:`couchids.document`).
        type: the document type (``user`` makes ``user:<id>``). With an own ``_id``, the id
            must have this type.
        timestamp: the time in the id (default now; required with ``key``, and then the
            document's own time, the same on every run). With an own ``_id``, the id must be
            of ``form`` and hold this time at the form's precision.
        key: an idempotency key naming the document, such as ``"settle:table-7:hand-42"``;
            not with an own ``_id``.
        form: the id layout (:data:`couchids.KUUID` and friends).
        retries: attempts after the first when the answer is lost.
        backoff: seconds before the first retry, doubling for each later one.
        timeout: seconds the whole call may take, retries and waits included (default 60);
            ``None`` leaves each request to the client's own timeouts.

    Returns:
        :class:`WriteResult` with ``id``, ``rev`` and ``duplicate``.

    Raises:
        ConflictError: a document with different content already has the id; nothing changed.
        InvalidArgumentError: ``doc`` is not a JSON object, has ``_rev``, ``_deleted`` or
            another ``_`` field CouchDB would refuse, an ``_id`` that is not a string, starts
            with ``_`` or contradicts ``type``/``timestamp``/``key``; a bad ``key``; retry
            settings out of range; ``client`` is not a ``CloudantV1`` or ``db`` not a database
            name. Nothing is sent.
        InvalidTypeError, InvalidTimeError: a bad ``type`` or ``timestamp``.
        ServerError: ``DatabaseNotFoundError``, ``UnauthorizedError``, ``RateLimitedError``
            or ``ServerError`` itself for a refusal, at once, or for lost answers once the
            retries run out; ``ServerTimeoutError`` when ``timeout`` runs out. Its ``doc_id``
            is the id, and ``stored`` (and the message) says whether the document may have
            been stored.

    >>> result = create(client, "orders", {"total": 12}, type="order")  # doctest: +SKIP
    >>> result.id, result.duplicate  # doctest: +SKIP
    ('order:001xUbdD1RZ8cs0WUopX3WJ9DN1zkRze', False)
    >>> create(client, "hands", {"won": 40}, type="settlement",  # doctest: +SKIP
    ...        key="settle:table-7:hand-42", timestamp="2024-05-01T12:00:00Z").id
    'settlement:001s28cy2KTC774XfdSt1Y265q4Zu951'
    """
    client, db = check_client(client), check_db(db)
    program = writes.create(
        known_facts(client),
        db,
        doc,
        type=type,
        timestamp=timestamp,
        key=key,
        form=form,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
    )
    return run(client, program)


def bulk_create(
    client: CloudantV1,
    db: str,
    docs: Iterable[Doc],
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    key: KeyOf | None = None,
    timestamp: TimeOf | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> list[WriteResult]:
    """Store many new documents through ``_bulk_docs``, each exactly once even when retried.

    Returns every result at the end, as a list, and raises
    :class:`~couchids.BulkWriteError` when some documents were not stored. The documents
    themselves are read a batch at a time (see :func:`bulk_create_iter`, which this collects),
    so only the results stay in memory: about 220 bytes a document. For jobs of millions of
    documents, or to act on results while the job runs, iterate :func:`bulk_create_iter`
    instead.

    Args:
        client, db, type, form, retries, backoff: as for :func:`create`.
        docs: the documents, any iterable (a generator too), each a JSON object as for
            :func:`create`.
        key: a function giving each document's idempotency key (its id is then
            :func:`~couchids.keyed_id` of the key and its time); documents must not have
            ``_id``. With keys, running the whole call again writes nothing twice.
        timestamp: a function giving each document's own time, for its id; required with
            ``key``. Default: the time the id is made.
        batch_size: documents per ``_bulk_docs`` request.
        timeout: seconds each batch may take, retries included (default 60); ``None`` leaves
            each request to the client's own timeouts.

    Returns:
        One :class:`WriteResult` per document, in input order.

    Raises:
        BulkWriteError: some documents were not stored (``.results``, ``.failed``).
        InvalidArgumentError: a document cannot be stored (see :func:`create`), ``key`` or
            ``timestamp`` failed for one, or a setting is out of range; raised before that
            document's batch is sent. Its ``results`` hold the documents of earlier batches,
            which are stored.
        ServerError: a whole request failed (a missing database, refused credentials, a server
            that stays unreachable). Its ``results`` hold every document handled: the earlier
            ones stored, those of the failed batch with the error, whose ``stored`` says
            whether they may have been stored, and those of the batch sent after it meanwhile
            (see :func:`bulk_create_iter`), with their own results.

    >>> hands = [{"hand": 42, "at": "2024-05-01T12:00:00Z", "won": 40}]
    >>> results = bulk_create(client, "hands", hands, type="settlement",  # doctest: +SKIP
    ...     key=lambda d: f"settle:table-7:hand-{d['hand']}", timestamp=lambda d: d["at"])
    >>> [r.id for r in results]  # doctest: +SKIP
    ['settlement:001s28cy2KTC774XfdSt1Y265q4Zu951']
    """
    results = bulk_stream(
        "bulk_create",
        client,
        db,
        docs,
        type=type,
        form=form,
        key=key,
        timestamp=timestamp,
        batch_size=batch_size,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
        batches=True,
    )
    collected = Collected(db)
    try:
        for batch in results:
            collected.add(batch)
    except CouchidsError as exc:
        collected.ended_by(exc)
        raise
    return collected.finish()


def bulk_create_iter(
    client: CloudantV1,
    db: str,
    docs: Iterable[Doc],
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    key: KeyOf | None = None,
    timestamp: TimeOf | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Iterator[WriteResult]:
    """Store many new documents through ``_bulk_docs``, yielding each result as its batch ends.

    Memory stays bounded by ``batch_size``, whatever the number of documents: ``docs`` is read
    one batch at a time, each batch is checked, sent and settled, and its results are yielded
    in input order. So the results of a job can be logged or counted while it runs;
    :func:`bulk_create` is this, collected into a list. Two batches are in flight at once: the
    next batch is read, checked and sent while the one before it is written (unless they
    share an id, when it waits), so neither the server nor a round trip waits for the other.
    Closing the iterator early may leave the batch already sent stored, its results unseen:
    with keys or own ids, running the job again reports them as duplicates.
    (A separate iterator rather than a streaming ``bulk_create``: the list and the
    :class:`~couchids.BulkWriteError` at the end stay as they were, and a caller who wants the
    stream says so.)

    Each document gets its id (its own ``_id``, the id of its ``key``, or
    ``form.new(timestamp(doc), type=type)``). A batch whose answer is lost is sent again with
    the same ids; rows that meet an existing id (409) are read back in one ``_all_docs``
    request and compared as in :func:`create`: the same content is a duplicate, other content a
    :class:`~couchids.ConflictError` in that row's result. A document whose id repeats an
    earlier one's (in the input, or in a database the job wrote before) is settled the same
    way. Rows the server answers ``too_many_requests`` are sent again, with the backoff, up to
    ``retries`` times. A row that fails does not stop the others: its result carries the
    ``error``; nothing is raised for it.

    Args:
        client, db, type, form, key, timestamp, batch_size, retries, backoff, timeout: as for
            :func:`bulk_create`.
        docs: the documents, any iterable; read lazily, one batch at a time.

    Yields:
        One :class:`WriteResult` per document, in input order, a batch at a time.

    Raises:
        InvalidArgumentError: a bad setting (at the call), or a document that cannot be stored
            (when its batch is read; nothing of that batch is sent).
        ServerError: a whole request failed; ``results`` holds the failed batch's documents,
            each with the error, whose ``stored`` says whether they may have been stored, and
            then those of the batch sent after it meanwhile, with their own results.

    >>> docs = ({"n": n} for n in range(1_000_000))
    >>> for result in bulk_create_iter(client, "events", docs):  # doctest: +SKIP
    ...     log.write(f"{result.id} {result.ok}\\n")
    """
    return bulk_stream(
        "bulk_create_iter",
        client,
        db,
        docs,
        type=type,
        form=form,
        key=key,
        timestamp=timestamp,
        batch_size=batch_size,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
    )


def bulk_stream(
    operation: str,
    client: CloudantV1,
    db: str,
    docs: Iterable[Doc],
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    key: KeyOf | None = None,
    timestamp: TimeOf | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
    batches: bool = False,
) -> Iterator[Any]:
    """:func:`bulk_create_iter` for the public ``operation`` its messages name (arguments
    checked now, documents read lazily); with ``batches``, each batch's results as a list."""
    client, db = check_client(client), check_db(db)
    program = writes.bulk(
        known_facts(client),
        operation,
        db,
        docs,
        type=type,
        form=form,
        key=key,
        timestamp=timestamp,
        batch_size=batch_size,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
    )
    pages = stream(client, program)
    return pages if batches else _flat(pages)


def _flat(batches: Iterator[list[WriteResult]]) -> Iterator[WriteResult]:
    for batch in batches:
        yield from batch
