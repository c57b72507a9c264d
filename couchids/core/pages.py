"""Reading ``_all_docs`` pages fast: raw bytes, a fast decoder, and time slices in parallel.

Pure programs (see :mod:`couchids.core.effects`). A page's answer is read as bytes and decoded
by ``orjson`` (:func:`couchids.core.exactjson.loads`), never by the SDK. Pages stay small, so
the garbage collector never sees a whole window at once (decoding 50,000 rows as 25 pages costs
a third of decoding them in one piece).

A window's key range splits exactly at time boundaries, so :func:`sliced_pages` reads several
time slices of one window at a time and still hands them out in order. Slices are sized from
the density the pages so far showed, aiming at half a page each, so ``k`` slices in flight hold
about ``k`` pages.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from couchids.core.answers import KeySpan, answer_error, describe, expect_rows
from couchids.core.asking import ask
from couchids.core.defaults import DEFAULT_PARALLEL, REMOTE_PARALLEL
from couchids.core.effects import Emit, Program, Start, Wait, path, post_json
from couchids.core.exactjson import loads
from couchids.core.keys import units, window_keys
from couchids.core.policy import RetryPolicy
from couchids.errors import InvalidIdError
from couchids.idforms.forms import IdForm

__all__ = [
    "DEFAULT_PARALLEL",
    "REMOTE_PARALLEL",
    "PageRequest",
    "Slice",
    "SlicePlan",
    "all_docs",
    "handed_on",
    "keyset",
    "rows_of",
    "sliced_pages",
]

Row = dict[str, Any]
T = TypeVar("T")
#: ``fetch(start_key, end_key, limit)``: the program reading the rows of one request.
RangeFetch = Callable[[str, str, int], Program[list[Row]]]
#: The arguments of one ``fetch``: ``(start_key, end_key, limit)``.
PageRequest = tuple[str, str, int]

#: A slice aims at this share of a page, so that few slices need a second request.
_SLICE_FILL = 0.5
#: A slice's span changes by at most this factor from one slice to the next.
_MAX_GROWTH = 8.0


def handed_on(page: list[T]) -> Iterator[T]:
    """The items of ``page`` in order, each taken out of it as it is handed on, so what the
    caller is done with is freed at once.

    >>> page = [1, 2, 3]
    >>> list(handed_on(page)), page
    ([1, 2, 3], [])
    """
    page.reverse()
    while page:
        yield page.pop()


def all_docs(
    db: str,
    options: dict[str, Any],
    policy: RetryPolicy,
    *,
    partition: str | None = None,
    include_docs: bool = False,
) -> Program[list[Row]]:
    """One ``_all_docs`` request of ``db`` (or of its ``partition``), ``options`` its body; its
    rows checked (:func:`rows_of`) to lie in order inside the keys asked for."""
    scope = () if partition is None else ("_partition", partition)
    reply = yield from ask(post_json(path(db, *scope, "_all_docs"), options), policy, db, raw=True)
    span = KeySpan(
        options.get("start_key"), options.get("end_key"), options.get("descending", False)
    )
    return rows_of(reply.body, db, include_docs, policy, reply.sent, span)


def rows_of(
    body: bytes,
    db: str,
    include_docs: bool,
    policy: RetryPolicy,
    sent: str | None = None,
    span: KeySpan | None = None,
) -> list[Row]:
    """The rows of an ``_all_docs`` answer, checked as
    :func:`~couchids.core.answers.expect_rows` checks them (in ``span``'s order and inside it).

    Raises:
        ServerError: the body is not JSON, or not of that shape.

    >>> from couchids.core.policy import RetryPolicy
    >>> policy = RetryPolicy.checked(0, 0)
    >>> rows_of(b'{"rows": [{"id": "a", "key": "a", "value": {}}]}', "db", False, policy)
    [{'id': 'a', 'key': 'a', 'value': {}}]
    """
    try:
        answer = loads(body)
    except ValueError:
        raise answer_error(policy, db, describe(body), sent) from None
    return expect_rows(answer, policy, db, include_docs=include_docs, sent=sent, span=span)


@dataclass(frozen=True)
class Slice:
    """One request's worth of a window: keys from ``first`` towards ``last`` (inclusive);
    ``after`` is an id it starts at that an earlier page already handed out."""

    first: str
    last: str
    after: str | None = None

    def resumed(self, after: str) -> Slice | None:
        """The part of this slice past ``after`` in its key order: the slice itself when
        ``after`` comes before it, ``None`` when it is past its end.

        >>> Slice("a", "m").resumed("c"), Slice("m", "a").resumed("c")
        (Slice(first='c', last='m', after='c'), Slice(first='c', last='a', after='c'))
        >>> Slice("a", "m").resumed("0"), Slice("a", "m").resumed("n")
        (Slice(first='a', last='m', after=None), None)
        """
        descending = self.first > self.last
        if (after > self.first) if descending else (after < self.first):
            return self
        if (after < self.last) if descending else (after > self.last):
            return None
        return Slice(after, self.last, after)

    def request(self, limit: int) -> PageRequest:
        """The first request of the slice for pages of ``limit`` rows: one row more when it
        starts at ``after``, which is dropped."""
        return self.first, self.last, limit + 1 if self.after is not None else limit


class SlicePlan:
    """Cuts the rest of a window into time slices, in hand-out order. Times are in the form's
    units; ``span`` is the length of the next slice, learnt from the rows of the earlier ones."""

    def __init__(
        self, form: IdForm, doc_type: str | None, newest_first: bool, start_ms: int, end_ms: int
    ) -> None:
        self.form, self.doc_type, self.newest_first = form, doc_type, newest_first
        # The units [lo, hi) not yet planned.
        self.lo, self.hi = units(form, start_ms, end_ms)
        self.span = float(max(1, self.hi - self.lo))
        self.after: str | None = None

    def whole(self) -> Slice | None:
        """The rest of the window as one slice, or ``None`` when it holds no time."""
        return self._slice(self.lo, self.hi)

    def first_request(self, limit: int) -> PageRequest | None:
        """The first request :func:`sliced_pages` sends for pages of ``limit`` rows (half a
        page), or ``None`` when the window holds no time."""
        whole = self.whole()
        return None if whole is None else whole.request(max(1, int(limit * _SLICE_FILL)))

    def resume(self, after_id: str, prefix: str) -> None:
        """Plan only what comes after ``after_id``, an id handed out before; the first request
        drops it."""
        whole = self.whole()
        rest = whole.resumed(after_id) if whole is not None else None
        if rest is None:
            self.lo = self.hi
            return
        if rest is whole:
            return
        # An id not of the form leaves the sizes to be learnt from the pages.
        unit = self._unit(after_id, prefix)
        if unit is not None and self.newest_first:
            self.hi = min(self.hi, unit + 1)
        elif unit is not None:
            self.lo = max(self.lo, unit)
        self.after = after_id

    def learn_first(self, last_id: str, prefix: str, rows: int, limit: int) -> bool:
        """After a full first page of ``rows`` rows ending at ``last_id``, for slices of
        ``limit``-row requests: the rest starts after it. ``False`` when it is no id of the
        form."""
        unit = self._unit(last_id, prefix)
        if unit is None:
            return False
        if self.newest_first:
            covered, self.hi = self.hi - unit, unit + 1
        else:
            covered, self.lo = unit - self.lo + 1, unit
        self.after = last_id
        self.span = max(1.0, covered * limit * _SLICE_FILL / max(rows, 1))
        return True

    def learn(self, planned_span: float, rows: int, limit: int) -> None:
        """A slice of ``planned_span`` units held ``rows`` rows of a ``limit``-row request."""
        factor = limit * _SLICE_FILL / rows if rows else _MAX_GROWTH
        factor = min(_MAX_GROWTH, max(1 / _MAX_GROWTH, factor))
        self.span = max(1.0, planned_span * factor)

    def next(self) -> tuple[Slice, float] | None:
        """The next slice and its span, or ``None`` at the window's end."""
        if self.lo >= self.hi:
            return None
        width = max(1, int(self.span))
        if self.newest_first:
            lo, hi = max(self.lo, self.hi - width), self.hi
            self.hi = lo
        else:
            lo, hi = self.lo, min(self.hi, self.lo + width)
            self.lo = hi
        piece = self._slice(lo, hi)
        assert piece is not None  # lo < hi
        self.after = None
        return piece, float(hi - lo)

    def _unit(self, doc_id: str, prefix: str) -> int | None:
        try:
            return self.form.parse(doc_id[len(prefix) :]) // self.form.unit_ms
        except InvalidIdError:
            return None

    def _slice(self, lo: int, hi: int) -> Slice | None:
        """Units ``[lo, hi)`` as a slice, starting at the resume point if there is one."""
        unit = self.form.unit_ms
        keys = window_keys(self.form, self.doc_type, lo * unit, hi * unit)
        if keys is None:
            return None
        first, last, _ = keys.bounds(newest_first=self.newest_first, form=self.form)
        return Slice(self.after or first, last, self.after)


def sliced_pages(
    fetch: RangeFetch,
    plan: SlicePlan,
    parallel: int,
    limit: int,
    wanted: Callable[[str], object],
    prefix: str,
    first: list[Row] | None = None,
) -> Program[None]:
    """Emits the pages of a window, read as up to ``parallel`` time slices at a time, in order.

    The first request asks for half a page; when it is full, the rest is planned as slices
    of about half a page each, ``parallel`` of them in flight while the caller works through
    the page before. A slice that fills its request goes on with keyset pages. Holds at most
    ``parallel + 2`` pages; an emitted page is its taker's, to empty. ``first`` is the answer
    to the first request (:meth:`SlicePlan.first_request`), read ahead.
    """
    whole, request = plan.whole(), plan.first_request(limit)
    if whole is None or request is None:
        return
    rows = first if first is not None else (yield from fetch(*request))
    full = len(rows) >= request[2]
    if whole.after is not None and rows and rows[0]["id"] == whole.after:
        del rows[0]
    if not full:
        yield Emit(rows)
        return
    last_wanted = next((row["id"] for row in reversed(rows) if wanted(row["id"])), None)
    if last_wanted is None or not plan.learn_first(last_wanted, prefix, len(rows), limit):
        # No id of the form to learn the density from: read the rest in keyset pages.
        last = rows[-1]["id"]
        yield Emit(rows)
        yield from keyset(fetch, Slice(last, whole.last, last), limit)
        return
    cut = max(i for i, row in enumerate(rows) if row["id"] == last_wanted)
    flight: deque[tuple[Slice, float, object]] = deque()

    def fill() -> Program[None]:
        while len(flight) < parallel and (planned := plan.next()) is not None:
            piece, span = planned
            handle = yield Start(fetch(*piece.request(limit)))
            flight.append((piece, span, handle))

    yield from fill()
    del rows[cut + 1 :]
    yield Emit(rows)
    while flight:
        piece, span, handle = flight.popleft()
        rows = yield Wait(handle)
        plan.learn(span, len(rows), limit)
        yield from fill()
        yield from keyset(fetch, piece, limit, rows=rows)


def keyset(
    fetch: RangeFetch,
    piece: Slice,
    limit: int,
    *,
    first_limit: int | None = None,
    prefetch: bool = True,
    rows: list[Row] | None = None,
) -> Program[None]:
    """Emits the keyset pages of ``piece``: ``first_limit`` rows first (default ``limit``),
    then ``limit`` a page, fetching the next while one is handed out (``prefetch``); ``rows``
    is the answer to the first request, read ahead. A page that starts at an id already
    handed out asks for one row more and drops it."""
    request = piece.request(limit if first_limit is None else first_limit)
    if rows is None:
        rows = yield from fetch(*request)
    after, asked = piece.after, request[2]
    while True:
        full = len(rows) == asked
        if after is not None and rows and rows[0]["id"] == after:
            del rows[0]
        if not full or not rows:
            yield Emit(rows)
            return
        after, asked = rows[-1]["id"], limit + 1
        if prefetch:
            handle = yield Start(fetch(after, piece.last, asked))
            yield Emit(rows)
            rows = yield Wait(handle)
        else:
            yield Emit(rows)
            rows = yield from fetch(after, piece.last, asked)
