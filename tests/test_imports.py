"""Importing couchids, making and decoding ids, and the offline commands load no SDK.

Each case runs in a fresh interpreter: this test process has loaded the SDK long ago.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import couchids

#: What talks to a server: none of it is loaded until something needs a server.
SDK = ("ibmcloudant", "ibm_cloud_sdk_core", "requests", "urllib3", "httpx")

REPORT = f"import json, sys; print(json.dumps(sorted(m for m in {SDK!r} if m in sys.modules)))"


def loaded(code: str) -> list[str]:
    """The modules of SDK loaded once ``code`` ran in a fresh interpreter."""
    run = subprocess.run(
        [sys.executable, "-c", f"{code}\n{REPORT}"], capture_output=True, text=True, check=True
    )
    names: list[str] = json.loads(run.stdout.splitlines()[-1])
    return names


def test_import_make_and_decode_load_no_sdk() -> None:
    code = (
        "import couchids, couchids.kuuid\n"
        "couchids.decode(couchids.id())\n"
        "couchids.decode(couchids.kuuid.v7())\n"
        "couchids.decode(couchids.kuuid.idmsr())"
    )
    assert loaded(code) == []


def test_every_id_and_core_module_loads_no_sdk() -> None:
    # The pure half, imported whole: the id forms and every program of the core.
    package = Path(couchids.__file__).parent
    names = [
        "couchids." + ".".join(path.relative_to(package).with_suffix("").parts)
        for folder in ("idforms", "core")
        for path in sorted((package / folder).glob("*.py"))
    ]
    assert len(names) > 30
    assert loaded("\n".join(f"import {name.removesuffix('.__init__')}" for name in names)) == []


def test_importing_the_command_loads_no_sdk() -> None:
    assert loaded("import couchids.cli.main\nimport couchids.__main__") == []


def test_the_offline_commands_and_the_help_load_no_sdk() -> None:
    code = (
        "import contextlib, io\n"
        "from couchids.cli import main as cli\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    assert cli.main(['new', '-n', '2', '--type', 'user']) == 0\n"
        "    doc_id = out.getvalue().split()[0]\n"
        "    assert cli.main(['decode', doc_id]) == 0\n"
        "    assert cli.main(['--help']) == 0\n"
        "    for command in ('new', 'decode', 'latest', 'window', 'count', 'export', 'rekey'):\n"
        "        assert cli.main([command, '--help']) == 0\n"
        'assert \'"type":"user"\' in out.getvalue()'
    )
    assert loaded(code) == []


def test_python_m_couchids_new_and_decode_import_no_sdk() -> None:
    def imported(*args: str) -> tuple[str, set[str]]:
        run = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "couchids", *args],
            capture_output=True,
            text=True,
            check=True,
        )
        modules = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()}
        assert "couchids.cli.main" in modules  # the stderr is the import log
        return run.stdout, modules

    out, modules = imported("new")
    assert not {m.split(".")[0] for m in modules} & set(SDK)
    # Nor the query machinery, logging or OpenSSL: `couchids new` starts as the id forms load.
    assert not modules & {"orjson", "logging", "hashlib", "csv"}
    plumbing = ("effects", "policy", "exactjson", "answers", "asking", "facts", "revisions")
    assert not modules & {f"couchids.core.{name}" for name in plumbing}
    assert not [m for m in modules if m.startswith("couchids.drivers")]
    # Nor the reading of every form, nor the other subcommands and what they import.
    assert not modules & {"json", "couchids.idforms.decode", "couchids.cli.lifecycle"}
    assert not modules & {"couchids.cli.series", "couchids.core.periods", "couchids.core.keys"}
    out, modules = imported("decode", out.strip())
    assert json.loads(out)["form"] == "kuuid"
    assert not {m.split(".")[0] for m in modules} & set(SDK)


def test_the_lazy_names_resolve_on_first_use() -> None:
    code = (
        "import couchids, couchids.database, couchids.drivers.connecting\n"
        "assert couchids.Database is couchids.database.Database\n"
        "assert couchids.connect is couchids.drivers.connecting.connect\n"
        "assert couchids.Checkpoint.__name__ == 'Checkpoint'\n"
        "assert 'Database' in vars(couchids)  # kept after the first use\n"
    )
    assert set(loaded(code)) >= {"ibmcloudant"}


def test_dir_lists_every_public_name_and_each_resolves() -> None:
    assert set(couchids.__all__) <= set(dir(couchids))
    for name in couchids.__all__:
        assert getattr(couchids, name) is not None, name
    assert couchids.Database.__module__ == "couchids.database"
    assert callable(couchids.connect)


def test_couchids_aio_without_httpx_names_the_extra_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['httpx'] = None  # as if it were not installed\n"
        "try:\n"
        "    from couchids import aio\n"
        "except ModuleNotFoundError as exc:\n"
        "    import couchids.errors\n"
        "    print(isinstance(exc, couchids.errors.MissingExtraError), exc.name)\n"
        "    print(exc)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    caught, message = run.stdout.splitlines()
    assert caught == "True httpx"
    assert message.startswith("couchids.aio needs httpx, which is not installed (")
    # The extra's name, as pyproject.toml spells it.
    assert message.endswith("): pip install 'couchids[async]'")
    pyproject = Path(couchids.__file__).parents[1] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert any(package.startswith("httpx") for package in extras["async"])
