# Generated from tests/_async/test_bad_arguments.py by scripts/unasync.py: do not edit by hand;
# edit the asyncio source and run `python scripts/unasync.py`.
"""Arguments that used to escape as Python's own exceptions (or gave a silently wrong result)
are couchids errors that say what is accepted: through couchids.aio.AsyncDatabase and, in the
generated twin, couchids.Database.

The cases run against a client of a closed port (tests/test_bad_arguments.py's ``C``): an
argument check that is missing would let a request go out and fail with a ``ServerError``
instead. (The checks that need no handle, and the command's, are in tests/test_bad_arguments.py.)
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1
from test_bad_arguments import LONE, OPERATIONS, SINCE, UNTIL, C, Failing, Offset, _populate

from couchids import Checkpoint
from couchids.errors import InvalidArgumentError, InvalidIdError, InvalidTimeError
from couchids.idforms.times import to_ms

from .helpers import database, listed


def _checkpointed(client: CloudantV1, checkpoint: object) -> Any:
    return {
        "expire": lambda: database(client, "db").expire(1, type="t", checkpoint=checkpoint),
        "export": lambda: database(client, "db").export(
            0, 1, out=io.StringIO(), checkpoint=checkpoint
        ),
        "archive": lambda: database(client, "db").archive("target", 0, 1, checkpoint=checkpoint),
        "rekey": lambda: database(client, "a").rekey("b", secret=b"k", checkpoint=checkpoint),
        "follow": lambda: listed(database(client, "db").follow(checkpoint=checkpoint, wait=False)),
    }


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize(
    "checkpoint", ['{"last_id":"a"}', {"last_id": "a"}, 5], ids=["json", "dict", "int"]
)
def test_the_operations_refuse_a_checkpoint_that_is_none(
    blocking_client_for: Callable[[CloudantV1], CloudantV1], operation: str, checkpoint: object
) -> None:
    with pytest.raises(InvalidArgumentError, match=r"pass a couchids\.Checkpoint"):
        _checkpointed(blocking_client_for(C), checkpoint)[operation]()


@pytest.mark.parametrize("operation", OPERATIONS)
def test_the_operations_check_a_checkpoint_changed_after_it_was_made(
    blocking_client_for: Callable[[CloudantV1], CloudantV1], operation: str
) -> None:
    mark = Checkpoint()
    mark.done = -1
    with pytest.raises(InvalidArgumentError, match="done=-1"):
        _checkpointed(blocking_client_for(C), mark)[operation]()


@pytest.mark.parametrize("seq", [None, 1.5, True, b"0", "abc", "", " 0", "1-", -5], ids=repr)
def test_follow_refuses_a_since_seq_that_is_no_sequence(
    blocking_client_for: Callable[[CloudantV1], CloudantV1], seq: object
) -> None:
    with pytest.raises(InvalidArgumentError, match="since_seq="):
        listed(database(blocking_client_for(C), "db").follow(since_seq=seq, wait=False))


def test_export_refuses_an_out_it_cannot_write_text_to(
    blocking_client_for: Callable[[CloudantV1], CloudantV1], tmp_path: Path
) -> None:
    closed = io.StringIO()
    closed.close()
    (tmp_path / "in.txt").write_text("", encoding="utf-8")
    with (
        open(tmp_path / "out.bin", "wb") as binary,
        open(tmp_path / "in.txt", encoding="utf-8") as reading,
    ):
        for out, says in [
            (None, "pass a text stream"),
            (object(), "pass a text stream"),
            ("out.ndjson", "pass a text stream"),
            (io.BytesIO(), "open the file in text mode"),
            (binary, "open the file in text mode"),
            (reading, "not open for writing"),
            (closed, "closed"),
        ]:
            with pytest.raises(InvalidArgumentError, match=says):
                database(blocking_client_for(C), "db").export(0, 1, out=out)


@pytest.mark.parametrize(
    ("csv", "says"),
    [
        ("_id,n", r"one string: pass a list of field names, such as \['_id', 'n'\]"),
        (b"_id", "one string"),
        (5, "pass a list of field names"),
        ([1], "1 is not a field name"),
        (["_id", b"n"], "b'n' is not a field name"),
        (["_id", None], "None is not a field name"),
        (["n" + LONE], "valid Unicode"),
    ],
    ids=repr,
)
def test_export_refuses_csv_fields_that_are_no_list_of_names(
    blocking_client_for: Callable[[CloudantV1], CloudantV1], csv: object, says: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=says):
        database(blocking_client_for(C), "db").export(0, 1, out=io.StringIO(), csv=csv)


@pytest.mark.parametrize("doc_id", [LONE, "order:" + LONE, "a" + LONE + "b"], ids=repr)
def test_an_id_with_a_lone_surrogate_is_refused(
    blocking_client_for: Callable[[CloudantV1], CloudantV1], doc_id: str
) -> None:
    says = "an id must be valid Unicode"
    with pytest.raises(InvalidIdError, match=says):
        database(blocking_client_for(C), "db").create({"_id": doc_id})
    with pytest.raises(InvalidIdError, match=says):
        database(blocking_client_for(C), "db").bulk_create([{"n": 1}, {"_id": doc_id}])
    with pytest.raises(InvalidArgumentError, match=says):
        Checkpoint(last_id=doc_id)


def test_a_secret_with_a_lone_surrogate_is_refused(
    blocking_client_for: Callable[[CloudantV1], CloudantV1],
) -> None:
    with pytest.raises(InvalidArgumentError, match="valid Unicode"):
        database(blocking_client_for(C), "a").rekey("b", secret="secret" + LONE)


@pytest.mark.parametrize(
    "zone",
    [Offset(timedelta(hours=30)), Offset(timedelta(hours=-24)), Offset(5), Failing()],
    ids=["30h", "-24h", "int", "raises"],
)
def test_a_datetime_whose_tzinfo_fails_is_an_invalid_time(
    blocking_client_for: Callable[[CloudantV1], CloudantV1], zone: tzinfo
) -> None:
    moment = datetime(2024, 5, 1, 12, tzinfo=zone)
    with pytest.raises(InvalidTimeError, match=r"2024-05-01T12:00:00 with .*tzinfo") as caught:
        to_ms(moment)
    assert "less than 24 hours" in str(caught.value)
    with pytest.raises(InvalidTimeError):
        listed(database(blocking_client_for(C), "db").window(moment, None))
    with pytest.raises(InvalidTimeError):
        database(blocking_client_for(C), "db").create({}, timestamp=moment)


@pytest.mark.needs("pouchdb")
def test_export_writes_text_and_lone_surrogates_exactly(
    blocking_client: CloudantV1, client: CloudantV1, db: str, tmp_path: Path
) -> None:
    # Documents read from a server have string keys only: "1" is the only key 1 can be.
    docs = [{"name": "café ☕", "nested": {"1": "one", "2": [1, "ü"]}}, {"name": "x" + LONE}]
    _populate(client, db, *docs)
    for encoding in ("utf-8", "ascii", "latin-1"):
        path = tmp_path / f"out-{encoding}.ndjson"
        with open(path, "w", encoding=encoding) as out:
            database(blocking_client, db).export(SINCE, UNTIL, out=out, type="ord")
        lines = path.read_text(encoding=encoding).splitlines()
        read = [{k: v for k, v in json.loads(line).items() if k in docs[0]} for line in lines]
        assert read == docs, encoding
    csv = {"type": "ord", "csv": ["name"]}
    lone = pytest.raises(InvalidArgumentError, match=r"lone surrogate.*export it as NDJSON")
    with open(tmp_path / "out.csv", "w", encoding="utf-8", newline="") as out, lone:
        database(blocking_client, db).export(SINCE, UNTIL, out=out, **csv)
    lacks = pytest.raises(InvalidArgumentError, match=r"encoding \(ascii\) has no 'é'")
    with open(tmp_path / "ascii.csv", "w", encoding="ascii", newline="") as out, lacks:
        database(blocking_client, db).export(SINCE, UNTIL, out=out, **csv)
    assert (tmp_path / "ascii.csv").read_bytes() == b"name\r\n"  # the header, no row
