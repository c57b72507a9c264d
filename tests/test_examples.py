"""Every code example of the documentation runs: the README's, every page of ``docs/`` (each
guide page on its own), the examples of the command's ``--help`` (which ``docs/cli.rst``
shows), and the literal blocks (``Example::``) of couchids' docstrings. A name, method,
parameter or flag that does not exist fails here. What a page and an example are, and how a
block is marked when it cannot run everywhere: tests/docexamples.py.

A page runs in order in one namespace, on PouchDB Server, and every database it made is
deleted afterwards; a page with examples of the server's replicator runs again on a CouchDB
node (the ``node`` trait: a server of the suite's own, as examples name their own databases,
such as ``shop``). A docstring's example finds defined what a reader of the API reference may
assume: the module's public names and those :data:`CONTEXTS` defines. Commands run in this
process, each stage of a pipeline that is ``couchids`` (a ``wc`` or ``jq`` stage is left out:
what it would read was written), in a temporary folder, with the databases they name as
``DB``, ``SOURCE`` or ``TARGET`` made first when missing: those stand for the reader's own.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import csv
import doctest
import functools
import importlib
import inspect
import io
import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from docexamples import (
    DOCS,
    NOT_CODE,
    PACKAGE,
    PYTHON,
    ROOT,
    SHELL,
    Block,
    Command,
    Page,
    command,
    docstring_blocks,
    epilog_commands,
    includes,
    markdown_blocks,
    module_name,
    needs_couchdb,
    relative,
    rst_blocks,
    subcommand,
)
from faultproxy import client_for
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
import couchids.aio
import couchids.drivers.log
from couchids.cli import main as cli

README = ROOT / "README.md"

#: What runs before a page's examples, by the page's kind. Docstring examples (and those of
#: docs/api/) use these names without making them: the client, handles of the databases
#: ``shop``, ``events`` and ``orders`` under the names the examples give them, series, and
#: rekey's secret.
CONTEXTS = {
    "page": "",
    "blocking": """
import couchids
client = couchids.connect()
shop = hands = posts = legacy = db = couchids.Database(client, "shop")
events = couchids.Database(client, "events")
orders = couchids.Database(client, "orders")
secret = b"rekey's secret"
""",
    "series": """
import couchids
client = couchids.connect()
shop = couchids.Database(client, "shop")
events = couchids.Series(client, "events", every="month")
posts = couchids.Series(client, "posts", every="month")
""",
    "async": """
import couchids
from couchids import aio
client = aio.new_instance()
shop = hands = posts = legacy = db = aio.AsyncDatabase(client, "shop")
events = aio.AsyncDatabase(client, "events")
orders = aio.AsyncDatabase(client, "orders")
secret = b"rekey's secret"
""",
    "async series": """
import couchids
from couchids import aio
client = aio.new_instance()
shop = aio.AsyncDatabase(client, "shop")
events = aio.AsyncSeries(client, "events", every="month")
posts = aio.AsyncSeries(client, "posts", every="month")
""",
}

#: The databases made fresh for a page of docstring examples: the handles', and the target
#: of ``archive``'s example (a target must exist; the asyncio API has no call that makes a
#: database).
DATABASES = ("shop", "events", "orders", "orders-2023")

#: What a page prints last, where its text says so.
PRINTS = {
    "docs/getting-started.md": ["[2, 1, 0]", "3"],
    "README.md": ["[2, 1, 0]", "3"],
    "docs/faq.md": [
        "no ids of type 'orders' in 'shop'; it holds ids of types event, invoice, order, "
        "settlement: pass type= one of them"
    ],
}

#: At most this many blocks marked ``not run``, and command lines parsed but not run.
MAX_NOT_RUN = 5
MAX_PARSED_ONLY = 12


# -- the pages ------------------------------------------------------------------------------


def cli_parsers() -> dict[str, argparse.ArgumentParser]:
    """The command and every subcommand (and theirs: ``series list``), by their words."""
    found: dict[str, argparse.ArgumentParser] = {}
    parents = [("", cli._parser())]
    while parents:
        prefix, parser = parents.pop(0)
        found[prefix.strip()] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parents += [(f"{prefix}{name} ", sub) for name, sub in action.choices.items()]
    return found


def cli_blocks() -> list[Block]:
    """The examples of every ``--help``, one block per (sub)command."""
    blocks = []
    for words, parser in cli_parsers().items():
        lines = epilog_commands(parser.epilog or "")
        if lines:
            where = f"couchids {words} --help".replace("  ", " ")
            code = "".join(line + "\n" for line in lines)
            blocks.append(Block(where, 0, "console", code, commands=tuple(map(command, lines))))
    return blocks


def docstring_kind(module: str) -> str:
    """The context of a module's examples (:data:`CONTEXTS`)."""
    asynchronous = module.startswith("couchids.aio") or module == "couchids.drivers.aio"
    series = module.rsplit(".", 1)[-1] == "series"
    if asynchronous:
        return "async series" if series else "async"
    return "series" if series else "blocking"


def pages() -> list[Page]:
    found = [Page("README.md", "page", markdown_blocks(README))]
    for path in sorted(DOCS.rglob("*")):
        if "_ext" in path.parts or path.suffix not in (".md", ".rst"):
            continue
        blocks = markdown_blocks(path) if path.suffix == ".md" else rst_blocks(path)
        if path.suffix == ".rst" and ".. couchids-cli::" in path.read_text(encoding="utf-8"):
            blocks += cli_blocks()
        if any(block.language not in NOT_CODE for block in blocks):
            kind = "blocking" if path.parent.name == "api" else "page"
            found.append(Page(relative(path), kind, blocks))
    for path in sorted(PACKAGE.rglob("*.py")):
        blocks = docstring_blocks(path)
        if blocks:
            module = module_name(path)
            found.append(Page(module, docstring_kind(module), blocks))
    return found


PAGES = pages()


# -- running them -----------------------------------------------------------------------------


@pytest.fixture
def reader(couch_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CloudantV1:
    """The configuration a reader of the docs has: ``CLOUDANT_URL`` and ``noauth`` for the
    server under test, nothing else of this machine's, and a folder of their own."""
    for name in list(os.environ):
        if name.startswith("CLOUDANT_") or name in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return client_for(couch_url)


def databases(client: CloudantV1) -> set[str]:
    return {name for name in client.get_all_dbs().get_result() if not name.startswith("_")}


def replications(client: CloudantV1) -> set[str]:
    """The ids of the documents of ``_replicator`` (which a fresh node may not have yet)."""
    try:
        rows = client.post_all_docs(db="_replicator").get_result()["rows"]
    except ApiException as error:
        if error.status_code == 404:
            return set()
        raise
    return {row["id"] for row in rows if not row["id"].startswith("_design/")}


@contextlib.contextmanager
def cleaned_up(client: CloudantV1, couchdb: bool) -> Iterator[None]:
    """Deletes what a page made: its databases, and on CouchDB its replications' documents
    (which cancels the continuous ones)."""
    before, jobs = databases(client), replications(client) if couchdb else set()
    try:
        yield
    finally:
        if couchdb:
            for doc_id in replications(client) - jobs:
                rev = client.get_document(db="_replicator", doc_id=doc_id).get_result()["_rev"]
                client.delete_document(db="_replicator", doc_id=doc_id, rev=rev)
        for name in databases(client) - before:
            client.delete_database(db=name)


def run_page(page: Page, client: CloudantV1, couchdb: bool) -> None:
    """Run ``page``'s examples in order, those for CouchDB only when ``couchdb``."""
    asynchronous = page.kind.startswith("async")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    if page.kind != "page":
        module = importlib.import_module(page.name) if page.name.startswith("couchids") else None
        for name in getattr(module, "__all__", ()):
            namespace[name] = getattr(module, name)
        for name in DATABASES:
            client.put_database(db=name)
    with contextlib.ExitStack() as stack:
        runner = stack.enter_context(asyncio.Runner()) if asynchronous else None
        context = Block(f"CONTEXTS[{page.kind!r}]", 1, "python", CONTEXTS[page.kind])
        run_python(context, namespace, runner)
        opened = namespace.get("client")
        if runner is not None and opened is not None:
            stack.callback(runner.run, opened.aclose())
        for block in page.blocks:
            if block.marker == "not run" or (block.marker == "needs couchdb" and not couchdb):
                continue
            if block.is_python:
                run_python(block, namespace, runner)
            for line in block.commands:
                run_command(line, block, client, couchdb)


def run_python(block: Block, namespace: dict[str, Any], runner: asyncio.Runner | None) -> None:
    """Run a block of Python (or of ``>>>`` lines, as doctests) in ``namespace``; top-level
    ``await`` only in an asyncio page, whose event loop ``runner`` keeps."""
    filename = str(ROOT / block.path) if (ROOT / block.path).is_file() else block.where
    if block.language == "pycon" or block.code.lstrip().startswith(">>>"):
        test = doctest.DocTestParser().get_doctest(
            block.code, namespace, block.where, filename, block.line - 1
        )
        out = io.StringIO()
        checker = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        result = checker.run(test, out=out.write, clear_globs=False)
        assert result.failed == 0, f"{block.where}: {out.getvalue()}"
        return
    # Blank lines in front keep the line numbers of the file in tracebacks.
    source = "\n" * (block.line - 1) + block.code
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    code = compile(source, filename, "exec", flags=flags, dont_inherit=True)
    if code.co_flags & inspect.CO_COROUTINE:
        assert runner is not None, f"{block.where}: await in an example of the blocking API"
        runner.run(eval(code, namespace))  # the documentation's own code
    else:
        exec(code, namespace)


@functools.cache
def parser() -> argparse.ArgumentParser:
    return cli._parser()


def parse(line: Command, where: str) -> argparse.Namespace:
    """``line``'s arguments as the command reads them; a failure quotes the command's error."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser().parse_args(line.argv)
    except (SystemExit, cli._UsageError) as exc:
        why = err.getvalue() or str(exc)
        raise AssertionError(f"{where}: `{line.line}` is refused: {why}") from None


#: The names of this machine, which commands may reach.
LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def not_run(line: Command, args: argparse.Namespace) -> str | None:
    """Why a command line that parses is not run (it is parsed only), or ``None``."""
    if getattr(args, "follow", False) or getattr(args, "duration", None):
        return f"`{line.line}`: waits for new documents until stopped"
    for arg in line.argv:
        if "://" in arg and urlsplit(arg).hostname not in LOOPBACK:
            return f"`{line.line}`: reaches another machine"
    if "ID" in line.argv or getattr(args, "doc_id", None):
        return f"`{line.line}`: names what an earlier run printed"
    return None


def made_first(line: Command, args: argparse.Namespace, client: CloudantV1) -> None:
    """Make what a command line names and reads, when it is missing: the databases of ``DB``,
    ``SOURCE`` and ``TARGET``, and the current period's database of a series (``--series``
    or ``series list|expire PREFIX``): an example stands for the reader's own data."""
    present = databases(client)
    # import --series PREFIX --period PERIOD FILE: the one word by position is FILE.
    keys = ("source", "target") if getattr(args, "series", None) else ("db", "source", "target")
    for name in (getattr(args, key, None) for key in keys):
        if isinstance(name, str) and "://" not in name and name not in present:
            client.put_database(db=name)
    if subcommand(line.argv) == ["import"]:
        rows_first(args)
    prefix = getattr(args, "series", None)
    if subcommand(line.argv) in (["series", "list"], ["series", "expire"]):
        prefix = args.prefix
    if prefix is not None and args.period is not None:
        series = couchids.Series(client, prefix, every=args.period)
        if not series.databases():
            series.prepare()


def rows_first(args: argparse.Namespace) -> None:
    """The FILE of an ``import`` line, when missing: a few rows with the fields its flags
    name (CSV for a name ending in .csv), which stand for the reader's own."""
    path = args.file or (args.db if args.series else None)
    if path in (None, "-") or Path(path).exists():
        return
    rows = [
        {args.time_field or "at": f"2024-05-01T12:0{n}:00Z", args.key_field or "n": n, "total": 9}
        for n in range(3)
    ]
    with open(path, "w", encoding="utf-8", newline="") as file:
        if path.endswith(".csv"):
            writer = csv.DictWriter(file, list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        else:
            file.writelines(json.dumps(row) + "\n" for row in rows)


def run_command(line: Command, block: Block, client: CloudantV1, couchdb: bool) -> None:
    """Run a command line (parse it only, if :func:`not_run` says why)."""
    args = parse(line, block.where)
    if not_run(line, args) or (needs_couchdb(line) and not couchdb):
        return
    made_first(line, args, client)
    output = ""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in line.env:
            patch.setenv(name, value)
        for stage in line.stages:
            if stage[0] != "couchids":
                continue
            patch.setattr(sys, "stdin", io.StringIO(output))
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = cli.main(list(stage[1:]))
            stage_text = " ".join(stage) if len(line.stages) > 1 else line.line
            assert status == 0, f"{block.where}: `{stage_text}` exited {status}: {err.getvalue()}"
            output = out.getvalue()
    if line.redirect:
        mode = "a" if line.redirect[0] == ">>" else "w"
        with open(line.redirect[1], mode, encoding="utf-8") as file:
            file.write(output)


# -- the names the prose writes ---------------------------------------------------------------

#: Code in running text: ``...`` in reStructuredText and docstrings, `...` in markdown.
INLINE = re.compile(r"``([^`]+)``|`([^`\n]+)`")
#: A name of couchids, as prose writes it: ``couchids.x.y``, ``aio.x``, or a public class's
#: attribute (``Database.latest``, ``Checkpoint.last_id``).
DOTTED = re.compile(r"(?<![\w./-])((?:couchids|aio)(?:\.[A-Za-z_]\w*)+|[A-Z]\w*\.[a-z_]\w*)")
#: Markdown's fenced blocks, left to the examples' run.
FENCED = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.DOTALL | re.MULTILINE)


def prose() -> Iterator[tuple[str, str]]:
    """(where, text) of the running text of the README, CONTRIBUTING.md, the docs pages and
    the docstrings."""
    contributing = ROOT / "CONTRIBUTING.md"
    for path in [README, contributing, *sorted(DOCS.rglob("*.md")), *sorted(DOCS.rglob("*.rst"))]:
        yield relative(path), FENCED.sub("", path.read_text(encoding="utf-8"))
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    yield f"{relative(path)}:{getattr(node, 'lineno', 1)}", doc


def names_written(text: str) -> set[str]:
    found = set()
    for match in INLINE.finditer(text):
        found |= {name.rstrip(".") for name in DOTTED.findall(match[1] or match[2])}
    return found


def exists(name: str) -> bool | None:
    """Whether ``name`` is something couchids has; ``None`` when it is no name of couchids
    (``AccountId.new``: a class an example defines)."""
    if name in logging.root.manager.loggerDict:
        return True  # a logger couchids logs on (couchids.request)
    parts = name.split(".")
    if parts[0] == "aio":
        parts.insert(0, "couchids")
    if parts[0] != "couchids":
        owner = next((m for m in (couchids, couchids.aio) if parts[0] in m.__all__), None)
        if owner is None:
            return None
        parts = [owner.__name__, *parts]
    for split in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            fields = getattr(found, "__dataclass_fields__", {})
            if attribute in fields or attribute in getattr(found, "__slots__", ()):
                found = fields.get(attribute)
            elif hasattr(found, attribute):
                found = getattr(found, attribute)
            else:
                return False
        return True
    return False


# -- the tests ------------------------------------------------------------------------------


def test_every_name_the_prose_writes_exists() -> None:
    """``couchids.connect``, ``aio.connect``, ``Database.latest`` in running text, where no
    example runs them: each names something couchids has."""
    missing = sorted(
        f"{where}: {name}"
        for where, text in prose()
        for name in names_written(text)
        if exists(name) is False
    )
    assert not missing, "names that do not exist:\n" + "\n".join(missing)


GUIDE = sorted(relative(path) for path in (DOCS / "guide").glob("*.md"))


def test_the_pages_are_found() -> None:
    names = {page.name for page in PAGES}
    assert {"README.md", "docs/getting-started.md", "docs/cli.rst", "docs/faq.md"} <= names
    assert {"couchids.database", "couchids.aio.database", "couchids.series"} <= names
    readme = next(page for page in PAGES if page.name == "README.md")
    assert sum(block.is_python for block in readme.blocks) >= 3
    assert sum(len(block.commands) for block in readme.blocks) >= 3
    # Each page of the guide is a page of its own (the index and the notebooks' hold none).
    guide = [page for page in PAGES if page.name in GUIDE]
    assert {page.name for page in guide} >= set(GUIDE) - {
        "docs/guide/index.md",
        "docs/guide/notebooks.md",
        "docs/guide/caveats.md",
    }
    assert sum(block.is_python for page in guide for block in page.blocks) >= 20
    assert sum(len(block.commands) for page in guide for block in page.blocks) >= 20
    cli_page = next(page for page in PAGES if page.name == "docs/cli.rst")
    assert {tuple(subcommand(c.argv)) for b in cli_page.blocks for c in b.commands} >= {
        ("new",),
        ("latest",),
        ("series", "list"),
    }


def test_every_block_is_of_a_known_language() -> None:
    """A fenced block says what it holds, so that no Python hides in a block that is not run."""
    known = PYTHON | SHELL | NOT_CODE
    blocks = [b for page in PAGES for b in page.blocks]
    blocks += [b for path in includes_of_docs() for b in markdown_blocks(path)]
    unknown = [f"{b.where} ({b.language or 'none'})" for b in blocks if b.language not in known]
    assert not unknown, f"blocks of no known language: {unknown}"


def includes_of_docs() -> set[Path]:
    return {path for page in DOCS.rglob("*.md") for path in includes(page)}


def test_the_docs_pages_hold_their_text() -> None:
    """The guide and the FAQ are written in their pages (the README is a landing page): no
    page includes the README, and a file a page includes (the changelog) holds no example,
    since only a page's own examples run."""
    assert README.resolve() not in includes_of_docs()
    for path in includes_of_docs():
        examples = [b.where for b in markdown_blocks(path) if b.language not in NOT_CODE]
        assert not examples, f"examples in {relative(path)}, which no test runs: {examples}"


def test_markers_are_few_and_give_reasons() -> None:
    """Generated handles repeat the markers of their asyncio source: those count once."""
    generated = {f"couchids.{p.stem}" for p in (PACKAGE / "aio").glob("*.py")}
    marked = [
        (block.where, block.marker, block.reason)
        for page in PAGES
        if page.name not in generated
        for block in page.blocks
        if block.marker
    ]
    assert all(reason for _, _, reason in marked), f"a marker without a reason: {marked}"
    not_run = [m for m in marked if m[1] == "not run"]
    assert len(not_run) <= MAX_NOT_RUN, f"more than {MAX_NOT_RUN} examples are not run: {not_run}"


def test_command_lines_parsed_only_are_few() -> None:
    reasons = []
    for page in PAGES:
        for block in page.blocks:
            for line in block.commands:
                reason = not_run(line, parse(line, block.where))
                if reason:
                    reasons.append(f"{block.where}: {reason}")
    assert len(reasons) <= MAX_PARSED_ONLY, "\n".join(reasons)


@pytest.mark.needs("pouchdb")
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_examples_run(page: Page, reader: CloudantV1, capsys: pytest.CaptureFixture[str]) -> None:
    with cleaned_up(reader, couchdb=False):
        run_page(page, reader, couchdb=False)
    if page.name in PRINTS:
        printed = capsys.readouterr().out.splitlines()
        assert printed[-len(PRINTS[page.name]) :] == PRINTS[page.name], "what the page says"


@pytest.mark.needs("node")
@pytest.mark.parametrize("page", [page for page in PAGES if page.needs_couchdb], ids=str)
def test_examples_run_on_couchdb(page: Page, reader: CloudantV1, couch_url: str) -> None:
    with cleaned_up(reader, couchdb=True), replications_start_at_once(couch_url):
        run_page(page, reader, couchdb=True)


@contextlib.contextmanager
def replications_start_at_once(couch_url: str) -> Iterator[None]:
    """CouchDB's replicator waits up to ``[replicator] startup_jitter`` (5 s) before it starts
    a job; the examples wait for theirs, so the node starts them at once meanwhile."""
    setting = f"{couch_url}/_node/_local/_config/replicator/startup_jitter"
    with requests.Session() as http:
        http.trust_env = False  # loopback only, whatever proxy the environment names
        before = http.get(setting, timeout=60)
        http.put(setting, data='"0"', timeout=60).raise_for_status()
        try:
            yield
        finally:
            if before.status_code == 404:
                http.delete(setting, timeout=60).raise_for_status()
            else:
                http.put(setting, data=json.dumps(before.json()), timeout=60).raise_for_status()


SAMPLE = """\
# A page

```python
x = 1
```

<!-- not run: needs Cloudant IAM -->
```python
x = 2
```

<!-- needs couchdb: the replicator -->

```console
$ COUCHIDS_REKEY_KEY=k couchids new -n 2 | couchids decode > ids.jsonl  # two ids
{"id": "output, not a command"}
$ pip install couchids
```

```pycon
>>> x + 1
2
```
"""


def test_blocks_markers_and_commands_are_read(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(SAMPLE, encoding="utf-8")
    first, marked, shell, pycon = markdown_blocks(page)
    assert (first.line, first.language, first.code, first.marker) == (4, "python", "x = 1\n", None)
    assert (marked.marker, marked.reason) == ("not run", "needs Cloudant IAM")
    assert (shell.marker, shell.reason) == ("needs couchdb", "the replicator")
    (line,) = shell.commands  # the output and pip lines are no couchids commands
    assert line.stages == (("couchids", "new", "-n", "2"), ("couchids", "decode"))
    assert (line.env, line.redirect, line.argv) == (
        (("COUCHIDS_REKEY_KEY", "k"),),
        (">", "ids.jsonl"),
        ["new", "-n", "2"],
    )
    namespace: dict[str, Any] = {}
    run_python(first, namespace, None)
    run_python(pycon, namespace, None)
    with pytest.raises(AssertionError, match=r"page\.md:21"):
        run_python(pycon, {"x": 5}, None)


def test_the_examples_of_an_epilog_are_its_command_lines() -> None:
    epilog = (
        "Prints ids.\n\nexamples:\n  couchids new -n 3      three ids\n  couchids decode ID\n\n"
    )
    assert epilog_commands(epilog) == ["couchids new -n 3", "couchids decode ID"]
