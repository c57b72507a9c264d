"""The documentation site builds with Sphinx, nitpicky and warnings as errors (a reference to a
name that does not exist fails the suite), and holds what the code says it must: an entry for
every public name, every subcommand and option of the command, and the FAQ's questions. The
pages' examples run in tests/test_examples.py."""

from __future__ import annotations

import argparse
import html
import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest

import couchids
import couchids.aio
import couchids.kuuid
from couchids.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module: the command docs/development.md gives, into a
    tmp dir."""
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [
            *(sys.executable, "-m", "sphinx", "-q", "-n", "-W", "--keep-going", "-b", "html"),
            *("-d", str(out / "doctrees"), str(DOCS), str(out / "html")),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    return out / "html"


def page(site: Path, name: str) -> str:
    return (site / name).read_text(encoding="utf-8")


def test_the_site_builds_without_a_warning_into_several_pages(site: Path) -> None:
    generated = {"genindex.html", "search.html", "py-modindex.html"}
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")} - generated
    assert len(pages) >= 5, pages
    for expected in ("index.html", "getting-started.html", "cli.html", "faq.html"):
        assert expected in pages
    assert "changelog.html" in pages and "api/index.html" in pages
    assert "development.html" in pages
    # Every page of the guide is built, and linked from the guide's index and the site's.
    guide = {f"guide/{path.stem}.html" for path in (DOCS / "guide").glob("*.md")}
    assert len(guide) >= 10 and guide <= pages
    for index in ("index.html", "guide/index.html"):
        # The page's own text, not the sidebar's navigation, which lists every page.
        text = page(site, index).split('<div class="body"', 1)[1]
        text = text.split('<div class="sphinxsidebar"', 1)[0]
        prefix = "" if index == "guide/index.html" else "guide/"
        for name in sorted(guide - {"guide/index.html"}):
            assert f'href="{prefix}{name.removeprefix("guide/")}"' in text, (index, name)


def test_every_public_name_has_an_entry(site: Path) -> None:
    entry = re.compile(r'<dt class="sig sig-object py" id="([^"]+)"')
    anchors = set()
    for api_page in (site / "api").glob("*.html"):
        anchors |= set(entry.findall(api_page.read_text(encoding="utf-8")))
    for module in (couchids, couchids.aio, couchids.kuuid):
        missing = {f"{module.__name__}.{name}" for name in module.__all__} - anchors
        assert not missing, f"no entry in the API reference for {sorted(missing)}"


def test_the_api_pages_split_the_names(site: Path) -> None:
    def entries(name: str) -> str:
        return page(site, f"api/{name}.html")

    assert 'id="couchids.KUUID"' in entries("ids")
    assert 'id="couchids.Database.latest"' in entries("queries")
    assert 'id="couchids.Checkpoint"' in entries("lifecycle")
    assert 'id="couchids.ServerTimeoutError"' in entries("errors")
    assert 'id="couchids.kuuid.prefixReverseMs"' in entries("kuuid")
    assert 'id="couchids.core.expiry.ExpireReport"' in entries("lifecycle")
    assert 'id="couchids.aio.AsyncDatabase.latest"' in entries("aio")
    assert "couchids.couchids." not in "".join(entries(n) for n in ("ids", "queries"))


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand, and the subcommands of those that have some (``series list``)."""
    found: dict[str, argparse.ArgumentParser] = {}
    parents = [("", cli._parser())]
    while parents:
        prefix, parser = parents.pop(0)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[prefix + name] = sub
                    parents.append((f"{prefix}{name} ", sub))
    assert found, "the couchids parser has subcommands"
    assert "series list" in found, "the subcommands of couchids series are walked"
    return found


def test_the_cli_reference_has_every_subcommand_and_option(site: Path) -> None:
    text = page(site, "cli.html")
    for name, parser in subcommands().items():
        start = text.find(f'id="cli-couchids-{name.replace(" ", "-")}"')
        assert start >= 0, f"no section for couchids {name}"
        end = text.find('id="cli-couchids-', start + 1)
        section = text[start : end if end > 0 else len(text)]
        options = [s for action in parser._actions for s in action.option_strings]
        assert "--help" in options
        for option in options:
            shown = f'<span class="sig-name descname"><span class="pre">{html.escape(option)}'
            assert shown in section, f"couchids {name} {option} is not in the CLI reference"
        if parser.epilog:
            first_line = parser.epilog.strip().splitlines()[0]
            assert first_line in html.unescape(section), f"couchids {name}'s epilog is shown"


def test_the_faq_page_shows_its_questions(site: Path) -> None:
    faq = (DOCS / "faq.md").read_text(encoding="utf-8")
    questions = re.findall(r"^\*\*(.+?)\*\*", faq, re.MULTILINE)
    assert len(questions) >= 3
    text = html.unescape(re.sub(r"<[^>]+>", "", page(site, "faq.html")))
    for question in questions:
        assert re.sub(r"`", "", question) in text


def development_layout() -> list[str]:
    """The lines of docs/development.md's map of the checkout (its first ``text`` block)."""
    text = (DOCS / "development.md").read_text(encoding="utf-8")
    return text.split("```text\n", 1)[1].split("```", 1)[0].splitlines()


def test_contributing_names_only_files_that_exist() -> None:
    """Each file or folder CONTRIBUTING.md names (``couchids/core/options.py``, ``tests/_sync/``,
    ``core/`` and ``ulid.py`` of the package) exists; ``<concern>`` and ``*`` stand for any
    name."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    named = {
        name
        for name in re.findall(r"`([^`\s]+)`", text)
        if re.search(r"/|\.(py|md|rst)$", name) and not name.startswith(".venv/")
    }
    assert len(named) >= 30, sorted(named)
    missing = []
    for name in sorted(named):
        pattern = re.sub(r"<[^>]+>", "*", name)
        package = ROOT / "couchids"
        found = [*ROOT.glob(pattern), *(package.glob if "/" in pattern else package.rglob)(pattern)]
        if not found:
            missing.append(name)
    assert not missing, f"CONTRIBUTING.md names what is not in the checkout: {missing}"


def test_the_development_page_maps_every_module_and_notebook() -> None:
    """Each module of couchids/ is named in the map: a subpackage's under its heading (or as
    ``aio/database.py``), a top-level one among couchids/'s; each notebook on its line, and on
    the guide's page of notebooks."""
    lines = development_layout()
    end = next(i for i, line in enumerate(lines) if line.startswith("tests/"))
    package = "\n".join(lines[:end])
    sections: dict[str, str] = {}
    for i, line in enumerate(lines[:end]):
        heading = re.match(r"  (\w+)/ ", line)
        if heading:
            rest = itertools.takewhile(lambda line: line[:3].strip() == "", lines[i + 1 : end])
            sections[heading[1]] = "\n".join([line, *rest])
    missing = []
    for module in sorted((ROOT / "couchids").rglob("*.py")):
        relative = module.relative_to(ROOT / "couchids")
        if module.name in ("__init__.py", "__main__.py"):
            continue
        where = package if len(relative.parts) == 1 else sections.get(relative.parts[0], "")
        if not re.search(rf"\b{re.escape(module.name)}", where) and str(relative) not in package:
            missing.append(str(relative))
    assert not missing, f"docs/development.md does not name {missing}"
    (notebooks,) = [line for line in lines if line.startswith("notebooks/")]
    guide = (DOCS / "guide" / "notebooks.md").read_text(encoding="utf-8")
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        assert notebook.stem.replace("-", " ") in notebooks, notebook.name
        assert f"`notebooks/{notebook.name}`" in guide, notebook.name
