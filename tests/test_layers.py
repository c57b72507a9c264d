"""The import graph of couchids, read from the source: no module imports one of a higher
layer, and no import circle. Every import counts, those under ``if TYPE_CHECKING:`` too: a
circle only for annotations still ties two modules that cannot be read, tested or moved apart,
and a type a lower layer needs belongs where it can reach it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "couchids"
#: The layers, lowest first: a module may import its own layer's modules and lower ones.
LAYERS: list[tuple[str, ...]] = [
    ("couchids.errors",),
    ("couchids.idforms",),
    ("couchids.core",),
    ("couchids.drivers",),
    (
        "couchids.database",
        "couchids.replication",
        "couchids.series",
        "couchids.aio",
    ),
    ("couchids.cli", "couchids.__main__", "couchids"),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    best, found = -1, len(LAYERS)
    for number, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), number
    return found


def imports(module: str) -> set[str]:
    """The couchids modules ``module`` imports, at any depth of its code, whether it runs
    them or only a type checker reads them (under ``if TYPE_CHECKING:``)."""
    return imports_in(MODULES[module], module)


def imports_in(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "couchids"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "couchids":
                continue
            for alias in node.names:
                # ``from couchids.core import windows`` imports the module couchids.core.windows.
                child = f"{target}.{alias.name}"
                found.add(child if child in MODULES else target)
    return {name for name in found if name in MODULES and name != module}


GRAPH = {module: imports(module) for module in MODULES}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_higher_layer(module: str) -> None:
    upward = sorted(m for m in GRAPH[module] if layer(m) > layer(module))
    assert not upward, f"{module} (layer {layer(module)}) imports {upward}"


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one
    module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, set()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def test_there_is_no_import_circle() -> None:
    assert circles(GRAPH) == []


def test_the_checks_see_an_upward_import_and_a_circle(tmp_path: Path) -> None:
    # The checks themselves: a circle in a made-up graph, an import that runs up, an import
    # under TYPE_CHECKING that counts, and the graph of the real package has edges.
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    assert layer("couchids.idforms.kuuid") < layer("couchids.core.effects")
    assert layer("couchids.core.effects") < layer("couchids.drivers.blocking")
    assert layer("couchids.drivers.aio") < layer("couchids.aio.database") < layer("couchids")
    assert layer("couchids.core.series") < layer("couchids.series") < layer("couchids.cli.main")
    assert "couchids.core.effects" in GRAPH["couchids.core.windows"]
    typed = tmp_path / "typed.py"
    typed.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from couchids.core.windows import Window\n"
        "    from couchids import database\n"
    )
    assert imports_in(typed, "couchids.errors") == {"couchids.core.windows", "couchids.database"}
    assert sum(map(len, GRAPH.values())) > 100
