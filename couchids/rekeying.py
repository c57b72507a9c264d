"""Copying a database to time-sortable ids: re-keying documents by a date field.

Each source document gets the id ``form`` would make at its time, with the random part taken
from a keyed hash (HMAC-SHA256) of its source id: the same source document always gets the same
new id, so a second run, or one resumed after a stop, stores nothing twice (the write meets its
own earlier copy and compares equal, as :func:`couchids.bulk_create` does). Keyed, so that the
new ids cannot be worked out from the old ones without the key. The source is only read.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

from ibmcloudant.cloudant_v1 import CloudantV1

from .couchid import UTC_RANDOM
from .doctypes import type_prefix
from .errors import CouchidsError, InvalidArgumentError, InvalidIdError
from .forms import KUUID, IdForm
from .keyed import keyed_id
from .keys import KeyRange
from .scan import Checkpoint, check_size, checked_target, range_pages
from .server import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    RetryPolicy,
    check_db,
    database_facts,
)
from .times import to_ms
from .write import bulk_stream

__all__ = ["DEFAULT_REKEY_BATCH", "RekeyReport", "derived_id", "rekey"]

DEFAULT_REKEY_BATCH: Final = 500
#: Every id but the highest code points: the whole primary index.
_EVERYTHING = KeyRange(low="", high="\ufff0", prefix="")


def derived_id(form: IdForm, ms: int, source_id: str, key: bytes, *, type: str | None) -> str:
    """The id of ``form`` for time ``ms`` keyed by HMAC-SHA256(``key``, source id) (see
    :func:`couchids.keyed_id`).

    >>> derived_id(KUUID, 1514764800000, "abc", b"k", type="user")[:13]
    'user:001eVnWK'
    >>> derived_id(KUUID, 0, "abc", b"k", type=None) == derived_id(KUUID, 0, "abc", b"k", type=None)
    True
    """
    # The keyed id of the source id's HMAC: the same source, key and time give the same id,
    # and the key keeps the new ids from being computed from the old ones by anyone else.
    digest = hmac.new(key, source_id.encode("utf-8"), hashlib.sha256).hexdigest()
    return keyed_id(digest, ms, type=type, form=form)


@dataclass
class RekeyReport:
    """What :func:`rekey` did.

    Attributes:
        copied: documents stored in the target by this call.
        duplicates: documents the target already held (an earlier or interrupted run).
        skipped: ``(source id, reason)`` of documents without a readable time.
        failed: ``(source id, reason)`` of documents the target refused.
        checkpoint: the last source id handled.
    """

    copied: int = 0
    duplicates: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    checkpoint: Checkpoint = field(default_factory=Checkpoint)


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
    :func:`~couchids.rekeying.derived_id`; documents are otherwise copied as they are, without
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
    policy = RetryPolicy.checked(DEFAULT_RETRIES, DEFAULT_BACKOFF, timeout, "rekey")
    client, source_db = checked_target(client, source_db)
    target_db = check_db(target_db)
    if time_field is not None and not isinstance(time_field, str):
        raise InvalidArgumentError(f"time_field={time_field!r}: a field name (str) or None")
    secret = key.encode("utf-8") if isinstance(key, str) else key
    if not isinstance(secret, bytes) or not secret:
        raise InvalidArgumentError("key: give a non-empty secret (bytes or str)")
    check_size("batch_size", batch_size)
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(f"form={form!r}: pass an IdForm such as couchids.KUUID")
    type_prefix(type)
    database_facts(client, target_db, policy)
    report = RekeyReport()
    if checkpoint is not None:
        report.checkpoint = checkpoint
    mark = report.checkpoint
    pages = range_pages(
        client,
        source_db,
        _EVERYTHING,
        KUUID,
        policy,
        doc_type=None,
        after=mark.last_id,
        include_docs=True,
        page_size=batch_size,
    )
    for page in pages:
        pairs: list[tuple[str, dict[str, Any]]] = []
        for row in page:
            doc = row.get("doc")
            if not doc or row["id"].startswith("_design/"):
                continue
            try:
                ms = _time_of(doc, time_field)
            except (CouchidsError, ValueError) as exc:
                report.skipped.append((row["id"], str(exc)))
                continue
            new_id = derived_id(form, ms, row["id"], secret, type=type)
            body = {k: v for k, v in doc.items() if k not in ("_id", "_rev", "_attachments")}
            pairs.append((row["id"], {"_id": new_id, **body}))
        _store(client, target_db, pairs, report, mapping, policy)
        mark.last_id = page[-1]["id"]
        mark.done += len(pairs)
        if on_progress is not None:
            on_progress(report)
    return report


def _time_of(doc: dict[str, Any], time_field: str | None) -> int:
    if time_field is None:
        try:
            return UTC_RANDOM.parse(str(doc.get("_id", "")))
        except InvalidIdError as exc:
            raise InvalidArgumentError(f"{exc}; give time_field") from None
    if time_field not in doc:
        raise InvalidArgumentError(f"no field {time_field!r}")
    value = doc[time_field]
    if isinstance(value, float):
        value = int(value)
    return to_ms(value)


def _store(
    client: CloudantV1,
    target_db: str,
    pairs: list[tuple[str, dict[str, Any]]],
    report: RekeyReport,
    mapping: TextIO | None,
    policy: RetryPolicy,
) -> None:
    if not pairs:
        return
    docs = [doc for _, doc in pairs]
    results = list(
        bulk_stream(
            policy.operation,
            client,
            target_db,
            docs,
            batch_size=len(docs),
            retries=policy.retries,
            backoff=policy.backoff,
            timeout=policy.timeout,
        )
    )
    for (old, _), result in zip(pairs, results, strict=True):
        if result.error is not None:
            report.failed.append((old, str(result.error)))
            continue
        if result.duplicate:
            report.duplicates += 1
        else:
            report.copied += 1
        if mapping is not None:
            mapping.write(json.dumps({"old": old, "new": result.id}) + "\n")
