"""couchids: time-sortable document ids for Apache CouchDB and IBM Cloudant.

Ids compatible byte for byte with the kuuid npm package (and kuuid 3's UUIDv7 forms), and
queries and writes that use them on the primary index, ``_all_docs``.
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
)
from couchids.idforms.base36 import BASE36_V7
from couchids.idforms.couchid import COUCH_RANDOM, UTC_RANDOM, UtcIdForm
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
    KuuidForm,
    form_named,
)
from couchids.idforms.keyed import keyed_id
from couchids.idforms.kuuid import (
    id,
    idms,
    idmsr,
    idr,
    ids,
    idsr,
    prefix,
    prefix_ms,
    prefix_reverse,
    prefix_reverse_ms,
    rand,
)
from couchids.idforms.seq import SEQ10, SEQ36
from couchids.idforms.tid62 import TID62
from couchids.idforms.typed import TypedId
from couchids.idforms.ulid import ULID
from couchids.idforms.uuid464 import UUID464
from couchids.idforms.v7 import v7, v7s

# Loaded on first use (``__getattr__``): the ibmcloudant SDK, the query machinery and the
# reading of ids of any form (``decode``, which builds its tables of every form).
if TYPE_CHECKING:
    from collections.abc import Callable

    from couchids.core.counting import Bucket
    from couchids.core.expiry import ExpireReport
    from couchids.core.exporting import ArchiveReport
    from couchids.core.pages import DEFAULT_PARALLEL, REMOTE_PARALLEL
    from couchids.core.rekeying import RekeyReport
    from couchids.core.replication import ReplicationStatus
    from couchids.core.scan import Checkpoint
    from couchids.core.series import SeriesExpireReport
    from couchids.database import Database, Sequence
    from couchids.drivers.connecting import connect
    from couchids.idforms.decode import DecodedId, decode
    from couchids.replication import Replication
    from couchids.results import WriteResult
    from couchids.series import Series

    # Deprecated (see couchids.deprecated): the methods of Database, on Database(client, db).
    archive: Callable[..., Any]
    bulk_create: Callable[..., Any]
    bulk_create_iter: Callable[..., Any]
    count: Callable[..., Any]
    create: Callable[..., Any]
    create_short: Callable[..., Any]
    expire: Callable[..., Any]
    export: Callable[..., Any]
    follow: Callable[..., Any]
    histogram: Callable[..., Any]
    latest: Callable[..., Any]
    rekey: Callable[..., Any]
    window: Callable[..., Any]

__version__ = "0.1.0"

__all__ = [
    "ALL_TYPES",
    "BASE36_V7",
    "COUCH_RANDOM",
    "DEFAULT_PARALLEL",
    "KUUID",
    "KUUID_MS",
    "KUUID_MS_REVERSE",
    "KUUID_REVERSE",
    "REMOTE_PARALLEL",
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
    "ArchiveReport",
    "Bucket",
    "BulkWriteError",
    "Checkpoint",
    "ConflictError",
    "CouchidsError",
    "Database",
    "DatabaseNotFoundError",
    "DecodedId",
    "ExpireReport",
    "IdForm",
    "InvalidArgumentError",
    "InvalidIdError",
    "InvalidInputError",
    "InvalidTimeError",
    "InvalidTypeError",
    "KuuidForm",
    "RateLimitedError",
    "RekeyReport",
    "Replication",
    "ReplicationFailed",
    "ReplicationStatus",
    "Sequence",
    "Series",
    "SeriesExpireReport",
    "ServerError",
    "ServerTimeoutError",
    "TypedId",
    "UnauthorizedError",
    "UtcIdForm",
    "WriteResult",
    "__version__",
    "archive",
    "bulk_create",
    "bulk_create_iter",
    "connect",
    "count",
    "create",
    "create_short",
    "decode",
    "expire",
    "export",
    "follow",
    "form_named",
    "histogram",
    "id",
    "idms",
    "idmsr",
    "idr",
    "ids",
    "idsr",
    "keyed_id",
    "latest",
    "prefix",
    "prefix_ms",
    "prefix_reverse",
    "prefix_reverse_ms",
    "rand",
    "rekey",
    "v7",
    "v7s",
    "window",
]

#: The names loaded on first use, each with the module that defines it: importing couchids
#: (and making or decoding an id) loads no SDK, HTTP client or query machinery.
_LAZY: dict[str, str] = {
    "decode": ".idforms.decode",
    "DecodedId": ".idforms.decode",
    "connect": ".drivers.connecting",
    "Bucket": ".core.counting",
    "ExpireReport": ".core.expiry",
    "ArchiveReport": ".core.exporting",
    "RekeyReport": ".core.rekeying",
    "ReplicationStatus": ".core.replication",
    "Checkpoint": ".core.scan",
    "DEFAULT_PARALLEL": ".core.pages",
    "REMOTE_PARALLEL": ".core.pages",
    "WriteResult": ".results",
    "Database": ".database",
    "Sequence": ".database",
    "Replication": ".replication",
    "Series": ".series",
    "SeriesExpireReport": ".core.series",
}


def __getattr__(name: str) -> Any:
    """Load a name of :data:`_LAZY` from its module on first use (PEP 562), then keep it; the
    deprecated module-level operations are made then too (:mod:`couchids.deprecated`)."""
    from couchids.deprecated import OPERATIONS, operations

    if name in OPERATIONS:
        value = operations(__getattr__("Database"), __name__, (name,))[name]
    elif name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
