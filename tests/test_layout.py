"""The layout shows the design: the modules under couchids/core/ (and the pure id modules) do no
I/O. Each is read as source: none imports a network, thread or event-loop library, nor a
module of couchids that does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "couchids"
#: Libraries that send requests, start threads or run an event loop.
IO_LIBRARIES = {
    "asyncio",
    "concurrent",
    "http",
    "httpx",
    "ibm_cloud_sdk_core",
    "ibmcloudant",
    "requests",
    "socket",
    "threading",
    "urllib3",
}
#: The modules of couchids that do I/O: the two drivers and what is built on them.
IO_MODULES = {
    "server",
    "aio",
    "database",
    "deprecated",
    "connecting",
    "cli",
    "cli_lifecycle",
}
CORE = sorted((PACKAGE / "core").glob("*.py"))


def imported(path: Path) -> set[str]:
    """The top-level names of the modules ``path`` imports (relative ones as ``.name``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
            elif node.level == 2 and node.module:
                names.add("." + node.module.split(".")[0])
    return names


def test_the_core_has_every_operation() -> None:
    assert {p.stem for p in CORE} >= {
        "protocol",
        "windows",
        "writes",
        "short",
        "sequence",
        "counting",
        "expiry",
        "exporting",
        "following",
        "rekeying",
    }


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.stem)
def test_a_core_module_does_no_io(path: Path) -> None:
    names = imported(path)
    assert not names & IO_LIBRARIES, f"{path.name} imports {names & IO_LIBRARIES}"
    reached = {name.lstrip(".") for name in names if name.startswith(".")}
    assert not reached & IO_MODULES, f"{path.name} imports couchids.{reached & IO_MODULES}"
    assert "sleep(" not in path.read_text(encoding="utf-8").replace("Sleep(", "")


def test_the_checks_see_an_import_of_the_network(tmp_path: Path) -> None:
    # The check itself: a module that imports requests, or the blocking driver, is caught.
    bad = tmp_path / "bad.py"
    bad.write_text("import requests\nfrom ..server import run\n", encoding="utf-8")
    assert imported(bad) == {"requests", ".server"}
