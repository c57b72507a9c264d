"""The couchids exception hierarchy.

Bad input raises a :class:`InvalidInputError` (also a :class:`ValueError`); what the server
decided raises one of the server-side classes. Every message says what was wrong and what is
accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from couchids.results import WriteResult


class CouchidsError(Exception):
    """Base class of every error couchids raises.

    Its message never holds a credential. Errors of bad input (:class:`InvalidInputError`)
    are made from the caller's arguments and cost no more than their message: ``decode`` of a
    valid id makes none, and a refused one costs microseconds. Errors made from what a server
    answered, a URL or the configuration (:class:`ServerError`, :class:`ConflictError`,
    :class:`AllocationFailed`, :class:`BulkWriteError`) mask every text argument with
    ``couchids.drivers.config.scrub`` (the user info of URLs, ``Authorization`` and cookie values,
    the configured passwords and API keys) when they are made.

    Writes (:meth:`~couchids.Database.create`, :meth:`~couchids.Database.bulk_create`,
    :meth:`~couchids.Database.create_short`) set these on every error raised once an id was
    chosen, and
    their message says the same in words:

    Attributes:
        doc_id: the id being written, or ``None`` (before an id was chosen; bulk writes).
        stored: ``False``: the document is not stored. ``True``: it is. ``None``: it may have
            been (an answer was lost); writing it again under the same id (or key) finds out
            and never stores it twice.
        results: bulk writes: a :class:`~couchids.WriteResult` for every document handled
            before the error, each with its id (see :meth:`~couchids.Database.bulk_create`).
    """

    doc_id: str | None = None
    stored: bool | None = False
    results: Sequence[WriteResult] = ()


#: What masks the texts of server-side errors: none until a driver is loaded, which installs
#: :func:`couchids.drivers.config.scrub` (:func:`mask_with`). No server error exists before:
#: only a driver's requests make them. The ids and the core, which import this module, so
#: load no SDK and read no configuration.
_mask: Callable[[str], str] | None = None


def mask_with(mask: Callable[[str], str]) -> None:
    """Mask every text of the server-side errors made from now on with ``mask`` (called by
    the drivers, which know where the configured credentials are)."""
    global _mask
    _mask = mask


def _masked(*args: object) -> tuple[object, ...]:
    """``args`` with each text masked, for an error whose message may quote a server's
    answer, a URL or the configuration."""
    mask = _mask
    if mask is None:
        return args
    return tuple(mask(arg) if isinstance(arg, str) else arg for arg in args)


class InvalidInputError(CouchidsError, ValueError):
    """An argument couchids cannot use."""


class InvalidIdError(InvalidInputError):
    """A string that is not an id of the expected form."""


class InvalidTypeError(InvalidInputError):
    """A document type that breaks the type rule."""


class InvalidTimeError(InvalidInputError):
    """A time that cannot be read or is outside the range an id can hold."""


class InvalidArgumentError(InvalidInputError):
    """Any other argument outside its accepted values."""


class ServerError(CouchidsError):
    """The server failed: an error answer, no answer, or an answer that is not CouchDB's.

    ``status`` is the HTTP status (0 when no answer came). The message names the operation,
    the database and the request (``create on 'shop' (PUT /shop/order:...)``). The
    ``ibmcloudant``/``requests`` exception is chained as ``__cause__`` as a copy with its text
    masked: the original's text can carry the server URL with its credentials.
    """

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(*_masked(message))
        self.status = status


class ServerTimeoutError(ServerError, TimeoutError):
    """The operation's ``timeout`` ran out before the server answered (retries included)."""


class DatabaseNotFoundError(ServerError):
    """The database does not exist."""


class UnauthorizedError(ServerError):
    """The server refused the credentials (401) or the permission (403)."""


class RateLimitedError(ServerError):
    """The server still answered 429 after the client's retries ran out."""


class ReplicationFailed(ServerError):
    """A replication cannot run or will not finish: the server's replicator gave up on it
    (``failed``), keeps crashing on an error its retries do not mend, it was cancelled, or
    the server has no replicator that can run it (PouchDB Server)."""


class ConflictError(CouchidsError):
    """A different document already stands under the id being written."""

    def __init__(self, message: str, doc_id: str) -> None:
        super().__init__(*_masked(message))
        self.doc_id = doc_id


class AllocationFailed(CouchidsError):
    """Every candidate short id was taken."""

    def __init__(self, *args: object) -> None:
        super().__init__(*_masked(*args))


class BulkWriteError(CouchidsError):
    """Some documents of a bulk write were not stored.

    Raised only after every batch was attempted. ``results`` holds one
    :class:`~couchids.WriteResult` per input document, in input order: the stored ones
    with their ``rev``, the failed ones with their ``error`` (a :class:`ConflictError` or a
    :class:`ServerError`).
    """

    def __init__(self, message: str, results: Sequence[WriteResult]) -> None:
        super().__init__(*_masked(message))
        self.results = list(results)

    @property
    def failed(self) -> list[WriteResult]:
        """The results that carry an ``error``, in input order."""
        return [result for result in self.results if result.error is not None]
