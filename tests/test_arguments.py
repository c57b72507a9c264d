"""Bad arguments across the public API: each raises its documented couchids error before any
request is sent (the client points at a closed port, so a request would fail differently)."""

from __future__ import annotations

import io
import socket
from collections.abc import Callable
from typing import Any

import pytest
from faultproxy import client_for

import couchids
import couchids.kuuid
from couchids.cli.main import EXIT_BAD_INPUT, main
from couchids.errors import (
    InvalidArgumentError,
    InvalidIdError,
    InvalidInputError,
    InvalidTimeError,
    InvalidTypeError,
)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


C = client_for(f"http://127.0.0.1:{closed_port()}")
A = InvalidArgumentError
ROWS: list[tuple[str, Callable[[], Any], type[InvalidInputError]]] = [
    ("latest client None", lambda: couchids.Database(None, "db").latest(), A),  # type: ignore[arg-type]
    ("latest client str", lambda: couchids.Database("http://x", "db").latest(), A),  # type: ignore[arg-type]
    ("latest db empty", lambda: couchids.Database(C, "").latest(), A),
    ("latest db int", lambda: couchids.Database(C, 5).latest(), A),  # type: ignore[arg-type]
    ("latest db upper", lambda: couchids.Database(C, "Orders").latest(), A),
    ("latest db _private", lambda: couchids.Database(C, "_secret").latest(), A),
    ("latest db too long", lambda: couchids.Database(C, "a" * 239).latest(), A),
    ("latest db space", lambda: couchids.Database(C, "my db").latest(), A),
    ("latest n negative", lambda: couchids.Database(C, "db").latest(-1), A),
    ("latest n float", lambda: couchids.Database(C, "db").latest(2.0), A),  # type: ignore[arg-type]
    ("latest n bool", lambda: couchids.Database(C, "db").latest(True), A),
    ("latest type bad", lambda: couchids.Database(C, "db").latest(type="_x"), InvalidTypeError),
    ("latest form str", lambda: couchids.Database(C, "db").latest(form="kuuid"), A),  # type: ignore[arg-type]
    ("latest include_docs str", lambda: couchids.Database(C, "db").latest(include_docs="no"), A),  # type: ignore[arg-type]
    ("latest timeout 0", lambda: couchids.Database(C, "db").with_options(timeout=0).latest(), A),
    (
        "latest timeout negative",
        lambda: couchids.Database(C, "db").with_options(timeout=-5).latest(),
        A,
    ),
    (
        "latest timeout nan",
        lambda: couchids.Database(C, "db").with_options(timeout=float("nan")).latest(),
        A,
    ),
    (
        "latest timeout inf",
        lambda: couchids.Database(C, "db").with_options(timeout=float("inf")).latest(),
        A,
    ),
    (
        "latest timeout str",
        lambda: couchids.Database(C, "db").with_options(timeout="5").latest(),
        A,
    ),  # type: ignore[arg-type]
    ("window client None", lambda: couchids.Database(None, "db").window(0, 1), A),  # type: ignore[arg-type]
    ("window db None", lambda: couchids.Database(C, None).window(0, 1), A),  # type: ignore[arg-type]
    ("window end before start", lambda: couchids.Database(C, "db").window(10, 1), InvalidTimeError),
    ("window start float", lambda: couchids.Database(C, "db").window(1.5, 2), InvalidTimeError),  # type: ignore[arg-type]
    (
        "window start garbage",
        lambda: couchids.Database(C, "db").window("soon", None),
        InvalidTimeError,
    ),
    ("window start negative", lambda: couchids.Database(C, "db").window(-1, 2), InvalidTimeError),
    (
        "window end year 10000",
        lambda: couchids.Database(C, "db").window(0, 10**15),
        InvalidTimeError,
    ),
    (
        "window newest_first str",
        lambda: couchids.Database(C, "db").window(0, 1, newest_first="no"),
        A,
    ),  # type: ignore[arg-type]
    (
        "window page_size 0",
        lambda: couchids.Database(C, "db").with_options(batch_size=0).window(0, 1),
        A,
    ),
    (
        "window timeout bool",
        lambda: couchids.Database(C, "db").with_options(timeout=True).window(0, 1),
        A,
    ),
    ("create client None", lambda: couchids.Database(None, "db").create({}), A),  # type: ignore[arg-type]
    ("create db bad", lambda: couchids.Database(C, "DB").create({}), A),
    ("create doc list", lambda: couchids.Database(C, "db").create([]), A),  # type: ignore[arg-type]
    ("create doc _rev", lambda: couchids.Database(C, "db").create({"_rev": "1-a"}), A),
    ("create doc nan", lambda: couchids.Database(C, "db").create({"x": float("nan")}), A),
    (
        "create retries -1",
        lambda: couchids.Database(C, "db").with_options(retries=-1).create({}),
        A,
    ),
    (
        "create backoff huge",
        lambda: couchids.Database(C, "db").with_options(backoff=100).create({}),
        A,
    ),
    ("create timeout 0", lambda: couchids.Database(C, "db").with_options(timeout=0).create({}), A),
    (
        "create timestamp float",
        lambda: couchids.Database(C, "db").create({}, timestamp=1.0),
        InvalidTimeError,
    ),  # type: ignore[arg-type]
    ("bulk_create docs None", lambda: couchids.Database(C, "db").bulk_create(None), A),  # type: ignore[arg-type]
    ("bulk_create docs dict", lambda: couchids.Database(C, "db").bulk_create({"a": 1}), A),  # type: ignore[arg-type]
    (
        "bulk_create batch 0",
        lambda: couchids.Database(C, "db").with_options(batch_size=0).bulk_create([{}]),
        A,
    ),
    ("bulk_create client int", lambda: couchids.Database(1, "db").bulk_create([{}]), A),  # type: ignore[arg-type]
    (
        "bulk_create timeout 1e9",
        lambda: couchids.Database(C, "db").with_options(timeout=1e9).bulk_create([{}]),
        A,
    ),
    ("create_short client None", lambda: couchids.Database(None, "db").create_short({}), A),  # type: ignore[arg-type]
    ("create_short db bad", lambda: couchids.Database(C, "1db").create_short({}), A),
    ("create_short doc _id", lambda: couchids.Database(C, "db").create_short({"_id": "x"}), A),
    (
        "create_short timeout -1",
        lambda: couchids.Database(C, "db").with_options(timeout=-1).create_short({}),
        A,
    ),
    ("bulk_create_iter docs None", lambda: couchids.Database(C, "db").bulk_create_iter(None), A),  # type: ignore[arg-type]
    ("bulk_create_iter client None", lambda: couchids.Database(None, "db").bulk_create_iter([]), A),  # type: ignore[arg-type]
    (
        "bulk_create_iter timeout 0",
        lambda: couchids.Database(C, "db").with_options(timeout=0).bulk_create_iter([]),
        A,
    ),
    ("count client None", lambda: couchids.Database(None, "db").count(0, 1), A),  # type: ignore[arg-type]
    ("count db upper", lambda: couchids.Database(C, "DB").count(0, 1), A),
    ("count end before start", lambda: couchids.Database(C, "db").count(10, 1), InvalidTimeError),
    ("count index_only str", lambda: couchids.Database(C, "db").count(0, 1, index_only="yes"), A),  # type: ignore[arg-type]
    (
        "count timeout -1",
        lambda: couchids.Database(C, "db").with_options(timeout=-1).count(0, 1),
        A,
    ),
    ("histogram every bad", lambda: couchids.Database(C, "db").histogram(0, 1, every="soon"), A),
    (
        "histogram workers 0",
        lambda: couchids.Database(C, "db").with_options(parallel=0).histogram(0, 1),
        A,
    ),
    ("histogram db int", lambda: couchids.Database(C, 7).histogram(0, 1), A),  # type: ignore[arg-type]
    (
        "histogram timeout nan",
        lambda: couchids.Database(C, "db").with_options(timeout=float("nan")).histogram(0, 1),
        A,
    ),
    ("expire client None", lambda: couchids.Database(None, "db").expire(1, type="t"), A),  # type: ignore[arg-type]
    ("expire db empty", lambda: couchids.Database(C, "").expire(1, type="t"), A),
    ("expire dry_run str", lambda: couchids.Database(C, "db").expire(1, type="t", dry_run="no"), A),  # type: ignore[arg-type]
    (
        "expire batch 0",
        lambda: couchids.Database(C, "db").with_options(batch_size=0).expire(1, type="t"),
        A,
    ),
    (
        "expire before garbage",
        lambda: couchids.Database(C, "db").expire("soon", type="t"),
        InvalidTimeError,
    ),
    ("expire type bad", lambda: couchids.Database(C, "db").expire(1, type="_x"), InvalidTypeError),
    (
        "expire timeout 0",
        lambda: couchids.Database(C, "db").with_options(timeout=0).expire(1, type="t"),
        A,
    ),
    (
        "export client None",
        lambda: couchids.Database(None, "db").export(0, 1, out=io.StringIO()),
        A,
    ),  # type: ignore[arg-type]
    (
        "export csv no fields",
        lambda: couchids.Database(C, "db").export(0, 1, out=io.StringIO(), csv=[]),
        A,
    ),
    (
        "export timeout str",
        lambda: (
            couchids.Database(C, "db").with_options(timeout="5").export(0, 1, out=io.StringIO())
        ),
        A,
    ),  # type: ignore[arg-type]
    ("archive target bad", lambda: couchids.Database(C, "db").archive("Target", 0, 1), A),
    ("archive client None", lambda: couchids.Database(None, "db").archive("t", 0, 1), A),  # type: ignore[arg-type]
    ("archive expire str", lambda: couchids.Database(C, "db").archive("t", 0, 1, expire="yes"), A),  # type: ignore[arg-type]
    (
        "archive timeout 0",
        lambda: couchids.Database(C, "db").with_options(timeout=0).archive("t", 0, 1),
        A,
    ),
    ("follow client None", lambda: couchids.Database(None, "db").follow(), A),  # type: ignore[arg-type]
    ("follow db bad", lambda: couchids.Database(C, "a b").follow(), A),
    ("follow wait str", lambda: couchids.Database(C, "db").follow(wait="no"), A),  # type: ignore[arg-type]
    ("follow batch 0", lambda: couchids.Database(C, "db").with_options(batch_size=0).follow(), A),
    (
        "follow timeout inf",
        lambda: couchids.Database(C, "db").with_options(timeout=float("inf")).follow(),
        A,
    ),
    ("rekey client None", lambda: couchids.Database(None, "a").rekey("b", secret=b"k"), A),  # type: ignore[arg-type]
    ("rekey target bad", lambda: couchids.Database(C, "a").rekey("B", secret=b"k"), A),
    ("rekey key empty", lambda: couchids.Database(C, "a").rekey("b", secret=b""), A),
    (
        "rekey time_field int",
        lambda: couchids.Database(C, "a").rekey("b", secret=b"k", time_field=3),
        A,
    ),  # type: ignore[arg-type]
    (
        "rekey timeout 0",
        lambda: couchids.Database(C, "a").with_options(timeout=0).rekey("b", secret=b"k"),
        A,
    ),
    ("Sequence client None", lambda: couchids.Sequence(None, "db", "n"), A),  # type: ignore[arg-type]
    ("Sequence db bad", lambda: couchids.Sequence(C, "DB", "n"), A),
    ("Sequence name bad", lambda: couchids.Sequence(C, "db", "a b"), A),
    ("Sequence block 0", lambda: couchids.Sequence(C, "db", "n", block=0), A),
    (
        "Sequence timeout 0",
        lambda: couchids.Sequence(C, "db", "n", options=couchids.Options(timeout=0)),
        A,
    ),
    (
        "Sequence.new_id form",
        lambda: couchids.Sequence(C, "db", "n").new_id(form=couchids.KUUID),  # type: ignore[arg-type]
        A,
    ),
    (
        "Sequence.new_id type",
        lambda: couchids.Sequence(C, "db", "n").new_id(type="_x"),
        InvalidTypeError,
    ),
    ("id reverse str", lambda: couchids.id(reverse="no"), A),  # type: ignore[arg-type]
    ("id millisecond int", lambda: couchids.id(millisecond=1), A),  # type: ignore[arg-type]
    ("id random 5", lambda: couchids.id(random=5), A),
    ("id type bad", lambda: couchids.id(type="a:b"), InvalidTypeError),
    ("id timestamp before 1970", lambda: couchids.id("1969-12-31"), InvalidTimeError),
    ("prefix reverse str", lambda: couchids.kuuid.prefix(reverse="yes"), A),  # type: ignore[arg-type]
    ("decode not str", lambda: couchids.decode(5), InvalidIdError),  # type: ignore[arg-type]
    ("decode reverse str", lambda: couchids.decode("x" * 32, reverse="no"), A),  # type: ignore[arg-type]
    ("IdForm reverse str", lambda: couchids.IdForm(reverse="no"), A),  # type: ignore[arg-type]
    ("IdForm kind", lambda: couchids.IdForm(kind="ulid"), A),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("call", "error"), [row[1:] for row in ROWS], ids=[r[0] for r in ROWS])
def test_bad_argument(call: Callable[[], Any], error: type[InvalidInputError]) -> None:
    with pytest.raises(error) as caught:
        result = call()
        if hasattr(result, "__next__"):
            next(result)
    assert str(caught.value)


def test_the_table_is_long_enough() -> None:
    assert len(ROWS) >= 40


@pytest.mark.parametrize(
    "argv",
    [
        ["new", "--at", "1000000000d"],
        ["new", "--at", "9" * 400 + "w"],
        ["new", "-n", "-1"],
        ["latest", "db", "--timeout", "0"],
        ["latest", "db", "--timeout", "nan"],
        ["window", "db", "--since", "1000000000d"],
        ["window", "db", "--since", "1d", "--timeout", "-3"],
        ["count", "db", "--since", "1d", "--timeout", "0"],
        ["count", "db", "--since", "1000000000d"],
        ["histogram", "db", "--since", "1d", "--timeout", "x"],
        ["expire", "db", "--before", "1d", "--type", "t", "--timeout", "-1"],
        ["expire", "db", "--before", "1000000000d", "--type", "t"],
        ["export", "db", "--since", "1d", "--timeout", "inf"],
        ["tail", "db", "--timeout", "0"],
        ["rekey", "a", "b", "--timeout", "nan"],
    ],
)
def test_bad_command_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("couchids: error:") and len(err.splitlines()) == 1, err
