"""What a new document may hold, checked before anything is sent.

CouchDB reserves top-level fields that start with ``_``: it reads ``_id``, ``_rev``,
``_attachments``, ``_deleted`` and ``_revisions`` as instructions, ignores what a read adds
(``_conflicts``, ...), and refuses any other (``couch_doc:transfer_fields``). A new document
couchids creates may carry only ``_id`` and ``_attachments``: ``_rev`` would make the write an
update, ``_deleted`` would store a tombstone, ``_revisions`` would graft a history onto it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from couchids.errors import InvalidArgumentError, InvalidIdError

__all__ = ["NEW_DOC_FIELDS", "check_new", "valid_unicode"]

#: The ``_`` fields a new document may have.
NEW_DOC_FIELDS: Final = frozenset({"_id", "_attachments"})

_WHY: Final = {
    "_id": "this write chooses the id itself",
    "_rev": "couchids only creates new documents and never overwrites; update existing ones "
    "with client.put_document",
    "_deleted": "it would store a deleted document (a tombstone), not a new one",
    "_revisions": "it would graft a revision history onto a new document",
}


def check_new(doc: object, label: str, *, own_id: bool = True) -> Mapping[str, Any]:
    """Return ``doc`` if it can be created as a new document; raise otherwise.

    Args:
        doc: the document as the caller gave it.
        label: how messages name it: the parameter (``"doc"``), or its place (``"document 7"``).
        own_id: whether it may carry its own ``_id``.

    Raises:
        InvalidArgumentError: ``doc`` is not a JSON object (a ``Mapping``), has a key that is
            not a string, or a top-level ``_`` field other than :data:`NEW_DOC_FIELDS`
            (``_id`` too, when ``own_id`` is false).
        InvalidIdError: its ``_id`` holds a lone surrogate (such as ``'\\ud800'``).

    >>> check_new({"n": 1, "_attachments": {}}, "doc")
    {'n': 1, '_attachments': {}}
    >>> check_new({"_deleted": True}, "document 3")
    Traceback (most recent call last):
    ...
    couchids.errors.InvalidArgumentError: document 3 has a _deleted (True): it would store a deleted document (a tombstone), not a new one
    """  # noqa: E501
    if not isinstance(doc, Mapping):
        raise InvalidArgumentError(
            f"{label} is a {type(doc).__name__}; a document is a JSON object (a dict)"
        )
    for field in doc:
        if not isinstance(field, str):
            raise InvalidArgumentError(
                f"{label} has the key {field!r}; the keys of a JSON object are strings"
            )
        allowed = field in NEW_DOC_FIELDS and (own_id or field != "_id")
        if allowed or not field.startswith("_"):
            continue
        why = _WHY.get(
            field,
            "CouchDB reserves top-level fields starting with '_' (a new document may have "
            "only _id and _attachments) and refuses the others; rename the field",
        )
        raise InvalidArgumentError(f"{label} has a {field} ({doc[field]!r:.60}): {why}")
    own = doc.get("_id") if own_id else None
    if isinstance(own, str) and not valid_unicode(own):
        raise InvalidIdError(
            f"{label} has _id {own!r:.80}: an id must be valid Unicode (no lone surrogates)"
        )
    return doc


def valid_unicode(text: str) -> bool:
    """Whether ``text`` holds no lone surrogate (``'\\ud800'``), which has no UTF-8 and so no
    place in a URL or a UTF-8 file.

    >>> valid_unicode("order:é"), valid_unicode("order:\\ud800")
    (True, False)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
