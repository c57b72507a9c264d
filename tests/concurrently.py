"""Running the independent cases of a test at once, naming every case that failed: in threads
(:func:`each_at_once`, for blocking calls), or each on an event loop of its own
(:func:`each_at_once_on_loops`, for the asyncio sources in ``tests/_async``, whose blocking
twins ``scripts/unasync.py`` writes with :func:`each_at_once` instead)."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial


def each_at_once(cases: Mapping[str, Callable[[], object]]) -> None:
    """Run every case at once, each in its own thread; then fail if any failed, naming each
    with its assertion's message (or, for an error no check expected, its traceback)."""
    failures: dict[str, str] = {}

    def run(name: str, case: Callable[[], object]) -> None:
        try:
            case()
        except AssertionError as exc:
            failures[name] = f"{name}: {exc}"
        except BaseException as exc:  # the case broke: say where
            failures[name] = f"{name}: " + "".join(traceback.format_exception(exc))

    assert cases, "no cases"
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        for name, case in cases.items():
            pool.submit(run, name, case)
    _report(failures, cases)


def each_at_once_on_loops(cases: Mapping[str, Callable[[], Awaitable[object]]]) -> None:
    """:func:`each_at_once` for coroutines: every case on an event loop of its own, in its own
    thread (so that what one case blocks on, such as starting a proxy, delays no other)."""
    each_at_once({name: partial(asyncio.run, case()) for name, case in cases.items()})


def _report(failures: dict[str, str], cases: Mapping[str, object]) -> None:
    failed = [failures[name] for name in cases if name in failures]
    assert not failed, f"{len(failed)} of {len(cases)} failed:\n" + "\n".join(failed)
