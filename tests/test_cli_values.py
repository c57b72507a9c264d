"""Every flag of every subcommand, given a bad value, is refused by the parser before a server
is asked (none is configured here): one line on stderr that names the flag, exit status 2, no
traceback and no object's repr. The values: an empty one, a negative number, a word, a number
of 400 digits and an argument in another encoding (a byte that is no UTF-8, as Python reads
it); the few a flag takes are listed, and must get past the parser."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_flags import commands

from couchids.cli.main import EXIT_BAD_INPUT, _parser, main

HUGE = "9" * 400
#: A byte that is no UTF-8 (``\xff``) in an argument, as ``sys.argv`` holds it.
NOT_UTF8 = "\udcff"
BAD = ("", "-1", "abc", HUGE, NOT_UTF8)

#: A good value of each argument a command requires, by argparse dest.
REQUIRED = {
    "db": "shop",
    "ids": "user:001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn",
    "since": "1h",
    "before": "7d",
    "type": "order",
    "source": "shop",
    "target": "shop-copy",
    "doc_id": "abc",
    "prefix": "events",
    "period": "month",
}

#: Values of :data:`BAD` a flag takes (by dest): the parser lets them through.
TAKEN = {
    "type": {"-1", "abc"},  # a type is letters, digits, '_' and '-'
    "after": {"-1", "abc", HUGE},  # an id of some form: the run checks it against its window
    "csv": {"-1", "abc", HUGE},  # field names
    "time_field": {"-1", "abc", HUGE},  # a field name
    "key_field": {"-1", "abc", HUGE},  # a field name
    "key_env": {"abc"},  # an environment variable's name
    "mapping": {"-1", "abc", HUGE, NOT_UTF8},  # a file name, in any encoding
    "since_seq": {HUGE},  # a sequence number of PouchDB Server's
}


def cases() -> Iterator[object]:
    for name, parser in commands():
        names = name.split()
        for action in parser._actions:
            if not action.option_strings or action.nargs == 0:
                continue  # an argument by position, or a switch
            argv = list(names)
            for other in parser._actions:
                if other is not action and (other.required or other.dest == "db"):
                    value = REQUIRED[other.dest]
                    argv += (
                        [value] if not other.option_strings else [other.option_strings[0], value]
                    )
            for value in BAD:
                flag = action.option_strings[-1]
                yield pytest.param(
                    [*argv, flag, value],
                    action,
                    value,
                    id=f"{' '.join(names)} {flag} {value[:6]!r}",
                )


@pytest.fixture(autouse=True)
def no_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("CLOUDANT_") or name in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(("argv", "action", "value"), list(cases()))
def test_a_bad_value_is_one_line_naming_the_flag(
    argv: list[str],
    action: argparse.Action,
    value: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if value in TAKEN.get(action.dest, ()):
        _parser().parse_args(argv)  # taken: it gets past the parser
        return
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, out) == (EXIT_BAD_INPUT, ""), err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("couchids: error: "), err
    assert "Traceback" not in err and not re.search(r"<[\w.]+ object at 0x", err), err
    named = [
        flag for flag in action.option_strings if re.search(rf"(?<![\w-]){flag}(?![\w-])", err)
    ]
    assert named, f"{err!r} does not name {'/'.join(action.option_strings)}"
