"""couchids: time-sortable document ids for Apache CouchDB and IBM Cloudant.

Ids compatible byte for byte with the kuuid npm package (and kuuid 3's UUIDv7 forms), and
queries and writes that use them on the primary index, ``_all_docs``.
"""

from __future__ import annotations

import importlib as _importlib
import logging as _logging
from typing import TYPE_CHECKING, Any

from .base36 import BASE36_V7
from .couchid import COUCH_RANDOM, UTC_RANDOM, UtcIdForm
from .decode import DecodedId, decode
from .doctypes import ALL_TYPES
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
    KuuidForm,
    form_named,
)
from .keyed import keyed_id
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
from .seq import SEQ10, SEQ36
from .tid62 import TID62
from .typed import TypedId
from .ulid import ULID
from .uuid464 import UUID464
from .v7 import v7, v7s

# Loaded on first use (``__getattr__``): the ibmcloudant SDK and the query machinery.
if TYPE_CHECKING:
    from .connecting import connect
    from .core.counting import Bucket
    from .core.expiry import ExpireReport
    from .core.exporting import ArchiveReport
    from .core.rekeying import RekeyReport
    from .core.scan import Checkpoint
    from .explain import explain_empty
    from .lifecycle import archive, count, expire, export, follow, histogram, rekey
    from .query import latest, window
    from .sequence import Sequence
    from .short import create_short
    from .write import WriteResult, bulk_create, bulk_create_iter, create

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
    "ArchiveReport",
    "Bucket",
    "BulkWriteError",
    "Checkpoint",
    "ConflictError",
    "CouchidsError",
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
    "Sequence",
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
    "explain_empty",
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
    "connect": ".connecting",
    "Bucket": ".core.counting",
    "ExpireReport": ".core.expiry",
    "ArchiveReport": ".core.exporting",
    "RekeyReport": ".core.rekeying",
    "Checkpoint": ".core.scan",
    "explain_empty": ".explain",
    "archive": ".lifecycle",
    "count": ".lifecycle",
    "expire": ".lifecycle",
    "export": ".lifecycle",
    "follow": ".lifecycle",
    "histogram": ".lifecycle",
    "rekey": ".lifecycle",
    "latest": ".query",
    "window": ".query",
    "Sequence": ".sequence",
    "create_short": ".short",
    "WriteResult": ".write",
    "bulk_create": ".write",
    "bulk_create_iter": ".write",
    "create": ".write",
}


def __getattr__(name: str) -> Any:
    """Load a name of :data:`_LAZY` from its module on first use (PEP 562), then keep it."""
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)


_logging.getLogger(__name__).addHandler(_logging.NullHandler())  # silent until configured
