"""Queries across every type at once: ``latest``/``window`` with ``type=ALL_TYPES``.

``_all_docs`` sorts ids by their type first, so "the newest ids of every type" is no single
key range. This module finds the types present and merges one query per type by time:

1. **Finding the types** (``types_present``): read the first id of the database; if it
   names a type (``order:…``), jump past every id of that type (to ``order;``) and read the
   first id there; and so on (:func:`couchids.core.keys.type_step` says where each jump
   lands). One request per type, never the type's rows. Design documents and foreign ids
   between types cost one step each; only runs of untyped ids are read past row by row, in
   pages that grow while they last (1, 2, 4, ... up to :data:`MAX_STEP_PAGE` rows).
2. **Merging** (``merge_by_time``): each type's query streams in time order already, and
   the ids of one form sort by time after their type, so the streams merge by the text after
   the type with no decoding. Ids of one time from several types come in the order of their
   types.

A type is the text before an id's first separator (the form's, ``:`` by default); types
whose ids hold no id of the form contribute nothing, so foreign documents of any type never
come back. Untyped ids are not part of an all-types query: ask for them with ``type=None``.
Pure: these are programs (:mod:`couchids.core.effects`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from couchids.core.effects import END, Emit, Program, Puller, Start, Wait
from couchids.core.keys import TypeStep, type_step
from couchids.core.pages import all_docs
from couchids.core.policy import RetryPolicy
from couchids.idforms.idform import IdForm

__all__ = ["MAX_STEP_PAGE", "each_type", "merge_by_time", "types_present", "walk_types"]

#: The largest page read while walking past untyped ids between types.
MAX_STEP_PAGE: Final = 1000
#: Types queried at once by an all-types ``latest``.
_PARALLEL_TYPES: Final = 8

Row = dict[str, Any]
T = TypeVar("T")
X = TypeVar("X")
#: The rows one request of the walk lands on, each with where it sends the walk next.
Landed = list[tuple[Row, TypeStep]]


def types_present(db: str, separator: str, policy: RetryPolicy) -> Program[list[str]]:
    """The types of the ids ``<type><separator>…`` in ``db``, in ``_all_docs`` order: about
    one ``_all_docs`` request per type (see the module docstring).

    A type is listed when some id starts with it and the separator, whatever follows.

    Raises:
        ServerError: (or a subclass, such as ``DatabaseNotFoundError``) the server failed.
    """
    found: list[str] = []

    def note(landed: Landed) -> Program[None]:
        found.extend(step.doc_type for _, step in landed if step.doc_type is not None)
        yield from ()

    yield from walk_types(db, separator, policy, note)
    return found


def walk_types(
    db: str,
    separator: str,
    policy: RetryPolicy,
    visit: Callable[[Landed], Program[None]],
    *,
    renew: bool = False,
    untyped_page: int | None = None,
) -> Program[None]:
    """The walk of :func:`types_present`: runs ``visit`` on the rows each request lands on
    before the next is sent. After a page with no type, the next asks ``untyped_page`` rows
    (default: twice as many, up to :data:`MAX_STEP_PAGE`); ``renew`` starts ``policy``'s
    clock anew for each request."""
    key, after, limit = "", False, 1
    while True:
        asked = limit + (1 if after else 0)
        options: dict[str, Any] = {"limit": asked}
        if key:
            options["start_key"] = key
        rows = yield from all_docs(db, options, policy.renewed() if renew else policy)
        landed: Landed = []
        for row in rows:
            if row["id"] < key or (after and row["id"] == key):
                continue  # passed over by a jump made on an earlier row of this page
            step = type_step(row["id"], separator)
            landed.append((row, step))
            key, after = step.next_key, step.after
        yield from visit(landed)
        if len(rows) < asked:
            return
        typed = any(step.doc_type is not None for _, step in landed)
        limit = 1 if typed else untyped_page or min(limit * 2, MAX_STEP_PAGE)


def merge_by_time(
    streams: list[Program[Any]], form: IdForm, *, newest_first: bool, include_docs: bool
) -> Program[None]:
    """Emits the pages of per-type streams (programs emitting pages) as one, in time order.

    Each stream is one type's answer in the order asked for; ids of ``form`` sort by time
    after their type, so the merge compares the text after the first separator. What is
    merged so far is emitted before any stream is asked for its next page.
    """
    field = "_id" if include_docs else "id"
    separator = form.separator
    # Newest first is descending text, but for reverse forms (later times, smaller text).
    descending = newest_first != form.reverse
    pullers = [Puller(stream) for stream in streams]
    heads: list[tuple[str, int, int, list[Row]]] = []  # (key, stream, position, page)

    def key(row: Row) -> str:
        body = str(row[field]).partition(separator)[2]
        return _Descending(body) if descending else body

    def refill(index: int) -> Program[None]:
        while True:
            page = yield from pullers[index].next()
            if page is END:
                return
            if page:
                heapq.heappush(heads, (key(page[0]), index, 0, page))
                return

    try:
        for index in range(len(pullers)):
            yield from refill(index)
        out: list[Row] = []
        while heads:
            _, index, position, page = heapq.heappop(heads)
            out.append(page[position])
            if position + 1 < len(page):
                heapq.heappush(heads, (key(page[position + 1]), index, position + 1, page))
            else:
                yield Emit(out)
                out = []
                yield from refill(index)
        if out:
            yield Emit(out)
    finally:
        for puller in pullers:
            puller.close()


class _Descending(str):
    """A string that sorts the other way round, for a descending merge on ``heapq``."""

    __slots__ = ()

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)


def each_type(
    query: Callable[[X], Program[T]], types: Sequence[X], parallel: int = _PARALLEL_TYPES
) -> Program[list[T]]:
    """``query(t)`` for each of ``types`` (or of any items, such as a series' periods),
    ``parallel`` at a time, in their order; each is made when it starts."""
    results: list[T] = []
    started: list[object] = []
    for item in types[:parallel]:
        started.append((yield Start(query(item))))
    for index in range(len(types)):
        results.append((yield Wait(started[index])))
        if index + parallel < len(types):
            started.append((yield Start(query(types[index + parallel]))))
    return results
