"""How large a ``_bulk_docs`` request and its documents may be, for IBM Cloudant's limits of
64 MB a request and 1 MB a document, ``413`` past them ("Limits", "Request payload"): bulk
writes and archive's copies cut their batches by bytes and halve one the server refuses.
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
    """Write the documents ``group`` (indexes, in order) with ``write``; a group refused as too
    large (``413``) is written again as its two halves, down to single documents: one refused
    alone goes to ``refused``. Documents ``settled`` before a refusal are not sent again.

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
