"""Document types: the ``user`` of ``user:<id>``."""

from __future__ import annotations

import re
from functools import lru_cache

from .constants import TYPE_MAX_LEN, TYPE_PATTERN, TYPE_SEPARATOR
from .errors import InvalidTypeError

_TYPE = re.compile(TYPE_PATTERN)

RULE = f"a type is 1-{TYPE_MAX_LEN} ASCII letters, digits, '_' and '-', not starting with '_'"


def check_type(doc_type: str) -> str:
    """Return ``doc_type`` if it follows the type rule, else raise :class:`InvalidTypeError`.

    >>> check_type("user")
    'user'
    """
    if not isinstance(doc_type, str) or _TYPE.fullmatch(doc_type) is None:
        raise InvalidTypeError(f"{doc_type!r} is not a valid document type: {RULE}")
    return doc_type


def type_prefix(doc_type: str | None) -> str:
    """The text an id of this type starts with: ``"user:"``, or ``""`` for no type.

    Raises:
        InvalidTypeError: ``doc_type`` breaks the type rule.

    >>> type_prefix("user"), type_prefix(None)
    ('user:', '')
    """
    if doc_type is None:
        return ""
    if not isinstance(doc_type, str):
        # Checked before the cache, which would raise TypeError for an unhashable value.
        check_type(doc_type)
    return _checked_prefix(doc_type)


@lru_cache(maxsize=1024)
def _checked_prefix(doc_type: str) -> str:
    return check_type(doc_type) + TYPE_SEPARATOR
