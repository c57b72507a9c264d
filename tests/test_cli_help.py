"""The help of the ``couchids`` command, computed from its parser: every subcommand (and each
subcommand of ``couchids series``) shows an example, and the top-level help says truly which
subcommands need a server."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest

from couchids.cli import main as cli
from couchids.cli.main import EXIT_BAD_INPUT, EXIT_OK, main

#: The subcommands that work without a server.
OFFLINE = {"new", "decode"}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli._parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand, and the subcommands of those that have some (``series list``)."""
    found = {}
    for name, parser in subcommands().items():
        found[name] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found.update({f"{name} {sub}": p for sub, p in action.choices.items()})
    return found


def leaves() -> list[str]:
    """The commands that run: all but those that only hold subcommands."""
    return sorted(
        name
        for name, parser in commands().items()
        if not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
    )


def test_there_are_subcommands() -> None:
    assert {"new", "decode", "latest", "window", "count", "histogram", "tail"} <= set(subcommands())


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_subcommand_help_has_examples(name: str) -> None:
    text = commands()[name].format_help()
    section = re.search(r"^examples?:\n((?:  .*\n?)+)", text, re.IGNORECASE | re.MULTILINE)
    assert section is not None, f"couchids {name} --help has no examples section"
    lines = [line.strip() for line in section[1].splitlines()]
    mine = [line for line in lines if re.match(rf"(\S+=\S+ )*couchids {name}\b", line)]
    assert mine, f"no example of couchids {name} in its --help"


def test_the_top_level_help_names_the_offline_subcommands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--help"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "server (every command but new and decode)" in text
    for name in subcommands():
        listed = re.search(rf"^    {name}\s+(.*)$", text, re.MULTILINE)
        assert listed is not None, name
        assert ("(offline)" in listed[1]) == (name in OFFLINE), listed[0]


def test_the_top_level_help_lists_every_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    """Each status the command returns (0, 1, 2, and 130 after Ctrl-C) has its line."""
    assert main(["--help"]) == EXIT_OK
    section = capsys.readouterr().out.split("exit status:\n", 1)[1].split("\n\n", 1)[0]
    listed = {int(status) for status in re.findall(r"^  (\d+)  ", section, re.MULTILINE)}
    statuses = {value for name, value in vars(cli).items() if name.startswith("EXIT_")}
    assert listed == statuses == {0, 1, 2, 130}, section


def required_argv(name: str) -> list[str]:
    """The shortest command line of a subcommand: its positionals and required options."""
    argv = name.split()
    for action in commands()[name]._actions:
        if not action.option_strings:
            # Optional positionals too: DB, where --series could stand instead.
            if action.nargs != "*":
                argv.append(f"db{len(argv)}")
        elif action.required:
            value = "order" if action.dest == "type" else "1d"
            if action.choices is not None:
                value = str(next(iter(action.choices)))
            argv += [action.option_strings[0], value]
    return argv


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_option_says_what_it_does(name: str) -> None:
    parser = commands()[name]
    options = [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]
    silent = [a.option_strings or a.dest for a in options if not a.help]
    assert not silent, f"couchids {name} --help: no help for {silent}"


def test_series_has_its_subcommands() -> None:
    assert {"series list", "series prepare", "series expire"} <= set(leaves())


@pytest.mark.parametrize("name", leaves())
def test_which_subcommands_need_a_server(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No configuration from this machine: ibmcloudant also reads credentials files and VCAP.
    for variable in list(os.environ):
        if variable.startswith(("CLOUDANT_", "VCAP_SERVICES", "IBM_CREDENTIALS_FILE")):
            monkeypatch.delenv(variable)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COUCHIDS_REKEY_KEY", "not-a-real-secret")
    argv = required_argv(name)
    if name == "decode":
        argv.append("user:001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn")
    status = main(argv)
    err = capsys.readouterr().err
    if name in OFFLINE:
        assert (status, err) == (EXIT_OK, "")
    else:
        assert status == EXIT_BAD_INPUT and "no server is configured" in err, (argv, err)


@pytest.mark.parametrize(
    "argv",
    [
        ["new"],
        ["new", "-n", "3", "--type", "user", "--ms", "--reverse"],
        ["-v", "new", "--v7s", "--at", "2024-05-01"],
        ["-vv", "decode", "--form", "seq10", "--sep", "-", "invoice-0000000042"],
        ["--verbose", "decode", "--reverse", "--seconds", "a", "b"],
        ["new", "--form", "tid62"],
    ],
)
def test_an_offline_command_parses_as_with_the_whole_parser(argv: list[str]) -> None:
    # `couchids new` builds its parser alone (a faster start); the arguments mean the same.
    only = cli._offline_command(argv)
    assert only in OFFLINE
    alone = cli._parser(only)
    (action,) = [a for a in alone._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(action.choices) == {only}
    assert vars(alone.parse_args(argv)) == vars(cli._parser().parse_args(argv))


@pytest.mark.parametrize(
    "argv", [[], ["--help"], ["--version"], ["window", "db"], ["-v", "count", "db"], ["nu"]]
)
def test_every_other_command_line_gets_the_whole_parser(argv: list[str]) -> None:
    assert cli._offline_command(argv) is None


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["histogram", "db", "--since", "1d", "--all-types"], "couchids histogram"),
        (["series", "list", "ev", "--period", "day", "--bogus"], "couchids series list"),
        (["new", "--bogus"], "couchids new"),
        (["--bogus", "new"], "couchids"),
    ],
)
def test_an_unknown_argument_points_to_the_help_that_lists_the_flags(
    argv: list[str], where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("couchids: error: unrecognized arguments: "), err
    assert err.endswith(f"(see '{where} --help')\n"), err
