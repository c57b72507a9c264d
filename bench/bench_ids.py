"""How fast couchids makes and reads ids, against uuid and against kuuid itself in Node.

Prints nanoseconds per id for ``couchids.id()``, ``couchids.kuuid.v7s()``, each form's ``new()``,
``uuid.uuid4().hex`` and kuuid's ``id()`` (timed inside Node by ``node/kuuid-bridge.js
--bench``); and per call of ``couchids.decode()`` without ``form=`` (a kuuid id, a v7s id,
and strings it refuses) beside ``uuid.UUID()`` reading a UUID's text; then the ratios the
project aims for. The functions are timed in alternating rounds, so background load on a
shared machine skews every function alike; each ratio is given for the fastest round of each
function and for the median round, and meets its target only if both do. The decode() calls
take from one to twenty times as long as uuid.UUID(): each of those functions is timed for
the same stretch of time (``--decode-seconds``, its calls counted at the warm-up) rather than
the same number of calls, so that load that comes and goes falls on each alike. It is a
report, not a test: it always exits 0.

Run from the repository root::

    .venv/bin/python bench/bench_ids.py [--rounds 5] [--number 200000] [--node-calls 300000]
        [--decode-seconds 0.1]
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
from functools import partial
from pathlib import Path

import couchids
from couchids import kuuid

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
    "kuuid.v7s()": kuuid.v7s,
    **{name: form.new for name, form in NEW_FORMS.items()},
    "uuid.uuid4().hex": lambda: uuid.uuid4().hex,
}
KUUID = "kuuid id() in Node"

UUID_TEXT = str(uuid.uuid4())
#: Strings decode() refuses: not an id at all; 32 hex digits of a UUID version 4 (the length
#: of a kuuid, v7s and utc_random id, and read as none: the message says why for each);
#: a type before a body of no form's length.
REFUSED = {
    "decode(refused: text)": "not-an-id!",
    "decode(refused: 32 hex)": uuid.UUID("1b4e28ba-2fa1-41d2-883f-0016d3cca427").hex,
    "decode(refused: typed)": "user:hello world",
}


def refusal(text: str) -> Callable[[], object]:
    """A call of ``decode(text)``, which must refuse ``text``."""

    def call() -> None:
        try:
            couchids.decode(text)
        except couchids.InvalidIdError:
            return
        raise AssertionError(f"decode read {text!r}, which the bench takes for refused")

    return call


#: decode() without form=, beside uuid.UUID() reading the 36 characters of a UUID.
DECODE_FUNCTIONS: dict[str, Callable[[], object]] = {
    "decode(kuuid)": partial(couchids.decode, couchids.id()),
    "decode(typed kuuid)": partial(couchids.decode, "order:" + couchids.id()),
    "decode(v7s)": partial(couchids.decode, kuuid.v7s()),
    **{name: refusal(text) for name, text in REFUSED.items()},
    "uuid.UUID(text)": partial(uuid.UUID, UUID_TEXT),
}

# (numerator, denominator, target, whether lower is better)
TARGETS = [
    ("couchids.id()", "uuid.uuid4().hex", 0.6, True),
    (KUUID, "couchids.id()", 8.0, False),
    ("kuuid.v7s()", "uuid.uuid4().hex", 1.0, True),
    *((name, "uuid.uuid4().hex", 1.0, True) for name in NEW_FORMS),
    ("decode(kuuid)", "uuid.UUID(text)", 4.0, True),
    ("decode(typed kuuid)", "uuid.UUID(text)", 4.0, True),
    ("decode(v7s)", "uuid.UUID(text)", 4.0, True),
    *((name, "uuid.UUID(text)", 15.0, True) for name in REFUSED),
]


def python_ns(fn: Callable[[], object], number: int) -> float:
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
    parser.add_argument(
        "--decode-seconds",
        type=float,
        default=0.1,
        help="how long each timing of decode() and uuid.UUID() lasts (default 0.1)",
    )
    args = parser.parse_args(argv)

    node = shutil.which("node")
    if node is None or not BRIDGE.is_file():
        print("node or node/kuuid-bridge.js not found: kuuid is left out", file=sys.stderr)

    timed = [(name, fn, args.number) for name, fn in PYTHON_FUNCTIONS.items()]
    for _, fn, number in timed:  # warm up: fill the random pools and caches
        python_ns(fn, number // 10)
    for name, fn in DECODE_FUNCTIONS.items():  # warm up, and count the calls of a timing
        ns = min(python_ns(fn, 2_000) for _ in range(3))
        timed.append((name, fn, max(1_000, round(args.decode_seconds * 1e9 / ns))))

    rounds: dict[str, list[float]] = {}
    for round_number in range(args.rounds):
        # Alternate the order so no function always runs first.
        for name, fn, number in reversed(timed) if round_number % 2 else timed:
            rounds.setdefault(name, []).append(python_ns(fn, number))
        if node is not None and BRIDGE.is_file():
            rounds.setdefault(KUUID, []).append(node_ns(node, args.node_calls))
    best = {name: min(times) for name, times in rounds.items()}
    median = {name: statistics.median(times) for name, times in rounds.items()}

    print(f"{args.rounds} rounds, nanoseconds per call (Python {sys.version.split()[0]})")
    print(f"  {'':<24} {'best':>10} {'median':>10}")
    for name in rounds:
        print(f"  {name:<24} {best[name]:10.0f} {median[name]:10.0f}")
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
