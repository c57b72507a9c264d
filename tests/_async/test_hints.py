"""An empty answer for a type the database does not hold is explained in one WARNING on the
``couchids`` logger, in the words of ``explain_empty``: latest, window (once the stream ends
empty), count (0) and histogram (all zero), through couchids.aio.AsyncDatabase and, in the
generated twin, couchids.Database. The answer is the same with the hint as without it, and a
hint that cannot be found out is logged at DEBUG, never raised. (Without logging configured,
and the command's own note: tests/test_logging.py.)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from faultproxy import FaultProxy, client_for
from ibmcloudant.cloudant_v1 import CloudantV1

from couchids import ALL_TYPES, KUUID
from couchids.aio import AsyncDatabase
from couchids.drivers.aio import AsyncClient

from .helpers import database, listed

SINCE, UNTIL = "2024-05-01", "2024-05-03"
WHEN = "2024-05-01T12:00:00Z"

#: Each read of type ``t``, and what it answers when it finds nothing.
READS: dict[str, tuple[Callable[[AsyncDatabase, Any], Awaitable[Any]], Any]] = {
    "latest": (lambda db, t: db.latest(3, type=t), []),
    "window": (lambda db, t: listed(db.window(SINCE, UNTIL, type=t)), []),
    "count": (lambda db, t: db.count(SINCE, UNTIL, type=t), 0),
    "histogram": (
        lambda db, t: db.histogram(SINCE, UNTIL, every="1d", type=t),
        None,  # two buckets of 0
    ),
}


@pytest.fixture
def typed(client: CloudantV1, db: str) -> str:
    """A database of ids of types order and user."""
    docs = [{"_id": KUUID.new(WHEN, type=t)} for t in ("order", "user", "order")]
    client.post_bulk_docs(db=db, bulk_docs={"docs": docs})
    return db


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("couchids") and r.levelno >= 30]


def nothing(operation: str, answer: Any) -> bool:
    if operation == "histogram":
        return len(answer) == 2 and all(bucket.count == 0 for bucket in answer)
    return bool(answer == READS[operation][1])


@pytest.mark.parametrize("operation", list(READS))
async def test_a_type_the_database_does_not_hold_is_explained_once(
    async_client: AsyncClient, typed: str, caplog: pytest.LogCaptureFixture, operation: str
) -> None:
    caplog.set_level(logging.WARNING, "couchids")
    read, _ = READS[operation]
    shop = database(async_client, typed)
    answer = await read(shop, "oder")
    assert nothing(operation, answer), answer
    (record,) = warnings_of(caplog)
    assert record.name == "couchids" and record.levelno == logging.WARNING
    assert record.getMessage() == (
        f"{operation} on {typed!r} found nothing: no ids of type 'oder' in {typed!r}; it holds "
        "ids of types order, user: pass type= one of them"
    )
    assert record.couchids_operation == operation and record.couchids_db == typed
    # Following the advice finds them, without a word.
    caplog.clear()
    assert not nothing(operation, await read(shop, "order"))
    assert warnings_of(caplog) == []


@pytest.mark.parametrize("operation", list(READS))
async def test_no_hint_when_the_window_or_the_answer_is_why(
    async_client: AsyncClient, typed: str, caplog: pytest.LogCaptureFixture, operation: str
) -> None:
    caplog.set_level(logging.DEBUG, "couchids")
    shop = database(async_client, typed)
    # Ids of the type are there, outside the window: the window is why, no hint is needed.
    if operation == "latest":
        assert await shop.latest(0, type="order") == []
        assert await shop.latest(3, type=ALL_TYPES) != []
    else:
        read = {
            "window": lambda: listed(shop.window("2020-01-01", "2020-01-03", type="order")),
            "count": lambda: shop.count("2020-01-01", "2020-01-03", type="order"),
            "histogram": lambda: shop.histogram(
                "2020-01-01", "2020-01-03", every="1d", type="order"
            ),
        }[operation]
        answer = await read()
        assert answer in ([], 0) or all(bucket.count == 0 for bucket in answer)
    assert warnings_of(caplog) == []


async def test_a_hint_that_cannot_be_found_out_changes_nothing(
    async_client_for: Callable[[CloudantV1], AsyncClient],
    couch_url: str,
    typed: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The read is answered; every request after it fails: the answer stands, nothing is raised,
    # and the failure is a DEBUG record.
    caplog.set_level(logging.DEBUG, "couchids")
    with FaultProxy(couch_url) as proxy:
        shop = database(async_client_for(client_for(proxy.url)), typed, retries=0)
        assert await shop.count(SINCE, UNTIL, type="oder") == 0
        # latest's own read is answered (one POST), every later one is not.
        proxy.fail("503-before", method="POST", path="_all_docs", after=1, times=1000)
        proxy.fail("503-before", method="GET", path="_all_docs", times=1000)
        assert await shop.latest(3, type="oder") == []
        assert "503-before" in [entry.outcome for entry in proxy.log]
    assert [r.getMessage() for r in warnings_of(caplog)] == [
        f"count on {typed!r} found nothing: no ids of type 'oder' in {typed!r}; it holds ids of "
        "types order, user: pass type= one of them"
    ]
    (failed,) = [r for r in caplog.records if "why was not found" in r.getMessage()]
    assert failed.levelno == logging.DEBUG and failed.couchids_operation == "latest"
    assert "503" in failed.getMessage()
