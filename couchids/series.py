# Generated from couchids/aio/series.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""The series handle: a database per period of time, and every couchids operation across them.

``couchids/aio/series.py`` is written by hand (``couchids.aio.AsyncSeries``);
``couchids/series.py`` (``couchids.Series``) is generated from it by ``scripts/unasync.py``.

A series is Cloudant's "timeboxed database" pattern for data that grows without end: each
period's documents live in a database of their own (:mod:`couchids.core.periods`), a document
goes to the database of the time in its id, reads run across the periods in order, each
database clamped to its period, and retention drops whole databases, which leaves no
tombstones. Every operation uses the series' form, which routes documents: there is no
``form=`` per call. docs/guide/timeseries.md says how writes create missing databases, how
the server's cap on databases is met, and why a missing period is empty.
"""

from __future__ import annotations

import collections.abc
import copy
import warnings
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from ibmcloudant.cloudant_v1 import CloudantV1

from couchids.core import replication, series
from couchids.core.arguments import count as check_count
from couchids.core.counting import Bucket
from couchids.core.facts import FactsCache
from couchids.core.options import Options, check_options
from couchids.core.periods import END_OF_TIME, Every, Period, SeriesLayout
from couchids.core.policy import one_deadline
from couchids.core.scan import Checkpoint
from couchids.core.series import PeriodDocs, PlacedResults, SeriesExpireReport
from couchids.core.short import NonceSource
from couchids.core.writes import Doc, KeyOf, TimeOf
from couchids.database import Database
from couchids.drivers.access import server_access
from couchids.drivers.blocking import (
    Rows,
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
    WriteResult,
)
from couchids.idforms.doctypes import AllTypes
from couchids.idforms.forms import KUUID, IdForm
from couchids.idforms.times import TimeLike, now_ms, to_datetime, to_ms
from couchids.replication import Replication

__all__ = ["Series"]

Row = dict[str, Any]


class Series:
    """A series of databases, one per day, ISO week, month or year of UTC time, and every
    couchids operation across them.

    The databases are named ``<prefix>-<period>``: ``events-2026`` (a year), ``events-2026-11``
    (a month), ``events-2026-w48`` (an ISO week), ``events-2026-11-25`` (a day). A method of the
    same name as one of :class:`Database` does what that one would on a database holding
    every period, with the same parameters and errors; its docstring says what differs. The
    handle sends nothing when made.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        prefix: what the database names start with: a lower-case letter, then ``a-z0-9_$()+-/``,
            leaving room for the period.
        every: ``"day"``, ``"week"``, ``"month"`` (the default) or ``"year"``.
        form: the id form of the series' documents (default :data:`couchids.KUUID`); its ids
            must hold a time that sorts in ``_all_docs``.
        partitioned: create the databases partitioned, for ids whose type is their partition.
        max_databases: the most databases the server holds, the series' and every other:
            :meth:`prepare` warns when few are left. ``None``: on Cloudant its own reading (where
            the credentials may read it), elsewhere no cap.
        options: the :class:`~couchids.Options` of every operation and of each period's handle.

    Example::

        events = Series(client, "events", every="month")
        events.prepare()  # ['events-2026-11', 'events-2026-12']
        events.create({"temp": 21.5}, type="reading")
        for doc in events.window("2026-10-15", "2026-11-15", type="reading"):
            print(doc["_id"])
    """

    def __init__(
        self,
        client: CloudantV1,
        prefix: str,
        *,
        every: Every = "month",
        form: IdForm = KUUID,
        partitioned: bool = False,
        max_databases: int | None = None,
        options: Options | None = None,
    ) -> None:
        self.client = check_client(client)
        self.options = check_options(options)
        self.layout = SeriesLayout(prefix, every, form, partitioned)
        if max_databases is not None:
            check_count("max_databases", max_databases, 1)
        self.prefix, self.every, self.form = prefix, every, form
        self.partitioned = partitioned
        self.max_databases = max_databases
        self._facts: FactsCache = known_facts(self.client)

    def with_options(self, **changes: Any) -> Series:
        """A handle of the same series with this one's options changed by ``changes``
        (:class:`~couchids.Options` fields as keywords, checked now).

        Example::

            events.with_options(timeout=300).expire("2026-01-01", dry_run=False)
        """
        twin = copy.copy(self)
        twin.options = self.options.replace(**changes)
        return twin

    def __repr__(self) -> str:
        return f"Series({self.prefix!r}, every={self.every!r}, form={self.form!r})"

    # -- the databases -----------------------------------------------------------------------

    def database(self, at: TimeLike = None) -> Database:
        """The handle of the database of the period holding ``at`` (default now), whether it exists
        or not, for the operations of one database. Sends nothing.

        Example::

            november = events.database("2026-11-25")
            november.name  # 'events-2026-11'
        """
        return self._database(self.layout.period_at(to_ms(at)))

    def databases(self) -> list[str]:
        """The names of the series' databases that exist, oldest first: one ``GET /_all_dbs``.

        Only names that are exactly those of this series' periods
        (:func:`couchids.core.periods.parse_name`); ``UnauthorizedError`` when the credentials
        may not list databases.

        Example::

            events.databases()  # ['events-2026-10', 'events-2026-11']
        """
        policy = self.options.policy("databases")
        listed = run(self.client, series.list_databases(self._facts, self.layout, policy))
        return [name for _, name in listed]

    def prepare(self, ahead: int = 1) -> list[str]:
        """Create the databases of the current period and of the ``ahead`` (0 to 366) after it,
        unless they exist; return their names.

        Idempotent, and safe when several processes prepare at once. Writes create a missing
        database themselves, so this only spares the first write of a period the detour: run it from
        a daily job. Where the server's cap on databases is known it then counts the databases, and
        when no more than ``ahead`` more can be made warns with a
        :class:`~couchids.errors.DatabaseLimitWarning` naming the period that will be refused.

        Raises:
            DatabaseLimitError: the cap refused one (those of the periods before it are made).

        Example::

            events.prepare(ahead=2)  # ['events-2026-11', 'events-2026-12', 'events-2027-01']
        """
        policy = self.options.policy("prepare")
        program = series.prepare(
            self._facts, self.layout, to_ms(None), ahead, policy, self.max_databases
        )
        names = run(self.client, program)
        check = series.headroom(self._facts, self.layout, ahead, policy, self.max_databases)
        warning = run(self.client, check)
        if warning is not None:
            warnings.warn(warning, DatabaseLimitWarning, stacklevel=2)
        return names

    # -- writing -----------------------------------------------------------------------------

    def create(
        self,
        doc: Doc,
        *,
        type: str | None = None,
        timestamp: TimeLike = None,
        key: str | None = None,
    ) -> WriteResult:
        """:meth:`Database.create` in the database of the document's period.

        The period is that of ``timestamp``; without one, of the time in the document's own ``_id``
        (which must be of the series' form), or of now, read once and given to the id.

        Raises:
            DatabaseLimitError: the period's database is missing and the server's cap refuses it;
                the document is not stored.

        Example::

            result = events.create({"temp": 21.5}, type="reading",
                                         timestamp="2026-11-25T10:00:00Z")
            result.id  # 'reading:001yw3U2...', stored in events-2026-11
        """
        when = self._time_of(doc, timestamp, key)
        period = self.layout.period_at(to_ms(when))
        db = self._database(period)
        with one_deadline(self.options.policy("create")):
            try:
                return db.create(doc, type=type, timestamp=when, key=key)
            except DatabaseNotFoundError as missing:
                self._make(period, missing)
            return db.create(doc, type=type, timestamp=when, key=key)

    def bulk_create(
        self,
        docs: Iterable[Doc],
        *,
        type: str | None = None,
        key_of: KeyOf | None = None,
        time_of: TimeOf | None = None,
    ) -> list[WriteResult]:
        """:meth:`Database.bulk_create` into the database of each document's period, oldest
        period first; ``time_of`` picks the period.

        Every document is read, checked and routed before anything is written (``docs`` is held in
        memory). Without ``time_of`` a document's time is that of its own ``_id``, or the time of
        the call, read once for all. Every missing database of the call's periods is created
        before a document is sent, so a database the cap refuses refuses the whole call with
        nothing written.

        Raises:
            BulkWriteError, ServerError: as :meth:`Database.bulk_create`, ``results`` holding
                every period's written before, in input order.
            DatabaseLimitError: a period's database is missing and the cap refuses it: nothing is
                written.

        Example::

            readings = [{"at": "2026-11-30T23:59:00Z"}, {"at": "2026-12-01T00:01:00Z"}]
            results = events.bulk_create(readings, type="reading",
                                               time_of=lambda d: d["at"])
            # one _bulk_docs into events-2026-11, one into events-2026-12
        """
        if type is not None:
            self.form.type_prefix(type)  # InvalidTypeError, before a database is made
        now = datetime.now(UTC)
        total, parts = series.route_documents(
            self.layout, docs, key_of=key_of, time_of=time_of, now=now
        )
        policy = self.options.policy("bulk_create")
        names = [part.name for part in parts]
        made = series.make_missing(self._facts, self.layout, names, policy, self.max_databases)
        run(self.client, made)
        placed = PlacedResults(total)
        for part in parts:
            try:
                written = self._bulk_into(part, type, key_of)
            except CouchidsError as exc:
                exc.results = [*placed.handled(), *exc.results]
                raise
            placed.place(part, written)
        return placed.finish()

    def _bulk_into(
        self, part: PeriodDocs, type: str | None, key_of: KeyOf | None
    ) -> list[WriteResult]:
        """The results of writing ``part`` into its period's database (made when missing, and the
        documents it refused written again)."""
        db = self._database(part.period)
        try:
            return db.bulk_create(part.docs, type=type, key_of=key_of, time_of=part.time_of)
        except BulkWriteError as exc:
            return list(exc.results)
        except DatabaseNotFoundError as exc:
            handled, missing = list(exc.results), exc
        again = part.to_write_again(handled)
        try:
            self._make(part.period, missing)
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
            rewritten = db.bulk_create(
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

    def create_short(
        self,
        doc: Mapping[str, Any],
        *,
        timestamp: TimeLike = None,
        rng: NonceSource | None = None,
    ) -> WriteResult:
        """:meth:`Database.create_short` in the database of the period of ``timestamp``
        (default now), which also holds the id's UTC day.

        Example::

            result = posts.create_short({"title": "hello"})
            result.id  # '261125-bc', in posts-2026-11
        """
        when = datetime.now(UTC) if timestamp is None else timestamp
        period = self.layout.period_at(to_ms(when))
        db = self._database(period)
        with one_deadline(self.options.policy("create_short")):
            try:
                return db.create_short(doc, timestamp=when, rng=rng)
            except DatabaseNotFoundError as missing:
                self._make(period, missing)
            return db.create_short(doc, timestamp=when, rng=rng)

    # -- reading -----------------------------------------------------------------------------

    def latest(
        self,
        n: int = 10,
        *,
        type: str | AllTypes | None = None,
        include_docs: bool = True,
    ) -> list[Row]:
        """:meth:`Database.latest` across the series: the newest database first, until ``n``
        are found.

        Example::

            newest = events.latest(5, type="reading")
        """
        program = series.latest(
            self._facts, self.layout, n, type=type, include_docs=include_docs, options=self.options
        )
        return run(self.client, program)

    def window(
        self,
        start: TimeLike,
        end: TimeLike = None,
        *,
        type: str | AllTypes | None = None,
        newest_first: bool = True,
        include_docs: bool = True,
    ) -> Rows[Row]:
        """:meth:`Database.window` across the periods, each database clamped to its period, in
        the window's order.

        The first page of the next database is read while the caller works through the one before;
        a page never spans two databases.

        Example::

            for doc in events.window("2026-10-15", "2026-11-15", type="reading"):
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
            options=self.options,
        )
        return Rows(pages(self.client, program))

    # -- the data lifecycle ------------------------------------------------------------------

    def count(
        self,
        start: TimeLike,
        end: TimeLike = None,
        *,
        type: str | AllTypes | None = None,
        index_only: bool = False,
    ) -> int:
        """:meth:`Database.count` across the periods: the sum of each period's part.

        Example::

            events.count("2026-01-01", "2027-01-01", type="reading")
        """
        program = series.count(
            self._facts,
            self.layout,
            start,
            end,
            type=type,
            index_only=index_only,
            options=self.options,
        )
        return run(self.client, program)

    def histogram(
        self,
        start: TimeLike,
        end: TimeLike = None,
        *,
        every: str | timedelta = "1h",
        type: str | None = None,
        index_only: bool = False,
    ) -> list[Bucket]:
        """:meth:`Database.histogram` across the periods, each bucket counting every period in
        it.

        Example::

            for bucket in events.histogram("2026-01-01", "2027-01-01", every="7d"):
                print(bucket.start.date(), bucket.count)
        """
        program = series.histogram(
            self._facts,
            self.layout,
            start,
            end,
            every=every,
            type=type,
            index_only=index_only,
            options=self.options,
        )
        return run(self.client, program)

    def expire(
        self,
        before: TimeLike,
        *,
        dry_run: bool = True,
        purge: bool = False,
    ) -> SeriesExpireReport:
        """Delete what the series holds from before ``before``: drop the databases of the periods
        that ended by then, and delete the older documents of those that stay.

        Dropping (``DELETE /{db}``) is instant and takes everything in the database; it is asked
        first whether it holds an id of a time at or after ``before``, or one whose time the series
        cannot read (stored there by other means, such as ``import-7``; about two requests per
        type): one that does is not dropped but expired as the boundary is, and stays with what is
        not older, its unreadable ids kept and listed in ``unread`` (a dry run says the same). The
        database of the period holding ``before`` is read whole and every document whose id holds
        an older time is deleted, whatever wrote it (ids of every type, untyped, keyed and short
        ids); an id whose time cannot be read is kept and listed in ``unread``. Later periods'
        databases are searched for older ids stored there otherwise, about one request per type.
        Documents are deleted as :meth:`Database.expire` deletes them. A dry run (the
        default) reports the same without changing anything. Only databases whose names are
        exactly this series' are dropped, each checked again just before its ``DELETE``.

        Args:
            purge: as for :meth:`Database.expire`, in the databases that stay.

        Returns:
            :class:`~couchids.core.series.SeriesExpireReport`: ``dropped``, ``deleted``, each kept
            database's report in ``expired``, and ``unread``.

        Example::

            report = events.expire("2026-01-01", dry_run=False)
            report.dropped  # ['events-2025-10', 'events-2025-11', 'events-2025-12']
            report.deleted  # 0: 2026-01-01 starts a period
        """
        program = series.expire(
            self._facts, self.layout, before, dry_run=dry_run, purge=purge, options=self.options
        )
        return run(self.client, program)

    def export(
        self,
        start: TimeLike,
        end: TimeLike = None,
        *,
        out: TextIO,
        type: str | None = None,
        csv: collections.abc.Sequence[str] | None = None,
        checkpoint: Checkpoint | None = None,
        on_progress: Callable[[Checkpoint], None] | None = None,
    ) -> Checkpoint:
        """:meth:`Database.export` across the periods, as one database holding them all (one
        CSV header); the checkpoint resumes in whichever period it stopped, and its ``last_id``
        must be a document of that period's database (a deleted one too).

        Example::

            with open("2026.ndjson", "w") as out:
                events.export("2026-01-01", "2027-01-01", out=out, type="reading")
        """
        program = series.export(
            self._facts,
            self.layout,
            start,
            end,
            out,
            type=type,
            csv=csv,
            checkpoint=checkpoint,
            on_progress=on_progress,
            options=self.options,
        )
        return run(self.client, program)

    def replicate(
        self,
        target: str,
        start: TimeLike,
        end: TimeLike | None = None,
        *,
        type: str | AllTypes | None = None,
        continuous: bool = False,
        create_target: bool = True,
        server_url: str | None = None,
    ) -> Replication:
        """:meth:`Database.replicate` from every database the window reaches into one
        ``target``: one ``_replicator`` document per period database.

        The databases that exist when it starts are replicated; a continuous replication does not
        include a period whose database is made later (start another for it).

        Raises:
            InvalidArgumentError: also a target that is a database of this series, or no database
                of the series in the window.

        .. needs couchdb: PouchDB Server's replicator ignores a selector

        Example::

            job = events.replicate("events-q4", "2026-10-01", "2027-01-01",
                                         type="reading")
            job.wait(600)
        """
        now = now_ms()  # a time ago counts back from one reading of the clock
        start_ms = to_ms(start, now=now)
        end_ms = None if end is None else to_ms(end, now=now)
        service_url, credentials = server_access(self.client)

        def plan_of(name: str, a: int, b: int | None) -> replication.ReplicationPlan:
            source, goal = replication.endpoints(service_url, credentials, name, target, server_url)
            return replication.plan(
                name,
                source,
                goal,
                to_datetime(a),
                None if b is None else to_datetime(b),
                type=type,
                form=self.form,
                continuous=continuous,
                create_target=create_target,
            )

        # The arguments (the window's order too) are checked before anything is sent: a plan
        # for the window's first period, which needs no database.
        plan_of(self.layout.name(self.layout.period_at(start_ms)), start_ms, end_ms)
        if self.layout.period(target) is not None:
            raise InvalidArgumentError(
                f"target={target!r} is a database of the series {self.prefix!r}: replicate "
                "into a database outside it"
            )
        policy = self.options.policy("replicate")
        stop = END_OF_TIME if end_ms is None else end_ms
        spans = series.period_spans(self._facts, self.layout, policy, start_ms, stop)
        plans = [plan_of(*span) for span in run(self.client, spans)]
        if not plans:
            listed = run(self.client, series.list_databases(self._facts, self.layout, policy))
            raise InvalidArgumentError(
                f"no database of the series {self.prefix!r} holds a time of the window; "
                f"it has {', '.join(name for _, name in listed) or 'none'}"
            )
        run(self.client, replication.start(self._facts, plans, policy))
        return Replication(self.client, plans)

    # -- helpers -----------------------------------------------------------------------------

    def _database(self, period: Period) -> Database:
        return Database(self.client, self.layout.name(period), form=self.form, options=self.options)

    def _time_of(self, doc: object, timestamp: TimeLike, key: str | None) -> TimeLike:
        """The time a new document's id is made for: ``timestamp``, or the time in its own ``_id``,
        or now; with a key, ``timestamp`` as it is (``create`` refuses a key without one)."""
        if timestamp is not None or key is not None:
            return timestamp
        own = doc.get("_id") if isinstance(doc, Mapping) else None
        if own is not None:
            return self.layout.time_of_id(own)
        return datetime.now(UTC)

    def _make(self, period: Period, missing: DatabaseNotFoundError) -> None:
        """Create the database of ``period`` for a write that found it ``missing`` (whose ids a
        refusal by the cap carries on)."""
        policy = self.options.policy("create")
        program = series.create_database(
            self._facts,
            self.layout.name(period),
            partitioned=self.layout.partitioned,
            policy=policy,
            max_databases=self.max_databases,
        )
        try:
            run(self.client, program)
        except DatabaseLimitError as exc:
            exc.doc_id, exc.stored = missing.doc_id, False
            raise
