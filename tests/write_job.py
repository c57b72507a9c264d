"""A write job for the resume tests, run as its own process (so that it can be killed).

    python tests/write_job.py URL DB COUNT [--memory FUNCTION]

Stores COUNT settlement documents, made by a generator as they are read, with
``bulk_create_iter``, each under the id of its idempotency key and its own time, and prints one
line per result as its batch completes: ``<id> <new|duplicate|error>``. With ``--memory`` it
stores them with FUNCTION instead (``bulk_create_iter``, or ``bulk_create``, which holds every
result until it returns the list) and prints only the number stored and the peak resident
memory of the call above the process's peak just before it, in KiB.

The peak is the process's own (``VmHWM``): ``ru_maxrss`` of a process started by another also
counts the parent's resident memory at the fork (Linux carries it over the exec), so under
pytest it started at pytest's size and hid any growth below that.
"""

from __future__ import annotations

import resource
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from faultproxy import client_for

import couchids

START_MS = 1_714_564_800_000  # 2024-05-01T12:00:00Z
#: The methods of :class:`couchids.Database` ``--memory`` can measure.
WRITERS = ("bulk_create_iter", "bulk_create")


def hands(count: int) -> Iterator[dict[str, Any]]:
    """The job's input, made as it is read: the same documents on every run."""
    for n in range(count):
        yield {
            "table": n % 7,
            "hand": n,
            "at": START_MS + n * 250,
            "won": n % 100,
            "player": f"player-{n:08d}@example.invalid",
        }


def peak_kib() -> int:
    """The peak resident memory of this process since it started, in KiB."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    # No /proc (not Linux): ru_maxrss, in KiB on Linux and in bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


def main() -> int:
    url, db, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    client = client_for(url)
    options: dict[str, Any] = {
        "type": "settlement",
        "form": couchids.KUUID_MS,
        "key_of": lambda doc: f"settle:table-{doc['table']}:hand-{doc['hand']}",
        "time_of": lambda doc: doc["at"],
    }
    if "--memory" in sys.argv:
        name = sys.argv[sys.argv.index("--memory") + 1]
        assert name in WRITERS, name
        handle = couchids.Database(client, db)
        handle.bulk_create(hands(1000), **options)  # warm up the client
        before = peak_kib()
        stored = sum(r.ok for r in getattr(handle, name)(hands(count), **options))
        peak = peak_kib()
        print(stored, peak - before, flush=True)
        return 0
    out = sys.stdout
    for result in couchids.Database(client, db).bulk_create_iter(hands(count), **options):
        state = "error" if result.error else "duplicate" if result.duplicate else "new"
        out.write(f"{result.id} {state}\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
