"""The couchids exception hierarchy, and :class:`WriteResult`, the outcome of writing one
document (the two refer to each other).

Bad input raises an :class:`InvalidInputError` (a ``ValueError``); what the server decided
raises one of the server-side classes. Every message says what was wrong and what is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final


class CouchidsError(Exception):
    """Base class of every error couchids raises; its message never holds a credential (the
    texts of an error made from a server's answer, a URL or the configuration are masked).

    The writes (:meth:`~couchids.Database.create`, :meth:`~couchids.Database.bulk_create`,
    :meth:`~couchids.Database.create_short`) set these on every error raised once an id was
    chosen, and say the same in the message:

    Attributes:
        doc_id: the id being written, or ``None`` (before an id was chosen; bulk writes).
        stored: ``False``: the document is not stored. ``True``: it is. ``None``: it may have
            been (an answer was lost); writing it again with ``_id`` ``doc_id`` (bulk writes:
            each under its id in ``results``), or under the same key, finds out and never
            stores it twice; the same call again would give a document couchids named a new
            id. A short id's document is read to find out.
        results: bulk writes: a :class:`~couchids.WriteResult` for every document handled
            before the error.

    Example::

        order = {"number": 1, "at": "2024-05-01T12:00:00Z", "total": 12}
        try:
            shop.create(order, type="order", key="order-1", timestamp=order["at"])
        except couchids.CouchidsError as error:
            print(error)  # what failed, in words
            if error.stored is None:
                ...  # an answer was lost: the same call again stores nothing twice
    """

    doc_id: str | None = None
    stored: bool | None = False
    results: Sequence[WriteResult] = ()


#: What masks the texts of server-side errors: a driver installs it (:func:`mask_with`), so
#: that the ids and the core, which import this module, read no configuration.
_mask: Callable[[str], str] | None = None


def mask_with(mask: Callable[[str], str]) -> None:
    """Mask every text of the server-side errors made from now on with ``mask``."""
    global _mask
    _mask = mask


def _masked(*args: object) -> tuple[object, ...]:
    """``args`` with each text masked."""
    mask = _mask
    if mask is None:
        return args
    return tuple(mask(arg) if isinstance(arg, str) else arg for arg in args)


class MissingExtraError(CouchidsError, ModuleNotFoundError):
    """A part of couchids needs a package of an extra that is not installed; the message names
    the extra, ``name`` the missing module.

    Example::

        from couchids import aio  # without httpx: MissingExtraError, naming couchids[async]
    """


class InvalidInputError(CouchidsError, ValueError):
    """An argument couchids cannot use: every error of bad input is one, and a ``ValueError``.

    >>> import couchids
    >>> try:
    ...     couchids.decode("user:admin")
    ... except couchids.InvalidInputError as error:
    ...     print(type(error).__name__, isinstance(error, ValueError))
    InvalidIdError True
    """


class InvalidIdError(InvalidInputError):
    """A string that is not an id of the expected form.

    >>> import couchids
    >>> couchids.decode("user:admin")
    Traceback (most recent call last):
    ...
    couchids.errors.InvalidIdError: 'user:admin' is not an id couchids reads: ...
    """


class InvalidTypeError(InvalidInputError):
    """A document type that breaks the type rule.

    >>> import couchids
    >>> couchids.id(type="a:b")
    Traceback (most recent call last):
    ...
    couchids.errors.InvalidTypeError: 'a:b' is not a valid document type: a type is 1-64 ...
    """


class InvalidTimeError(InvalidInputError):
    """A time that cannot be read or is outside the range an id can hold.

    >>> import couchids
    >>> couchids.id(1.5)
    Traceback (most recent call last):
    ...
    couchids.errors.InvalidTimeError: 1.5 is a float, which could mean seconds or milliseconds; ...
    """


class InvalidArgumentError(InvalidInputError):
    """Any other argument outside its accepted values.

    >>> import couchids
    >>> couchids.id(random=5)
    Traceback (most recent call last):
    ...
    couchids.errors.InvalidArgumentError: random=5: the number of random blocks must be an ...
    """


class ServerError(CouchidsError):
    """The server failed: an error answer (``status``), no answer (``status`` 0), or an answer
    that is not CouchDB's.

    The message names the operation, the database and the request. The SDK's exception is
    chained as ``__cause__``, as a copy with its text masked.

    Example::

        try:
            couchids.Database(client, "no-such-db").latest(5)
        except couchids.ServerError as error:
            print(error.status, error)  # 404 latest on 'no-such-db' (...): ...
    """

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(*_masked(message))
        self.status = status


class ServerTimeoutError(ServerError, TimeoutError):
    """The operation's ``timeout`` ran out before the server answered (retries included).

    Example::

        try:
            newest = shop.with_options(timeout=30).latest(5)
        except couchids.ServerTimeoutError:
            newest = []  # no answer within 30 s, retries included
    """


class DatabaseNotFoundError(ServerError):
    """The database does not exist: CouchDB answered 404 (a 404 that is not CouchDB's, such as
    a proxy's HTML page, is a plain :class:`ServerError`).

    Example::

        try:
            couchids.Database(client, "no-such-db").latest()
        except couchids.DatabaseNotFoundError as error:
            print(error.status)  # 404
    """


class UnauthorizedError(ServerError):
    """The server refused the credentials (401) or the permission (403).

    Example::

        try:
            shop.latest()
        except couchids.UnauthorizedError as error:
            print(error)  # which credentials were refused, and where they were configured
    """


class DatabaseLimitError(ServerError):
    """The server refused to create a database because it holds as many as it allows (IBM
    Cloudant: 200 on Standard, 20 on Lite, since March 2025; ``403``).

    The message names the database, what showed the cap, and what to do (drop old periods with
    ``Series.expire``, a longer period, a higher cap). A write that needed the database stored
    nothing (``stored`` is ``False``).

    Example::

        readings = couchids.Series(client, "readings", every="day")
        try:
            readings.create({"temp": 21.5}, type="reading")
        except couchids.errors.DatabaseLimitError:
            ...  # drop the oldest periods (readings.expire), then write again
    """


class DatabaseLimitWarning(UserWarning):
    """``Series.prepare`` found the server close to its cap on databases; the message says how
    many it holds, how many more it allows, and what to do.

    Example::

        readings = couchids.Series(client, "readings", every="day", max_databases=200)
        readings.prepare(ahead=2)  # warns when no more than 2 more databases can be made
    """


class RateLimitedError(ServerError):
    """The server still answered 429 at the call's deadline (couchids paces each request class
    and sends a 429 again until then).

    Example::

        try:
            shop.bulk_create([{"n": n} for n in range(100)], type="event")
        except couchids.RateLimitedError:
            ...  # over the plan's throughput: a longer timeout, or more capacity
    """

    #: What to do about it, in the library's words (the command gives its own).
    ADVICE = (
        "give the call a longer timeout, keep the client to a lower rate "
        "(couchids.connect(rate=...)), or raise the instance's capacity"
    )


class ReplicationFailed(ServerError):
    """A replication cannot run or will not finish: the replicator gave up on it, it keeps
    crashing on an error retries do not mend, it was cancelled, the server cannot run it (PouchDB
    Server), or (``status`` 404) no ``_replicator`` document of it was ever written.

    .. needs couchdb: PouchDB Server's replicator ignores a selector

    Example::

        try:
            shop.replicate("shop-edge", "2024-05-01", type="order").wait(600)
        except couchids.ReplicationFailed as error:
            print(error)  # why the server's replicator gave up on it
    """


class ConflictError(CouchidsError):
    """A different document already stands under the id being written.

    Example::

        shop.create({"_id": "order:7", "total": 12})
        assert shop.create({"_id": "order:7", "total": 12}).duplicate  # the same: no error
        try:
            shop.create({"_id": "order:7", "total": 13})
        except couchids.ConflictError as error:
            print(error.doc_id, error.stored)  # order:7 False
    """

    def __init__(self, message: str, doc_id: str) -> None:
        super().__init__(*_masked(message))
        self.doc_id = doc_id


class AllocationFailed(CouchidsError):
    """Every candidate short id was taken.

    Example::

        try:
            post = shop.create_short({"title": "hello"})  # '240501-bc'
        except couchids.AllocationFailed:
            ...  # every two- and three-letter id of the day is taken
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*_masked(*args))


class BulkWriteError(CouchidsError):
    """Some documents of a bulk write were not stored; raised after every batch was attempted.

    ``results`` holds one :class:`~couchids.WriteResult` per input document, in input order, the
    failed ones with their ``error`` (a :class:`ConflictError` or a :class:`ServerError`).

    Example::

        try:
            shop.bulk_create([{"_id": "order:8", "total": 1}, {"_id": "order:8", "total": 2}])
        except couchids.BulkWriteError as error:
            for result in error.failed:
                print(result.id, result.error)  # order:8 a different document already has ...
    """

    def __init__(self, message: str, results: Sequence[WriteResult]) -> None:
        super().__init__(*_masked(message))
        self.results = list(results)

    @property
    def failed(self) -> list[WriteResult]:
        """The results that carry an ``error``, in input order."""
        return [result for result in self.results if result.error is not None]


# -- the outcome of a write ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The outcome of writing one document.

    Attributes:
        id: the document's ``_id``.
        rev: its revision as stored (``None`` when ``error`` is set).
        duplicate: ``True`` when the document was already stored, with the same content, before
            the request that succeeded: by an earlier attempt whose answer was lost, or by an
            earlier call that wrote the same ``_id`` (or key). Either way it is stored once.
        error: only in bulk results: why this document was not stored (its ``stored`` says
            whether it may have been all the same; see :class:`~couchids.CouchidsError`).

    >>> WriteResult("user:001", "1-abc").ok
    True
    """

    id: str
    rev: str | None
    duplicate: bool = False
    error: CouchidsError | None = None

    @property
    def ok(self) -> bool:
        """Whether the document is stored."""
        return self.error is None


# bulk_create holds every result, so a revision of CouchDB's form "<gen>-<32 hex>" is kept in
# the rev slot as one int (48 bytes, not 96) behind a property that reads it back as the str;
# anything else is kept as given (an int inside a 1-tuple). Every dataclass method sees the str.
_REV: Final = re.compile(r"([1-9][0-9]{0,8})-([0-9a-f]{32})")
_DIGEST_BITS: Final = 128
_rev_slot: Final = WriteResult.__dict__["rev"]


def _pack_rev(rev: object) -> object:
    if type(rev) is str:
        found = _REV.fullmatch(rev)
        return int(found[1]) << _DIGEST_BITS | int(found[2], 16) if found else rev
    return None if rev is None else (rev,)


def _unpack_rev(stored: object) -> Any:
    if type(stored) is int:
        return f"{stored >> _DIGEST_BITS}-{stored & ((1 << _DIGEST_BITS) - 1):032x}"
    return stored[0] if type(stored) is tuple else stored


def _get_rev(result: WriteResult) -> str | None:
    """Its revision as stored (``None`` when ``error`` is set)."""
    rev: str | None = _unpack_rev(_rev_slot.__get__(result, WriteResult))
    return rev


def _set_rev(result: WriteResult, rev: str | None) -> None:
    _rev_slot.__set__(result, _pack_rev(rev))


type.__setattr__(WriteResult, "rev", property(_get_rev, _set_rev, doc=_get_rev.__doc__))
