"""Every operation that walks ``_all_docs``, in both APIs, against a server whose answers are
bent (tests/bendproxy.py): rows reversed, shuffled or duplicated, a start key, end key or limit
ignored, an answer dripped a byte at a time. The operations are written once, in
tests/_async/test_bent_server.py (and its generated blocking twin), whose tests run the cases
this module sets up and check; the tests of the proxy itself are here.

The database holds ids of two types and untyped ids, made across four days, plus a design
document; every page is small (7 rows), so each operation reads several. Whatever the server
answers, an operation either returns exactly what the ids seeded say it should, or raises a
:class:`couchids.ServerError` whose message names it, before a test-side bound (a loop fails
the test rather than hanging it: the proxy refuses to bend more reads than any operation
needs here, and cuts the line). What it handed out (a window's documents, an export's lines)
never holds an id twice nor one outside the answer; and expire, archive and rekey delete,
copy or write nothing outside the range and type asked for, whatever the outcome (read
through the server itself afterwards). Dripped answers end each operation with
:class:`couchids.ServerTimeoutError` soon after its ``timeout``.

The cases of a module on a server run together, several at a time (:class:`Batch`), each
through its own proxy; an operation that writes gets its own databases, seeded alike.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import inspect
import io
import itertools
import json
import random
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, urlsplit

import pytest
from bendproxy import BendProxy, Mode
from faultproxy import client_for
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import ALL_TYPES, KUUID
from couchids.aio import AsyncClient
from couchids.core.counting import bucket_edges
from couchids.core.rekeying import derived_id
from couchids.idforms.times import to_datetime, to_ms

#: The ``timeout`` each operation is given.
TIMEOUT: Final = 10.0
#: The test-side bound of one operation: past it the proxy is cut and the case fails.
BOUND: Final = 60.0
#: How long an operation may take to end after its proxy is cut.
CUT_GRACE: Final = 30.0
#: The most range reads a proxy bends for one operation: a few dozen cover any operation
#: here, so more is a loop (the proxy is cut then, and the case fails).
BUDGET: Final = 100
#: Rows per page, documents per batch.
PAGE: Final = 7
#: Cases of a server run at a time (each its own proxy and client).
WORKERS: Final = 6
#: The modes that bend rows or requests; each also runs unbent, as a control of the test.
BENDS: Final[tuple[Mode, ...]] = (
    "honest",
    "reverse",
    "shuffle",
    "duplicate",
    "ignore-start",
    "ignore-end",
    "ignore-limit",
)
#: The timeout of every operation against a dripping server, and the most it may take.
DRIP_TIMEOUT: Final = 1.0
DRIP_LIMIT: Final = 6.0
DRIP_BOUND: Final = 20.0

BASE: Final = to_ms("2024-03-01T00:00:00Z")
DAY: Final = 86_400_000
WINDOW: Final = ("2024-03-02T00:00:00Z", "2024-03-04T00:00:00Z")
BEFORE: Final = "2024-03-03T06:00:00Z"
HISTOGRAM: Final = ("2024-03-01T00:00:00Z", "2024-03-05T00:00:00Z")
#: The secret of rekey's new ids.
KEY: Final = b"bent"
DESIGN: Final = "_design/noise"


# --- the seed and what each operation must answer for it ---------------------------------------


@dataclass(frozen=True)
class Seeded:
    """One document of the seed: its id, type, the time the id holds (whole seconds) and the
    time in its ``t`` field (to the millisecond, for rekey)."""

    id: str
    type: str | None
    ms: int
    t: int


def seed(types: tuple[str | None, ...], each: int = 20) -> tuple[Seeded, ...]:
    """``each`` ids of each type, at distinct seconds across four days from ``BASE``."""
    rng = random.Random(60)
    seconds = rng.sample(range(4 * 86_400), each * len(types))
    made = []
    for n, second in enumerate(seconds):
        doc_type = types[n % len(types)]
        t = BASE + second * 1000 + rng.randrange(1000)
        made.append(Seeded(KUUID.new(t, type=doc_type), doc_type, t - t % 1000, t))
    return tuple(sorted(made, key=lambda s: s.ms))


#: The seeds of a plain database and of a partitioned one (whose ids all name a partition).
SEEDS: Final = {"plain": seed(("a", "b", None)), "partitioned": seed(("a", "b"))}


def documents(seeded: tuple[Seeded, ...]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [{"_id": s.id, "t": s.t, "n": n} for n, s in enumerate(seeded)]
    return [*docs, {"_id": DESIGN, "language": "javascript"}]


def of(
    seeded: tuple[Seeded, ...], doc_type: str | None, start: str | None, end: str | None
) -> list[str]:
    """The ids of ``doc_type`` (``ALL_TYPES``: every typed id) holding a time in
    ``[start, end)``, oldest first."""
    low = to_ms(start) if start is not None else 0
    high = to_ms(end) if end is not None else 2**62
    return [
        s.id
        for s in seeded
        if (s.type is not None if doc_type is ALL_TYPES else s.type == doc_type)
        and low <= s.ms < high
    ]


def histogram_truth(seeded: tuple[Seeded, ...]) -> list[tuple[Any, Any, int]]:
    edges = bucket_edges(to_ms(HISTOGRAM[0]), to_ms(HISTOGRAM[1]), DAY)
    return [
        (to_datetime(a), to_datetime(b), len(of(seeded, "a", to_iso(a), to_iso(b))))
        for a, b in itertools.pairwise(edges)
    ]


def to_iso(ms: int) -> str:
    return to_datetime(ms).isoformat()


def rekeyed(seeded: tuple[Seeded, ...]) -> set[str]:
    return {derived_id(KUUID, s.t, s.id, KEY, type="r") for s in seeded}


# --- the operations --------------------------------------------------------------------------


@dataclass
class Call:
    """What one run of an operation works on, and what it handed out on the way."""

    #: A client of the case's proxy.
    client: CloudantV1
    db: str
    target: str | None
    timeout: float
    #: The ids handed out so far (a window's documents, an export's lines).
    handed_out: list[str] = field(default_factory=list)
    out: io.StringIO = field(default_factory=io.StringIO)


#: How an operation is run: ``run(client, call, *arguments)``, ``client`` a client of the
#: case's proxy of either API (tests/_async/test_bent_server.py and its twin write them).
Run = Callable[..., Any]


def performed(run: Run, call: Any, *arguments: Any) -> Any:
    """What ``run(client, call, *arguments)`` returns, ``client`` over ``call.client``: an
    operation of the asyncio sources (a coroutine function) runs on an event loop of its own,
    over an ``AsyncClient`` made and closed there; its blocking twin is given ``call.client``."""
    if not inspect.iscoroutinefunction(run):
        return run(call.client, call, *arguments)

    async def main() -> Any:
        async with AsyncClient(call.client) as client:
            return await run(client, call, *arguments)

    return asyncio.run(main())


@dataclass(frozen=True)
class Operation:
    """An operation: the name its errors carry, what it must answer for a seed, and for one
    that writes, what it may delete from the database and write to the target (how it is
    run is the test module's, by the key of :data:`OPERATIONS`)."""

    name: str
    truth: Callable[[tuple[Seeded, ...]], Any]
    #: The ids it may delete from the database (``None``: it only reads).
    deletes: Callable[[tuple[Seeded, ...]], set[str]] | None = None
    #: The ids it may write to a target (``None``: it has none).
    writes: Callable[[tuple[Seeded, ...]], set[str]] | None = None
    #: It hands out ids (checked for repeats).
    hands_out: bool = False

    @property
    def changes(self) -> bool:
        return self.deletes is not None or self.writes is not None


def newest(ids: list[str], n: int = 5) -> list[str]:
    return ids[::-1][:n]


OPERATIONS: Final[dict[str, Operation]] = {
    "latest": Operation("latest", lambda s: newest(of(s, "a", None, None))),
    "latest-untyped": Operation("latest", lambda s: newest(of(s, None, None, None))),
    "latest-all-types": Operation("latest", lambda s: newest(of(s, ALL_TYPES, None, None))),
    "window": Operation("window", lambda s: of(s, "a", *WINDOW)[::-1], hands_out=True),
    "window-oldest-first": Operation("window", lambda s: of(s, "a", *WINDOW), hands_out=True),
    "window-untyped": Operation("window", lambda s: of(s, None, *WINDOW)[::-1], hands_out=True),
    "window-all-types": Operation(
        "window", lambda s: of(s, ALL_TYPES, *WINDOW)[::-1], hands_out=True
    ),
    "types_present": Operation(
        "types_present", lambda s: sorted({x.type for x in s if x.type is not None})
    ),
    "count": Operation("count", lambda s: len(of(s, "a", *WINDOW))),
    "count-index-only": Operation("count", lambda s: len(of(s, "a", *WINDOW))),
    "histogram": Operation("histogram", histogram_truth),
    "expire": Operation(
        "expire",
        lambda s: (n := len(of(s, "a", None, BEFORE)), n, 0, [], []),
        deletes=lambda s: set(of(s, "a", None, BEFORE)),
    ),
    "expire-untyped": Operation(
        "expire",
        lambda s: (n := len(of(s, None, None, BEFORE)), n, 0, [], []),
        deletes=lambda s: set(of(s, None, None, BEFORE)),
    ),
    "export": Operation("export", lambda s: of(s, "a", *WINDOW), hands_out=True),
    "archive": Operation(
        "archive",
        lambda s: (n := len(of(s, "a", *WINDOW)), [], n, n, []),
        deletes=lambda s: set(of(s, "a", *WINDOW)),
        writes=lambda s: set(of(s, "a", *WINDOW)),
    ),
    "rekey": Operation(
        "rekey",
        lambda s: (len(s), 0, [], []),
        deletes=lambda s: set(),
        writes=rekeyed,
    ),
}
#: The operations whose reads differ in a partitioned database, where they read the
#: partition of type ``a``: a window's scan (export's and count's too), expire's walk, and
#: archive's copy and delete.
PARTITIONED: Final = ("window", "count", "expire", "archive")


# --- running cases together --------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    mode: Mode
    operation: str
    layout: str = "plain"


@dataclass
class Outcome:
    """How one run of an operation ended."""

    value: Any = None
    error: BaseException | None = None
    #: Seconds from the call to its end (or to the bound).
    took: float = 0.0
    #: Still running at the bound (the proxy was cut then).
    hung: bool = False
    #: Still running after the cut, too.
    stuck: bool = False
    #: It asked for more range reads than :data:`BUDGET`.
    runaway: bool = False
    reads: int = 0
    handed_out: list[str] = field(default_factory=list)
    #: Ids gone from the database, and ids in the target, read from the server afterwards.
    deleted: set[str] | None = None
    target: set[str] | None = None


def guarded(proxy: BendProxy, run: Callable[[], Any], bound: float, outcome: Outcome) -> Outcome:
    """Runs ``run()`` in a thread of its own; past ``bound`` seconds the proxy is cut, so that
    a loop ends with errors instead of running on."""
    ended = threading.Event()

    def work() -> None:
        started = time.monotonic()
        try:
            outcome.value = run()
        except BaseException as exc:
            outcome.error = exc
        finally:
            outcome.took = time.monotonic() - started
            ended.set()

    threading.Thread(target=work, daemon=True, name="bent-case").start()
    if not ended.wait(bound):
        outcome.hung = True
        proxy.cut()
        outcome.stuck = not ended.wait(CUT_GRACE)
        outcome.took = max(outcome.took, bound)
    outcome.runaway, outcome.reads = proxy.runaway, proxy.bent
    return outcome


class Batch:
    """The cases of the selected tests of one module on one server, all run on the first
    demand for one of them (several at a time), each test then checking its own outcome.

    ``case_of(item)`` is the case of a test item (``None`` for tests of the module that are
    not batched); ``run(cases)`` runs cases and returns a future outcome for each.
    """

    def __init__(
        self,
        case_of: Callable[[pytest.Item], Hashable | None],
        run: Callable[[list[Any]], dict[Any, Future[Outcome]]],
    ) -> None:
        self.case_of, self.run = case_of, run
        self.outcomes: dict[Any, Future[Outcome]] | None = None

    def outcome(self, item: pytest.Item) -> Outcome:
        if self.outcomes is None:
            server = item.callspec.params["couch_server"]  # type: ignore[attr-defined]
            cases = []
            for other in item.session.items:
                spec = getattr(other, "callspec", None)
                if getattr(other, "module", None) is not getattr(item, "module", None):
                    continue
                if spec is None or spec.params.get("couch_server") != server:
                    continue
                case = self.case_of(other)
                if case is not None:
                    cases.append(case)
            self.outcomes = self.run(list(dict.fromkeys(cases)))
        return self.outcomes[self.case_of(item)].result()


def run_all(
    cases: list[Any], run_one: Callable[[Any], Outcome], workers: int
) -> dict[Any, Future[Outcome]]:
    """Runs ``cases``, ``workers`` at a time (``0``: all at once); waits for them all."""
    with ThreadPoolExecutor(max(1, workers or len(cases))) as pool:
        return {case: pool.submit(run_one, case) for case in cases}


def fresh(client: CloudantV1, **options: Any) -> str:
    """A new database (one shard: a few dozen documents need no more, and CouchDB makes it
    faster)."""
    name = f"test_{uuid.uuid4().hex}"
    client.put_database(db=name, q=1, **options)
    return name


def drop(client: CloudantV1, name: str) -> None:
    try:
        client.delete_database(db=name)
    except ApiException as error:
        if error.status_code != 404:
            raise


def fill(client: CloudantV1, db: str, docs: list[dict[str, Any]]) -> None:
    result = client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
    failed = [row for row in result if "error" in row]
    assert not failed, failed[:3]


def ids_in(client: CloudantV1, db: str) -> set[str]:
    rows = client.post_all_docs(db=db).get_result()["rows"]
    return {row["id"] for row in rows}


_THREAD = threading.local()


def client_of(url: str) -> CloudantV1:
    """A client for ``url`` holding no connection from before (one the server or a proxy
    since closed, or a proxy on a port used again), a copy of this thread's first: making a
    ``CloudantV1`` costs about 65 ms of CPU (it loads the system's CA certificates), and each
    case needs several. Copies share their session, so a thread uses one at a time; each is a
    client of its own to couchids, which keeps what it learns per client."""
    template = getattr(_THREAD, "client", None)
    if template is None:
        template = _THREAD.client = client_for(url)
    client = copy.copy(template)
    client.set_service_url(url)
    client.get_http_client().close()  # drops the kept connections; the session stays usable
    return client


class Databases:
    """The databases of one server's cases: one read-only database per layout (``plain`` or
    ``partitioned``), seeded once, and fresh ones for each case that writes; ``documents``
    gives the documents of a layout."""

    def __init__(self, url: str, documents: Callable[[str], list[dict[str, Any]]]) -> None:
        self.url, self.documents = url, documents
        self.shared: dict[str, str] = {}
        self.lock = threading.Lock()

    def seeded(self, layout: str) -> str:
        """A new database of ``layout`` holding the seed."""
        client = client_of(self.url)
        name = fresh(client, partitioned=layout == "partitioned")
        fill(client, name, self.documents(layout))
        return name

    def shared_db(self, layout: str) -> str:
        """The database of ``layout`` for the cases that only read."""
        with self.lock:
            if layout not in self.shared:
                self.shared[layout] = self.seeded(layout)
            return self.shared[layout]

    def close(self) -> None:
        client = client_of(self.url)
        for name in self.shared.values():
            drop(client, name)


def run_case(databases: Databases, case: Case, run: Run, timeout: float, bound: float) -> Outcome:
    """Runs ``case`` (the operation ``run``) through a proxy bending in its mode; reads what
    it changed."""
    operation = OPERATIONS[case.operation]
    seeded = SEEDS[case.layout]
    own = operation.changes
    url = databases.url
    db = databases.seeded(case.layout) if own else databases.shared_db(case.layout)
    target = fresh(client_of(url)) if operation.writes is not None else None
    outcome = Outcome()
    try:
        with BendProxy(url, case.mode, budget=BUDGET) as proxy:
            call = Call(client_of(proxy.url), db, target, timeout)
            guarded(proxy, lambda: performed(run, call), bound, outcome)
            outcome.handed_out = call.handed_out
        client = client_of(url)
        if own:
            everything = {s.id for s in seeded} | {DESIGN}
            outcome.deleted = everything - ids_in(client, db)
        if target is not None:
            outcome.target = ids_in(client, target)
    finally:
        client = client_of(url)
        if own:
            drop(client, db)
        if target is not None:
            drop(client, target)
    return outcome


def seeded_databases(couch_url: str) -> Iterator[Databases]:
    """The databases of a module's cases on the server at ``couch_url`` (a fixture's body)."""
    made = Databases(couch_url, lambda layout: documents(SEEDS[layout]))
    yield made
    made.close()


@pytest.fixture(scope="module")
def databases(couch_url: str) -> Iterator[Databases]:
    yield from seeded_databases(couch_url)


def case_of(item: pytest.Item) -> Case | None:
    spec = getattr(item, "callspec", None)
    name = getattr(item, "originalname", "")
    if spec is None or name not in LAYOUTS:
        return None
    mode = spec.params.get("mode", "drip")
    return Case(mode, spec.params["operation"], LAYOUTS[name])


def bent_batch(databases: Databases, runs: dict[str, Run]) -> Batch:
    """The batch of a module's cases, each operation run by ``runs[name]``."""

    def run(cases: list[Case]) -> dict[Case, Future[Outcome]]:
        dripped = [case for case in cases if case.mode == "drip"]
        bent = [case for case in cases if case.mode != "drip"]

        def bent_case(case: Case) -> Outcome:
            return run_case(databases, case, runs[case.operation], TIMEOUT, BOUND)

        def dripped_case(case: Case) -> Outcome:
            return run_case(databases, case, runs[case.operation], DRIP_TIMEOUT, DRIP_BOUND)

        outcomes = run_all(bent, bent_case, WORKERS)
        # Every dripped answer at once: each only waits.
        return {**outcomes, **run_all(dripped, dripped_case, 0)}

    return Batch(case_of, run)


# --- the checks ----------------------------------------------------------------------------------


def check(case: Case, outcome: Outcome) -> None:
    operation = OPERATIONS[case.operation]
    seeded = SEEDS[case.layout]
    truth = operation.truth(seeded)
    assert not outcome.runaway, (
        f"looped: asked for more than {BUDGET} pages of a {len(seeded)}-document database "
        f"(the proxy cut it off; then: {outcome.error!r:.300})"
    )
    assert not outcome.hung, f"ran past {BOUND} s (stuck after the cut too: {outcome.stuck})"
    if operation.hands_out:
        repeated = sorted({i for i in outcome.handed_out if outcome.handed_out.count(i) > 1})
        assert not repeated, f"handed out {len(repeated)} ids more than once: {repeated[:3]}"
        wanted = set(truth)
        foreign = [i for i in outcome.handed_out if i not in wanted]
        assert not foreign, f"handed out {len(foreign)} ids outside the answer: {foreign[:3]}"
    check_changes(operation, seeded, outcome)
    if outcome.error is not None:
        check_failure(outcome.error, operation.name, couchids.ServerError)
        return
    assert outcome.value == truth, f"a wrong answer, silently: {outcome.value!r:.600}"


def check_changes(operation: Operation, seeded: tuple[Seeded, ...], outcome: Outcome) -> None:
    """What a writing operation deleted and wrote is what it may; all of it when it ended
    well (and what archive deleted it had copied)."""
    if operation.deletes is not None:
        assert outcome.deleted is not None
        allowed = operation.deletes(seeded)
        outside = sorted(outcome.deleted - allowed)
        assert not outside, f"deleted {len(outside)} documents outside the range: {outside[:3]}"
        if outcome.error is None:
            missed = sorted(allowed - outcome.deleted)
            assert not missed, f"returned, but left {len(missed)} documents: {missed[:3]}"
    if operation.writes is not None:
        assert outcome.target is not None
        allowed = operation.writes(seeded)
        outside = sorted(outcome.target - allowed)
        assert not outside, f"wrote {len(outside)} documents outside the range: {outside[:3]}"
        if outcome.error is None:
            missed = sorted(allowed - outcome.target)
            assert not missed, f"returned, but did not write {len(missed)}: {missed[:3]}"
        if operation.deletes is not None and outcome.deleted is not None:
            lost = sorted(outcome.deleted - outcome.target)
            assert not lost, f"deleted {len(lost)} documents it had not copied: {lost[:3]}"


def check_failure(exc: BaseException, name: str, kind: type[BaseException]) -> None:
    assert isinstance(exc, kind), f"{exc!r:.600}"
    message = str(exc)
    assert message.startswith((f"{name} on ", f"{name}: ")), message[:600]


# --- the tests -------------------------------------------------------------------------------

#: The test functions whose cases are batched, and the database layout they use.
LAYOUTS: Final = {
    "test_a_bent_answer_is_refused_or_harmless": "plain",
    "test_a_bent_partition_answer_is_refused_or_harmless": "partitioned",
    "test_a_dripping_server_ends_each_operation_by_its_timeout": "plain",
}


def check_drip(operation: str, outcome: Outcome) -> None:
    """A dripped answer ended ``operation`` with ``ServerTimeoutError`` soon after its
    timeout, having changed nothing it may not."""
    assert not outcome.hung, f"still running after {DRIP_BOUND} s"
    assert outcome.error is not None, f"returned {outcome.value!r:.300}"
    check_failure(outcome.error, OPERATIONS[operation].name, couchids.ServerTimeoutError)
    assert outcome.took < DRIP_LIMIT, f"took {outcome.took:.1f} s with timeout={DRIP_TIMEOUT}"
    check_changes(OPERATIONS[operation], SEEDS["plain"], outcome)


# --- the proxy itself ------------------------------------------------------------------------


def answer(url: str, method: str, path: str, options: dict[str, Any]) -> list[str]:
    """The ids of an ``_all_docs`` answer to ``options`` sent as a query or a JSON body (with
    the credentials ``url`` holds, if any)."""
    parts = urlsplit(url)
    headers = {"Content-Type": "application/json"}
    if parts.username is not None:
        secret = f"{parts.username}:{parts.password}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(secret).decode()
    base = f"http://{parts.hostname}:{parts.port}{path}"
    if method == "GET":
        query = "&".join(f"{k}={quote(json.dumps(v))}" for k, v in options.items())
        request = urllib.request.Request(f"{base}?{query}", headers=headers)
    else:
        body = json.dumps(options).encode()
        request = urllib.request.Request(base, body, headers, method="POST")
    with LOOPBACK.open(request, timeout=TIMEOUT) as reply:
        return [row["id"] for row in json.loads(reply.read())["rows"]]


#: Opens loopback URLs only, whatever proxy the environment names.
LOOPBACK: Final = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_the_proxy_bends_range_reads_and_nothing_else(
    method: str, databases: Databases, couch_url: str
) -> None:
    db = databases.shared_db("plain")
    path = f"/{db}/_all_docs"
    asked = {"start_key": "a:", "end_key": "b:", "limit": 5}
    ids = answer(couch_url, method, path, asked)
    assert len(ids) == 5 and ids == sorted(ids)
    expected: dict[Mode, list[str]] = {
        "honest": ids,
        "reverse": ids[::-1],
        "duplicate": [i for i in ids for _ in range(2)],
        "ignore-start": answer(couch_url, method, path, {"end_key": "b:", "limit": 5}),
        "ignore-end": answer(couch_url, method, path, {"start_key": "a:", "limit": 5}),
        "ignore-limit": answer(couch_url, method, path, {"start_key": "a:", "end_key": "b:"}),
        "drip": ids,
    }
    keys = {"keys": ids[:2]}
    for mode, bent in expected.items():
        with BendProxy(couch_url, mode, drip_delay=(0.0005, 0.001)) as proxy:
            assert answer(proxy.url, method, path, asked) == bent, mode
            assert answer(proxy.url, "POST", path, keys) == ids[:2], mode  # no range
            assert proxy.bent == 1, mode
    with BendProxy(couch_url, "shuffle") as proxy:
        shuffled = answer(proxy.url, method, path, {"start_key": "a:", "end_key": "b:"})
    assert sorted(shuffled) == of(SEEDS["plain"], "a", None, None)  # the same rows
    assert shuffled != sorted(shuffled)  # in another order (of 20 rows, with a fixed seed)


@pytest.mark.needs("couchdb")
def test_the_proxy_bends_partition_reads(databases: Databases, couch_url: str) -> None:
    db = databases.shared_db("partitioned")
    path = f"/{db}/_partition/a/_all_docs"
    ids = answer(couch_url, "POST", path, {"limit": 4})
    with BendProxy(couch_url, "reverse") as proxy:
        assert answer(proxy.url, "POST", path, {"limit": 4}) == ids[::-1]
        assert proxy.bent == 1
