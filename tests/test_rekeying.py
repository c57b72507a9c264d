"""Database.rekey: one target document per source document, at the right time, also after an
interrupted first run; the source untouched. The tests of both APIs are written once, in
tests/_async/test_rekeying.py."""

from __future__ import annotations

import io
import json
import random
import uuid

import pytest
from faultproxy import all_docs
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import (
    KUUID,
    KUUID_MS_REVERSE,
    V7,
    V7S,
    Checkpoint,
    IdForm,
    InvalidArgumentError,
    decode,
)
from couchids.core.rekeying import RekeyReport, derived_id
from couchids.idforms.times import to_ms

KEY = b"test secret"
T0 = to_ms("2024-05-01")


class Stop(Exception):
    pass


def sources(client: CloudantV1, db: str, seed: int) -> dict[str, int]:
    """Documents with random ids and a ``created`` field; return id -> time (ms)."""
    rng = random.Random(seed)
    made = {}
    docs = []
    for n in range(57):
        ms = T0 + rng.randrange(30 * 86_400_000)
        created: object = ms if n % 2 else "2024-05-01T00:00:00Z"
        if n % 2 == 0:
            created = couchids.idforms.times.to_datetime(ms).isoformat()
        doc_id = uuid.UUID(int=rng.getrandbits(128)).hex
        made[doc_id] = ms
        docs.append({"_id": doc_id, "created": created, "n": n})
    docs.append({"_id": "no-time", "n": -1})
    docs.append({"_id": "_design/app", "views": {}})
    client.post_bulk_docs(db=db, bulk_docs={"docs": docs}).get_result()
    return made


@pytest.mark.parametrize("form", [KUUID, KUUID_MS_REVERSE, V7, V7S], ids=str)
def test_rekey_after_an_interrupted_first_run(client: CloudantV1, db: str, form: IdForm) -> None:
    made = sources(client, db, hash(str(form)) % 1000)
    before = all_docs(client, db)
    target = db + "_rekeyed"
    client.put_database(db=target)
    try:
        mapping = io.StringIO()
        mark = Checkpoint()

        def stop(report: RekeyReport) -> None:
            if report.checkpoint.done >= 20:
                raise Stop

        options = {"secret": KEY, "time_field": "created", "type": "order"}
        with pytest.raises(Stop):
            couchids.Database(client, db, form=form).with_options(batch_size=9).rekey(
                target,
                mapping=mapping,
                checkpoint=mark,
                on_progress=stop,
                **options,  # type: ignore[arg-type]
            )
        # A run from the start (not resumed) stores nothing twice either.
        report = (
            couchids.Database(client, db, form=form)
            .with_options(batch_size=9)
            .rekey(target, mapping=mapping, **options)
        )  # type: ignore[arg-type]
        assert report.duplicates >= 20 and report.copied + report.duplicates == len(made)
        assert report.skipped == [("no-time", "no field 'created'")]
        stored = all_docs(client, target)
        pairs = {
            json.loads(line)["old"]: json.loads(line)["new"]
            for line in mapping.getvalue().splitlines()
        }
        assert set(pairs) == set(made) and set(stored) == set(pairs.values())
        for old, new in pairs.items():
            decoded = decode(new)
            assert decoded.type == "order" and decoded.form == form
            expected = made[old] - made[old] % form.unit_ms
            assert to_ms(decoded.timestamp) == expected
            assert stored[new]["n"] == before[old]["n"]
        assert all_docs(client, db) == before
    finally:
        client.delete_database(db=target)


def test_utc_random_ids_give_their_own_time(client: CloudantV1, db: str) -> None:
    micros = T0 * 1000 + 123_456
    source = f"{micros:014x}" + "ab" * 9
    client.put_document(db=db, doc_id=source, document={"x": 1})
    # 32 hex digits that are no utc_random id: a v7s id (read as utc_random, a time in 1983)
    # and one of CouchDB's random ids whose digits read as a time in 3000.
    others = [V7S.new(T0), f"{to_ms('3000-01-01') * 1000:014x}" + "cd" * 9]
    for other in others:
        client.put_document(db=db, doc_id=other, document={"x": 2})
    target = db + "_rekeyed"
    client.put_database(db=target)
    try:
        report = couchids.Database(client, db).rekey(target, secret=KEY, type="e")
        assert sorted(doc_id for doc_id, _ in report.skipped) == sorted(others)
        assert all("outside the utc_random runway" in why for _, why in report.skipped)
        (new,) = all_docs(client, target)
        assert new == derived_id(KUUID, T0 + 123, source, KEY, type="e")
        assert to_ms(decode(new).timestamp) == T0
    finally:
        client.delete_database(db=target)


def test_derived_ids_depend_on_the_key_and_the_source_id() -> None:
    one = derived_id(V7S, T0, "a", KEY, type=None)
    assert one == derived_id(V7S, T0, "a", KEY, type=None)
    assert one != derived_id(V7S, T0, "b", KEY, type=None)
    assert one != derived_id(V7S, T0, "a", b"other", type=None)


def test_create_target_is_a_bool(client: CloudantV1, db: str) -> None:
    with pytest.raises(InvalidArgumentError, match="create_target='yes'"):
        couchids.Database(client, db).rekey("other", secret=KEY, create_target="yes")  # type: ignore[arg-type]
