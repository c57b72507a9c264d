"""How the benches time: the median of interleaved rounds.

Every way is run once first (a warm-up whose answer is returned, for the caller to check that
the ways agree), then ``rounds`` rounds run each way once, in the given order on even rounds
and the reverse on odd ones, so that no way always runs first or last.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def interleaved(
    ways: Mapping[str, Callable[[], T]], rounds: int
) -> tuple[dict[str, float], dict[str, T]]:
    """The median seconds of each way over ``rounds`` interleaved rounds, and each way's
    answer to its warm-up run."""
    answers = {name: way() for name, way in ways.items()}
    times: dict[str, list[float]] = {name: [] for name in ways}
    order = list(ways.items())
    for round_number in range(rounds):
        for name, way in order if round_number % 2 == 0 else reversed(order):
            gc.collect()
            began = time.perf_counter()
            way()
            times[name].append(time.perf_counter() - began)
    return {name: statistics.median(spent) for name, spent in times.items()}, answers
