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
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import requests
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1

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
from .server import is_transient, server_error
from .times import TimeLike, to_ms

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_RETRIES",
    "WriteResult",
    "bulk_create",
    "create",
]

#: Retries after a lost answer, on top of the first attempt.
DEFAULT_RETRIES: Final = 4
#: Seconds before the first retry; each later retry waits twice as long (with jitter).
DEFAULT_BACKOFF: Final = 0.05
#: The longest wait between two attempts, whatever the backoff.
MAX_BACKOFF: Final = 2.0
#: The longest ``Retry-After`` (seconds) a 429 answer is obeyed for.
MAX_RETRY_AFTER: Final = 30.0
#: Documents per ``_bulk_docs`` request.
DEFAULT_BATCH_SIZE: Final = 500

JSON: Final = "application/json"
#: Fields of a stored document that are not its content.
_META: Final = frozenset({"_id", "_rev"})

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

    Returns:
        :class:`WriteResult` with ``id``, ``rev`` and ``duplicate``.

    Raises:
        ConflictError: a document with different content already has the id; nothing changed.
        InvalidArgumentError: ``doc`` is not a JSON object, has ``_rev``, has an ``_id`` that
            is not a string, starts with ``_`` or contradicts ``type``/``timestamp``, or the
            retry settings are out of range.
        InvalidTypeError, InvalidTimeError: a bad ``type`` or ``timestamp``.
        ServerError: ``DatabaseNotFoundError``, ``UnauthorizedError``, ``RateLimitedError``
            or ``ServerError`` itself for a refusal, at once, or for lost answers once the
            retries run out.

    >>> result = create(client, "orders", {"total": 12}, type="order")  # doctest: +SKIP
    >>> result.id, result.duplicate  # doctest: +SKIP
    ('order:001xUbdD1RZ8cs0WUopX3WJ9DN1zkRze', False)
    """
    policy = _RetryPolicy.checked(retries, backoff)
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
    policy = _RetryPolicy.checked(retries, backoff)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidArgumentError(f"batch_size={batch_size!r}: must be an int >= 1")
    if isinstance(docs, Mapping | str | bytes):
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
        _Batch(client, db, ids, bodies, results, policy).write(indexes, encoded)
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


@dataclass(frozen=True)
class _RetryPolicy:
    retries: int
    backoff: float

    @classmethod
    def checked(cls, retries: int, backoff: float) -> _RetryPolicy:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise InvalidArgumentError(f"retries={retries!r}: must be an int >= 0")
        if (
            isinstance(backoff, bool)
            or not isinstance(backoff, int | float)
            or not 0 <= backoff <= MAX_BACKOFF
        ):
            raise InvalidArgumentError(
                f"backoff={backoff!r}: must be a number of seconds from 0 to {MAX_BACKOFF:g}"
            )
        return cls(retries, float(backoff))

    def delay(self, exc: BaseException, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt + 1``."""
        after = _retry_after(exc)
        if after is not None:
            return min(after, MAX_RETRY_AFTER)
        # Jitter spreads out writers that lost their answers at the same moment.
        return min(MAX_BACKOFF, self.backoff * 2.0**attempt) * random.uniform(0.5, 1.0)


class _Status:
    """Answers :func:`_request` returns instead of raising, when the caller asks for them."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: The server answered 409 Conflict.
_CONFLICT: Final = _Status("CONFLICT")
#: The server answered 404 Not Found.
_MISSING: Final = _Status("MISSING")


def _request(
    db: str,
    request: Callable[[], Any],
    policy: _RetryPolicy,
    *,
    expect: tuple[_Status, ...] = (),
) -> Any:
    """Run an ``ibmcloudant`` call, retrying lost answers; return its JSON result.

    A 409 or 404 comes back as :data:`_CONFLICT` / :data:`_MISSING` when listed in ``expect``;
    every other failure raises the mapped :class:`~couchids.ServerError`.
    """
    attempt = 0
    while True:
        try:
            return request().get_result()
        except (ApiException, requests.RequestException) as exc:
            status = int(exc.status_code or 0) if isinstance(exc, ApiException) else 0
            if status == 409 and _CONFLICT in expect:
                return _CONFLICT
            if status == 404 and _MISSING in expect:
                return _MISSING
            if attempt >= policy.retries or not is_transient(exc):
                raise server_error(exc, db) from exc
            time.sleep(policy.delay(exc, attempt))
            attempt += 1


def _write_new(
    client: CloudantV1, db: str, doc_id: str, payload: bytes, policy: _RetryPolicy
) -> WriteResult:
    """PUT ``payload`` under ``doc_id`` if the id is free; resolve a 409 by reading back."""

    def put() -> Any:
        # A fresh stream per attempt: a retried request must send the body again.
        return client.put_document(
            db=db, doc_id=doc_id, document=io.BytesIO(payload), content_type=JSON
        )

    for _ in range(policy.retries + 1):
        answer = _request(db, put, policy, expect=(_CONFLICT,))
        if answer is not _CONFLICT:
            return WriteResult(doc_id, answer["rev"], duplicate=False)
        stored = _request(
            db, lambda: client.get_document(db=db, doc_id=doc_id), policy, expect=(_MISSING,)
        )
        if stored is _MISSING:
            # Deleted between our 409 and the read: the id is free again, so write again.
            continue
        if _same_content(json.loads(payload), stored):
            return WriteResult(doc_id, stored["_rev"], duplicate=True)
        raise _conflict(db, doc_id, stored)
    raise ConflictError(
        f"document {doc_id!r} in {db!r} was created and deleted by someone else "
        f"{policy.retries + 1} times while couchids tried to store it; nothing was stored",
        doc_id,
    )


def _same_content(ours: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """Whether ``stored`` holds ``ours`` (as read back from JSON), ignoring ``_id``/``_rev``."""
    return {k: v for k, v in ours.items() if k not in _META} == {
        k: v for k, v in stored.items() if k not in _META
    }


def _conflict(db: str, doc_id: str, stored: Mapping[str, Any]) -> ConflictError:
    return ConflictError(
        f"a different document already has id {doc_id!r} in {db!r} (rev {stored.get('_rev')}); "
        "couchids never overwrites, so nothing was written",
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
        policy: _RetryPolicy,
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
        rows = _request(
            self.db,
            lambda: self.client.post_bulk_docs(db=self.db, bulk_docs=io.BytesIO(body)),
            self.policy,
        )
        # Rows are matched by id, not position: PouchDB Server lists failed rows first. The ids
        # of one call are distinct, so each has exactly one row.
        by_id = {row.get("id"): row for row in rows} if isinstance(rows, list) else {}
        missing = [self.ids[i] for i in pending if self.ids[i] not in by_id]
        if missing:
            raise ServerError(
                f"_bulk_docs on {self.db!r} answered no row for {len(missing)} of "
                f"{len(pending)} documents (first {missing[0]!r}): {rows!r:.200}"
            )
        conflicted = []
        for index in pending:
            doc_id = self.ids[index]
            row = by_id[doc_id]
            error = row.get("error")
            if error is None:
                self.results[index] = WriteResult(doc_id, row["rev"])
            elif error == "conflict":
                conflicted.append(index)
            else:
                self.results[index] = WriteResult(doc_id, None, error=_row_error(self.db, row))
        return conflicted

    def _resolve(self, conflicted: list[int]) -> list[int]:
        """Read the conflicted ids back; return those that vanished and must be sent again."""
        keys = [self.ids[i] for i in conflicted]
        answer = _request(
            self.db,
            lambda: self.client.post_all_docs(db=self.db, keys=keys, include_docs=True),
            self.policy,
        )
        by_key = {row.get("key"): row for row in answer.get("rows", [])}
        missing = [key for key in keys if key not in by_key]
        if missing:
            raise ServerError(
                f"_all_docs on {self.db!r} answered no row for {len(missing)} of {len(keys)} "
                f"keys (first {missing[0]!r})"
            )
        again = []
        for index in conflicted:
            doc_id = self.ids[index]
            row = by_key[doc_id]
            stored = row.get("doc")
            if stored is None:
                # Not found or deleted since the 409: the id is free again.
                again.append(index)
            elif _same_content(_as_json(self.bodies[index]), stored):
                self.results[index] = WriteResult(doc_id, stored["_rev"], duplicate=True)
            else:
                self.results[index] = WriteResult(
                    doc_id, None, error=_conflict(self.db, doc_id, stored)
                )
        return again


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


def _as_json(body: Mapping[str, Any]) -> Any:
    """``body`` as the server stores it: through a JSON round trip (tuples become lists...)."""
    return json.loads(json.dumps(body))


def _encode(body: Mapping[str, Any], label: str) -> bytes:
    try:
        # allow_nan=False: NaN and Infinity are not JSON, and CouchDB refuses them.
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{label} is not JSON: {exc}") from None


def _retry_after(exc: BaseException) -> float | None:
    if not isinstance(exc, ApiException) or exc.status_code != 429 or exc.http_response is None:
        return None
    value = exc.http_response.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        # An HTTP date instead of seconds: fall back to the backoff.
        return None
