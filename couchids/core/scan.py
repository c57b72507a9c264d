"""Reading a key range of ``_all_docs`` page by page, in time order, from a resume point
(:func:`range_pages`), for the lifecycle operations that must stop and continue; the
:class:`Checkpoint` they keep; and the refusal of a loose form mixed with another's ids
(:func:`check_one_form`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Final

from couchids.core import arguments
from couchids.core.document import valid_unicode
from couchids.core.effects import END, Emit, Program, Puller
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import KeyRange, beyond_keys, in_window, resume_point
from couchids.core.pages import all_docs
from couchids.core.policy import RetryPolicy
from couchids.core.windows import DEFAULT_PAGE_SIZE, PARTITION_QUERY_LIMIT, partition_of
from couchids.core.writes import rows_by_key
from couchids.errors import InvalidArgumentError, ServerError
from couchids.idforms.forms import IdForm
from couchids.idforms.times import MAX_MS

__all__ = [
    "PROBE_ROWS",
    "Checkpoint",
    "check_checkpoint",
    "check_one_form",
    "check_resumes",
    "range_pages",
]

Row = dict[str, Any]

#: Above every id PouchDB Server holds in its UTF-16 order (but ids of 64 U+FFFF and more).
UTF16_TOP: Final = "\uffff" * 64
#: The rows read to see the first ids of a key range (a count by offset, :func:`check_one_form`).
PROBE_ROWS: Final = 20


@dataclass
class Checkpoint:
    """Where a long operation got to; persist it (:meth:`to_json`) to continue after a stop.

    Attributes:
        last_id: the last id the operation finished (export, expire, archive, rekey): a
            non-empty str of valid Unicode (no lone surrogates), or ``None`` to start at the
            beginning.
        since_seq: the ``_changes`` sequence :meth:`couchids.Database.follow` continues from: a
            str (CouchDB's ``"12-g1AAAA..."``, a number such as ``"0"``, or ``"now"``) or an
            int >= 0 (PouchDB's and CouchDB 1's sequences), as follow's ``since_seq`` is, or
            ``None`` to begin where follow's own ``since_seq`` (or ``since``, a time) says.
        done: how many documents it handled so far, an int >= 0.

    Raises:
        InvalidArgumentError: a field outside those values.

    >>> Checkpoint.from_json(Checkpoint("user:001", None, 3).to_json())
    Checkpoint(last_id='user:001', since_seq=None, done=3)
    >>> Checkpoint(last_id=5)
    Traceback (most recent call last):
    ...
    couchids.errors.InvalidArgumentError: Checkpoint last_id=5: the last id handled is a non-empty str, or None to start at the beginning
    """  # noqa: E501

    last_id: str | None = None
    since_seq: str | int | None = None
    done: int = 0

    def __post_init__(self) -> None:
        last_id, since_seq, done = self.last_id, self.since_seq, self.done
        if last_id is not None and (not isinstance(last_id, str) or not last_id):
            raise InvalidArgumentError(
                f"Checkpoint last_id={last_id!r:.80}: the last id handled is a non-empty "
                "str, or None to start at the beginning"
            )
        if last_id is not None and not valid_unicode(last_id):
            raise InvalidArgumentError(
                f"Checkpoint last_id={last_id!r:.80}: an id must be valid Unicode "
                "(no lone surrogates)"
            )
        arguments.sequence("Checkpoint since_seq", since_seq, optional=True)
        arguments.count("Checkpoint done", done, 0)

    def to_json(self) -> str:
        """The checkpoint as one line of JSON."""
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Checkpoint:
        """Read what :meth:`to_json` wrote.

        Raises:
            InvalidArgumentError: ``text`` is not such a checkpoint (not a JSON object, a
                field outside the values above, or a field no checkpoint has).
        """
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise TypeError
            unknown = sorted(set(data) - {"last_id", "since_seq", "done"})
            if unknown:
                raise InvalidArgumentError(
                    f"it has fields no checkpoint has ({', '.join(map(str, unknown)):.80}), "
                    "only last_id, since_seq and done"
                )
            return cls(data.get("last_id"), data.get("since_seq"), data.get("done", 0))
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(
                f"{text!r:.80} is not a couchids checkpoint: {exc}"
            ) from None
        except (ValueError, TypeError, AttributeError, OverflowError, RecursionError):
            raise InvalidArgumentError(
                f"{text!r:.80} is not a couchids checkpoint (JSON with last_id, since_seq, done)"
            ) from None


def check_checkpoint(value: object) -> Checkpoint:
    """``value`` if it is a valid :class:`Checkpoint` (checked again: its fields may have been
    changed since it was made), a new one for ``None``, else :class:`InvalidArgumentError`."""
    if value is None:
        return Checkpoint()
    if not isinstance(value, Checkpoint):
        raise InvalidArgumentError(
            f"checkpoint={value!r:.80}: pass a couchids.Checkpoint (Checkpoint.from_json(text) "
            "reads a saved one), or None to start at the beginning"
        )
    value.__post_init__()
    return value


def check_resumes(db: str, mark: Checkpoint, policy: RetryPolicy) -> Program[None]:
    """Refuse ``mark`` when its ``last_id`` is no document of ``db`` (a deleted one is), with
    one ``_all_docs`` by key, before anything is read or written: every id of ``db`` is a
    resume point of its walks, but an id of another database's run would skip the ids of
    ``db`` before it.

    Raises:
        InvalidArgumentError: ``db`` has no document ``mark.last_id`` (or, partitioned,
            cannot: the lookup of an id of no partition answers 400).
    """
    if mark.last_id is None:
        return
    try:
        row = yield from rows_by_key(db, [mark.last_id], policy, every=True)
        held = row[mark.last_id].get("error") != "not_found"
    except ServerError as exc:
        # A partitioned database refuses to look up an id of no partition: it holds none.
        if exc.status != 400:
            raise
        held = False
    if not held:
        raise InvalidArgumentError(
            f"checkpoint last_id={mark.last_id!r:.80} is no document of {db!r}: "
            "a checkpoint resumes the operation that wrote it (the same database); "
            "pass checkpoint=None to start from the beginning"
        )


def range_pages(
    known: FactsCache,
    db: str,
    keys: KeyRange,
    form: IdForm,
    policy: RetryPolicy,
    *,
    doc_type: str | None,
    after: str | None = None,
    include_docs: bool = False,
    batch_size: int = DEFAULT_PAGE_SIZE,
    to_the_end: bool = False,
    wanted: Callable[[str], bool] | None = None,
) -> Program[None]:
    """Emits the pages of the rows with ``keys.low <= id < keys.high`` (or, ``to_the_end``, to
    the end of the index), oldest id time first, unfiltered, in a typed range's partition
    when the database is partitioned. ``after`` (a checkpoint's id, which must be one the walk
    ``wanted``: by default ``form``'s ids of the range's type) resumes just past it
    (:func:`~couchids.core.keys.resume_point`)."""
    facts = yield from database_facts(known, db, policy)
    partition = partition_of(keys.prefix) if facts.partitioned else None
    if partition is not None:
        batch_size = min(batch_size, PARTITION_QUERY_LIMIT - 1)
    first, last, descending = keys.bounds(newest_first=False, form=form)
    if to_the_end and descending:
        raise InvalidArgumentError("a walk to the end of the index reads ascending keys")
    if wanted is None:
        # An id of the form at a time its key ranges reach, not one that only looks like it
        # (a kuuid-ms id of 2024 is written like a kuuid id of after 9999).
        wanted = in_window(form, doc_type, 0, MAX_MS + 1)
    reach = KeyRange(keys.low, max(keys.high, after or ""), keys.prefix) if to_the_end else keys
    resumed = resume_point(
        reach,
        after,
        descending=descending,
        wanted=wanted,
        what=f"an id {policy.operation} reads ({_scope(form, doc_type)})",
    )
    key = first if resumed is None else resumed
    # A page after the first gets back the row it starts at (skipped, as is the range's high
    # bound, which inclusive_end lets in), and asks for one more.
    skip = {resumed} if to_the_end else {keys.high, resumed}
    limit = batch_size if resumed is None else batch_size + 1
    # CouchDB reads to the end of the index without an end key; PouchDB Server then stops
    # at "\xff", and is asked again up to the top of its UTF-16 order.
    for end_key in (None, UTF16_TOP) if to_the_end else (last,):
        options: dict[str, Any] = {"descending": descending, "include_docs": include_docs}
        if end_key is not None:
            options["end_key"] = end_key
        while True:
            asked = {**options, "start_key": key, "limit": limit}
            each = policy.renewed()
            rows = yield from all_docs(
                db, asked, each, partition=partition, include_docs=include_docs
            )
            full = len(rows) >= limit
            page = [row for row in rows if row["id"] not in skip]
            if page:
                yield Emit(page)
            if rows:
                key = rows[-1]["id"]
                skip = {key} if to_the_end else {keys.high, key}
                limit = batch_size + 1
            if not full:
                break


def _scope(form: IdForm, doc_type: str | None) -> str:
    kind = f"of type {doc_type!r}" if doc_type is not None else "untyped"
    return f"{form} ids {kind}"


def check_one_form(
    known: FactsCache, db: str, form: IdForm, doc_type: str | None, policy: RetryPolicy
) -> Program[None]:
    """Refuse a type whose ids a loose form cannot tell from another form's, before anything
    is counted, exported or deleted: for ``utc_random``, one id written like the form's among
    the first :data:`PROBE_ROWS` past its last time (2100) is a CouchDB ``random`` or
    ``sequential`` id, some of which fall inside 2000-2100 (the ids guide says why). A type
    holding a single ``random`` id passes about one time in 18.

    Raises:
        InvalidArgumentError: the type holds such ids.
        ServerError: (and subclasses) the read failed.
    """
    if not form.loose:
        return
    beyond = beyond_keys(form, doc_type)
    if beyond is None:
        return
    alike = form.id_pattern(beyond.prefix).fullmatch
    pages = Puller(
        range_pages(known, db, beyond, form, policy, doc_type=doc_type, batch_size=PROBE_ROWS)
    )
    try:
        page = yield from pages.next()
    finally:
        pages.close()
    first = [] if page is END else page
    found = next((row["id"] for row in first if alike(row["id"])), None)
    if found is not None:
        ids = f"the ids of type {doc_type!r}" if doc_type is not None else "the untyped ids"
        raise InvalidArgumentError(
            f"form={form}: {ids} in {db!r} include ids written like {form} ids that are none "
            f"(such as {found!r}, past the last time a {form} id holds): CouchDB's random or "
            f"sequential ids, some of which cannot be told from {form} ids; "
            f"{policy.operation} will not count, export or delete {form} ids mixed with them"
        )
