"""The ids CouchDB makes itself, for a document posted without ``_id`` (``[uuids] algorithm``).

- ``utc_random``: 14 hex digits of microseconds since 1970, then 18 random hex digits (32 in
  all); :data:`UTC_RANDOM`. Microsecond precision, times from 2000 to 2100 (see below).
- ``utc_id``: the same 14 hex digits, then the server's ``[uuids] utc_id_suffix``;
  :class:`UtcIdForm` takes the suffix (``UtcIdForm("-node1")``).
- ``uuid_v7`` (CouchDB 3.5.1+): its ``base_16`` format is :data:`couchids.V7S`, ``rfc9562`` is
  :data:`couchids.V7` and ``base_36`` is :data:`couchids.BASE36_V7`.
- ``random`` and ``sequential``: 32 hex digits that hold no time; :data:`COUCH_RANDOM` reads
  them and says so (``sequential`` ids are in no time order: COUCHDB-FACTS).

Like CouchDB's, ids made here for the current time strictly increase within a process. Any
32 hex digits read as some ``utc_random`` time, so a ``utc_random`` id is told from the other
32-hex ids by its time alone: one in 2000-2100, its runway (docs/guide/ids.md says what that
keeps out; :func:`couchids.core.scan.check_one_form` refuses a type that shows it holds
``random`` ids).
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from couchids.errors import InvalidArgumentError, InvalidTimeError
from couchids.idforms.constants import (
    COUCH_HEX_LEN,
    US_PER_MS,
    UTC_RANDOM_FROM_MS,
    UTC_RANDOM_LEN,
    UTC_RANDOM_UNTIL_MS,
    UTC_TIME_LEN,
)
from couchids.idforms.entropy import WORDS
from couchids.idforms.idform import NOT_READ, IdForm, NotRead, ReadAttempt
from couchids.idforms.times import EPOCH, TimeLike, to_ms

__all__ = ["COUCH_RANDOM", "UTC_RANDOM", "CouchRandomForm", "UtcIdForm", "UtcRandomForm"]

#: The last microsecond 14 hex digits hold (in 4253, before 9999).
_MAX_US = 16**UTC_TIME_LEN - 1
_TIME = f"[0-9a-f]{{{UTC_TIME_LEN}}}"
_HEX_RULE = "lower-case hex digits (0-9, a-f)"
_RUNWAY = "2000-01-01 to 2100-01-01"
_RANDOM_BODY = re.compile(f"{_TIME}[0-9a-f]{{{UTC_RANDOM_LEN}}}")
_COUCH_RANDOM_BODY = re.compile(f"[0-9a-f]{{{COUCH_HEX_LEN}}}")
_NAIVE_EPOCH = EPOCH.replace(tzinfo=None)


def utc_text(us: int) -> str:
    """``str(EPOCH + timedelta(microseconds=us))``, in less time (every refusal of 32 hex
    digits by :func:`couchids.decode` quotes one).

    >>> utc_text(1_500_000) == str(EPOCH + timedelta(microseconds=1_500_000))
    True
    """
    return f"{_NAIVE_EPOCH + timedelta(microseconds=us)}+00:00"


class _MicroClock:
    """Microseconds that strictly increase within the process, as CouchDB's utc ids do."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def next(self) -> int:
        with self._lock:
            self._last = max(time.time_ns() // 1000, self._last + 1)
            return self._last


_CLOCK = _MicroClock()
os.register_at_fork(after_in_child=_CLOCK.reset)


def _micros(timestamp: TimeLike) -> int:
    return _CLOCK.next() if timestamp is None else to_ms(timestamp) * US_PER_MS


@dataclass(frozen=True)
class _UtcForm(IdForm):
    """14 hex digits of microseconds, then a tail each subclass defines."""

    max_unit = _MAX_US // US_PER_MS
    precision_us = 1

    def key(self, unit: int) -> str:
        return f"{unit * US_PER_MS:014x}"

    def try_read(self, body: str) -> ReadAttempt:
        if len(body) != self.length or re.fullmatch(self.body_pattern(), body) is None:
            return NOT_READ
        return int(body[:UTC_TIME_LEN], 16)

    def _why(self, body: str) -> str | None:
        if re.fullmatch(self.body_pattern(), body) is not None:
            return None
        return (
            f"{body!r} is not a {self} id: {UTC_TIME_LEN} {_HEX_RULE} of microseconds since "
            f"1970, then {self._tail()}"
        )

    def _tail(self) -> str:
        return ""


@dataclass(frozen=True)
class UtcRandomForm(_UtcForm):
    """CouchDB's ``utc_random``: microseconds in 14 hex digits, then 18 random hex digits,
    holding a time from 2000-01-01 to 2100-01-01 (the module notes say why).

    >>> UTC_RANDOM.parse(UTC_RANDOM.new("2024-01-01T00:00:00.123Z"))
    1704067200123
    >>> UTC_RANDOM.parse("018f2a3b4c5d7e6f9a0b1c2d3e4f5a6b")  # a v7s id of 2024
    Traceback (most recent call last):
    ...
    couchids.errors.InvalidIdError: ... outside the utc_random runway ...
    """

    kind = "utc_random"
    loose = True
    length = UTC_TIME_LEN + UTC_RANDOM_LEN
    min_unit = UTC_RANDOM_FROM_MS
    max_unit = UTC_RANDOM_UNTIL_MS - 1
    random_bits = UTC_RANDOM_LEN * 4

    def key_fits(self, unit: int) -> bool:
        """Whether 14 hex digits hold ``unit``: the key just after the runway is written too,
        so a window to the runway's end stops there (not at the end of the type)."""
        return 0 <= unit * US_PER_MS <= _MAX_US

    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        body = self.compose(_micros(timestamp), WORDS.bits(self.random_bits))
        return body if type is None else self.type_prefix(type) + body

    def compose(self, us: int, random: int) -> str:
        if not UTC_RANDOM_FROM_MS <= us // US_PER_MS < UTC_RANDOM_UNTIL_MS:
            raise InvalidTimeError(
                f"{EPOCH + timedelta(microseconds=us)} is outside the utc_random runway: "
                f"utc_random ids hold times from {_RUNWAY}"
            )
        return f"{us:014x}{random:018x}"

    def body_pattern(self) -> str:
        return _RANDOM_BODY.pattern

    def try_read(self, body: str) -> int | NotRead:
        if len(body) != UTC_TIME_LEN + UTC_RANDOM_LEN or _RANDOM_BODY.fullmatch(body) is None:
            return NOT_READ
        us = int(body[:UTC_TIME_LEN], 16)
        if not UTC_RANDOM_FROM_MS <= us // US_PER_MS < UTC_RANDOM_UNTIL_MS:
            return NOT_READ
        return us

    def _why(self, body: str) -> str | None:
        if _RANDOM_BODY.fullmatch(body) is None:
            return super()._why(body)
        us = int(body[:UTC_TIME_LEN], 16)
        if UTC_RANDOM_FROM_MS <= us // US_PER_MS < UTC_RANDOM_UNTIL_MS:
            return None
        return (
            f"{body!r} reads as {utc_text(us)}, outside the utc_random runway ({_RUNWAY}): 32 "
            "hex digits of another form, such as a v7s id or CouchDB's random ids"
        )

    def _tail(self) -> str:
        return f"{UTC_RANDOM_LEN} random hex digits"


@dataclass(frozen=True)
class UtcIdForm(_UtcForm):
    """CouchDB's ``utc_id``: microseconds in 14 hex digits, then a fixed ``suffix`` (the
    server's ``[uuids] utc_id_suffix``).

    Raises:
        InvalidArgumentError: a suffix that is not a string of printable ASCII.

    >>> form = UtcIdForm("-node1")
    >>> form.new("2024-01-01")
    '060dd710212000-node1'
    """

    suffix: str = ""
    kind = "utc_id"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.suffix, str) or not all(" " < ch < "\x7f" for ch in self.suffix):
            raise InvalidArgumentError(
                f"suffix={self.suffix!r}: a utc_id suffix is printable ASCII without spaces"
            )

    @property
    def length(self) -> int:
        return UTC_TIME_LEN + len(self.suffix)

    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        body = self.compose(_micros(timestamp), 0)
        return body if type is None else self.type_prefix(type) + body

    def compose(self, us: int, random: int) -> str:
        if not 0 <= us <= _MAX_US:
            raise InvalidTimeError(
                f"{EPOCH + timedelta(microseconds=us)} is past the last microsecond 14 hex "
                f"digits hold ({EPOCH + timedelta(microseconds=_MAX_US)})"
            )
        return f"{us:014x}{self.suffix}"

    def body_pattern(self) -> str:
        return _TIME + re.escape(self.suffix)

    def _tail(self) -> str:
        return f"the suffix {self.suffix!r}"


@dataclass(frozen=True)
class CouchRandomForm(IdForm):
    """CouchDB's ``random`` and ``sequential`` uuids: 32 hex digits that hold no time.

    >>> COUCH_RANDOM.read("4e17c12963f4bee0e6ec90da54804894") is None
    True
    """

    kind = "couch_random"
    has_time = False
    length = COUCH_HEX_LEN
    max_unit = -1

    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        if timestamp is not None:
            raise InvalidArgumentError("couch_random ids hold no time: pass no timestamp")
        body = os.urandom(COUCH_HEX_LEN // 2).hex()
        return body if type is None else self.type_prefix(type) + body

    def key(self, unit: int) -> str:
        raise InvalidArgumentError("couch_random ids hold no time, so no time has a key")

    def body_pattern(self) -> str:
        return _COUCH_RANDOM_BODY.pattern

    def try_read(self, body: str) -> ReadAttempt:
        return None if _COUCH_RANDOM_BODY.fullmatch(body) else NOT_READ

    def _why(self, body: str) -> str | None:
        if _COUCH_RANDOM_BODY.fullmatch(body) is not None:
            return None
        return f"{body!r} is not a couch_random id: 32 {_HEX_RULE}"


#: CouchDB's ``utc_random`` ids: 14 hex digits of microseconds since 1970, then 18 random ones.
#:
#: >>> couchids.UTC_RANDOM.new("2024-01-01")[:14], len(couchids.UTC_RANDOM.new())
#: ('060dd710212000', 32)
UTC_RANDOM = UtcRandomForm()
#: CouchDB's ``random`` and ``sequential`` ids: 32 hex digits, no time (so read only with
#: ``form=``, and never queried by time).
#:
#: >>> doc_id = couchids.COUCH_RANDOM.new()
#: >>> len(doc_id), couchids.decode(doc_id, form=couchids.COUCH_RANDOM).timestamp
#: (32, None)
COUCH_RANDOM = CouchRandomForm()
