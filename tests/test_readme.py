"""The README's shape: a quickstart of ten lines at the top, and examples (which run in order,
in one namespace, on the local server, in tests/test_examples.py)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def python_blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def test_readme_has_examples() -> None:
    assert len(python_blocks()) >= 8


def test_the_quickstart_is_ten_lines_at_the_top() -> None:
    text = README.read_text(encoding="utf-8")
    first_section = text.split("\n## ", 2)[1]
    assert first_section.startswith("Quickstart\n")
    console, python = re.findall(r"^```\w+\n(.*?)^```", first_section, re.DOTALL | re.MULTILINE)
    assert "pip install" in console
    assert python == python_blocks()[0], "it runs first, in tests/test_examples.py"
    assert len((console + python).strip().splitlines()) <= 10
    for step in ("couchids.Database(", ".create(", ".latest("):
        assert step in python
