#!/usr/bin/env python3
"""Write couchids/database.py, the blocking API, from couchids/aio/database.py, the asyncio one.

Both APIs are one text: the asyncio handle is written by hand and this script rewrites it into
the blocking one (``async def`` to ``def``, ``await`` dropped, ``async for``/``async with`` to
``for``/``with``, and the names of the asyncio driver to those of the blocking one), the way
httpcore's ``scripts/unasync.py`` and psycopg's ``tools/async_to_sync.py`` keep their twins.

    python scripts/unasync.py           write couchids/database.py
    python scripts/unasync.py --check   exit 1 (and say where) when it differs from what the
                                        script would write
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "couchids" / "aio" / "database.py"
TARGET = ROOT / "couchids" / "database.py"

#: Whole phrases first (docstrings), then words; each pattern is a regular expression.
SUBS: list[tuple[str, str]] = [
    (r":class:`~couchids\.aio\.AsyncClient`", "``ibmcloudant`` ``CloudantV1`` client"),
    (r"^from couchids\.drivers\.aio import", "from couchids.drivers.blocking import"),
    (r"^import asyncio$", "import threading"),
    (r"\basyncio\.Lock\b", "threading.Lock"),
    (r"^from contextlib import aclosing$", "from contextlib import closing"),
    (r"\baclosing\b", "closing"),
    (r"\basync def\b", "def"),
    (r"\basync for\b", "for"),
    (r"\basync with\b", "with"),
    (r"\bawait ", ""),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bAsyncRows\b", "Rows"),
    (r"\bAsyncDatabase\b", "Database"),
    (r"\bAsyncSequence\b", "Sequence"),
    (r"\bAsyncClient\b", "CloudantV1"),
]


def generated(source: str) -> str:
    """The blocking module for the asyncio ``source``. The module docstring, which speaks of
    both files, is kept as it is; the result is sorted and formatted by ruff, as the source is.
    """
    end = source.index('"""', source.index('"""') + 3) + 3
    docstring, text = source[:end], source[end:]
    for pattern, replacement in SUBS:
        text = re.sub(pattern, replacement, text, flags=re.MULTILINE)
    # The blocking client class comes from ibmcloudant, not from the driver module.
    text = text.replace(
        "from couchids.drivers.blocking import (\n    CloudantV1,\n",
        "from ibmcloudant.cloudant_v1 import CloudantV1\n\n"
        "from couchids.drivers.blocking import (\n",
    )
    head = (
        "# Generated from couchids/aio/database.py by scripts/unasync.py: do not edit by hand;\n"
        "# edit the asyncio source and run `python scripts/unasync.py`.\n"
    )
    return _ruff(head + docstring + text)


def _ruff(text: str) -> str:
    """``text`` with its imports sorted and formatted, as ``ruff`` would leave the file."""
    name = str(TARGET.relative_to(ROOT))
    ruff = [sys.executable, "-m", "ruff"]
    fixed = subprocess.run(
        [*ruff, "check", "--fix", "--select", "I,F401", "--stdin-filename", name, "-"],
        input=text,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return subprocess.run(
        [*ruff, "format", "--stdin-filename", name, "-"],
        input=fixed,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the file is stale")
    args = parser.parse_args()
    want = generated(SOURCE.read_text(encoding="utf-8"))
    if not args.check:
        TARGET.write_text(want, encoding="utf-8")
        return 0
    have = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    if have == want:
        return 0
    diff = difflib.unified_diff(
        have.splitlines(keepends=True),
        want.splitlines(keepends=True),
        str(TARGET.relative_to(ROOT)),
        "generated from " + str(SOURCE.relative_to(ROOT)),
    )
    sys.stdout.writelines(list(diff)[:60])
    print(
        f"unasync: {TARGET.relative_to(ROOT)} differs from its asyncio source; "
        "run `python scripts/unasync.py` (and edit only the source)"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
