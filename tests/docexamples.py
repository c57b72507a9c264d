"""The code examples of couchids' documentation, read from where they are written.

A *page* is what one reader reads from top to bottom, and its examples run in order in one
namespace (tests/test_examples.py runs them):

- ``README.md`` and every page of ``docs/`` (markdown and reStructuredText) with examples of
  its own: each page of the guide, the FAQ, getting started;
- ``docs/cli.rst``, written from the command's parser: the ``examples:`` of every
  subcommand's ``--help``;
- each module of ``couchids`` whose docstrings hold examples.

An example is a fenced ``python`` or ``pycon`` block (lines ``>>>`` run as doctests), a
reStructuredText ``.. code-block::`` of those, a literal block of a docstring (``Example::``,
always Python), or a ``couchids`` command: the lines of a ``console``/``shell`` block that start
with ``$ couchids`` (or ``couchids`` in a block without prompts), and the example lines of the
command's epilogs. ``>>>`` lines outside literal blocks of docstrings are doctests
(tests/test_doctests.py).

A block that cannot run everywhere says so on the last non-blank line before its opening line,
with a reason (an HTML comment in markdown, a comment in reStructuredText and docstrings):

- ``<!-- not run: REASON -->`` / ``.. not run: REASON``: never run (tests/test_examples.py
  allows a handful);
- ``<!-- needs couchdb: REASON -->`` / ``.. needs couchdb: REASON``: run on Apache CouchDB
  only (the replicator), skipped on PouchDB Server.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PACKAGE = ROOT / "couchids"

#: The languages of fenced blocks, and what is done with each.
PYTHON = frozenset({"python", "py", "pycon"})
SHELL = frozenset({"console", "shell", "bash", "sh"})
NOT_CODE = frozenset({"text", "json", "toml", "ini", "yaml", "diff"})

MARKER = re.compile(
    r"^\s*(?:<!--\s*(not run|needs couchdb):\s*(.*?)\s*-->"
    r"|\.\.\s+(not run|needs couchdb):\s*(.*?))\s*$"
)
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")
RST_CODE = re.compile(r"^(\s*)\.\.\s+code-block::\s*(\w+)\s*$")
INCLUDE = re.compile(r"^```\{include\}\s+(\S+)\s*$")
#: A literal block's opening paragraph ends with ``::`` (``Example::``).
LITERAL = re.compile(r"::\s*$")
#: ``NAME=value`` before a command.
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Command:
    """One ``couchids`` command line: its pipeline, each stage an argv with its program
    (``("couchids", "new", "-n", "5")``, ``("wc", "-l")``), the environment it sets, and
    where its output goes."""

    line: str
    stages: tuple[tuple[str, ...], ...]
    env: tuple[tuple[str, str], ...] = ()
    redirect: tuple[str, str] | None = None  # (">" or ">>", file)

    @property
    def argv(self) -> list[str]:
        """The arguments of the first stage, the ``couchids`` command."""
        return list(self.stages[0][1:])


@dataclass(frozen=True)
class Block:
    """One example: where it is (``path``, ``line`` of its first line of code), its language
    and code, and its marker (``not run``/``needs couchdb`` and the reason), if any."""

    path: str
    line: int
    language: str
    code: str
    marker: str | None = None
    reason: str | None = None
    commands: tuple[Command, ...] = ()

    @property
    def where(self) -> str:
        """``README.md:14``; a block of no file (``couchids new --help``) has line 0."""
        return f"{self.path}:{self.line}" if self.line else self.path

    @property
    def is_python(self) -> bool:
        return self.language in PYTHON


@dataclass
class Page:
    """The examples one reader reads in order; ``kind`` says what runs first (see
    tests/test_examples.py): ``markdown``, ``commands``, or a docstring context."""

    name: str
    kind: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def needs_couchdb(self) -> bool:
        return any(block.marker == "needs couchdb" for block in self.blocks) or any(
            needs_couchdb(command) for block in self.blocks for command in block.commands
        )

    def __str__(self) -> str:
        return self.name


def relative(path: Path) -> str:
    """``path`` from the checkout's top (``docs/faq.md``), or whole when it is elsewhere."""
    path = path.resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def _marker(lines: list[str], opening: int) -> tuple[str | None, str | None]:
    """The marker on the last non-blank line before line ``opening`` (0-based), if any."""
    for index in range(opening - 1, -1, -1):
        if lines[index].strip():
            found = MARKER.match(lines[index])
            if not found:
                return None, None
            kind = found[1] or found[3]
            return kind, (found[2] if found[1] else found[4]) or ""
    return None, None


# -- markdown -----------------------------------------------------------------------------


def markdown_blocks(path: Path) -> list[Block]:
    """Every fenced block of the markdown file ``path`` (MyST directives such as ``{include}``
    left out), in order; a block's language is its info string, ``""`` when it has none."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, language = opening[1], opening[2], opening[3].lower()
        end = index + 1
        while end < len(lines) and not (
            lines[end].strip().startswith(fence) and lines[end].strip().strip(fence[0]) == ""
        ):
            end += 1
        body = [line.removeprefix(indent) for line in lines[index + 1 : end]]
        if not language.startswith("{"):
            marker, reason = _marker(lines, index)
            blocks.append(
                _block(relative(path), index + 2, language, "\n".join(body) + "\n", marker, reason)
            )
        index = end + 1
    return blocks


def includes(path: Path) -> list[Path]:
    """The files a MyST page includes (``{include}``), resolved from its folder."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = INCLUDE.match(line.strip())
        if match:
            found.append((path.parent / match[1]).resolve())
    return found


# -- reStructuredText ---------------------------------------------------------------------


def rst_blocks(path: Path) -> list[Block]:
    """The ``.. code-block::`` blocks of a reStructuredText page."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    for index, line in enumerate(lines):
        opening = RST_CODE.match(line)
        if opening:
            first, body = _indented(lines, index + 1, len(opening[1]))
            marker, reason = _marker(lines, index)
            blocks.append(
                _block(relative(path), first + 1, opening[2].lower(), body, marker, reason)
            )
    return blocks


def _indented(lines: list[str], start: int, indent: int) -> tuple[int, str]:
    """The block of lines indented deeper than ``indent`` from line ``start`` on (blank lines
    before it skipped): its first line's index and its text, dedented."""
    while start < len(lines) and not lines[start].strip():
        start += 1
    end = start
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
    ):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    body = lines[start:end]
    margin = min((len(line) - len(line.lstrip()) for line in body if line.strip()), default=0)
    return start, "".join(line[margin:] + "\n" for line in body)


# -- docstrings -----------------------------------------------------------------------------


def docstring_blocks(path: Path) -> list[Block]:
    """The literal blocks (``Example::``) of every docstring of the module at ``path``: the
    module's, its classes', its functions' and methods', in the order of the source."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    blocks = []
    for node in ast.walk(tree):
        if not isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        ) or not (node.body and isinstance(node.body[0], ast.Expr)):
            continue
        string = node.body[0].value
        if not (isinstance(string, ast.Constant) and isinstance(string.value, str)):
            continue
        lines = string.value.splitlines()
        for index, line in enumerate(lines):
            if LITERAL.search(line) and not line.lstrip().startswith(".."):
                indent = len(line) - len(line.lstrip()) if index else 0
                first, body = _indented(lines, index + 1, indent)
                if body:
                    marker, reason = _marker(lines, index)
                    where = string.lineno + first
                    blocks.append(_block(relative(path), where, "python", body, marker, reason))
    return sorted(blocks, key=lambda block: block.line)


def module_name(path: Path) -> str:
    parts = path.resolve().relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# -- commands -----------------------------------------------------------------------------


def shell_commands(text: str) -> list[tuple[int, str]]:
    """The ``couchids`` command lines of a console block (0-based line, text): after a ``$ ``
    prompt when the block has prompts (the other lines are output), every line otherwise."""
    lines = text.splitlines()
    prompted = any(line.startswith("$ ") for line in lines)
    found = []
    for index, line in enumerate(lines):
        if prompted:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if is_couchids(line):
            found.append((index, line))
    return found


def is_couchids(line: str) -> bool:
    words = line.split()
    while words and ASSIGNMENT.match(words[0]):
        words.pop(0)
    return bool(words) and words[0] == "couchids"


def command(line: str) -> Command:
    """``line`` read as the shell would: ``NAME=value`` assignments, then a pipeline of
    commands separated by ``|``, the last with an optional ``>``/``>>`` redirection. A
    ``# comment`` ends the line."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|>")
    lexer.whitespace_split = True
    tokens = list(lexer)
    env = []
    while tokens and ASSIGNMENT.match(tokens[0]):
        name, _, value = tokens.pop(0).partition("=")
        env.append((name, value))
    redirect = None
    if len(tokens) >= 2 and tokens[-2] in (">", ">>"):
        redirect = (tokens[-2], tokens[-1])
        tokens = tokens[:-2]
    stages: list[list[str]] = [[]]
    for token in tokens:
        if token == "|":
            stages.append([])
        else:
            stages[-1].append(token)
    if not stages[0] or stages[0][0] != "couchids" or any(not stage for stage in stages):
        raise ValueError(f"not a couchids command line: {line!r}")
    return Command(line.strip(), tuple(map(tuple, stages)), tuple(env), redirect)


def subcommand(argv: list[str] | tuple[str, ...]) -> list[str]:
    """``["series", "list"]``, ``["latest"]``: the words of the subcommand ``argv`` runs."""
    words = [arg for arg in argv if not arg.startswith("-")]
    return words[:2] if words[:1] == ["series"] else words[:1]


def needs_couchdb(command: Command) -> bool:
    """Commands of the server's replicator, which PouchDB Server's ignores selectors of."""
    return subcommand(command.argv)[:1] in (["replicate"], ["replication"])


def _block(
    path: str, line: int, language: str, code: str, marker: str | None, reason: str | None
) -> Block:
    commands: tuple[Command, ...] = ()
    if language in SHELL:
        commands = tuple(command(text) for _, text in shell_commands(code))
    return Block(path, line, language, code, marker, reason, commands)


# -- the command's epilogs ------------------------------------------------------------------


def epilog_commands(epilog: str) -> list[str]:
    """The command lines under ``examples:`` in an epilog, without their descriptions (which
    follow two or more spaces)."""
    lines = epilog.splitlines()
    found, inside = [], False
    for line in lines:
        if line.strip() == "examples:":
            inside = True
            continue
        if inside:
            if not line.strip() or not line.startswith(" "):
                inside = False
                continue
            text = re.split(r"\s{2,}", line.strip())[0]
            if is_couchids(text):
                found.append(text)
    return found
