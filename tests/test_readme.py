"""Every ``python`` block of README.md runs in order, in one namespace, on the local server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
    assert python == python_blocks()[0], "it runs first, in test_readme_examples_run"
    assert len((console + python).strip().splitlines()) <= 10
    for step in ("couchids.Database(", ".create(", ".latest("):
        assert step in python


def test_readme_examples_run(couch_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    namespace: dict[str, object] = {"__name__": "readme"}
    try:
        for number, block in enumerate(python_blocks(), 1):
            code = compile(block, f"README.md python block {number}", "exec")
            exec(code, namespace)
    finally:
        client = namespace.get("client")
        if client is not None:
            for db in ("quickstart", "shop"):
                client.delete_database(db=db)  # type: ignore[attr-defined]
