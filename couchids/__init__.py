"""couchids: time-sortable document ids for Apache CouchDB and IBM Cloudant.

Ids compatible byte for byte with the kuuid npm package (and kuuid 3's UUIDv7 forms), and
queries and writes that use them on the primary index, ``_all_docs``.
"""

from .decode import DecodedId, decode
from .errors import (
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
    ServerError,
    ServerTimeoutError,
    UnauthorizedError,
)
from .forms import (
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
from .kuuid import (
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
from .query import latest, window
from .short import create_short
from .typed import TypedId
from .v7 import v7, v7s
from .write import WriteResult, bulk_create, create

__version__ = "0.1.0"

__all__ = [
    "KUUID",
    "KUUID_MS",
    "KUUID_MS_REVERSE",
    "KUUID_REVERSE",
    "SHORT",
    "SHORT_REVERSE",
    "V7",
    "V7S",
    "AllocationFailed",
    "BulkWriteError",
    "ConflictError",
    "CouchidsError",
    "DatabaseNotFoundError",
    "DecodedId",
    "IdForm",
    "InvalidArgumentError",
    "InvalidIdError",
    "InvalidInputError",
    "InvalidTimeError",
    "InvalidTypeError",
    "RateLimitedError",
    "ServerError",
    "ServerTimeoutError",
    "TypedId",
    "UnauthorizedError",
    "WriteResult",
    "__version__",
    "bulk_create",
    "create",
    "create_short",
    "decode",
    "id",
    "idms",
    "idmsr",
    "idr",
    "ids",
    "idsr",
    "latest",
    "prefix",
    "prefix_ms",
    "prefix_reverse",
    "prefix_reverse_ms",
    "rand",
    "v7",
    "v7s",
    "window",
]
