"""Copying a database to time-sortable ids: re-keying documents by a date field.

Each source document gets the id ``form`` would make at its time, with the random part taken
from a keyed hash (HMAC-SHA256) of its source id: the same source document always gets the same
new id, so a second run, or one resumed after a stop, stores nothing twice (the write meets its
own earlier copy and compares equal, as :meth:`~couchids.Database.bulk_create` does). Keyed,
so that the new ids cannot be worked out from the old ones without the key. The source is only read.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from couchids.core import arguments
from couchids.core.defaults import DEFAULT_REKEY_BATCH
from couchids.core.document import valid_unicode
from couchids.core.effects import END, Program, Puller
from couchids.core.expiry import index_rows
from couchids.core.facts import FactsCache, database_facts
from couchids.core.options import Options
from couchids.core.policy import RetryPolicy
from couchids.core.scan import Checkpoint, check_checkpoint, check_resumes
from couchids.core.series import create_database
from couchids.core.writes import bulk
from couchids.errors import (
    CouchidsError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidIdError,
    WriteResult,
)
from couchids.idforms.couchid import UTC_RANDOM
from couchids.idforms.doctypes import type_prefix
from couchids.idforms.forms import KUUID, IdForm
from couchids.idforms.keyed import keyed_id
from couchids.idforms.times import span_ms, to_ms

__all__ = ["DEFAULT_REKEY_BATCH", "RekeyReport", "derived_id", "rekey"]


def derived_id(form: IdForm, ms: int, source_id: str, key: bytes, *, type: str | None) -> str:
    """The id of ``form`` for time ``ms`` keyed by HMAC-SHA256(``key``, source id) (see
    :func:`couchids.idforms.keyed.keyed_id`).

    >>> derived_id(KUUID, 1514764800000, "abc", b"k", type="user")[:13]
    'user:001eVnWK'
    >>> derived_id(KUUID, 0, "abc", b"k", type=None) == derived_id(KUUID, 0, "abc", b"k", type=None)
    True
    """
    digest = hmac.new(key, source_id.encode("utf-8"), hashlib.sha256).hexdigest()
    return keyed_id(digest, ms, type=type, form=form)


@dataclass
class RekeyReport:
    """What :meth:`couchids.Database.rekey` did.

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
    known: FactsCache,
    source_db: str,
    target_db: str,
    *,
    secret: bytes | str,
    time_field: str | None,
    type: str | None,
    form: IdForm,
    mapping: TextIO | None,
    checkpoint: Checkpoint | None,
    on_progress: Callable[[RekeyReport], None] | None,
    options: Options,
    create_target: bool = False,
) -> Program[RekeyReport]:
    """The program of :meth:`couchids.Database.rekey` (see there); arguments checked now, but
    for the database names (the caller's)."""
    policy = options.policy("rekey")
    batch_size = options.batch("rekey")
    arguments.other_database("target_db", target_db, source_db, "rekey")
    arguments.flag("create_target", create_target)
    if time_field is not None and not isinstance(time_field, str):
        raise InvalidArgumentError(f"time_field={time_field!r}: a field name (str) or None")
    if isinstance(secret, str) and not valid_unicode(secret):
        raise InvalidArgumentError("secret=: bytes or valid Unicode (no lone surrogates)")
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    if not isinstance(key, bytes) or not key:
        raise InvalidArgumentError("secret=: give a non-empty secret (bytes or str)")
    if mapping is not None:
        arguments.text_stream("mapping", mapping)
    arguments.function("on_progress", on_progress)
    arguments.form("form", form)
    type_prefix(type)
    report = RekeyReport(checkpoint=check_checkpoint(checkpoint))
    mark = report.checkpoint

    def run() -> Program[RekeyReport]:
        # The source first: a misspelt source creates no target.
        yield from database_facts(known, source_db, policy)
        yield from check_resumes(source_db, mark, policy)
        yield from _target(known, target_db, create_target, policy)
        pages = index_rows(
            known, source_db, policy, batch_size=batch_size, after=mark.last_id, include_docs=True
        )
        rows = Puller(pages)
        while (page := (yield from rows.next())) is not END:
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
                new_id = derived_id(form, ms, row["id"], key, type=type)
                body = {k: v for k, v in doc.items() if k not in ("_id", "_rev", "_attachments")}
                pairs.append((row["id"], {"_id": new_id, **body}))
            yield from _store(known, target_db, pairs, report, mapping, policy, options)
            mark.last_id = page[-1]["id"]
            mark.done += len(pairs)
            if on_progress is not None:
                on_progress(report)
        return report

    return run()


def _target(known: FactsCache, target_db: str, create: bool, policy: RetryPolicy) -> Program[None]:
    """Check that the target exists; with ``create``, create it when it does not (a plain
    database, as ``PUT /{db}`` makes it; one made meanwhile by another run is taken)."""
    try:
        yield from database_facts(known, target_db, policy)
    except DatabaseNotFoundError:
        if not create:
            raise
        yield from create_database(known, target_db, partitioned=False, policy=policy)
        yield from database_facts(known, target_db, policy)


def _time_of(doc: dict[str, Any], time_field: str | None) -> int:
    if time_field is None:
        try:
            return UTC_RANDOM.parse(str(doc.get("_id", "")))
        except InvalidIdError as exc:
            raise InvalidArgumentError(f"{exc}; give time_field") from None
    if time_field not in doc:
        raise InvalidArgumentError(f"no field {time_field!r}")
    value = doc[time_field]
    if value is None:
        # to_ms reads None as now: a document would get a new id on every run.
        raise InvalidArgumentError(f"the field {time_field!r} is null")
    if isinstance(value, str) and (value.strip().lower() == "now" or span_ms(value) is not None):
        raise InvalidArgumentError(
            f"the field {time_field!r} holds {value!r:.40}, a time relative to now: a document "
            "would get a new id on every run"
        )
    if isinstance(value, float):
        value = int(value)
    return to_ms(value)


def _store(
    known: FactsCache,
    target_db: str,
    pairs: list[tuple[str, dict[str, Any]]],
    report: RekeyReport,
    mapping: TextIO | None,
    policy: RetryPolicy,
    options: Options,
) -> Program[None]:
    if not pairs:
        return
    docs = [doc for _, doc in pairs]
    write = bulk(
        known,
        policy.operation,
        target_db,
        docs,
        type=None,
        form=KUUID,
        key_of=None,
        time_of=None,
        options=options.replace(batch_size=len(docs)),
    )
    results: list[WriteResult] = []
    batches = Puller(write)
    while (batch := (yield from batches.next())) is not END:
        results += batch
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
