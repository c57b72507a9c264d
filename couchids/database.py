# Generated from couchids/aio/database.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""The database handle: every operation of couchids on one database, as a method.

``couchids/aio/database.py`` is written by hand (``couchids.aio.AsyncDatabase`` and
``AsyncSequence``); ``couchids/database.py`` (``couchids.Database`` and ``Sequence``) is
generated from it by ``scripts/unasync.py``, so both APIs have the same methods, parameters
and docstrings. Each method runs a program of :mod:`couchids.core` through the client's driver.
The parameters' names are one vocabulary (docs/guide/vocabulary.md).
"""

from __future__ import annotations

import collections.abc
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import closing
from datetime import timedelta
from typing import Any, Concatenate, ParamSpec, TextIO, TypeVar

from ibmcloudant.cloudant_v1 import CloudantV1

from couchids.core import (
    alltypes,
    arguments,
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
from couchids.core.effects import Program
from couchids.core.expiry import ExpireReport
from couchids.core.explaining import Style
from couchids.core.exporting import ArchiveReport
from couchids.core.facts import FactsCache
from couchids.core.following import DEFAULT_POLL
from couchids.core.names import check_db
from couchids.core.options import Options, check_options
from couchids.core.policy import RetryPolicy, one_deadline
from couchids.core.rekeying import RekeyReport
from couchids.core.scan import Checkpoint
from couchids.core.sequence import DEFAULT_BLOCK, check_sequence, claim_block, seq_prefix
from couchids.core.short import NonceSource
from couchids.core.writes import Collected, Doc, KeyOf, TimeOf
from couchids.drivers import log
from couchids.drivers.access import server_access
from couchids.drivers.blocking import (
    Rows,
    after,
    check_client,
    flat,
    known_facts,
    pages,
    run,
    stream,
)
from couchids.errors import CouchidsError, WriteResult
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import KUUID, IdForm
from couchids.idforms.seq import SEQ10, SeqForm
from couchids.idforms.times import SecondsLike, TimeLike
from couchids.replication import Replication

__all__ = ["Database", "Sequence"]

Row = dict[str, Any]
T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")


class Database:
    """One CouchDB or Cloudant database, and every couchids operation on it.

    The handle checks the name once and carries the form of the database's ids; it holds no
    connection of its own, and what couchids learns of the database is kept with the client.

    What the methods share, said once here:

    - ``start``, ``end``: a window ``[start, end)`` of any time couchids accepts (``None`` is
      now), read against the time an id holds at its precision.
    - ``type``: only ids ``type:<id>`` (with the form's separator); ``None`` for untyped ids
      only; :data:`couchids.ALL_TYPES` for the ids of every type present (not the untyped ones),
      found with one request per type (see :mod:`couchids.core.alltypes`).
    - ``form``: the id layout, default the handle's; ids of other forms are never returned nor
      touched.
    - ``checkpoint``: continue after its ``last_id``, which is updated after every batch (of
      ``export``: every document written); ``on_progress``: called with the report (of
      ``export``: the checkpoint) after every batch or page; an exception there stops the run.
    - The tuning (``timeout``, ``retries``, ``backoff``, ``parallel``, ``batch_size``, ...) is
      the handle's :class:`~couchids.Options`; what ``timeout`` bounds per method is in
      docs/guide/errors.md.
    - Errors: bad arguments raise ``InvalidTimeError``, ``InvalidTypeError`` or
      ``InvalidArgumentError`` before anything is sent; the server's failures raise
      :class:`~couchids.ServerError` or a subclass (``DatabaseNotFoundError``,
      ``UnauthorizedError``, ``RateLimitedError``, ``ServerTimeoutError``), also in the middle of
      a stream, never an empty answer.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        name: the database name.
        form: the id layout of the database's ids (default :data:`couchids.KUUID`).
        options: the :class:`~couchids.Options` of every operation (default ``Options()``).

    Example::

        shop = Database(client, "shop", form=couchids.KUUID)
        newest = shop.latest(5, type="order")
        shop.with_options(timeout=5, retries=0).create({"total": 12}, type="order")
    """

    def __init__(
        self,
        client: CloudantV1,
        name: str,
        *,
        form: IdForm = KUUID,
        options: Options | None = None,
    ) -> None:
        self.client, self.name = check_client(client), check_db(name, "name")
        self.form = arguments.form("form", form)
        self.options = check_options(options)
        self._facts: FactsCache = known_facts(self.client)

    def with_options(self, **changes: Any) -> Database:
        """A handle of the same database, client and form with this one's options changed by
        ``changes`` (:class:`~couchids.Options` fields as keywords, checked now). Cheap.

        Example::

            patient = shop.with_options(timeout=300, retries=8)
            patient.create({"total": 12}, type="order")
        """
        return Database(
            self.client, self.name, form=self.form, options=self.options.replace(**changes)
        )

    def __repr__(self) -> str:
        return f"Database({self.name!r}, form={self.form!r})"

    def _form(self, form: IdForm | None) -> IdForm:
        return self.form if form is None else form

    def _program(
        self,
        make: Callable[Concatenate[FactsCache, str, P], R],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """The program ``make`` builds for this database with the handle's facts."""
        return make(self._facts, self.name, *args, **kwargs)

    def _run(
        self,
        make: Callable[Concatenate[FactsCache, str, P], Program[T]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        return run(self.client, make(self._facts, self.name, *args, **kwargs))

    # -- reading -----------------------------------------------------------------------------

    def latest(
        self,
        n: int = 10,
        *,
        type: str | AllTypes | None = None,
        form: IdForm | None = None,
        include_docs: bool = True,
    ) -> list[Row]:
        """The newest ``n`` documents (fewer if fewer exist), newest first.

        One request once the client has seen the database; foreign ids among the newest are skipped
        and do not shorten the answer. With :data:`couchids.ALL_TYPES`: the newest ``n`` across the
        types. An empty answer for a type the database does not hold (a typo, ids of another
        form) is explained in one WARNING on the ``couchids`` logger (see :meth:`explain_empty`).

        Example::

            newest = shop.latest(5, type="click")
            shop.latest(5, type=couchids.ALL_TYPES)  # any type
        """
        call = self.options.policy("latest")  # the hint keeps to the call's deadline
        found = self._run(
            windows.latest,
            n,
            type=type,
            form=self._form(form),
            include_docs=include_docs,
            options=self.options,
        )
        self._hint(not found and n > 0, "latest", type, form, call)
        return found

    def window(
        self,
        start: TimeLike,
        end: TimeLike = None,
        *,
        type: str | AllTypes | None = None,
        form: IdForm | None = None,
        newest_first: bool = True,
        include_docs: bool = True,
    ) -> Rows[Row]:
        """The documents whose id holds a time ``t`` with ``start <= t < end``, as they come.

        ``start`` and ``end`` are any time couchids reads (a naive datetime, a date and a string
        without an offset are local time; ``"24h"`` or a timedelta is that long ago); ``end``
        is now by default. The same documents come back in either direction.

        The answer streams documents, or pages (lists that are the caller's to keep) from its
        ``pages()``; memory stays at about ``parallel + 2`` pages. In the blocking API the call
        reads the first page (so a missing database is raised by the call); in the asyncio API
        the first step does.

        Args:
            newest_first: the order of the answer.
            include_docs: yield documents; ``False`` yields ``_all_docs`` rows
                (``{"id", "key", "value"}``).

        Example::

            for doc in events.window("2024-05-01", "2024-05-02", type="click"):
                print(doc["_id"])
            for page in events.window("2024-05-01", "2024-05-02").pages():
                print(len(page))
            for doc in events.window("24h", type="click"):  # the last 24 hours
                print(doc["_id"])
        """
        program = self._program(
            windows.window,
            start,
            end,
            type=type,
            form=self._form(form),
            newest_first=newest_first,
            include_docs=include_docs,
            options=self.options,
        )
        return Rows(self._noting(pages(self.client, program.pages()), type, form))

    def _noting(
        self, read: Iterator[list[Row]], type: str | AllTypes | None, form: IdForm | None
    ) -> Iterator[list[Row]]:
        """The pages of a window's ``read``, and once it ended empty, :meth:`_hint`."""
        empty = True
        with closing(read) as each:  # type: ignore[type-var]
            for page in each:
                empty = empty and not page
                yield page
        self._hint(empty, "window", type, form)

    def _hint(
        self,
        empty: bool,
        operation: str,
        type: str | AllTypes | None,
        form: IdForm | None,
        call: RetryPolicy | None = None,
    ) -> None:
        """After ``operation`` found nothing (``empty``) of ``type``, log why at WARNING when
        the database shows it (:meth:`explain_empty`), within ``call``'s deadline (default: one
        ``timeout`` from now). A failure to find out is logged at DEBUG: the answer stands."""
        if not empty or type is ALL_TYPES or not log.hints_wanted():
            return
        try:
            with one_deadline(call or self.options.policy(operation)):
                why = self.explain_empty(type=type, form=form)
        except CouchidsError as exc:
            log.hint_failed(operation, self.name, exc)
            return
        if why is not None:
            log.hint(operation, self.name, why)

    def types_present(self, *, form: IdForm | None = None) -> list[str]:
        """The types of the ids ``<type><separator>…`` (the separator of ``form``), in ``_all_docs``
        order: about one request per type, never the type's rows.

        Example::

            shop.types_present()  # ['invoice', 'order', 'user']
        """
        policy = self.options.policy("types_present")
        separator = arguments.form("form", self._form(form)).separator
        return run(self.client, alltypes.types_present(self.name, separator, policy))

    def explain_empty(
        self,
        *,
        type: str | None = None,
        form: IdForm | None = None,
        style: Style = "python",
    ) -> str | None:
        """Why a query of ``type`` and ``form`` may have found nothing here, with what to pass
        instead; ``None`` when the database holds ids of that type and form (the window, or ``n``,
        is why) or nothing at all.

        It names the types present when there are no untyped ids or none of ``type``, and the forms
        the ids read as when none is of ``form``. Two or three small ``_all_docs`` requests, and the
        search for the types present when the scope is empty.

        Args:
            style: ``"python"`` for advice in arguments (``type='order'``), ``"command"`` in flags
                of the ``couchids`` command (``--type order``).

        Example::

            if not shop.latest():
                print(shop.explain_empty())
                # no untyped kuuid ids in 'shop'; it holds ids of types order, user: pass
                # type='order' or type=couchids.ALL_TYPES
        """
        program = explaining.explain(
            self.name, type=type, form=self._form(form), style=style, options=self.options
        )
        return run(self.client, program)

    # -- writing -----------------------------------------------------------------------------

    def create(
        self,
        doc: Doc,
        *,
        type: str | None = None,
        timestamp: TimeLike = None,
        key: str | None = None,
        form: IdForm | None = None,
    ) -> WriteResult:
        """Store a new document under a new sortable id, exactly once even when retried.

        The id is ``form.new(timestamp, type=type)``, the id ``key`` names at ``timestamp``
        (:func:`~couchids.idforms.keyed.keyed_id`), or the document's own ``_id``. A lost answer is
        retried with the same id, and a 409 settled by reading the stored document back: the same
        content is ``duplicate=True``, other content a :class:`~couchids.ConflictError`. So running
        the same call with a key again (after a crash) stores nothing twice. ``doc`` is not changed.

        Args:
            doc: a JSON object; of the top-level ``_`` fields only ``_id`` and ``_attachments``
                (see :mod:`couchids.core.document`).
            type: with an own ``_id``, the id must have it.
            timestamp: the document's own time, in its id (default now; required with ``key``, the
                same on every run); an own ``_id`` must hold it.
            key: an idempotency key naming the document (``"settle:table-7:hand-42"``); not with an
                own ``_id``.

        Returns:
            :class:`~couchids.WriteResult` with ``id``, ``rev`` and ``duplicate``.

        Raises:
            ConflictError: different content already stands under the id; nothing changed.
            ServerError: its ``doc_id`` is the id, and ``stored`` says whether the document may have
                been stored.

        Example::

            result = orders.create({"total": 12}, type="order")
            result.id, result.duplicate  # ('order:001xUbdD1RZ8cs0WUopX3WJ9DN1zkRze', False)
            hands.create(
                {"won": 40}, type="settlement", key="settle:table-7:hand-42",
                timestamp="2024-05-01T12:00:00Z",
            )  # the same id however often it runs
        """
        return self._run(
            writes.create,
            doc,
            type=type,
            timestamp=timestamp,
            key=key,
            form=self._form(form),
            options=self.options,
        )

    def bulk_create(
        self,
        docs: Iterable[Doc],
        *,
        type: str | None = None,
        form: IdForm | None = None,
        key_of: KeyOf | None = None,
        time_of: TimeOf | None = None,
    ) -> list[WriteResult]:
        """Store many new documents through ``_bulk_docs``, each exactly once even when retried:
        :meth:`bulk_create_iter` collected into a list (only the results are held).

        Args:
            docs: any iterable of documents, each as for :meth:`create`.
            key_of: a function giving each document's idempotency key (documents then have no
                ``_id``); with keys, running the whole call again writes nothing twice.
            time_of: a function giving each document's own time; required with ``key_of``.
                Default: the time the id is made.

        Returns:
            One :class:`~couchids.WriteResult` per document, in input order.

        Raises:
            BulkWriteError: some documents were not stored (``.results``, ``.failed``).
            InvalidArgumentError: a document that cannot be stored, or a ``key_of``/``time_of`` that
                failed for one; raised before its batch is sent, ``results`` holding the earlier
                batches'.
            InvalidTimeError: a time ``time_of`` gave that cannot make an id, naming
                ``time_of=``, the document and the time (``document 3: time_of= gave 'soon'``).
            ServerError: a whole request failed; ``results`` holds every document handled (those of
                the failed batch with the error and ``stored``).

        Example::

            hands = [{"hand": 43, "at": "2024-05-01T12:05:00Z", "won": 40}]
            results = db.bulk_create(
                hands, type="settlement",
                key_of=lambda d: f"settle:table-7:hand-{d['hand']}", time_of=lambda d: d["at"],
            )
        """
        program = self._bulk("bulk_create", docs, type, form, key_of, time_of)
        collected = Collected(self.name)
        try:
            with closing(stream(self.client, program)) as batches:
                for batch in batches:
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
    ) -> Iterator[WriteResult]:
        """Store many new documents through ``_bulk_docs``, yielding each result as its batch ends,
        in input order; arguments as for :meth:`bulk_create`.

        ``docs`` is read one batch at a time, so memory stays bounded by ``batch_size``. The next
        batch is sent while the one before is written (unless they share an id), from the third:
        the second waits for the first, so a refused login is refused once. Each batch is
        settled as :meth:`create` settles one document; a row that fails carries its ``error`` in
        its result and stops nothing. Closing the iterator early may leave the batch already sent
        stored, unseen: with keys or own ids, a re-run reports those as duplicates. Nothing is sent
        before the first step.

        Raises:
            InvalidArgumentError: a bad setting (at the call), or a document that cannot be stored
                (when its batch is read; nothing of that batch is sent).
            ServerError: a whole request failed; ``results`` as for :meth:`bulk_create`.

        Example::

            docs = ({"n": n} for n in range(2_000))  # any iterable, of any length
            with open("results.log", "w") as log:
                for result in events.bulk_create_iter(docs):
                    log.write(f"{result.id} {result.ok}\\n")
        """
        program = self._bulk("bulk_create_iter", docs, type, form, key_of, time_of)
        return flat(stream(self.client, program))

    def _bulk(
        self,
        operation: str,
        docs: Iterable[Doc],
        type: str | None,
        form: IdForm | None,
        key_of: KeyOf | None,
        time_of: TimeOf | None,
    ) -> Program[None]:
        """The program of a bulk write, named ``operation`` in its messages."""
        return writes.bulk(
            self._facts,
            operation,
            self.name,
            docs,
            type=type,
            form=self._form(form),
            key_of=key_of,
            time_of=time_of,
            options=self.options,
        )

    def create_short(
        self,
        doc: Mapping[str, Any],
        *,
        timestamp: TimeLike = None,
        rng: NonceSource | None = None,
    ) -> WriteResult:
        """Store a new document under a free short id ``YYMMDD-<nonce>`` of the UTC day of
        ``timestamp``.

        Tries 10 random 2-letter nonces, then 10 of 3 letters; two writers never own one id, on a
        cluster too (:mod:`couchids.core.short`). The stored document gets the field
        ``couchids_alloc``, a random token that tells which write stored it. Retried as
        :meth:`create`, so it is stored once.

        Args:
            doc: a JSON object without ``_id`` or ``couchids_alloc``.
            rng: the random source for nonces (:func:`~couchids.core.short.random_nonce`); default
                ``secrets``.

        Raises:
            AllocationFailed: none of the 20 tries could be claimed; nothing was stored.

        Example::

            result = posts.create_short({"title": "hello"})
            result.id  # '260107-bc'
        """
        return self._run(short.create_short, doc, now=timestamp, rng=rng, options=self.options)

    def sequence(self, name: str, *, block: int = DEFAULT_BLOCK) -> Sequence:
        """The sequence ``name`` kept in this database (:class:`Sequence`, whose arguments
        these are), with the handle's options.

        Example::

            invoices = shop.sequence("invoices")
            invoices.next()  # 1
        """
        return Sequence(self.client, self.name, name, block=block, options=self.options)

    # -- the data lifecycle ------------------------------------------------------------------

    def count(
        self,
        start: TimeLike,
        end: TimeLike = None,
        *,
        type: str | AllTypes | None = None,
        form: IdForm | None = None,
        index_only: bool = False,
    ) -> int:
        """The number of documents whose id holds a time ``t`` with ``start <= t < end`` (now
        by default): what :meth:`window` returns, counted from the window's ids as it reads them
        (no documents).

        ``index_only=True`` counts instead every id in the window's key range from the index, in
        two ``limit=1`` requests on CouchDB and Cloudant whatever the window holds: child ids
        (``order:<id>:line1``), ids of other forms and design documents in the range too. Its
        requests must name one ``update_seq`` (no write landed between them), else it counts the
        window's ids; on PouchDB Server (whose ``offset`` is no row count) it always does. A
        missing database raises, never 0.

        Example::

            orders.count("2024-05-01", "2024-06-01", type="order")
        """
        counted = self._run(
            counting.count,
            start,
            end,
            type=type,
            form=self._form(form),
            index_only=index_only,
            options=self.options,
        )
        self._hint(counted == 0, "count", type, form)
        return counted

    def histogram(
        self,
        start: TimeLike,
        end: TimeLike = None,
        *,
        every: str | timedelta = "1h",
        type: str | None = None,
        form: IdForm | None = None,
        index_only: bool = False,
    ) -> list[Bucket]:
        """Counts per bucket of ``every`` (``"1h"``, ``"1d"``, ``"15m"``, ``"1w"`` or a timedelta),
        aligned to UTC, covering ``[start, end)`` (``end`` now by default); the rest as for
        :meth:`count`.

        Inner edges fall on multiples of ``every`` from Monday 1970-01-05 (so ``"1w"`` buckets are
        ISO weeks); the first bucket starts at ``start`` and the last ends at ``end``. One scan
        of the window's ids, bucketed; with ``index_only=True``, one ``limit=1`` request per edge
        on CouchDB and Cloudant, ``parallel`` at a time.

        Example::

            for bucket in orders.histogram("2024-05-01", "2024-05-08", every="1d",
                                                 type="order"):
                print(bucket.start.date(), bucket.count)
        """
        buckets = self._run(
            counting.histogram,
            start,
            end,
            every=every,
            type=type,
            form=self._form(form),
            index_only=index_only,
            options=self.options,
        )
        self._hint(not any(bucket.count for bucket in buckets), "histogram", type, form)
        return buckets

    def expire(
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
        """Delete the documents of ``type`` (``None``: untyped; it must be given) whose id holds a
        time before ``before``.

        A dry run (the default) reports what would go. Safe to run again, also after an
        interruption; every id is checked against ``before``, ``type`` and ``form`` before it is
        deleted, whatever the checkpoint or the server says, and a conflicted document loses every
        leaf.

        Args:
            purge: also purge the deleted revisions (CouchDB 2.3+; refused elsewhere before anything
                is deleted).
            checkpoint: a :class:`~couchids.Checkpoint` a stopped expire of this database filled:
                resumes after its ``last_id``, which must be a document of this database (a
                deleted one too; not looked up with ``purge``, which purged it), else
                :class:`~couchids.InvalidArgumentError` before anything is deleted.

        Example::

            report = events.expire("2024-01-01", type="click", dry_run=False)
            print(report.deleted, report.conflicts)
        """
        return self._run(
            expiry.expire,
            before,
            type=type,
            form=self._form(form),
            dry_run=dry_run,
            purge=purge,
            checkpoint=checkpoint,
            on_progress=on_progress,
            options=self.options,
        )

    def export(
        self,
        start: TimeLike,
        end: TimeLike = None,
        *,
        out: TextIO,
        type: str | None = None,
        form: IdForm | None = None,
        csv: collections.abc.Sequence[str] | None = None,
        checkpoint: Checkpoint | None = None,
        on_progress: Callable[[Checkpoint], None] | None = None,
    ) -> Checkpoint:
        """Write the documents made in ``[start, end)`` (``end`` now by default) to ``out``,
        given by name, oldest first: one line of JSON each (NDJSON), or with ``csv`` a header
        of those fields (unless resuming) and a row per document (non-scalar values as JSON, a
        missing field empty). In the asyncio API ``out`` is written on the event loop's thread.

        Args:
            out: a text stream (opened with ``newline=""`` for CSV).
            csv: the CSV's columns, such as ``["_id", "total"]``; without them, NDJSON.
            checkpoint: a :class:`~couchids.Checkpoint` a stopped export of this database
                filled: resumes after its ``last_id``, which must be a document of this database
                (a deleted one too), else :class:`~couchids.InvalidArgumentError` before anything
                is written.

        Returns:
            :class:`~couchids.Checkpoint`: ``last_id`` the last document written, ``done`` how many.

        Example::

            with open("may.ndjson", "w") as out:
                mark = orders.export("2024-05-01", "2024-06-01", out=out, type="order")
            with open("may.csv", "w", newline="") as out:
                orders.export("2024-05-01", "2024-06-01", out=out, csv=["_id", "total"])
        """
        return self._run(
            exporting.export,
            start,
            end,
            out,
            type=type,
            form=self._form(form),
            csv=csv,
            checkpoint=checkpoint,
            on_progress=on_progress,
            options=self.options,
        )

    def archive(
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
        """Copy the documents made in ``[start, end)`` into the existing ``target_db``; with
        ``expire``, delete them here.

        Documents are copied with their revisions and attachments (``new_edits=false``), every leaf
        of a conflicted one (listed in ``conflicted``), so a re-run copies nothing twice. With
        ``expire`` each page is deleted right after the target stored it, by exactly the revisions
        copied: one changed meanwhile is kept and reported in ``expired.conflicts``. A document over
        ``document_bytes``, or refused as too large, is listed in ``failed`` and kept, as is one the
        target does not show live at a revision copied when read back (deleted or edited there).
        A target that is this database is refused before anything is sent, as is a checkpoint
        whose ``last_id`` is no document of this database (a deleted one is).

        Example::

            report = orders.archive("orders-2023", "2023-01-01", "2024-01-01",
                                          type="order", expire=True)
        """
        return self._run(
            exporting.archive,
            check_db(target_db, "target_db"),
            start,
            end,
            type=type,
            form=self._form(form),
            expire=expire,
            checkpoint=checkpoint,
            on_progress=on_progress,
            options=self.options,
        )

    def follow(
        self,
        *,
        type: str | None = None,
        form: IdForm | None = None,
        since: TimeLike = None,
        since_seq: str | int = "now",
        checkpoint: Checkpoint | None = None,
        wait: bool = True,
        poll: SecondsLike = DEFAULT_POLL,
    ) -> Iterator[dict[str, Any]]:
        """Yield the documents of ``type`` and ``form`` as they are stored, each batch of changes in
        id-time order.

        Delivery is at least once: ``checkpoint.since_seq`` moves past a batch once all of it was
        yielded, so resuming with a saved checkpoint (:meth:`~couchids.Checkpoint.to_json`) misses
        nothing. An updated document comes again; deletions are not yielded. The guide
        (docs/guide/lifecycle.md) says how ``since`` is served by each server.

        Args:
            since: only ids holding this time or a later one, from the first stored since then
                (pass it again when resuming; not with ``since_seq``); needs a form whose ids sort
                by time.
            since_seq: where to begin without a checkpoint: ``"now"``, ``0`` (everything) or a
                ``_changes`` sequence (a number, or CouchDB's ``"12-g1AAAA..."``; anything else
                is refused before a request); a checkpoint's ``since_seq`` takes precedence.
            checkpoint: continue from it; its ``since_seq`` is updated after every batch.
            wait: keep waiting for new documents; ``False`` stops once caught up.
            poll: seconds one long-poll request waits for a change (PouchDB Server, which holds a
                long poll until a change comes, is asked every ``poll`` seconds instead).

        .. not run: waits for new documents until stopped

        Example::

            mark = couchids.Checkpoint()
            for doc in orders.follow(type="order", checkpoint=mark):
                print(doc["_id"])  # and save mark.to_json() now and then
        """
        begin, changes = self._program(
            following.follow,
            type=type,
            form=self._form(form),
            since_seq=since_seq,
            since=since,
            checkpoint=checkpoint,
            wait=wait,
            poll=poll,
            options=self.options,
        )
        return after(self.client, begin, changes)

    def set_deleted_retention(self, retention: timedelta | float | None) -> None:
        """Have the server purge this database's deleted documents once older than ``retention``
        (a ``timedelta`` or whole seconds, at least 1); ``None`` never purges them.

        Apache CouchDB 3.6's ``PUT /{db}/_auto_purge``, acted on when its scanner's auto purge
        plugin is enabled. A replica that has not yet received a deletion when its tombstone is
        purged keeps the document. A server without the setting (CouchDB before 3.6, Cloudant,
        PouchDB Server) raises a ``ServerError`` of status 501 and changes nothing; CouchDB lets
        only admins set it.

        .. not run: needs CouchDB 3.6

        Example::

            events.set_deleted_retention(timedelta(days=90))
        """
        policy = self.options.policy("set_deleted_retention")
        program = features.set_deleted_retention(self._facts, self.name, retention, policy)
        run(self.client, program)

    def rekey(
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
        """Copy every document of this database into ``target_db`` under a time-sortable id of the
        handle's form.

        The time is the document's ``time_field`` (ISO 8601 or epoch ms), or else the time in a
        CouchDB ``utc_random`` id (:data:`couchids.UTC_RANDOM`; other ids are skipped). The new id
        is :func:`~couchids.core.rekeying.derived_id`; documents are copied without ``_rev``,
        attachments or design documents. A target that is this database is refused before anything
        is sent.

        Args:
            secret: the key of the new ids' random part (bytes, or a str read as UTF-8): keep it to
                re-run.
            type: the type of the new ids.
            mapping: a text stream getting a JSON line ``{"old": ..., "new": ...}`` per document.
            create_target: create a missing ``target_db`` (not partitioned); by default it is an
                error, so that a misspelt name creates nothing.
            checkpoint: a :class:`~couchids.Checkpoint` a stopped rekey of this database
                filled: resumes after its ``last_id``, which must be a document of this database
                (a deleted one too), else :class:`~couchids.InvalidArgumentError` before anything
                is copied.

        Example::

            with open("mapping.ndjson", "a") as out:
                legacy.rekey("orders", secret=secret, time_field="created", type="order",
                                   mapping=out)
        """
        return self._run(
            rekeying.rekey,
            check_db(target_db, "target_db"),
            secret=secret,
            time_field=time_field,
            type=type,
            form=self.form,
            mapping=mapping,
            checkpoint=checkpoint,
            on_progress=on_progress,
            create_target=create_target,
            options=self.options,
        )

    def replicate(
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
    ) -> Replication:
        """Start a server-side replication of the documents made in a window to ``target``; return
        its handle (an ``Replication``) to wait for, watch or cancel it.

        It copies what :meth:`window` would read (``end=None``: no end, so a continuous replication
        keeps copying new documents), deletions included, as a ``_replicator`` document that
        survives a restart; with :data:`couchids.ALL_TYPES`, the types present when it starts. Needs
        Apache CouchDB 2.0+ or IBM Cloudant (PouchDB Server raises ``ReplicationFailed``). The
        replicator signs in with the client's credentials, written into the document's endpoints,
        never a URL: whoever may read ``_replicator`` sees them (docs/guide/lifecycle.md says how
        each kind of credentials is sent).

        Args:
            target: a database name on this server, or a database URL (its user info becomes the
                endpoint's credentials).
            continuous: keep replicating new documents of the window until cancelled.
            create_target: let the server create a missing ``target``; with ``False`` a missing
                target on this server raises ``DatabaseNotFoundError`` before anything is written.
            server_url: the URL at which the server reaches itself, when not the client's.

        Raises:
            InvalidArgumentError: also a target that is this database, or a client whose credentials
                cannot be given to a replicator; nothing is sent.
            ReplicationFailed: the server cannot replicate a time window (PouchDB Server).

        .. needs couchdb: PouchDB Server's replicator ignores a selector

        Example::

            job = shop.replicate("shop-edge", "2024-05-01", type="order",
                                       continuous=True)
            job.wait(60)  # running
            job.cancel()
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
        policy = self.options.policy("replicate")
        run(self.client, replication.start(self._facts, [plan], policy))
        return Replication(self.client, [plan])


class Sequence:
    """A named sequence of whole numbers from 1, kept in database ``db``.

    Numbers are claimed a block at a time (:mod:`couchids.core.sequence`): two writers never hold
    the same number, on a cluster too; a writer that stops leaves the rest of its block unused.
    Safe to share between threads (blocking) or the tasks of one event loop (asyncio).

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database that holds it.
        name: letters, digits, ``_`` and ``-``.
        block: numbers claimed at a time (1 to 1,000,000).
        options: the :class:`~couchids.Options` bounding each call of :meth:`next`.

    Example::

        invoices = Sequence(client, "shop", "invoices")
        invoices.next(), invoices.next()  # (1, 2)
    """

    def __init__(
        self,
        client: CloudantV1,
        db: str,
        name: str,
        *,
        block: int = DEFAULT_BLOCK,
        options: Options | None = None,
    ) -> None:
        self._options = check_options(options)
        self.client, self.db = check_client(client), check_db(db)
        check_sequence(name, block)
        self.name, self.block = name, block
        self._lock = threading.Lock()
        self._next = self._end = 0

    def __repr__(self) -> str:
        return f"Sequence(db={self.db!r}, name={self.name!r}, block={self.block})"

    def next(self) -> int:
        """The next number: from this writer's block, or from a new block claimed for it.

        Raises:
            AllocationFailed: no block could be claimed in 50 tries.
            ServerError: the server failed (``ServerTimeoutError`` when ``timeout`` ran out).
        """
        return self._take("Sequence.next")

    def new_id(self, *, type: str | None = None, form: SeqForm = SEQ10) -> str:
        """A new id of a seq form (:data:`couchids.SEQ10` or :data:`couchids.SEQ36`):
        ``form.type_prefix(type) + form.encode(self.next())``.

        Raises:
            InvalidArgumentError: ``form`` is not a seq form, or the number outgrew its width.

        Example::

            invoices.new_id(type="invoice")  # 'invoice:0000000003'
        """
        prefix = seq_prefix(form, type)  # checked before a number is taken
        return prefix + form.encode(self._take("Sequence.new_id"))

    def _take(self, operation: str) -> int:
        with self._lock:
            if self._next >= self._end:
                policy = self._options.policy(operation)
                claim = claim_block(
                    known_facts(self.client), self.db, self.name, self.block, policy
                )
                self._next, self._end = run(self.client, claim)
            number = self._next
            self._next += 1
            return number
