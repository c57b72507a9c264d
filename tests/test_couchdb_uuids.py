"""The ids CouchDB makes itself (``POST /{db}`` without ``_id``) with ``[uuids] algorithm =
uuid_v7``, the default on its main branch, in each of its three formats: recognised by
``explain_empty`` and the command's note, which name the setting and the form that reads them,
and queried exactly with that form (V7S, BASE36_V7, V7), on every server under test.
"""

from __future__ import annotations

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1

import couchids
from couchids import V7S
from couchids.core.explaining import FORM_CONSTANTS
from couchids.idforms.times import to_datetime

#: The same UUIDv7 in CouchDB's three formats, from main's rel/overlay/etc/default.ini
#: ("Examples of the same UUID value encoded in all the supported formats"); couch_uuids.erl
#: ``uuid_format``: base_16 is 32 hex, base_36 the number zero-padded to 25, rfc9562 36.
COUCH_V7 = {
    "base_16": (V7S, "0199df3759297032b402c3e61fbbf88f"),
    "base_36": (couchids.BASE36_V7, "03eudcyamunnfraqdgmopx09b"),
    "rfc9562": (couchids.V7, "0199df37-5929-7032-b402-c3e61fbbf88f"),
}
#: The time of that UUID (its first 48 bits: 0x0199df375929 ms).
COUCH_V7_MS = 0x0199DF375929


@pytest.mark.parametrize("format", sorted(COUCH_V7))
def test_couchdb_uuid_v7_ids_are_recognised_and_queried_exactly(
    format: str, client: CloudantV1, db: str
) -> None:
    form, example = COUCH_V7[format]
    assert couchids.decode(example).timestamp == to_datetime(COUCH_V7_MS)
    # As CouchDB's POST /db makes them: the example, and ids of the same layout a minute apart.
    times = [COUCH_V7_MS + n * 60_000 for n in (-2, -1, 1, 2)]
    ids = sorted([example, *(form.new(timestamp=ms) for ms in times)])
    for doc_id in ids:
        client.put_document(db=db, doc_id=doc_id, document={"n": 1})
    why = couchids.Database(client, db).explain_empty()
    assert why is not None and f"read as {form}" in why
    assert (
        f"form=couchids.{FORM_CONSTANTS[str(form)]}" in why
        and f"the ids CouchDB's [uuids] algorithm = uuid_v7, format {format} makes:" in why
    )
    said = couchids.Database(client, db).explain_empty(style="command")
    assert said is not None and f"--form {form}" in said
    handle = couchids.Database(client, db, form=form)
    assert handle.explain_empty() is None
    inside = [doc["_id"] for doc in handle.window(COUCH_V7_MS - 60_000, COUCH_V7_MS + 60_001)]
    assert inside == ids[3:0:-1]  # newest first
    assert handle.count(COUCH_V7_MS - 60_000, COUCH_V7_MS + 60_001) == 3
