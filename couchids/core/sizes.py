"""How large a ``_bulk_docs`` request and its documents may be, for IBM Cloudant's limits of
64 MB a request and 1 MB a document (https://cloud.ibm.com/docs/Cloudant?topic=Cloudant-limits,
"Request payload"), which it answers with ``413`` past them: the cutting of a batch by bytes,
the check of one document, and the halving of a batch the server refuses as too large. Bulk
writes (``couchids.core.writes``) and archive's copies (``couchids.core.exporting``)
split their requests with these, the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from couchids.core.effects import Program
from couchids.errors import ServerError

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_DOCUMENT_BYTES",
    "TOO_LARGE",
    "Filling",
    "halving",
    "over_document_bytes",
]

#: The most bytes of one ``_bulk_docs`` request's body: under IBM Cloudant's 64 MB a request
#: (https://cloud.ibm.com/docs/Cloudant?topic=Cloudant-limits, "Request payload"), which
#: answers 413 past it.
DEFAULT_BATCH_BYTES: Final = 60_000_000
#: The most bytes of one document as couchids sends it (its JSON, ``_id`` included): IBM
#: Cloudant's 1 MB a document (the same page), in its stricter, decimal reading. A larger
#: document is not sent: it is a failed row of the bulk write.
DEFAULT_DOCUMENT_BYTES: Final = 1_000_000
#: The status of a request or a document the server refuses as too large.
TOO_LARGE: Final = 413


class Filling:
    """The body of one ``_bulk_docs`` request as documents join it: the ``envelope``'s bytes
    (``{"docs":[`` and what closes it) and each document's encoding, comma-separated. A batch
    takes a document while its body stays within ``batch_bytes``; an empty batch takes any
    document, so a document larger than that goes alone.

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


def over_document_bytes(size: int, document_bytes: int) -> str | None:
    """Why a document of ``size`` bytes as sent is not sent, or ``None`` when it may be."""
    if size <= document_bytes:
        return None
    return (
        f"{size:,} bytes as JSON, over document_bytes={document_bytes:,} "
        "(IBM Cloudant stores documents of at most 1 MB); it was not sent"
    )


def halving(
    group: list[int],
    write: Callable[[list[int]], Program[None]],
    refused: Callable[[int, ServerError], None],
    settled: Callable[[int], bool],
) -> Program[None]:
    """Write the documents ``group`` (indexes, in order) with ``write``; a group the server
    refuses as too large (``413``) is written again as its two halves, first half first,
    down to single documents: a document refused alone goes to ``refused`` with the
    server's error, and the others are written. Documents a refused group ``settled``
    before the refusal are not sent again.

    Raises:
        ServerError: any other failure of ``write``.
    """
    groups = [group]
    while groups:
        part = [index for index in groups.pop(0) if not settled(index)]
        if not part:
            continue
        try:
            yield from write(part)
        except ServerError as exc:
            if exc.status != TOO_LARGE:
                raise
            if len(part) == 1:
                refused(part[0], exc)
                continue
            half = len(part) // 2
            groups[:0] = [part[:half], part[half:]]
