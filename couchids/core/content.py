"""Whether a stored document holds the content a caller asked to store.

The same content is the same JSON value: key order does not matter, types do (``true`` is
not ``1``), numbers compare by exact value (``1`` is ``1.0``: CouchDB may write either back),
and metadata (``_id``, ``_rev``, ``_conflicts``, ...) is not content. Attachments compare by
name, content type and bytes: against stored data when the read included it (a compressed
one's digest is not the MD5 of its bytes), else by CouchDB's digest of the caller's data.

>>> same_content({"paid": True, "n": 1.0}, {"_id": "a", "_rev": "1-x", "n": 1, "paid": True})
True
>>> same_content({"paid": 1}, {"paid": True})
False
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["attachment_digest", "same_content", "same_json"]

#: Fields a stored document carries that are not its content.
METADATA: Final = frozenset(
    {"_id", "_rev", "_revisions", "_revs_info", "_conflicts", "_deleted_conflicts", "_local_seq"}
)


def same_json(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same JSON value (see the module docstring).

    >>> same_json([1, {"a": None}], [1.0, {"a": None}]), same_json(0, False), same_json("1", 1)
    (True, False, False)
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b  # Python compares int with float exactly
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_json(a[key], b[key]) for key in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return False


def attachment_digest(data: str) -> str | None:
    """CouchDB's digest of an inline attachment's base64 ``data``; None if it is not base64.

    >>> attachment_digest("aGVsbG8=")
    'md5-XUFAKrxLKna5cZ2REBfFkg=='
    """
    raw = _decoded(data)
    return None if raw is None else "md5-" + base64.b64encode(hashlib.md5(raw).digest()).decode()


def same_content(ours: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """Whether ``stored`` (as read back) holds the document ``ours`` (as the caller gave it)."""
    mine = {k: v for k, v in ours.items() if k not in METADATA}
    theirs = {k: v for k, v in stored.items() if k not in METADATA}
    if not _same_attachments(mine.pop("_attachments", None), theirs.pop("_attachments", None)):
        return False
    return same_json(mine, theirs)


def _same_attachments(ours: Any, stored: Any) -> bool:
    if not ours or not stored:
        return not ours and not stored
    if not isinstance(ours, Mapping) or not isinstance(stored, Mapping):
        return False
    if ours.keys() != stored.keys():
        return False
    for name, mine in ours.items():
        theirs = stored[name]
        if not isinstance(mine, Mapping) or not isinstance(theirs, Mapping):
            return False
        if mine.get("content_type") != theirs.get("content_type"):
            return False
        data = mine.get("data")
        if isinstance(data, str) and isinstance(theirs.get("data"), str):
            raw = _decoded(data)
            if raw is None or raw != _decoded(theirs["data"]):
                return False
            continue
        digest = attachment_digest(data) if isinstance(data, str) else mine.get("digest")
        if digest is None or digest != theirs.get("digest"):
            return False
    return True


def _decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
