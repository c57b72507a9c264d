"""What Series.expire reads in the databases of the periods after its cutoff
(couchids.core.series.older_rows), run on an index held in memory: every id older than the
cutoff of the layouts a series writes is among the rows read, whatever else the database
holds, and a database holding only its own period's ids costs one request per type and one
more, whatever its size.
"""

from __future__ import annotations

import json
import random
from collections.abc import Generator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from couchids import KUUID, KUUID_MS_REVERSE, IdForm
from couchids.core.effects import Emit, Response, Send
from couchids.core.facts import FactsCache
from couchids.core.periods import SeriesLayout
from couchids.core.policy import RetryPolicy
from couchids.core.series import id_time, older_rows
from couchids.core.short import format_day
from couchids.idforms.times import to_ms

DAY = 86_400_000
PERIOD = to_ms("2026-03-10")  # the later period's start
CUTOFF = to_ms("2026-03-05T06:00:00Z")
TYPES = ["0", "00", "9x", "a", "ab", "k-1", "reading", "zz"]


def run_on(
    ids: list[str], program: Generator[Any, Any, Any], page_size: int
) -> tuple[list[str], int]:
    """The ids ``program`` emits, answered from the sorted index ``ids`` (``_all_docs``
    with start_key, end_key, limit, descending; ``GET /db``), and the requests it sent;
    no page it emits (what one request deletes) holds more than ``page_size`` rows."""
    index = sorted(set(ids))
    emitted: list[str] = []
    sent = 0
    outcome: Any = None
    while True:
        try:
            effect = program.send(outcome)
        except StopIteration:
            return emitted, sent
        outcome = None
        if isinstance(effect, Emit):
            assert 0 < len(effect.value) <= page_size
            emitted += [row["id"] for row in effect.value]
        elif isinstance(effect, Send):
            sent += 1
            request = effect.request
            if request.method == "GET":
                body: Any = {"db_name": "db"}
            else:
                query = json.loads(request.body or b"{}")
                assert request.path.endswith("/_all_docs"), request
                rows = list(reversed(index)) if query.get("descending") else index
                start, end = query.get("start_key"), query.get("end_key")
                if query.get("descending"):
                    rows = [i for i in rows if (start is None or i <= start)]
                    rows = [i for i in rows if end is None or i >= end]
                else:
                    rows = [i for i in rows if (start is None or i >= start)]
                    rows = [i for i in rows if end is None or i <= end]
                rows = rows[: query.get("limit", len(rows))]
                body = {"rows": [{"id": i, "key": i, "value": {"rev": "1-a"}} for i in rows]}
            outcome = Response(200, json.dumps(body).encode(), "application/json")
        else:
            raise AssertionError(f"unexpected effect {effect!r}")


def older(layout: SeriesLayout, ids: list[str]) -> set[str]:
    time_of = id_time(layout, PERIOD)
    return {i for i in ids if (t := time_of(i)) is not None and t < CUTOFF}


def read(form: IdForm, ids: list[str], page_size: int = 500) -> tuple[list[str], int]:
    def check(doc_type: str | None) -> Generator[Any, Any, bool]:
        return True
        yield  # a program

    policy = RetryPolicy.checked(0, 0, 60, "expire")
    program = older_rows(FactsCache(), "db", form, CUTOFF, policy, page_size, check)
    return run_on(ids, program, page_size)


def made(form: IdForm, rng: random.Random, times: list[int], types: list[str | None]) -> list[str]:
    ids = []
    for at in times:
        doc_type = rng.choice(types)
        if doc_type == "short":
            ids.append(f"{format_day(at)}-{rng.choice(['bc', 'df', 'ghk'])}")
        else:
            ids.append(form.new(at, type=doc_type))
    return ids


FORMS = [KUUID, KUUID_MS_REVERSE]
NOISE = ["_design/v", "import-7", "zzz", "a.json", "0", "00", "9x", "ab:x", "reading:"]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    form=st.sampled_from(FORMS),
    own=st.integers(0, 60),
    strays=st.integers(0, 8),
    page_size=st.sampled_from([1, 2, 3, 500]),
)
def test_every_older_id_is_among_the_rows_read(
    seed: int, form: IdForm, own: int, strays: int, page_size: int
) -> None:
    rng = random.Random(seed)
    layout = SeriesLayout("events", "month", form)
    kinds: list[str | None] = [None, "short", *TYPES]
    # The period's own ids, of every layout, and strays of any time from 2025 on.
    ids = made(form, rng, [PERIOD + rng.randrange(20 * DAY) for _ in range(own)], kinds)
    stray_times = [to_ms("2025-01-01") + rng.randrange(500 * DAY) for _ in range(strays)]
    ids += made(form, rng, stray_times, kinds) + rng.sample(NOISE, rng.randrange(len(NOISE)))
    emitted, _ = read(form, ids, page_size)
    assert older(layout, ids) <= set(emitted)
    assert len(emitted) == len(set(emitted)), "each row once"


def test_a_database_of_its_own_period_costs_a_request_per_type_and_one_more() -> None:
    rng = random.Random(7)
    types: list[str | None] = [None, "short", "alert", "event", "reading"]
    ids = made(KUUID, rng, [PERIOD + rng.randrange(20 * DAY) for _ in range(3000)], types)
    emitted, sent = read(KUUID, ids)
    # The untyped and short ids, read in pages (they sort before the types), one request
    # for each type's first id, and the last one that finds nothing more.
    untyped = [i for i in ids if ":" not in i]
    assert set(emitted) == set(untyped)
    assert sent <= 1 + -(-len(untyped) // 1000) + 3 + 1
    # A stray older id of a type costs that type's range (and the database's facts, once a
    # client).
    stray = KUUID.new(CUTOFF - DAY, type="event")
    emitted, more = read(KUUID, [*ids, stray])
    assert stray in emitted and more == sent + 2
