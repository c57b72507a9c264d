# Generated from tests/_async/test_resume_points.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""expire, archive, export and rekey given a resume point from somewhere else (another form,
type or time, or any string), through couchids.aio's handles and, in the generated twin, the
blocking ones: each is clamped to the range or refused before anything changes, and nothing
outside the range is deleted, copied or written. The seed, the resume points, the cases and
the checks are in tests/test_resume_points.py; the operations are here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1
from test_bent_server import TIMEOUT, Batch, Run
from test_resume_points import (
    CASES,
    EXPIRE_BEFORE,
    KEY,
    OPERATIONS,
    PAGE,
    PARTITION_CASES,
    WINDOW_2024,
    WINDOW_2026,
    Call,
    check,
    exported,
    resume_batch,
)

from couchids import KUUID, KUUID_MS, Checkpoint, IdForm

from .helpers import database


def expire(client: CloudantV1, call: Call, checkpoint: Checkpoint) -> Any:
    handle = database(client, call.db, form=KUUID, batch_size=PAGE, timeout=TIMEOUT)
    report = handle.expire(EXPIRE_BEFORE, type="order", dry_run=False, checkpoint=checkpoint)
    return report.deleted


def archive(form: IdForm, window: tuple[str, str]) -> Run:
    def run(client: CloudantV1, call: Call, checkpoint: Checkpoint) -> Any:
        assert call.target is not None
        handle = database(client, call.db, form=form, batch_size=PAGE, parallel=2, timeout=TIMEOUT)
        report = handle.archive(
            call.target, *window, type="order", expire=True, checkpoint=checkpoint
        )
        return report.copied

    return run


def export(form: IdForm, window: tuple[str, str]) -> Run:
    def run(client: CloudantV1, call: Call, checkpoint: Checkpoint) -> Any:
        handle = database(client, call.db, form=form, batch_size=PAGE, parallel=2, timeout=TIMEOUT)
        handle.export(*window, out=call.out, type="order", checkpoint=checkpoint)
        return exported(call.out)

    return run


def rekey(client: CloudantV1, call: Call, checkpoint: Checkpoint) -> Any:
    assert call.target is not None
    handle = database(client, call.db, batch_size=PAGE, timeout=TIMEOUT)
    report = handle.rekey(call.target, secret=KEY, time_field="t", type="r", checkpoint=checkpoint)
    return report.copied


#: How each operation of tests/test_resume_points.py's OPERATIONS is run.
RUNS: Final[dict[str, Run]] = {
    "expire": expire,
    "archive": archive(KUUID, WINDOW_2026),
    "export": export(KUUID, WINDOW_2026),
    "export-ms": export(KUUID_MS, WINDOW_2024),
    "rekey": rekey,
}


@pytest.fixture(scope="module")
def batch(couch_url: str) -> Iterator[Batch]:
    yield from resume_batch(couch_url, RUNS)


def test_every_operation_is_run() -> None:
    assert RUNS.keys() == OPERATIONS.keys()


@pytest.mark.parametrize(("operation", "checkpoint"), CASES)
def test_a_resume_point_from_elsewhere(
    operation: str, checkpoint: str, batch: Batch, request: pytest.FixtureRequest
) -> None:
    check(operation, checkpoint, "plain", batch.outcome(request.node))


@pytest.mark.needs("couchdb")
@pytest.mark.parametrize(("operation", "checkpoint"), PARTITION_CASES)
def test_a_resume_point_from_elsewhere_in_a_partition(
    operation: str, checkpoint: str, batch: Batch, request: pytest.FixtureRequest
) -> None:
    check(operation, checkpoint, "partitioned", batch.outcome(request.node))
