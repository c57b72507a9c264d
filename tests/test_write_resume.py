"""Writes that can be resumed: idempotency keys, jobs killed and run again, bounded memory,
rate-limited rows, and errors that say what became of each document."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

import pytest
import responses
from faultproxy import FaultProxy, all_docs, client_for, update_count
from ibmcloudant.cloudant_v1 import CloudantV1

from couchids import (
    KUUID_MS,
    V7,
    BulkWriteError,
    ConflictError,
    Database,
    InvalidArgumentError,
    InvalidInputError,
    RateLimitedError,
    ServerError,
)
from couchids.idforms.keyed import keyed_id

JOB = Path(__file__).with_name("write_job.py")
HAND = {"table": 7, "hand": 42, "won": 40}
AT = "2024-05-01T12:00:00Z"


# --- keys ---------------------------------------------------------------------------------


def test_a_keyed_create_run_again_is_a_duplicate_under_the_same_id(
    client: CloudantV1, db: str
) -> None:
    first = Database(client, db).create(
        HAND, type="settlement", key="settle:table-7:hand-42", timestamp=AT
    )
    assert first.id == keyed_id("settle:table-7:hand-42", AT, type="settlement")
    again = Database(client, db).create(
        HAND, type="settlement", key="settle:table-7:hand-42", timestamp=AT
    )
    assert (again.id, again.rev, again.duplicate) == (first.id, first.rev, True)
    assert len(all_docs(client, db)) == 1


def test_a_keyed_create_with_other_content_is_a_conflict(client: CloudantV1, db: str) -> None:
    Database(client, db, form=V7).create(HAND, key="k", timestamp=AT)
    seq = update_count(client, db)
    with pytest.raises(ConflictError, match="a different document already has id") as caught:
        Database(client, db, form=V7).create({**HAND, "won": 41}, key="k", timestamp=AT)
    assert caught.value.doc_id == keyed_id("k", AT, form=V7)
    assert caught.value.stored is False
    assert update_count(client, db) == seq


def test_a_keyed_bulk_job_run_again_stores_nothing_twice(client: CloudantV1, db: str) -> None:
    docs = [{"hand": n, "at": 1_714_564_800_000 + n} for n in range(120)]
    options: dict[str, Any] = {
        "type": "hand",
        "form": KUUID_MS,
        "key_of": lambda d: f"hand-{d['hand']}",
        "time_of": lambda d: d["at"],
    }
    handle = Database(client, db).with_options(batch_size=50)
    first = handle.bulk_create(docs[:70], **options)
    again = handle.bulk_create(docs, **options)
    assert [r.id for r in again[:70]] == [r.id for r in first]
    assert [r.duplicate for r in again] == [True] * 70 + [False] * 50
    assert len(all_docs(client, db)) == 120


@pytest.mark.parametrize(
    ("doc", "kwargs", "words"),
    [
        ({}, {"key": "k"}, "own time"),
        ({"_id": "x"}, {"key": "k", "timestamp": AT}, "both would name its id"),
        ({}, {"key": "", "timestamp": AT}, "non-empty string"),
        ({"_deleted": True}, {}, "a _deleted (True): it would store a deleted document"),
        ({"_revisions": {"start": 1, "ids": ["a"]}}, {}, "a _revisions"),
        ({"_conflicts": []}, {}, "CouchDB reserves top-level fields starting with '_'"),
        ({"_private": 1}, {}, "rename the field"),
        ({1: "x"}, {}, "keys of a JSON object are strings"),
    ],
)
def test_create_refuses_before_sending_anything(
    client: CloudantV1, db: str, doc: dict[Any, Any], kwargs: dict[str, Any], words: str
) -> None:
    seq = update_count(client, db)
    with pytest.raises(InvalidArgumentError, match=re.escape(words)):
        Database(client, db).create(doc, **kwargs)
    assert update_count(client, db) == seq


def test_attachments_are_a_field_a_new_document_may_have(client: CloudantV1, db: str) -> None:
    attachment = {"note.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}
    result = Database(client, db).create({"_attachments": attachment})
    stored = client.get_document(db=db, doc_id=result.id).get_result()
    assert stored["_attachments"]["note.txt"]["length"] == 5


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"key_of": lambda d: "k"}, "key_of= needs time_of="),
        ({"key_of": "k", "time_of": lambda d: AT}, "key_of='k': pass a function"),
        ({"key_of": lambda d: "k", "time_of": AT}, f"time_of={AT!r}: pass a function"),
        (
            {"key_of": lambda d: d["missing"], "time_of": lambda d: AT},
            "key_of= failed for document 1",
        ),
        ({"key_of": lambda d: 5, "time_of": lambda d: AT}, "document 0: key_of= gave 5"),
        ({"key_of": lambda d: "k", "time_of": lambda d: None}, "document 0: time_of= gave None"),
        ({"time_of": lambda d: 1.5}, "document 0: time_of= gave 1.5: 1.5 is a float"),
    ],
)
def test_bulk_create_refuses_bad_keys_and_times(
    client: CloudantV1, db: str, kwargs: dict[str, Any], words: str
) -> None:
    docs = [{"missing": "a"}, {"n": 1}]
    with pytest.raises(InvalidInputError, match=re.escape(words)):
        Database(client, db).bulk_create(docs, **kwargs)
    assert all_docs(client, db) == {}


# --- a whole job killed and run again -----------------------------------------------------


def run_job(url: str, db: str, count: int) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(JOB), url, db, str(count)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return done.stdout.splitlines()


def test_a_keyed_job_killed_at_a_random_point_and_run_again_stores_each_document_once(
    client: CloudantV1, couch_url: str, db: str
) -> None:
    count = 30_000
    seed = int.from_bytes(os.urandom(4))
    rng = random.Random(seed)
    kill_after = rng.randrange(0, count - 5000)
    job = subprocess.Popen(
        [sys.executable, str(JOB), couch_url, db, str(count)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert job.stdout is not None
    seen = 0
    while seen < kill_after and job.stdout.readline():
        seen += 1
    time.sleep(rng.uniform(0, 0.3))  # most likely inside a _bulk_docs request
    job.send_signal(signal.SIGKILL)
    job.wait()
    reported = seen + len(job.stdout.read().splitlines())
    job.stdout.close()
    assert job.returncode == -signal.SIGKILL, f"seed {seed}: the job ended before it was killed"
    before = len(all_docs(client, db))
    assert reported <= before < count, f"seed {seed}"

    lines = run_job(couch_url, db, count)
    states = [line.split()[1] for line in lines]
    assert len(lines) == count, f"seed {seed}"
    assert states.count("error") == 0, f"seed {seed}"
    # The killed run's last two _bulk_docs requests (two batches are in flight at once) may
    # still be carried out after the kill (the server does not stop when the client dies):
    # they too come back as duplicates.
    assert before <= states.count("duplicate") <= before + 2 * 500, f"seed {seed}"
    assert states.count("new") == count - states.count("duplicate"), f"seed {seed}"
    stored = all_docs(client, db)
    assert len(stored) == count, f"seed {seed}: each document once"
    assert {line.split()[0] for line in lines} == set(stored)


#: Documents of the memory test, and what each writer may hold above its baseline: two
#: batches in flight, or those and a result per document (about 240 bytes). Measured here:
#: 1.7 MiB and 9.3 MiB; holding the input as well (a list made of it) gave 15 and 23 MiB.
MEMORY_DOCS: Final = 40_000
MEMORY_BOUND_KIB: Final = {"bulk_create_iter": 6 * 1024, "bulk_create": 16 * 1024}


@pytest.mark.needs("pouchdb")
@pytest.mark.parametrize("function", ["bulk_create_iter", "bulk_create"])
def test_a_bulk_write_of_generated_documents_never_holds_them(
    couch_url: str, db: str, function: str
) -> None:
    # Peak resident memory of the job's process during the call, above its peak just before
    # it (after imports and a warm-up write): a memory bound, not a timing. bulk_create holds
    # every result until it returns the list.
    done = subprocess.run(
        [sys.executable, str(JOB), couch_url, db, str(MEMORY_DOCS), "--memory", function],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    stored, extra_kib = map(int, done.stdout.split())
    assert stored == MEMORY_DOCS
    bound = MEMORY_BOUND_KIB[function]
    assert extra_kib < bound, f"{extra_kib} KiB above the baseline (at most {bound})"


# --- rate-limited rows and failed requests -----------------------------------------------


def sent_ids(call: Any) -> list[str]:
    body = call.request.body
    raw = body.read() if hasattr(body, "read") else body
    if call.request.headers.get("content-encoding") == "gzip":
        raw = gzip.decompress(raw)
    return [doc["_id"] for doc in json.loads(raw)["docs"]]


def bulk_answer(rows: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    return [
        {"id": doc_id, "ok": True, "rev": f"1-{n}"}
        if error is None
        else {"id": doc_id, "error": error, "reason": "capacity"}
        for n, (doc_id, error) in enumerate(rows)
    ]


@responses.activate
def test_rows_answered_too_many_requests_are_sent_again() -> None:
    url = "http://couch.test/db/_bulk_docs"
    docs = [{"_id": f"d{n}"} for n in range(4)]
    limited = [("d0", None), ("d1", "too_many_requests"), ("d2", None), ("d3", "too_many_requests")]
    responses.post(url, status=201, json=bulk_answer(limited))
    responses.post(url, status=201, json=bulk_answer([("d1", "too_many_requests"), ("d3", None)]))
    responses.post(url, status=201, json=bulk_answer([("d1", None)]))
    results = (
        Database(client_for("http://couch.test"), "db").with_options(backoff=0).bulk_create(docs)
    )
    assert [sent_ids(call) for call in responses.calls] == [
        ["d0", "d1", "d2", "d3"],
        ["d1", "d3"],
        ["d1"],
    ]
    assert all(r.ok for r in results) and [r.id for r in results] == ["d0", "d1", "d2", "d3"]


@responses.activate
def test_rows_still_rate_limited_when_the_retries_run_out_are_reported_not_stored() -> None:
    url = "http://couch.test/db/_bulk_docs"
    responses.post(url, status=201, json=bulk_answer([("a", None), ("b", "too_many_requests")]))
    responses.post(url, status=201, json=bulk_answer([("b", "too_many_requests")]))
    with pytest.raises(BulkWriteError, match="1 of 2 documents") as caught:
        Database(client_for("http://couch.test"), "db").with_options(retries=1).bulk_create(
            [{"_id": "a"}, {"_id": "b"}]
        )
    failed = caught.value.failed
    assert [r.id for r in failed] == ["b"]
    error = failed[0].error
    assert isinstance(error, RateLimitedError) and error.status == 429
    assert (error.doc_id, error.stored) == ("b", False)
    assert "document 'b' was not stored" in str(error)


def test_a_failed_batch_reports_every_document_with_its_id(
    client: CloudantV1, via_proxy: CloudantV1, proxy: FaultProxy, db: str
) -> None:
    docs = [{"n": n} for n in range(35)]
    # The second batch (n=10..19) is stored, and every answer to it is lost. The third was
    # sent while the second was in flight; the fourth is never read.
    proxy.fail("503-after", method="POST", path="_bulk_docs", times=3, containing='"n":10,')
    with pytest.raises(ServerError, match="503") as caught:
        Database(via_proxy, db).with_options(batch_size=10, retries=2, backoff=0).bulk_create(docs)
    error = caught.value
    assert "these documents may have been stored" in str(error)
    assert "10 documents before it were handled first (10 stored)" in str(error)
    assert "the 10 documents after them were sent before this was known (10 stored)" in str(error)
    results = error.results
    assert len(results) == 30, "the batch before, the failed one, and the one sent meanwhile"
    assert all(r.ok for r in results[:10]) and all(r.ok for r in results[20:])
    assert all(r.error is error for r in results[10:20]) and error.stored is None
    assert set(all_docs(client, db)) == {r.id for r in results}, "all three batches stored"
    # Run again with the ids the error reported: stored once, reported as duplicates.
    again = (
        Database(client, db)
        .with_options(batch_size=10)
        .bulk_create([{"_id": r.id, "n": n} for n, r in enumerate(results)])
    )
    assert [r.duplicate for r in again] == [True] * 30
    assert len(all_docs(client, db)) == 30


@pytest.fixture
def proxy(couch_url: str) -> Any:
    with FaultProxy(couch_url) as running:
        yield running


@pytest.fixture
def via_proxy(proxy: FaultProxy) -> CloudantV1:
    return client_for(proxy.url)


def test_the_iterator_reads_the_input_a_batch_at_a_time(client: CloudantV1, db: str) -> None:
    read = []

    def docs() -> Any:
        for n in range(30):
            read.append(n)
            yield {"n": n}

    results = Database(client, db).with_options(batch_size=10).bulk_create_iter(docs())
    assert read == [], "nothing is read before the first result is asked for"
    next(results)
    assert read == list(range(20)), "the next batch is read while the first is written"
    assert len(list(results)) == 29
    assert read == list(range(30))
