"""expire, archive, export and rekey given a resume point from somewhere else.

A :class:`couchids.Checkpoint` is saved and handed back by callers, so its ``last_id`` may come
from another run: an id of another form (``kuuid`` ids against ``kuuid-ms`` ones, ``v7s``,
``utc_random``), of another type, of a time before or after the range, or any string at all.
The database holds ids of several forms and types (second-precision kuuid ids made in 2026,
millisecond kuuid ids made in 2024, v7s and utc_random ids made in 2025; types ``order``,
``user``, ``audit`` and untyped ids; a design document). Whatever the checkpoint, nothing
outside the range, type and form asked for is deleted, copied or written (read through the
server afterwards); and each call either does what a resume point clamped to the range says
(the range's ids after it, in ``_all_docs`` order: all of them from a point before the range,
none from a point after it), or refuses a checkpoint of another type or form with
:class:`couchids.InvalidArgumentError` before it changes anything. A checkpoint of the range's
own type and form that is a document of the database is always clamped, never refused.

The cases run together as those of tests/test_bent_server.py do, each through a proxy that
forwards every answer as it is but stops a run that reads far more pages than the database
holds. The operations are written once, in tests/_async/test_resume_points.py (and its
generated blocking twin), whose tests run the cases this module sets up and check.
"""

from __future__ import annotations

import functools
import io
import json
import random
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Final

import pytest
from bendproxy import BendProxy
from ibmcloudant.cloudant_v1 import CloudantV1
from test_bent_server import (
    BOUND,
    BUDGET,
    WORKERS,
    Batch,
    Databases,
    Outcome,
    Run,
    client_of,
    drop,
    fresh,
    guarded,
    ids_in,
    performed,
    run_all,
)

import couchids
from couchids import KUUID, KUUID_MS, UTC_RANDOM, V7S, Checkpoint, IdForm
from couchids.core.keys import window_keys
from couchids.core.rekeying import derived_id
from couchids.idforms.times import to_ms

DAY: Final = 86_400_000
DESIGN: Final = "_design/noise"
KEY: Final = b"resume"
#: Rows per page, documents per batch: several of each for the ranges here.
PAGE: Final = 3


@dataclass(frozen=True)
class Seeded:
    """A document of the seed: its id, type and form, the time the id holds and the time in
    its ``t`` field (for rekey)."""

    id: str
    type: str | None
    form: IdForm
    ms: int
    t: int


def seed() -> tuple[Seeded, ...]:
    rng = random.Random(2026)
    made: list[Seeded] = []

    def add(form: IdForm, doc_type: str | None, start: str, days: int, n: int) -> None:
        for k in range(n):
            # Spread evenly, each somewhere in its own share of the days.
            t = to_ms(start) + int((k + rng.random()) * days * DAY / n)
            held = t - t % form.unit_ms
            made.append(Seeded(form.new(t, type=doc_type), doc_type, form, held, t))

    add(KUUID, "order", "2026-01-01", 10, 20)
    add(KUUID, "user", "2026-01-01", 10, 5)
    add(KUUID, "audit", "2026-01-01", 10, 5)
    add(KUUID, None, "2026-01-01", 10, 4)
    add(KUUID_MS, "order", "2024-03-01", 30, 14)
    add(KUUID_MS, "user", "2024-03-01", 30, 4)
    add(V7S, "order", "2025-05-01", 30, 3)
    add(UTC_RANDOM, "order", "2025-05-01", 30, 3)
    add(UTC_RANDOM, None, "2025-05-01", 30, 3)
    return tuple(sorted(made, key=lambda s: s.id))


SEED: Final = seed()


def present(layout: str) -> tuple[Seeded, ...]:
    """The documents of the seed a database of ``layout`` (``plain`` or ``partitioned``)
    holds: a partitioned one holds no untyped ids, as every id there names its partition."""
    return SEED if layout == "plain" else tuple(s for s in SEED if s.type is not None)


def documents(layout: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {"_id": s.id, "t": s.t, "n": n} for n, s in enumerate(present(layout))
    ]
    return [*docs, {"_id": DESIGN, "language": "javascript"}]


def first(form: IdForm, doc_type: str | None) -> str:
    return next(s.id for s in SEED if s.form == form and s.type == doc_type)


# --- the operations and their ranges ------------------------------------------------------------


@dataclass
class Call:
    #: A client of the case's proxy.
    client: CloudantV1
    db: str
    target: str | None
    out: io.StringIO


@dataclass(frozen=True)
class Operation:
    """An operation over the ids of ``form`` and ``type`` holding a time in ``[start, end)``
    (``form=None``: every document, as rekey reads); ``deletes``/``copies``: what it does to
    them (export only writes them out). How it is run is the test module's, by the key of
    :data:`OPERATIONS`."""

    form: IdForm | None
    type: str | None
    start: str | None
    end: str | None
    deletes: bool = False
    copies: bool = False

    def range(self, layout: str = "plain") -> list[str]:
        """The ids of the range in a database of ``layout``, in ``_all_docs`` order."""
        if self.form is None:
            return [s.id for s in present(layout)]
        low = to_ms(self.start) if self.start is not None else 0
        high = to_ms(self.end) if self.end is not None else 2**62
        return [
            s.id
            for s in present(layout)
            if s.form == self.form and s.type == self.type and low <= s.ms < high
        ]

    def resumed(self, last_id: str, layout: str) -> list[str]:
        """What a run resumed after ``last_id`` handles: the ids of the range after it."""
        return [i for i in self.range(layout) if i > last_id]

    def written(self, handled: list[str]) -> set[str]:
        """The ids a run that handled ``handled`` writes to the target."""
        if self.form is None:
            by_id = {s.id: s for s in SEED}
            return {derived_id(KUUID, by_id[i].t, i, KEY, type="r") for i in handled}
        return set(handled) if self.copies else set()


def exported(out: io.StringIO) -> list[str]:
    return [json.loads(line)["_id"] for line in out.getvalue().splitlines()]


EXPIRE_BEFORE: Final = "2026-01-06T00:00:00Z"
WINDOW_2026: Final = ("2026-01-03T00:00:00Z", "2026-01-08T00:00:00Z")
WINDOW_2024: Final = ("2024-03-05T00:00:00Z", "2024-03-25T00:00:00Z")
OPERATIONS: Final = {
    "expire": Operation(KUUID, "order", None, EXPIRE_BEFORE, deletes=True),
    "archive": Operation(KUUID, "order", *WINDOW_2026, deletes=True, copies=True),
    "export": Operation(KUUID, "order", *WINDOW_2026),
    "export-ms": Operation(KUUID_MS, "order", *WINDOW_2024),
    "rekey": Operation(None, None, None, None, copies=True),
}


@functools.cache
def checkpoints(name: str, layout: str = "plain") -> dict[str, tuple[str, bool]]:
    """The resume points given to an operation: ``{label: (last_id, must_clamp)}``; a point
    of the range's own type and form must be clamped, any other may be refused. (The
    untyped one is from another database, in a partitioned one.) Made once: the run and
    its check see the same."""
    operation = OPERATIONS[name]
    ids = operation.range(layout)
    inside = ids[len(ids) // 2]
    form = operation.form
    points: dict[str, tuple[str, bool]] = {"inside": (inside, True)}
    if form is not None:
        # Before the first id and after the last of the range, of its type and form: from
        # another run over other times, of this database (clamped) or of another (refused
        # or clamped, as the database holds no such document).
        start = to_ms(operation.start) if operation.start else to_ms("2026-01-01") - 200 * DAY
        end = to_ms(operation.end) if operation.end else to_ms("2026-01-01")
        points["earlier-elsewhere"] = (form.new(start - 30 * DAY, type="order"), False)
        points["later-elsewhere"] = (form.new(end + 30 * DAY, type="order"), False)
        held = [s.id for s in present(layout) if s.form == form and s.type == "order"]
        before, after = [i for i in held if i < ids[0]], [i for i in held if i > ids[-1]]
        if before:
            points["earlier"] = (before[-1], True)
        if after:
            points["later"] = (after[0], True)
    other = KUUID_MS if form == KUUID else KUUID
    points |= {
        f"form-{other}": (first(other, "order"), False),
        "form-v7s": (first(V7S, "order"), False),
        "form-utc_random": (first(UTC_RANDOM, "order"), False),
        "type-audit": (first(KUUID, "audit"), False),
        "type-user": (first(KUUID, "user"), False),
        "untyped": (first(KUUID, None), False),
        "order:": ("order:", False),
        "empty": ("", False),
        "zzz": ("zzz", False),
        "uffff": ("\uffff", False),
    }
    return points


CASES: Final = [(name, label) for name in OPERATIONS for label in checkpoints(name)]
#: In a partitioned database expire, export and archive read the partition of ``order``.
PARTITION_CASES: Final = [case for case in CASES if case[0] in ("expire", "archive", "export")]


# --- running them ------------------------------------------------------------------------------


def run_case(databases: Databases, run: Run, layout: str, name: str, label: str) -> Outcome:
    """Runs the case (the operation ``run``) through a proxy; reads what it changed."""
    operation = OPERATIONS[name]
    last_id, _ = checkpoints(name, layout)[label]
    changes = operation.deletes or operation.copies
    url = databases.url
    db = databases.seeded(layout) if changes else databases.shared_db(layout)
    target = fresh(client_of(url)) if operation.copies else None
    outcome = Outcome()
    try:
        with BendProxy(url, "honest", budget=BUDGET) as proxy:
            call = Call(client_of(proxy.url), db, target, io.StringIO())

            def resume() -> Any:
                # A checkpoint refused as it is made is refused by the call.
                return performed(run, call, Checkpoint(last_id=last_id))

            guarded(proxy, resume, BOUND, outcome)
            outcome.handed_out = exported(call.out)
        admin = client_of(url)
        outcome.deleted = ({s.id for s in present(layout)} | {DESIGN}) - ids_in(admin, db)
        if target is not None:
            outcome.target = ids_in(admin, target)
    finally:
        admin = client_of(url)
        if changes:
            drop(admin, db)
        if target is not None:
            drop(admin, target)
    return outcome


#: The test functions whose cases are batched, and the layout of their databases.
TESTS: Final = {
    "test_a_resume_point_from_elsewhere": "plain",
    "test_a_resume_point_from_elsewhere_in_a_partition": "partitioned",
}


def case_of(item: pytest.Item) -> tuple[str, str, str] | None:
    spec = getattr(item, "callspec", None)
    layout = TESTS.get(getattr(item, "originalname", ""))
    if spec is None or layout is None:
        return None
    return (layout, spec.params["operation"], spec.params["checkpoint"])


def resume_batch(couch_url: str, runs: dict[str, Run]) -> Iterator[Batch]:
    """The batch of a module's cases on the server at ``couch_url``, each operation run by
    ``runs[name]`` (a fixture's body)."""
    databases = Databases(couch_url, documents)

    def run(cases: list[tuple[str, str, str]]) -> dict[Any, Future[Outcome]]:
        def one(case: tuple[str, str, str]) -> Outcome:
            layout, name, label = case
            return run_case(databases, runs[name], layout, name, label)

        return run_all(cases, one, WORKERS)

    yield Batch(case_of, run)
    databases.close()


# --- the tests -------------------------------------------------------------------------------


def test_the_seed_keeps_other_forms_and_types_outside_each_range() -> None:
    """The ground truth holds: each range's key range holds its own ids and no other."""
    for name, operation in OPERATIONS.items():
        if operation.form is None:
            continue
        start = to_ms(operation.start) if operation.start else 0
        keys = window_keys(operation.form, operation.type, start, to_ms(operation.end))
        assert keys is not None
        inside = [s.id for s in SEED if keys.low <= s.id < keys.high]
        assert inside == operation.range(), name
        assert len(inside) >= 2 * PAGE, name


def check(operation: str, checkpoint: str, layout: str, outcome: Outcome) -> None:
    spec = OPERATIONS[operation]
    last_id, must_clamp = checkpoints(operation, layout)[checkpoint]
    assert not outcome.runaway, f"looped: more than {BUDGET} pages (then {outcome.error!r})"
    assert not outcome.hung, f"ran past {BOUND} s"
    clamped = spec.resumed(last_id, layout)
    allowed = set(spec.range(layout))
    assert outcome.deleted is not None
    # Nothing outside the range, whatever happened.
    outside = sorted(outcome.deleted - (allowed if spec.deletes else set()))
    assert not outside, f"deleted {len(outside)} documents it may not: {outside[:3]}"
    if outcome.target is not None:
        outside = sorted(outcome.target - spec.written(spec.range(layout)))
        assert not outside, f"wrote {len(outside)} documents it may not: {outside[:3]}"
    assert len(set(outcome.handed_out)) == len(outcome.handed_out), "exported an id twice"
    stray = [i for i in outcome.handed_out if i not in allowed]
    assert not stray, f"exported {len(stray)} ids outside the range: {stray[:3]}"
    if outcome.error is not None:
        assert isinstance(outcome.error, couchids.InvalidArgumentError), repr(outcome.error)
        assert not must_clamp, f"refused a resume point of its own type and form: {last_id!r}"
        assert not outcome.deleted and not outcome.target and not outcome.handed_out, (
            "refused after it had begun"
        )
        return
    # Clamped: the range's ids after the resume point, and nothing else.
    assert outcome.deleted == (set(clamped) if spec.deletes else set()), (
        f"from {last_id!r} deleted {len(outcome.deleted)}, not the {len(clamped)} after it"
    )
    if outcome.target is not None:
        expected = spec.written(clamped)
        assert outcome.target == expected, (
            f"from {last_id!r} wrote {len(outcome.target)}, not the {len(expected)} after it"
        )
    if spec.form is not None and not spec.copies and not spec.deletes:
        assert outcome.handed_out == clamped, (
            f"from {last_id!r} exported {len(outcome.handed_out)}, not the {len(clamped)} after it"
        )
    assert outcome.value == (len(clamped) if spec.copies or spec.deletes else clamped)
