"""The shape of the public methods: at most 8 parameters each (the tuning every operation
shares is the handle's ``couchids.Options``, not a parameter of each method), a bad argument
refused with an error that names a parameter of the method called, and one vocabulary: the
table of docs/guide/vocabulary.md lists exactly the parameters of the public methods, and each
flag of the ``couchids`` command that feeds one sits in that parameter's row."""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import io
import re
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from faultproxy import client_for
from test_arguments import closed_port
from test_cli_flags import arguments, commands

import couchids
import couchids.aio
from couchids.errors import InvalidArgumentError, InvalidInputError

ROOT = Path(__file__).resolve().parents[1]
VOCABULARY = ROOT / "docs" / "guide" / "vocabulary.md"
#: The most parameters a public method takes (``self`` aside).
MOST = 8
#: A client whose server refuses every connection: a call that got past its checks fails fast.
C = client_for(f"http://127.0.0.1:{closed_port()}")


def public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every public method of the classes of ``couchids.__all__`` and ``couchids.aio.__all__``
    (their constructors too), and the public functions."""
    for module in (couchids, couchids.aio):
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and not issubclass(value, BaseException):
                for attr, member in vars(value).items():
                    if (attr.startswith("_") and attr != "__init__") or not callable(member):
                        continue
                    yield f"{module.__name__}.{name}.{attr}", member
            elif inspect.isfunction(value):
                yield f"{module.__name__}.{name}", value
    yield "couchids.Options", couchids.Options


def parameters(function: Callable[..., Any]) -> list[str]:
    return [p for p in inspect.signature(function).parameters if p not in ("self", "cls")]


PUBLIC = dict(public_callables())


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_at_most_eight_parameters(name: str) -> None:
    names = parameters(PUBLIC[name])
    assert len(names) <= MOST, f"{name} takes {len(names)} parameters: {names}"


def test_the_tuning_is_the_handles_not_each_methods() -> None:
    knobs = {f.name for f in dataclasses.fields(couchids.Options)}
    for name, function in PUBLIC.items():
        if "Replication." in name or name.startswith("couchids.Options"):
            continue  # a replication's status, wait and cancel take their one timeout
        assert not knobs & set(parameters(function)), name


# -- bad arguments -------------------------------------------------------------------------

#: For each parameter name, values no method accepts for it.
BAD: dict[str, list[Any]] = {
    "n": [-1, "3", True],
    "type": ["a b", 5],
    "form": ["kuuid", None.__class__],
    "newest_first": ["yes", 1],
    "include_docs": ["yes"],
    "index_only": ["yes"],
    "dry_run": ["no"],
    "purge": [1],
    "expire": ["yes"],
    "continuous": ["yes"],
    "create_target": ["yes"],
    "wait": ["yes"],
    "style": ["html"],
    "checkpoint": ["x", 5],
    "on_progress": [5],
    "doc": [["a"], "text"],
    "docs": [5, "text", {"a": 1}],
    "block": [0, 1.5],
    "name": ["a b"],
    "out": [5],
    "csv": [5],
    "target": ["B", 5],
    "target_db": ["B", 5],
    "mapping": [5],
    "time_field": [3],
    "server_url": [5, "ftp://x"],
    "every": ["0s", 5],
    "ahead": [-1, "1"],
    "poll": [-1, 0, "1", float("inf")],
    "options": [5, {"timeout": 5}],
    "rng": [5],
    "time_of": ["2024-01-01", 5],
    "key_of": ["order-1", 5],
}
#: Good values of the arguments a call needs, by parameter name.
GOOD: dict[str, Any] = {
    "n": 3,
    "start": "2024-01-01",
    "end": "2024-01-02",
    "before": "2024-01-01",
    "doc": {},
    "docs": [{}],
    "name": "seq",
    "every": "1h",
    "out": io.StringIO(),
    "target": "copy",
    "target_db": "copy",
    "secret": b"secret",
    "type": None,  # expire's, which must be given
}
#: Arguments checked only after a first request: still refused, but not first (none now).
LATE: set[tuple[str, str]] = set()


def handles() -> Iterator[tuple[str, Callable[..., Any], Callable[..., Any]]]:
    """(name, method, handle maker) of every method of the blocking handles: the asyncio
    ones are generated from the same source, so they check the same way."""
    makers = {
        "Database": lambda: couchids.Database(C, "db").with_options(retries=0, timeout=5),
        "Series": lambda: couchids.Series(C, "events").with_options(retries=0, timeout=5),
    }
    for kind, make in makers.items():
        cls = getattr(couchids, kind)
        for attr, member in vars(cls).items():
            if not attr.startswith("_") and callable(member):
                yield f"{kind}.{attr}", member, make


CASES = [
    pytest.param(
        name,
        param,
        bad,
        marks=[pytest.mark.xfail(strict=True, reason="checked late")]
        if (name, param) in LATE
        else [],
    )
    for name, method, _ in handles()
    for param in parameters(method)
    for bad in BAD.get(param, [])
    if not (name.endswith(".database") or name.endswith(".with_options"))
]


def call(name: str, param: str, bad: Any) -> Any:
    (method, make) = next((m, k) for n, m, k in handles() if n == name)
    handle = make()
    args: dict[str, Any] = {}
    signature = inspect.signature(method)
    for pname, spec in signature.parameters.items():
        if pname == "self":
            continue
        if pname == param:
            args[pname] = bad
        elif spec.default is inspect.Parameter.empty:
            args[pname] = GOOD[pname]
    got = getattr(handle, method.__name__)(**args)
    if inspect.isgenerator(got) or hasattr(got, "__next__"):
        next(iter(got))  # a stream checks its arguments when called; read a step anyway
    return got


@pytest.mark.parametrize(("name", "param", "bad"), CASES, ids=lambda x: repr(x)[:24])
def test_a_bad_argument_is_refused_naming_a_parameter_of_the_method(
    name: str, param: str, bad: Any
) -> None:
    (method,) = [m for n, m, _ in handles() if n == name]
    with pytest.raises(InvalidInputError) as caught:
        call(name, param, bad)
    if isinstance(caught.value, InvalidArgumentError):
        message = str(caught.value)
        named = [p for p in parameters(method) if re.search(rf"(^|[\s`'(]){p}(=|\[|\s)", message)]
        assert named, f"{name}({param}={bad!r}): {message!r} names no parameter of {name}"


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(couchids.Options)])
def test_a_bad_option_is_refused_naming_it(field: str) -> None:
    bad: dict[str, list[Any]] = {
        "timeout": [0, -1, "5", True, float("nan"), 10**9],
        "retries": [-1, 1.5, True],
        "backoff": [-1, 3, "0.1"],
    }
    for value in bad.get(field, [0, -1, 1.5, True, "1"]):
        with pytest.raises(InvalidArgumentError, match=rf"^{field}="):
            couchids.Options(**{field: value})
        with pytest.raises(InvalidArgumentError, match=rf"^{field}="):
            couchids.Database(C, "db").with_options(**{field: value})
    with pytest.raises(InvalidArgumentError, match="not an option"):
        couchids.Database(C, "db").with_options(page_size=5)


def test_with_options_keeps_the_handle_and_changes_only_what_it_names() -> None:
    shop = couchids.Database(C, "shop", form=couchids.V7S)
    fast = shop.with_options(timeout=5, parallel=8)
    assert (fast.name, fast.form, fast.client) == (shop.name, shop.form, shop.client)
    assert fast.options == couchids.Options(timeout=5, parallel=8)
    assert shop.options == couchids.Options()  # frozen: the first handle is unchanged
    events = couchids.Series(C, "events", every="day").with_options(batch_size=50)
    assert events.every == "day" and events.database("2026-01-01").options.batch_size == 50


# -- the vocabulary ------------------------------------------------------------------------

#: Flags of the command that stand for a parameter of another name.
ALIAS = {
    "since": "start",
    "until": "end",
    "at": "timestamp",
    "period": "every",
    "all_types": "type",
    "oldest_first": "newest_first",
    "ids_only": "include_docs",
    "yes": "dry_run",
    "after": "checkpoint",
    "key_env": "secret",
    "follow": "wait",
    **dict.fromkeys(("ms", "short", "v7", "v7s", "sep"), "form"),
}


def table() -> list[tuple[set[str], str, set[str]]]:
    """The rows of the table: the parameter names of each, what they are, and its flags."""
    rows: list[tuple[set[str], str, set[str]]] = []
    for line in VOCABULARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        names = set(re.findall(r"`(\w+)`", cells[0]))
        rows.append((names, cells[1], set(re.findall(r"`(-[^`]+)`", cells[2]))))
    return rows


def vocabulary() -> list[tuple[set[str], set[str]]]:
    """The rows of the table: the parameter names of each, and its flags."""
    return [(names, flags) for names, _, flags in table()]


#: The callables whose parameters the vocabulary names: the handles' methods, the functions
#: and Options (not the values they answer, such as WriteResult, nor the client's plumbing).
NAMED = {
    name: function
    for name, function in PUBLIC.items()
    if re.search(r"\.(Async)?(Database|Series|Sequence|Replication)\b|\.(connect|id|decode)$", name)
    or name == "couchids.Options"
}


def test_the_vocabulary_lists_exactly_the_public_parameters() -> None:
    names = [name for row, _ in vocabulary() for name in row]
    assert len(names) == len(set(names)), "a parameter in two rows"
    table = set(names)
    used = {p for function in NAMED.values() for p in parameters(function)}
    assert used - table == set(), "parameters missing from docs/guide/vocabulary.md"
    assert table - used == set(), "rows of docs/guide/vocabulary.md that no method takes"


def takes_a_function(function: Callable[..., Any], param: str) -> bool:
    """Whether ``param`` of ``function`` is a function: its annotation names ``Callable`` or
    an alias of one (``KeyOf``, ``TimeOf``), which stands for a function of something."""
    annotation = inspect.signature(function).parameters[param].annotation
    text = annotation if isinstance(annotation, str) else repr(annotation)
    scope = getattr(inspect.unwrap(function), "__globals__", {})
    return any(
        word == "Callable" or typing.get_origin(scope.get(word)) is collections.abc.Callable
        for word in re.findall(r"\w+", text)
    )


def test_each_parameter_name_has_one_meaning() -> None:
    """One name, one thing: a name in one row only (see above), a function in every method
    that takes it or in none (``timestamp`` is a time, ``time_of`` a function giving one;
    ``key`` a key, ``key_of`` a function giving one), and its row says "function" exactly
    when it is one."""
    kinds: dict[str, dict[bool, list[str]]] = {}
    for name, function in NAMED.items():
        for param in parameters(function):
            kind = takes_a_function(function, param)
            kinds.setdefault(param, {}).setdefault(kind, []).append(name)
    both = {p: (k[True][0], k[False][0]) for p, k in kinds.items() if len(k) == 2}
    assert not both, f"names that are a function in one method and a value in another: {both}"
    for names, meaning, _ in table():
        functions = {name for name in names if True in kinds.get(name, {})}
        assert functions in (set(), names), f"a row of functions and values: {sorted(names)}"
        assert ("function" in meaning) == bool(functions), (
            f"the row of {sorted(names)} must say 'function' exactly when it is one: {meaning!r}"
        )


def test_each_flag_sits_in_the_row_of_its_parameter() -> None:
    rows = vocabulary()
    table = {name for names, _ in rows for name in names}
    flags_of: dict[str, set[str]] = {}
    for command, parser in commands():
        for action in arguments(parser):
            # tail's --since is follow's since (a time too); elsewhere it starts a window.
            tail_since = command == "tail" and action.dest == "since"
            param = action.dest if tail_since else ALIAS.get(action.dest, action.dest)
            if action.option_strings and param in table:
                flags_of.setdefault(param, set()).update(action.option_strings)
    for names, flags in rows:
        fed = set().union(*(flags_of.get(name, set()) for name in names))
        assert flags == fed, f"the flags of {sorted(names)}"


def public_fields() -> Iterator[tuple[str, str, str]]:
    """``(class, field, what its docstring's Attributes say of it)`` for each field of the public
    dataclasses (Checkpoint, Options, WriteResult, ...); ``""`` where they say nothing."""
    for module in (couchids, couchids.aio):
        for name in module.__all__:
            value = getattr(module, name)
            if not (inspect.isclass(value) and dataclasses.is_dataclass(value)):
                continue
            doc = inspect.getdoc(value) or ""
            for field in dataclasses.fields(value):
                said = re.search(rf"^ +{field.name}: (.*(?:\n {{8,}}\S.*)*)", doc, re.MULTILINE)
                yield name, field.name, " ".join(said.group(1).split()) if said else ""


def test_the_public_fields_name_a_changes_sequence_since_seq() -> None:
    """The vocabulary holds for the fields of the public dataclasses too: ``since`` is a time
    everywhere, and a ``_changes`` sequence is ``since_seq`` (Checkpoint's, which ``follow``
    continues from, and its JSON key)."""
    fields = list(public_fields())
    sequences = {(cls, field) for cls, field, said in fields if "``_changes`` sequence" in said}
    assert ("Checkpoint", "since_seq") in sequences
    assert {field for _, field in sequences} == {"since_seq"}, sequences
    assert [f"{cls}.{field}" for cls, field, _ in fields if field == "since"] == []
    assert '"since_seq":"0"' in couchids.Checkpoint(since_seq="0").to_json()


def test_the_vocabulary_page_is_in_the_guide() -> None:
    index = (ROOT / "docs" / "guide" / "index.md").read_text(encoding="utf-8")
    assert "\nvocabulary\n" in index and "{doc}`vocabulary`" in index
