"""Every benchmark, on PouchDB Server and (with ``COUCHIDS_COUCHDB`` set) Apache CouchDB, with one
table of their ratios at the end.

    COUCHIDS_COUCHDB=/path/to/launcher .venv/bin/python bench/all.py [--quick]
        [--baseline-commit SHA]

Each bench runs as its own process (its output is shown as it runs); every line it prints
with a ratio in it is gathered into the closing table, by bench and server. ``--quick`` runs
smaller sizes (a check that everything runs, not numbers to quote). ``--baseline-commit``
passes on to the benches that compare this tree's couchids with another commit's (without it
they leave those rows out). Always exits 0: the numbers are for a reader, and no timing is a
test.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Each bench, its arguments per size, and whether it takes ``--server``.
BENCHES: list[tuple[str, list[str], list[str], bool]] = [
    ("bench_ids.py", [], ["--rounds", "2", "--number", "20000", "--node-calls", "20000"], False),
    ("bench_query.py", [], ["--docs", "5000", "--docs-delayed", "10000", "--rounds", "2"], True),
    ("bench_bulk.py", [], ["--docs", "5000", "--rounds", "3"], True),
    (
        "bench_bulk.py",
        ["--delay-ms", "20"],
        ["--docs", "2000", "--rounds", "3", "--delay-ms", "20"],
        True,
    ),
    ("bench_count.py", [], ["--docs", "10000", "--repeat", "3"], True),
    ("bench_aio.py", [], ["--docs", "5000", "--repeat", "3"], True),
    ("bench_follow.py", [], ["--writes", "5", "--idle", "5"], True),
    (
        "bench_lifecycle.py",
        ["--docs", "20000", "--expire-docs", "5000", "--rounds", "5"],
        ["--docs", "2000", "--expire-docs", "500", "--rounds", "1"],
        True,
    ),
    (
        "bench_series.py",
        ["--per-month", "1000", "--rounds", "5", "--window-per-month", "5000"],
        [
            "--per-month",
            "100",
            "--rounds",
            "1",
            "--window-per-month",
            "300",
            "--window-rounds",
            "1",
        ],
        True,
    ),
]
#: The benches that compare with another commit's couchids, given ``--baseline-commit``.
TAKE_BASELINE = {"bench_lifecycle.py"}
RATIO = re.compile(r"ratio|\bx\d|/ .*(=|\d\.\d{3}$)|\d\.\d+x|cores busy", re.IGNORECASE)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument(
        "--baseline-commit",
        metavar="SHA",
        help="bench_lifecycle.py also times this commit's couchids (else no baseline rows)",
    )
    args = parser.parse_args()
    servers = ["pouchdb"] + (["couchdb"] if os.environ.get("COUCHIDS_COUCHDB") else [])
    table: list[tuple[str, str, str]] = []
    for script, full, quick, per_server in BENCHES:
        for server in servers if per_server else ["-"]:
            command = [sys.executable, str(HERE / script), *(quick if args.quick else full)]
            if per_server:
                command += ["--server", server]
            if args.baseline_commit and script in TAKE_BASELINE:
                command += ["--baseline-commit", args.baseline_commit]
            print(f"\n### {script} {server}", flush=True)
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            sys.stdout.write(done.stdout)
            if done.returncode:
                sys.stdout.write(done.stderr[-2000:])
                table.append((script, server, f"FAILED (exit {done.returncode})"))
            table += [
                (script, server, line.strip())
                for line in done.stdout.splitlines()
                if RATIO.search(line)
            ]
    print("\n## ratios")
    width = max(len(script) for script, _, _ in table) if table else 10
    for script, server, line in table:
        print(f"{script:<{width}}  {server:<8}  {line}")


if __name__ == "__main__":
    main()
