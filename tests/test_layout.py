"""The layout shows the design: the modules under couchids/core/ and couchids/idforms/ do no
I/O. Each is read as source: none imports a network library or the SDK, none under core/ a
thread or event-loop library, and none a module of couchids that does I/O (the drivers, the
handles, the command). tests/test_layers.py checks the import graph as a whole."""

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
#: The packages and modules of couchids that do I/O: the drivers and what is built on them.
IO_MODULES = (
    "couchids.drivers",
    "couchids.aio",
    "couchids.database",
    "couchids.series",
    "couchids.cli",
)
#: What no id module imports: a network library or the SDK.
NETWORK = {"http", "httpx", "ibm_cloud_sdk_core", "ibmcloudant", "requests", "socket", "urllib3"}
CORE = sorted((PACKAGE / "core").glob("*.py"))
IDS = sorted((PACKAGE / "idforms").glob("*.py"))


def imported(path: Path, package: str | None = None) -> set[str]:
    """The modules ``path`` imports, by their full names (relative ones resolved within its
    package, or ``package``)."""
    package = package or "couchids." + ".".join(path.relative_to(PACKAGE).parent.parts)
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rstrip(".").split(".")[: len(package.split(".")) - node.level + 1]
                names.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                names.add(node.module)
    return names


def reaches(names: set[str], modules: set[str] | tuple[str, ...]) -> set[str]:
    """Those of ``names`` that are, or are inside, one of ``modules``."""
    return {n for n in names if any(n == m or n.startswith(m + ".") for m in modules)}


def test_the_core_has_every_operation() -> None:
    assert {p.stem for p in CORE} >= {
        "effects",
        "exactjson",
        "policy",
        "answers",
        "asking",
        "facts",
        "revisions",
        "windows",
        "writes",
        "short",
        "sequence",
        "counting",
        "expiry",
        "exporting",
        "following",
        "rekeying",
        "periods",
        "series",
    }


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.stem)
def test_a_core_module_does_no_io(path: Path) -> None:
    names = imported(path)
    assert not reaches(names, tuple(IO_LIBRARIES)), f"{path.name} imports {names}"
    assert not reaches(names, IO_MODULES), f"{path.name} imports {reaches(names, IO_MODULES)}"
    assert "sleep(" not in path.read_text(encoding="utf-8").replace("Sleep(", "")


@pytest.mark.parametrize("path", IDS, ids=lambda p: p.stem)
def test_an_id_module_does_no_io(path: Path) -> None:
    names = imported(path)
    assert not reaches(names, tuple(NETWORK)), f"{path.name} imports {names}"
    assert not reaches(names, IO_MODULES), f"{path.name} imports {reaches(names, IO_MODULES)}"
    assert not reaches(names, ("couchids.core",)), f"{path.name} reaches up into the core"


def test_the_checks_see_an_import_of_the_network(tmp_path: Path) -> None:
    # The check itself: a module that imports requests, or the blocking driver, is caught.
    bad = tmp_path / "bad.py"
    bad.write_text("import requests\nfrom ..drivers.blocking import run\n", encoding="utf-8")
    names = imported(bad, "couchids.core")
    assert names == {"requests", "couchids.drivers.blocking"}
    assert reaches(names, IO_MODULES) == {"couchids.drivers.blocking"}
    assert reaches(names, tuple(IO_LIBRARIES)) == {"requests"}


#: The most lines of code a function of couchids may have, its docstring aside.
MAX_FUNCTION_LINES = 80
SOURCES = sorted(PACKAGE.rglob("*.py"))


def long_functions(path: Path) -> list[str]:
    """The functions (methods and nested ones too) of ``path`` over
    :data:`MAX_FUNCTION_LINES`, with their lengths: from the first statement after the
    docstring to the end of the last."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            if not body:
                continue
            lines = (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found.append(f"{node.name} has {lines} lines")
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_is_over_80_lines(path: Path) -> None:
    """Hand-written or generated (the blocking handles), no function of couchids has more than
    80 lines of code: a longer one is split where its steps are."""
    assert long_functions(path) == [], path.relative_to(PACKAGE)


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    long = tmp_path / "long.py"
    body = "".join(f"    x{n} = {n}\n" for n in range(81))
    long.write_text(f'def f():\n    """Doc\n\n    string."""\n{body}\ndef g():\n{body[:-13]}\n')
    assert long_functions(long) == ["f has 81 lines"]
