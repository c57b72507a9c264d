"""couchids: time-sortable document ids for Apache CouchDB and IBM Cloudant.

Ids compatible byte for byte with the kuuid npm package (and kuuid 3's UUIDv7 forms), and
queries and writes that use them on the primary index, ``_all_docs``. The top level holds what
most programs use; :mod:`couchids.kuuid` holds the kuuid npm package's functions,
:mod:`couchids.aio` the asyncio API, ``couchids.errors`` the rarer errors.

Example::

    import couchids

    client = couchids.connect()  # CLOUDANT_URL, CLOUDANT_AUTH_TYPE, ...
    shop = couchids.Database(client, "shop", form=couchids.KUUID)
    shop.create({"total": 12}, type="order")
    shop.latest(5, type="order")
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING, Any

from couchids.errors import (
    AllocationFailed,
    BulkWriteError,
    ConflictError,
    CouchidsError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidIdError,
    InvalidInputError,
    InvalidTimeError,
    InvalidTypeError,
    RateLimitedError,
    ReplicationFailed,
    ServerError,
    ServerTimeoutError,
    UnauthorizedError,
    WriteResult,
)
from couchids.idforms.base36 import BASE36_V7
from couchids.idforms.couchid import COUCH_RANDOM, UTC_RANDOM
from couchids.idforms.doctypes import ALL_TYPES
from couchids.idforms.forms import (
    KUUID,
    KUUID_MS,
    KUUID_MS_REVERSE,
    KUUID_REVERSE,
    SHORT,
    SHORT_REVERSE,
    V7,
    V7S,
    IdForm,
)
from couchids.idforms.kuuid import id
from couchids.idforms.seq import SEQ10, SEQ36
from couchids.idforms.tid62 import TID62
from couchids.idforms.typed import TypedId
from couchids.idforms.ulid import ULID
from couchids.idforms.uuid464 import UUID464

if TYPE_CHECKING:
    from couchids.core.options import Options
    from couchids.core.scan import Checkpoint
    from couchids.database import Database, Sequence
    from couchids.drivers.connecting import connect
    from couchids.idforms.decode import DecodedId, decode
    from couchids.replication import Replication
    from couchids.series import Series

#: The version of couchids.
__version__ = "0.1.0"

__all__ = [
    "ALL_TYPES",
    "BASE36_V7",
    "COUCH_RANDOM",
    "KUUID",
    "KUUID_MS",
    "KUUID_MS_REVERSE",
    "KUUID_REVERSE",
    "SEQ10",
    "SEQ36",
    "SHORT",
    "SHORT_REVERSE",
    "TID62",
    "ULID",
    "UTC_RANDOM",
    "UUID464",
    "V7",
    "V7S",
    "AllocationFailed",
    "BulkWriteError",
    "Checkpoint",
    "ConflictError",
    "CouchidsError",
    "Database",
    "DatabaseNotFoundError",
    "DecodedId",
    "IdForm",
    "InvalidArgumentError",
    "InvalidIdError",
    "InvalidInputError",
    "InvalidTimeError",
    "InvalidTypeError",
    "Options",
    "RateLimitedError",
    "Replication",
    "ReplicationFailed",
    "Sequence",
    "Series",
    "ServerError",
    "ServerTimeoutError",
    "TypedId",
    "UnauthorizedError",
    "WriteResult",
    "connect",
    "decode",
    "id",
]

#: The names loaded on first use (PEP 562), with their modules: importing couchids (and making
#: an id) loads no SDK, HTTP client, query machinery or ``decode``'s tables.
_LAZY: dict[str, str] = {
    "decode": ".idforms.decode",
    "DecodedId": ".idforms.decode",
    "connect": ".drivers.connecting",
    "Checkpoint": ".core.scan",
    "Options": ".core.options",
    "Database": ".database",
    "Sequence": ".database",
    "Replication": ".replication",
    "Series": ".series",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return [*__all__, "__version__"]
