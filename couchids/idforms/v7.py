"""UUIDv7 ids as kuuid 3 makes them: ``v7()`` hyphenated, ``v7s()`` as 32 hex characters.

Layout (RFC 9562, 5.7): 48 bits of Unix milliseconds, the version ``7``, 12 bits ``rand_a``,
the variant ``10``, 62 bits ``rand_b``. Where kuuid 3 counts from 0 in ``rand_a`` (and
overflows into 33 characters after 4096 ids in a millisecond), couchids takes ``rand_a`` and
``rand_b`` as one 74-bit number (RFC 9562's "monotonic random", method 2): the first id of a
millisecond is random below ``2**73``, each later one adds a random step of 1 to ``2**32``.

- For the current time, a clock that steps back is held at the last millisecond used, and a
  millisecond whose 74 bits run out moves on to the next (RFC 9562 6.2).
- An explicit ``timestamp`` encodes exactly that millisecond, continuing its sequence if it
  is among the last ``RECENT`` ones; the clock's own millisecond is kept apart from those.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator

from couchids.errors import InvalidTimeError
from couchids.idforms.constants import V7_RANDOM_BITS, V7_VERSION
from couchids.idforms.doctypes import type_prefix
from couchids.idforms.times import TimeLike, now_ms, to_datetime, to_ms

__all__ = ["uuid7_from", "v7", "v7_hex", "v7s"]

RECENT = 1024
_RANDOM_LIMIT = 1 << V7_RANDOM_BITS
_FIRST_BITS = V7_RANDOM_BITS - 1  # headroom: a sequence can take 2**41 steps before it ends
_STEP_MASK = (1 << 32) - 1
_BATCH_WORDS = 512
_RAND_B_BITS = 62
_RAND_B_MASK = (1 << _RAND_B_BITS) - 1
_VERSION_AND_VARIANT = (V7_VERSION << 76) | (0b10 << _RAND_B_BITS)


class Sequencer:
    """The last 74-bit value used for the clock's millisecond and each recent explicit one,
    shared by the threads. It reads its random words itself, under its lock: a call of
    entropy.WORDS would cost 100 ns more an id.

    Args:
        clock: the current time in epoch milliseconds (tests pass a frozen one).

    >>> seq = Sequencer(clock=lambda: 5)
    >>> [ms for ms, _ in (seq.next(None), seq.next(7), seq.next(None))]
    [5, 7, 5]
    """

    def __init__(self, clock: Callable[[], int] = now_ms) -> None:
        self._clock = clock
        self.reset()

    def reset(self) -> None:
        """Forget every sequence and the random words held (after a fork)."""
        self._lock = threading.Lock()
        self._recent: OrderedDict[int, int] = OrderedDict()
        self._clock_ms = 0
        self._clock_value = -1
        self._words: Iterator[int] = iter(())

    def _refill(self) -> int:
        """A random 64-bit integer from a fresh batch (called under the lock)."""
        self._words = iter(memoryview(os.urandom(8 * _BATCH_WORDS)).cast("Q"))
        return next(self._words)

    def next(self, explicit_ms: int | None) -> tuple[int, int]:
        """The millisecond and 74-bit value of a new id."""
        # acquire/release: ``with`` costs about 50 ns more on CPython 3.11.
        lock = self._lock
        lock.acquire()
        try:
            if explicit_ms is None:
                # A clock that stepped back is held at the last millisecond used.
                ms = self._clock()
                if ms < self._clock_ms:
                    ms = self._clock_ms
            else:
                ms = explicit_ms
            value = self._after(ms)
            if value is None:
                if explicit_ms is not None:
                    raise InvalidTimeError(
                        f"no UUIDv7 is left for {to_datetime(ms).isoformat()}: its 74 random "
                        "bits ran out"
                    )
                ms += 1
                value = self._after(ms)
                if value is None:  # only if explicit ids used up the next millisecond too
                    raise InvalidTimeError(
                        f"no UUIDv7 is left for {to_datetime(ms).isoformat()} or the "
                        "millisecond before: their 74 random bits ran out"
                    )
            if explicit_ms is None:
                self._clock_ms = ms
                self._clock_value = value
            else:
                recent = self._recent
                recent[ms] = value
                recent.move_to_end(ms)
                if len(recent) > RECENT:
                    recent.popitem(last=False)
            return ms, value
        finally:
            lock.release()

    def _after(self, ms: int) -> int | None:
        """The next value for ``ms``, or ``None`` when its 74 bits are used up."""
        last = self._recent.get(ms, -1)
        if ms == self._clock_ms and self._clock_value > last:
            last = self._clock_value
        word = next(self._words, None)
        if word is None:
            word = self._refill()
        if last < 0:
            low = next(self._words, None)
            if low is None:
                low = self._refill()
            return ((word << 64) | low) >> (128 - _FIRST_BITS)
        value = last + 1 + (word & _STEP_MASK)
        return value if value < _RANDOM_LIMIT else None


SEQUENCER = Sequencer()
os.register_at_fork(after_in_child=SEQUENCER.reset)


def v7_hex(ms: int, value: int, *, hyphenated: bool = False) -> str:
    """The 32 hex digits of the UUIDv7 of millisecond ``ms`` whose 74 other bits are ``value``
    (``hyphenated``: in RFC 9562's 8-4-4-4-12 groups).

    >>> v7_hex(0, 0), v7_hex(0, 0, hyphenated=True)[:15]
    ('00000000000070008000000000000000', '00000000-0000-7')
    """
    h = f"{uuid7_from(ms, value):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}" if hyphenated else h


def uuid7_from(ms: int, value: int) -> int:
    """The 128-bit UUIDv7 of millisecond ``ms`` whose 74 other bits are ``value``.

    >>> hex(uuid7_from(0, 0))
    '0x70008000000000000000'
    """
    return (
        (ms << 80) | ((value >> _RAND_B_BITS) << 64) | (value & _RAND_B_MASK) | _VERSION_AND_VARIANT
    )


def _hex(timestamp: TimeLike, *, hyphenated: bool = False) -> str:
    """A new UUIDv7's text, in the sequence every UUIDv7 form shares."""
    ms, value = SEQUENCER.next(None if timestamp is None else to_ms(timestamp))
    return v7_hex(ms, value, hyphenated=hyphenated)


def v7s(timestamp: TimeLike = None, *, type: str | None = None) -> str:
    """A UUIDv7 as 32 lowercase hex characters (kuuid 3's ``v7s``).

    Args:
        timestamp: when the id is made (default now); see :func:`couchids.idforms.times.to_ms`.
        type: document type written before the id as ``type:``.

    Raises:
        InvalidTimeError, InvalidTypeError: a bad ``timestamp`` or ``type``.

    >>> v7s(0)[:13]
    '0000000000007'
    """
    text = _hex(timestamp)
    return text if type is None else type_prefix(type) + text


def v7(timestamp: TimeLike = None, *, type: str | None = None) -> str:
    """A UUIDv7 in its 36-character hyphenated form (kuuid 3's ``v7``).

    Takes the same arguments as :func:`v7s`.

    >>> v7("2024-01-01")[:15]
    '018cc251-f400-7'
    """
    text = _hex(timestamp, hyphenated=True)
    return text if type is None else type_prefix(type) + text
