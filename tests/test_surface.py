"""The public surface: one way to do each thing.

``couchids.__all__`` is small (h11 exports 23 names, structlog 31, httpcore 49, psycopg 53),
each of its names has a docstring with an example, and none is deprecated: every operation on
a database is a method of the handle (tests/test_handles.py), and the kuuid npm package's
functions are the namespace ``couchids.kuuid`` (tests/test_kuuid.py). The demo, the first
thing a newcomer runs, uses this surface and prints no warning."""

from __future__ import annotations

import doctest
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sphinx.pycode import ModuleAnalyzer

import couchids
import couchids.aio
import couchids.kuuid

ROOT = Path(__file__).resolve().parents[1]
#: The most names ``couchids.__all__`` may hold.
MAX_NAMES = 45
#: An example: a doctest, or a code block (reStructuredText's ``::`` or a Markdown fence).
EXAMPLE = re.compile(r"^\s*>>> |::\s*$|^\s*```", re.MULTILINE)


def test_the_top_level_is_small() -> None:
    assert len(couchids.__all__) <= MAX_NAMES, len(couchids.__all__)
    assert len(set(couchids.__all__)) == len(couchids.__all__)


def test_nothing_is_deprecated() -> None:
    assert not (ROOT / "couchids" / "deprecated.py").exists()
    for module in (couchids, couchids.aio, couchids.kuuid):
        assert "deprecated" not in vars(module)
    code = "import warnings, couchids, couchids.kuuid\nwarnings.simplefilter('error')\n"
    code += "".join(f"getattr(couchids, {name!r})\n" for name in couchids.__all__)
    code += "import couchids.aio"
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True)


def constant_doc(name: str) -> tuple[str, dict[str, object]]:
    """The ``#:`` comment above the assignment of the constant ``name`` (what the API
    reference shows for it), and the namespace of the module that holds it."""
    value = getattr(couchids, name)
    for module_name, module in sorted(sys.modules.items()):
        if not module_name.startswith("couchids.") or getattr(module, name, None) is not value:
            continue
        docs = ModuleAnalyzer.for_module(module_name).find_attr_docs()
        if ("", name) in docs:
            return "\n".join(docs[("", name)]), vars(module)
    return "", {}


def doc_of(name: str) -> str:
    value = getattr(couchids, name)
    if inspect.isclass(value) or inspect.isroutine(value):
        return value.__doc__ or ""  # a class's own docstring, not one it inherits
    return constant_doc(name)[0]


@pytest.mark.parametrize("name", couchids.__all__)
def test_every_public_name_has_a_docstring_with_an_example(name: str) -> None:
    doc = doc_of(name)
    assert len(doc) > 40, f"couchids.{name} has no docstring"
    assert EXAMPLE.search(doc), f"the docstring of couchids.{name} shows no example"


#: The names of constants (id forms, ALL_TYPES): their examples are in the comment above them,
#: which doctest does not see (those of functions and classes run in tests/test_doctests.py).
CONSTANTS = [
    name
    for name in couchids.__all__
    if not (inspect.isclass(getattr(couchids, name)) or inspect.isroutine(getattr(couchids, name)))
]


@pytest.mark.parametrize("name", CONSTANTS)
def test_the_examples_of_the_constants_run(name: str) -> None:
    doc, namespace = constant_doc(name)
    test = doctest.DocTestParser().get_doctest(
        doc, {**namespace, "couchids": couchids}, f"couchids.{name}", None, 0
    )
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0, f"{runner.failures} of the examples of couchids.{name} failed"


def test_the_demo_uses_the_surface_and_warns_of_nothing(couch_url: str) -> None:
    environment = {
        **os.environ,
        "CLOUDANT_URL": couch_url,
        "CLOUDANT_AUTH_TYPE": "noauth",
        "PYTHONWARNINGS": "error",
    }
    done = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "scripts" / "demo.py")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    assert "== The 5 newest orders" in done.stdout and "create_short() gave" in done.stdout
    assert "idms: order:" in done.stdout and "v7s: order:" in done.stdout


def test_the_demo_without_a_server_says_what_to_set(tmp_path: Path) -> None:
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("CLOUDANT_")
        and name not in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE")
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")],
        env={**environment, "HOME": str(tmp_path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("demo: no server is configured: set CLOUDANT_URL"), done.stderr
