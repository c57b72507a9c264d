"""The README is a landing page: at most 300 lines, a quickstart of ten lines at the top that
works in a fresh clone when followed in order, a few examples (which run in order, in one
namespace, on the local server, in tests/test_examples.py, as the guide's pages do), and links
that lead somewhere."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
FENCED = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: The most lines the README may have: the tour, guide, FAQ and reference live in docs/.
MAX_LINES = 300


def python_blocks(path: Path = README) -> list[str]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


def quickstart() -> tuple[str, str]:
    """The quickstart's console lines and its Python block."""
    first_section = README.read_text(encoding="utf-8").split("\n## ", 2)[1]
    assert first_section.startswith("Quickstart\n")
    (_, console), (_, python) = FENCED.findall(first_section)
    return console, python


def test_the_readme_is_a_landing_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    sections = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert sections[:2] == ["Quickstart", "Install"]
    assert {"Two commands", "Documentation", "Development"} <= set(sections)
    for page in ("docs/guide/index.md", "docs/faq.md", "docs/development.md"):
        assert f"]({page})" in text, f"the README links {page}"


def test_every_link_of_the_readme_leads_somewhere() -> None:
    """A relative link names a file of the checkout; an anchor, a heading of the file."""
    text = README.read_text(encoding="utf-8")
    links = [link for link in LINK.findall(text) if "://" not in link]
    assert len(links) >= 10
    for link in links:
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else README
        assert target.is_file(), f"the README links {link}, which is no file"
        if anchor:
            headings = re.findall(r"^#{1,6} (.+?)\s*$", target.read_text(encoding="utf-8"), re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
            assert anchor in slugs, f"the README links {link}: no such heading"


def test_readme_and_guide_have_examples() -> None:
    assert len(python_blocks()) >= 3  # the quickstart and the examples
    guide = [block for page in sorted(GUIDE.glob("*.md")) for block in python_blocks(page)]
    assert len(guide) >= 8


def test_the_quickstart_is_ten_lines_at_the_top() -> None:
    console, python = quickstart()
    assert "pip install" in console
    assert python == python_blocks()[0], "it runs first, in tests/test_examples.py"
    assert len((console + python).strip().splitlines()) <= 10
    for step in ("couchids.Database(", ".create(", ".latest("):
        assert step in python


# -- the quickstart, followed in a fresh clone ------------------------------------------------

#: ``python3 -m venv DIR`` makes a real virtualenv (without pip, which would need the network)
#: and puts the pip below in it.
PYTHON3 = """#!/bin/sh
[ "$1 $2" = "-m venv" ] || exec "$REAL_PYTHON" "$@"
"$REAL_PYTHON" -m venv --without-pip "$3" || exit 1
cp "$STUBS/pip.sh" "$3/bin/pip" && chmod +x "$3/bin/pip"
"""
#: ``pip install -e .`` without the network: the clone on the path, and the dependencies of
#: this checkout's .venv.
PIP = """#!/bin/sh
echo "$*" >> "$STUBS/pip.log"
[ "$*" = "install -e ." ] || exit 1
site=$(echo "$(dirname "$0")"/../lib/python*/site-packages)
printf '%s\\n%s\\n' "$PWD" "$DEPENDENCIES" > "$site/couchids-quickstart.pth"
"""
#: ``npm ci`` in node/ without the network: this checkout's node_modules, as npm would make it.
NPM = """#!/bin/sh
echo "$(basename "$PWD") $*" >> "$STUBS/npm.log"
[ "$1" = ci ] && ln -s "$NODE_MODULES" node_modules
"""


def executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_the_quickstart_works_in_a_fresh_clone(tmp_path: Path) -> None:
    """The README's quickstart lines, run in order by bash in a copy of the checkout's files
    (no .venv, no node_modules) and its Python block given to the Python they start: the
    server-start line installs PouchDB Server, starts it and hands its URL to Python, whose
    block stores one order however often it runs. Only what would reach the network is
    stood in for: pip and npm, which take what this checkout installed."""
    clone = tmp_path / "clone"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    assert not (clone / ".venv").exists() and not (clone / "node" / "node_modules").exists()
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    executable(stubs / "python3", PYTHON3)
    executable(stubs / "npm", NPM)
    (stubs / "pip.sh").write_text(PIP)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CLOUDANT_", "VIRTUAL_ENV", "PYTHON"))
    }
    env.update(
        PATH=f"{stubs}{os.pathsep}{env['PATH']}",
        REAL_PYTHON=sys.executable,
        STUBS=str(stubs),
        DEPENDENCIES=sysconfig.get_paths()["purelib"],
        NODE_MODULES=str(ROOT / "node" / "node_modules"),
        NO_PROXY="127.0.0.1,localhost",
    )
    console, python = quickstart()
    lines = console.strip().splitlines()
    assert lines[-1].startswith("python scripts/localserver.py ")

    def follow(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=clone,
            env=env,
            input=python,
            capture_output=True,
            text=True,
            timeout=300,
        )

    first = follow(console)  # as written, comments and all
    assert first.returncode == 0, first.stdout + first.stderr
    assert "installing PouchDB Server" in first.stderr
    assert (stubs / "npm.log").read_text().split()[:2] == ["node", "ci"]
    printed = first.stdout.splitlines()
    assert printed[0].startswith("order:") and printed[1].startswith(
        f"[{{'n': 1, '_id': '{printed[0]}'"
    )

    # The server-start line again (a new server, in memory): nothing is installed twice.
    where = 'python -c "import couchids; print(couchids.__file__)"'
    again = follow(f". .venv/bin/activate\n{lines[-1]}\n{where}")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "installing" not in again.stderr
    assert len((stubs / "npm.log").read_text().splitlines()) == 1
    assert (stubs / "pip.log").read_text() == "install -e .\n"
    ids, _, imported = again.stdout.splitlines()
    assert ids == printed[0]  # the key= write: the same id
    assert imported == str(clone / "couchids" / "__init__.py")  # the clone's couchids


# -- the quickstart, pasted at Python's prompt ------------------------------------------------

#: What a terminal shows that is no text: escape sequences (readline's bracketed paste mode).
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]")


def in_a_terminal(command: str, cwd: Path, env: dict[str, str], typed: str) -> str:
    """Run ``command`` with bash in a pseudo-terminal, type ``typed`` (all at once, as a paste
    arrives) once it shows Python's first prompt, then Ctrl-D; everything the terminal showed,
    escape sequences left out, until the command ends."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    shown, pasted = b"", False
    try:
        while True:
            # Nothing shown for minutes: the command hangs (a guard, no measure of speed).
            assert select.select([leader], [], [], 300)[0], shown.decode(errors="replace")
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal has no process left
                break
            if not chunk:
                break
            shown += chunk
            if not pasted and b">>> " in shown:
                os.write(leader, typed.encode() + b"\x04")
                pasted = True
        assert process.wait(timeout=300) == 0, shown.decode(errors="replace")
    finally:
        os.close(leader)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return ESCAPES.sub("", shown.decode(errors="replace")).replace("\r\n", "\n")


def test_the_quickstart_pasted_at_the_interactive_prompt(tmp_path: Path) -> None:
    """The README's server-start line, run in a terminal as written (from this checkout, its
    .venv activated), and the Python block pasted at the prompt it opens: Python reads a
    compound statement at its prompt until a blank line, so the block must not follow one
    with another statement directly (a ``SyntaxError``, then a ``NameError`` per line after).
    The block prints the order's id and the order, and nothing goes wrong."""
    console, python = quickstart()
    start = console.strip().splitlines()[-1]
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CLOUDANT_", "PYTHON"))
    }
    venv = ROOT / ".venv"
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}",
        VIRTUAL_ENV=str(venv),
        HOME=str(tmp_path),  # no .pythonrc or .inputrc of this machine
        INPUTRC=os.devnull,
        TERM="xterm",
        NO_PROXY="127.0.0.1,localhost",
    )
    shown = in_a_terminal(start, ROOT, env, python)
    for trouble in ("Traceback", "Error:", "object at 0x"):
        assert trouble not in shown, shown
    # Lines Python printed (not the pasted lines it shows after its prompts).
    printed = [line for line in shown.splitlines() if not line.startswith((">>> ", "... "))]
    ids = [line for line in printed if line.startswith("order:")]
    assert len(ids) == 1, shown
    assert f"[{{'n': 1, '_id': '{ids[0]}'" in shown, shown
    assert "{'ok': True}" in printed, shown
