"""The examples in couchids' docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import couchids

MODULES = sorted(info.name for info in pkgutil.iter_modules(couchids.__path__, prefix="couchids."))


def test_every_module_is_collected() -> None:
    assert {"couchids.kuuid", "couchids.v7", "couchids.decode", "couchids.forms"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"


def test_examples_exist_where_the_style_asks_for_them() -> None:
    # Public id makers document themselves with a runnable example.
    finder = doctest.DocTestFinder()
    for name in ("couchids.kuuid", "couchids.v7", "couchids.decode", "couchids.times"):
        module = importlib.import_module(name)
        assert sum(len(t.examples) for t in finder.find(module)) >= 2, name
