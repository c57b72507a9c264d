"""Keeping to a server's rate limits: the request class of each request (:func:`request_class`)
and a :class:`Pacer` that learns, from ``429`` answers, how many requests of each class the
server takes in any window of ``WINDOW`` seconds, and holds each request back until it fits.

IBM Cloudant counts reads, writes and global queries apart over any 1,000 ms and answers
``429`` past a class's limit ("Provisioned throughput capacity model FAQ"). How the budget of a
class is learnt, lowered and probed upwards is in the guide (``docs/guide/cloudant.md``).
The pacer has no clock and no lock: the drivers pass ``now`` (``time.monotonic()``) and share
one pacer per client.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias
from urllib.parse import unquote

from couchids.core.effects import Request
from couchids.core.policy import MAX_RETRY_AFTER, retry_after_seconds
from couchids.errors import InvalidArgumentError

#: A request class as Cloudant counts it; ``other`` is not counted (``GET /``, database info).
RequestClass: TypeAlias = Literal["read", "write", "query", "other"]
CLASSES: Final[tuple[RequestClass, ...]] = ("read", "write", "query", "other")

#: Cloudant's window: requests are counted over any 1,000 ms.
WINDOW: Final = 1.0
#: Seconds added to the window for the time between sending a request and the server counting it.
MARGIN: Final = 0.05
#: Seconds without a 429 before the budget first grows by one.
PROBE_AFTER: Final = 2.0
#: The longest wait before the budget grows again, after failed probes.
MAX_PROBE_AFTER: Final = 60.0
#: With no deadline, the seconds a request keeps being sent again after 429s before the 429
#: is the answer (a call with a ``timeout`` waits as long as it has).
PATIENCE: Final = 120.0

#: IBM Cloudant's plans ("Plans and provisioning"): reads, writes and global queries a second
#: of Lite, and of one Standard block.
PLANS: Final[Mapping[str, tuple[int, int, int]]] = {"lite": (20, 10, 5), "standard": (100, 50, 5)}

#: Requests to a database's own sub-resources (``/{db}/_xxx``), by class.
_DB_ENDPOINTS: Final[Mapping[str, RequestClass]] = {
    "_all_docs": "query",
    "_bulk_get": "query",
    "_find": "query",
    "_changes": "query",
    "_design_docs": "query",
    "_bulk_docs": "write",
    "_revs_diff": "read",
    "_missing_revs": "read",
}


def request_class(request: Request) -> RequestClass:
    """The class Cloudant counts ``request`` in: IBM's table ("Usage and charges") and the
    Cloudant blog's list of endpoints ("HTTP 429", which names ``_bulk_get`` a query).

    >>> request_class(Request("POST", "/clicks/_all_docs"))
    'query'
    >>> request_class(Request("POST", "/clicks/_partition/click/_all_docs"))
    'read'
    >>> request_class(Request("POST", "/clicks/_bulk_docs"))
    'write'
    >>> request_class(Request("GET", "/clicks/click%3A0abc"))
    'read'
    >>> request_class(Request("GET", "/clicks")), request_class(Request("GET", "/_all_dbs"))
    ('other', 'other')
    """
    trimmed = request.path.split("?", 1)[0].strip("/")
    segments = [unquote(s) for s in trimmed.split("/")] if trimmed else []
    method = request.method.upper()
    if not segments or segments[0].startswith("_"):
        return "other"
    if len(segments) == 1:
        return "write" if method == "POST" else "other"  # POST /{db} writes a document
    if segments[1] == "_partition":
        return "read"
    if segments[1] == "_design" and len(segments) >= 4 and segments[3].startswith("_"):
        return "query"  # views and search outside a partition
    if segments[1] in ("_design", "_local") or not segments[1].startswith("_"):
        return "read" if method in ("GET", "HEAD") else "write"
    return _DB_ENDPOINTS.get(segments[1], "other")


@dataclass(frozen=True)
class Rate:
    """A budget: requests a second of each class (``None``: learnt from the server's 429s).

    >>> Rate.of("lite")
    Rate(reads=20, writes=10, queries=5)
    >>> Rate.of({"queries": 10})
    Rate(reads=None, writes=None, queries=10)
    """

    reads: int | None = None
    writes: int | None = None
    queries: int | None = None

    @classmethod
    def of(cls, rate: Rate | str | Mapping[str, int | None] | None) -> Rate | None:
        """A :class:`Rate` from a plan's name (``"lite"``, ``"standard"`` for one block), a
        mapping of ``reads``/``writes``/``queries`` to requests a second, a :class:`Rate`, or
        ``None`` (learnt from 429s)."""
        if rate is None or isinstance(rate, Rate):
            return rate
        if isinstance(rate, str) and rate in PLANS:
            return cls(*PLANS[rate])
        if not isinstance(rate, Mapping):
            raise InvalidArgumentError(
                f"rate={rate!r:.80}: a plan's name ({', '.join(sorted(PLANS))}), a mapping "
                "such as {'reads': 100, 'writes': 50, 'queries': 5}, or None"
            )
        unknown = set(rate) - {"reads", "writes", "queries"}
        if unknown:
            raise InvalidArgumentError(
                f"rate: unknown request class {sorted(unknown)!r}; the classes are "
                "'reads', 'writes' and 'queries' (requests a second)"
            )
        for name, value in rate.items():
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise InvalidArgumentError(
                    f"rate[{name!r}]={value!r}: must be None or a whole number of "
                    "requests a second from 1"
                )
        return cls(rate.get("reads"), rate.get("writes"), rate.get("queries"))

    def of_class(self, kind: RequestClass) -> int | None:
        """The budget of one class (``None``: not given)."""
        return {"read": self.reads, "write": self.writes, "query": self.queries}.get(kind)


@dataclass(frozen=True, slots=True)
class Ticket:
    """A request the pacer let go: its class and when it was sent."""

    kind: RequestClass
    sent: float
    number: int


class _Lane:
    """One class's window: the requests sent in it, and what is known of its budget (learnt,
    never past ``cap``, the given one)."""

    def __init__(self, cap: int | None) -> None:
        self.budget: int | None = cap
        self.cap = cap
        self.sent: collections.deque[Ticket] = collections.deque()
        self.closed_until = 0.0
        self.changed = 0.0
        self.probe_after = PROBE_AFTER
        self.next_probe = 0.0
        self.step = 1
        self.probing = False
        self.refused = 0
        #: 429s in a row that met none of this client's requests in their window.
        self.starved = 0

    def forget(self, now: float) -> None:
        while self.sent and now - self.sent[0].sent >= WINDOW + MARGIN:
            self.sent.popleft()


class Pacer:
    """Holds each request of a client back until its class has room (see the module's text).

    >>> pacer = Pacer(Rate(queries=2))
    >>> request = Request("POST", "/db/_all_docs")
    >>> [pacer.delay(request, 0.0) for _ in range(2)] and pacer.take(request, 0.0) is not None
    True
    >>> pacer.take(request, 0.0) is not None, pacer.take(request, 0.0)
    (True, None)
    >>> round(pacer.delay(request, 0.0), 3)  # the window frees a slot after 1.05 s
    1.05
    """

    def __init__(self, rate: Rate | None = None) -> None:
        self.rate = rate
        self._lanes = {kind: _Lane(rate.of_class(kind) if rate else None) for kind in CLASSES}
        self._numbers = itertools.count()

    def budget(self, kind: RequestClass) -> int | None:
        """The requests of ``kind`` let go in any window (``None``: no limit known)."""
        return self._lanes[kind].budget

    def refusals(self, kind: RequestClass) -> int:
        """The 429s the server answered to requests of ``kind``."""
        return self._lanes[kind].refused

    def delay(self, request: Request, now: float) -> float:
        """Seconds before ``request`` may be sent (0: now)."""
        lane = self._lanes[request_class(request)]
        lane.forget(now)
        wait = max(0.0, lane.closed_until - now)
        if lane.budget is not None and len(lane.sent) >= lane.budget:
            self._probe(lane, now)
        if lane.budget is not None and len(lane.sent) >= lane.budget:
            oldest = lane.sent[len(lane.sent) - lane.budget]
            wait = max(wait, oldest.sent + WINDOW + MARGIN - now)
        return wait

    def take(self, request: Request, now: float) -> Ticket | None:
        """A ticket for sending ``request`` now, or ``None`` when it must wait (:meth:`delay`)."""
        return None if self.delay(request, now) > 0 else self.force(request, now)

    def answered(
        self,
        ticket: Ticket,
        now: float,
        status: int,
        retry_after: str | None = None,
        *,
        refused_before: int = 0,
    ) -> None:
        """What the server answered to the request of ``ticket``: its status (0: no answer),
        its ``Retry-After``, and the 429s the SDK's own retries met before it."""
        lane = self._lanes[ticket.kind]
        if status != 429 and refused_before == 0:
            lane.starved = 0
            return
        if status == 429:
            lane.sent = collections.deque(t for t in lane.sent if t.number != ticket.number)
        lane.refused += max(refused_before, 0) + (status == 429)
        # This client's requests the server counted in the window before the refused one.
        admitted = sum(
            1
            for t in lane.sent
            if t.number < ticket.number and ticket.sent - (WINDOW + MARGIN) < t.sent
        )
        if lane.probing:
            lane.probing = False
            lane.probe_after = min(lane.probe_after * 2, MAX_PROBE_AFTER)
        if lane.budget is None or max(1, admitted) < lane.budget:
            lane.budget = max(1, admitted)
        lane.changed = now
        lane.step = 1
        lane.next_probe = now + lane.probe_after
        after = retry_after_seconds(retry_after)
        if after is not None:
            lane.closed_until = max(lane.closed_until, now + min(after, MAX_RETRY_AFTER))
        elif admitted == 0:
            # Others fill the window: wait a part of it before trying again, twice as long
            # after each such 429 in a row (at most two windows).
            wait = min(WINDOW / 4 * 2.0**lane.starved, 2 * WINDOW)
            lane.closed_until = max(lane.closed_until, now + wait)
        lane.starved = lane.starved + 1 if admitted == 0 else 0

    def force(self, request: Request, now: float) -> Ticket:
        """A ticket for sending ``request`` now whatever its window holds (its deadline
        comes before the room: the server's answer decides)."""
        kind = request_class(request)
        ticket = Ticket(kind, now, next(self._numbers))
        self._lanes[kind].sent.append(ticket)
        return ticket

    def again(
        self, request: Request, now: float, first_refused: float, remaining: float | None
    ) -> float | None:
        """Seconds before ``request``, answered 429, is sent again; ``None`` when the wait would
        not end before its deadline (``remaining`` seconds from now), or, with no deadline,
        :data:`PATIENCE` seconds after its first 429 (``first_refused``)."""
        wait = self.delay(request, now)
        left = remaining if remaining is not None else first_refused + PATIENCE - now
        return wait if wait < left else None

    def _probe(self, lane: _Lane, now: float) -> None:
        """Grow a full window's budget after ``probe_after`` seconds without a 429."""
        if lane.probing and now - lane.changed >= WINDOW + MARGIN:
            # A window went by at the grown budget without a 429: the next probe may come at
            # once, and grows twice as much.
            lane.probing = False
            lane.probe_after = PROBE_AFTER
            lane.step *= 2
            lane.next_probe = now
        if lane.budget is None or (lane.cap is not None and lane.budget >= lane.cap):
            return
        if lane.probing or now < lane.next_probe:
            return
        lane.budget += lane.step
        if lane.cap is not None:
            lane.budget = min(lane.budget, lane.cap)
        lane.changed = now
        lane.probing = True
