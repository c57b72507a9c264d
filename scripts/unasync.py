#!/usr/bin/env python3
"""Write the blocking handles (``couchids/X.py``) from the asyncio ones (``couchids/aio/X.py``).

Both APIs are one text: each asyncio handle module is written by hand and this script rewrites
it into the blocking one (``async def`` to ``def``, ``await`` dropped, ``async for``/``async
with`` to ``for``/``with``, and the names of the asyncio driver and handles to those of the
blocking ones), the way httpcore's ``scripts/unasync.py`` and psycopg's
``tools/async_to_sync.py`` keep their twins.

    python scripts/unasync.py           write every generated module
    python scripts/unasync.py --check   exit 1 (and say where) when one differs from what the
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
#: The asyncio handle modules: every module of ``couchids/aio/`` but its ``__init__``, each
#: generating ``couchids/<same name>``.
SOURCES: tuple[str, ...] = tuple(
    sorted(p.name for p in (ROOT / "couchids" / "aio").glob("*.py") if p.name != "__init__.py")
)

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
    (r"^from couchids\.aio\.(\w+) import", r"from couchids.\1 import"),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bAsync(Database|Sequence|Series|Replication|Rows)\b", r"\1"),
    (r"\bAsyncClient\b", "CloudantV1"),
]


def generated(source: str, name: str) -> str:
    """The blocking module ``couchids/<name>`` for the asyncio ``source``. The module
    docstring, which speaks of both files, is kept as it is; the result is sorted and
    formatted by ruff, as the source is.
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
        f"# Generated from couchids/aio/{name} by scripts/unasync.py: do not edit by hand;\n"
        "# edit the asyncio source and run `python scripts/unasync.py`.\n"
    )
    return _ruff(head + docstring + text, f"couchids/{name}")


def _ruff(text: str, name: str) -> str:
    """``text`` with its imports sorted and formatted, as ``ruff`` would leave the file."""
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
    stale = 0
    for name in SOURCES:
        source, target = ROOT / "couchids" / "aio" / name, ROOT / "couchids" / name
        want = generated(source.read_text(encoding="utf-8"), name)
        if not args.check:
            target.write_text(want, encoding="utf-8")
            continue
        have = target.read_text(encoding="utf-8") if target.exists() else ""
        if have == want:
            continue
        diff = difflib.unified_diff(
            have.splitlines(keepends=True),
            want.splitlines(keepends=True),
            str(target.relative_to(ROOT)),
            "generated from " + str(source.relative_to(ROOT)),
        )
        sys.stdout.writelines(list(diff)[:60])
        print(
            f"unasync: {target.relative_to(ROOT)} differs from its asyncio source; "
            "run `python scripts/unasync.py` (and edit only the source)"
        )
        stale += 1
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
