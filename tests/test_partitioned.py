"""Database.latest and Database.window, and count, histogram, export and expire, on a
partitioned Apache CouchDB database, compared with ground truth kept while inserting.

In a partitioned database every id but a design document's is ``partition:docid``, so a typed
id's type is its partition. A typed query reads that partition alone
(``POST /db/_partition/{type}/_all_docs``), which Cloudant answers with at most 2000 rows a
request; an untyped query reads the global index, which has no such cap. The tests set
CouchDB's own switch for that cap to Cloudant's 2000 (see :func:`capped_db`), so the server
refuses any request that asks for more. Each query's page requests are recorded on their way
to the server, to show which index answered. PouchDB Server has no partitioned databases, so
these tests run on CouchDB only.

What a real server cannot be made to show (the exact limits at the cap's edges, 429s, 401s,
500s) is pinned with ``responses`` in tests/test_query_http.py.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from faultproxy import all_docs, client_for
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import body_of, hook, path_of
from windowtable import DAY, SECOND, T0, WEEK, WINDOWS

import couchids
from couchids import (
    KUUID,
    KUUID_MS,
    KUUID_MS_REVERSE,
    KUUID_REVERSE,
    SHORT,
    SHORT_REVERSE,
    V7,
    V7S,
    Checkpoint,
)
from couchids.core.expiry import ExpireReport
from couchids.core.keys import window_keys
from couchids.core.windows import PARTITION_QUERY_LIMIT
from couchids.idforms.forms import IdForm
from couchids.idforms.times import MAX_MS

pytestmark = pytest.mark.needs("couchdb")

#: Partitions whose names are prefixes of one another: ``user:`` must never find ``users:``.
TYPES = ("user", "users", "use")
#: A small page, so that pages end on and around filtered rows.
PAGE = 4
#: Ids in the large partition: more than one partition answer can hold.
MANY = 2500


@dataclass(frozen=True)
class Made:
    """What an id was made as: the ground truth the queries are checked against."""

    id: str
    type: str
    #: The time the id holds: the time it was made at, at its form's precision.
    time: int


def made_at(form: IdForm, doc_type: str, ms: int) -> Made:
    return Made(form.new(ms, type=doc_type), doc_type, ms - ms % form.unit_ms)


@dataclass(frozen=True)
class Sent:
    """One page request of a query: the index it read, the rows it asked for and the rows
    that came back."""

    index: str
    limit: int
    rows: int


def record(client: CloudantV1) -> list[Sent]:
    """Record the page requests ``client`` sends from now on, read as a stream (queries) or as
    JSON (the lifecycle operations); the server still answers them."""
    sent: list[Sent] = []

    def recording(request: dict[str, Any], send: Any) -> Any:
        response = send()
        where = path_of(request)
        if request["method"] == "POST" and where.endswith("/_all_docs"):
            index = (
                "_partition/" + where.split("/_partition/")[1]
                if "/_partition/" in where
                else "_all_docs"
            )
            body, asked = json.loads(response.get_result().content), body_of(request)
            if "keys" in asked:  # a lookup by key (a checkpoint's id): as many rows as keys
                sent.append(Sent(f"{index} by key", len(asked["keys"]), len(body["rows"])))
            else:
                sent.append(Sent(index, asked["limit"], len(body["rows"])))
        return response

    hook(client, recording)
    return sent


def partition_cap(client: CloudantV1, node: str, value: str | None) -> str:
    """Set (``None``: unset) a node's cap on partition query rows; return the value it had."""
    path = f"/_node/{node}/_config/query_server_config/partition_query_limit"
    headers = {"content-type": "application/json"}
    if value is None:
        request = client.prepare_request(method="DELETE", url=path, headers=headers)
    else:
        request = client.prepare_request(
            method="PUT", url=path, headers=headers, data=json.dumps(value)
        )
    old: str = client.send(request).get_result()
    return old


def refuses_over_cap(client: CloudantV1, db: str) -> bool:
    """Whether the server refuses a partition query for more rows than Cloudant's cap."""
    try:
        client.post_partition_all_docs(
            db=db, partition_key="user", limit=PARTITION_QUERY_LIMIT + 1
        ).get_result()
    except ApiException as error:
        if error.status_code != 400:
            raise
        return True
    return False


@pytest.fixture(autouse=True)
def no_hints(caplog: pytest.LogCaptureFixture) -> None:
    """The requests pinned here are the operations' own: an empty answer's explanation (a
    WARNING of couchids, which reads the global index) is off, as any program turns it off."""
    caplog.set_level(logging.ERROR, "couchids")


@pytest.fixture
def capped_db(client: CloudantV1, partitioned_db: str) -> Iterator[str]:
    """A fresh partitioned database on a server that refuses partition queries for more than
    2000 rows, as Cloudant does.

    Apache CouchDB has the same rule behind ``[query_server_config] partition_query_limit``,
    whose default (268435456) never applies: it is set to 2000 on every node for the test and
    put back after it.
    """
    if refuses_over_cap(client, partitioned_db):  # Cloudant, or a CouchDB configured so
        yield partitioned_db
        return
    nodes = client.get_membership_information().get_result()["cluster_nodes"]
    before = {node: partition_cap(client, node, str(PARTITION_QUERY_LIMIT)) for node in nodes}
    try:
        assert refuses_over_cap(client, partitioned_db)
        yield partitioned_db
    finally:
        for node, old in before.items():
            partition_cap(client, node, old or None)


def insert(client: CloudantV1, db: str, ids: Iterable[str]) -> None:
    """Create one small document per id, with a single ``_bulk_docs``."""
    docs = [{"_id": i, "n": n} for n, i in enumerate(ids)]
    result = client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
    failed = [r for r in result if "error" in r]
    assert not failed, failed[:3]


def times(rng: random.Random) -> list[int]:
    """Times at, just after and just before second edges, crowded into a few seconds, and
    spread over weeks either side of T0."""
    edges = [T0 + k * SECOND + d for k in range(5) for d in (0, 1, 999)]
    crowded = [T0 + rng.randrange(10 * SECOND) for _ in range(8)]
    spread = [T0 + rng.randrange(-2 * WEEK, 3 * WEEK) for _ in range(12)]
    return edges + crowded + spread


def noise(form: IdForm, ms: int) -> list[str]:
    """Ids a partitioned database accepts that sort among the ids of ``form`` made at ``ms``
    (in their partition or the global index) but are none of them."""
    unit = ms // form.unit_ms
    key = form.key(unit)
    return [
        "user:" + key,  # the key itself: as long as a prefix, no id
        "user:" + form.key(unit + 1),  # the bound an inclusive end would return
        "user:" + key + "!",
        "user:" + key + "~",
        "user:" + key + "x" * (form.length - len(key)),  # right length, wrong alphabet
        f"{key}:{form.new(ms)}",  # a partition that looks like an untyped key
    ]


#: For each form tested, a form whose ids have the same keys and another length.
NEIGHBOUR = {KUUID: SHORT, KUUID_REVERSE: SHORT_REVERSE, V7S: V7}
FOREIGN = ["_design/x", "_design/user", "user:admin", "user:notakuuid", "users:admin", "use:~"]


def in_order(ids: Iterable[str], form: IdForm, *, newest_first: bool) -> list[str]:
    """``ids`` in the order a query answers them: ``_all_docs`` order (bytes), read
    backwards for newest-first, except for reverse ids, whose keys fall as time rises."""
    return sorted(ids, reverse=newest_first != form.reverse)


@pytest.mark.parametrize("form", [KUUID, KUUID_REVERSE, V7S], ids=str)
def test_typed_queries_answer_exactly_their_partition(
    client: CloudantV1, capped_db: str, form: IdForm
) -> None:
    rng = random.Random(str(form))
    made = [made_at(form, t, ms) for t in TYPES for ms in times(rng)]
    stubs = [i for ms in times(rng) for i in noise(form, ms)]
    # Ids of a form with the same keys but another length sort among the wanted ones.
    others = [NEIGHBOUR[form].new(m.time, type=m.type) for m in made[::3]]
    insert(client, capped_db, {*(m.id for m in made), *stubs, *others, *FOREIGN})
    sent = record(client)
    found = 0
    for doc_type in TYPES:
        mine = [m for m in made if m.type == doc_type]
        for low, high in WINDOWS:
            start, end = T0 + low, T0 + high
            truth = [m.id for m in mine if start <= m.time < end]
            found += len(truth)
            for newest_first in (True, False):
                for page_size in (PAGE, None):
                    got = (
                        couchids.Database(client, capped_db, form=form)
                        .with_options(batch_size=page_size)
                        .window(start, end, type=doc_type, newest_first=newest_first)
                    )
                    where = (doc_type, low, high, newest_first, page_size)
                    assert [d["_id"] for d in got] == in_order(
                        truth, form, newest_first=newest_first
                    ), where
        newest = in_order((m.id for m in mine), form, newest_first=True)
        for n in (1, 2, 17, len(mine) - 1, len(mine), len(mine) + 5):
            docs = couchids.Database(client, capped_db, form=form).latest(n, type=doc_type)
            assert [d["_id"] for d in docs] == newest[:n], (doc_type, n)
        rows = couchids.Database(client, capped_db, form=form).latest(
            3, type=doc_type, include_docs=False
        )
        assert [r["id"] for r in rows] == newest[:3]
    assert found > 0
    # Every page came from the partition of the query's type, none from the global index.
    assert {s.index for s in sent} == {f"_partition/{t}/_all_docs" for t in TYPES}


def test_pages_above_the_partition_cap(client: CloudantV1, capped_db: str) -> None:
    """A window and a latest of more rows than one partition answer may hold."""
    start = T0
    made = [made_at(KUUID, "user", start + k * 997) for k in range(MANY)]
    end = start + MANY * 997
    outside = [KUUID.new(start - 1, type="user"), KUUID.new(end + SECOND, type="user")]
    others = [KUUID.new(start + k * 997, type=t) for t in ("users", "use") for k in range(50)]
    stubs = [i for ms in (start, start + 600_000, end) for i in noise(KUUID, ms)]
    insert(client, capped_db, [*(m.id for m in made), *outside, *others, *stubs, *FOREIGN])
    # The server refuses a partition request for more rows than the cap, so every answer
    # below also shows that no request asked for more.
    assert refuses_over_cap(client, capped_db)
    sent = record(client)
    truth = [m.id for m in made]
    sizes = (None, PARTITION_QUERY_LIMIT - 1, PARTITION_QUERY_LIMIT, MANY, 5000)
    for page_size, newest_first, parallel in itertools.product(sizes, (True, False), (1, 3)):
        got = (
            couchids.Database(client, capped_db)
            .with_options(batch_size=page_size, parallel=parallel)
            .window(
                start,
                end,
                type="user",
                newest_first=newest_first,
                include_docs=False,
            )
        )
        want = in_order(truth, KUUID, newest_first=newest_first)
        assert [r["id"] for r in got] == want, (page_size, newest_first, parallel)
    newest = in_order([*truth, *outside], KUUID, newest_first=True)
    limit = PARTITION_QUERY_LIMIT
    for n in (limit - 1, limit, limit + 1, MANY + 2, MANY + 10):
        docs = couchids.Database(client, capped_db).latest(n, type="user")
        assert [d["_id"] for d in docs] == newest[:n], n
    assert {s.index for s in sent} == {"_partition/user/_all_docs"}
    assert max(s.limit for s in sent) == PARTITION_QUERY_LIMIT


def test_an_untyped_query_on_a_partitioned_database_reads_the_global_index(
    client: CloudantV1, capped_db: str
) -> None:
    """Untyped millisecond kuuid keys run to the top of the index, past every partition and
    design document: an untyped query reads them all from the global index, which has no
    row cap, and finds none of its ids, for none can be stored."""
    form = KUUID_MS
    typed = [form.new(T0 + k, type="user") for k in range(MANY)]
    typed += [form.new(T0 + k, type=t) for t in ("users", "use") for k in range(50)]
    stubs = [i for ms in (T0, T0 + MANY) for i in noise(form, ms)]
    ids = [*typed, *stubs, *FOREIGN]
    insert(client, capped_db, ids)
    with pytest.raises(ApiException) as refused:
        insert(client, capped_db, [form.new(T0)])
    assert refused.value.status_code == 400
    assert "illegal_docid" in refused.value.message
    sent = record(client)
    whole = (
        couchids.Database(client, capped_db, form=form)
        .with_options(batch_size=5000, parallel=1)
        .window(0, MAX_MS)
    )
    assert list(whole) == []
    # One request read every document, more than a partition answer may hold.
    assert sent == [Sent("_all_docs", 5000, len(ids))]
    assert couchids.Database(client, capped_db, form=form).latest(5) == []
    oldest = couchids.Database(client, capped_db, form=form).window(
        T0, T0 + DAY, newest_first=False
    )
    assert list(oldest) == []
    assert {s.index for s in sent} == {"_all_docs"}


class Stop(Exception):
    """Raised from a progress callback to interrupt a run."""


@pytest.mark.parametrize("form", [KUUID, KUUID_MS_REVERSE, V7S], ids=str)
def test_count_export_expire_of_a_type_equal_the_truth(
    client: CloudantV1, couch_url: str, capped_db: str, form: IdForm
) -> None:
    """count, histogram, export and expire of a typed range in a partitioned database, with
    more of the type in the window than one partition answer may hold, ids at every edge, the
    same times in partitions whose names start alike, another form of the type and foreign ids
    inside the type's key range."""
    rng = random.Random(f"lifecycle {form}")
    start, end = T0 - DAY, T0 + DAY  # whole hours: a unit edge of every form
    edges = [edge + d for edge in (start, T0, end) for d in (-form.unit_ms, -1, 0, 1)]
    spread = [start - DAY // 4 + rng.randrange(DAY * 5 // 2) for _ in range(MANY + 500)]
    made = [made_at(form, "ord", ms) for ms in edges + spread]
    other = KUUID if form == V7S else V7S
    # The same times in partitions whose names start like ``ord``, and ``ord`` in another form.
    near = (("ordx", form), ("or", form), ("ord-1", form), ("ord", other))
    alike = [f.new(m.time, type=t) for m in made[:300] for t, f in near]
    # Foreign ids inside the type's key range, at times on the hour and on the half hour, and
    # one that is the first row of the window's range: an index-only count counts them (every
    # id of the range), everything else leaves them out.
    stub_times = range(start - 2 * 3_600_000, end + 3 * 3_600_000, 1_800_000)
    stubs = {ms: f"ord:{form.key(ms // form.unit_ms)}~stub" for ms in stub_times}
    keys = window_keys(form, "ord", start, end)
    assert keys is not None
    first = keys.low + "!"
    ids = [*(m.id for m in made), *alike, *stubs.values(), first, "_design/ord"]
    insert(client, capped_db, ids)
    in_window = [m.id for m in made if start <= m.time < end]
    assert len(in_window) > PARTITION_QUERY_LIMIT
    checker = client_for(couch_url)  # its reads are not recorded
    sent = record(client)

    exact = couchids.Database(client, capped_db, form=form).count(start, end, type="ord")
    assert exact == len(in_window)
    fast = couchids.Database(client, capped_db, form=form).count(
        start, end, type="ord", index_only=True
    )
    assert fast == sum(1 for i in ids if keys.low <= i < keys.high) > len(in_window)
    halves = couchids.Database(client, capped_db, form=form).histogram(
        start, end, every="12h", type="ord"
    )
    assert [b.count for b in halves] == [
        sum(1 for m in made if b.start.timestamp() * 1000 <= m.time < b.end.timestamp() * 1000)
        for b in halves
    ]

    whole = io.StringIO()
    mark = (
        couchids.Database(client, capped_db, form=form)
        .with_options(batch_size=5000)
        .export(start, end, out=whole, type="ord")
    )
    exported = [json.loads(line)["_id"] for line in whole.getvalue().splitlines()]
    assert exported == in_order(in_window, form, newest_first=False)
    assert mark.done == len(in_window) and mark.last_id == exported[-1]
    part, resumed = io.StringIO(), Checkpoint()

    def stop_after_a_page(mark: Checkpoint) -> None:
        raise Stop

    with pytest.raises(Stop):
        couchids.Database(client, capped_db, form=form).with_options(batch_size=700).export(
            start,
            end,
            out=part,
            type="ord",
            checkpoint=resumed,
            on_progress=stop_after_a_page,
        )
    resumed = Checkpoint.from_json(resumed.to_json())
    couchids.Database(client, capped_db, form=form).export(
        start, end, out=part, type="ord", checkpoint=resumed
    )
    assert part.getvalue() == whole.getvalue()

    before = set(all_docs(checker, capped_db))
    doomed = {m.id for m in made if m.time < T0}
    dry = couchids.Database(client, capped_db, form=form).expire(T0, type="ord")
    assert dry.matched == len(doomed) and set(all_docs(checker, capped_db)) == before
    # Stopped after a random number of batches, once some were deleted (with V7S, the first
    # pages hold only the other form's ids, which sort among V7S keys of long ago).
    batches = rng.randrange(1, 4)
    first: list[ExpireReport] = []

    def stop_after_batches(report: ExpireReport) -> None:
        first.append(report)
        if len(first) >= batches and report.deleted:
            raise Stop

    with pytest.raises(Stop):
        couchids.Database(client, capped_db, form=form).with_options(batch_size=300).expire(
            T0, type="ord", dry_run=False, on_progress=stop_after_batches
        )
    again = couchids.Database(client, capped_db, form=form).expire(T0, type="ord", dry_run=False)
    assert 0 < first[-1].deleted < len(doomed)
    assert again.deleted == len(doomed) - first[-1].deleted and not again.conflicts
    assert set(all_docs(checker, capped_db)) == before - doomed
    # Every read of the type came from its partition, no request asked for more than the cap
    # (the server refuses those), and only the fast count's offsets and the resumed export's
    # lookup of its checkpoint's id read the global index.
    assert {s.index for s in sent} == {"_partition/ord/_all_docs", "_all_docs", "_all_docs by key"}
    assert [s.limit for s in sent if s.index == "_all_docs by key"] == [1]
    assert all(s.limit == 1 for s in sent if s.index == "_all_docs")
    assert max(s.limit for s in sent) <= PARTITION_QUERY_LIMIT
