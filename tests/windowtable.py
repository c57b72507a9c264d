"""The time windows and id forms the ground-truth tests check, shared by tests/test_query.py,
tests/test_partitioned.py and the lifecycle tests (tests/test_counting.py,
tests/test_expiry.py)."""

from __future__ import annotations

from couchids import BASE36_V7, IdForm
from couchids.idforms.base36 import BASE36_V7_UNPADDED
from couchids.idforms.couchid import UtcIdForm
from couchids.idforms.forms import ALL_FORMS

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

#: Every form whose ids hold a time that sorts in ``_all_docs``: each preset ``decode`` tries
#: (every kuuid mode and block count, the UUIDv7 forms, tid62, base36 padded and unpadded,
#: utc_random, ULID) and a ``utc_id`` form.
TIME_FORMS: tuple[IdForm, ...] = (*(f for f in ALL_FORMS if f.sortable), UtcIdForm("-n1"))


def make_id(form: IdForm, ms: int, doc_type: str | None) -> str:
    """An id of ``form`` made at ``ms``. couchids reads unpadded base36 UUIDv7s but never
    makes them: one is a padded id without its leading ``0``, as the Identifiers article
    writes it."""
    if form != BASE36_V7_UNPADDED:
        return form.new(ms, type=doc_type)
    prefix = form.type_prefix(doc_type)
    padded = BASE36_V7.with_separator(form.separator).new(ms, type=doc_type)[len(prefix) :]
    assert padded[0] == "0", padded
    return prefix + padded[1:]
