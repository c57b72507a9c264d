"""Writing new documents under sortable ids, safely under retries and re-runs.

The id is chosen before the first request and written without ``_rev`` (create-if-absent), so
a retry can only meet its own first write: a 409 (or a 202) is settled by reading the stored
revisions, the same JSON content being ``duplicate=True`` and different content a
:class:`~couchids.ConflictError`. Nothing is ever overwritten. Every error raised once an id
was chosen carries it and says whether the document may have been stored (``stored``). The
user's side of this is docs/guide/writing.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from couchids.core import arguments
from couchids.core.answers import answer_error, check_listing, describe, expect_object, revision
from couchids.core.asking import CONFLICT, Attempts, ask
from couchids.core.content import same_content
from couchids.core.defaults import DEFAULT_BATCH_SIZE
from couchids.core.document import check_new
from couchids.core.effects import Emit, Program, Request, Sleep, Start, Wait, path, post_json
from couchids.core.exactjson import encode
from couchids.core.facts import FactsCache
from couchids.core.options import Options
from couchids.core.policy import RetryPolicy
from couchids.core.revisions import delete_revision, live_leaves, winner
from couchids.core.sizes import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_DOCUMENT_BYTES,
    TOO_LARGE,
    Filling,
    measured,
    write_in_halves,
)
from couchids.errors import (
    BulkWriteError,
    ConflictError,
    CouchidsError,
    InvalidArgumentError,
    InvalidInputError,
    InvalidTimeError,
    RateLimitedError,
    ServerError,
    UnauthorizedError,
    WriteResult,
)
from couchids.idforms.decode import split_type
from couchids.idforms.doctypes import type_prefix
from couchids.idforms.forms import IdForm
from couchids.idforms.keyed import keyed_id
from couchids.idforms.times import TimeLike, to_ms

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_DOCUMENT_BYTES",
    "Collected",
    "WriteResult",
    "all_stored",
    "bulk",
    "create",
    "encode",
    "written",
]

#: The bytes of ``{"docs":[`` and ``]}`` around the documents of a ``_bulk_docs`` body.
_ENVELOPE: Final = len(b'{"docs":[]}')

#: What CouchDB answers a single-document write with, for each ``_bulk_docs`` row error.
_ROW_STATUS: Final = {
    "forbidden": 403,
    "unauthorized": 401,
    "bad_request": 400,
    "doc_validation": 400,
    "illegal_docid": 400,
}
#: The row error of a ``_bulk_docs`` answer for a document the server had no capacity for.
_RATE_LIMITED: Final = "too_many_requests"

Doc = Mapping[str, Any]


def written(
    exc: CouchidsError, doc_id: str | None, stored: bool | None, *, again: str = ""
) -> CouchidsError:
    """``exc`` with what became of the document it was writing (``doc_id``; ``None`` for many
    documents, whose ids are in ``results``), in its attributes and message. ``again``: how to
    find out whether a document that may have been stored was, where writing it again under its
    id (or the same key) does not tell."""
    exc.doc_id, exc.stored = doc_id, stored
    what = f"document {doc_id!r}" if doc_id is not None else "these documents"
    if stored is None:
        # The same call again would give a document without an _id or key a new id.
        if not again and doc_id is None:
            again = (
                "write them again under their ids in .results (or the same keys) to find out, "
                "which never stores one twice"
            )
        elif not again:
            again = (
                f"write it again with _id {doc_id!r} (or the same key) to find out, which never "
                "stores it twice"
            )
        fate = f"{what} may have been stored (an answer was lost): {again}"
    elif stored:
        fate = f"{what} {'is' if doc_id is not None else 'are'} stored"
    else:
        fate = f"{what} {'was' if doc_id is not None else 'were'} not stored"
    if exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}; {fate}", *exc.args[1:])
    return exc


def create(
    known: FactsCache,
    db: str,
    doc: Doc,
    *,
    type: str | None,
    timestamp: TimeLike,
    key: str | None,
    form: IdForm,
    options: Options,
) -> Program[WriteResult]:
    """The program of :meth:`couchids.Database.create`; arguments checked now."""
    policy = options.policy("create")
    check_new(doc, "doc")
    arguments.form("form", form)
    doc_id = _assign_id(doc, type, timestamp, key, form, "doc")
    payload = encode({k: v for k, v in doc.items() if k != "_id"}, "doc")
    return write_new(known, db, doc_id, payload, policy)


#: ``key_of=`` of the bulk writes: a function giving a document's idempotency key.
KeyOf = Callable[[Doc], str]
#: ``time_of=`` of the bulk writes: a function giving a document's own time.
TimeOf = Callable[[Doc], TimeLike]


def check_functions_of_documents(key_of: object, time_of: object) -> None:
    """Refuse a ``key_of``/``time_of`` that is not a function, and ``key_of`` without
    ``time_of``."""
    arguments.function("key_of", key_of, giving=" giving each document's idempotency key")
    arguments.function("time_of", time_of, giving=" giving each document's own time")
    if key_of is not None and time_of is None:
        raise InvalidArgumentError(
            "key_of= needs time_of=, a function giving each document's own time: a keyed id "
            "holds that time, which must be the same when the job runs again"
        )


class Collected:
    """The results of a bulk write gathered as :meth:`couchids.Database.bulk_create` returns
    them: a failure that ends the job carries the results before it, and rows not stored raise
    :class:`~couchids.BulkWriteError` at the end."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.done: list[WriteResult] = []
        self.failed = 0

    def add(self, results: list[WriteResult]) -> None:
        """The results of one batch."""
        self.done += results
        self.failed += sum(result.error is not None for result in results)

    def ended_by(self, exc: CouchidsError) -> CouchidsError:
        """``exc``, which ended the job, with the results handled before it."""
        done = self.done
        if done:
            exc.results = [*done, *exc.results]
            exc.args = (
                f"{exc.args[0]}; {len(done)} documents before it were handled first "
                f"({len(done) - self.failed} stored), with their results in .results",
                *exc.args[1:],
            )
        return exc

    def finish(self) -> list[WriteResult]:
        """Every result, in input order; or :class:`~couchids.BulkWriteError`."""
        return all_stored(self.done, f" in {self.db!r}")


def all_stored(done: list[WriteResult], where: str = "") -> list[WriteResult]:
    """``done``, the results of a bulk write, when every document was stored; else
    :class:`~couchids.BulkWriteError` naming the first three not stored (``where``: ``" in
    'db'"``)."""
    failed = [result for result in done if result.error is not None]
    if failed:
        shown = "; ".join(f"{r.id}: {r.error}" for r in failed[:3])
        more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
        raise BulkWriteError(
            f"{len(failed)} of {len(done)} documents were not stored{where}: {shown}{more}", done
        )
    return done


def bulk(
    known: FactsCache,
    operation: str,
    db: str,
    docs: Iterable[Doc],
    *,
    type: str | None,
    form: IdForm,
    key_of: KeyOf | None,
    time_of: TimeOf | None,
    options: Options,
) -> Program[None]:
    """The program of :meth:`couchids.Database.bulk_create_iter` for the public ``operation``
    its messages name: emits the results of each batch as a list. Arguments are checked now;
    documents are read lazily. Batches are cut by ``options.batch(operation)`` and bytes as
    :mod:`couchids.core.sizes` says."""
    policy = options.policy(operation)
    arguments.documents("docs", docs)
    arguments.form("form", form)
    check_functions_of_documents(key_of, time_of)
    if type is not None:
        type_prefix(type)
    doc_type = type

    def assign(doc: Any, label: str) -> str:
        """The id of ``doc`` (the ``label``-th document), checked."""
        check_new(doc, label)
        if time_of is None:
            return _assign_id(doc, doc_type, None, None, form, label)
        when = arguments.called("time_of", time_of, doc, label)
        doc_key = None if key_of is None else arguments.called("key_of", key_of, doc, label)
        if key_of is not None and (not isinstance(doc_key, str) or not doc_key):
            raise InvalidArgumentError(
                f"{label}: key_of= gave {doc_key!r:.80}: an idempotency key is a non-empty "
                "string naming the document"
            )
        if key_of is not None and when is None:
            raise InvalidArgumentError(
                f"{label}: time_of= gave None: a keyed id needs the document's own time "
                "('now' differs on a re-run, and so would the id)"
            )
        try:
            return _assign_id(doc, doc_type, when, doc_key, form, label, "time_of")
        except InvalidTimeError as exc:
            # The time time_of gave cannot make an id (unreadable, past the form's last time).
            raise arguments.gave("time_of", when, label, exc) from None
        except InvalidInputError as exc:
            if str(exc).startswith(label):
                raise
            raise exc.__class__(f"{label}: {exc}") from None

    batches = _batches(iter(docs), assign, options.batch(operation), options.batch_bytes)
    return _stream(known, db, batches, options, policy)


def _stream(
    known: FactsCache,
    db: str,
    batches: Iterator[tuple[list[str], list[bytes]]],
    options: Options,
    policy: RetryPolicy,
) -> Program[None]:
    """Writes the batches in order, emitting each one's results; at most two are in flight.

    Each batch is made while the one before it is written, and sent at once unless it shares an
    id with that one (then only once that one is settled, as in a sequential job). The second
    is sent once the first is settled: a login the server refuses (or a database it lacks) is
    refused once, not once a batch in flight, each failed login bringing a lockout nearer. A
    document that cannot be made fails the job once the batch before it is settled and emitted.
    """
    flight: tuple[set[str], object] | None = None  # the batch sent last, not yet emitted
    answered = False  # the first batch settled: the server took the credentials
    while True:
        failure: Exception | None = None
        try:
            upcoming = next(batches, None)
        except Exception as exc:  # a bad document, or the caller's iterator failing
            failure, upcoming = exc, None
        if flight is not None and (
            upcoming is None or not answered or not flight[0].isdisjoint(upcoming[0])
        ):
            yield Emit((yield Wait(flight[1])))
            flight, answered = None, True
        if failure is not None:
            raise failure
        if upcoming is None:
            return
        batch_ids, parts = upcoming
        batch = _Batch(known, db, batch_ids, parts, options, policy.renewed())
        writing = yield Start(batch.write())
        if flight is not None:
            yield Emit((yield from _settled_first(flight[1], writing)))
        flight = set(batch_ids), writing


def _settled_first(earlier: object, later: object) -> Program[list[WriteResult]]:
    """The results of the batch ``earlier``, while ``later`` is in flight; when ``earlier``
    fails, its error carries ``later``'s results too, so no stored document goes unreported."""
    try:
        results: list[WriteResult] = yield Wait(earlier)
    except ServerError as exc:
        try:
            then: list[WriteResult] = yield Wait(later)
        except ServerError as also:
            then = list(also.results)
        stored = sum(result.ok for result in then)
        exc.results = [*exc.results, *then]
        exc.args = (
            f"{exc.args[0]}; the {len(then)} documents after them were sent before this "
            f"was known ({stored} stored), with their results in .results",
            *exc.args[1:],
        )
        raise
    return results


def _batches(
    docs: Iterator[Doc], assign: Callable[[Any, str], str], count: int, batch_bytes: int
) -> Iterator[tuple[list[str], list[bytes]]]:
    """Batches of documents with distinct ids (``_bulk_docs`` answers one row per id), each
    document encoded as it is sent; a batch ends at ``count`` documents or before the one that
    would take it past ``batch_bytes``."""
    batch: dict[str, bytes] = {}
    filling = Filling(batch_bytes, envelope=_ENVELOPE)
    for index, doc in enumerate(docs):
        label = f"document {index}"
        doc_id = assign(doc, label)
        part = encode({**doc, "_id": doc_id}, label)
        if batch and (doc_id in batch or not filling.takes(len(part))):
            yield list(batch), list(batch.values())
            batch, filling = {}, Filling(batch_bytes, envelope=_ENVELOPE)
        batch[doc_id] = part
        filling.add(len(part))
        # A full batch goes at once: the next document is read only once it is written.
        if len(batch) == count:
            yield list(batch), list(batch.values())
            batch, filling = {}, Filling(batch_bytes, envelope=_ENVELOPE)
    if batch:
        yield list(batch), list(batch.values())


def write_new(
    known: FactsCache, db: str, doc_id: str, payload: bytes, policy: RetryPolicy
) -> Program[WriteResult]:
    """PUT ``payload`` under ``doc_id`` if the id is free; settle a 409 or 202 by reading back."""
    put = Request("PUT", path(db, doc_id), body=payload)
    ours = json.loads(payload)
    attempts = Attempts()
    for _ in range(policy.retries + 1):
        try:
            answer = yield from ask(put, policy, db, expect=(CONFLICT,), attempts=attempts)
        except ServerError as exc:
            written(exc, doc_id, None if attempts.maybe_carried_out else False)
            raise
        if answer is not CONFLICT and answer.status != 202:
            return WriteResult(doc_id, revision(answer.body, policy, db, answer.sent))
        our_rev = None if answer is CONFLICT else revision(answer.body, policy, db, answer.sent)
        try:
            result = yield from _from_leaves(known, db, doc_id, ours, our_rev, policy)
        except ServerError as exc:
            # A 202 stored it on some copy; after a 409 the stored document may be ours.
            written(exc, doc_id, True if our_rev is not None else None)
            raise
        if result is not None:
            return result
        # 409, then nothing there: deleted by someone else since, so the id is free.
    raise ConflictError(
        f"document {doc_id!r} in {db!r} was created and deleted by someone else "
        f"{policy.retries + 1} times while couchids tried to store it; nothing was stored",
        doc_id,
    )


def _from_leaves(
    known: FactsCache,
    db: str,
    doc_id: str,
    ours: Mapping[str, Any],
    our_rev: str | None,
    policy: RetryPolicy,
) -> Program[WriteResult | None]:
    """Settle ``doc_id`` after a 409 or a 202 (``our_rev``) from its live leaves on every copy;
    ``None`` when it has none (deleted by someone else since).

    Stored when only our revision stands (a read that reached only copies our write has not
    reached yet shows nothing: still stored) or only our content (``duplicate=True``);
    :class:`~couchids.ConflictError` when a different document stands. Revisions holding our
    content beside another are deleted, so couchids leaves no conflict behind.
    """
    leaves = yield from live_leaves(known, db, doc_id, policy)
    if our_rev is not None and all(leaf["_rev"] == our_rev for leaf in leaves):
        return WriteResult(doc_id, our_rev)
    if not leaves:
        return None
    mine = [leaf for leaf in leaves if same_content(ours, leaf)]
    other = [leaf for leaf in leaves if not same_content(ours, leaf)]
    kept = winner(other or mine)
    withdrawn = [leaf for leaf in mine if leaf is not kept]
    for leaf in withdrawn:
        yield from delete_revision(db, doc_id, str(leaf["_rev"]), policy)
    if not other:
        return WriteResult(doc_id, kept["_rev"], duplicate=True)
    if withdrawn:
        done = (
            f"some copies had taken this document too, and couchids deleted those "
            f"{len(withdrawn)} revision(s) again, so the stored document is unchanged and this "
            "one is not stored"
        )
    else:
        done = "couchids never overwrites, so nothing was written"
    raise ConflictError(
        f"a different document already has id {doc_id!r} in {db!r} "
        f"(rev {kept.get('_rev')}); {done}",
        doc_id,
    )


def keyed_rows(
    rows: Any,
    field: str,
    asked: set[str],
    what: str,
    policy: RetryPolicy,
    db: str,
    *,
    every: bool = False,
    sent: str | None = None,
) -> dict[str, dict[str, Any]]:
    """The rows of a ``_bulk_docs`` answer (``field`` ``id``) or of ``_all_docs`` by keys
    (``key``) by that field, checked: objects, each naming one of ``asked``, none twice
    (:func:`~couchids.core.answers.check_listing`), and with ``every`` one for each; ``sent``
    is the request they answer, which a refusal names."""
    if not isinstance(rows, list) or not all(
        isinstance(row, dict) and isinstance(row.get(field), str) for row in rows
    ):
        raise answer_error(policy, db, f"{what} answered {describe(rows)}", sent)
    names = [row[field] for row in rows]
    check_listing(what, names, policy, db, sent=sent, noun="the row of ", among=asked)
    missing = len(asked) - len(names)
    if every and missing:
        first = min(asked - set(names))
        raise answer_error(
            policy,
            db,
            f"{what} answered no row for {missing} of {len(asked)} documents "
            f"(first {first!r}): {describe(rows)}",
            sent,
        )
    return dict(zip(names, rows, strict=True))


def rows_by_key(
    db: str, keys: list[str], policy: RetryPolicy, *, every: bool = False, **params: bool
) -> Program[dict[str, dict[str, Any]]]:
    """The rows of ``_all_docs`` by ``keys`` (with ``params``) by key, as :func:`keyed_rows`
    checks them."""
    reply = yield from ask(post_json(path(db, "_all_docs"), {"keys": keys, **params}), policy, db)
    rows = expect_object(reply.body, policy, db, "rows", sent=reply.sent)["rows"]
    return keyed_rows(rows, "key", set(keys), "_all_docs", policy, db, every=every, sent=reply.sent)


class _Batch:
    """One ``_bulk_docs`` batch: send, retry lost answers and rate-limited rows, resolve 409s,
    split what the server refuses as too large."""

    def __init__(
        self,
        known: FactsCache,
        db: str,
        ids: list[str],
        parts: list[bytes],
        options: Options,
        policy: RetryPolicy,
    ) -> None:
        self.known, self.db, self.ids, self.parts = known, db, ids, parts
        self.options, self.policy = options, policy
        self.results: list[WriteResult | None] = [None] * len(ids)
        self.attempts = Attempts()

    def write(self) -> Program[list[WriteResult]]:
        """Write the batch; return its results."""
        try:
            # Rows a group refused as too large settled before the refusal keep their results.
            yield from write_in_halves(
                self.parts,
                self._write,
                self._too_large,
                lambda index: self.results[index] is not None,
                document_bytes=self.options.document_bytes,
                batch_bytes=self.options.batch_bytes,
                envelope=_ENVELOPE,
                sizes=[measured(part, self.options.document_bytes) for part in self.parts],
            )
        except ServerError as exc:
            # Rows settled before the failure keep their results; the others share the error.
            sent = self.attempts.maybe_carried_out or any(r is not None for r in self.results)
            written(exc, None, None if sent else False)
            exc.results = [
                result if result is not None else WriteResult(doc_id, None, error=exc)
                for doc_id, result in zip(self.ids, self.results, strict=True)
            ]
            raise
        done = [result for result in self.results if result is not None]
        assert len(done) == len(self.ids), "every document of the batch has a result"
        return done

    def _too_large(self, index: int, why: str) -> None:
        doc_id = self.ids[index]
        error = ServerError(f"document {doc_id!r} in {self.db!r} is too large: {why}", TOO_LARGE)
        self.results[index] = WriteResult(doc_id, None, error=written(error, doc_id, False))

    def _write(self, group: list[int]) -> Program[None]:
        pending = list(group)
        limited: list[int] = []
        for attempt in range(self.policy.retries + 1):
            conflicted, limited = yield from self._send(sorted(pending))
            again = (yield from self._resolve(conflicted)) if conflicted else []
            pending = [*again, *limited]
            if not pending:
                return
            if limited:
                yield Sleep.within(self.policy, self.policy.delay(None, attempt))
        for index in pending:
            doc_id = self.ids[index]
            if index in limited:
                error: CouchidsError = RateLimitedError(
                    f"the server answered too_many_requests for document {doc_id!r} in "
                    f"{self.db!r} {self.policy.retries + 1} times",
                    429,
                )
                written(error, doc_id, False)
            else:
                error = ConflictError(
                    f"document {doc_id!r} in {self.db!r} was created and deleted by someone "
                    "else on every attempt; it was not stored",
                    doc_id,
                )
            self.results[index] = WriteResult(doc_id, None, error=error)

    def _send(self, pending: list[int]) -> Program[tuple[list[int], list[int]]]:
        """Write the ``pending`` documents; return those that met an existing id, and those
        the server had no capacity for (``too_many_requests``)."""
        body = b'{"docs":[' + b",".join([self.parts[i] for i in pending]) + b"]}"
        bulk_docs = Request("POST", path(self.db, "_bulk_docs"), body=body)
        reply = yield from ask(bulk_docs, self.policy, self.db, attempts=self.attempts)
        # Rows are matched by id, not position: PouchDB Server lists failed rows first.
        sent = {self.ids[i] for i in pending}
        by_id = keyed_rows(
            reply.body, "id", sent, "_bulk_docs", self.policy, self.db, every=True, sent=reply.sent
        )
        conflicted, limited = [], []
        for index in pending:
            doc_id = self.ids[index]
            row = by_id[doc_id]
            error = row.get("error")
            if error is None and reply.status == 202:
                # Fewer copies than a quorum took the batch: check each document as create does.
                rev = revision(row, self.policy, self.db, reply.sent)
                self.results[index] = yield from self._checked(index, rev)
            elif error is None:
                rev = revision(row, self.policy, self.db, reply.sent)
                self.results[index] = WriteResult(doc_id, rev)
            elif error == "conflict":
                conflicted.append(index)
            elif error == _RATE_LIMITED:
                limited.append(index)
            else:
                self.results[index] = WriteResult(
                    doc_id, None, error=written(_row_error(self.db, row), doc_id, False)
                )
        return conflicted, limited

    def _resolve(self, conflicted: list[int]) -> Program[list[int]]:
        """Read the conflicted ids back; return those that vanished and must be sent again."""
        keys = [self.ids[i] for i in conflicted]
        by_key = yield from rows_by_key(
            self.db, keys, self.policy, every=True, include_docs=True, conflicts=True
        )
        sent = f"POST {path(self.db, '_all_docs')}"  # as rows_by_key asked
        again = []
        for index in conflicted:
            doc_id = self.ids[index]
            stored = by_key[doc_id].get("doc")
            if stored is not None and not isinstance(stored, dict):
                problem = f"doc of {doc_id!r} is {describe(stored)}"
                raise answer_error(self.policy, self.db, problem, sent)
            if stored is None:
                # Not found or deleted since the 409: the id is free again.
                again.append(index)
            elif stored.get("_conflicts") or not same_content(
                json.loads(self.parts[index]), stored
            ):
                # Not simply our earlier write: look at every revision on every copy.
                self.results[index] = yield from self._checked(index, None)
            else:
                rev = stored.get("_rev")
                if not isinstance(rev, str):
                    problem = f"{doc_id!r} has _rev {describe(rev)}"
                    raise answer_error(self.policy, self.db, problem, sent)
                self.results[index] = WriteResult(doc_id, rev, duplicate=True)
        return again

    def _checked(self, index: int, our_rev: str | None) -> Program[WriteResult]:
        """Settle document ``index`` from its leaves on every copy, as :func:`create` does."""
        doc_id = self.ids[index]
        try:
            result = yield from _from_leaves(
                self.known, self.db, doc_id, json.loads(self.parts[index]), our_rev, self.policy
            )
        except ConflictError as conflict:
            return WriteResult(doc_id, None, error=conflict)
        if result is not None:
            return result
        gone = ConflictError(
            f"document {doc_id!r} in {self.db!r} was deleted by someone else while "
            "couchids checked it; it is not stored, and writing it again stores it",
            doc_id,
        )
        return WriteResult(doc_id, None, error=gone)


def _row_error(db: str, row: Mapping[str, Any]) -> ServerError:
    error, reason = row.get("error"), row.get("reason") or "no reason given"
    status = _ROW_STATUS.get(str(error), 500)
    message = f"the server refused document {row.get('id')!r} in {db!r}: {error}: {reason}"
    if status in (401, 403):
        return UnauthorizedError(message, status)
    return ServerError(message, status)


def _assign_id(
    doc: Doc,
    doc_type: str | None,
    timestamp: TimeLike,
    key: str | None,
    form: IdForm,
    label: str,
    time_name: str = "timestamp",
) -> str:
    """The id of ``doc`` (checked by :func:`~couchids.core.document.check_new` already);
    ``time_name`` is the parameter that gave ``timestamp`` (a bulk write's ``time_of``)."""
    own = doc.get("_id")
    if key is not None:
        if own is not None:
            raise InvalidArgumentError(
                f"{label} has _id {own!r} and a key: both would name its id; drop one"
            )
        return keyed_id(key, timestamp, type=doc_type, form=form)
    if own is None:
        return form.new(timestamp, type=doc_type)
    if not isinstance(own, str) or not own or own.startswith("_"):
        raise InvalidArgumentError(
            f"{label} has _id {own!r}: an _id is a non-empty string not starting with '_' "
            "(design and local documents are not created here)"
        )
    if doc_type is not None and not own.startswith(type_prefix(doc_type)):
        raise InvalidArgumentError(
            f"{label} has _id {own!r}, which is not of type {doc_type!r}; drop the _id to get "
            f"a new {doc_type!r} id, or drop type= to keep the _id"
        )
    if timestamp is not None:
        _check_time(own, timestamp, form, label, time_name)
    return own


def _check_time(doc_id: str, timestamp: TimeLike, form: IdForm, label: str, name: str) -> None:
    try:
        ms = form.parse(split_type(doc_id)[1])
    except InvalidInputError as exc:
        raise InvalidArgumentError(
            f"{label} has _id {doc_id!r}, whose time cannot be checked against {name}=: {exc}"
        ) from None
    wanted = to_ms(timestamp)
    asked = (
        f"{name}={timestamp!r}" if name == "timestamp" else f"the time {name} gives ({timestamp!r})"
    )
    if ms // form.unit_ms != wanted // form.unit_ms:
        raise InvalidArgumentError(
            f"{label} has _id {doc_id!r}, made at another time than {asked}; drop the _id to "
            f"get a new id for that time, or drop {name}= to keep the _id"
        )
