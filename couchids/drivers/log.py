"""What couchids logs, through :mod:`logging`: one DEBUG record on ``couchids.request`` per
request either driver sends, one INFO record per retry (the Errors guide's "Logging" lists
their fields), and one WARNING on ``couchids`` when a read found nothing of a type and the
database shows why (:func:`hint`). A record names the path from the server's root, never the
query string, the server URL's user info or a request's body, so it holds no credential.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Final, TextIO

from couchids.core.effects import Send

__all__ = [
    "LOGGER",
    "REQUESTS",
    "CompactFormatter",
    "hint",
    "hint_failed",
    "hints_wanted",
    "no_hints",
    "retrying",
    "sent",
    "shown",
]

#: The package's logger: every record of couchids is on it or on a child. It has no handler of
#: its own (no ``NullHandler``): an application that configures no logging sees its WARNINGs
#: on stderr, through logging's last resort, as it sees Python's own; DEBUG and INFO records
#: show only where logging is configured to show them.
LOGGER: Final = logging.getLogger("couchids")
#: Where the drivers log each request sent (DEBUG) and each retry (INFO).
REQUESTS: Final = logging.getLogger("couchids.request")
#: The loggers of the HTTP library the blocking driver sends through (``-vv`` of the command).
HTTP_LOGGERS: Final = ("urllib3",)


def _fields(effect: Send, **more: Any) -> dict[str, Any]:
    """The values every record of ``effect`` carries, and ``more``, named ``couchids_*``."""
    return {
        "couchids_method": effect.request.method,
        # couchids' paths hold no query string (the parameters travel apart): cut one anyway.
        "couchids_path": effect.request.path.split("?", 1)[0],
        "couchids_attempt": effect.attempt,
        "couchids_operation": effect.policy.operation,
        "couchids_db": effect.db,
        **{f"couchids_{name}": value for name, value in more.items()},
    }


def sent(effect: Send, status: int | None, failure: str | None, ms: float) -> None:
    """Log the request of ``effect`` at DEBUG: its answer's ``status``, or the ``failure``
    when no answer came, after ``ms`` milliseconds."""
    if not REQUESTS.isEnabledFor(logging.DEBUG):
        return
    outcome = str(status) if status is not None else failure or "no answer"
    lost = None if status is not None else outcome
    extra = _fields(effect, status=status, failure=lost, ms=round(ms, 1))
    where = extra["couchids_method"], extra["couchids_path"]
    REQUESTS.debug(
        "%s %s %s %d ms (attempt %d)", *where, outcome, round(ms), effect.attempt, extra=extra
    )


def retrying(
    retry: Send,
    seconds: float,
    reason: str,
    *,
    client: tuple[int, int] | None = None,
    paced: bool = False,
) -> None:
    """Log at INFO that ``retry`` is sent again in ``seconds``, after ``reason`` (``HTTP 503``,
    ``timeout``, ...). ``client`` numbers a retry of the client's own (``enable_retries()``),
    which the asyncio driver makes itself: ``(number, most)``; ``paced``: the same attempt,
    answered 429, sent again once its class has room (no retry of the call's)."""
    if not REQUESTS.isEnabledFor(logging.INFO):
        return
    if client is not None:
        which = f"the client's retry {client[0]} of {client[1]}"
    elif paced:
        which = f"rate limited: attempt {retry.attempt} again once its class has room"
    else:
        which = f"attempt {retry.attempt} of {retry.policy.retries + 1}"
    number = None if client is None else client[0]
    extra = _fields(retry, reason=reason, wait=seconds, client_retry=number)
    where = extra["couchids_method"], extra["couchids_path"]
    REQUESTS.info(
        "retrying %s %s after %s, in %.2f s (%s)", *where, reason, seconds, which, extra=extra
    )


#: Whether an empty answer is explained in a WARNING here (off where the command runs: it
#: prints a note of its own, in its flags' words).
_hints: ContextVar[bool] = ContextVar("couchids_hints", default=True)


def hints_wanted() -> bool:
    """Whether a read that found nothing should find out why (:func:`hint`): not inside
    :func:`no_hints`, nor when ``couchids``' WARNINGs are not shown anyway."""
    return _hints.get() and LOGGER.isEnabledFor(logging.WARNING)


@contextlib.contextmanager
def no_hints() -> Iterator[None]:
    """Inside, in this thread or task, no read looks for why it found nothing."""
    token = _hints.set(False)
    try:
        yield
    finally:
        _hints.reset(token)


def hint(operation: str, db: str, why: str) -> None:
    """Log at WARNING why ``operation`` on ``db`` found nothing, in the words of
    :meth:`couchids.Database.explain_empty`: ``latest on 'shop' found nothing: no ids of type
    'oder' in 'shop'; it holds ids of types order, user: pass type= one of them``."""
    extra = {"couchids_operation": operation, "couchids_db": db, "couchids_hint": why}
    LOGGER.warning("%s on %r found nothing: %s", operation, db, why, extra=extra)


def hint_failed(operation: str, db: str, error: Exception) -> None:
    """Log at DEBUG that why ``operation`` on ``db`` found nothing could not be found out
    (the answer stands)."""
    extra = {"couchids_operation": operation, "couchids_db": db}
    LOGGER.debug("%s on %r found nothing; why was not found: %s", operation, db, error, extra=extra)


class CompactFormatter(logging.Formatter):
    """One line a record, ``couchids: POST /db/_all_docs 200 12 ms (attempt 1)``: couchids'
    records under the package's name, others under their logger's (``urllib3.connectionpool:
    Starting new HTTP connection (1): 127.0.0.1:5984``)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        name = record.name
        source = LOGGER.name if name.partition(".")[0] == LOGGER.name else name
        return f"{source}: {record.message}"


@contextlib.contextmanager
def shown(verbosity: int, stream: TextIO) -> Iterator[None]:
    """Inside, couchids' records go to ``stream`` (the command's ``-v``): with ``verbosity`` 1
    its requests and retries, with 2 or more the HTTP library's DEBUG records too; with 0
    nothing changes. The handler and levels are put back after."""
    if verbosity <= 0:
        yield
        return
    handler = logging.StreamHandler(stream)
    handler.setFormatter(CompactFormatter())
    loggers = [LOGGER, *(logging.getLogger(name) for name in HTTP_LOGGERS if verbosity >= 2)]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
        handler.close()
