"""Writing new documents under sortable ids, safely under retries.

The id is chosen before the first request, so a retry after a lost answer (a dropped
connection, a timeout, a 5xx or 429) sends the same id again. CouchDB creates a document
without ``_rev`` only if its id is free and otherwise answers 409, so a retry can never store a
document twice; it can only meet its own first write. That 409 is resolved by reading the stored
document: the same content means the earlier attempt stored it (``duplicate=True``), different
content is a :class:`~couchids.ConflictError`. Nothing is ever overwritten: couchids never sends
a ``_rev``.

Documents are compared as JSON: the caller's document after a JSON round trip against the
stored one, both without ``_id`` and ``_rev``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ibmcloudant.cloudant_v1 import CloudantV1

from .content import same_content
from .decode import split_type
from .doctypes import type_prefix
from .errors import (
    BulkWriteError,
    ConflictError,
    CouchidsError,
    InvalidArgumentError,
    InvalidInputError,
    ServerError,
    UnauthorizedError,
)
from .forms import KUUID, IdForm
from .server import (
    CONFLICT,
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    JSON,
    RetryPolicy,
    answer_error,
    check_client,
    check_db,
    delete_revision,
    describe,
    expect_object,
    live_leaves,
    request,
    revision,
    winner,
)
from .times import TimeLike, to_ms

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_RETRIES",
    "WriteResult",
    "bulk_create",
    "create",
]

#: Documents per ``_bulk_docs`` request.
DEFAULT_BATCH_SIZE: Final = 500

#: What CouchDB answers a single-document write with, for each ``_bulk_docs`` row error.
_ROW_STATUS: Final = {
    "forbidden": 403,
    "unauthorized": 401,
    "bad_request": 400,
    "doc_validation": 400,
    "illegal_docid": 400,
}

Doc = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The outcome of writing one document.

    Attributes:
        id: the document's ``_id``.
        rev: its revision as stored (``None`` when ``error`` is set).
        duplicate: ``True`` when the document was already stored, with the same content, before
            the request that succeeded: by an earlier attempt whose answer was lost, or by an
            earlier call that wrote the same ``_id``. Either way it is stored exactly once.
        error: only in :func:`bulk_create` results (inside :class:`~couchids.BulkWriteError`):
            why this document was not stored.

    >>> WriteResult("user:001", "1-abc").ok
    True
    """

    id: str
    rev: str | None
    duplicate: bool = False
    error: CouchidsError | None = None

    @property
    def ok(self) -> bool:
        """Whether the document is stored."""
        return self.error is None


def create(
    client: CloudantV1,
    db: str,
    doc: Doc,
    *,
    type: str | None = None,
    timestamp: TimeLike = None,
    form: IdForm = KUUID,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> WriteResult:
    """Store a new document under a new sortable id, exactly once even when retried.

    The id is ``form.new(timestamp, type=type)``, or the document's own ``_id`` if it has one.
    A lost answer (connection error, timeout, 5xx, 429) is retried with the same id after a
    short backoff (a 429's ``Retry-After`` is obeyed, up to 30 s); a 409 is resolved by reading
    the stored document back. ``doc`` itself is not changed: the id is in the result.

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        doc: the document, a JSON object; without ``_rev`` (this never updates).
        type: the document type (``user`` makes ``user:<id>``). With an own ``_id``, the id
            must have this type.
        timestamp: the time in the id (default now). With an own ``_id``, the id must be of
            ``form`` and hold this time at the form's precision.
        form: the id layout (:data:`couchids.KUUID` and friends).
        retries: attempts after the first when the answer is lost.
        backoff: seconds before the first retry, doubling for each later one.
        timeout: seconds the whole call may take, retries and waits included (default 60);
            ``None`` leaves each request to the client's own timeouts.

    Returns:
        :class:`WriteResult` with ``id``, ``rev`` and ``duplicate``.

    Raises:
        ConflictError: a document with different content already has the id; nothing changed.
        InvalidArgumentError: ``doc`` is not a JSON object, has ``_rev``, has an ``_id`` that
            is not a string, starts with ``_`` or contradicts ``type``/``timestamp``, or the
            retry settings are out of range, ``client`` is not a ``CloudantV1`` or ``db`` not a
            database name.
        InvalidTypeError, InvalidTimeError: a bad ``type`` or ``timestamp``.
        ServerError: ``DatabaseNotFoundError``, ``UnauthorizedError``, ``RateLimitedError``
            or ``ServerError`` itself for a refusal, at once, or for lost answers once the
            retries run out; ``ServerTimeoutError`` when ``timeout`` runs out.

    >>> result = create(client, "orders", {"total": 12}, type="order")  # doctest: +SKIP
    >>> result.id, result.duplicate  # doctest: +SKIP
    ('order:001xUbdD1RZ8cs0WUopX3WJ9DN1zkRze', False)
    """
    policy = RetryPolicy.checked(retries, backoff, timeout, "create")
    client, db = check_client(client), check_db(db)
    doc_id = _assign_id(doc, type, timestamp, form, "the document")
    payload = _encode(_without_id(doc), "the document")
    return _write_new(client, db, doc_id, payload, policy)


def bulk_create(
    client: CloudantV1,
    db: str,
    docs: Iterable[Doc],
    *,
    type: str | None = None,
    form: IdForm = KUUID,
    batch_size: int = DEFAULT_BATCH_SIZE,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> list[WriteResult]:
    """Store many new documents through ``_bulk_docs``, each exactly once even when retried.

    Every document gets its id (its own ``_id``, or ``form.new(type=type)``) and is checked
    before the first request, so a bad document stops the call before anything is written. A
    batch whose answer is lost is sent again with the same ids; rows that meet their own
    earlier write (409) are read back in one ``_all_docs`` request per batch and compared, as
    in :func:`create`. ``docs`` are not changed: the ids are in the results.

    Rows that fail (a different document under the id, a validation refusal) do not stop the
    other batches: once all were attempted, :class:`~couchids.BulkWriteError` is raised with
    every result. A failure of a whole request (missing database, refused credentials, a
    server that stays unreachable) is raised at once as its :class:`~couchids.ServerError`;
    earlier batches stay stored. To be able to run such a call again without storing documents
    twice, give the documents ``_id`` s first (``dict(doc, _id=form.new(type=...))``): a second
    run then reports the stored ones as duplicates.

    Args:
        client, db, type, form, retries, backoff: as for :func:`create`.
        docs: the documents (JSON objects without ``_rev``).
        batch_size: documents per ``_bulk_docs`` request.
        timeout: seconds each batch may take, retries included (default 60); ``None`` leaves
            each request to the client's own timeouts.

    Returns:
        One :class:`WriteResult` per document, in input order.

    Raises:
        BulkWriteError: some documents were not stored (``.results``, ``.failed``).
        InvalidArgumentError: a document is not a JSON object, has ``_rev`` or a bad ``_id``,
            two documents have the same ``_id``, or a setting is out of range; nothing is sent.
        ServerError: a whole request failed (see above).

    >>> docs = [{"n": 1}, {"n": 2}]
    >>> results = bulk_create(client, "events", docs, type="event")  # doctest: +SKIP
    >>> [r.id[:6] for r in results]  # doctest: +SKIP
    ['event:', 'event:']
    """
    policy = RetryPolicy.checked(retries, backoff, timeout, "bulk_create")
    client, db = check_client(client), check_db(db)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidArgumentError(f"batch_size={batch_size!r}: must be an int >= 1")
    if isinstance(docs, Mapping | str | bytes) or not isinstance(docs, Iterable):
        raise InvalidArgumentError(
            f"docs must be an iterable of documents (e.g. a list of dicts), not one {_kind(docs)}"
        )
    ids: list[str] = []
    bodies: list[dict[str, Any]] = []
    where: dict[str, int] = {}
    for index, doc in enumerate(docs):
        doc_id = _assign_id(doc, type, None, form, f"document {index}")
        if doc_id in where:
            raise InvalidArgumentError(
                f"documents {where[doc_id]} and {index} both have _id {doc_id!r}; "
                "each document of a bulk write needs its own id"
            )
        where[doc_id] = index
        ids.append(doc_id)
        bodies.append({**doc, "_id": doc_id})
    # Every batch is encoded before the first is sent, so a document that is not JSON stops
    # the call with nothing written.
    batches = [
        (range(start, min(start + batch_size, len(ids))), _encode_batch(bodies, start, batch_size))
        for start in range(0, len(ids), batch_size)
    ]
    results: list[WriteResult | None] = [None] * len(ids)
    for indexes, encoded in batches:
        _Batch(client, db, ids, bodies, results, policy.renewed()).write(indexes, encoded)
    done = [result for result in results if result is not None]
    assert len(done) == len(ids), "every document of every batch has a result"
    failed = [result for result in done if result.error is not None]
    if failed:
        shown = "; ".join(f"{r.id}: {r.error}" for r in failed[:3])
        more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
        raise BulkWriteError(
            f"{len(failed)} of {len(done)} documents were not stored in {db!r}: {shown}{more}",
            done,
        )
    return done


def _write_new(
    client: CloudantV1, db: str, doc_id: str, payload: bytes, policy: RetryPolicy
) -> WriteResult:
    """PUT ``payload`` under ``doc_id`` if the id is free; settle a 409 or 202 by reading back."""

    def put() -> Any:
        # A fresh stream per attempt: a retried request must send the body again.
        return client.put_document(
            db=db, doc_id=doc_id, document=io.BytesIO(payload), content_type=JSON
        )

    ours = json.loads(payload)
    for _ in range(policy.retries + 1):
        answer = request(db, put, policy, expect=(CONFLICT,))
        if answer is not CONFLICT and answer.status != 202:
            return WriteResult(doc_id, revision(answer.body, policy, db))
        our_rev = None if answer is CONFLICT else revision(answer.body, policy, db)
        leaves = live_leaves(client, db, doc_id, policy)
        if our_rev is not None and all(leaf["_rev"] == our_rev for leaf in leaves):
            # 202 and no other revision on any copy that answered: stored. (A read that
            # reached only copies our write has not reached yet shows nothing: still stored.)
            return WriteResult(doc_id, our_rev)
        if not leaves:
            # 409, then nothing there: deleted by someone else since, so the id is free again.
            continue
        return _settle(client, db, doc_id, ours, leaves, policy)
    raise ConflictError(
        f"document {doc_id!r} in {db!r} was created and deleted by someone else "
        f"{policy.retries + 1} times while couchids tried to store it; nothing was stored",
        doc_id,
    )


def _settle(
    client: CloudantV1,
    db: str,
    doc_id: str,
    ours: Mapping[str, Any],
    leaves: list[dict[str, Any]],
    policy: RetryPolicy,
) -> WriteResult:
    """Resolve an id whose live revisions are ``leaves``, after a 409 or a 202.

    Returns the stored result (``duplicate=True``) when only our content stands there; raises
    :class:`~couchids.ConflictError` when a different document does. Revisions holding our
    content beside another revision are deleted, so couchids leaves no conflict behind.
    """
    mine = [leaf for leaf in leaves if same_content(ours, leaf)]
    other = [leaf for leaf in leaves if not same_content(ours, leaf)]
    if other:
        withdrawn = _withdraw(client, db, doc_id, mine, policy)
        raise _conflict(db, doc_id, winner(other), withdrawn=withdrawn)
    kept = winner(mine)
    _withdraw(client, db, doc_id, [leaf for leaf in mine if leaf is not kept], policy)
    return WriteResult(doc_id, kept["_rev"], duplicate=True)


def _withdraw(
    client: CloudantV1, db: str, doc_id: str, leaves: list[dict[str, Any]], policy: RetryPolicy
) -> int:
    """Delete these leaf revisions (couchids' own); return how many there were."""
    for leaf in leaves:
        delete_revision(client, db, doc_id, str(leaf["_rev"]), policy)
    return len(leaves)


def _conflict(
    db: str, doc_id: str, stored: Mapping[str, Any], *, withdrawn: int = 0
) -> ConflictError:
    if withdrawn:
        done = (
            f"some copies had taken this document too, and couchids deleted those {withdrawn} "
            "revision(s) again, so the stored document is unchanged and this one is not stored"
        )
    else:
        done = "couchids never overwrites, so nothing was written"
    return ConflictError(
        f"a different document already has id {doc_id!r} in {db!r} "
        f"(rev {stored.get('_rev')}); {done}",
        doc_id,
    )


class _Batch:
    """One ``_bulk_docs`` batch: send, retry lost answers, resolve the rows that met a 409."""

    def __init__(
        self,
        client: CloudantV1,
        db: str,
        ids: list[str],
        bodies: list[dict[str, Any]],
        results: list[WriteResult | None],
        policy: RetryPolicy,
    ) -> None:
        self.client, self.db, self.ids, self.bodies = client, db, ids, bodies
        self.results, self.policy = results, policy

    def write(self, indexes: range, encoded: bytes) -> None:
        """Write the documents ``indexes``, whose ``_bulk_docs`` body is ``encoded``."""
        pending = list(indexes)
        for _ in range(self.policy.retries + 1):
            conflicted = self._send(pending, encoded)
            pending = self._resolve(conflicted) if conflicted else []
            if not pending:
                return
            encoded = _encode_batch([self.bodies[i] for i in pending], 0, len(pending))
        for index in pending:
            self.results[index] = WriteResult(
                self.ids[index],
                None,
                error=ConflictError(
                    f"document {self.ids[index]!r} in {self.db!r} was created and deleted by "
                    "someone else on every attempt; it was not stored",
                    self.ids[index],
                ),
            )

    def _send(self, pending: list[int], body: bytes) -> list[int]:
        """Write the ``pending`` documents; return those that met an existing id."""
        reply = request(
            self.db,
            lambda: self.client.post_bulk_docs(db=self.db, bulk_docs=io.BytesIO(body)),
            self.policy,
        )
        rows = reply.body
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise answer_error(self.policy, self.db, f"_bulk_docs answered {describe(rows)}")
        # Rows are matched by id, not position: PouchDB Server lists failed rows first. The ids
        # of one call are distinct, so each has exactly one row.
        by_id = {row.get("id"): row for row in rows}
        missing = [self.ids[i] for i in pending if self.ids[i] not in by_id]
        if missing:
            raise answer_error(
                self.policy,
                self.db,
                f"_bulk_docs answered no row for {len(missing)} of {len(pending)} documents "
                f"(first {missing[0]!r}): {describe(rows)}",
            )
        conflicted = []
        for index in pending:
            doc_id = self.ids[index]
            row = by_id[doc_id]
            error = row.get("error")
            if error is None and reply.status == 202:
                # Fewer copies than a quorum took the batch: check each document as create does.
                self.results[index] = self._checked(index, revision(row, self.policy, self.db))
            elif error is None:
                self.results[index] = WriteResult(doc_id, revision(row, self.policy, self.db))
            elif error == "conflict":
                conflicted.append(index)
            else:
                self.results[index] = WriteResult(doc_id, None, error=_row_error(self.db, row))
        return conflicted

    def _resolve(self, conflicted: list[int]) -> list[int]:
        """Read the conflicted ids back; return those that vanished and must be sent again."""
        keys = [self.ids[i] for i in conflicted]
        answer = request(
            self.db,
            lambda: self.client.post_all_docs(
                db=self.db, keys=keys, include_docs=True, conflicts=True
            ),
            self.policy,
        ).body
        rows = expect_object(answer, self.policy, self.db, "rows")["rows"]
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise answer_error(self.policy, self.db, f"'rows' is {describe(rows)}")
        by_key = {row.get("key"): row for row in rows}
        missing = [key for key in keys if key not in by_key]
        if missing:
            raise answer_error(
                self.policy,
                self.db,
                f"_all_docs answered no row for {len(missing)} of {len(keys)} keys "
                f"(first {missing[0]!r})",
            )
        again = []
        for index in conflicted:
            doc_id = self.ids[index]
            row = by_key[doc_id]
            stored = row.get("doc")
            if stored is not None and not isinstance(stored, dict):
                raise answer_error(self.policy, self.db, f"doc of {doc_id!r} is {describe(stored)}")
            if stored is None:
                # Not found or deleted since the 409: the id is free again.
                again.append(index)
            elif stored.get("_conflicts") or not same_content(self._ours(index), stored):
                # Not simply our earlier write: look at every revision on every copy.
                self.results[index] = self._checked(index, None)
            else:
                rev = stored.get("_rev")
                if not isinstance(rev, str):
                    raise answer_error(self.policy, self.db, f"{doc_id!r} has _rev {describe(rev)}")
                self.results[index] = WriteResult(doc_id, rev, duplicate=True)
        return again

    def _ours(self, index: int) -> Any:
        """Document ``index`` as the server stores it: through a JSON round trip."""
        return json.loads(json.dumps(self.bodies[index]))

    def _checked(self, index: int, our_rev: str | None) -> WriteResult:
        """Settle document ``index`` from its leaves on every copy, as :func:`create` does."""
        doc_id = self.ids[index]
        leaves = live_leaves(self.client, self.db, doc_id, self.policy)
        if our_rev is not None and all(leaf["_rev"] == our_rev for leaf in leaves):
            return WriteResult(doc_id, our_rev)
        if not leaves:
            return WriteResult(
                doc_id,
                None,
                error=ConflictError(
                    f"document {doc_id!r} in {self.db!r} was deleted by someone else while "
                    "couchids checked it; it is not stored, and writing it again stores it",
                    doc_id,
                ),
            )
        try:
            return _settle(self.client, self.db, doc_id, self._ours(index), leaves, self.policy)
        except ConflictError as error:
            return WriteResult(doc_id, None, error=error)


def _row_error(db: str, row: Mapping[str, Any]) -> ServerError:
    error, reason = row.get("error"), row.get("reason") or "no reason given"
    status = _ROW_STATUS.get(str(error), 500)
    message = f"the server refused document {row.get('id')!r} in {db!r}: {error}: {reason}"
    if status in (401, 403):
        return UnauthorizedError(message, status)
    return ServerError(message, status)


def _assign_id(
    doc: Doc, doc_type: str | None, timestamp: TimeLike, form: IdForm, label: str
) -> str:
    if not isinstance(doc, Mapping):
        raise InvalidArgumentError(
            f"{label} is a {_kind(doc)}; a document is a JSON object (a dict)"
        )
    if "_rev" in doc:
        raise InvalidArgumentError(
            f"{label} has a _rev ({doc['_rev']!r}): couchids only creates new documents and "
            "never overwrites; update existing ones with client.put_document"
        )
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(f"form={form!r} is not a couchids IdForm such as KUUID")
    own = doc.get("_id")
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
        _check_time(own, timestamp, form, label)
    return own


def _check_time(doc_id: str, timestamp: TimeLike, form: IdForm, label: str) -> None:
    try:
        ms = form.parse(split_type(doc_id)[1])
    except InvalidInputError as exc:
        raise InvalidArgumentError(
            f"{label} has _id {doc_id!r}, whose time cannot be checked against timestamp=: {exc}"
        ) from None
    wanted = to_ms(timestamp)
    if ms // form.unit_ms != wanted // form.unit_ms:
        raise InvalidArgumentError(
            f"{label} has _id {doc_id!r}, made at another time than timestamp={timestamp!r}; "
            "drop the _id to get a new id for that time, or drop timestamp= to keep the _id"
        )


def _kind(value: object) -> str:
    return type(value).__name__


def _without_id(doc: Doc) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "_id"}


def _encode_batch(bodies: list[dict[str, Any]], start: int, size: int) -> bytes:
    batch = bodies[start : start + size]
    try:
        # One dumps per batch is about twice as fast as one per document.
        text = json.dumps(batch, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        for offset, body in enumerate(batch):
            _encode(body, f"document {start + offset}")
        raise
    return b'{"docs":' + text.encode() + b"}"


def _encode(body: Mapping[str, Any], label: str) -> bytes:
    try:
        # allow_nan=False: NaN and Infinity are not JSON, and CouchDB refuses them.
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{label} is not JSON: {exc}") from None
