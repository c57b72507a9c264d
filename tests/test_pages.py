"""couchids.pages: time slices read in parallel hand out exactly the window's rows, in order;
answers that are not ``_all_docs`` answers raise ServerError.

The slice tests run against an in-memory ``_all_docs`` (a sorted list of ids answering
``start_key``/``end_key``/``limit`` in either direction, as CouchDB does): they are about how
the window is cut and put back together, which needs no server. tests/test_query.py and
tests/test_partitioned.py read windows in parallel from the real servers.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import responses
from hypothesis import given, settings
from hypothesis import strategies as st
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import KUUID, KUUID_MS, KUUID_REVERSE, V7S, ServerError
from couchids.core.effects import Program
from couchids.core.keys import window_keys
from couchids.core.pages import Slice, SlicePlan, rows_of, sliced_pages
from couchids.core.policy import RetryPolicy
from couchids.drivers.blocking import stream
from couchids.idforms.forms import IdForm
from couchids.idforms.times import MAX_MS

URL = "http://127.0.0.1:5984"
POLICY = RetryPolicy.checked(0, 0)
T0 = 1_700_000_000_000


Fetch = Callable[[str, str, int], list[dict[str, Any]]]


def as_program(fetch: Fetch) -> Callable[[str, str, int], Program[list[dict[str, Any]]]]:
    """``fetch`` as the program of one page request (it runs where the program is run: on a
    thread of the blocking driver when started concurrently)."""

    def program(start: str, end: str, limit: int) -> Program[list[dict[str, Any]]]:
        yield from ()
        return fetch(start, end, limit)

    return program


def driven(program: Program[None]) -> Iterator[list[dict[str, Any]]]:
    """The pages ``program`` emits, run by the blocking driver (it sends no request)."""
    return stream(None, program)  # type: ignore[arg-type]


class FakeAllDocs:
    """``_all_docs`` over a fixed set of ids, counting the requests in flight at once."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = sorted(set(ids), key=str.encode)
        self.limits: list[int] = []
        self.busy = 0
        self.most_busy = 0
        self.lock = threading.Lock()

    def fetch(self, start: str, end: str, limit: int) -> list[dict[str, Any]]:
        with self.lock:
            self.busy += 1
            self.most_busy = max(self.most_busy, self.busy)
            self.limits.append(limit)
        try:
            if start.encode() <= end.encode():
                found = [i for i in self.ids if start.encode() <= i.encode() <= end.encode()]
            else:
                found = [i for i in self.ids if end.encode() <= i.encode() <= start.encode()]
                found.reverse()
            return [{"id": i, "key": i, "value": {}} for i in found[:limit]]
        finally:
            with self.lock:
                self.busy -= 1


def expected(
    fake: FakeAllDocs, form: IdForm, doc_type: str | None, start: int, end: int, newest: bool
) -> list[str]:
    keys = window_keys(form, doc_type, start, end)
    if keys is None:
        return []
    wanted = form.id_pattern(keys.prefix).fullmatch
    first, last, _ = keys.bounds(newest_first=newest, form=form)
    return [row["id"] for row in fake.fetch(first, last, 10**9) if wanted(row["id"])]


def read(
    fake: FakeAllDocs,
    form: IdForm,
    doc_type: str | None,
    start: int,
    end: int,
    newest: bool,
    parallel: int,
    limit: int,
) -> list[str]:
    keys = window_keys(form, doc_type, start, end)
    if keys is None:  # no id time in the window: query.py asks nothing
        return []
    wanted = form.id_pattern(keys.prefix).fullmatch
    plan = SlicePlan(form, doc_type, newest, start, end)
    pages = driven(sliced_pages(as_program(fake.fetch), plan, parallel, limit, wanted, keys.prefix))
    return [row["id"] for page in pages for row in page if wanted(row["id"])]


FORMS = [KUUID, KUUID_REVERSE, KUUID_MS, V7S]


@settings(max_examples=60, deadline=None)
@given(
    form=st.sampled_from(FORMS),
    doc_type=st.sampled_from([None, "user"]),
    # Offsets in ms from T0 of the documents: dense bursts, spread, or both.
    offsets=st.lists(
        st.one_of(st.integers(0, 3_000), st.integers(0, 600_000)), min_size=0, max_size=150
    ),
    newest=st.booleans(),
    parallel=st.integers(2, 5),
    limit=st.integers(1, 12),
    cut=st.tuples(st.integers(0, 300_000), st.integers(300_000, 700_000)),
)
def test_slices_hand_out_exactly_the_window_in_order(
    form: IdForm,
    doc_type: str | None,
    offsets: list[int],
    newest: bool,
    parallel: int,
    limit: int,
    cut: tuple[int, int],
) -> None:
    ids = [form.new(T0 + o, type=doc_type) for o in offsets]
    # Ids of another type and foreign ids next to the window's keys.
    ids += [form.new(T0 + o, type="users") for o in offsets[:10]]
    ids += ["user:", "user:zzz", "0", "~"]
    fake = FakeAllDocs(ids)
    start, end = T0 + cut[0], T0 + cut[1]
    want = expected(fake, form, doc_type, start, end, newest)
    fake.limits.clear()
    assert read(fake, form, doc_type, start, end, newest, parallel, limit) == want
    assert max(fake.limits, default=0) <= limit + 1


def test_slices_run_in_parallel_and_stay_bounded() -> None:
    """A window of many pages keeps ``parallel`` requests in flight, never more."""
    span = 3000 * 37
    fake = FakeAllDocs([KUUID.new(T0 + k * 37, type="user") for k in range(3000)])
    # The three slices asked for after the first page must all be in flight together, or
    # the barrier breaks (after 10 s) and the read fails.
    gate = threading.Barrier(3, timeout=10)
    calls = iter(range(10**6))

    busy = [0, 0]  # now, most
    lock = threading.Lock()

    def fetch(start: str, end: str, limit: int) -> list[dict[str, Any]]:
        with lock:
            busy[0] += 1
            busy[1] = max(busy)
            number = next(calls)
        try:
            if 1 <= number <= 3:
                gate.wait()
            return fake.fetch(start, end, limit)
        finally:
            with lock:
                busy[0] -= 1

    keys = window_keys(KUUID, "user", T0, T0 + span)
    assert keys is not None
    wanted = KUUID.id_pattern(keys.prefix).fullmatch
    plan = SlicePlan(KUUID, "user", True, T0, T0 + span)
    want = expected(fake, KUUID, "user", T0, T0 + span, True)
    fake.limits.clear()
    pages = driven(sliced_pages(as_program(fetch), plan, 3, 100, wanted, keys.prefix))
    got = [row["id"] for page in pages for row in page if wanted(row["id"])]
    assert got == want
    assert busy[1] == 3
    # About half a page a slice: not hundreds of tiny requests, not one long sequence.
    assert 3000 / 100 <= len(fake.limits) <= 4 * 3000 / 100


def test_a_first_page_without_an_id_of_the_form_reads_on_in_keyset_pages() -> None:
    ids = ["user:" + "x" * 30 + str(k) for k in range(5)] + [
        KUUID.new(T0 + k, type="user") for k in range(5)
    ]
    fake = FakeAllDocs(ids)
    keys = window_keys(KUUID, "user", 0, MAX_MS)
    assert keys is not None
    wanted = KUUID.id_pattern(keys.prefix).fullmatch
    plan = SlicePlan(KUUID, "user", True, 0, MAX_MS)
    pages = list(driven(sliced_pages(as_program(fake.fetch), plan, 2, 3, wanted, keys.prefix)))
    got = [row["id"] for page in pages for row in page]
    assert got == [row["id"] for row in fake.fetch(keys.high, keys.low, 100)]


def test_the_plan_cuts_at_time_boundaries() -> None:
    plan = SlicePlan(KUUID, "user", False, T0, T0 + 10_000)
    pieces = []
    while (planned := plan.next()) is not None:
        pieces.append(planned[0])
    # One slice for the whole window until something is learnt.
    keys = window_keys(KUUID, "user", T0, T0 + 10_000)
    assert keys is not None
    assert pieces == [Slice(keys.low, keys.high)]
    plan = SlicePlan(KUUID, "user", False, T0, T0 + 10_000)
    plan.span = 3
    edges = []
    while (planned := plan.next()) is not None:
        edges.append((planned[0].first, planned[0].last))
    seconds = [T0 // 1000 + k for k in (0, 3, 6, 9, 10)]
    keys_at = ["user:" + KUUID.key(s) for s in seconds]
    assert edges == list(itertools.pairwise(keys_at))


# -- answers that are not _all_docs answers ---------------------------------------------------


@pytest.fixture
def http() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.mark.parametrize(
    "answer",
    [
        b"not json",
        b"[]",
        b'{"rows": 5}',
        b'{"total_rows": 3}',
        b'{"rows": [5]}',
        b'{"rows": [{"key": "a"}]}',
        b'{"rows": [{"id": 1}]}',
        b'{"rows": [{"id": "user:a", "key": "user:a", "value": {}}]}',  # no doc
        b'{"rows": [{"id": "user:a", "doc": null}]}',
        b'{"rows": [{"id": "user:a"',
    ],
)
@pytest.mark.parametrize("parallel", [1, 2])
def test_an_answer_of_the_wrong_shape_is_a_server_error(
    http: responses.RequestsMock, answer: bytes, parallel: int
) -> None:
    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url(URL)
    http.get(f"{URL}/db", json={"db_name": "db", "props": {}})
    http.post(f"{URL}/db/_all_docs", body=answer, content_type="application/json")
    with pytest.raises(ServerError, match=r"^window on 'db'"):
        list(
            couchids.Database(client, "db")
            .with_options(parallel=parallel)
            .window(T0, T0 + 60_000, type="user")
        )


def test_rows_without_docs_need_no_doc() -> None:
    assert rows_of(b'{"rows": [{"id": "a", "value": {}}]}', "db", False, POLICY) == [
        {"id": "a", "value": {}}
    ]
    with pytest.raises(ServerError):
        rows_of(b'{"rows": [{"id": "a", "value": {}}]}', "db", True, POLICY)
