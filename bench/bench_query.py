"""Database.window against what a user would write instead, on PouchDB Server and CouchDB,
at 0 ms and at an added round trip (bench/delayproxy.py), as ratios of medians.

Per server (scripts/localserver.py ``start(kind)``), one database holds ``--docs-delayed``
events 10 ms apart (plus other types and times around them). The first ``--docs`` events are
the 0 ms window, all of them the delayed one. The delay proxy is on loopback too: it adds a
round trip, not a slow link, so couchids still reads uncompressed through it (a real remote
server would be offered gzip). In interleaved rounds it times:

- ``window`` with ``parallel=1`` (sequential pages) and with ``--parallel`` slices
  (``--parallel-delayed`` with the added round trip, as the querying guide advises for a remote
  server);
- ``raw``: one plain ``requests.post(.../_all_docs).json()`` of the same key range, as a user
  writes it: ``requests`` offers gzip, which PouchDB Server then spends its time on (CouchDB
  never compresses). couchids asks a server on loopback for uncompressed answers, so ``raw
  uncompressed``, the same call with ``Accept-Encoding: identity``, shows how much of
  ``window / raw`` that is;
- the SDK's ``post_all_docs`` and ibmcloudant's ``Pagination`` (pages of 200, its largest);
- peak traced memory (``tracemalloc``) of ``window`` against ``raw``;
- ``couchids window ... > file`` against ``curl -s ... | jq -c '.rows[].doc' > file``;
- ``curl -s ... -o file`` against ``raw``: the server's own time to send the range, which
  no client beats (on CouchDB it is most of the raw request);
- ``curl slices``: as many ``curl -o file`` at once as ``window(parallel)`` reads slices,
  one per time slice of the window: the server's own time to send the window that way, the
  floor of ``window(parallel)``. Where both ``curl`` rows are above a ``window / raw``
  target, or ``window(1) / the server alone (delayed)`` (``window(1)`` against the faster
  of the two) is below the ``window(1) / window(parallel)`` one, no client meets that
  target on this machine: the server's work sets the pace;
- how many cores the server keeps busy (its processes' CPU seconds per second, from
  ``/proc``) while it answers ``raw`` and ``window(parallel)``: where that is all the cores
  the machine has, no client, however parallel, gets the answer sooner.

Setup once: ``bash scripts/bootstrap`` and, for the command-line rows, ``apt-get install -y
curl jq`` (Debian's jq). Run::

    .venv/bin/python bench/bench_query.py [--server pouchdb|couchdb|both] [--docs 50000]
        [--docs-delayed 200000] [--rounds 5] [--delay-ms 20] [--batch-size N] [--parallel K]
        [--parallel-delayed K]

Always exits 0: the table is for a reader, not a gate (timings vary by machine).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from ibmcloudant.features.pagination import PagerType, Pagination

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from delayproxy import delayed
from localserver import LAUNCHER_VARIABLE, client_environment, start
from timing import interleaved

import couchids
from couchids import KUUID
from couchids.core.keys import window_keys
from couchids.core.pages import DEFAULT_PARALLEL, REMOTE_PARALLEL
from couchids.core.windows import DEFAULT_PAGE_SIZE

BENCH = Path(__file__).resolve().parent
T0 = 1_700_000_000_000
LOAD_BATCH = 2000
JSON = "application/json"
#: (what, target): the issue's targets; "<=" for costs, ">=" for speed-ups.
TARGETS = {
    "window / raw": ("<=", 0.9),
    "window(parallel) / raw": ("<=", 0.6),
    "peak memory window / raw": ("<=", 0.1),
    "cli window / curl | jq": ("<=", 1.0),
    "Pagination / window(parallel)": (">=", 3.0),
    "window(1) / window(parallel)": (">=", 1.5),
}
#: Targets set for CouchDB alone (PouchDB Server answers on one thread).
COUCHDB_ONLY = {"window(parallel) / raw"}

#: Targets and the ratios that bound them whatever the client: the server's own time to send
#: the documents (curl, decoding nothing), one request or slices at once. A "<=" target below
#: the least of its bounds, or a ">=" one above the greatest, no client meets on this machine.
SERVER_ALONE = ("curl -o file / raw (the server alone)", "curl slices / raw (the server alone)")
BOUNDS = {
    "window / raw": SERVER_ALONE,
    "window(parallel) / raw": SERVER_ALONE,
    "window(1) / window(parallel)": ("window(1) / the server alone (delayed)",),
}


def out_of_reach(kind: str, ratios: dict[str, float]) -> list[str]:
    """A line for each target of server ``kind`` that the server's own time puts out of any
    client's reach."""
    lines = []
    for name, bounds in BOUNDS.items():
        if name in COUCHDB_ONLY and kind != "couchdb":
            continue
        sign, target = TARGETS[name]
        known = [ratios[bound] for bound in bounds if bound in ratios]
        if not known:
            continue
        best = min(known) if sign == "<=" else max(known)
        if best > target if sign == "<=" else best < target:
            lines.append(f"{name} {sign} {target:g}: the server alone gives {best:.3f}")
    return lines


def service(url: str) -> CloudantV1:
    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url(url)
    return client


def load(client: CloudantV1, db: str, count: int) -> None:
    """``count`` events 10 ms apart from T0, and a tenth as many other documents around them."""
    end = T0 + count * 10
    ids = [KUUID.new(T0 + i * 10, type="event") for i in range(count)]
    ids += [KUUID.new(T0 + i * 100, type="events") for i in range(count // 20)]
    ids += [KUUID.new(T0 - 1 - i * 1000, type="event") for i in range(count // 40)]
    ids += [KUUID.new(end + i * 1000, type="event") for i in range(count // 40)]
    for first in range(0, len(ids), LOAD_BATCH):
        docs = [
            {"_id": doc_id, "n": n, "name": f"document {n}", "tags": ["bench", str(n % 7)]}
            for n, doc_id in enumerate(ids[first : first + LOAD_BATCH], first)
        ]
        rows = client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
        assert not [r for r in rows if "error" in r], "loading failed"


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def range_query(start: int, end: int) -> dict[str, Any]:
    """The ``_all_docs`` body for the events made in ``[start, end)``, newest first."""
    keys = window_keys(KUUID, "event", start, end)
    assert keys is not None
    high, low, _ = keys.bounds(newest_first=True, form=KUUID)
    return {"start_key": high, "end_key": low, "descending": True, "include_docs": True}


def curl(url: str, query: dict[str, Any]) -> list[str]:
    """The arguments of a ``curl`` that posts ``query`` to ``url`` and prints the answer."""
    return ["curl", "-s", "-X", "POST", "-H", f"Content-Type: {JSON}", "-d", json.dumps(query), url]


def ways(
    url: str, db: str, count: int, args: argparse.Namespace, out: Path, parallel: int
) -> dict[str, Callable[[], int]]:
    """The ways to read the window of the first ``count`` events, each returning its count
    (``window(parallel)`` with ``parallel`` slices)."""
    client = service(url)
    start, end = T0, T0 + count * 10
    query = range_query(start, end)
    session = requests.Session()
    all_docs = f"{url}/{db}/_all_docs"

    def window(parallel: int) -> Callable[[], int]:
        def read() -> int:
            docs = (
                couchids.Database(client, db)
                .with_options(batch_size=args.batch_size, parallel=parallel)
                .window(start, end, type="event")
            )
            return sum(1 for _doc in docs)

        return read

    def raw() -> int:
        return len(session.post(all_docs, json=query).json()["rows"])

    def raw_uncompressed() -> int:
        answer = session.post(all_docs, json=query, headers={"Accept-Encoding": "identity"})
        return len(answer.json()["rows"])

    def sdk() -> int:
        return len(client.post_all_docs(db=db, **query).get_result()["rows"])

    def pagination() -> int:
        pages = Pagination.new_pagination(
            client, PagerType.POST_ALL_DOCS, db=db, limit=200, **query
        )
        return sum(1 for _row in pages.rows())

    env = {**os.environ, **client_environment(url)}
    cli = [sys.executable, "-m", "couchids", "window", db, "--type", "event"]
    cli += ["--since", iso(start), "--until", iso(end)]
    if args.batch_size:
        cli += ["--batch-size", str(args.batch_size)]
    shell = f"{shlex.join(curl(all_docs, query))} | jq -c '.rows[].doc' > {out}"
    alone = shlex.join([*curl(all_docs, query), "-o", str(out)])

    def command() -> int:
        with out.open("wb") as sink:
            subprocess.run(cli, stdout=sink, env=env, check=True)
        return sum(1 for _line in out.open("rb"))

    def curl_jq() -> int:
        subprocess.run(shell, shell=True, check=True)
        return sum(1 for _line in out.open("rb"))

    def curl_only() -> int:
        # The server's own time to send the range: no client reads faster than this.
        subprocess.run(alone, shell=True, check=True)
        return out.read_bytes().count(b'"id":')  # a row each (the documents have none)

    pieces = [out.with_suffix(f".{i}") for i in range(parallel)]
    cuts = [start + (end - start) * i // parallel for i in range(parallel)] + [end]
    slices = [
        [*curl(all_docs, range_query(cuts[i], cuts[i + 1])), "-o", str(piece)]
        for i, piece in enumerate(pieces)
    ]

    def curl_slices() -> int:
        # The server's own time to send the range as `parallel` time slices at once: no
        # client reading that many slices at a time gets the documents sooner.
        running = [subprocess.Popen(command) for command in slices]
        if any(process.wait() for process in running):
            raise RuntimeError("curl failed")
        return sum(piece.read_bytes().count(b'"id":') for piece in pieces)

    found: dict[str, Callable[[], int]] = {
        "window(1)": window(1),
        "window(parallel)": window(parallel),
        "raw": raw,
        "raw uncompressed": raw_uncompressed,
        "sdk post_all_docs": sdk,
        "Pagination": pagination,
    }
    if not args.no_cli and shutil.which("curl") and shutil.which("jq"):
        # Byte-compiled once, as installing a package does: where PYTHONDONTWRITEBYTECODE is
        # set, each run of the command would otherwise compile couchids' sources (~40 ms).
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(BENCH.parent / "couchids")])
        found |= {"cli window": command, "curl | jq": curl_jq, "curl -o file": curl_only}
    if shutil.which("curl"):
        found["curl slices"] = curl_slices
    return found


def measure(tried: dict[str, Callable[[], int]], count: int, rounds: int) -> dict[str, float]:
    median, answers = interleaved(tried, rounds)
    for name, got in answers.items():
        assert got == count, (name, got, count)
    return median


def peak(way: Callable[[], int]) -> int:
    gc.collect()
    tracemalloc.start()
    way()
    most = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return most


def server_cpu(group: int) -> float | None:
    """CPU seconds used so far by the processes of process group ``group`` (a local server
    runs in its own), from ``/proc``; ``None`` where there is no ``/proc``."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    ticks = 0
    for stat in proc.glob("[0-9]*/stat"):
        try:
            # After the command's closing parenthesis: state, ppid, pgrp, ..., utime, stime.
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # a process that ended meanwhile
        if int(fields[2]) == group:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def cores_busy(group: int, way: Callable[[], int], rounds: int) -> float | None:
    """The median over ``rounds`` runs of ``way`` of the server's CPU seconds per second."""
    shares = []
    for _ in range(rounds):
        before, began = server_cpu(group), time.perf_counter()
        way()
        spent, after = time.perf_counter() - began, server_cpu(group)
        if before is None or after is None:
            return None
        shares.append((after - before) / spent)
    return statistics.median(shares)


def run_server(kind: str, args: argparse.Namespace) -> dict[str, float]:
    ratios: dict[str, float] = {}
    with start(kind) as server, tempfile.TemporaryDirectory() as tmp:  # type: ignore[arg-type]
        client = service(server.url)
        db = f"bench_{uuid.uuid4().hex}"
        client.put_database(db=db)
        began = time.perf_counter()
        load(client, db, max(args.docs, args.docs_delayed))
        print(f"{kind}: loaded in {time.perf_counter() - began:.1f}s", flush=True)
        out = Path(tmp) / "out.ndjson"

        fast = ways(server.url, db, args.docs, args, out, args.parallel)
        median = measure(fast, args.docs, args.rounds)
        print(f"{kind}, 0 ms, {args.docs} documents, medians of {args.rounds}:")
        for name, spent in median.items():
            print(f"  {name:20} {spent * 1000:9.1f} ms", flush=True)
        ratios["window / raw"] = median["window(parallel)"] / median["raw"]
        ratios["window(1) / raw"] = median["window(1)"] / median["raw"]
        ratios["window(parallel) / raw"] = median["window(parallel)"] / median["raw"]
        ratios["window / raw uncompressed"] = (
            median["window(parallel)"] / median["raw uncompressed"]
        )
        ratios["sdk post_all_docs / raw"] = median["sdk post_all_docs"] / median["raw"]
        ratios["Pagination / raw"] = median["Pagination"] / median["raw"]
        if "cli window" in median:
            ratios["cli window / curl | jq"] = median["cli window"] / median["curl | jq"]
            ratios["curl -o file / raw (the server alone)"] = median["curl -o file"] / median["raw"]
        if "curl slices" in median:
            ratios["curl slices / raw (the server alone)"] = median["curl slices"] / median["raw"]
        ratios["peak memory window / raw"] = peak(fast["window(parallel)"]) / peak(fast["raw"])
        for name in ("raw", "window(parallel)"):
            busy = cores_busy(server.pid, fast[name], args.rounds)
            if busy is not None:
                ratios[f"server cores busy, {name}"] = busy

        if args.delay_ms:
            with delayed(server.url, args.delay_ms) as url:
                slow = ways(url, db, args.docs_delayed, args, out, args.parallel_delayed)
                kept = ("window(1)", "window(parallel)", "raw", "Pagination")
                kept += ("curl -o file", "curl slices")
                rounds = max(1, args.rounds // 2)
                median = measure({k: slow[k] for k in kept if k in slow}, args.docs_delayed, rounds)
            print(f"{kind}, {args.delay_ms:g} ms added, {args.docs_delayed} documents:")
            for name, spent in median.items():
                print(f"  {name:20} {spent * 1000:9.1f} ms", flush=True)
            best = median["window(parallel)"]
            ratios["Pagination / window(parallel)"] = median["Pagination"] / best
            ratios["window(1) / window(parallel)"] = median["window(1)"] / best
            ratios["raw / window(parallel) (delayed)"] = median["raw"] / best
            alone = [median[k] for k in ("curl -o file", "curl slices") if k in median]
            if alone:
                # The most any client could gain over window(1): the server's fastest send.
                ratios["window(1) / the server alone (delayed)"] = median["window(1)"] / min(alone)
        client.delete_database(db=db)
    return ratios


def main(argv: list[str] | None = None) -> int:
    both = "both" if os.environ.get(LAUNCHER_VARIABLE) else "pouchdb"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("pouchdb", "couchdb", "both"), default=both)
    parser.add_argument("--docs", type=int, default=50_000, help="the 0 ms window")
    parser.add_argument("--docs-delayed", type=int, default=200_000, help="the delayed window")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--delay-ms", type=float, default=20.0, help="0: skip the delayed runs")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--parallel", type=int, default=DEFAULT_PARALLEL)
    parser.add_argument(
        "--parallel-delayed",
        type=int,
        default=REMOTE_PARALLEL,
        help="window(parallel) with the added round trip",
    )
    parser.add_argument("--no-cli", action="store_true", help="skip couchids/curl/jq")
    args = parser.parse_args(argv)
    kinds = ["pouchdb", "couchdb"] if args.server == "both" else [args.server]

    table = {kind: run_server(kind, args) for kind in kinds}

    page = args.batch_size or DEFAULT_PAGE_SIZE
    print(
        f"\nbatch size {page} (the command's too), "
        f"parallel {args.parallel} "
        f"({args.parallel_delayed} with {args.delay_ms:g} ms added); ratios of medians"
    )
    print(f"(server cores busy: of the {os.cpu_count()} this machine has, shared with the client)")
    names = list(dict.fromkeys(name for ratios in table.values() for name in ratios))
    print(f"{'ratio':40}" + "".join(f"{kind:>10}" for kind in kinds) + "   target")
    for name in names:
        cells = "".join(
            f"{table[kind][name]:10.3f}" if name in table[kind] else f"{'-':>10}" for kind in kinds
        )
        sign, target = TARGETS.get(name, ("", None))
        goal = f"   {sign} {target:g}" if target is not None else ""
        goal += " (couchdb)" if name in COUCHDB_ONLY else ""
        print(f"{name:40}{cells}{goal}")
    for kind in kinds:
        for line in out_of_reach(kind, table[kind]):
            print(f"{kind}: out of any client's reach on this machine: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
