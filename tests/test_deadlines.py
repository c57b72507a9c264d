"""``timeout=`` bounds the whole answer: a server sending a byte every 50 ms (tests/dripserver.py)
ends every operation of both APIs by its deadline, whether the body drips or the headers too.

A read timeout bounds each read from the socket; such a server never lets one run out, so the
blocking API read on until the server's last byte, whatever its ``timeout``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from dripserver import DripServer
from faultproxy import client_for
from test_hostile import DB, OPERATIONS, check_failure

import couchids

TIMEOUT = 1.0
#: Room for a loaded two-core machine (making a client, a loop, threads waiting for the
#: interpreter): the drip would take 20 s.
MARGIN = 5.0
#: Operations at once: all of them would compete for one interpreter, and make each late.
WORKERS = 10


def ends_by_the_deadline(
    run: Callable[..., object], url: str
) -> tuple[BaseException | None, float]:
    """What ``run`` raised against the server at ``url``, and after how many seconds."""
    started = time.monotonic()
    try:
        run(client_for(url), DB, TIMEOUT)
    except Exception as exc:
        return exc, time.monotonic() - started
    return None, time.monotonic() - started


@pytest.mark.parametrize("headers", [False, True], ids=["body", "headers"])
def test_every_operation_ends_by_its_deadline_against_a_dripping_server(headers: bool) -> None:
    with DripServer(headers=headers) as server, ThreadPoolExecutor(WORKERS) as pool:
        futures = {
            name: pool.submit(ends_by_the_deadline, run, server.url)
            for name, run in OPERATIONS.items()
        }
        outcomes = {name: future.result() for name, future in futures.items()}
    assert server.requests, "the server dripped nothing"
    late = {
        name: (round(took, 1), repr(exc))
        for name, (exc, took) in outcomes.items()
        if not isinstance(exc, couchids.ServerTimeoutError) or took >= TIMEOUT + MARGIN
    }
    assert not late, late
    for name, (exc, _) in outcomes.items():
        assert exc is not None
        check_failure(exc, name)
        assert f"within {TIMEOUT:g} s" in str(exc), (name, str(exc))
