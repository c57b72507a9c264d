"""The time an operation may take: how often and after how long a request whose answer was
lost is sent again (:class:`RetryPolicy`), and one deadline for a public call that runs others
(:func:`one_deadline`)."""

from __future__ import annotations

import contextlib
import email.utils
import random
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC
from typing import Final

from couchids.core import arguments
from couchids.idforms.times import SecondsLike

#: Seconds before the first retry; each later retry waits twice as long (with jitter).
DEFAULT_BACKOFF: Final = 0.05
#: Retries after a lost answer, on top of the first attempt.
DEFAULT_RETRIES: Final = 4
#: The longest wait between two attempts, whatever the backoff.
MAX_BACKOFF: Final = 2.0
#: The longest ``Retry-After`` (seconds) a 429 answer is obeyed for.
MAX_RETRY_AFTER: Final = 30.0

#: The deadline of the public call under way in this thread or task (:func:`one_deadline`).
_enclosing: ContextVar[float | None] = ContextVar("couchids_enclosing_deadline", default=None)


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and after how long, a request whose answer was lost is sent again, and the
    ``deadline`` (a ``time.monotonic()``) of the whole public call (``operation`` names it in
    messages).

    One policy is made per public call and bounds every request, retry and pause of it;
    nothing inside a call starts a clock of its own, except a stream whose ``timeout`` bounds
    each of its requests (:meth:`renewed`).
    """

    retries: int
    backoff: float
    timeout: float | None = None
    operation: str = "request"
    deadline: float | None = field(default=None, compare=False)

    @classmethod
    def checked(
        cls,
        retries: int,
        backoff: SecondsLike,
        timeout: SecondsLike | None = None,
        operation: str = "request",
    ) -> RetryPolicy:
        """The policy for the public arguments ``retries``, ``backoff`` and ``timeout``, checked;
        the clock starts now (inside :func:`one_deadline`, it ends by that deadline at the
        latest)."""
        retries = arguments.count("retries", retries, 0)
        pause = arguments.seconds("backoff", backoff, most=MAX_BACKOFF)
        limit = arguments.timeout("timeout", timeout)
        policy = cls(retries, pause, limit, operation).renewed()
        return replace(policy, deadline=_sooner(policy.deadline, _enclosing.get()))

    @classmethod
    def within(cls, timeout: SecondsLike | None, operation: str) -> RetryPolicy:
        """The policy of a call whose only limit is the caller's ``timeout``, with the default
        retries and backoff.

        >>> policy = RetryPolicy.within(4, "status")
        >>> policy.retries, policy.timeout, 3.9 < policy.remaining() <= 4
        (4, 4.0, True)
        """
        return cls.checked(DEFAULT_RETRIES, DEFAULT_BACKOFF, timeout, operation)

    def renewed(self) -> RetryPolicy:
        """The same policy with its clock started now (each page or batch of a stream)."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        return replace(self, deadline=deadline)

    def each_step(self, seconds: float) -> RetryPolicy:
        """The policy of one step (a poll) of a call: the call's own when it has a deadline;
        without one, ``seconds`` from now, so that a step with no answer still ends.

        >>> RetryPolicy.within(None, "wait").each_step(60).timeout
        60.0
        >>> RetryPolicy.within(5, "wait").each_step(60).timeout
        5.0
        """
        if self.deadline is not None:
            return self
        return replace(self, timeout=float(seconds)).renewed()

    def remaining(self) -> float | None:
        """Seconds left before the deadline (``None``: no deadline)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        left = self.remaining()
        return left is not None and left <= 0

    def delay(self, retry_after: str | None, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt + 1``: a 429's ``Retry-After`` (in
        seconds or an HTTP date: ``retry_after_seconds``), up to ``MAX_RETRY_AFTER``, else
        the backoff doubled per attempt, jittered (writers that lost their answers at one
        moment spread out)."""
        after = retry_after_seconds(retry_after)
        if after is not None:
            return min(after, MAX_RETRY_AFTER)
        return min(MAX_BACKOFF, self.backoff * 2.0**attempt) * random.uniform(0.5, 1.0)


def retry_after_seconds(retry_after: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header in seconds, either of its forms (RFC 9110 section 10.2.3): a
    number of seconds, or an HTTP date, the seconds from ``now`` (epoch seconds, default the
    clock's) until then, 0 for a date past; ``None`` for nonsense. The callers cap it.

    >>> retry_after_seconds("120"), retry_after_seconds("soon")
    (120.0, None)
    >>> retry_after_seconds("Sat, 01 Jan 2000 00:00:30 GMT", now=946684800.0)
    30.0
    >>> retry_after_seconds("Fri, 31 Dec 1999 23:59:59 GMT")
    0.0
    """
    if retry_after is None:
        return None
    try:
        seconds = float(retry_after)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(retry_after)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # "-0000": a time in UTC (RFC 5322 section 3.3)
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if seconds == seconds else None


def _sooner(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


@contextlib.contextmanager
def one_deadline(policy: RetryPolicy) -> Iterator[None]:
    """Inside, the policies made for public calls end by ``policy``'s deadline at the latest,
    in this thread or task: a public call that runs others keeps to its own deadline.

    >>> outer = RetryPolicy.within(1, "create")
    >>> with one_deadline(outer):
    ...     RetryPolicy.within(60, "create").remaining() <= 1
    True
    """
    token = _enclosing.set(_sooner(policy.deadline, _enclosing.get()))
    try:
        yield
    finally:
        _enclosing.reset(token)
