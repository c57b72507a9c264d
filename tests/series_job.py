"""A writer of a series, run as its own process by tests/test_series.py to race others.

    python tests/series_job.py URL PREFIX EVERY prepare AHEAD AT
    python tests/series_job.py URL PREFIX EVERY write COUNT FIRST_MS STEP_MS AT

Waits until the wall clock reads AT (epoch seconds, a float), so that every process of a race
starts its requests together, then either prepares the series (``prepare(AHEAD)``) and prints
the names as one JSON line, or writes COUNT documents (``{"job": PID, "n": i}``) whose times
are FIRST_MS + i * STEP_MS, alternately one by one (``create``) and in batches of five
(``bulk_create``), and prints one JSON line with the ids stored.
"""

from __future__ import annotations

import json
import os
import sys
import time

from faultproxy import client_for

import couchids


def main(argv: list[str]) -> None:
    url, prefix, every, mode, *rest = argv
    series = couchids.Series(client_for(url), prefix, every=every)  # type: ignore[arg-type]
    at = float(rest[-1])
    time.sleep(max(0.0, at - time.time()))
    if mode == "prepare":
        print(json.dumps(series.prepare(int(rest[0]))), flush=True)
        return
    count, first, step = (int(value) for value in rest[:3])
    docs = [{"job": os.getpid(), "n": n, "at": first + n * step} for n in range(count)]
    ids: list[str] = []
    for start in range(0, count, 10):
        single, batch = docs[start : start + 5], docs[start + 5 : start + 10]
        ids += [series.create(doc, type="w", timestamp=doc["at"]).id for doc in single]
        written = series.bulk_create(batch, type="w", time_of=lambda doc: doc["at"])
        ids += [result.id for result in written]
    print(json.dumps(ids), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
