"""The worker of bench/bench_lifecycle.py: one interpreter that times one way of reading a
window, exporting it and expiring documents, on commands read from its standard input.

    PYTHONPATH=TREE python bench/lifecycle_worker.py URL couchids   # TREE's couchids
    python bench/lifecycle_worker.py URL plain                      # requests alone

Each line in is a JSON command (``op``, ``db`` and the op's arguments, ``expect``: the count
a right answer has); each line out is ``{"seconds": ..., "cpu": ..., "count": ...,
"first": ..., "last": ...}``: the time spent inside this process on the call alone (no
interpreter start, no checks), the CPU time this process used meanwhile (all its threads; the
client's own work, which the server's pace and a busy machine sway far less), and what it
found. A wrong count ends the worker with an error, so a broken tree
cannot look fast. The first line out names the couchids it imported.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

#: Documents per ``_bulk_docs`` delete request of the plain expire (couchids' default too).
PLAIN_BATCH = 500
Answer = tuple[int, str, str]


def ends(docs: list[dict[str, Any]]) -> Answer:
    """How many documents, and the first and last id."""
    return len(docs), docs[0]["_id"] if docs else "", docs[-1]["_id"] if docs else ""


def session() -> requests.Session:
    """A ``requests`` session that never goes through a proxy named in the environment."""
    made = requests.Session()
    made.trust_env = False
    return made


def couchids_way(url: str) -> tuple[str, Callable[[dict[str, Any]], Answer]]:
    """The couchids calls, with the couchids found first on ``sys.path``."""
    from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
    from ibmcloudant.cloudant_v1 import CloudantV1

    import couchids

    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url(url)
    client.set_http_config({"proxies": {"http": None, "https": None}})

    def run(command: dict[str, Any]) -> Answer:
        op, db, doc_type = command["op"], command["db"], command["type"]
        if op == "window":
            docs = list(
                couchids.Database(client, db).window(
                    command["start"], command["end"], type=doc_type
                )
            )
            return ends(docs)
        if op == "export":
            with open(command["out"], "w", encoding="utf-8") as out:
                mark = couchids.Database(client, db).export(
                    command["start"], command["end"], out=out, type=doc_type
                )
            return mark.done, "", mark.last_id or ""
        if op == "expire":
            report = couchids.Database(client, db).expire(
                command["before"], type=doc_type, dry_run=False
            )
            if report.conflicts or report.failed or report.gone:
                raise RuntimeError(f"expire: {report}")
            return report.deleted, "", ""
        raise ValueError(f"unknown op {op!r}")

    return str(Path(couchids.__file__).resolve().parent), run


def plain_way(url: str) -> tuple[str, Callable[[dict[str, Any]], Answer]]:
    """What a user writes without couchids: one ``_all_docs`` request over the key range."""
    http = session()

    def rows(
        db: str, command: dict[str, Any], *, descending: bool = False, **query: Any
    ) -> list[dict[str, Any]]:
        low, high = command["start_key"], command["end_key"]
        body = (
            {"start_key": high, "end_key": low}
            if descending
            else {"start_key": low, "end_key": high}
        )
        body |= {"descending": descending, **query}
        answer = http.post(f"{url}/{db}/_all_docs", json=body)
        answer.raise_for_status()
        found: list[dict[str, Any]] = answer.json()["rows"]
        return found

    def run(command: dict[str, Any]) -> Answer:
        op, db = command["op"], command["db"]
        if op == "window":
            docs = [row["doc"] for row in rows(db, command, include_docs=True, descending=True)]
            return ends(docs)
        if op == "export":
            written, last = 0, ""
            with open(command["out"], "w", encoding="utf-8") as out:
                for row in rows(db, command, include_docs=True):
                    out.write(json.dumps(row["doc"]) + "\n")
                    written, last = written + 1, row["id"]
            return written, "", last
        if op == "expire":
            deleted, found = 0, rows(db, command)
            for first in range(0, len(found), PLAIN_BATCH):
                docs = [
                    {"_id": row["id"], "_rev": row["value"]["rev"], "_deleted": True}
                    for row in found[first : first + PLAIN_BATCH]
                ]
                answer = http.post(f"{url}/{db}/_bulk_docs", json={"docs": docs})
                answer.raise_for_status()
                deleted += sum(1 for result in answer.json() if result.get("ok"))
            return deleted, "", ""
        raise ValueError(f"unknown op {op!r}")

    return "", run


def main() -> None:
    url, way = sys.argv[1], sys.argv[2]
    where, run = couchids_way(url) if way == "couchids" else plain_way(url)
    print(json.dumps({"couchids": where}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        gc.collect()
        began, cpu = time.perf_counter(), time.process_time()
        count, first, last = run(command)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        if count != command["expect"]:
            raise SystemExit(f"{way} {command['op']}: {count} documents, not {command['expect']}")
        if command["op"] == "export":
            with open(command["out"], "rb") as written:
                lines = sum(1 for _line in written)
            if lines != count:
                raise SystemExit(f"{way} export: {lines} lines written, not {count}")
        answer = {"seconds": seconds, "cpu": cpu, "count": count, "first": first, "last": last}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
