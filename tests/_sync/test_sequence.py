# Generated from tests/_async/test_sequence.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""couchids.aio.AsyncSequence and, in the generated twin, couchids.Sequence: numbers handed out
from blocks claimed in the database, on every test server. (The tests of one API alone are in
tests/test_sequence.py.)"""

from __future__ import annotations

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1
from test_sequence import blocks

from .helpers import database, numbers

pytestmark = pytest.mark.integration


def test_numbers_start_at_one_and_come_from_blocks(
    blocking_client: CloudantV1, client: CloudantV1, db: str
) -> None:
    sequence = database(blocking_client, db).sequence("invoices", block=3)
    assert numbers(sequence, 7) == [1, 2, 3, 4, 5, 6, 7]
    assert blocks(client, db) == {1: 4, 4: 7, 7: 10}
    # A second writer (of either API) claims the block after the highest.
    assert numbers(database(blocking_client, db).sequence("invoices", block=3), 2) == [10, 11]
