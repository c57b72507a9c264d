"""How fast couchids makes ids, against uuid4 and against kuuid itself in Node.

Prints nanoseconds per id for ``couchids.id()``, ``couchids.v7s()``, each form's ``new()``,
``uuid.uuid4().hex`` and kuuid's ``id()`` (timed inside Node by ``node/kuuid-bridge.js
--bench``), then the ratios the project aims for. The functions are timed in alternating
rounds, so background load on a shared machine skews every function alike; each ratio is
given for the fastest round of each function and for the median round, and meets its target
only if both do. It is a report, not a test: it always exits 0.

Run from the repository root::

    .venv/bin/python bench/bench_ids.py [--rounds 5] [--number 200000] [--node-calls 300000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import timeit
import uuid
from collections.abc import Callable
from pathlib import Path

import couchids

REPO = Path(__file__).resolve().parents[1]
BRIDGE = REPO / "node" / "kuuid-bridge.js"

#: Each form's generator (``form.new``), beside kuuid's and uuid4.
NEW_FORMS = {
    "TID62.new()": couchids.TID62,
    "BASE36_V7.new()": couchids.BASE36_V7,
    "ULID.new()": couchids.ULID,
    "UTC_RANDOM.new()": couchids.UTC_RANDOM,
    "UUID464.new()": couchids.UUID464,
}
PYTHON_FUNCTIONS: dict[str, Callable[[], str]] = {
    "couchids.id()": couchids.id,
    "couchids.v7s()": couchids.v7s,
    **{name: form.new for name, form in NEW_FORMS.items()},
    "uuid.uuid4().hex": lambda: uuid.uuid4().hex,
}
KUUID = "kuuid id() in Node"

# (numerator, denominator, target, whether lower is better)
TARGETS = [
    ("couchids.id()", "uuid.uuid4().hex", 0.6, True),
    (KUUID, "couchids.id()", 8.0, False),
    ("couchids.v7s()", "uuid.uuid4().hex", 1.0, True),
    *((name, "uuid.uuid4().hex", 1.0, True) for name in NEW_FORMS),
]


def python_ns(fn: Callable[[], str], number: int) -> float:
    """Nanoseconds per call of ``fn`` over ``number`` calls."""
    return timeit.timeit(fn, number=number) / number * 1e9


def node_ns(node: str, calls: int) -> float:
    """Nanoseconds per ``kuuid.id()``, timed by the bridge inside Node."""
    done = subprocess.run(
        [node, str(BRIDGE), "--bench", str(calls)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return float(json.loads(done.stdout)["ns_per_id"])


def main(argv: list[str] | None = None) -> int:
    """Time every function, print the table and the ratios; always returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--number", type=int, default=200_000, help="Python calls per timing")
    parser.add_argument("--node-calls", type=int, default=300_000, help="kuuid calls per timing")
    args = parser.parse_args(argv)

    node = shutil.which("node")
    if node is None or not BRIDGE.is_file():
        print("node or node/kuuid-bridge.js not found: kuuid is left out", file=sys.stderr)

    for fn in PYTHON_FUNCTIONS.values():  # warm up: fill the random pools and caches
        python_ns(fn, args.number // 10)

    rounds: dict[str, list[float]] = {}
    for round_number in range(args.rounds):
        names = list(PYTHON_FUNCTIONS)
        if round_number % 2:
            names.reverse()  # alternate the order so no function always runs first
        for name in names:
            rounds.setdefault(name, []).append(python_ns(PYTHON_FUNCTIONS[name], args.number))
        if node is not None and BRIDGE.is_file():
            rounds.setdefault(KUUID, []).append(node_ns(node, args.node_calls))
    best = {name: min(times) for name, times in rounds.items()}
    median = {name: statistics.median(times) for name, times in rounds.items()}

    print(f"{args.rounds} rounds, nanoseconds per id (Python {sys.version.split()[0]})")
    print(f"  {'':<22} {'best':>10} {'median':>10}")
    for name in rounds:
        print(f"  {name:<22} {best[name]:10.0f} {median[name]:10.0f}")
    print("ratios (best, median)")
    for top, bottom, target, lower_is_better in TARGETS:
        if top not in rounds or bottom not in rounds:
            print(f"  {top} / {bottom}: not measured")
            continue
        ratios = (best[top] / best[bottom], median[top] / median[bottom])
        if lower_is_better:
            met = all(ratio <= target for ratio in ratios)
        else:
            met = all(ratio >= target for ratio in ratios)
        sign = "<=" if lower_is_better else ">="
        verdict = "PASS" if met else "MISS"
        print(
            f"  {top} / {bottom} = {ratios[0]:5.2f} {ratios[1]:5.2f}   "
            f"target {sign} {target:g}   {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
