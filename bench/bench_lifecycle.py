"""window, export and expire: this tree's couchids against another commit's and against the
plain alternative, on PouchDB Server or CouchDB, as ratios of medians of interleaved rounds.

    .venv/bin/python bench/bench_lifecycle.py --server pouchdb --baseline-commit 44bc6e5
    .venv/bin/python bench/bench_lifecycle.py --server couchdb --baseline-tree /tmp/couchids-before

Each way runs in its own long-lived interpreter (bench/lifecycle_worker.py; one package cannot
be imported twice), which times the call alone and checks its answer (a window's length, an
export's lines, an expire's deleted count), so a broken tree cannot look fast:

- ``this``: the couchids of this checkout (``PYTHONPATH`` set to it, uncommitted changes
  included; the header says whether there are any);
- ``baseline``: the couchids of ``--baseline-tree PATH`` (a checkout of another commit, e.g.
  ``git worktree add /tmp/couchids-before 44bc6e5``), or of ``--baseline-commit SHA``, for
  which the bench adds such a worktree in a temporary directory and removes it at the end.
  Without either, the baseline rows are left out;
- ``plain``: what a user writes with ``requests`` alone: one ``POST _all_docs`` with
  ``include_docs=true`` over the window's key range (``export`` writes the documents as
  NDJSON with ``json.dumps``), and for ``expire`` the rows of the range (one request, no
  documents) then ``_bulk_docs`` deletions in batches of 500. ``requests`` offers gzip,
  which PouchDB Server then spends its time on (CouchDB never compresses; couchids asks a
  server on loopback for uncompressed answers: see bench/bench_query.py's ``raw
  uncompressed``).

The calls are ``list(events.window(start, end, type=T))``, ``events.export(start, end, out=out,
type=T)`` into a file, and ``events.expire(before, type=T, dry_run=False)`` on ``events =
couchids.Database(client, db)``, all with their defaults. ``--docs`` events 10 ms apart (and
other types and times around them) are the window; each expire call gets a fresh database of
``--expire-docs`` events (and documents that must stay, which are counted afterwards), loaded
outside the timed part. As in bench/timing.py, every way runs once first (a warm-up whose
answer is checked too), then ``--rounds`` rounds run each way once, in order on even rounds and
in reverse on odd ones. Prints each way's median, fastest and slowest round, and per ratio the
least and greatest of the rounds' own ratios (the ways of a round run back to back), a measure
of the noise; then the same for the CPU time each worker used during the call (``client CPU``):
the client's own work, which a busy machine and the server's pace sway far less than the time
taken, so it shows what the checks cost the client even where the times are too noisy to.

Always exits 0 when every answer is right: the numbers are for a reader, not a gate.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from localserver import start

from couchids import KUUID
from couchids.core.keys import window_keys

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORKER = BENCH / "lifecycle_worker.py"
T0 = 1_700_000_000_000
#: Milliseconds between the events: whole seconds of them stay whole (ids hold seconds).
STEP = 10
TYPE = "event"
LOAD_BATCH = 2000
#: The ratios printed, as (op, way, way).
RATIOS = [
    ("window", "this", "baseline"),
    ("export", "this", "baseline"),
    ("expire", "this", "baseline"),
    ("window", "this", "plain"),
    ("export", "this", "plain"),
    ("expire", "this", "plain"),
]
#: What the workers measure: the call's time, and the CPU time the worker used meanwhile.
MEASURES = {"seconds": "", "cpu": " (client CPU)"}
Command = dict[str, Any]
#: Per measure, per way, the rounds' values.
Times = dict[str, dict[str, list[float]]]


class Worker:
    """One lifecycle_worker.py process: a way of doing the operations, timed inside it."""

    def __init__(self, name: str, url: str, tree: Path | None, where: Path) -> None:
        self.name = name
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        if tree is not None:
            env["PYTHONPATH"] = str(tree)
        way = "plain" if tree is None else "couchids"
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), url, way],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=where,
        )
        found = self._read()["couchids"]
        if tree is not None and not Path(found).is_relative_to(tree.resolve()):
            raise RuntimeError(f"the {name} worker imported {found}, not the one in {tree}")

    def ask(self, command: Command) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self._read()

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            status = self.process.wait()
            raise RuntimeError(f"the {self.name} worker ended (status {status}): see above")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def describe(tree: Path) -> str:
    """The commit checked out at ``tree``, and whether its couchids has uncommitted changes."""
    git = ["git", "-C", str(tree)]
    commit = subprocess.run(
        [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    changed = subprocess.run(
        [*git, "status", "--porcelain", "--", "couchids"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return f"{commit} with uncommitted changes to couchids" if changed else commit


@contextmanager
def baseline(args: argparse.Namespace) -> Iterator[Path | None]:
    """The baseline tree: the one given, a worktree of the commit given, or none."""
    if args.baseline_tree:
        tree = Path(args.baseline_tree).resolve()
        if not (tree / "couchids" / "__init__.py").is_file():
            raise SystemExit(f"--baseline-tree {tree}: no couchids package there")
        yield tree
        return
    if not args.baseline_commit:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="couchids-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        git = ["git", "-C", str(REPO), "worktree"]
        subprocess.run(
            [*git, "add", "--detach", "--quiet", str(tree), args.baseline_commit], check=True
        )
        if not (tree / "couchids" / "__init__.py").is_file():
            raise SystemExit(f"--baseline-commit {args.baseline_commit}: no worktree made")
        try:
            yield tree
        finally:
            subprocess.run([*git, "remove", "--force", str(tree)], check=False)


def docs_of(ids: list[str]) -> list[dict[str, Any]]:
    return [
        {"_id": doc_id, "n": n, "name": f"document {n}", "tags": ["bench", str(n % 7)]}
        for n, doc_id in enumerate(ids)
    ]


def load(http: requests.Session, url: str, db: str, docs: list[dict[str, Any]]) -> None:
    """A new database ``db`` holding ``docs``."""
    http.put(f"{url}/{db}").raise_for_status()
    for first in range(0, len(docs), LOAD_BATCH):
        answer = http.post(
            f"{url}/{db}/_bulk_docs", json={"docs": docs[first : first + LOAD_BATCH]}
        )
        answer.raise_for_status()
        if any("error" in row for row in answer.json()):
            raise RuntimeError(f"loading {db} failed")


def window_ids(count: int) -> list[str]:
    """``count`` events from T0, and a tenth as many other documents around them."""
    end = T0 + count * STEP
    ids = [KUUID.new(T0 + i * STEP, type=TYPE) for i in range(count)]
    ids += [KUUID.new(T0 + i * 100, type=TYPE + "s") for i in range(count // 20)]
    ids += [KUUID.new(T0 - 1 - i * 1000, type=TYPE) for i in range(count // 40)]
    ids += [KUUID.new(end + i * 1000, type=TYPE) for i in range(count // 40)]
    return ids


def expire_ids(count: int) -> tuple[list[str], int]:
    """``count`` events before ``T0 + count * STEP``, and the documents that must stay: later
    events and earlier documents of another type; and how many those are."""
    before = T0 + count * STEP
    stay = [KUUID.new(before + i * 1000, type=TYPE) for i in range(count // 10)]
    stay += [KUUID.new(T0 + i * 100, type=TYPE + "s") for i in range(count // 20)]
    return [KUUID.new(T0 + i * STEP, type=TYPE) for i in range(count)] + stay, len(stay)


def key_range(start: int, end: int) -> Command:
    """The plain way's ``start_key`` and ``end_key``, oldest first."""
    keys = window_keys(KUUID, TYPE, start, end)
    assert keys is not None
    return {"start_key": keys.low, "end_key": keys.high}


def interleave(
    workers: dict[str, Worker],
    rounds: int,
    prepare: Callable[[], dict[str, Command]],
    finish: Callable[[dict[str, Command]], None],
) -> Times:
    """Each worker's seconds and CPU seconds in each of ``rounds`` rounds, after a warm-up, in
    bench/timing.py's order; ``prepare`` gives each round's commands and ``finish`` checks and
    clears up after it. The ways must agree on what they found, the first and last id where
    they say."""
    times: Times = {measure: {name: [] for name in workers} for measure in MEASURES}
    order = list(workers)
    for number in range(-1, rounds):
        commands = prepare()
        names = order if number < 0 or number % 2 == 0 else order[::-1]
        answers = {name: workers[name].ask(commands[name]) for name in names}
        finish(commands)
        for key in ("first", "last"):
            found = {answer[key] for answer in answers.values()}
            if len(found) > 1:
                raise RuntimeError(f"the ways disagree on the {key} id: {answers}")
        if number >= 0:
            for name, answer in answers.items():
                for measure in MEASURES:
                    times[measure][name].append(answer[measure])
    return times


def spread(values: list[float]) -> str:
    """The median in ms, and in brackets the fastest and slowest round."""
    median, least, most = (1000 * f(values) for f in (statistics.median, min, max))
    return f"{median:9.1f}  ({least:.1f} .. {most:.1f})"


def report(kind: str, args: argparse.Namespace, times: dict[str, Times]) -> None:
    print(
        f"{kind}, medians of {args.rounds} rounds in ms (fastest .. slowest), and the worker's "
        f"CPU time: window and export {args.docs:,} documents, expire {args.expire_docs:,}"
    )
    for op, measures in times.items():
        for name in measures["seconds"]:
            took, cpu = spread(measures["seconds"][name]), spread(measures["cpu"][name])
            print(f"  {op:7} {name:9} {took:34} cpu {cpu}")
    print(f"{kind}, of the medians (in brackets: the least and greatest of the rounds' own):")
    for measure, label in MEASURES.items():
        for op, top, bottom in RATIOS:
            if bottom not in times[op][measure]:
                continue
            mine, theirs = times[op][measure][top], times[op][measure][bottom]
            ratio = statistics.median(mine) / statistics.median(theirs)
            each = [a / b for a, b in zip(mine, theirs, strict=True)]
            least, most = min(each), max(each)
            print(f"  {op}: {top} / {bottom}{label} = {ratio:.3f}   ({least:.3f} .. {most:.3f})")


def run_server(kind: str, args: argparse.Namespace, tree: Path | None) -> None:
    http = requests.Session()
    http.trust_env = False  # loopback only: never through a proxy named in the environment
    with ExitStack() as stack:
        server = stack.enter_context(start(kind))  # type: ignore[arg-type]
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="couchids-bench-")))
        url = server.url
        run = uuid.uuid4().hex[:8]
        db = f"bench_{run}"
        began = time.perf_counter()
        ids = window_ids(args.docs)
        load(http, url, db, docs_of(ids))
        template, staying = expire_ids(args.expire_docs)
        expiring = docs_of(template)
        print(f"{kind}: loaded {len(ids):,} documents in {time.perf_counter() - began:.1f}s")
        print(f"this: {REPO} ({describe(REPO)})")
        trees: dict[str, Path | None] = {"this": REPO}
        if tree is not None:
            where = args.baseline_tree or f"commit {args.baseline_commit}, a temporary worktree"
            print(f"baseline: {where} ({describe(tree)})")
            trees["baseline"] = tree
        else:
            print("baseline: none given (--baseline-tree or --baseline-commit), its rows left out")
        trees["plain"] = None
        workers: dict[str, Worker] = {}
        for name, code in trees.items():
            workers[name] = Worker(name, url, code, tmp)
            stack.callback(workers[name].close)

        start_ms, end_ms = T0, T0 + args.docs * STEP
        before = T0 + args.expire_docs * STEP
        reading = {"db": db, "type": TYPE, "start": start_ms, "end": end_ms, "expect": args.docs}
        reading |= key_range(start_ms, end_ms)
        times: dict[str, Times] = {}

        def same(op: str) -> Callable[[], dict[str, Command]]:
            return lambda: {
                name: {**reading, "op": op, "out": str(tmp / f"{name}.ndjson")} for name in workers
            }

        times["window"] = interleave(workers, args.rounds, same("window"), lambda _: None)
        times["export"] = interleave(workers, args.rounds, same("export"), lambda _: None)

        copies = iter(range(1_000_000))

        def fresh() -> dict[str, Command]:
            commands = {}
            for name in workers:
                copy = f"bench_{run}_expire_{next(copies)}"
                load(http, url, copy, expiring)
                commands[name] = {"op": "expire", "db": copy, "type": TYPE, "before": before}
                commands[name] |= {"expect": args.expire_docs} | key_range(0, before)
            return commands

        def emptied(commands: dict[str, Command]) -> None:
            for command in commands.values():
                left = http.get(f"{url}/{command['db']}").json()["doc_count"]
                if left != staying:
                    raise RuntimeError(f"expire left {left} documents, not {staying}")
                http.delete(f"{url}/{command['db']}").raise_for_status()

        times["expire"] = interleave(workers, args.rounds, fresh, emptied)
        http.delete(f"{url}/{db}").raise_for_status()
    report(kind, args, times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("pouchdb", "couchdb"), default="pouchdb")
    parser.add_argument("--docs", type=int, default=50_000, help="the window and export")
    parser.add_argument("--expire-docs", type=int, default=10_000, help="each expire call")
    parser.add_argument("--rounds", type=int, default=7)
    given = parser.add_mutually_exclusive_group()
    given.add_argument("--baseline-tree", help="a checkout of the couchids to compare with")
    given.add_argument("--baseline-commit", help="a commit to compare with (a worktree is made)")
    args = parser.parse_args(argv)
    with baseline(args) as tree:
        run_server(args.server, args, tree)
    return 0


if __name__ == "__main__":
    sys.exit(main())
