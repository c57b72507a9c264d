"""The database handles: ``couchids.Database`` is generated from ``couchids.aio.AsyncDatabase``
(scripts/unasync.py), both have the same methods with the same parameters, and every operation
on a database is a method of its handle, never a module-level function."""

from __future__ import annotations

import inspect
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import aio

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "unasync.py"


def public(cls: type) -> dict[str, Any]:
    return {name: member for name, member in vars(cls).items() if not name.startswith("_")}


@pytest.mark.parametrize(
    ("blocking", "asyncio"),
    [
        (couchids.Database, aio.AsyncDatabase),
        (couchids.Sequence, aio.AsyncSequence),
        (couchids.Series, aio.AsyncSeries),
    ],
    ids=["Database", "Sequence", "Series"],
)
def test_both_handles_have_the_same_methods_and_parameters(blocking: type, asyncio: type) -> None:
    ours, theirs = public(blocking), public(asyncio)
    assert sorted(ours) == sorted(theirs)
    for name, method in ours.items():
        mine, twin = inspect.signature(method), inspect.signature(theirs[name])
        assert list(mine.parameters) == list(twin.parameters), name
        for parameter in mine.parameters.values():
            other = twin.parameters[parameter.name]
            assert (parameter.kind, parameter.default) == (other.kind, other.default), (
                name,
                parameter.name,
            )
        assert method.__doc__ and len(method.__doc__) > 80, f"{name} has no full docstring"
        assert not inspect.iscoroutinefunction(method), name


def test_a_series_method_takes_its_database_twin_s_parameters_alike() -> None:
    # A series' operation is the database's across periods: it takes no parameter the
    # database's does not, and those they share have the same kind and default.
    database, series = public(couchids.Database), public(couchids.Series)
    shared = set(database) & set(series)
    assert shared >= {"latest", "window", "create", "bulk_create", "create_short", "count"}
    assert shared >= {"histogram", "expire", "export"}
    for name in shared:
        mine = inspect.signature(series[name]).parameters
        twin = inspect.signature(database[name]).parameters
        assert set(mine) <= set(twin), (name, set(mine) - set(twin))
        for parameter in mine.values():
            other = twin[parameter.name]
            assert (parameter.kind, parameter.default) == (other.kind, other.default), (
                name,
                parameter.name,
            )
    head = (ROOT / "couchids" / "series.py").read_text(encoding="utf-8").splitlines()[:2]
    assert "Generated from couchids/aio/series.py by scripts/unasync.py" in head[0]


#: The operations on one database.
OPERATIONS = (
    *("latest", "window", "create", "bulk_create", "bulk_create_iter", "create_short"),
    *("count", "histogram", "expire", "export", "archive", "follow", "rekey", "replicate"),
    *("types_present", "explain_empty", "sequence"),
)


def test_every_operation_is_a_method_of_the_handle_and_only_that() -> None:
    assert set(OPERATIONS) <= set(public(couchids.Database))
    assert set(OPERATIONS) <= set(public(aio.AsyncDatabase))
    # One way to do each thing: no module-level twin such as couchids.latest(client, db, ...).
    for module in (couchids, aio):
        for name in OPERATIONS:
            assert not hasattr(module, name), f"{module.__name__}.{name}"
            assert name not in module.__all__ and name not in dir(module)
    with pytest.raises(AttributeError, match="module 'couchids' has no attribute 'latest'"):
        couchids.latest  # noqa: B018


def test_the_blocking_file_says_it_is_generated_and_matches_its_source() -> None:
    head = (ROOT / "couchids" / "database.py").read_text(encoding="utf-8").splitlines()[:2]
    assert "Generated from couchids/aio/database.py by scripts/unasync.py" in head[0]
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def copy_of_the_generated_tree(tmp_path: Path) -> Path:
    """A copy of the script and of what it reads and writes (the handles and the operation
    tests); the script's path in it."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "unasync.py")
    shutil.copytree(ROOT / "couchids", tmp_path / "couchids")
    for folder in ("_async", "_sync"):
        shutil.copytree(ROOT / "tests" / folder, tmp_path / "tests" / folder)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path / "scripts" / "unasync.py"


def test_the_check_fails_when_the_twins_drift(tmp_path: Path) -> None:
    # A copy of the tree where the asyncio source gained a parameter the blocking file lacks.
    script = copy_of_the_generated_tree(tmp_path)
    source = tmp_path / "couchids" / "aio" / "database.py"
    text = source.read_text(encoding="utf-8")
    source.write_text(text.replace("        n: int = 10,\n", "        n: int = 11,\n", 1))
    drifted = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True
    )
    assert drifted.returncode == 1
    assert "n: int = 11" in drifted.stdout and "differs from its asyncio source" in drifted.stdout
    subprocess.run([sys.executable, str(script)], check=True)
    assert "n: int = 11" in (tmp_path / "couchids" / "database.py").read_text(encoding="utf-8")


def test_the_check_covers_the_operation_tests(tmp_path: Path) -> None:
    # A blocking twin edited by hand, a generated twin whose source is gone, and a new source.
    script = copy_of_the_generated_tree(tmp_path)
    sources, twins = tmp_path / "tests" / "_async", tmp_path / "tests" / "_sync"
    assert sorted(p.name for p in sources.glob("test_*.py")) == sorted(
        p.name for p in twins.glob("test_*.py")
    )
    twin = next(twins.glob("test_*.py"))
    twin.write_text(twin.read_text(encoding="utf-8") + "# by hand\n", encoding="utf-8")
    shutil.copy(twin, twins / "test_gone.py")
    (sources / "test_new.py").write_text(
        '"""New."""\n\n\nasync def test_new(async_client: object) -> None:\n    await f()\n',
        encoding="utf-8",
    )
    drifted = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True
    )
    assert drifted.returncode == 1
    assert f"tests/_sync/{twin.name} differs from its asyncio source" in drifted.stdout
    assert "tests/_sync/test_new.py differs from its asyncio source" in drifted.stdout
    assert "tests/_sync/test_gone.py is generated from a source that is gone" in drifted.stdout
    subprocess.run([sys.executable, str(script)], check=True)
    assert "# by hand" not in twin.read_text(encoding="utf-8")
    assert not (twins / "test_gone.py").exists()
    made = (twins / "test_new.py").read_text(encoding="utf-8")
    assert made.startswith("# Generated from tests/_async/test_new.py by scripts/unasync.py")
    assert "def test_new(blocking_client: object) -> None:\n    f()" in made
    assert subprocess.run([sys.executable, str(script), "--check"]).returncode == 0


def test_a_substitution_that_changes_nothing_fails_the_run(tmp_path: Path) -> None:
    # As httpcore's script does: a rule no source needs any more is an error, in both modes.
    script = copy_of_the_generated_tree(tmp_path)
    text = script.read_text(encoding="utf-8")
    rule = '    (r"\\bAsyncClient\\b", "CloudantV1"),\n'
    assert rule in text
    script.write_text(
        text.replace(rule, rule + '    (r"\\bNoSuchName\\b", "Other"),\n'), encoding="utf-8"
    )
    for mode in (["--check"], []):
        done = subprocess.run([sys.executable, str(script), *mode], capture_output=True, text=True)
        assert done.returncode == 1, mode
        assert "the substitution '\\\\bNoSuchName\\\\b' -> 'Other' changed nothing" in done.stdout
    # Every rule of the real script is used.
    assert subprocess.run([sys.executable, str(SCRIPT), "--check"]).returncode == 0


def test_a_handle_checks_its_arguments_once(client: CloudantV1) -> None:
    with pytest.raises(couchids.InvalidArgumentError, match="not a CouchDB database name"):
        couchids.Database(client, "Shop")
    with pytest.raises(couchids.InvalidArgumentError, match="pass an id form"):
        couchids.Database(client, "shop", form="kuuid")  # type: ignore[arg-type]
    with pytest.raises(couchids.InvalidArgumentError, match="CloudantV1"):
        couchids.Database(object(), "shop")  # type: ignore[arg-type]
    shop = couchids.Database(client, "shop", form=couchids.V7S)
    assert shop.form is couchids.V7S and shop.name == "shop"
    assert "shop" in repr(shop)


def test_the_handle_form_is_the_default_of_every_call(client: CloudantV1, db: str) -> None:
    stored = couchids.Database(client, db, form=couchids.V7S).create({"n": 1}, type="t")
    assert couchids.decode(stored.id, form=couchids.V7S).type == "t"
    assert [
        d["_id"] for d in couchids.Database(client, db, form=couchids.V7S).latest(type="t")
    ] == [stored.id]
    assert couchids.Database(client, db).latest(type="t") == []  # kuuid: another form
    assert couchids.Database(client, db).latest(type="t", form=couchids.V7S)[0]["_id"] == stored.id


def test_the_handle_takes_times_as_strings_and_warns_of_nothing(
    client: CloudantV1, db: str
) -> None:
    shop = couchids.Database(client, db)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made = shop.create({"n": 1}, type="a", timestamp="2024-05-01")
        assert [d["_id"] for d in shop.latest(5, type="a")] == [made.id]
        rows = list(shop.with_options(batch_size=7).window("2024-01-01", None, type="a"))
        assert [r["_id"] for r in rows] == [made.id]
        short = shop.create_short({"n": 2}, timestamp="2024-05-01")
        assert short.id.startswith("240501-")
        assert shop.count("2024-01-01", None, type="a") == 1


def test_the_async_handle_answers_as_the_blocking_one(client: CloudantV1, db: str) -> None:
    import asyncio

    async def main() -> list[str]:
        async with aio.AsyncClient(client) as ac:
            shop = aio.AsyncDatabase(ac, db)
            await shop.create({"n": 1}, type="a")
            return [
                d["_id"] async for d in shop.with_options(batch_size=3).window(0, None, type="a")
            ]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made = asyncio.run(main())
    assert len(made) == 1 and made == [
        d["_id"] for d in couchids.Database(client, db).latest(type="a")
    ]


def test_a_window_streams_rows_or_pages_one_or_the_other(client: CloudantV1, db: str) -> None:
    shop = couchids.Database(client, db)
    made = [r.id for r in shop.bulk_create([{"n": n} for n in range(7)], type="a")]
    window = ("2020-01-01", None)
    pages = list(shop.with_options(batch_size=3, parallel=1).window(*window, type="a").pages())
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [d["_id"] for page in pages for d in page] == sorted(made, reverse=True)
    rows = shop.with_options(batch_size=3, parallel=1).window(*window, type="a")
    assert next(rows)["_id"] == max(made)
    with pytest.raises(couchids.InvalidArgumentError, match="one or the other"):
        rows.pages()
    rows.close()
    assert list(rows) == []
    taken = shop.window(*window, type="a")
    taken.pages()
    with pytest.raises(couchids.InvalidArgumentError, match="being read already"):
        next(taken)


def test_an_async_window_streams_rows_or_pages(client: CloudantV1, db: str) -> None:
    import asyncio

    made = [r.id for r in couchids.Database(client, db).bulk_create([{"n": 1}] * 5, type="a")]

    async def main() -> tuple[list[int], list[str]]:
        async with aio.AsyncClient(client) as ac:
            shop = aio.AsyncDatabase(ac, db)
            answer = shop.with_options(batch_size=2, parallel=1).window(
                0, None, type="a", newest_first=False
            )
            sizes = [len(page) async for page in answer.pages()]
            rows = shop.window(0, None, type="a", newest_first=False)
            first = await anext(rows)
            with pytest.raises(couchids.InvalidArgumentError, match="one or the other"):
                rows.pages()
            await rows.aclose()
            return sizes, [first["_id"]]

    sizes, first = asyncio.run(main())
    assert sizes == [2, 2, 1] and first == [min(made)]
