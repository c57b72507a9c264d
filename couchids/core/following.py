"""Following the new documents of a type as they arrive (:meth:`couchids.Database.follow`).

Built on ``_changes``, which orders by when the database stored a document, not on
``_all_docs`` read onwards from the last id seen: an id is made before its document is stored,
so with several writers (or ids made within one second) a document whose id sorts below the
last one seen can still arrive, and an id scan never returns to it. The changes of other types
are read too, one small row each, and filtered by the form's ids as queries are. Measured with
``bench/bench_follow.py``: docs/guide/lifecycle.md, "Follow".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

from couchids.core import arguments
from couchids.core.answers import answer_error, check_listing, describe, expect_object
from couchids.core.asking import ask
from couchids.core.counting import server_kind
from couchids.core.defaults import DEFAULT_FOLLOW_BATCH
from couchids.core.effects import END, Emit, Program, Puller, Request, Sleep, path
from couchids.core.facts import FactsCache, database_facts
from couchids.core.features import changes_time, has_time_seq
from couchids.core.keys import check_time_form, window_keys
from couchids.core.options import Options
from couchids.core.policy import RetryPolicy
from couchids.core.scan import Checkpoint, check_checkpoint, check_one_form
from couchids.core.windows import matcher, scan_pages
from couchids.errors import InvalidArgumentError, ServerError
from couchids.idforms.forms import IdForm
from couchids.idforms.times import SecondsLike, TimeLike, to_ms

__all__ = ["DEFAULT_FOLLOW_BATCH", "DEFAULT_POLL", "follow"]

#: Seconds one long-poll request waits for a change before asking again.
DEFAULT_POLL: Final = 10.0


def follow(
    known: FactsCache,
    db: str,
    *,
    type: str | None,
    form: IdForm,
    since_seq: str | int,
    checkpoint: Checkpoint | None,
    wait: bool,
    poll: SecondsLike,
    options: Options,
    since: TimeLike = None,
) -> tuple[Program[None], Program[None]]:
    """The programs of :meth:`couchids.Database.follow` (see there), arguments checked now:
    the first looks the database up and pins a ``since_seq`` of ``"now"`` (drivers run it at
    the call); the second emits each new document.

    With ``since`` and no checkpoint sequence, a server that reads a time as ``_changes``'
    ``since`` (:func:`~couchids.core.features.has_time_seq`) starts there; any other reads the
    window ``[since, the form's last time]`` first, then the changes from the call on.
    """
    policy = options.policy("follow")
    batch_size = options.batch("follow")
    poll_ms = max(1, round(arguments.seconds("poll", poll, zero=False) * 1000))  # CouchDB's unit
    arguments.flag("wait", wait)
    checkpoint = check_checkpoint(checkpoint)
    arguments.sequence("since_seq", since_seq)
    arguments.form("form", form)
    start = None
    if since is not None:
        if since_seq != "now":
            raise InvalidArgumentError(
                f"since={since!r:.80} and since_seq={since_seq!r:.80}: pass a time (since) or "
                "a _changes sequence (since_seq), not both"
            )
        check_time_form(form)
        start = to_ms(since)
    wanted = _wanted(form, type, start)
    catch_up = _CatchUp()
    if checkpoint.since_seq is None:
        checkpoint.since_seq = str(since_seq)
        catch_up.start = start
    return (
        _start(known, db, checkpoint, policy, catch_up),
        _follow(
            known, db, form, type, wanted, checkpoint, wait, batch_size, poll_ms, policy, catch_up
        ),
    )


@dataclass
class _CatchUp:
    """Where a follow ``since`` a time begins: the window from ``start``, then the changes
    from ``seq``; or, where the server starts ``_changes`` at a time, from ``time`` (kept out
    of the checkpoint, whose ``since_seq`` is ``None`` until that request answers)."""

    start: int | None = None
    seq: str | None = None
    time: str | None = None


def _last(form: IdForm) -> int:
    """The end (exclusive) of every time ``form``'s ids can hold."""
    return (form.max_unit + 1) * form.unit_ms


def _wanted(form: IdForm, doc_type: str | None, start: int | None) -> Callable[[str], bool]:
    """Whether an id is one a time window of ``form`` and ``doc_type`` could return (from
    ``start`` on, when given). ``_changes`` brings ids from outside any key range, where ids
    of another form may match (a second-mode kuuid id reads as a millisecond one of 1970-1978,
    a v7s id as a utc_random one of 1983-2000): for a form that sorts by time, an id must lie
    in the key range of the window ``[start, the form's last time]``, checked as the scan
    checks its rows (the ids :func:`~couchids.core.keys.in_window` takes, without decoding)."""
    if not form.sortable:
        return form.matcher(form.type_prefix(doc_type))
    keys = window_keys(form, doc_type, start or 0, _last(form))
    return matcher(form, keys) if keys is not None else lambda doc_id: False


def _start(
    known: FactsCache, db: str, mark: Checkpoint, policy: RetryPolicy, catch_up: _CatchUp
) -> Program[None]:
    # One deadline from when it runs (the asyncio API runs it at the first step).
    each = policy.renewed()
    yield from database_facts(known, db, each)
    if catch_up.start is not None and (yield from has_time_seq(known, db, each)):
        catch_up.time, catch_up.start = changes_time(catch_up.start), None
        # Stopped before its first batch is all yielded, a follow begins at the time again.
        mark.since_seq = None
    if mark.since_seq == "now":
        changes = Request("POST", path(db, "_changes"), {"since": "now", "limit": "1"}, b"{}")
        current = (yield from ask(changes, each, db)).body
        found = expect_object(current, each, db, "last_seq", sent=changes.sent)
        mark.since_seq = str(found["last_seq"])
    if catch_up.start is not None:
        # Stopped while it reads the window, a follow reads it again from the start.
        catch_up.seq, mark.since_seq = str(mark.since_seq), None


def _follow(
    known: FactsCache,
    db: str,
    form: IdForm,
    doc_type: str | None,
    wanted: Callable[[str], bool],
    mark: Checkpoint,
    wait: bool,
    batch_size: int,
    poll_ms: int,
    policy: RetryPolicy,
    catch_up: _CatchUp,
) -> Program[None]:
    if catch_up.start is not None and catch_up.seq is not None:
        # The window from the start, oldest first, as a window reads it; then the changes.
        yield from check_one_form(known, db, form, doc_type, policy)
        pages = scan_pages(
            known,
            db,
            form,
            doc_type,
            catch_up.start,
            _last(form),
            policy,
            include_docs=True,
            batch_size=batch_size,
        )
        documents = Puller(pages)
        while (page := (yield from documents.next())) is not END:
            for doc in page:
                if isinstance(doc.get("_id"), str) and wanted(doc["_id"]):
                    yield Emit(doc)
                    mark.done += 1
        mark.since_seq, catch_up.start = catch_up.seq, None
    # PouchDB Server holds a long poll until a change comes, whatever its ``timeout``: there
    # a quiet database would outlast the request's deadline. It is asked every ``poll``
    # seconds instead.
    longpoll = wait and (yield from _long_polls(known, policy.renewed(), db))
    if longpoll and policy.timeout is not None:
        # A long-poll request is answered after up to ``poll`` seconds by design.
        policy = replace(policy, timeout=policy.timeout + poll_ms / 1000)
    while True:
        since = catch_up.time if catch_up.time is not None else str(mark.since_seq)
        params = {"since": since, "limit": str(batch_size), "include_docs": "true"}
        if longpoll:
            params.update(feed="longpoll", timeout=str(poll_ms))
        changes = Request("POST", path(db, "_changes"), params, b"{}")
        each = policy.renewed()
        body = (yield from ask(changes, each, db)).body
        answer = expect_object(body, each, db, "results", "last_seq", sent=changes.sent)
        results = answer["results"]
        if not isinstance(results, list) or not all(
            isinstance(row, dict)
            and isinstance(row.get("id"), str)
            and isinstance(row.get("doc"), dict | None)
            for row in results
        ):
            raise answer_error(
                each, db, f"_changes answered results {describe(results)}", changes.sent
            )
        _check_changes(results, answer["last_seq"], since, batch_size, each, db, changes.sent)
        # A document is the row's: the row's id is what ``wanted`` checks.
        for row in results:
            if row.get("doc") is not None and row["doc"].get("_id") != row["id"]:
                problem = f"_changes listed {row['id']!r} with {describe(row['doc'])}"
                raise answer_error(each, db, problem, changes.sent)
        docs = [
            row["doc"]
            for row in results
            if wanted(row["id"]) and not row.get("deleted") and row.get("doc")
        ]
        # Reverse ids sort newest first: oldest first is then the highest key first.
        docs.sort(key=lambda doc: doc["_id"], reverse=form.reverse)
        for doc in docs:
            yield Emit(doc)
            mark.done += 1
        mark.since_seq, catch_up.time = str(answer["last_seq"]), None
        if len(results) < batch_size and not wait:
            return
        if not results and not longpoll and wait:
            yield Sleep(poll_ms / 1000)


def _long_polls(known: FactsCache, policy: RetryPolicy, db: str) -> Program[bool]:
    """Whether the server answers a long poll once its ``timeout`` is over: all but PouchDB
    Server. A server whose welcome (``GET /``) is refused or missing is taken at its word."""
    try:
        return (yield from server_kind(known, policy, db)) != "pouchdb"
    except ServerError as exc:
        if exc.status in (401, 403, 404):
            return True
        raise


def _check_changes(
    results: list[dict[str, Any]],
    last_seq: Any,
    since: str,
    limit: int,
    policy: RetryPolicy,
    db: str,
    sent: str,
) -> None:
    """Refuse a ``_changes`` answer that lists a document or a sequence twice, the sequence
    ``since`` it started after, or more than ``limit`` changes, or whose ``last_seq`` (where
    the next request starts) is no sequence, or ``since`` itself after listing changes; and,
    where the sequences are numbers (PouchDB Server), ones that do not rise from ``since``,
    or a ``last_seq`` before them. CouchDB 2+ and Cloudant sequences are opaque: no order is
    read from them. A ``last_seq`` that went back would have the follow read changes again,
    and hand them out again, for ever."""

    def refused(problem: str) -> ServerError:
        return answer_error(policy, db, f"_changes listed {problem}", sent)

    ids = [row["id"] for row in results]
    check_listing("_changes", ids, policy, db, sent=sent, noun="id ", most=limit)
    if not (type(last_seq) is int or (isinstance(last_seq, str) and last_seq)):
        raise refused(f"{len(results)} changes with last_seq {describe(last_seq)}")
    seqs: list[Any] = [row.get("seq") for row in results]
    after = int(since) if since.isascii() and since.isdigit() else None
    if all(type(seq) is int for seq in seqs):
        check_listing(
            "_changes", seqs, policy, db, sent=sent, noun="seq ", ordered=True, after=after
        )
        last = max([*seqs, after or 0])
        if type(last_seq) is int and last_seq < last:
            raise refused(f"{len(results)} changes with last_seq {last_seq}, before seq {last}")
    elif all(isinstance(seq, str) for seq in seqs):
        check_listing("_changes", seqs, policy, db, sent=sent, noun="seq ", not_at=since)
    if results and str(last_seq) == since:
        raise refused(f"{len(results)} changes with last_seq {last_seq!r:.80}, the since asked")
