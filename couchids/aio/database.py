"""The database handle: every operation of couchids on one database, as a method.

Both APIs are one text. ``couchids/aio/database.py`` holds the asyncio handle
(``couchids.aio.AsyncDatabase`` and ``AsyncSequence``, over
:class:`couchids.aio.AsyncClient`), written by hand; ``couchids/database.py`` holds the
blocking one (``couchids.Database`` and ``Sequence``, over ``ibmcloudant``'s ``CloudantV1``),
generated from it by ``scripts/unasync.py``, which rewrites ``async``/``await`` and the names
of the asyncio driver (:mod:`couchids.drivers.aio`) to those of the blocking one
(:mod:`couchids.drivers.blocking`). So both have the same methods with the same parameters, defaults
and docstrings, and ``scripts/test`` fails when the two drift.

Each method checks its arguments and runs the program of :mod:`couchids.core` that describes
the operation (pure: it says which requests to send and what to make of the answers) through
the client's driver.

The parameters carry one vocabulary, from the methods to :mod:`couchids.core` and the
``couchids`` command's flags (the table is docs/guide/vocabulary.md): ``timestamp`` is a
document's own time and ``time_of`` the bulk writes' function giving it, ``checkpoint`` where to
resume, ``since_seq`` where ``follow`` begins without one. The tuning every operation shares
(``timeout``, ``retries``, ``backoff``, ``parallel``, ``batch_size``, ``batch_bytes``,
``document_bytes``) is the handle's :class:`~couchids.Options`, not a parameter of each method:
``db.with_options(timeout=5)`` is a handle with other options.
"""

from __future__ import annotations

import asyncio
import collections.abc
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import aclosing
from dataclasses import replace
from datetime import timedelta
from typing import Any, TextIO

from couchids.aio.replication import AsyncReplication
from couchids.core import (
    alltypes,
    counting,
    expiry,
    explaining,
    exporting,
    features,
    following,
    rekeying,
    replication,
    short,
    windows,
    writes,
)
from couchids.core.counting import Bucket
from couchids.core.expiry import ExpireReport
from couchids.core.explaining import Style
from couchids.core.exporting import ArchiveReport, Format
from couchids.core.facts import FactsCache
from couchids.core.following import DEFAULT_POLL
from couchids.core.names import check_db
from couchids.core.options import Options, check_options
from couchids.core.policy import RetryPolicy
from couchids.core.rekeying import RekeyReport
from couchids.core.scan import Checkpoint, read_policy
from couchids.core.sequence import DEFAULT_BLOCK, check_sequence, claim_block, seq_prefix
from couchids.core.short import NonceSource
from couchids.core.writes import (
    Collected,
    Doc,
    KeyOf,
    TimeOf,
)
from couchids.drivers.access import server_access
from couchids.drivers.aio import (
    AsyncClient,
    AsyncRows,
    after,
    check_client,
    flat,
    known_facts,
    pages,
    run,
    stream,
)
from couchids.errors import CouchidsError, InvalidArgumentError, WriteResult
from couchids.idforms.doctypes import AllTypes
from couchids.idforms.forms import KUUID, IdForm
from couchids.idforms.seq import SEQ10, SeqForm
from couchids.idforms.times import TimeLike

__all__ = ["AsyncDatabase", "AsyncSequence"]

Row = dict[str, Any]


class AsyncDatabase:
    """One CouchDB or Cloudant database, and every couchids operation on it.

    The handle checks the database name once and carries the form of the database's ids
    (each method may still pass ``form=``); it holds no connection of its own, so make as
    many as is convenient. What couchids learns about the database (its server, whether it
    is partitioned) is kept with the client and asked once.

    Args:
        client: an :class:`~couchids.aio.AsyncClient`.
        name: the database name.
        form: the id layout of the database's ids (default :data:`couchids.KUUID`).
        options: the tuning of every operation (:class:`~couchids.Options`: ``timeout``,
            ``retries``, ``backoff``, ``parallel``, ``batch_size``, ``batch_bytes``,
            ``document_bytes``); default ``Options()``. :meth:`with_options` makes a handle
            with other options, for one call or many.

    Raises:
        InvalidArgumentError: not an :class:`~couchids.aio.AsyncClient`, a name CouchDB
            refuses, ``form`` not an id form, or ``options`` not an ``Options``.

    Example::

        shop = AsyncDatabase(client, "shop", form=couchids.KUUID)
        newest = await shop.latest(5, type="order")
        await shop.with_options(timeout=5, retries=0).create({"total": 12}, type="order")
    """

    def __init__(
        self,
        client: AsyncClient,
        name: str,
        *,
        form: IdForm = KUUID,
        options: Options | None = None,
    ) -> None:
        self.client, self.name = check_client(client), check_db(name, "name")
        self.form = _checked_form(form)
        #: The :class:`~couchids.Options` of this handle's operations.
        self.options = check_options(options)
        self._facts: FactsCache = known_facts(self.client)

    def with_options(self, **changes: Any) -> AsyncDatabase:
        """A handle of the same database, client and form whose options are this one's with
        ``changes`` (:class:`~couchids.Options` fields as keywords, checked now). Cheap: it
        shares the client and what couchids knows of the database.

        Raises:
            InvalidArgumentError: a name that is not an option, or a value out of its range.

        Example::

            patient = shop.with_options(timeout=300, retries=8)
            await patient.create({"total": 12}, type="order")
            fast = shop.with_options(parallel=8, batch_size=5000)
            [doc async for doc in fast.window("2024-05-01", "2024-06-01")]
        """
        return AsyncDatabase(
            self.client, self.name, form=self.form, options=self.options.replace(**changes)
        )

    def __repr__(self) -> str:
        return f"AsyncDatabase({self.name!r}, form={self.form!r})"

    def _form(self, form: IdForm | None) -> IdForm:
        return self.form if form is None else form

    # -- reading -----------------------------------------------------------------------------

    async def latest(
        self,
        n: int = 10,
        *,
        type: str | AllTypes | None = None,
        form: IdForm | None = None,
        include_docs: bool = True,
    ) -> list[Row]:
        """The newest ``n`` documents (fewer if fewer exist), newest first.

        One request once the client has seen the database, unless foreign ids sit among the
        newest: those are skipped and do not shorten the answer. With
        ``type=couchids.ALL_TYPES``: the newest ``n`` across every type, one request to find
        each type and one to read its newest ``n``.

        Args:
            n: how many, a non-negative int.
            type, form, include_docs: as for :meth:`window`.

        Raises: as :meth:`window`.

        Example::

            newest = await shop.latest(5, type="click")
            [doc["_id"] for doc in newest]  # ['click:001r31et...', ...]
            await shop.latest(5, type=couchids.ALL_TYPES)  # any type
        """
        program = windows.latest(
            self._facts,
            self.name,
            n,
            type=type,
            form=self._form(form),
            include_docs=include_docs,
            timeout=self.options.timeout,
        )
        return await run(self.client, program)

    def window(
        self,
        start: TimeLike,
        end: TimeLike,
        *,
        type: str | AllTypes | None = None,
        form: IdForm | None = None,
        newest_first: bool = True,
        include_docs: bool = True,
    ) -> AsyncRows[Row]:
        """The documents whose id holds a time ``t`` with ``start <= t < end``, as they come.

        ``t`` is the time at the id's precision: a second-precision id made at 12:00:00.700
        holds 12:00:00. The same documents come back in either direction. Memory stays at
        about ``parallel + 2`` pages: while the caller works through one page, the next are
        being fetched, and a document handed out is not kept.

        The answer streams the documents one at a time, or, from its ``pages()``, a page at a
        time: each a list of documents (or rows) that is the caller's to keep or empty, for a
        caller that handles whole pages (the ``couchids window`` command writes each as one
        block). The arguments are checked by the call. In the blocking API the call also
        reads the first page, so that a missing database is raised by the call rather than by
        the first step of the loop; in the asyncio API the first step sends the first request.

        Args:
            start, end: any time couchids accepts (``None`` is now); ``end`` is exclusive.
            type: only ids ``type:<id>`` (or ``type<separator><id>`` for the form's
                separator); ``None`` for untyped ids only; :data:`couchids.ALL_TYPES` for the
                ids of every type, merged by time (the types are found with one request each;
                see :mod:`couchids.core.alltypes`). ``None`` keeps meaning "untyped" rather
                than "everything": a database may hold both, and an all-types query reads one
                request per type, a cost a caller should choose by name.
            form: the id layout (default the handle's).
            newest_first: the order of the answer.
            include_docs: yield documents; ``False`` yields ``_all_docs`` rows
                (``{"id", "key", "value"}``).

        Raises:
            InvalidTimeError: unreadable times, or ``end`` before ``start``.
            InvalidTypeError: ``type`` breaks the type rule.
            InvalidArgumentError: a ``newest_first``/``include_docs`` that is not a bool, or a
                bad ``batch_size``, ``form``, ``timeout`` or ``parallel``.
            ServerError: (subclasses ``DatabaseNotFoundError``, ``UnauthorizedError``,
                ``RateLimitedError``, ``ServerTimeoutError``) when the server fails or answers
                something that is not CouchDB's, also in the middle of a stream.

        Example::

            async for doc in events.window("2024-05-01", "2024-05-02", type="click"):
                print(doc["_id"])
            async for page in events.window("2024-05-01", "2024-05-02").pages():
                print(len(page))
        """
        program = windows.window(
            self._facts,
            self.name,
            start,
            end,
            type=type,
            form=self._form(form),
            newest_first=newest_first,
            include_docs=include_docs,
            batch_size=self.options.batch("window"),
            timeout=self.options.timeout,
            parallel=self.options.slices("window"),
        ).pages()
        return AsyncRows(pages(self.client, program))

    async def types_present(self, *, form: IdForm | None = None) -> list[str]:
        """The types of the ids ``<type><separator>…``, in ``_all_docs`` order, with the
        separator of ``form`` (default the handle's): about one ``_all_docs`` request per
        type, never the type's rows (see :mod:`couchids.core.alltypes`). A type is listed
        when some id starts with it and the separator, whatever follows.

        Args:
            form: whose separator to look for.

        Raises:
            ServerError: (or a subclass, such as ``DatabaseNotFoundError``) the server failed.

        Example::

            await shop.types_present()  # ['invoice', 'order', 'user']
        """
        policy = RetryPolicy.checked(0, 0, self.options.timeout, "types_present")
        separator = _checked_form(self._form(form)).separator
        return await run(self.client, alltypes.types_present(self.name, separator, policy))

    async def explain_empty(
        self,
        *,
        type: str | None = None,
        form: IdForm | None = None,
        style: Style = "python",
    ) -> str | None:
        """Why a query of ``type`` and ``form`` may have found nothing here, when the
        database shows a reason; ``None`` when it holds ids of that type and form (then the
        time window, or ``n``, is why) or nothing at all.

        The reasons, each with what to pass instead:

        - no untyped ids, but typed ones: ``no untyped kuuid ids in 'shop'; it holds ids of
          types order, user: pass type='order' or type=couchids.ALL_TYPES``;
        - no ids of ``type``, but of other types (a misspelt type), or only untyped ones;
        - ids of the scope, but none of ``form``: the message names the forms they read as
          (:func:`couchids.decode`), such as ``v7s``, and the one to pass.

        Costs two or three ``_all_docs`` requests of at most 20 ids, and, when the scope is
        empty, the search for the types present (as :meth:`types_present`). The
        ``couchids`` command prints it after an empty ``latest``, ``window``, ``count``,
        ``histogram`` or ``export``.

        Args:
            type, form: the scope and form of the query that found nothing (``None``:
                untyped; the form defaults to the handle's).
            style: ``"python"`` for advice in arguments (``type='order'``), ``"command"`` in
                flags of the ``couchids`` command (``--type order``).

        Raises:
            InvalidArgumentError, InvalidTypeError: bad arguments.
            ServerError: (or a subclass, such as ``DatabaseNotFoundError``) the server failed.

        Example::

            if not await shop.latest():
                print(await shop.explain_empty())
                # no untyped kuuid ids in 'shop'; it holds ids of types order, user: pass
                # type='order' or type=couchids.ALL_TYPES
        """
        program = explaining.explain(
            self.name, type=type, form=self._form(form), style=style, timeout=self.options.timeout
        )
        return await run(self.client, program)

    # -- writing -----------------------------------------------------------------------------

    async def create(
        self,
        doc: Doc,
        *,
        type: str | None = None,
        timestamp: TimeLike = None,
        key: str | None = None,
        form: IdForm | None = None,
    ) -> WriteResult:
        """Store a new document under a new sortable id, exactly once even when retried.

        The id is ``form.new(timestamp, type=type)``; with ``key``, the id that key names at
        ``timestamp`` (:func:`~couchids.idforms.keyed.keyed_id`); or the document's own
        ``_id``. A lost answer (connection error, timeout, 5xx, 429) is retried with the same id
        after a short backoff (a 429's ``Retry-After`` is obeyed, up to 30 s); a 409 is
        resolved by reading the stored document back. ``doc`` itself is not changed: the id is
        in the result.

        With a key, running the same call again (after a crash, in a re-run of a whole job)
        finds the document stored and returns it with ``duplicate=True``, or raises
        :class:`~couchids.ConflictError` when different content stands under the id.

        Args:
            doc: the document, a JSON object; of the top-level ``_`` fields only ``_id`` and
                ``_attachments`` (see :mod:`couchids.core.document`).
            type: the document type (``user`` makes ``user:<id>``). With an own ``_id``, the
                id must have this type.
            timestamp: the document's own time, in its id (default now; required with
                ``key``, and then the same on every run). With an own ``_id``, the id must be
                of ``form`` and hold this time at the form's precision.
            key: an idempotency key naming the document, such as
                ``"settle:table-7:hand-42"``; not with an own ``_id``.
            form: the id layout (default the handle's).

        Returns:
            :class:`~couchids.WriteResult` with ``id``, ``rev`` and ``duplicate``.

        Raises:
            ConflictError: a document with different content already has the id; nothing
                changed.
            InvalidArgumentError: ``doc`` is not a JSON object, has ``_rev``, ``_deleted`` or
                another ``_`` field CouchDB would refuse, an ``_id`` that is not a string,
                starts with ``_`` or contradicts ``type``/``timestamp``/``key``; a bad
                ``key``; retry settings out of range. Nothing is sent.
            InvalidTypeError, InvalidTimeError: a bad ``type`` or ``timestamp``.
            ServerError: ``DatabaseNotFoundError``, ``UnauthorizedError``,
                ``RateLimitedError`` or ``ServerError`` itself for a refusal, at once, or for
                lost answers once the retries run out; ``ServerTimeoutError`` when ``timeout``
                runs out. Its ``doc_id`` is the id, and ``stored`` (and the message) says
                whether the document may have been stored.

        Example::

            result = await orders.create({"total": 12}, type="order")
            result.id, result.duplicate  # ('order:001xUbdD1RZ8cs0WUopX3WJ9DN1zkRze', False)
            await hands.create(
                {"won": 40}, type="settlement", key="settle:table-7:hand-42",
                timestamp="2024-05-01T12:00:00Z",
            )  # the same id however often it runs
        """
        program = writes.create(
            self._facts,
            self.name,
            doc,
            type=type,
            timestamp=timestamp,
            key=key,
            form=self._form(form),
            retries=self.options.retries,
            backoff=self.options.backoff,
            timeout=self.options.timeout,
        )
        return await run(self.client, program)

    async def bulk_create(
        self,
        docs: Iterable[Doc],
        *,
        type: str | None = None,
        form: IdForm | None = None,
        key_of: KeyOf | None = None,
        time_of: TimeOf | None = None,
    ) -> list[WriteResult]:
        """Store many new documents through ``_bulk_docs``, each exactly once even when
        retried.

        Returns every result at the end, as a list, and raises
        :class:`~couchids.BulkWriteError` when some documents were not stored. The documents
        themselves are read a batch at a time (see :meth:`bulk_create_iter`, which this
        collects), so only the results stay in memory: about 220 bytes a document. For jobs
        of millions of documents, or to act on results while the job runs, iterate
        :meth:`bulk_create_iter` instead.

        Args:
            docs: the documents, any iterable (a generator too), each a JSON object as for
                :meth:`create`.
            type, form, retries, backoff: as for :meth:`create`.
            key_of: a function giving each document's idempotency key (its id is then
                :func:`~couchids.idforms.keyed.keyed_id` of the key and its time);
                documents must not have ``_id``. With keys, running the whole call again
                writes nothing twice.
            time_of: a function giving each document's own time, for its id; required with
                ``key_of``. Default: the time the id is made.

        Returns:
            One :class:`~couchids.WriteResult` per document, in input order.

        Raises:
            BulkWriteError: some documents were not stored (``.results``, ``.failed``).
            InvalidArgumentError: a document cannot be stored (see :meth:`create`), ``key_of``
                or ``time_of`` failed for one, or a setting is out of range; raised before
                that document's batch is sent. Its ``results`` hold the documents of earlier
                batches, which are stored.
            ServerError: a whole request failed (a missing database, refused credentials, a
                server that stays unreachable). Its ``results`` hold every document handled:
                the earlier ones stored, those of the failed batch with the error, whose
                ``stored`` says whether they may have been stored, and those of the batch
                sent after it meanwhile (see :meth:`bulk_create_iter`), with their own
                results.

        Example::

            hands = [{"hand": 43, "at": "2024-05-01T12:05:00Z", "won": 40}]
            results = await db.bulk_create(
                hands, type="settlement",
                key_of=lambda d: f"settle:table-7:hand-{d['hand']}", time_of=lambda d: d["at"],
            )
        """
        program = writes.bulk(
            self._facts,
            "bulk_create",
            self.name,
            docs,
            type=type,
            form=self._form(form),
            key_of=key_of,
            time_of=time_of,
            batch_size=self.options.batch("bulk_create"),
            retries=self.options.retries,
            backoff=self.options.backoff,
            timeout=self.options.timeout,
            batch_bytes=self.options.batch_bytes,
            document_bytes=self.options.document_bytes,
        )
        collected = Collected(self.name)
        try:
            async with aclosing(stream(self.client, program)) as batches:
                async for batch in batches:
                    collected.add(batch)
        except CouchidsError as exc:
            collected.ended_by(exc)
            raise
        return collected.finish()

    def bulk_create_iter(
        self,
        docs: Iterable[Doc],
        *,
        type: str | None = None,
        form: IdForm | None = None,
        key_of: KeyOf | None = None,
        time_of: TimeOf | None = None,
    ) -> AsyncIterator[WriteResult]:
        """Store many new documents through ``_bulk_docs``, yielding each result as its batch
        ends.

        Memory stays bounded by ``batch_size``, whatever the number of documents: ``docs`` is
        read one batch at a time, each batch is checked, sent and settled, and its results
        are yielded in input order. So the results of a job can be logged or counted while it
        runs; :meth:`bulk_create` is this, collected into a list. Two batches are in flight at
        once: the next batch is read, checked and sent while the one before it is written
        (unless they share an id, when it waits), so neither the server nor a round trip
        waits for the other. Closing the iterator early may leave the batch already sent
        stored, its results unseen: with keys or own ids, running the job again reports them
        as duplicates. The arguments are checked by the call; nothing is sent before the
        first step.

        Each document gets its id (its own ``_id``, the id of its ``key_of(doc)``, or
        ``form.new(time_of(doc), type=type)``). A batch whose answer is lost is sent again
        with the same ids; rows that meet an existing id (409) are read back in one
        ``_all_docs`` request and compared as in :meth:`create`: the same content is a
        duplicate, other content a :class:`~couchids.ConflictError` in that row's result. A
        document whose id repeats an earlier one's (in the input, or in a database the job
        wrote before) is settled the same way. Rows the server answers ``too_many_requests``
        are sent again, with the backoff, up to ``retries`` times. A row that fails does not
        stop the others: its result carries the ``error``; nothing is raised for it.

        Args:
            docs: the documents, any iterable; read lazily, one batch at a time; every other
                argument is as for :meth:`bulk_create`.

        Yields:
            One :class:`~couchids.WriteResult` per document, in input order, a batch at a
            time.

        Raises:
            InvalidArgumentError: a bad setting (at the call), or a document that cannot be
                stored (when its batch is read; nothing of that batch is sent).
            ServerError: a whole request failed; ``results`` holds the failed batch's
                documents, each with the error, whose ``stored`` says whether they may have
                been stored, and then those of the batch sent after it meanwhile, with their
                own results.

        Example::

            docs = ({"n": n} for n in range(2_000))  # any iterable, of any length
            with open("results.log", "w") as log:
                async for result in events.bulk_create_iter(docs):
                    log.write(f"{result.id} {result.ok}\\n")
        """
        program = writes.bulk(
            self._facts,
            "bulk_create_iter",
            self.name,
            docs,
            type=type,
            form=self._form(form),
            key_of=key_of,
            time_of=time_of,
            batch_size=self.options.batch("bulk_create_iter"),
            retries=self.options.retries,
            backoff=self.options.backoff,
            timeout=self.options.timeout,
            batch_bytes=self.options.batch_bytes,
            document_bytes=self.options.document_bytes,
        )
        return flat(stream(self.client, program))

    async def create_short(
        self,
        doc: Mapping[str, Any],
        *,
        timestamp: TimeLike = None,
        rng: NonceSource | None = None,
    ) -> WriteResult:
        """Store a new document under a free short id ``YYMMDD-<nonce>`` of the UTC day of
        ``timestamp``.

        Tries 10 random 2-letter nonces, then 10 of 3 letters; :mod:`couchids.core.short`
        says how an id is claimed so that two writers never own one, on a cluster too. The
        stored document is ``doc`` plus the field ``couchids_alloc``, a random token that
        tells which write stored it (keep or drop it in later updates; couchids reads it only
        while allocating). ``doc`` itself is not changed: the id is in the result. A lost
        answer is retried with the same id and token, so the document is stored once; on a
        single copy a retry that meets its own first write keeps that id
        (``duplicate=True``), on a cluster it gives the id up and tries another.

        Args:
            doc: the document, a JSON object without ``_id``, ``couchids_alloc`` or a
                top-level ``_`` field other than ``_attachments``.
            timestamp: the document's own time, whose UTC date starts the id (default now).
            rng: the random source for nonces (see :func:`~couchids.core.short.random_nonce`);
                default ``secrets``.

        Returns:
            :class:`~couchids.WriteResult` with ``id``, ``rev`` and ``duplicate``.

        Raises:
            AllocationFailed: none of the 20 tries could be claimed (taken ids, or, on a
                cluster, writes fewer copies than a quorum took); nothing was stored.
            InvalidArgumentError: ``doc`` is not a JSON object or has ``_id``, ``_rev``,
                ``_deleted`` or ``couchids_alloc``, or a setting is out of range.
            ServerError: as for :meth:`create`, with the id of the try that failed in
                ``doc_id`` and ``stored`` saying whether it may have been stored (with its
                token).

        Example::

            result = await posts.create_short({"title": "hello"})
            result.id  # '260107-bc'
        """
        program = short.create_short(
            self._facts,
            self.name,
            doc,
            now=timestamp,
            rng=rng,
            retries=self.options.retries,
            backoff=self.options.backoff,
            timeout=self.options.timeout,
        )
        return await run(self.client, program)

    def sequence(
        self,
        name: str,
        *,
        block: int = DEFAULT_BLOCK,
    ) -> AsyncSequence:
        """The sequence ``name`` kept in this database: whole numbers from 1, handed out by
        the database itself (see :class:`AsyncSequence`, whose arguments these are).

        Example::

            invoices = shop.sequence("invoices")
            await invoices.next()  # 1
        """
        return AsyncSequence(
            self.client,
            self.name,
            name,
            block=block,
            options=self.options,
        )

    # -- the data lifecycle ------------------------------------------------------------------

    async def count(
        self,
        start: TimeLike,
        end: TimeLike,
        *,
        type: str | AllTypes | None = None,
        form: IdForm | None = None,
        exact: bool = False,
    ) -> int:
        """The number of documents whose id holds a time ``t`` with ``start <= t < end``.

        On CouchDB and Cloudant this is two ``limit=0`` requests whatever the window holds
        (plus, once per client, ``GET /`` and ``GET /{db}``); on PouchDB Server a scan of the
        window's ids. Foreign ids inside the key range are counted unless ``exact``.

        Args:
            start, end: any time couchids accepts; ``end`` is exclusive.
            type: only ids ``type:<id>``; ``None`` for untyped ids;
                :data:`couchids.ALL_TYPES` for the ids of every type present now (not the
                untyped ones), as :meth:`latest` and :meth:`window` take it: one request per
                type to find them, then a count of each.
            form: the id layout (default the handle's).
            exact: scan the ids and count only ids of ``form`` (foreign ids in the range left
                out).

        Raises:
            InvalidTimeError: unreadable times, or ``end`` before ``start``.
            InvalidTypeError: a bad ``type``.
            InvalidArgumentError: a bad ``form``, ``exact`` or ``timeout``.
            ServerError: (and subclasses) the server failed or answered something that is not
                CouchDB's (``ServerTimeoutError`` when ``timeout`` ran out); a missing
                database is ``DatabaseNotFoundError``, never 0.

        Example::

            await orders.count("2024-05-01", "2024-06-01", type="order")
        """
        policy = read_policy(self.options.timeout, "count")
        program = counting.counted(
            self._facts,
            policy,
            self.name,
            start,
            end,
            type=type,
            form=self._form(form),
            exact=exact,
        )
        return await run(self.client, program)

    async def histogram(
        self,
        start: TimeLike,
        end: TimeLike,
        *,
        every: str | timedelta = "1h",
        type: str | None = None,
        form: IdForm | None = None,
        exact: bool = False,
    ) -> list[Bucket]:
        """Counts per bucket of ``every``, aligned to UTC, covering ``[start, end)``.

        Inner bucket edges fall on whole multiples of ``every`` from Monday
        1970-01-05T00:00Z (whole hours, UTC midnights, and Mondays for ``"1w"``, as ISO weeks
        and a weekly :class:`~couchids.Series` start); the first bucket starts at ``start``
        (a partial bucket, labelled by its start, when ``start`` is not on an edge) and the
        last ends at ``end``. On CouchDB and Cloudant it costs one ``limit=0`` request per
        bucket edge, ``parallel`` at a time; on PouchDB Server (or with ``exact``) one scan
        of the window's ids.

        Args:
            start, end, type, form, exact, timeout: as for :meth:`count`.
            every: the bucket width: ``"1h"``, ``"1d"``, ``"15m"``, ``"1w"`` or a timedelta.

        Raises:
            InvalidArgumentError: a bad ``every`` or ``parallel``; and what :meth:`count`
                raises.

        Example::

            for bucket in await orders.histogram("2024-05-01", "2024-05-08", every="1d",
                                                 type="order"):
                print(bucket.start.date(), bucket.count)
        """
        program = counting.histogram(
            self._facts,
            read_policy(self.options.timeout, "histogram"),
            self.name,
            start,
            end,
            every=every,
            type=type,
            form=self._form(form),
            exact=exact,
            parallel=self.options.slices("histogram"),
        )
        return await run(self.client, program)

    async def expire(
        self,
        before: TimeLike,
        *,
        type: str | None,
        form: IdForm | None = None,
        dry_run: bool = True,
        purge: bool = False,
        checkpoint: Checkpoint | None = None,
        on_progress: Callable[[ExpireReport], None] | None = None,
    ) -> ExpireReport:
        """Delete the documents of ``type`` whose id holds a time before ``before``.

        A dry run (the default) reads the same ids and reports how many would go. Safe to
        run again at any time, also after an interruption: what was deleted is no longer
        found, and a ``checkpoint`` from the earlier run skips what it already reported.
        Every id is checked against ``before``, ``type`` and ``form`` before it is deleted,
        whatever the checkpoint or the server says; a conflicted document loses every live
        revision.

        Args:
            before: documents made before this time go (exclusive).
            type: the document type (``None`` means untyped ids; it must be given).
            form: the id layout (default the handle's); ids of other forms are never
                touched.
            dry_run: only count.
            purge: also purge the deleted revisions (CouchDB only; refused on Cloudant and
                PouchDB Server before anything is deleted).
            checkpoint: continue after its ``last_id``; it is updated after every batch.
            on_progress: called with the report after every batch (for progress display; an
                exception raised there stops the run, and the checkpoint says where).

        Raises:
            InvalidTimeError, InvalidTypeError, InvalidArgumentError: bad arguments
                (``dry_run``/``purge`` not a bool, a checkpoint of another form or type), or a
                purge the server cannot do.
            ServerError: (and subclasses) a request failed after the retries, ran out of
                ``timeout``, or was answered with something that is not CouchDB's.

        Example::

            report = await events.expire("2024-01-01", type="click", dry_run=False)
            print(report.deleted, report.conflicts)
        """
        program = expiry.expire(
            self._facts,
            self.name,
            before,
            type=type,
            form=self._form(form),
            dry_run=dry_run,
            purge=purge,
            batch_size=self.options.batch("expire"),
            checkpoint=checkpoint,
            on_progress=on_progress,
            retries=self.options.retries,
            backoff=self.options.backoff,
            timeout=self.options.timeout,
        )
        return await run(self.client, program)

    async def export(
        self,
        start: TimeLike,
        end: TimeLike,
        out: TextIO,
        *,
        type: str | None = None,
        format: Format = "ndjson",
        fields: collections.abc.Sequence[str] | None = None,
        checkpoint: Checkpoint | None = None,
        on_progress: Callable[[Checkpoint], None] | None = None,
    ) -> Checkpoint:
        """Write the documents made in ``[start, end)`` to ``out``, oldest first.

        ``ndjson`` writes each document as one line of JSON; ``csv`` writes a header of
        ``fields`` (unless resuming) and one row per document with those top-level fields
        (other values than strings and numbers as JSON, a missing field empty). In the
        asyncio API ``out`` is written on the event loop's thread.

        Args:
            start, end, type: as for :meth:`window`; the ids are of the handle's form
                (``AsyncDatabase(client, name, form=...)`` for another).
            out: a text stream (a file opened with ``newline=""`` for CSV).
            format: ``"ndjson"`` or ``"csv"``.
            fields: the CSV columns, such as ``["_id", "total"]`` (required for CSV).
            checkpoint: continue after its ``last_id``; updated after every document written.
            on_progress: called with the checkpoint after every page.

        Returns:
            :class:`~couchids.Checkpoint`: ``last_id`` is the last document written, ``done``
            how many.

        Raises:
            InvalidArgumentError: a bad ``format``, ``fields``, ``out`` or ``on_progress``, or
                a checkpoint of another form or type.
            InvalidTimeError, InvalidTypeError: a bad window or type.
            ServerError: (and subclasses) a request failed after the retries, ran out of
                ``timeout`` or was answered with something that is not CouchDB's; the
                checkpoint says where to continue.

        Example::

            with open("may.ndjson", "w") as out:
                mark = await orders.export("2024-05-01", "2024-06-01", out, type="order")
        """
        program = exporting.export(
            self._facts,
            self.name,
            start,
            end,
            out,
            type=type,
            form=self.form,
            format=format,
            fields=fields,
            checkpoint=checkpoint,
            batch_size=self.options.batch("export"),
            on_progress=on_progress,
            timeout=self.options.timeout,
            parallel=self.options.slices("export"),
        )
        return await run(self.client, program)

    async def archive(
        self,
        target_db: str,
        start: TimeLike,
        end: TimeLike,
        *,
        type: str | None = None,
        form: IdForm | None = None,
        expire: bool = False,
        checkpoint: Checkpoint | None = None,
        on_progress: Callable[[ArchiveReport], None] | None = None,
    ) -> ArchiveReport:
        """Copy the documents made in ``[start, end)`` into ``target_db``; optionally delete
        them here.

        Each document is copied with its revision and attachments (``_bulk_docs`` with
        ``new_edits=false``), so a copy made twice is the same revision, not a conflict: a
        re-run or a resumed run copies nothing twice. A document with conflicts (several
        live leaf revisions, read from every copy with ``open_revs=all``) is copied with all
        of them, and listed in ``conflicted``. With ``expire=True`` each page is deleted from
        this database right after the target stored it, by exactly the revisions that were
        copied, every leaf of a conflicted document: one changed in between (or given a
        revision nobody read) is kept and reported in ``expired.conflicts``, and a re-run
        moves it. A target that is this database is refused before anything is sent.
        Copies are cut by the handle's ``batch_bytes`` and ``document_bytes`` as bulk writes
        are: a document over ``document_bytes`` (attachments aside), or refused alone by the
        server as too large, is listed in ``failed`` and not deleted.

        Args:
            target_db: an existing database to copy into.
            start, end, type, form: as for :meth:`window`.
            expire: delete the copied documents from this database.
            checkpoint, on_progress: as for :meth:`export`.

        Raises:
            as :meth:`export`; ``DatabaseNotFoundError`` for a missing ``target_db``.

        Example::

            report = await orders.archive("orders-2023", "2023-01-01", "2024-01-01",
                                          type="order", expire=True)
        """
        program = exporting.archive(
            self._facts,
            self.name,
            check_db(target_db, "target_db"),
            start,
            end,
            type=type,
            form=self._form(form),
            expire=expire,
            checkpoint=checkpoint,
            batch_size=self.options.batch("archive"),
            on_progress=on_progress,
            retries=self.options.retries,
            backoff=self.options.backoff,
            timeout=self.options.timeout,
            parallel=self.options.slices("archive"),
            batch_bytes=self.options.batch_bytes,
            document_bytes=self.options.document_bytes,
        )
        return await run(self.client, program)

    def follow(
        self,
        *,
        type: str | None = None,
        form: IdForm | None = None,
        since: TimeLike = None,
        since_seq: str | int = "now",
        checkpoint: Checkpoint | None = None,
        wait: bool = True,
        poll: float = DEFAULT_POLL,
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield the documents of ``type`` (ids of ``form``) as they are stored, oldest first.

        Each batch of changes is yielded in id-time order, oldest first. Delivery is at least
        once: ``checkpoint.since_seq`` moves past a batch once all of it was yielded, so a caller
        that persists the checkpoint (:meth:`~couchids.Checkpoint.to_json`) and resumes with
        it sees every document, and those of a batch it stopped inside again. A document
        updated later comes again; deleted documents are not yielded. The arguments are
        checked by the call; in the blocking API a ``since_seq`` of ``"now"`` is read by the
        call, in the asyncio API by the first step.

        Args:
            type, form: which ids to follow: those a :meth:`window` of ``form`` and ``type``
                could return (written with the form's separator, and for a time form holding
                a time its key ranges reach).
            since: a time: only documents whose id holds a time at or after it, beginning
                with the first stored since then (pass it again when resuming with a
                checkpoint; not with ``since_seq``). A server that starts ``_changes`` at a
                time (Apache CouchDB 3.6) is asked to, and answers from up to hours before
                it, which is filtered out (the checkpoint's ``since_seq`` stays ``None`` until
                that first batch was all yielded: a follow stopped inside it begins at the
                time again when resumed); elsewhere the documents of ids from ``since`` on
                are read first, oldest first, as :meth:`window` reads them, then those
                stored after the call (one stored meanwhile may come twice; a follow
                stopped during that read reads it again when resumed). Needs a form whose
                ids sort by time.
            since_seq: where to begin without a checkpoint: ``"now"`` (only documents stored
                after this call), ``0`` (everything), or a ``_changes`` sequence. A
                ``checkpoint`` with a ``since_seq`` takes precedence.
            checkpoint: continue from it; its ``since_seq`` is updated after every batch.
            wait: keep waiting for new documents (long polling); ``False`` stops once caught
                up.
            poll: seconds one long-poll request waits for a change (default 10).

        Raises:
            InvalidArgumentError, InvalidTypeError: bad arguments (``wait`` not a bool, a bad
                ``poll``).
            ServerError: (and subclasses) a request failed after the retries, ran out of
                ``timeout``, or was answered with something that is not CouchDB's.

        .. not run: waits for new documents until stopped

        Example::

            mark = couchids.Checkpoint()
            async for doc in orders.follow(type="order", checkpoint=mark):
                print(doc["_id"])  # and save mark.to_json() now and then
        """
        begin, changes = following.follow(
            self._facts,
            self.name,
            type=type,
            form=self._form(form),
            since_seq=since_seq,
            since=since,
            checkpoint=checkpoint,
            wait=wait,
            batch_size=self.options.batch("follow"),
            poll=poll,
            timeout=self.options.timeout,
        )
        return after(self.client, begin, changes)

    async def set_deleted_retention(self, retention: timedelta | float | None) -> None:
        """Have the server purge this database's deleted documents once they are older than
        ``retention``; ``None`` never purges them here.

        A deleted document leaves a tombstone, which stays, replicates and slows reads;
        Apache CouchDB 3.6 purges tombstones older than a database's
        ``deleted_document_ttl`` (``PUT /{db}/_auto_purge``) in the background, with the
        auto purge plugin of its scanner enabled (``[couch_scanner_plugins]
        couch_auto_purge_plugin = true``, an administrator's setting). A replica that has
        not yet received a deletion when its tombstone is purged keeps the document. Where
        the server has no such setting (asked once with ``GET /{db}/_auto_purge``: CouchDB
        before 3.6, IBM Cloudant, PouchDB Server) nothing is changed and it says so;
        :meth:`expire` with ``purge=True`` purges on CouchDB 2.3 and later.

        Args:
            retention: a ``datetime.timedelta`` or a whole number of seconds, at least 1
                (sent in the largest unit that holds it whole, such as ``90_days``), or
                ``None`` (CouchDB's ``infinity``: never, whatever the server's default).

        Raises:
            InvalidArgumentError: a bad ``retention``; nothing is sent.
            DatabaseNotFoundError: this database does not exist.
            ServerError: (or a subclass) the server keeps no such setting (status 501), or
                refused it (CouchDB lets only admins: ``UnauthorizedError``).

        .. not run: needs CouchDB 3.6

        Example::

            await events.set_deleted_retention(timedelta(days=90))
        """
        policy = RetryPolicy.checked(
            self.options.retries,
            self.options.backoff,
            self.options.timeout,
            "set_deleted_retention",
        )
        program = features.set_deleted_retention(self._facts, self.name, retention, policy)
        await run(self.client, program)

    async def rekey(
        self,
        target_db: str,
        *,
        secret: bytes | str,
        time_field: str | None = None,
        type: str | None = None,
        mapping: TextIO | None = None,
        checkpoint: Checkpoint | None = None,
        on_progress: Callable[[RekeyReport], None] | None = None,
        create_target: bool = False,
    ) -> RekeyReport:
        """Copy every document of this database into ``target_db`` under a time-sortable id.

        The time is the document's ``time_field`` (an ISO-8601 string or epoch
        milliseconds), or, without ``time_field``, the time in a CouchDB ``utc_random`` id
        (32 hex digits holding a time in 2000-2100, :data:`couchids.UTC_RANDOM`; other ids
        are skipped, and so are most of CouchDB's ``random`` ids, whose digits read as a time
        outside it). Design documents are not copied; nor are attachments (their stubs are
        dropped). The new id is :func:`~couchids.core.rekeying.derived_id`; documents are
        otherwise copied as they are, without ``_rev``. A target that is this database is
        refused before anything is sent; a missing source creates nothing.

        Args:
            target_db: the database to copy into (it must exist, unless ``create_target``).
            secret: the secret key for the random part of the new ids (bytes, or a str
                read as UTF-8): keep it to re-run.
            time_field: the field holding each document's time.
            type: the type of the new ids (``order`` makes ``order:<id>``), which are of the
                handle's form: ``AsyncDatabase(client, "legacy", form=couchids.V7S)`` makes
                ``v7s`` ids.
            mapping: a text stream getting one JSON line ``{"old": ..., "new": ...}`` per
                copied document, as it goes (a re-run writes the lines again).
            checkpoint: continue after its ``last_id``; updated after every batch.
            on_progress: called with the report after every batch.
            create_target: create ``target_db`` when it does not exist (a plain database,
                not partitioned); by default a missing target is an error, so that a
                misspelt name creates nothing.

        Raises:
            InvalidArgumentError, InvalidTypeError: bad arguments (a bad target name too).
            DatabaseNotFoundError: this database, or the target without ``create_target``,
                does not exist.
            ServerError: (and subclasses) a request failed after the retries, ran out of
                ``timeout``, or was answered with something that is not CouchDB's.

        Example::

            with open("mapping.ndjson", "a") as out:
                await legacy.rekey("orders", secret=secret, time_field="created", type="order",
                                   mapping=out)
        """
        program = rekeying.rekey(
            self._facts,
            self.name,
            check_db(target_db, "target_db"),
            secret=secret,
            time_field=time_field,
            type=type,
            form=self.form,
            mapping=mapping,
            checkpoint=checkpoint,
            batch_size=self.options.batch("rekey"),
            on_progress=on_progress,
            timeout=self.options.timeout,
            create_target=create_target,
        )
        return await run(self.client, program)

    async def replicate(
        self,
        target: str,
        start: TimeLike,
        end: TimeLike | None = None,
        *,
        type: str | AllTypes | None = None,
        form: IdForm | None = None,
        continuous: bool = False,
        create_target: bool = True,
        server_url: str | None = None,
    ) -> AsyncReplication:
        """Start a replication of the documents made in a time window to ``target``, on the
        server; return its handle (an ``AsyncReplication``) to wait for, watch or cancel it.

        The server's replicator copies the documents whose id is of ``form`` and ``type``
        and holds a time ``t`` with ``start <= t < end``: exactly what :meth:`window` reads.
        It reads the whole ``_changes`` feed of this database and keeps what the window's
        selector matches (one regular expression per type, see
        :mod:`couchids.core.replication`: CouchDB compares strings in a selector's ``$gte``
        and ``$lt`` by ICU collation, not in id order). The replication is a document in the
        server's ``_replicator`` database: it survives a restart of the server, and
        ``cancel()`` deletes it; a one-shot replication's document is removed once the
        handle's ``wait()`` or ``status()`` sees it completed (its deletion keeps the counts,
        so it still reads ``completed``). Documents already in the target are updated, not
        duplicated; deletions inside the window are replicated too. When a one-shot
        replication copied nothing, :meth:`explain_empty` with the same ``type`` and
        ``form`` says why if the database shows it (its ids are typed and ``type`` is
        ``None``, say), as the command's note does.

        Needs Apache CouchDB 2.0+ or IBM Cloudant: PouchDB Server's replicator ignores a
        selector, so there it raises ``ReplicationFailed`` and starts nothing.

        The replicator signs in with the client's credentials (or those of ``server_url`` or
        a ``target`` URL), written into the document's endpoints, never into a URL: basic or
        ``couchdb_session`` clients as ``auth.basic``; an IAM client (``CLOUDANT_AUTH_TYPE=
        iam``, an ``IAMAuthenticator``) as its API key, in the form the server's replicator
        reads, by its welcome: ``auth.iam.api_key`` on IBM Cloudant, ``auth.ibm.api_key`` on
        Apache CouchDB (its ``couch_replicator_auth_ibm`` plugin, CouchDB 3.5.3+, enabled in
        ``[replicator] auth_plugins``; without it the replication is refused as unauthorized).
        The ``_replicator`` document holds the secret, as the replicator needs it: whoever
        may read ``_replicator`` sees it. No message, log record or repr shows it.

        Args:
            target: a database name on this server, or the URL of a database anywhere
                (``https://user:password@host/db``: the user info is sent as the endpoint's
                credentials, never in a URL). A URL on this server without credentials gets
                the client's.
            start, end: the window, any time couchids accepts; ``end`` is exclusive, and
                ``None`` (the default) runs to the last time ``form`` holds, so a continuous
                replication keeps copying documents made from now on.
            type: only ids ``type:<id>``; ``None`` for untyped ids;
                :data:`couchids.ALL_TYPES` for every type present in the database when the
                replication starts (a continuous one keeps to those types; untyped ids are
                not included, as in :meth:`window`).
            form: the id layout (default the handle's).
            continuous: keep replicating new documents of the window until cancelled.
            create_target: let the server create ``target`` if it does not exist (default).
                With ``False``, a target on this server that does not exist is refused
                before anything is written (``DatabaseNotFoundError``); a target on another
                server is the replicator's to reach, and its absence fails the replication.
            server_url: the URL at which the server reaches itself, when it is not the
                client's (a client behind a proxy or a port mapping); its user info, if any,
                is the credentials the server uses for this database.

        Raises:
            InvalidTimeError: unreadable times, or ``end`` before ``start``.
            InvalidTypeError: a bad ``type``.
            InvalidArgumentError: a bad ``form``, flag or ``target``, a target that is this
                database (by name or by a URL of it), or a client whose credentials cannot
                be given to a replicator. Nothing is sent.
            ReplicationFailed: the server cannot replicate a time window (PouchDB Server).
            DatabaseNotFoundError: this database does not exist, or, with
                ``create_target=False``, a target on this server does not. Nothing is started.
            ServerError: (and subclasses) the server failed.

        .. needs couchdb: PouchDB Server's replicator ignores a selector

        Example::

            job = await shop.replicate("shop-edge", "2024-05-01", type="order",
                                       continuous=True)
            await job.wait(60)  # running
            await job.cancel()
        """
        service_url, credentials = server_access(self.client)
        source, goal = replication.endpoints(
            service_url, credentials, self.name, target, server_url
        )
        plan = replication.plan(
            self.name,
            source,
            goal,
            start,
            end,
            type=type,
            form=self._form(form),
            continuous=continuous,
            create_target=create_target,
        )
        policy = RetryPolicy.within(self.options.timeout, "replicate")
        await run(self.client, replication.start(self._facts, [plan], policy))
        return AsyncReplication(self.client, [plan])


class AsyncSequence:
    """A named sequence of whole numbers, from 1, kept in database ``db``.

    Numbers are claimed from the database a block at a time (see
    :mod:`couchids.core.sequence`): two writers never hold the same number, on a cluster too;
    a writer that stops leaves the rest of its block unused. Safe to share between the
    threads (blocking) or the tasks of one event loop (asyncio) that use it.

    Args:
        client: an :class:`~couchids.aio.AsyncClient`.
        db: the database that holds the sequence (usually the one its ids go into).
        name: the sequence's name: letters, digits, ``_`` and ``-`` (such as the type of the
            documents it numbers).
        block: numbers claimed at a time (1 to 1,000,000): larger blocks mean fewer requests
            and larger gaps when a writer stops.
        options: the :class:`~couchids.Options` whose ``retries``, ``backoff`` and
            ``timeout`` bound each call of :meth:`next` (or :meth:`new_id`), the claim of a
            new block with its retries included; default ``Options()``.

    Raises:
        InvalidArgumentError: not an :class:`~couchids.aio.AsyncClient`, a bad database name,
            name or block, or ``options`` not an ``Options``.

    Example::

        invoices = AsyncSequence(client, "shop", "invoices")
        await invoices.next(), await invoices.next()  # (1, 2)
    """

    def __init__(
        self,
        client: AsyncClient,
        db: str,
        name: str,
        *,
        block: int = DEFAULT_BLOCK,
        options: Options | None = None,
    ) -> None:
        self._policy = check_options(options).policy("Sequence.next")
        self.client, self.db = check_client(client), check_db(db)
        check_sequence(name, block)
        self.name, self.block = name, block
        self._lock = asyncio.Lock()
        self._next = self._end = 0

    def __repr__(self) -> str:
        return f"AsyncSequence(db={self.db!r}, name={self.name!r}, block={self.block})"

    async def next(self) -> int:
        """The next number: from this writer's block, or from a new block claimed for it.

        Raises:
            AllocationFailed: no block could be claimed in 50 tries (many writers claiming
                at once, or a cluster whose copies do not confirm writes).
            ServerError: the server failed (as for :meth:`AsyncDatabase.create`);
                ``ServerTimeoutError`` when the ``timeout`` ran out.
        """
        return await self._take("Sequence.next")

    async def new_id(self, *, type: str | None = None, form: SeqForm = SEQ10) -> str:
        """A new id of a seq form: ``form.type_prefix(type) + form.encode(self.next())``.

        Args:
            type: the document type written before the number (with the form's separator).
            form: :data:`couchids.SEQ10` (10 decimal digits) or :data:`couchids.SEQ36`
                (7 base36 characters), with any separator.

        Raises:
            InvalidArgumentError: ``form`` is not a seq form, or the number no longer fits
                its width.
            InvalidTypeError: ``type`` breaks the type rule.
            AllocationFailed, ServerError: as :meth:`next`.

        Example::

            await invoices.new_id(type="invoice")  # 'invoice:0000000003'
        """
        prefix = seq_prefix(form, type)  # checked before a number is taken
        return prefix + form.encode(await self._take("Sequence.new_id"))

    async def _take(self, operation: str) -> int:
        async with self._lock:
            if self._next >= self._end:
                policy = replace(self._policy, operation=operation).renewed()
                claim = claim_block(
                    known_facts(self.client), self.db, self.name, self.block, policy
                )
                self._next, self._end = await run(self.client, claim)
            number = self._next
            self._next += 1
            return number


def _checked_form(form: object) -> IdForm:
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(
            f"form={form!r}: pass an id form, such as couchids.KUUID or couchids.V7S"
        )
    return form
