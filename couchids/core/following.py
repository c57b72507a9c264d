"""Following the new documents of a type as they arrive.

Built on ``_changes``, not on ``_all_docs`` read onwards from the last id seen. The id scan
looks cheaper (it reads only the type's key range), but it has gaps: an id is made before its
document is stored, so with several writers (or a writer whose clock lags) a document whose id
sorts below the last id seen can arrive after it, and a scan from that id never returns to it.
Even one writer meets this with second-precision ids (kuuid's default): ids made within one
second sort by their random part, not by when they were written. ``_changes`` orders by when
the database stored a document, whatever its id says, so a sequence checkpoint misses nothing.
Its cost is reading the changes of other types too (the rows are filtered here by the form's
regex, as queries are), which is one small row per write without ``include_docs`` for them.

Measured with ``bench/bench_follow.py`` (loopback, 10,000 documents before, 30 kuuid writes of
the type 0.1-0.4 s apart, each beside one of another type; polling every second):

- ``_changes`` long poll: 6 requests a minute when idle on CouchDB 3.4.3 (0 on PouchDB
  Server); a new document seen after 7 ms (median; worst 11 ms on CouchDB, 32 ms on
  PouchDB Server); none missed.
- ``_all_docs`` from the last id every second: 60 requests a minute when idle; a new document
  seen after 450-475 ms (median; worst about 1 s); 1 (CouchDB) and 8 (PouchDB Server) of the
  30 never seen.

A long poll answers as soon as a change arrives, and when idle costs one request per
``wait_ms`` (PouchDB Server holds it open until a change, whatever its ``timeout``); a poll
costs one request per interval and waits half an interval on average. The misses are the
same-second ids above.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

from couchids.core.answers import answer_error, check_listing, describe, expect_object
from couchids.core.asking import ask
from couchids.core.effects import Emit, Program, Request, path
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import window_keys
from couchids.core.policy import RetryPolicy
from couchids.core.scan import Checkpoint, check_checkpoint, check_flag, check_size, read_policy
from couchids.errors import InvalidArgumentError
from couchids.idforms.forms import IdForm

__all__ = ["DEFAULT_FOLLOW_BATCH", "DEFAULT_WAIT_MS", "follow"]

#: Changes per request.
DEFAULT_FOLLOW_BATCH: Final = 500
#: How long one long-poll request waits for a change before asking again.
DEFAULT_WAIT_MS: Final = 10_000


def follow(
    known: FactsCache,
    db: str,
    *,
    type: str | None,
    form: IdForm,
    since: str | int,
    checkpoint: Checkpoint | None,
    wait: bool,
    batch_size: int,
    wait_ms: int,
    timeout: float | None,
) -> tuple[Program[None], Program[None]]:
    """The programs of :meth:`couchids.Database.follow` (see there): the first looks the database up
    and pins a ``since`` of ``"now"`` (drivers run it at the call, so "now" is the call's, not
    the first read's); the second emits each new document. The arguments are checked now."""
    policy = read_policy(timeout, "follow")
    check_size("batch_size", batch_size)
    check_size("wait_ms", wait_ms)
    check_flag("wait", wait)
    checkpoint = check_checkpoint(checkpoint)
    if isinstance(since, bool) or not isinstance(since, str | int):
        raise InvalidArgumentError(
            f"since={since!r:.80}: a _changes sequence (a str such as '0' or CouchDB's "
            "'12-g1AAAA...', or an int), or 'now'"
        )
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(f"form={form!r}: pass an IdForm such as couchids.KUUID")
    wanted = _wanted(form, type)
    mark = checkpoint if checkpoint is not None else Checkpoint()
    if mark.since is None:
        mark.since = str(since)
    return (
        _start(known, db, mark, policy),
        _follow(db, form, wanted, mark, wait, batch_size, wait_ms, policy),
    )


def _wanted(form: IdForm, doc_type: str | None) -> Callable[[str], bool]:
    """Whether an id is one a time window of ``form`` and ``doc_type`` could return.

    ``_changes`` brings ids from outside any key range, so the form's matcher is not enough
    where ids of another form look alike: a second-mode kuuid id reads as a millisecond one of
    1970-1978, a v7s id as a utc_random one of 1983-2000. For a form that sorts by time an id
    must also lie in the key range of every time the form's ranges reach.
    """
    matches = form.matcher(form.type_prefix(doc_type))
    if not form.sortable:
        return matches
    every = window_keys(form, doc_type, 0, (form.max_unit + 1) * form.unit_ms)
    if every is None:
        return matches
    low, high = every.low, every.high

    def wanted(doc_id: str) -> bool:
        return low <= doc_id < high and matches(doc_id)

    return wanted


def _start(known: FactsCache, db: str, mark: Checkpoint, policy: RetryPolicy) -> Program[None]:
    # One deadline for the lookup and the read of "now", from when they run (the asyncio API
    # runs them at the first step, which may come long after the call).
    each = policy.renewed()
    yield from database_facts(known, db, each)
    if mark.since == "now":
        changes = Request("POST", path(db, "_changes"), {"since": "now", "limit": "1"}, b"{}")
        current = (yield from ask(changes, each, db)).body
        mark.since = str(expect_object(current, each, db, "last_seq")["last_seq"])


def _follow(
    db: str,
    form: IdForm,
    wanted: Callable[[str], bool],
    mark: Checkpoint,
    wait: bool,
    batch_size: int,
    wait_ms: int,
    policy: RetryPolicy,
) -> Program[None]:
    if wait and policy.timeout is not None:
        # A long-poll request is answered after up to wait_ms by design.
        policy = replace(policy, timeout=policy.timeout + wait_ms / 1000)
    while True:
        params = {"since": str(mark.since), "limit": str(batch_size), "include_docs": "true"}
        if wait:
            params.update(feed="longpoll", timeout=str(wait_ms))
        changes = Request("POST", path(db, "_changes"), params, b"{}")
        each = policy.renewed()
        body = (yield from ask(changes, each, db)).body
        answer = expect_object(body, each, db, "results", "last_seq")
        results = answer["results"]
        if not isinstance(results, list) or not all(
            isinstance(row, dict)
            and isinstance(row.get("id"), str)
            and isinstance(row.get("doc"), dict | None)
            for row in results
        ):
            raise answer_error(each, db, f"_changes answered results {describe(results)}")
        _check_changes(results, str(mark.since), batch_size, each, db, changes.sent)
        docs = [
            row["doc"]
            for row in results
            if wanted(row["id"]) and not row.get("deleted") and row.get("doc")
        ]
        if not all(isinstance(doc.get("_id"), str) for doc in docs):
            raise answer_error(
                each, db, f"_changes answered a document without _id: {describe(docs)}"
            )
        # Reverse ids sort newest first: oldest first is then the highest key first.
        docs.sort(key=lambda doc: doc["_id"], reverse=form.reverse)
        for doc in docs:
            yield Emit(doc)
            mark.done += 1
        mark.since = str(answer["last_seq"])
        if not results and not wait:
            return
        if len(results) < batch_size and not wait:
            return


def _check_changes(
    results: list[dict[str, Any]], since: str, limit: int, policy: RetryPolicy, db: str, sent: str
) -> None:
    """Refuse a ``_changes`` answer that lists a document twice (one answer lists each
    changed document once, at its latest change), a sequence twice, the sequence ``since``
    it was asked to start after, or more changes than ``limit``; and, where the sequences
    are numbers (PouchDB Server), sequences that do not rise from ``since``. CouchDB 2+ and
    Cloudant sequences are opaque strings (on a cluster, positions in each shard packed
    together): no order is read from them."""
    ids = [row["id"] for row in results]
    check_listing("_changes", ids, policy, db, sent=sent, noun="id ", most=limit)
    seqs = [row.get("seq") for row in results]
    if all(type(seq) is int for seq in seqs):
        after = int(since) if since.isascii() and since.isdigit() else None
        check_listing(
            "_changes", seqs, policy, db, sent=sent, noun="seq ", ordered=True, after=after
        )
    elif all(isinstance(seq, str) for seq in seqs):
        check_listing("_changes", seqs, policy, db, sent=sent, noun="seq ", not_at=since)
