# Generated from tests/_async/test_bent_server.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""Every operation that walks ``_all_docs``, through couchids.aio's handles and, in the
generated twin, the blocking ones, against a server whose answers are bent (reversed, shuffled,
duplicated rows, a key or limit ignored) or dripped: each returns exactly what the seed says,
or raises a ``ServerError`` naming it, and changes nothing outside its range. The seed, the
cases, the proxy and the checks are in tests/test_bent_server.py; the operations are here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

import pytest
from bendproxy import Mode
from ibmcloudant.cloudant_v1 import CloudantV1
from test_bent_server import (
    BEFORE,
    BENDS,
    HISTOGRAM,
    KEY,
    OPERATIONS,
    PAGE,
    PARTITIONED,
    WINDOW,
    Batch,
    Call,
    Case,
    Databases,
    Run,
    bent_batch,
    check,
    check_drip,
    seeded_databases,
)

from couchids import ALL_TYPES

from .helpers import database


def latest(doc_type: Any) -> Run:
    def run(client: CloudantV1, call: Call) -> Any:
        handle = database(client, call.db, timeout=call.timeout)
        return [doc["_id"] for doc in handle.latest(5, type=doc_type)]

    return run


def window(doc_type: Any, parallel: int | None = None, newest_first: bool = True) -> Run:
    """The window's ids as handed out, kept as they come (also when an error ends it)."""

    def run(client: CloudantV1, call: Call) -> Any:
        handle = database(client, call.db, batch_size=PAGE, parallel=parallel, timeout=call.timeout)
        for doc in handle.window(*WINDOW, type=doc_type, newest_first=newest_first):
            call.handed_out.append(doc["_id"])
        return list(call.handed_out)

    return run


def present(client: CloudantV1, call: Call) -> Any:
    return database(client, call.db, timeout=call.timeout).types_present()


def count(index_only: bool = False) -> Run:
    def run(client: CloudantV1, call: Call) -> Any:
        handle = database(client, call.db, timeout=call.timeout)
        return handle.count(*WINDOW, type="a", index_only=index_only)

    return run


def histogram(client: CloudantV1, call: Call) -> Any:
    handle = database(client, call.db, timeout=call.timeout)
    buckets = handle.histogram(*HISTOGRAM, every="1d", type="a")
    return [(b.start, b.end, b.count) for b in buckets]


def expire(doc_type: str | None) -> Run:
    def run(client: CloudantV1, call: Call) -> Any:
        handle = database(client, call.db, batch_size=PAGE, timeout=call.timeout)
        report = handle.expire(BEFORE, type=doc_type, dry_run=False)
        return (report.matched, report.deleted, report.gone, report.conflicts, report.failed)

    return run


def export(client: CloudantV1, call: Call) -> Any:
    handle = database(client, call.db, batch_size=PAGE, parallel=3, timeout=call.timeout)
    try:
        handle.export(*WINDOW, out=call.out, type="a")
    finally:
        call.handed_out += [json.loads(line)["_id"] for line in call.out.getvalue().splitlines()]
    return list(call.handed_out)


def archive(client: CloudantV1, call: Call) -> Any:
    assert call.target is not None
    handle = database(client, call.db, batch_size=PAGE, parallel=3, timeout=call.timeout)
    report = handle.archive(call.target, *WINDOW, type="a", expire=True)
    expired = report.expired
    return (report.copied, report.failed, expired.matched, expired.deleted, expired.conflicts)


def rekey(client: CloudantV1, call: Call) -> Any:
    assert call.target is not None
    handle = database(client, call.db, batch_size=PAGE, timeout=call.timeout)
    report = handle.rekey(call.target, secret=KEY, time_field="t", type="r")
    return (report.copied, report.duplicates, report.skipped, report.failed)


#: How each operation of tests/test_bent_server.py's OPERATIONS is run.
RUNS: Final[dict[str, Run]] = {
    "latest": latest("a"),
    "latest-untyped": latest(None),
    "latest-all-types": latest(ALL_TYPES),
    "window": window("a", parallel=3),
    "window-oldest-first": window("a", parallel=1, newest_first=False),
    "window-untyped": window(None),
    "window-all-types": window(ALL_TYPES),
    "types_present": present,
    "count": count(),
    "count-index-only": count(index_only=True),
    "histogram": histogram,
    "expire": expire("a"),
    "expire-untyped": expire(None),
    "export": export,
    "archive": archive,
    "rekey": rekey,
}


@pytest.fixture(scope="module")
def databases(couch_url: str) -> Iterator[Databases]:
    yield from seeded_databases(couch_url)


@pytest.fixture(scope="module")
def batch(databases: Databases) -> Batch:
    return bent_batch(databases, RUNS)


def test_every_operation_is_run() -> None:
    assert RUNS.keys() == OPERATIONS.keys()


@pytest.mark.parametrize("operation", tuple(OPERATIONS))
@pytest.mark.parametrize("mode", BENDS)
def test_a_bent_answer_is_refused_or_harmless(
    mode: Mode, operation: str, batch: Batch, request: pytest.FixtureRequest
) -> None:
    check(Case(mode, operation), batch.outcome(request.node))


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize("operation", PARTITIONED)
@pytest.mark.parametrize("mode", BENDS)
def test_a_bent_partition_answer_is_refused_or_harmless(
    mode: Mode, operation: str, batch: Batch, request: pytest.FixtureRequest
) -> None:
    check(Case(mode, operation, "partitioned"), batch.outcome(request.node))


@pytest.mark.parametrize("operation", tuple(OPERATIONS))
def test_a_dripping_server_ends_each_operation_by_its_timeout(
    operation: str, batch: Batch, request: pytest.FixtureRequest
) -> None:
    check_drip(operation, batch.outcome(request.node))
