"""uuid464: a UUID as 22 characters of unpadded base64url (the SimpleDB id specification).

Random (version 4) UUIDs hold no time; a UUIDv7 written this way does, and is read. But
base64url's alphabet is not in byte order, so uuid464 ids never sort by time and time queries
on them are refused.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from couchids.errors import InvalidArgumentError
from couchids.idforms.base36 import uuid7_time
from couchids.idforms.constants import US_PER_MS, UUID464_LEN
from couchids.idforms.entropy import WORDS
from couchids.idforms.idform import NOT_READ, IdForm, ReadAttempt
from couchids.idforms.times import TimeLike

__all__ = ["UUID464", "Uuid464Form"]

_CHAR = "[A-Za-z0-9_-]"
#: 22 characters hold 132 bits: the last character carries 2 bits and 4 zero bits.
_BODY = f"{_CHAR}{{{UUID464_LEN - 1}}}[AQgw]"
_PATTERN = re.compile(_BODY)
_V4_CLEAR = ~((0xF << 76) | (0b11 << 62)) & ((1 << 128) - 1)
_V4_SET = (4 << 76) | (0b10 << 62)


@dataclass(frozen=True)
class Uuid464Form(IdForm):
    """A UUID (version 4 when made here) as 22 base64url characters, without padding.

    >>> UUID464.read("AYzCUfQAcACAAAAAAAAAAA")
    1704067200000000
    >>> len(UUID464.new()), UUID464.sortable
    (22, False)
    """

    kind = "uuid464"
    sortable = False
    length = UUID464_LEN
    max_unit = -1

    def new(self, timestamp: TimeLike = None, *, type: str | None = None) -> str:
        if timestamp is not None:
            raise InvalidArgumentError(
                "uuid464 ids are random UUIDs (version 4) and hold no time: pass no timestamp"
            )
        value = (WORDS.bits(128) & _V4_CLEAR) | _V4_SET
        body = base64.urlsafe_b64encode(value.to_bytes(16))[:UUID464_LEN].decode("ascii")
        return body if type is None else self.type_prefix(type) + body

    def key(self, unit: int) -> str:
        raise InvalidArgumentError(
            "uuid464 ids do not sort by time in _all_docs (base64url's alphabet is not in "
            "byte order), so no time has a key"
        )

    def body_pattern(self) -> str:
        return _BODY

    def try_read(self, body: str) -> ReadAttempt:
        """The time of a UUIDv7 inside, in microseconds; ``None`` for other UUIDs."""
        if len(body) != UUID464_LEN or _PATTERN.fullmatch(body) is None:
            return NOT_READ
        try:
            raw = base64.urlsafe_b64decode(body + "==")
        except (binascii.Error, ValueError):
            return NOT_READ
        if len(raw) != 16:
            return NOT_READ
        ms = uuid7_time(int.from_bytes(raw))
        return None if ms is None else ms * US_PER_MS

    def _why(self, body: str) -> str | None:
        if self.try_read(body) is not NOT_READ:
            return None
        return (
            f"{body!r} is not a uuid464 id: 22 base64url characters (A-Z, a-z, 0-9, -, _) "
            "holding 16 bytes, the last one A, Q, g or w"
        )


#: UUIDs as 22 base64url characters (no time unless the UUID is a UUIDv7; never sortable).
#:
#: >>> len(couchids.UUID464.new())
#: 22
UUID464 = Uuid464Form()
