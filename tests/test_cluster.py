"""Writes on a real 3-node CouchDB cluster (n=3), healthy and with one node paused.

Writers talk to different nodes with CouchDB's default quorum (no ``w=3`` here). A node is
paused with SIGSTOP while they write and resumed with SIGCONT: once for a few seconds, once for
90 s, past the cluster's failure detection (Erlang's net tick, 60 s), so that the others count
it as gone and it comes back behind them.

Every check reads each id's leaf revisions from all three copies (``open_revs=all&r=3``).
"""

from __future__ import annotations

import itertools
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
from faultproxy import client_for
from localserver import CouchDBCluster

from couchids import ConflictError, CouchidsError, Database
from couchids.core.short import ALLOC_FIELD, random_nonce
from couchids.idforms.constants import SHORT_ID_ALPHABET

pytestmark = pytest.mark.needs("cluster")

NOW = datetime(2026, 1, 7, 15, 4, 5, tzinfo=UTC)
DAY = "260107"
WRITERS = 30
TWO_LETTER = [f"{a}{b}" for a, b in itertools.product(SHORT_ID_ALPHABET, repeat=2)]


def leaves(node_url: str, db: str, doc_id: str) -> list[dict[str, Any]]:
    """Every leaf revision of ``doc_id`` on every copy, deleted ones included."""
    answer = requests.get(
        f"{node_url}/{db}/{doc_id}",
        params={"open_revs": "all", "r": 3},
        headers={"Accept": "application/json"},
        timeout=120,
    )
    if answer.status_code == 404:
        return []
    answer.raise_for_status()
    return [entry["ok"] for entry in answer.json() if "ok" in entry]


def live(node_url: str, db: str, doc_id: str) -> list[dict[str, Any]]:
    return [leaf for leaf in leaves(node_url, db, doc_id) if not leaf.get("_deleted")]


def wait_until_healthy(cluster: CouchDBCluster, db: str) -> None:
    """Until every node lists all three and a write reaches every copy (w=3 answers 201)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            ok = all(
                len(requests.get(f"{url}/_membership", timeout=5).json()["all_nodes"]) == 3
                for url in cluster.node_urls
            )
            probe = requests.put(
                f"{cluster.node_urls[0]}/{db}/probe-{uuid.uuid4().hex}",
                params={"w": 3},
                json={},
                timeout=10,
            )
            if ok and probe.status_code == 201:
                return
        except requests.RequestException:
            pass
        time.sleep(1)
    raise AssertionError("the cluster did not come back within 180 s")


@pytest.fixture
def cluster_db(cluster: CouchDBCluster) -> Iterator[str]:
    name = f"test_cluster_{uuid.uuid4().hex}"
    requests.put(f"{cluster.node_urls[0]}/{name}", timeout=60).raise_for_status()
    wait_until_healthy(cluster, name)
    yield name
    requests.delete(f"{cluster.node_urls[0]}/{name}", timeout=60)


def take_most_two_letter_ids(cluster: CouchDBCluster, db: str, free: int) -> list[str]:
    """Store a filler under all but ``free`` of the day's two-letter ids, on every copy;
    return the free nonces."""
    rng = random.Random(7)
    left = rng.sample(TWO_LETTER, free)
    docs = [{"_id": f"{DAY}-{n}", "filler": True} for n in TWO_LETTER if n not in left]
    answer = requests.post(
        f"{cluster.node_urls[0]}/{db}/_bulk_docs", params={"w": 3}, json={"docs": docs}, timeout=120
    )
    assert answer.status_code == 201 and all("ok" in row for row in answer.json())
    return left


Outcome = dict[tuple[int, int], str | CouchidsError]


def run_writers(
    cluster: CouchDBCluster,
    db: str,
    rounds: int,
    shared_first: list[str],
    during: Callable[[], None] = lambda: None,
) -> Outcome:
    """``WRITERS`` threads, writer ``w`` on node ``w % 3``, each making ``rounds`` short ids in
    step (a barrier per round). In round ``r`` every writer's first try is ``shared_first[r]``
    (when given), so they all claim one id at the same instant. ``during`` runs beside them."""
    outcome: Outcome = {}
    lock = threading.Lock()
    step = threading.Barrier(WRITERS)
    failures: list[BaseException] = []

    def writer(number: int) -> None:
        client = client_for(cluster.node_urls[number % 3])
        try:
            for seq in range(rounds):
                first = [shared_first[seq]] if seq < len(shared_first) else []

                def rng(length: int, first: list[str] = first) -> str:
                    return first.pop() if first and length == 2 else random_nonce(length)

                step.wait(timeout=600)
                try:
                    result: str | CouchidsError = (
                        Database(client, db)
                        .with_options(timeout=None)
                        .create_short(
                            {"writer": number, "seq": seq},
                            timestamp=NOW,
                            rng=rng,  # exclusivity is tested here, not speed
                        )
                        .id
                    )
                except CouchidsError as error:  # counted by the test: never silent
                    result = error
                with lock:
                    outcome[(number, seq)] = result
        except BaseException as error:
            failures.append(error)
            step.abort()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    during()
    for thread in threads:
        thread.join()
    assert failures == [], "only couchids errors may end a write"
    return outcome


def check_every_claim(
    cluster: CouchDBCluster, db: str, outcome: Outcome, *, late_copy: bool = False
) -> Counter[str]:
    """The guarantees, read from every copy; returns counts for the report.

    ``late_copy``: a node was paused past failure detection. Writes sent to it while it was
    paused are taken when it resumes, after their writers gave those ids up having seen
    nothing of theirs there (core/claim.py), so a given-up try may be left alive beside the
    owner's revision; they are counted, never an id owned twice."""
    wait_until_healthy(cluster, db)
    url = cluster.node_urls[0]
    owned = {key: value for key, value in outcome.items() if isinstance(value, str)}
    counts: Counter[str] = Counter(
        stored=len(owned), errors=len(outcome) - len(owned), writes=len(outcome)
    )
    # 0 ids owned by two writers.
    by_id = Counter(owned.values())
    assert [doc_id for doc_id, n in by_id.items() if n > 1] == [], "an id owned twice"
    # 0 lost: each owned id holds the owner's revision, live. Any other live revision there is
    # checked below: only a write whose error named that id and said it may have been stored
    # may have left it (claim.py: a writer whose answer was lost may not reach its revision).
    for (number, seq), doc_id in owned.items():
        standing = live(url, db, doc_id)
        assert (number, seq) in [(d["writer"], d["seq"]) for d in standing], doc_id
    # 0 stored twice: over every id of the day, each document is live once, and only where
    # its writer was told; nothing but fillers and owned claims is left alive.
    rows = requests.post(
        f"{url}/{db}/_all_docs", json={"start_key": f"{DAY}-", "end_key": f"{DAY}."}, timeout=60
    ).json()["rows"]
    seen: Counter[tuple[int, int]] = Counter()
    for row in rows:
        for leaf in live(url, db, row["id"]):
            if leaf.get("filler"):
                assert len(live(url, db, row["id"])) == 1, f"a claim beside filler {row['id']}"
                continue
            assert ALLOC_FIELD in leaf
            key = (leaf["writer"], leaf["seq"])
            if owned.get(key) == row["id"]:
                seen[key] += 1
                continue
            error = outcome.get(key)
            if isinstance(error, CouchidsError) and (error.doc_id, error.stored) == (
                row["id"],
                None,
            ):
                # A write whose error said it may have been stored under this id: the caller
                # was told, and writing it again settles it.
                counts["left by a write that may have stored it"] += 1
                continue
            assert late_copy, f"a document left alive under {row['id']}: {leaf}"
            counts["a given-up try the late copy took"] += 1
    assert all(n == 1 for n in seen.values()) and len(seen) == len(owned)
    return counts


@contextmanager
def paused(cluster: CouchDBCluster, node: int) -> Iterator[None]:
    cluster.pause(node)
    try:
        yield
    finally:
        cluster.resume(node)


def test_thirty_writers_on_three_nodes_never_share_an_id(
    cluster: CouchDBCluster, cluster_db: str
) -> None:
    free = take_most_two_letter_ids(cluster, cluster_db, free=30)
    outcome = run_writers(cluster, cluster_db, rounds=12, shared_first=free[:12])
    counts = check_every_claim(cluster, cluster_db, outcome)
    assert counts["errors"] == 0 and counts["stored"] == WRITERS * 12


def test_writers_stay_exclusive_while_a_node_pauses_briefly(
    cluster: CouchDBCluster, cluster_db: str
) -> None:
    free = take_most_two_letter_ids(cluster, cluster_db, free=30)

    def pause_node_three() -> None:
        time.sleep(0.5)
        with paused(cluster, 2):
            time.sleep(8)  # well under the cluster's failure detection

    outcome = run_writers(cluster, cluster_db, 4, free[:4], during=pause_node_three)
    counts = check_every_claim(cluster, cluster_db, outcome)
    assert counts["stored"] > 0


def test_writers_stay_exclusive_while_a_node_is_paused_past_failure_detection(
    cluster: CouchDBCluster, cluster_db: str
) -> None:
    free = take_most_two_letter_ids(cluster, cluster_db, free=30)
    held = f"held-{uuid.uuid4().hex}"
    through_lagging: list[object] = []

    def pause_node_three_for_90_s() -> None:
        time.sleep(0.5)
        with paused(cluster, 2):
            time.sleep(5)
            # A document node three never sees before it comes back.
            answer = requests.put(
                f"{cluster.node_urls[0]}/{cluster_db}/{held}", json={"paid": True}, timeout=120
            )
            assert answer.status_code in (201, 202), answer.text
            time.sleep(85)
        # At once, through the node that is behind: a different document under that id.
        try:
            through_lagging.append(
                Database(client_for(cluster.node_urls[2]), cluster_db).create(
                    {"_id": held, "paid": 1}
                )
            )
        except CouchidsError as error:
            through_lagging.append(error)

    outcome = run_writers(cluster, cluster_db, 3, free[:3], during=pause_node_three_for_90_s)
    counts = check_every_claim(cluster, cluster_db, outcome, late_copy=True)
    assert counts["stored"] > 0
    # Never reported as stored: a conflict, or an error that says the write is unconfirmed.
    [answer] = through_lagging
    assert isinstance(answer, CouchidsError), f"a different document reported stored: {answer}"
    if not isinstance(answer, ConflictError):
        assert "confirm" in str(answer), str(answer)
    assert live(cluster.node_urls[0], cluster_db, held) == [
        {"_id": held, "_rev": live(cluster.node_urls[0], cluster_db, held)[0]["_rev"], "paid": True}
    ], "the stored document alone, nothing of ours beside it"
