"""Talking to the server through ``ibmcloudant``: errors as couchids exceptions, and what
couchids learns about a database once per client.

Every request goes through the caller's ``CloudantV1`` client, so authentication, retries
(``enable_retries()`` or ``CLOUDANT_ENABLE_RETRIES``) and timeouts are the client's own.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable
from typing import Any

import requests
from ibm_cloud_sdk_core import ApiException
from ibmcloudant.cloudant_v1 import CloudantV1
from urllib3.exceptions import MaxRetryError, ResponseError

from .errors import (
    DatabaseNotFoundError,
    RateLimitedError,
    ServerError,
    UnauthorizedError,
)

#: Failures after which the request may or may not have been carried out: a write retries
#: these with the same id. 408 and 429 are answers to a request that was not carried out,
#: but retrying them is safe for the same reason.
TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

# When the client's retries (``enable_retries()``) run out on an error status, urllib3 raises
# ``MaxRetryError(reason=ResponseError("too many 429 error responses"))`` and requests wraps
# it in ``RetryError``: the last status survives only in that message, written from this
# template.
_RETRY_STATUS = re.compile(
    re.escape(ResponseError.SPECIFIC_ERROR).replace(re.escape("{status_code}"), r"(\d{3})")
)


def status_of(exc: BaseException) -> int:
    """The HTTP status a failed request ended with; 0 when no answer came back.

    Reads the status of an ``ApiException``, and of the ``RetryError`` the client raises
    when its retries run out on an error status.
    """
    if isinstance(exc, ApiException):
        return int(exc.status_code or 0)
    if isinstance(exc, requests.exceptions.RetryError):
        cause = exc.args[0] if exc.args else None
        reason = cause.reason if isinstance(cause, MaxRetryError) else cause
        found = _RETRY_STATUS.search(str(reason))
        return int(found.group(1)) if found else 0
    return 0


def server_error(exc: Exception, db: str) -> ServerError:
    """The couchids exception for a failure of a request about database ``db``."""
    status = status_of(exc)
    if status:
        reason = (exc.message if isinstance(exc, ApiException) else str(exc)) or "no reason given"
        if status == 404:
            return DatabaseNotFoundError(
                f"database {db!r} does not exist (or the document path is wrong): {reason}",
                status,
            )
        if status in (401, 403):
            return UnauthorizedError(
                f"the server refused access to {db!r} (HTTP {status}): {reason}; "
                "check CLOUDANT_USERNAME/CLOUDANT_PASSWORD or CLOUDANT_APIKEY",
                status,
            )
        if status == 429:
            return RateLimitedError(
                f"rate limited on {db!r} (HTTP 429) after the client's retries; enable or "
                "raise retries with client.enable_retries() or CLOUDANT_ENABLE_RETRIES",
                status,
            )
        return ServerError(f"the server answered HTTP {status} for {db!r}: {reason}", status)
    return ServerError(f"could not reach the server for {db!r}: {_network_reason(exc)}")


# requests wraps the socket error in two layers of urllib3 text; its errno line is the news.
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


def _network_reason(exc: Exception) -> str:
    """The short cause of a network failure, such as ``Connection refused``."""
    found = _ERRNO.search(str(exc))
    if found:
        return found.group(1).strip()
    return f"{type(exc).__name__}: {exc}"


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` may have lost the answer to a request that was carried out."""
    if isinstance(exc, ApiException | requests.exceptions.RetryError):
        return status_of(exc) in TRANSIENT_STATUSES
    return isinstance(exc, requests.ConnectionError | requests.Timeout)


def call(db: str, request: Callable[[], Any]) -> Any:
    """Run ``request`` (an ``ibmcloudant`` call) and return its JSON result.

    Raises:
        ServerError: or a subclass, for any HTTP error or unreachable server; the original
            exception is the ``__cause__``.
    """
    try:
        return request().get_result()
    except (ApiException, requests.RequestException) as exc:
        raise server_error(exc, db) from exc


_partitioned: weakref.WeakKeyDictionary[CloudantV1, dict[str, bool]] = weakref.WeakKeyDictionary()
_partitioned_lock = threading.Lock()


def is_partitioned(client: CloudantV1, db: str) -> bool:
    """Whether ``db`` is a partitioned database, asked once per client and database."""
    with _partitioned_lock:
        known = _partitioned.get(client, {}).get(db)
    if known is not None:
        return known
    info = call(db, lambda: client.get_database_information(db=db))
    answer = bool(info.get("props", {}).get("partitioned", False))
    with _partitioned_lock:
        _partitioned.setdefault(client, {})[db] = answer
    return answer
