#!/usr/bin/env python3
"""Write the blocking handles (``couchids/X.py``) from the asyncio ones (``couchids/aio/X.py``),
and the blocking twins of the operation tests (``tests/_sync/X.py``) from their asyncio sources
(``tests/_async/X.py``).

Both APIs are one text: each asyncio module is written by hand and this script rewrites it into
the blocking one (``async def`` to ``def``, ``await`` dropped, ``async for``/``async with`` to
``for``/``with``, and the names of the asyncio driver and handles to those of the blocking
ones), the way httpcore's ``scripts/unasync.py`` and psycopg's ``tools/async_to_sync.py`` keep
their twins. A substitution that changes nothing in any file fails the run, as httpcore's does:
a rule left over from code that is gone would otherwise wait to rewrite something by surprise.

    python scripts/unasync.py           write every generated module (and remove a generated
                                        one whose source is gone)
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
#: The folders of asyncio sources and of their generated twins: every module of a source folder
#: but its ``__init__`` generates the module of the same name in the twin folder.
FOLDERS: tuple[tuple[str, str], ...] = (
    ("couchids/aio", "couchids"),
    ("tests/_async", "tests/_sync"),
)
#: The first line of every generated module.
GENERATED = "# Generated from {source} by scripts/unasync.py: do not edit by hand;"

#: Whole phrases first (docstrings), then words; each pattern is a regular expression.
SUBS: list[tuple[str, str]] = [
    (r":class:`~couchids\.aio\.AsyncClient`", "``ibmcloudant`` ``CloudantV1`` client"),
    (
        r"^from couchids\.drivers\.aio import AsyncClient$",
        "from ibmcloudant.cloudant_v1 import CloudantV1",
    ),
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
    (r"^from couchids\.aio import", "from couchids import"),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bAsync(Database|Sequence|Series|Replication|Rows)\b", r"\1"),
    (r"\bAsyncClient\b", "CloudantV1"),
    # The tests' fixtures, and their cases run at once (each on its own loop, or in threads).
    (r"\basync_client(\w*)", r"blocking_client\1"),
    (r"\beach_at_once_on_loops\b", "each_at_once"),
]


def sources() -> list[tuple[Path, Path]]:
    """Every (asyncio source, generated twin) pair, as paths."""
    return [
        (path, ROOT / twin / path.name)
        for folder, twin in FOLDERS
        for path in sorted((ROOT / folder).glob("*.py"))
        if path.name != "__init__.py"
    ]


def orphans() -> list[Path]:
    """The generated modules whose source is gone."""
    made = {twin for _, twin in sources()}
    return [
        path
        for _, twin in FOLDERS
        for path in sorted((ROOT / twin).glob("*.py"))
        if path not in made and path.read_text(encoding="utf-8").startswith(GENERATED[:15])
    ]


def generated(source: str, name: str, source_name: str, used: set[int] | None = None) -> str:
    """The blocking module ``name`` for the asyncio ``source``, whose module is
    ``source_name`` (both paths from the project's root). The module docstring, which speaks
    of both files, is kept as it is; the result is sorted and formatted by ruff, as the source
    is. The index in :data:`SUBS` of each substitution that changed something is added to
    ``used``.
    """
    end = source.index('"""', source.index('"""') + 3) + 3 if source.startswith('"""') else 0
    docstring, text = source[:end], source[end:]
    for index, (pattern, replacement) in enumerate(SUBS):
        text, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
        if count and used is not None:
            used.add(index)
    # The blocking client class comes from ibmcloudant, not from the driver module.
    text = text.replace(
        "from couchids.drivers.blocking import (\n    CloudantV1,\n",
        "from ibmcloudant.cloudant_v1 import CloudantV1\n\n"
        "from couchids.drivers.blocking import (\n",
    )
    head = (
        GENERATED.format(source=source_name) + "\n"
        "# edit the asyncio source and run `python scripts/unasync.py`.\n"
    )
    return _ruff(head + docstring + text, name)


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
    used: set[int] = set()
    for source, target in sources():
        name, source_name = str(target.relative_to(ROOT)), str(source.relative_to(ROOT))
        want = generated(source.read_text(encoding="utf-8"), name, source_name, used)
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
    for orphan in orphans():
        if not args.check:
            orphan.unlink()
            continue
        print(f"unasync: {orphan.relative_to(ROOT)} is generated from a source that is gone")
        stale += 1
    unused = [SUBS[index] for index in range(len(SUBS)) if index not in used]
    for pattern, replacement in unused:
        print(
            f"unasync: the substitution {pattern!r} -> {replacement!r} changed nothing in any file"
        )
    if unused:
        print("unasync: remove each substitution no source needs any more")
    return 1 if stale or unused else 0


if __name__ == "__main__":
    sys.exit(main())
