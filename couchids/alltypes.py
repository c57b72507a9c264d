"""Queries across every type at once: ``latest``/``window`` with ``type=ALL_TYPES``.

``_all_docs`` sorts ids by their type first, so "the newest ids of every type" is no single
key range. This module finds the types present and merges one query per type by time:

1. **Finding the types** (:func:`types_present`): read the first id of the database; if it
   names a type (``order:…``), jump past every id of that type (to ``order;``) and read the
   first id there; and so on (:func:`couchids.keys.type_step` says where each jump lands). One
   request per type, never the type's rows. Design documents and foreign ids between types
   cost one step each; only runs of untyped ids are read past row by row, in pages that grow
   while they last (1, 2, 4, ... up to :data:`MAX_STEP_PAGE` rows).
2. **Merging** (``heapq.merge``): each type's query streams in time order already, and the
   ids of one form sort by time after their type, so the streams merge by the text after the
   type with no decoding. Ids of one time from several types come in the order of their
   types.

A type is the text before an id's first separator (the form's, ``:`` by default); types
whose ids hold no id of the form contribute nothing, so foreign documents of any type never
come back. Untyped ids are not part of an all-types query: ask for them with ``type=None``.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from ibmcloudant.cloudant_v1 import CloudantV1

from .errors import ServerError
from .idform import IdForm
from .keys import type_step
from .server import RetryPolicy, call

__all__ = ["MAX_STEP_PAGE", "each_type", "merge_by_time", "types_present"]

#: The largest page read while walking past untyped ids between types.
MAX_STEP_PAGE: Final = 1000
#: Types queried at once by an all-types ``latest``.
_PARALLEL_TYPES: Final = 8

Row = dict[str, Any]


def types_present(
    client: CloudantV1, db: str, separator: str = ":", *, policy: RetryPolicy | None = None
) -> list[str]:
    """The types of the ids ``<type><separator>…`` in ``db``, in ``_all_docs`` order.

    A type is listed when some id starts with it and the separator, whatever follows (an
    all-types query then keeps only ids of its form). About one ``_all_docs`` request per
    type (see the module docstring).

    Args:
        client: an ``ibmcloudant`` ``CloudantV1`` client.
        db: the database name.
        separator: what joins a type and an id: ``:``, ``-`` or ``_``.
        policy: the deadline and name of the operation asking (see ``couchids.server``).

    Raises:
        ServerError: (or a subclass, such as ``DatabaseNotFoundError``) the server failed.

    Example::

        couchids.alltypes.types_present(client, "shop")  # ['invoice', 'order', 'user']
    """
    found: list[str] = []
    key, after, limit = "", False, 1
    while True:
        asked = limit + (1 if after else 0)
        options: dict[str, Any] = {"db": db, "limit": asked, "include_docs": False}
        if key:
            options["start_key"] = key
        result = call(db, functools.partial(client.post_all_docs, **options), policy)
        rows = result.get("rows") if isinstance(result, dict) else None
        if not isinstance(rows, list) or not all(
            isinstance(row, dict) and isinstance(row.get("id"), str) for row in rows
        ):
            raise ServerError(f"_all_docs of {db!r} answered without rows of ids: {result!r:.200}")
        typed = False
        for row in rows:
            doc_id = row["id"]
            if doc_id < key or (after and doc_id == key):
                continue  # passed over by a jump made on an earlier row of this page
            step = type_step(doc_id, separator)
            if step.doc_type is not None:
                found.append(step.doc_type)
                typed = True
            key, after = step.next_key, step.after
        if len(rows) < asked:
            return found
        limit = 1 if typed else min(limit * 2, MAX_STEP_PAGE)


def merge_by_time(
    streams: Iterable[Iterable[Row]], form: IdForm, *, newest_first: bool, include_docs: bool
) -> Iterator[Row]:
    """One stream of the rows (or documents) of per-type streams, in time order.

    Each stream is one type's answer in the order asked for; ids of ``form`` sort by time
    after their type, so the merge compares the text after the first separator.
    """
    field = "_id" if include_docs else "id"
    separator = form.separator

    def body(row: Row) -> str:
        return str(row[field]).partition(separator)[2]

    # Newest first is descending text, but for reverse forms (later times, smaller text).
    return heapq.merge(*streams, key=body, reverse=newest_first != form.reverse)


def each_type(query: Callable[[str], list[Row]], types: list[str]) -> list[list[Row]]:
    """``query(t)`` for each type ``t``, a few types at a time, in the order of ``types``."""
    if not types:
        return []
    with ThreadPoolExecutor(
        max_workers=min(_PARALLEL_TYPES, len(types)), thread_name_prefix="couchids-types"
    ) as pool:
        return list(pool.map(query, types))
