"""CouchDB's rule for database names, in a module that imports no query machinery (the
command line checks names before it loads anything else)."""

from __future__ import annotations

import re
from typing import Final

from couchids.errors import InvalidArgumentError

__all__ = ["DB_NAME", "DB_NAME_MAX", "SYSTEM_DBS", "check_db"]

#: CouchDB's rule for database names (its documentation of ``PUT /{db}``), at most 238 bytes.
DB_NAME: Final = re.compile(r"[a-z][a-z0-9_$()+/-]*")
DB_NAME_MAX: Final = 238
#: Databases whose names start with ``_`` that a client may read and write.
SYSTEM_DBS: Final = frozenset({"_users", "_replicator", "_global_changes"})


def check_db(db: object, name: str = "db") -> str:
    """``db`` if it is a database name CouchDB accepts; else :class:`InvalidArgumentError`
    naming the parameter ``name``."""
    if not isinstance(db, str):
        raise InvalidArgumentError(
            f"{name}={db!r}: a database name is a str, not a {type(db).__name__}"
        )
    if db in SYSTEM_DBS:
        return db
    if not DB_NAME.fullmatch(db) or len(db.encode()) > DB_NAME_MAX:
        raise InvalidArgumentError(
            f"{name}={db!r} is not a CouchDB database name: 1-{DB_NAME_MAX} characters, a "
            "lower-case letter first, then lower-case letters, digits and _ $ ( ) + - /"
        )
    return db
