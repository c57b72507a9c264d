"""What writes couchids' documentation pages from the code, so they cannot drift.

``.. couchids-cli::`` walks the argparse parser of the ``couchids`` command
(:func:`couchids.cli.main._parser`) and renders the command and each subcommand, and the
subcommands of those that have some (``couchids series list``): its usage, description, every
option with its help, and its epilog (the examples).

``.. couchids-api:: PAGE`` documents the public names of ``couchids.__all__`` (or, for the
pages ``aio`` and ``kuuid``, of ``couchids.aio.__all__`` and ``couchids.kuuid.__all__``) that
belong on PAGE, with autodoc: a name added to
``__all__`` appears on its page without an edit here. A name's page follows from what it is
and where it is defined (``couchids_api_pages`` in conf.py maps module prefixes to pages; a
value loaded on first use is defined where the package's ``_LAZY`` says); exceptions go to
``errors`` and a name of no listed module to ``other``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.ext.napoleon import GoogleDocstring
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective
from sphinx.util.parsing import nested_parse_to_nodes

#: Width of the usage lines, whatever the terminal of the build.
USAGE_WIDTH = 88
#: What each kind of name is called in a page's subheadings, in the order they appear.
KINDS = ("Functions", "Classes", "Constants", "Exceptions")


# -- docstrings ---------------------------------------------------------------------------


def google_docstrings(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """Napoleon's reading of Google-style sections, for all but attributes and constants.

    Napoleon reads the first line of an attribute's docstring as ``type: description``; the
    docstrings of couchids' properties and constants are prose whose first line may hold a
    colon (``Newest-first ids: later times have smaller keys.``), and their types come from
    the annotations. So ``napoleon_google_docstring`` is off in conf.py and this runs instead.
    """
    if what in ("attribute", "property", "data"):
        return
    lines[:] = GoogleDocstring(lines, app.config, app, what, name, obj, options).lines()


# -- the command line ---------------------------------------------------------------------


def escape(text: str) -> str:
    """``text`` as reStructuredText that shows every character as it is."""
    return re.sub(r"([^\w\s])", r"\\\1", text)


def indent(text: str, prefix: str = "   ") -> list[str]:
    return [prefix + line if line.strip() else "" for line in text.splitlines()]


@contextlib.contextmanager
def columns(width: int) -> Iterator[None]:
    """argparse wraps usage to the terminal (``COLUMNS``): fix the width for the build."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of ``parser``, by name, in the order ``--help`` lists them."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def summaries(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The one-line help of each subcommand, as ``couchids --help`` shows it."""
    found: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                found[choice.dest] = choice.help or ""
    return found


def invocation(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """``--type T``, ``-h, --help``, ``--format {bars,spark}``: as ``--help`` writes it."""
    formatter = parser._get_formatter()
    return formatter._format_action_invocation(action)


def help_text(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    formatter = parser._get_formatter()
    text = formatter._expand_help(action) if action.help else ""
    if action.choices is not None and action.metavar is not None:
        # The usage shows the choices only where no metavar stands for them.
        listed = ", ".join(str(choice) for choice in action.choices)
        text = f"{text} (one of {listed})" if text else f"one of {listed}"
    return text


def usage(parser: argparse.ArgumentParser) -> str:
    with columns(USAGE_WIDTH):
        return parser.format_usage().removeprefix("usage: ").strip()


def command_rst(parser: argparse.ArgumentParser, summary: str) -> list[str]:
    """One command as reStructuredText: title, summary, usage, description, options, epilog."""
    title = parser.prog
    lines = [f".. _cli-{title.replace(' ', '-')}:", "", title, "-" * len(title), ""]
    lines += [".. code-block:: text", "", *indent(usage(parser)), ""]
    # The description says more than the one line of help that ``couchids --help`` lists.
    if parser.description or summary:
        lines += [escape(parser.description or summary), ""]
    lines += [f".. program:: {title}", ""]
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if a.help is not argparse.SUPPRESS]
        actions = [a for a in actions if not isinstance(a, argparse._SubParsersAction)]
        if not actions:
            continue
        lines += [f".. rubric:: {escape(group.title or 'options')}", ""]
        if group.description:
            lines += [escape(group.description), ""]
        for action in actions:
            lines += [f".. option:: {invocation(parser, action)}", ""]
            text = help_text(parser, action)
            if text:
                lines += [*indent(escape(text)), ""]
    exclusive = [
        " | ".join(a.option_strings[0] for a in group._group_actions if a.option_strings)
        for group in parser._mutually_exclusive_groups
    ]
    if exclusive:
        lines += ["Only one of each: " + "; ".join(f"``{e}``" for e in exclusive) + ".", ""]
    if parser.epilog:
        lines += [".. code-block:: text", "", *indent(parser.epilog), ""]
    return lines


class CommandLine(SphinxDirective):
    """``.. couchids-cli::``: the whole ``couchids`` command, from its parser."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from couchids.cli import main as cli

        parser = cli._parser()
        lines = command_rst(parser, "") + commands_rst(parser)
        modules = (
            "couchids.cli.main",
            "couchids.cli.options",
            "couchids.cli.ids",
            "couchids.cli.reading",
            "couchids.cli.lifecycle",
            "couchids.cli.replicating",
            "couchids.cli.series",
        )
        for module in modules:
            self.env.note_dependency(importlib.import_module(module).__file__ or "")
        return nested_parse_to_nodes(self.state, StringList(lines), source="<couchids-cli>")


def commands_rst(parser: argparse.ArgumentParser) -> list[str]:
    """The list of ``parser``'s subcommands, then each of them (and theirs: ``couchids series
    list``) as :func:`command_rst` writes it; nothing for a command without subcommands."""
    found = subcommands(parser)
    if not found:
        return []
    helps = summaries(parser)
    lines = [".. rubric:: commands", ""]
    for name, command in found.items():
        lines += [f"- :ref:`{command.prog} <cli-{command.prog.replace(' ', '-')}>`: "]
        lines[-1] += escape(helps.get(name, ""))
    lines.append("")
    for name, command in found.items():
        lines += command_rst(command, helps.get(name, "")) + commands_rst(command)
    return lines


# -- the API --------------------------------------------------------------------------------


#: The pages that list a public module of their own (every other page lists ``couchids``').
MODULE_PAGES = {"aio": "couchids.aio", "kuuid": "couchids.kuuid"}


def public_module(page: str) -> ModuleType:
    return importlib.import_module(MODULE_PAGES.get(page, "couchids"))


def defined_in(package: ModuleType, name: str, obj: Any) -> str:
    """The module that defines ``obj``: its own for a function or class, else the one the
    package loads it from on first use (``_LAZY``), else that of its class (a form, a flag)."""
    module = getattr(obj, "__module__", None)
    if isinstance(module, str) and (inspect.isroutine(obj) or inspect.isclass(obj)):
        return module
    lazy: dict[str, str] = getattr(package, "_LAZY", {})
    if name in lazy:
        return importlib.util.resolve_name(lazy[name], package.__name__)
    return type(obj).__module__


def page_of(package: ModuleType, name: str, obj: Any, config: Any) -> str:
    for page, module in MODULE_PAGES.items():
        if package.__name__ == module:
            return page
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "errors"
    module = defined_in(package, name, obj)
    best, best_len = "other", 0
    for page, prefixes in config.couchids_api_pages.items():
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = page, len(prefix)
    return best


def kind_of(package: ModuleType, name: str) -> str:
    obj = getattr(package, name)
    if inspect.isclass(obj):
        return "Exceptions" if issubclass(obj, BaseException) else "Classes"
    if inspect.isroutine(obj):
        return "Functions"
    return "Constants"


def names_on(page: str, config: Any) -> list[str]:
    """The sorted public names that belong on ``page``."""
    module = public_module(page)
    names = sorted(module.__all__)
    return [n for n in names if page_of(module, n, getattr(module, n), config) == page]


def attribute_doc(package: ModuleType, name: str, obj: Any) -> list[str]:
    """The ``#:`` comment above the assignment of a constant, in whichever module holds it."""
    others = (m for m in list(sys.modules) if m.startswith("couchids.") and m != package.__name__)
    homes = [package.__name__, *sorted(others)]
    for home in homes:
        module = sys.modules.get(home)
        if module is None or getattr(module, name, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(home).find_attr_docs()
        except Exception:  # a module without source: look further
            continue
        if ("", name) in docs:
            return [line for line in docs[("", name)] if line is not None]
    return []


def constant_rst(package: ModuleType, name: str, obj: Any) -> list[str]:
    from couchids import IdForm

    lines = [f".. py:data:: {name}", f"   :module: {package.__name__}"]
    lines += [f"   :value: {obj!r}", ""]
    doc = attribute_doc(package, name, obj)
    if not doc and isinstance(obj, IdForm):
        cls = type(obj).__name__
        public = getattr(package, cls, None) is type(obj)
        kind = f":class:`~couchids.{cls}`" if public else f"``{cls}``"
        doc = [f"The ``{obj}`` id form, a {kind}."]
    return lines + indent("\n".join(doc)) + [""]


def entry_rst(package: ModuleType, name: str, obj: Any) -> list[str]:
    full = f"{package.__name__}.{name}"
    kind = kind_of(package, name)
    if kind == "Functions":
        return [f".. autofunction:: {full}", ""]
    if kind == "Exceptions":
        return [f".. autoexception:: {full}", "   :members:", "   :show-inheritance:", ""]
    if kind == "Classes":
        return [f".. autoclass:: {full}", "   :members:", ""]
    return constant_rst(package, name, obj)


class PublicNames(SphinxDirective):
    """``.. couchids-api:: PAGE``: every public name that belongs on PAGE, by kind."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        page = self.arguments[0]
        package = public_module(page)
        names = names_on(page, self.config)
        lines: list[str] = []
        for kind in KINDS:
            of_kind = [n for n in names if kind_of(package, n) == kind]
            if not of_kind:
                continue
            if len({kind_of(package, n) for n in names}) > 1:
                lines += [kind, "-" * len(kind), ""]
            for name in of_kind:
                lines += entry_rst(package, name, getattr(package, name))
        self.env.note_dependency(package.__file__ or "")
        return nested_parse_to_nodes(self.state, StringList(lines), source=f"<api {page}>")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("couchids_api_pages", {}, "env")
    app.add_directive("couchids-cli", CommandLine)
    app.add_directive("couchids-api", PublicNames)
    app.setup_extension("sphinx.ext.napoleon")
    app.connect("autodoc-process-docstring", google_docstrings)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
