"""Document types: the ``user`` of ``user:<id>``."""

from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache
from typing import Final

from couchids.errors import InvalidTypeError
from couchids.idforms.constants import TYPE_MAX_LEN, TYPE_PATTERN, TYPE_SEPARATOR

_TYPE = re.compile(TYPE_PATTERN)


class AllTypes(Enum):
    """The type of :data:`couchids.ALL_TYPES` (an enum of one member, so type checkers know it)."""

    ALL_TYPES = "all types"

    def __repr__(self) -> str:
        return "couchids.ALL_TYPES"


#: ``type=ALL_TYPES``: a query of every type at once: ``shop.latest(5, type=ALL_TYPES)`` is the
#: newest 5 documents of any type (see :meth:`couchids.Database.latest`).
#:
#: >>> couchids.ALL_TYPES
#: couchids.ALL_TYPES
ALL_TYPES: Final = AllTypes.ALL_TYPES

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


def scope_prefix(scope: str | None, separator: str) -> str:
    """The text ids of ``scope`` start with: ``scope + separator``, or ``""`` for ``None``.

    A scope is a type, or ``partition:type`` such as ``sensor-260:reading``: every part
    between colons follows the type rule.

    Raises:
        InvalidTypeError: a part breaks the type rule.

    >>> scope_prefix("sensor-260:reading", "-")
    'sensor-260:reading-'
    """
    if scope is None:
        return ""
    if not isinstance(scope, str):
        check_type(scope)
    return _checked_scope(scope, separator)


@lru_cache(maxsize=1024)
def _checked_scope(scope: str, separator: str) -> str:
    for part in scope.split(TYPE_SEPARATOR):
        if _TYPE.fullmatch(part) is None:
            raise InvalidTypeError(
                f"{scope!r} is not a valid document type or 'partition:type' scope: {RULE}"
            )
    return scope + separator
