"""The series handle: a database per period of time, and every couchids operation across them.

Both APIs are one text, as for the database handle (:mod:`couchids.aio.database`):
``couchids/aio/series.py`` holds the asyncio handle (``couchids.aio.AsyncSeries``), written by
hand; ``couchids/series.py`` holds the blocking one (``couchids.Series``), generated from it by
``scripts/unasync.py``.

A series is Cloudant's "timeboxed database" pattern for data that grows without end
(readings, events, logs): each period's documents live in a database of their own, named
after the period (:mod:`couchids.core.periods`), and retention drops whole databases, which
is instant and leaves no tombstone behind, where deleting documents one by one leaves a
tombstone for each (they stay in the database, are replicated, and slow ``_all_docs``,
replication and index builds; Cloudant has no ``_purge``). Time-sortable ids make the rest
need no index: a document goes to the database of the time in its id, and a window across
periods reads each period's database in turn, in order.

What was decided, where a series could do otherwise:

- **Writes create what is missing.** A write whose period's database does not exist creates
  it (one ``PUT``; a ``412`` from a racing writer is as good) and is sent again, once:
  nothing is lost when ``prepare`` did not run ahead. A late write into a period already
  dropped by ``expire`` therefore makes that database again,
  holding only the late documents; the next ``expire`` drops it again.
- **A database the server's cap refuses refuses the write, whole.** IBM Cloudant holds at
  most 200 databases on Standard and 20 on Lite (instances made since March 2025), and a
  series makes one per period: the write that needs one more raises
  :class:`~couchids.errors.DatabaseLimitError`, saying so and what to do, with nothing of it
  stored. ``bulk_create`` makes every missing database of the call's periods before it sends
  a document, so a refusal refuses the whole call and nothing is written to any period.
  ``max_databases`` (or Cloudant's own reading of its cap) lets ``prepare`` warn
  (:class:`~couchids.errors.DatabaseLimitWarning`) while there is still room.
- **A document belongs to the period of the time in its id.** Reads clamp each period's
  window to its period, so a document stored in another period's database (by hand, or by a
  writer whose clock was wrong) is never read twice nor out of order, and is not read at
  all; ``expire`` deletes it once its id's time is before the cutoff, and with its database
  when that is dropped.
- **Missing periods are empty.** A period without a database (never written, or dropped
  while read) holds nothing; any other failure of the server is raised, never read as "no
  documents".
- **One form.** Every operation uses the series' form, which routes documents to their
  periods; there is no ``form=`` per call.
- Listing the databases takes one ``GET /_all_dbs``, which CouchDB 3 allows only to admins
  unless ``[chttpd] admin_only_all_dbs`` is false (Cloudant: any user allowed to list them).
"""

from __future__ import annotations

import collections.abc
import warnings
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from couchids.aio.database import AsyncDatabase
from couchids.aio.replication import AsyncReplication
from couchids.core import replication, series
from couchids.core.arguments import count as check_count
from couchids.core.counting import Bucket
from couchids.core.exporting import Format
from couchids.core.facts import FactsCache
from couchids.core.options import Options, check_options
from couchids.core.periods import Every, Period, SeriesLayout
from couchids.core.policy import RetryPolicy, one_deadline
from couchids.core.scan import Checkpoint
from couchids.core.series import PeriodDocs, PlacedResults, SeriesExpireReport
from couchids.core.short import NonceSource
from couchids.core.writes import Doc, KeyOf, TimeOf
from couchids.drivers.access import server_access
from couchids.drivers.aio import (
    AsyncClient,
    AsyncRows,
    check_client,
    known_facts,
    pages,
    run,
)
from couchids.errors import (
    BulkWriteError,
    CouchidsError,
    DatabaseLimitError,
    DatabaseLimitWarning,
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidTimeError,
    WriteResult,
)
from couchids.idforms.doctypes import AllTypes
from couchids.idforms.forms import KUUID, IdForm
from couchids.idforms.times import TimeLike, to_ms

__all__ = ["AsyncSeries"]

Row = dict[str, Any]


class AsyncSeries:
    """A series of databases, one per day, ISO week, month or year of UTC time, and every
    couchids operation across them.

    The databases are named ``<prefix>-<period>``: ``events-2026`` (a year),
    ``events-2026-11`` (a month), ``events-2026-w48`` (ISO week 48 of ISO year 2026, from
    Monday), ``events-2026-11-25`` (a day); see :mod:`couchids.core.periods`. The handle
    holds no connection of its own and sends nothing when made.

    Args:
        client: an :class:`~couchids.aio.AsyncClient`.
        prefix: what the series' database names start with: a lower-case letter, then
            lower-case letters, digits and ``_ $ ( ) + - /``, leaving room for the period
            (at most 227 characters for days, 233 for years).
        every: ``"day"``, ``"week"``, ``"month"`` (the default) or ``"year"``.
        form: the id form of the series' documents (default :data:`couchids.KUUID`): the
            time in an id says which period's database holds the document.
        partitioned: create the databases partitioned (``?partitioned=true``; CouchDB 3 and
            Cloudant), for ids whose type is their partition (``sensor-7:<id>``).
        max_databases: the most databases the server holds, the series' and every other
            (IBM Cloudant since March 2025: 200 on Standard, 20 on Lite): :meth:`prepare`
            warns when few are left, and a refused creation is told from a refused
            permission by it. ``None`` (the default): on Cloudant, its own reading
            (``/_api/v2/user/capacity/databases``, where the credentials may read it);
            elsewhere no cap is known.
        options: the :class:`~couchids.Options` of every operation, and of each period's
            database handle (default ``Options()``); :meth:`with_options` makes a handle
            with other options.

    Raises:
        InvalidArgumentError: not an :class:`~couchids.aio.AsyncClient`, an ``every`` that is
            not a period, a prefix that cannot start a database name, a form whose ids hold
            no time that sorts in ``_all_docs``, ``partitioned`` not a bool,
            ``max_databases`` not a positive int, or ``options`` not an ``Options``.

    Example::

        events = AsyncSeries(client, "events", every="month")
        await events.prepare()  # ['events-2026-11', 'events-2026-12']
        await events.create({"temp": 21.5}, type="reading")
        async for doc in events.window("2026-10-15", "2026-11-15", type="reading"):
            print(doc["_id"])
    """

    def __init__(
        self,
        client: AsyncClient,
        prefix: str,
        *,
        every: Every = "month",
        form: IdForm = KUUID,
        partitioned: bool = False,
        max_databases: int | None = None,
        options: Options | None = None,
    ) -> None:
        self.client = check_client(client)
        #: The :class:`~couchids.Options` of this handle's operations, and of the handles of
        #: its databases.
        self.options = check_options(options)
        self.layout = SeriesLayout(prefix, every, form, partitioned)
        if max_databases is not None:
            check_count("max_databases", max_databases, 1)
        self.prefix, self.every, self.form = prefix, every, form
        self.partitioned = partitioned
        self.max_databases = max_databases
        self._facts: FactsCache = known_facts(self.client)

    def with_options(self, **changes: Any) -> AsyncSeries:
        """A handle of the same series whose options are this one's with ``changes``
        (:class:`~couchids.Options` fields as keywords, checked now); it shares the client
        and what couchids knows of the databases.

        Raises:
            InvalidArgumentError: a name that is not an option, or a value out of its range.

        Example::

            await events.with_options(timeout=300).expire("2026-01-01", dry_run=False)
        """
        return AsyncSeries(
            self.client,
            self.prefix,
            every=self.every,
            form=self.form,
            partitioned=self.partitioned,
            max_databases=self.max_databases,
            options=self.options.replace(**changes),
        )

    def __repr__(self) -> str:
        return f"AsyncSeries({self.prefix!r}, every={self.every!r}, form={self.form!r})"

    # -- the databases -----------------------------------------------------------------------

    def database(self, at: TimeLike = None) -> AsyncDatabase:
        """The handle of the database of the period holding the time ``at`` (default now),
        whether it exists or not: for the operations of one database (``follow``,
        ``rekey``, ...). Sends nothing.

        Raises:
            InvalidTimeError: an unreadable ``at``, or one past the last time of the form.

        Example::

            november = events.database("2026-11-25")
            november.name  # 'events-2026-11'
        """
        return self._database(self.layout.period_at(to_ms(at)))

    async def databases(self) -> list[str]:
        """The names of the series' databases that exist, oldest first: one
        ``GET /_all_dbs``.

        A name is taken only when it is exactly the name of a period of this series: another
        series whose prefix starts the same (``events-x``), or a database of other periods
        with the same prefix, is left out (:func:`couchids.core.periods.parse_name` reads a
        name back).

        Args:

        Raises:
            ServerError: (or a subclass) the server failed; ``UnauthorizedError`` when the
                credentials may not list databases (CouchDB 3 lets only admins, unless
                ``[chttpd] admin_only_all_dbs`` is false).

        Example::

            await events.databases()  # ['events-2026-10', 'events-2026-11']
        """
        policy = RetryPolicy.within(self.options.timeout, "databases")
        listed = await run(self.client, series.list_databases(self._facts, self.layout, policy))
        return [name for _, name in listed]

    async def prepare(self, ahead: int = 1) -> list[str]:
        """Create the databases of the current period and of the ``ahead`` periods after it,
        unless they exist; return their names.

        Idempotent, and safe when several processes prepare at once: a database another
        made meanwhile (``412 file_exists``) is as good, and on a cluster a create that
        answers ``202`` or a ``500`` while the database was made is checked with a
        ``GET``. Writes create a missing period's database themselves, so preparing only
        spares the first write of each period that detour; run it from a daily job, with
        ``ahead`` covering the job's longest pause.

        Where the server's cap on databases is known (``max_databases``, or Cloudant's own
        reading), the databases it holds are then counted (one ``GET /_all_dbs``), and when
        no more than ``ahead`` more can be made it warns with a
        :class:`~couchids.errors.DatabaseLimitWarning` (``warnings.warn``) saying which
        period's database will be refused and what to do: the job that prepares ahead hears
        of the cap periods before a write meets it.

        Args:
            ahead: periods after the current one, 0 to 366.

        Raises:
            InvalidArgumentError: a bad ``ahead``; nothing is created.
            InvalidTimeError: a period past the last time of the series' form; nothing is
                created.
            DatabaseLimitError: the server's cap on databases refused one (those of the
                periods before it are made).
            ServerError: (or a subclass) a database could not be made.

        Example::

            await events.prepare(ahead=2)  # ['events-2026-11', 'events-2026-12', 'events-2027-01']
        """
        policy = RetryPolicy.within(self.options.timeout, "prepare")
        program = series.prepare(
            self._facts, self.layout, to_ms(None), ahead, policy, self.max_databases
        )
        names = await run(self.client, program)
        check = series.headroom(self._facts, self.layout, ahead, policy, self.max_databases)
        warning = await run(self.client, check)
        if warning is not None:
            warnings.warn(warning, DatabaseLimitWarning, stacklevel=2)
        return names

    # -- writing -----------------------------------------------------------------------------

    async def create(
        self,
        doc: Doc,
        *,
        type: str | None = None,
        timestamp: TimeLike = None,
        key: str | None = None,
    ) -> WriteResult:
        """Store a new document in the database of its period, exactly once even when
        retried (:meth:`AsyncDatabase.create` in that database).

        The period is that of ``timestamp``; without one, of the time in the document's own
        ``_id``, or of now (read once, and given to the id, so the id's time is always in
        its database's period). A missing database is created and the write sent again
        (once).

        Args:
            doc, type, key: as for :meth:`AsyncDatabase.create`; an own
                ``_id`` must be an id of the series' form.
            timestamp: the document's own time, in its id, which picks its period (default
                now).

        Returns:
            :class:`~couchids.WriteResult` with ``id``, ``rev`` and ``duplicate``.

        Raises:
            as :meth:`AsyncDatabase.create`; ``InvalidTimeError`` for a time past the last
            of the series' form; ``InvalidArgumentError`` for an own ``_id`` of another form;
            :class:`~couchids.errors.DatabaseLimitError` when the period's database is
            missing and the server's cap on databases refuses it: the document is not stored
            (``stored`` is ``False``, ``doc_id`` its id).

        Example::

            result = await events.create({"temp": 21.5}, type="reading",
                                         timestamp="2026-11-25T10:00:00Z")
            result.id  # 'reading:001yw3U2...', stored in events-2026-11
        """
        when = self._time_of(doc, timestamp, key)
        period = self.layout.period_at(to_ms(when))
        db = self._database(period)
        with one_deadline(self.options.policy("create")):
            try:
                return await db.create(
                    doc,
                    type=type,
                    timestamp=when,
                    key=key,
                )
            except DatabaseNotFoundError as missing:
                await self._make(period, missing)
            return await db.create(
                doc,
                type=type,
                timestamp=when,
                key=key,
            )

    async def bulk_create(
        self,
        docs: Iterable[Doc],
        *,
        type: str | None = None,
        key_of: KeyOf | None = None,
        time_of: TimeOf | None = None,
    ) -> list[WriteResult]:
        """Store many new documents, each in the database of its period: one
        :meth:`AsyncDatabase.bulk_create` per period, oldest period first.

        Every document is read and checked, and its period found, before anything is
        written (so ``docs`` is held in memory; split a job of millions of documents into
        calls). Each document's time is ``time_of(doc)``, called once; without
        ``time_of``, the time in its own ``_id``, or the time of the call, read once for all
        of them: the ids of one call then share their millisecond (their order among
        themselves is that of their random parts), and a call made across the end of a
        period puts them all in one period's database, the one their ids name. Every
        period's database not known to this client yet is looked up (one ``GET`` each) and
        a missing one created before any document is sent, so that a database the server's
        cap refuses refuses the whole call with nothing written; a database dropped
        meanwhile is created again and the documents it refused are written again (once).

        Args:
            docs, type, key_of: as for :meth:`AsyncDatabase.bulk_create`.
            time_of: a function giving each document's own time, which picks its period;
                required with ``key_of``.

        Returns:
            One :class:`~couchids.WriteResult` per document, in input order.

        Raises:
            BulkWriteError: some documents were not stored; raised once every period was
                written, with every result in input order.
            InvalidArgumentError, InvalidTimeError, InvalidTypeError: a document that cannot
                be stored or routed, or a bad setting: nothing is written. A ``key_of`` that
                fails for a document is raised when its period is written, with the results
                of the periods before it.
            DatabaseLimitError: a period's database is missing and the server's cap on
                databases refuses it: no document is written (the databases of the periods
                before it in time may have been made, empty). Should that happen to a
                database dropped after the call looked, the periods before it are written,
                as for a ``ServerError``, and none of the documents of that period is
                stored.
            ServerError: a whole request failed: its ``results`` hold those of the periods
                written before it, in input order, then those of the period that failed (see
                :meth:`AsyncDatabase.bulk_create`).

        Example::

            readings = [{"at": "2026-11-30T23:59:00Z"}, {"at": "2026-12-01T00:01:00Z"}]
            results = await events.bulk_create(readings, type="reading",
                                               time_of=lambda d: d["at"])
            # one _bulk_docs into events-2026-11, one into events-2026-12
        """
        if type is not None:
            self.form.type_prefix(type)  # InvalidTypeError, before a database is made
        now = datetime.now(UTC)
        total, parts = series.route_documents(
            self.layout, docs, key_of=key_of, time_of=time_of, now=now
        )
        policy = RetryPolicy.within(self.options.timeout, "bulk_create")
        names = [part.name for part in parts]
        made = series.make_missing(self._facts, self.layout, names, policy, self.max_databases)
        await run(self.client, made)
        placed = PlacedResults(total)
        for part in parts:
            try:
                written = await self._bulk_into(part, type, key_of)
            except CouchidsError as exc:
                exc.results = [*placed.handled(), *exc.results]
                raise
            placed.place(part, written)
        return placed.finish()

    async def _bulk_into(
        self,
        part: PeriodDocs,
        type: str | None,
        key_of: KeyOf | None,
    ) -> list[WriteResult]:
        """The results of writing ``part``'s documents into its period's database (made when
        it is missing, and the documents it refused written again)."""
        db = self._database(part.period)
        try:
            return await db.bulk_create(
                part.docs,
                type=type,
                key_of=key_of,
                time_of=part.time_of,
            )
        except BulkWriteError as exc:
            return list(exc.results)
        except DatabaseNotFoundError as exc:
            handled, missing = list(exc.results), exc
        again = part.to_write_again(handled)
        try:
            await self._make(part.period, missing)
        except DatabaseLimitError as exc:
            refused = set(again)
            exc.results = [
                WriteResult(result.id, None, error=exc) if at in refused else result
                for at, result in enumerate(handled)
            ]
            raise
        retried = set(again)
        standing = [result for at, result in enumerate(handled) if at not in retried]
        try:
            rewritten = await db.bulk_create(
                [part.docs[at] for at in again],
                type=type,
                key_of=key_of,
                time_of=part.time_of,
            )
        except BulkWriteError as exc:
            rewritten = list(exc.results)
        except CouchidsError as exc:
            exc.results = [*standing, *exc.results]
            raise
        return part.merged(handled, again, rewritten)

    async def create_short(
        self,
        doc: Mapping[str, Any],
        *,
        timestamp: TimeLike = None,
        rng: NonceSource | None = None,
    ) -> WriteResult:
        """Store a new document under a free short id ``YYMMDD-<nonce>`` in the database of
        the period of ``timestamp`` (:meth:`AsyncDatabase.create_short` there). Short ids
        hold their UTC day, and every period is made of whole UTC days, so the id's day is
        always in its database's period. A missing database is created and the write sent
        again (once).

        Args:
            doc, rng: as for :meth:`AsyncDatabase.create_short`.
            timestamp: the document's own time, which picks its period and whose UTC date
                starts the id (default now, read once).

        Raises:
            as :meth:`AsyncDatabase.create_short`.

        Example::

            result = await posts.create_short({"title": "hello"})
            result.id  # '261125-bc', in posts-2026-11
        """
        when = datetime.now(UTC) if timestamp is None else timestamp
        period = self.layout.period_at(to_ms(when))
        db = self._database(period)
        with one_deadline(self.options.policy("create_short")):
            try:
                return await db.create_short(doc, timestamp=when, rng=rng)
            except DatabaseNotFoundError as missing:
                await self._make(period, missing)
            return await db.create_short(doc, timestamp=when, rng=rng)

    # -- reading -----------------------------------------------------------------------------

    async def latest(
        self,
        n: int = 10,
        *,
        type: str | AllTypes | None = None,
        include_docs: bool = True,
    ) -> list[Row]:
        """The newest ``n`` documents across the series (fewer if fewer exist), newest first.

        Lists the databases (one request), then reads the newest database first, each
        within its period, until ``n`` are found: usually one or two databases.

        Args:
            n, type, include_docs: as for :meth:`AsyncDatabase.latest`.

        Raises:
            as :meth:`AsyncDatabase.latest`; a missing database is an empty period.

        Example::

            newest = await events.latest(5, type="reading")
        """
        program = series.latest(
            self._facts,
            self.layout,
            n,
            type=type,
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
        newest_first: bool = True,
        include_docs: bool = True,
    ) -> AsyncRows[Row]:
        """The documents whose id holds a time ``t`` with ``start <= t < end``, across the
        periods, as they come: what one database holding them all would answer.

        Lists the databases (one request), then reads :meth:`AsyncDatabase.window` of each
        period's database that the window reaches, one after the other in the window's
        order, each clamped to its period, so the order holds across the periods' ends and
        no document comes twice. While the caller works through one database's pages, the
        first page of the next is read (one request more in flight and one page more held
        than in one database; no request more). The answer streams documents, or pages from
        its ``pages()`` (a page never spans two databases). In the blocking API the call
        reads the first page; in the asyncio API the first step does.

        Args:
            start, end, type, newest_first, include_docs, batch_size, parallel: as for
                :meth:`AsyncDatabase.window`; ``parallel`` slices within each database.

        Raises:
            as :meth:`AsyncDatabase.window`; a missing database, or one dropped while it is
            read, is an empty period.

        Example::

            async for doc in events.window("2026-10-15", "2026-11-15", type="reading"):
                print(doc["_id"])
        """
        program = series.window(
            self._facts,
            self.layout,
            start,
            end,
            type=type,
            newest_first=newest_first,
            include_docs=include_docs,
            batch_size=self.options.batch("window"),
            timeout=self.options.timeout,
            parallel=self.options.slices("window"),
        )
        return AsyncRows(pages(self.client, program))

    # -- the data lifecycle ------------------------------------------------------------------

    async def count(
        self,
        start: TimeLike,
        end: TimeLike,
        *,
        type: str | AllTypes | None = None,
        exact: bool = False,
    ) -> int:
        """The number of documents whose id holds a time ``t`` with ``start <= t < end``,
        across the periods: the sum of :meth:`AsyncDatabase.count` of each period's part of
        the window, a few databases at a time.

        Args:
            start, end, type, exact: as for :meth:`AsyncDatabase.count`.

        Raises:
            as :meth:`AsyncDatabase.count`; a missing database is an empty period.

        Example::

            await events.count("2026-01-01", "2027-01-01", type="reading")
        """
        program = series.count(
            self._facts,
            self.layout,
            start,
            end,
            type=type,
            exact=exact,
            timeout=self.options.timeout,
        )
        return await run(self.client, program)

    async def histogram(
        self,
        start: TimeLike,
        end: TimeLike,
        *,
        every: str | timedelta = "1h",
        type: str | None = None,
        exact: bool = False,
    ) -> list[Bucket]:
        """Counts per bucket of ``every``, aligned to UTC, covering ``[start, end)``: the
        buckets :meth:`AsyncDatabase.histogram` gives for one database, each counting the
        documents of every period in it.

        Args:
            start, end, every, type, exact: as for :meth:`AsyncDatabase.histogram`.

        Raises:
            as :meth:`AsyncDatabase.histogram`; a missing database is an empty period.

        Example::

            for bucket in await events.histogram("2026-01-01", "2027-01-01", every="7d"):
                print(bucket.start.date(), bucket.count)
        """
        program = series.histogram(
            self._facts,
            self.layout,
            start,
            end,
            every=every,
            type=type,
            exact=exact,
            parallel=self.options.slices("histogram"),
            timeout=self.options.timeout,
        )
        return await run(self.client, program)

    async def expire(
        self,
        before: TimeLike,
        *,
        dry_run: bool = True,
        purge: bool = False,
    ) -> SeriesExpireReport:
        """Delete what the series holds from before ``before``: drop the databases of the
        whole periods before it, and delete the older documents of the databases that stay.

        A period that ended by ``before`` loses its database (``DELETE /{db}``: instant, no
        tombstones, everything in it, design documents too). The database of the period that
        holds ``before`` is read whole, id by id, and every document whose id holds a time
        before ``before`` is deleted, whatever wrote it: ids of the series' form of every
        type and untyped (``create``, ``bulk_create``, keyed ids) and short ids
        (``create_short``; a short id holds its UTC day, so it goes when that day starts
        before ``before``). An id that holds no time the series can read (another form's, a
        name) is kept and listed in the report's ``unread``; design documents stay. The
        series' writers put each document in the database of its id's time; the databases
        of later periods are searched too, for documents stored there otherwise, without
        reading what they hold of their own periods: their ids that name no type (untyped
        and short ids) are read, and of each type its first id, then its ids older than
        ``before`` when that one is (about one request per type present), four databases at
        a time.
        Documents are deleted as :meth:`AsyncDatabase.expire` deletes them: by the revision
        read (one changed meanwhile is reported in ``conflicts`` and kept), every leaf of a
        conflicted one. A dry run (the default) reads the same ids, changes nothing and
        reports what would go: the same databases, counts and unread ids. Safe to run again:
        what went is not found again. Only databases whose names are exactly those of this
        series' periods are ever dropped, each checked again just before its ``DELETE``.

        Args:
            before: what is older goes (exclusive); ``None`` is now.
            dry_run: only report.
            purge: as for :meth:`AsyncDatabase.expire`, in the
                databases that stay (a purge the server cannot do is refused before anything
                changes).

        Returns:
            :class:`~couchids.core.series.SeriesExpireReport`: ``dropped`` (the databases),
            ``deleted`` (documents of the databases that stay), each such database's
            :class:`~couchids.core.expiry.ExpireReport` in ``expired``, and the ``unread``
            ids.

        Raises:
            InvalidTimeError, InvalidArgumentError: bad arguments; nothing changes.
            ServerError: (and subclasses) a request failed after the retries; what was done
                stays done, and a re-run continues.

        Example::

            report = await events.expire("2026-01-01", dry_run=False)
            report.dropped  # ['events-2025-10', 'events-2025-11', 'events-2025-12']
            report.deleted  # 0: 2026-01-01 starts a period
        """
        program = series.expire(
            self._facts,
            self.layout,
            before,
            dry_run=dry_run,
            purge=purge,
            batch_size=self.options.batch("expire"),
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
        """Write the documents made in ``[start, end)`` to ``out``, oldest first, across the
        periods: the output of :meth:`AsyncDatabase.export` of one database holding them all
        (one CSV header), and a checkpoint that resumes it in whichever period it stopped.

        Args:
            start, end, out, type, format, fields: as for :meth:`AsyncDatabase.export`.
            checkpoint, on_progress: as for :meth:`AsyncDatabase.export`.

        Returns:
            :class:`~couchids.Checkpoint`: ``last_id`` is the last document written, ``done``
            how many.

        Raises:
            as :meth:`AsyncDatabase.export`; a missing database is an empty period.

        Example::

            with open("2026.ndjson", "w") as out:
                await events.export("2026-01-01", "2027-01-01", out, type="reading")
        """
        program = series.export(
            self._facts,
            self.layout,
            start,
            end,
            out,
            type=type,
            format=format,
            fields=fields,
            checkpoint=checkpoint,
            batch_size=self.options.batch("export"),
            on_progress=on_progress,
            timeout=self.options.timeout,
            parallel=self.options.slices("export"),
        )
        return await run(self.client, program)

    async def replicate(
        self,
        target: str,
        start: TimeLike,
        end: TimeLike | None = None,
        *,
        type: str | AllTypes | None = None,
        continuous: bool = False,
        create_target: bool = True,
        server_url: str | None = None,
    ) -> AsyncReplication:
        """Start a replication of the documents made in a time window, from every period
        database the window reaches, into one ``target``; return its handle (an
        ``AsyncReplication``, one ``_replicator`` document per period database).

        Each period's database sends the documents of ``type`` made in the window clamped to
        its period: what :meth:`window` reads, gathered in one database (a reporting copy,
        an edge node). Lists the databases first (one request); the periods that exist then
        are replicated. A continuous replication keeps each of those databases' new
        documents coming; a period whose database is made later (the next month) is not in
        it: start another replication for it, from the job that runs :meth:`prepare`.

        Args:
            target: a database name on this server, or a URL, as for
                :meth:`AsyncDatabase.replicate`; never one of the series' own databases.
            start, end: the window (``end`` exclusive; ``None``: to the end of the newest
                period).
            type, continuous, create_target, server_url: as for
                :meth:`AsyncDatabase.replicate`.

        Raises:
            InvalidTimeError: unreadable times, or ``end`` before ``start``.
            InvalidArgumentError: a target that is a database of this series, a bad
                ``type`` or flag, or no database of the series in the window; nothing is
                started.
            ReplicationFailed, ServerError: as for :meth:`AsyncDatabase.replicate`.

        .. needs couchdb: PouchDB Server's replicator ignores a selector

        Example::

            job = await events.replicate("events-q4", "2026-10-01", "2027-01-01",
                                         type="reading")
            await job.wait(600)
        """
        start_ms = to_ms(start)
        end_ms = None if end is None else to_ms(end)
        if end_ms is not None and end_ms < start_ms:
            raise InvalidTimeError(f"end {end!r} is before start {start!r}")
        service_url, credentials = server_access(self.client)

        def plan_of(name: str, a: int, b: int) -> replication.ReplicationPlan:
            source, goal = replication.endpoints(service_url, credentials, name, target, server_url)
            return replication.plan(
                name,
                source,
                goal,
                a,
                b,
                type=type,
                form=self.form,
                continuous=continuous,
                create_target=create_target,
            )

        # The arguments are checked before anything is sent: a plan for the window's first
        # period, which needs no database.
        first = self.layout.name(self.layout.period_at(start_ms))
        plan_of(first, start_ms, start_ms if end_ms is None else end_ms)
        if self.layout.period(target) is not None:
            raise InvalidArgumentError(
                f"target={target!r} is a database of the series {self.prefix!r}: replicate "
                "into a database outside it"
            )
        policy = RetryPolicy.within(self.options.timeout, "replicate")
        listed = await run(self.client, series.list_databases(self._facts, self.layout, policy))
        reached = [
            (period, name)
            for period, name in listed
            if period.end_ms > start_ms and (end_ms is None or period.start_ms < end_ms)
        ]
        if not reached:
            raise InvalidArgumentError(
                f"no database of the series {self.prefix!r} holds a time of the window; "
                f"it has {', '.join(name for _, name in listed) or 'none'}"
            )
        plans = [
            plan_of(
                name,
                max(start_ms, period.start_ms),
                period.end_ms if end_ms is None else min(end_ms, period.end_ms),
            )
            for period, name in reached
        ]
        await run(self.client, replication.start(self._facts, plans, policy))
        return AsyncReplication(self.client, plans)

    # -- helpers -----------------------------------------------------------------------------

    def _database(self, period: Period) -> AsyncDatabase:
        return AsyncDatabase(
            self.client, self.layout.name(period), form=self.form, options=self.options
        )

    def _time_of(self, doc: object, timestamp: TimeLike, key: str | None) -> TimeLike:
        """The time a new document's id is made for: ``timestamp``, or the time in its own
        ``_id``, or now; with a key, ``timestamp`` as it is (``create`` refuses a key
        without one)."""
        if timestamp is not None or key is not None:
            return timestamp
        own = doc.get("_id") if isinstance(doc, Mapping) else None
        if own is not None:
            return self.layout.time_of_id(own)
        return datetime.now(UTC)

    async def _make(self, period: Period, missing: DatabaseNotFoundError) -> None:
        """Create the database of ``period``, for a write that found it missing (``missing``,
        whose document ids a refusal by the server's cap carries on)."""
        policy = RetryPolicy.within(self.options.timeout, "create")
        program = series.create_database(
            self._facts,
            self.layout.name(period),
            partitioned=self.layout.partitioned,
            policy=policy,
            max_databases=self.max_databases,
        )
        try:
            await run(self.client, program)
        except DatabaseLimitError as exc:
            exc.doc_id, exc.stored = missing.doc_id, False
            raise
