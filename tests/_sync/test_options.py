# Generated from tests/_async/test_options.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""The handle's ``Options`` reach every operation: ``retries`` decides whether a lost answer is
asked again, for the reads of latest, window, types_present, count, histogram, export, follow,
explain_empty and rekey as for the writes. Through couchids.aio.AsyncDatabase and, in the
generated twin, couchids.Database.

Each case meets one ``503`` before its first read of ``_all_docs`` or ``_changes`` (whichever
method it uses): with ``retries=0`` the call raises the server's error; with the default it
rides the answer out and returns what it would have without it.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from faultproxy import FaultProxy, client_for
from ibmcloudant.cloudant_v1 import CloudantV1

from couchids import Database
from couchids.errors import ServerError

from .helpers import database, listed

START, END = "2024-05-01", "2024-05-02"

CASES: dict[str, tuple[str, Callable[[Database], Awaitable[Any]]]] = {
    "latest": ("_all_docs", lambda db: db.latest(3, type="ord")),
    "window": ("_all_docs", lambda db: listed(db.window(START, END, type="ord"))),
    "types_present": ("_all_docs", lambda db: db.types_present()),
    "count": ("_all_docs", lambda db: db.count(START, END, type="ord")),
    "histogram": ("_all_docs", lambda db: db.histogram(START, END, type="ord")),
    "export": ("_all_docs", lambda db: db.export(START, END, out=io.StringIO(), type="ord")),
    "follow": ("_changes", lambda db: listed(db.follow(since_seq=0, wait=False))),
    "explain_empty": ("_all_docs", lambda db: db.explain_empty(type="ord")),
    "rekey": ("_all_docs", lambda db: db.rekey(db.name + "_rekeyed", secret=b"k")),
}


@pytest.mark.parametrize("operation", list(CASES))
def test_retries_of_the_handle_decide_whether_a_lost_read_is_asked_again(
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
    couch_url: str,
    client: CloudantV1,
    db: str,
    operation: str,
) -> None:
    client.post_bulk_docs(db=db, bulk_docs={"docs": [{"_id": "ord:x", "n": 1}]})
    path, call = CASES[operation]
    client.put_database(db=db + "_rekeyed")
    try:
        outcomes = []
        for retries in (0, 4):
            with FaultProxy(couch_url) as proxy:
                for method in ("GET", "POST"):
                    proxy.fail("503-before", method=method, path=f"^/{db}/{path}")
                handle = database(blocking_client_for(client_for(proxy.url)), db, retries=retries)
                try:
                    outcomes.append(call(handle))
                except ServerError as exc:
                    outcomes.append(exc)
        failed, rode_out = outcomes
        assert isinstance(failed, ServerError) and "503" in str(failed), failed
        assert not isinstance(rode_out, Exception), rode_out
    finally:
        client.delete_database(db=db + "_rekeyed")
