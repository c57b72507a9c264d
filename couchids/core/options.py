"""The tuning a handle carries for every operation it runs: :class:`Options`, set once per
handle (``Database(client, "shop", options=Options(timeout=5))``, or ``shop.with_options(...)``)
so that the methods take only what differs from call to call.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Final

from couchids.core import arguments
from couchids.core.defaults import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_EXPIRE_BATCH,
    DEFAULT_FOLLOW_BATCH,
    DEFAULT_PAGE_SIZE,
    DEFAULT_PARALLEL,
    DEFAULT_REKEY_BATCH,
    DEFAULT_TIMEOUT,
    DEFAULT_WORKERS,
)
from couchids.core.policy import DEFAULT_BACKOFF, DEFAULT_RETRIES, MAX_BACKOFF, RetryPolicy
from couchids.core.sizes import DEFAULT_BATCH_BYTES, DEFAULT_DOCUMENT_BYTES
from couchids.errors import InvalidArgumentError
from couchids.idforms.times import SecondsLike

__all__ = ["DEFAULT_OPTIONS", "OWN_DEFAULTS", "Options", "check_options"]

#: Each operation's own ``batch_size`` and ``parallel``, used where the :class:`Options` field
#: is ``None`` (the default).
OWN_DEFAULTS: Final[dict[str, dict[str, int]]] = {
    "window": {"batch_size": DEFAULT_PAGE_SIZE, "parallel": DEFAULT_PARALLEL},
    "export": {"batch_size": DEFAULT_PAGE_SIZE, "parallel": DEFAULT_PARALLEL},
    "archive": {"batch_size": DEFAULT_BATCH_SIZE, "parallel": DEFAULT_PARALLEL},
    "histogram": {"parallel": DEFAULT_WORKERS},
    "bulk_create": {"batch_size": DEFAULT_BATCH_SIZE},
    "bulk_create_iter": {"batch_size": DEFAULT_BATCH_SIZE},
    "expire": {"batch_size": DEFAULT_EXPIRE_BATCH},
    "follow": {"batch_size": DEFAULT_FOLLOW_BATCH},
    "rekey": {"batch_size": DEFAULT_REKEY_BATCH},
}


@dataclass(frozen=True)
class Options:
    """The knobs of a handle's operations, checked once when made; frozen (change one with
    the handle's ``with_options``, or :meth:`replace`).

    Attributes:
        timeout: seconds, or ``None`` for no limit of couchids' own (the client's timeouts
            still apply); default 60. The whole call for one that returns one answer, each
            request for a stream or a run over a range (per method: docs/guide/errors.md).
        retries: how many times a request whose answer was lost (connection error, timeout,
            5xx, 429) is sent again, after the first attempt; default 4.
        backoff: seconds before the first retry, doubling for each later one (at most 2 s;
            a 429's ``Retry-After`` is obeyed up to 30 s); default 0.05.
        parallel: how many requests an operation has in flight at once; ``None`` (the
            default) is each operation's own (3 time slices for ``window`` and ``export``,
            8 buckets for ``histogram``).
        batch_size: rows or documents per request, read or written; ``None`` (the default)
            is each operation's own (2000 rows a page for ``window`` and ``export``, 500
            documents a ``_bulk_docs`` request for the writes).
        batch_bytes: the most bytes of one bulk write's request body, and of one request of
            the deletions of ``expire`` and ``archive`` (default 60 MB, under IBM Cloudant's
            64 MB a request).
        document_bytes: the most bytes of one document a bulk write sends, as JSON with its
            ``_id`` and its text in UTF-8, without the data of its inline ``_attachments``, as
            the server measures it (default 1 MB, IBM Cloudant's limit); a larger document is
            a failed row.

    Raises:
        InvalidArgumentError: a value out of its range, naming the field.

    Example::

        patient = couchids.Options(timeout=300, retries=8)
        shop = couchids.Database(client, "shop", options=patient)
        shop.with_options(parallel=8).window("2024-05-01", "2024-06-01")
    """

    timeout: SecondsLike | None = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    backoff: SecondsLike = DEFAULT_BACKOFF
    parallel: int | None = None
    batch_size: int | None = None
    batch_bytes: int = DEFAULT_BATCH_BYTES
    document_bytes: int = DEFAULT_DOCUMENT_BYTES

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "timeout", arguments.timeout("timeout", self.timeout))
        set_(self, "retries", arguments.count("retries", self.retries, 0))
        set_(self, "backoff", arguments.seconds("backoff", self.backoff, most=MAX_BACKOFF))
        for name in ("parallel", "batch_size"):
            if getattr(self, name) is not None:
                arguments.count(name, getattr(self, name))
        arguments.count("batch_bytes", self.batch_bytes)
        arguments.count("document_bytes", self.document_bytes)

    def replace(self, **changes: Any) -> Options:
        """These options with ``changes`` (field names as keywords), checked.

        >>> Options().replace(timeout=5, parallel=8).parallel
        8
        """
        known = {f.name for f in fields(self)}
        for name in changes:
            if name not in known:
                raise InvalidArgumentError(
                    f"{name}=: not an option; the options are {', '.join(sorted(known))}"
                )
        return replace(self, **changes)

    def policy(self, operation: str) -> RetryPolicy:
        """The retry policy of one call of ``operation`` with these options; its clock starts
        now.

        >>> Options(retries=2).policy("latest").retries
        2
        """
        return RetryPolicy.checked(self.retries, self.backoff, self.timeout, operation)

    def batch(self, operation: str) -> int:
        """``batch_size``, or the ``operation``'s own (``OWN_DEFAULTS``) when it is ``None``.

        >>> Options().batch("window"), Options(batch_size=50).batch("window")
        (2000, 50)
        """
        own = OWN_DEFAULTS[operation]["batch_size"]
        return own if self.batch_size is None else self.batch_size

    def slices(self, operation: str) -> int:
        """``parallel``, or the ``operation``'s own (``OWN_DEFAULTS``) when it is ``None``.

        >>> Options().slices("histogram"), Options(parallel=2).slices("histogram")
        (8, 2)
        """
        own = OWN_DEFAULTS[operation]["parallel"]
        return own if self.parallel is None else self.parallel


#: The options of a handle made without any.
DEFAULT_OPTIONS: Final = Options()


def check_options(value: object) -> Options:
    """``value`` if it is an :class:`Options`, :data:`DEFAULT_OPTIONS` for ``None``, else
    :class:`InvalidArgumentError`."""
    if value is None:
        return DEFAULT_OPTIONS
    if not isinstance(value, Options):
        raise InvalidArgumentError(
            f"options={value!r:.80}: pass a couchids.Options (couchids.Options(timeout=5)), or "
            "None for the defaults"
        )
    return value
