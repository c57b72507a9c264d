"""scripts/bootstrap keeps .venv importing this checkout: its check, and the repair, run on a
copy of the script in a scratch checkout whose ``.venv/bin/python``, ``node`` and ``npm`` are
stubs that record what they are asked (nothing is installed, nothing leaves the machine). It
and the quickstart's ``scripts/localserver.py --install`` each reuse the other's node/."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from localserver import NPM_FLAGS, install_pouchdb, installed

REPO = Path(__file__).resolve().parents[1]
BOOTSTRAP = REPO / "scripts" / "bootstrap"
ELSEWHERE = "/elsewhere/lib/python3.12/site-packages/couchids/__init__.py"

# The venv's python: asked where couchids is (-c), it answers the copy in site-packages until
# `-m pip install` has run, then this checkout; every pip call is logged.
PYTHON = """#!/bin/sh
state="$(dirname "$0")/../state"
case "$1" in
  -c) if [ -f "$state/editable" ]; then echo "$CHECKOUT/couchids/__init__.py"
      else cat "$state/where"; fi ;;
  -m) echo "$*" >> "$state/pip.log"; touch "$state/editable" ;;
esac
"""


#: Node.js 20, as far as the version checks ask.
NODE = '#!/bin/sh\n[ "$1" = --version ] && echo v20.0.0\nexit 0\n'
#: ``npm ci`` logs its folder and flags and makes the script of pouchdb-server.
NPM = """#!/bin/sh
echo "$(basename "$PWD") $*" >> LOG
[ "$1" = ci ] && mkdir -p node_modules/pouchdb-server/bin \\
  && touch node_modules/pouchdb-server/bin/pouchdb-server
"""


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch checkout holding what bootstrap reads, with stub tools first on PATH (this
    process's too, for localserver's install)."""
    root = tmp_path / "checkout"
    (root / "couchids").mkdir(parents=True)
    (root / "couchids" / "__init__.py").write_text("")
    shutil.copy(REPO / "pyproject.toml", root)
    executable(root / "scripts" / "bootstrap", BOOTSTRAP.read_text())
    (root / "node" / "node_modules").mkdir(parents=True)
    shutil.copy(REPO / "node" / "package-lock.json", root / "node")
    executable(root / ".venv" / "bin" / "python", PYTHON)
    (root / ".venv" / "state").mkdir()
    (root / ".venv" / "state" / "where").write_text(ELSEWHERE + "\n")
    executable(tmp_path / "bin" / "node", NODE)
    executable(tmp_path / "bin" / "npm", NPM.replace("LOG", str(tmp_path / "npm.log")))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return root


def bootstrap(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHECKOUT": str(root)}
    return subprocess.run(
        ["bash", str(root / "scripts" / "bootstrap"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def pip_calls(root: Path) -> list[str]:
    log = root / ".venv" / "state" / "pip.log"
    return log.read_text().splitlines() if log.exists() else []


def test_check_refuses_a_copy_outside_the_checkout(checkout: Path) -> None:
    done = bootstrap(checkout, "--check")
    assert done.returncode == 1
    assert done.stdout == (
        f"bootstrap: .venv imports couchids from {os.path.dirname(ELSEWHERE)}, not from this "
        "checkout (an install without -e replaced the editable one); scripts/bootstrap "
        "installs it with pip install -e '.[test]'\n"
    )
    assert pip_calls(checkout) == []  # a check changes nothing


def test_check_accepts_the_checkout_also_through_a_symbolic_link(checkout: Path) -> None:
    link = checkout.parent / "link"
    link.symlink_to(checkout)
    (checkout / ".venv" / "state" / "where").write_text(f"{link}/couchids/__init__.py\n")
    done = bootstrap(checkout, "--check")
    assert (done.returncode, done.stdout) == (
        0,
        "bootstrap: .venv imports couchids from this checkout\n",
    )


def test_check_when_couchids_is_not_installed(checkout: Path) -> None:
    (checkout / ".venv" / "state" / "where").write_text("")
    done = bootstrap(checkout, "--check")
    assert done.returncode == 1 and ".venv does not import couchids" in done.stdout


def test_bootstrap_reinstalls_the_checkout_when_a_copy_replaced_it(checkout: Path) -> None:
    first = bootstrap(checkout)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "pip install -e '.[test]' (pyproject.toml changed)" in first.stdout
    assert len(pip_calls(checkout)) == 1 and "-e .[test]" in pip_calls(checkout)[0]

    again = bootstrap(checkout)
    assert "python packages up to date" in again.stdout and len(pip_calls(checkout)) == 1

    # pip install '.[notebooks]' without -e: the venv now imports a copy.
    (checkout / ".venv" / "state" / "editable").unlink()
    repaired = bootstrap(checkout)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert (
        f"bootstrap: .venv imports couchids from {os.path.dirname(ELSEWHERE)}, not from this "
        "checkout (an install without -e replaced the editable one): pip install -e '.[test]'"
    ) in repaired.stdout
    assert len(pip_calls(checkout)) == 2
    assert bootstrap(checkout, "--check").returncode == 0


def test_bootstrap_fails_when_the_reinstall_does_not_help(checkout: Path) -> None:
    # A pip that installs nothing editable: bootstrap says so rather than stamping it done.
    executable(
        checkout / ".venv" / "bin" / "python",
        f'#!/bin/sh\n[ "$1" = -c ] && echo {ELSEWHERE}\nexit 0\n',
    )
    done = bootstrap(checkout)
    assert done.returncode == 1
    assert "after pip install -e '.[test]', .venv imports couchids from /elsewhere" in done.stdout
    assert not (checkout / ".stamps" / "python").exists()


def test_this_checkout_passes_the_check() -> None:
    done = subprocess.run(
        ["bash", str(BOOTSTRAP), "--check"], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (
        0,
        "bootstrap: .venv imports couchids from this checkout\n",
    )


def test_an_unknown_argument_is_refused(checkout: Path) -> None:
    done = bootstrap(checkout, "--frobnicate")
    assert (done.returncode, done.stdout) == (2, "bootstrap: usage: scripts/bootstrap [--check]\n")


def npm_calls(root: Path) -> list[str]:
    log = root.parent / "npm.log"
    return log.read_text().splitlines() if log.exists() else []


def test_bootstrap_reuses_the_quickstarts_install_of_node(checkout: Path) -> None:
    """``localserver.py --install`` (the quickstart) installed node/: bootstrap after it does not
    run npm ci again, since the install is stamped as its own are."""
    assert install_pouchdb(checkout / "node") is True
    assert npm_calls(checkout) == [f"node ci {' '.join(NPM_FLAGS)}"]
    done = bootstrap(checkout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bootstrap: node packages up to date" in done.stdout
    assert len(npm_calls(checkout)) == 1
    assert installed(checkout / "node")


def test_the_quickstart_reuses_bootstraps_install_of_node(checkout: Path) -> None:
    first = bootstrap(checkout)
    assert first.returncode == 0, first.stdout + first.stderr
    assert npm_calls(checkout) == [f"node ci {' '.join(NPM_FLAGS)}"]
    assert installed(checkout / "node")  # no install in progress to wait for
    assert install_pouchdb(checkout / "node") is False
    assert len(npm_calls(checkout)) == 1


def test_a_changed_lockfile_is_installed_again(checkout: Path) -> None:
    assert install_pouchdb(checkout / "node") is True
    lockfile = checkout / "node" / "package-lock.json"
    lockfile.write_text(lockfile.read_text() + "\n")
    assert not installed(checkout / "node")
    done = bootstrap(checkout)
    assert "npm ci in node/ (package-lock.json changed)" in done.stdout
    assert len(npm_calls(checkout)) == 2 and installed(checkout / "node")
