"""The time windows the ground-truth query tests check, shared by tests/test_query.py and
tests/test_partitioned.py."""

from __future__ import annotations

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z, on a second edge
SECOND, DAY, WEEK = 1000, 86_400_000, 7 * 86_400_000
FAR_FUTURE = 4_000_000_000_000
#: Windows relative to T0: one millisecond at and after a second edge, across an edge, one
#: second, a second without its edge, seconds, days, weeks, and everything recent.
WINDOWS = (
    (0, 1),
    (1, 2),
    (999, 1001),
    (0, SECOND),
    (1, SECOND),
    (500, 4500),
    (-DAY, DAY),
    (-3 * WEEK, 4 * WEEK),
    (-52 * WEEK, FAR_FUTURE - T0),
)
