"""The command's flags speak the API's words: a flag that feeds a parameter of the library has
that parameter's name (dashes for underscores) and its default, read from the signatures (or
from couchids.Options for the tuning every operation shares: ``--timeout``, ``--parallel``,
``--batch-size``); every other flag is one of the command's own, listed here with what it
stands for. A TIME is always a moment (``--since`` is never a ``_changes`` sequence), and the
modules of ``couchids.cli`` import no circle and keep their functions short."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from couchids.aio.database import AsyncDatabase
from couchids.aio.replication import AsyncReplication
from couchids.aio.series import AsyncSeries
from couchids.cli import main as cli
from couchids.core.options import OWN_DEFAULTS, Options
from couchids.idforms.decode import decode
from couchids.idforms.forms import KuuidForm

D, S = AsyncDatabase, AsyncSeries

#: What each subcommand calls: the API whose parameters its flags feed.
FEEDS: dict[str, list[Callable[..., Any]]] = {
    "new": [KuuidForm.new],
    "decode": [decode],
    "latest": [D.latest, S.latest],
    "window": [D.window, S.window],
    "count": [D.count, S.count],
    "histogram": [D.histogram, S.histogram],
    "expire": [D.expire],
    "export": [D.export, S.export],
    "tail": [D.follow],
    "import": [D.bulk_create, S.bulk_create],
    "rekey": [D.rekey],
    "replicate": [D.replicate],
    "replication": [AsyncReplication.status, AsyncReplication.cancel],
    "series list": [S.databases],
    "series prepare": [S.prepare, S.__init__],
    "series expire": [S.expire, S.__init__],
}

#: The command's own flags (by argparse dest), which feed no parameter of the same name.
OWN = {
    "db": "DB, the database's name (the handle's)",
    "source": "the database read (the handle's name)",
    "target": "replicate's and rekey's target database (target, target_db)",
    "doc_id": "a replication's id",
    "ids": "the ids to decode",
    "prefix": "a series' prefix (Series' prefix, positional)",
    "series": "a series' prefix in place of DB",
    "period": "a series' every: histogram --every is the buckets' width already",
    "since": "the start TIME of a window (start)",
    "until": "the end TIME of a window (end)",
    "at": "the TIME in the ids made (timestamp)",
    "n": "how many (new)",
    "all_types": "type=ALL_TYPES",
    "oldest_first": "newest_first=False",
    "ids_only": "include_docs=False",
    "yes": "dry_run=False",
    "csv": "export: CSV of these fields; import: the rows are CSV",
    "file": "import: the file of the rows (stdin without it)",
    "time_field": "import: the field time_of reads (rekey's time_field)",
    "key_field": "import: the field key_of reads",
    "after_line": "import: the line to resume after",
    "after": "a checkpoint's last id, to resume",
    "follow": "tail -f: wait=True",
    "duration": "tail --for SECONDS: how long to follow",
    "limit": "tail: stop after N documents",
    "key_env": "the variable holding rekey's key",
    "wait": "replicate: wait for the replication",
    "cancel": "replication: cancel it",
    "json": "series list: JSON lines",
    "format": "histogram's output (bars, spark, csv, json)",
    # The id form's flags, which make the form parameter.
    **dict.fromkeys(("reverse", "ms", "short", "v7", "v7s", "form", "sep"), "the id form"),
}
#: Flags of a parameter's name that take another kind of value than the parameter.
OTHER_VALUE = {
    "mapping": "rekey's mapping file, by name (the API takes the open file)",
    "form": "a form by name (the API takes the IdForm; the other form flags make one too)",
}
#: Flags that are not arguments: argparse's own and the parser's bookkeeping.
NOT_ARGUMENTS = {"help", "version", "verbose", "run", "prog"}


def commands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    def walk(prefix: str, parser: argparse.ArgumentParser) -> Iterator[Any]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    full = f"{prefix} {name}".strip()
                    if not any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
                        yield full, sub
                    yield from walk(full, sub)

    yield from walk("", cli._parser())


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.dest not in NOT_ARGUMENTS]


def options_of(name: str) -> dict[str, Any]:
    """The default of each field of the handle's :class:`~couchids.Options` for the operation
    subcommand ``name`` runs: the field's own, or where that is ``None``, the operation's."""
    operation = FEEDS[name][0].__name__
    return {
        f.name: OWN_DEFAULTS.get(operation, {}).get(f.name) if f.default is None else f.default
        for f in dataclasses.fields(Options)
    }


def test_every_subcommand_is_known() -> None:
    assert sorted(name for name, _ in commands()) == sorted(FEEDS)


@pytest.mark.parametrize(("name", "parser"), list(commands()), ids=lambda x: str(x)[:20])
def test_a_flag_that_feeds_a_parameter_has_its_name_and_default(
    name: str, parser: argparse.ArgumentParser
) -> None:
    feeds = [inspect.signature(f).parameters for f in FEEDS[name]]
    options = options_of(name)
    for action in arguments(parser):
        if action.dest in options:
            # An option of the handle: its default, or None (the operation's own) for a field
            # whose default is None.
            field = {f.name: f.default for f in dataclasses.fields(Options)}[action.dest]
            allowed = {options[action.dest]} | ({None} if field is None else set())
            assert action.default in allowed, f"couchids {name} --{action.dest}"
            continue
        fed = [params[action.dest] for params in feeds if action.dest in params]
        assert fed or action.dest in OWN, (
            f"couchids {name} {'/'.join(action.option_strings) or action.dest}: neither an API "
            "parameter's name nor one of the command's own flags"
        )
        if not fed or action.dest in OTHER_VALUE:
            continue
        if action.option_strings and action.const in (None, True):
            # (decode's --forward sets reverse to False: --reverse is the parameter's flag.)
            names = {"--" + action.dest.replace("_", "-"), "-" + action.dest}
            assert names & set(action.option_strings), (name, action.option_strings)
        for param in fed:
            if param.default is inspect.Parameter.empty:
                assert action.required, f"couchids {name} --{action.dest} is required by the API"
            else:
                assert action.default == param.default, (
                    f"couchids {name} --{action.dest}: default {action.default!r}, "
                    f"the API's {param.default!r}"
                )


def test_since_is_always_a_time() -> None:
    seen = 0
    for name, parser in commands():
        for action in arguments(parser):
            if "--since" in action.option_strings:
                assert action.metavar == "TIME", name
                seen += 1
    assert seen == 6  # window, count, histogram, export, replicate, tail
    (tail,) = [p for name, p in commands() if name == "tail"]
    assert "--since-seq" in tail.format_help()


CLI = Path(__file__).resolve().parents[1] / "couchids" / "cli"


def test_the_cli_modules_form_no_circle_and_have_short_module_level_functions() -> None:
    imports: dict[str, set[str]] = {}
    for path in sorted(CLI.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module
        } | {
            f"couchids.cli.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "couchids.cli"
            for alias in node.names
        }
        imports[path.stem] = {n.rsplit(".", 1)[-1] for n in names if n.startswith("couchids.cli.")}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = [
                    n
                    for n in ast.walk(node)
                    if n is not node and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                ]
                # count_of returns the type of a flag (a closure over its bound), nothing else.
                assert not inner or node.name == "count_of", f"{path.name}: {node.name} nests"
                body = node.body[1:] if ast.get_docstring(node) else node.body
                lines = body[-1].end_lineno - body[0].lineno + 1  # type: ignore[operator]
                assert lines <= 80, f"{path.name}: {node.name} is {lines} lines"

    def reaches(start: str, seen: set[str]) -> set[str]:
        for nxt in imports.get(start, set()) - seen:
            seen.add(nxt)
            reaches(nxt, seen)
        return seen

    for module in imports:
        assert module not in reaches(module, set()), f"couchids.cli.{module} imports itself"


def test_an_offline_subcommand_loads_no_other_subcommand_module() -> None:
    import subprocess
    import sys

    code = (
        "import sys\nfrom couchids.cli import main as cli\ncli._parser('new')\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('couchids.cli'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = out.stdout.split()
    assert loaded == [
        "couchids.cli",
        "couchids.cli.ids",
        "couchids.cli.main",
        "couchids.cli.options",
    ]


@pytest.mark.parametrize(
    ("argv", "said", "unsaid"),
    [
        (["histogram", "db", "--since", "2026-01-01", "--every", "1ms"], "--every '1ms'", "every="),
        (
            ["window", "db", "--since", "2026-02-01", "--until", "2026-01-01"],
            "pass --since <= --until",
            "start <= end",
        ),
        (["decode", "aH8609vI7eP05X4Gc3QFvw"], "--form", "form="),
    ],
    ids=["histogram", "window", "decode"],
)
def test_a_hint_of_the_library_names_the_flag(
    argv: list[str],
    said: str,
    unsaid: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Refused before anything is sent: the server's address is never reached.
    monkeypatch.setenv("CLOUDANT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    assert cli.main(argv) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert said in err and unsaid not in err, err


@pytest.mark.parametrize(
    ("argv", "said", "unsaid"),
    [
        (["latest", "Bad Name"], "DB 'Bad Name' is not", "name="),
        (["tail", "Shop"], "DB 'Shop' is not", "name="),
        (["replicate", "Bad", "t", "--since", "1d"], "SOURCE 'Bad' is not", "name="),
        (["replicate", "s", "Bad Target", "--since", "1d"], "TARGET 'Bad Target'", "--target"),
        (["replicate", "s", "ftp://h/db", "--since", "1d"], "TARGET 'ftp://h/db'", "--target"),
        (["rekey", "Bad", "t"], "SOURCE 'Bad' is not", "name="),
        (["rekey", "s", "Bad Target"], "TARGET 'Bad Target' is not", "target_db"),
        (["rekey", "s", "s"], "TARGET 's' is the source", "target_db"),
        (["series", "list", "Ev", "--period", "day"], "PREFIX 'Ev' cannot", "--prefix"),
        (["window", "--series", "Ev", "--period", "day", "--since", "1d"], "--series 'Ev'", "="),
        (["latest", "--series", "ev"], "day, week (ISO weeks, from Monday), month or year", "="),
    ],
)
def test_a_refused_argument_is_named_as_the_usage_names_it(
    argv: list[str],
    said: str,
    unsaid: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """A database name, a series' prefix or a replication's target given by position is named
    DB, SOURCE, TARGET or PREFIX, as the usage line writes it, never by a parameter of the
    library or a flag the command does not have; refused before anything is sent."""
    monkeypatch.setenv("CLOUDANT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "k")
    monkeypatch.chdir(tmp_path)  # rekey's mapping file is never made
    assert cli.main(argv) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert said in err and unsaid not in err, err


@pytest.mark.parametrize("flag", ["-v", "-vv", "--verbose"])
def test_verbose_after_the_command_says_where_it_goes(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["latest", "shop", flag]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"unrecognized arguments: {flag}; -v goes before the command" in err, err


def test_a_servers_failure_names_the_flag_that_avoids_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server whose _all_docs gives no row offset cannot be counted that way: the command
    says to count without --index-only, not without the library's index_only=True."""
    server = "https://couch.example"

    def answer(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        where = str(request.url).removeprefix(server).split("?")[0]
        body: dict[str, Any] = {"error": "unexpected", "reason": where}
        status = 200
        if where in ("", "/"):
            body = {"couchdb": "Welcome", "version": "3.4.3", "vendor": {"name": "Apache"}}
        elif where == "/shop":
            body = {"db_name": "shop", "props": {}}
        elif where == "/shop/_all_docs":
            body = {"total_rows": 0, "rows": []}  # no offset
        else:
            status = 500
        return status, {}, json.dumps(body)

    for name in ("CLOUDANT_APIKEY", "VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDANT_URL", server)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    argv = ["count", "shop", "--since", "2024-01-01", "--until", "2024-02-01", "--type", "order"]
    argv.append("--index-only")
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for method in (responses.GET, responses.POST):
            mock.add_callback(
                method,
                re.compile(re.escape(server) + ".*"),
                callback=answer,
                content_type="application/json",
            )
        assert cli.main(argv) == cli.EXIT_SERVER
    err = capsys.readouterr().err
    assert "no row offset" in err and err.rstrip().endswith("count without --index-only"), err
