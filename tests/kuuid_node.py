"""Ask the real kuuid package (Node, node/kuuid-bridge.js) for answers to compare against.

The bridge is documented at the top of node/kuuid-bridge.js; this wraps its three modes.
Tests get an instance from the ``kuuid_node`` fixture in conftest.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BRIDGE = REPO / "node" / "kuuid-bridge.js"
KUUID_PACKAGE = REPO / "node" / "node_modules" / "kuuid" / "package.json"

Timestamp = int | str
"""Epoch milliseconds or an ISO-8601 string, passed to kuuid unchanged (0 means "now" there)."""


class KuuidNode:
    """Runs node/kuuid-bridge.js; every call is one short Node process."""

    def __init__(self) -> None:
        node = shutil.which("node")
        if node is None or not KUUID_PACKAGE.is_file():
            raise RuntimeError(
                "the kuuid package is not installed (node or node/node_modules/kuuid missing); "
                "run scripts/bootstrap"
            )
        self.node = node

    def cross_check(self, timestamps: list[Timestamp], random_samples: int = 0) -> dict[str, Any]:
        """Prefixes and ids in every kuuid mode for each timestamp, plus random samples.

        Returns ``{"cases": [...], "rand": [...], "ids_now": [...]}`` as the bridge prints it.
        """
        request = {"timestamps": timestamps, "random_samples": random_samples}
        result: dict[str, Any] = self._run([], request)
        return result

    def make(self, calls: list[tuple[str, int]]) -> list[str]:
        """Ids made by kuuid, one per ``(function name, epoch ms)``, e.g. ``("idr", 86400000)``."""
        request = {"calls": [{"fn": fn, "timestamp": ms} for fn, ms in calls]}
        ids: list[str] = self._run(["--make"], request)
        return ids

    def exports(self) -> list[str]:
        """The names the installed kuuid package exports (``Object.keys(require('kuuid'))``)."""
        completed = subprocess.run(
            [self.node, "-e", "console.log(JSON.stringify(Object.keys(require('kuuid'))))"],
            cwd=BRIDGE.parent,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        names: list[str] = json.loads(completed.stdout)
        return names

    def ns_per_id(self, n: int) -> float:
        """Nanoseconds per ``kuuid.id()`` call, timed in Node over ``n`` calls after a warm-up."""
        return float(self._run(["--bench", str(n)], None)["ns_per_id"])

    def _run(self, args: list[str], request: object) -> Any:
        completed = subprocess.run(
            [self.node, str(BRIDGE), *args],
            input="" if request is None else json.dumps(request),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(
                f"kuuid-bridge.js {' '.join(args)} failed ({completed.returncode}): "
                f"{completed.stderr.strip()}"
            )
        return json.loads(completed.stdout)
