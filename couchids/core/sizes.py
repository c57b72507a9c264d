"""How large a ``_bulk_docs`` request and its documents may be, for IBM Cloudant's limits of
64 MB a request and 1 MB a document, ``413`` past them ("Limits", "Request payload"): bulk
writes and archive's copies cut their batches by bytes and halve one the server refuses.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Final

from couchids.core.effects import Program
from couchids.core.exactjson import dumps
from couchids.errors import ServerError

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_DOCUMENT_BYTES",
    "TOO_LARGE",
    "Filling",
    "measured",
    "write_in_halves",
]

#: The most bytes of one ``_bulk_docs`` request's body: under IBM Cloudant's 64 MB.
DEFAULT_BATCH_BYTES: Final = 60_000_000
#: The most bytes of one document as couchids sends it (its JSON, ``_id`` included): IBM
#: Cloudant's 1 MB, read as decimal. A larger document is not sent: it is a failed row.
DEFAULT_DOCUMENT_BYTES: Final = 1_000_000
#: The status of a request or a document the server refuses as too large.
TOO_LARGE: Final = 413


class Filling:
    """The body of one ``_bulk_docs`` request as documents join it (the ``envelope``'s bytes
    and the documents, comma-separated): it takes a document while it stays within
    ``batch_bytes``, and an empty batch takes any.

    >>> batch = Filling(20, envelope=11)
    >>> batch.takes(5), batch.add(5), batch.takes(4), batch.takes(3)
    (True, None, False, True)
    """

    def __init__(self, batch_bytes: int, *, envelope: int) -> None:
        self.batch_bytes = batch_bytes
        self.size = envelope
        self.count = 0

    def grown(self, part: int) -> int:
        """The body's bytes with a document of ``part`` bytes added."""
        return self.size + part + (1 if self.count else 0)

    def takes(self, part: int) -> bool:
        """Whether a document of ``part`` bytes joins this batch (else it starts the next)."""
        return self.count == 0 or self.grown(part) <= self.batch_bytes

    def add(self, part: int) -> None:
        """Count a document of ``part`` bytes in."""
        self.size = self.grown(part)
        self.count += 1


def measured(part: bytes, document_bytes: int) -> int:
    r"""The size of the document ``part`` (its JSON as a write sends it, non-ASCII characters
    escaped) as the server measures it against its limit: its strings in UTF-8, so an "é"
    sent as ``\u00e9`` (6 bytes) counts 2 (CouchDB's ``couch_ejson_size``; Cloudant's 1 MB),
    and without its inline attachments (``_attachments``, whose data CouchDB holds apart and
    measures against a limit of its own, ``max_attachment_size``: 10 MB on Cloudant).
    Never more than ``len(part)``; worked out only for a part over ``document_bytes``.

    >>> measured(b'{"a":"\\u00e9"}', 10), measured(b'{"a":"\\u00e9"}', 100)
    (10, 14)
    >>> measured(b'{"a":1,"_attachments":{"f":{"data":"QUFB"}}}', 10)
    7
    """
    if len(part) <= document_bytes or (b"\\u" not in part and b'"_attachments"' not in part):
        return len(part)
    doc = json.loads(part)
    if isinstance(doc, dict):
        doc.pop("_attachments", None)
    return min(len(part), len(dumps(doc)))


def write_in_halves(
    parts: Sequence[bytes],
    write: Callable[[list[int]], Program[None]],
    fail: Callable[[int, str], None],
    settled: Callable[[int], bool],
    *,
    document_bytes: int,
    batch_bytes: int,
    envelope: int,
    sizes: Sequence[int] | None = None,
) -> Program[None]:
    """Write the documents ``parts`` (as sent; by index, in order) with ``write``, in groups
    within ``batch_bytes`` (``envelope`` and the parts, as :class:`Filling` counts them). One
    over ``document_bytes`` (its ``sizes`` entry, else its part's length) is not sent: ``fail``
    is told why. A group refused as too large (``413``) is written again as its two halves,
    down to single documents: one refused alone goes to ``fail`` too. Documents ``settled``
    before a refusal are not sent again.

    Raises:
        ServerError: any other failure of ``write``.
    """
    groups: list[list[int]] = []
    filling: Filling | None = None
    for index, part in enumerate(parts):
        size = len(part) if sizes is None else sizes[index]
        if size > document_bytes:
            fail(
                index,
                f"{size:,} bytes as JSON (inline attachments aside), over "
                f"document_bytes={document_bytes:,} "
                "(IBM Cloudant stores documents of at most 1 MB); it was not sent",
            )
            continue
        if filling is None or not filling.takes(len(part)):
            filling = Filling(batch_bytes, envelope=envelope)
            groups.append([])
        filling.add(len(part))
        groups[-1].append(index)
    while groups:
        group = [index for index in groups.pop(0) if not settled(index)]
        if not group:
            continue
        try:
            yield from write(group)
        except ServerError as exc:
            if exc.status != TOO_LARGE:
                raise
            if len(group) == 1:
                fail(group[0], f"refused alone by the server: {exc}")
                continue
            half = len(group) // 2
            groups[:0] = [group[:half], group[half:]]
