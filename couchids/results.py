"""The outcome of writing one document: :class:`WriteResult`, what every write of couchids
returns (and :class:`~couchids.BulkWriteError` holds), kept small for bulk jobs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from couchids.errors import CouchidsError

__all__ = ["WriteResult"]


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The outcome of writing one document.

    Attributes:
        id: the document's ``_id``.
        rev: its revision as stored (``None`` when ``error`` is set).
        duplicate: ``True`` when the document was already stored, with the same content, before
            the request that succeeded: by an earlier attempt whose answer was lost, or by an
            earlier call that wrote the same ``_id`` (or key). Either way it is stored once.
        error: only in bulk results: why this document was not stored (its ``stored`` says
            whether it may have been all the same; see :class:`~couchids.CouchidsError`).

    >>> WriteResult("user:001", "1-abc").ok
    True
    """

    id: str
    rev: str | None
    duplicate: bool = False
    error: CouchidsError | None = None

    @property
    def ok(self) -> bool:
        """Whether the document is stored."""
        return self.error is None


# bulk_create holds every result until it returns the list, so a result is kept small: a
# revision of CouchDB's form, "<generation>-<32 hex digits>", is kept in the rev slot as one
# int (48 bytes instead of a str's 96), and read back as the same str. Anything else is kept
# as given (an int given by hand inside a 1-tuple, so it cannot pass for a packed one). The
# dataclass's __init__, __eq__, __hash__, __repr__, replace, asdict and pickling all reach the
# slot through this property, so they see the str; assignment stays refused (frozen). The
# property replaces the slot's descriptor once dataclass(slots=True) has made the slot.
_REV: Final = re.compile(r"([1-9][0-9]{0,8})-([0-9a-f]{32})")
_DIGEST_BITS: Final = 128
_rev_slot: Final = WriteResult.__dict__["rev"]


def _pack_rev(rev: object) -> object:
    if type(rev) is str:
        found = _REV.fullmatch(rev)
        return int(found[1]) << _DIGEST_BITS | int(found[2], 16) if found else rev
    return None if rev is None else (rev,)


def _unpack_rev(stored: object) -> Any:
    if type(stored) is int:
        return f"{stored >> _DIGEST_BITS}-{stored & ((1 << _DIGEST_BITS) - 1):032x}"
    return stored[0] if type(stored) is tuple else stored


def _get_rev(result: WriteResult) -> str | None:
    """Its revision as stored (``None`` when ``error`` is set)."""
    rev: str | None = _unpack_rev(_rev_slot.__get__(result, WriteResult))
    return rev


def _set_rev(result: WriteResult, rev: str | None) -> None:
    _rev_slot.__set__(result, _pack_rev(rev))


type.__setattr__(WriteResult, "rev", property(_get_rev, _set_rev, doc=_get_rev.__doc__))
