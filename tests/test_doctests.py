"""The examples in couchids' docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import couchids


def _raise(name: str) -> None:
    # walk_packages would pass over a subpackage that fails to import, and its modules with it.
    raise ImportError(f"cannot import {name} to look for its modules")


#: couchids and every module in it, subpackages' too; ``__main__`` runs the command when imported.
MODULES = sorted(
    [
        "couchids",
        *(
            info.name
            for info in pkgutil.walk_packages(couchids.__path__, prefix="couchids.", onerror=_raise)
            if info.name != "couchids.__main__"
        ),
    ]
)


def test_every_module_is_collected() -> None:
    assert {
        "couchids.idforms.kuuid",
        "couchids.idforms.v7",
        "couchids.idforms.decode",
        "couchids.idforms.forms",
    } <= set(MODULES)
    assert "couchids.core.effects" in MODULES
    # Each source file, however deep, is a module whose examples run.
    root = Path(couchids.__file__).parent
    expected = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(("couchids", *parts))
        if name != "couchids.__main__":
            expected.add(name)
    missing = sorted(expected - set(MODULES))
    assert not missing, f"modules whose examples would not run: {missing}"


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"


def test_examples_exist_where_the_style_asks_for_them() -> None:
    # Public id makers document themselves with a runnable example.
    finder = doctest.DocTestFinder()
    for name in (
        "couchids.idforms.kuuid",
        "couchids.idforms.v7",
        "couchids.idforms.decode",
        "couchids.idforms.times",
    ):
        module = importlib.import_module(name)
        assert sum(len(t.examples) for t in finder.find(module)) >= 2, name
