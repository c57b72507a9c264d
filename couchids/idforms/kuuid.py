"""kuuid ids: 8 base62 characters of time, then 1-4 blocks of randomness.

Byte-for-byte the format of the kuuid npm package, so Node and Python programs can share a
database (docs/guide/caveats.md lists the few deliberate differences).
"""

from __future__ import annotations

from couchids.errors import InvalidArgumentError, InvalidTimeError
from couchids.idforms.base62 import encode_prefix
from couchids.idforms.constants import (
    BLOCK_LEN,
    DEFAULT_BLOCKS,
    MAX_BLOCKS,
    MAX_PREFIX_VALUE,
    MIN_BLOCKS,
    MS_PER_SECOND,
    SHORT_BLOCKS,
)
from couchids.idforms.doctypes import type_prefix
from couchids.idforms.entropy import POOL
from couchids.idforms.times import TimeLike, now_ms, to_datetime, to_ms

__all__ = [
    "id",
    "idms",
    "idmsr",
    "idr",
    "ids",
    "idsr",
    "prefix",
    "prefix_ms",
    "prefix_reverse",
    "prefix_reverse_ms",
    "rand",
]


def prefix_value(ms: int, *, reverse: bool, millisecond: bool) -> int:
    """The number an 8-character prefix stores for the time ``ms``."""
    for name, flag in (("reverse", reverse), ("millisecond", millisecond)):
        if not isinstance(flag, bool):
            raise InvalidArgumentError(f"{name}={flag!r}: must be True or False")
    value = ms if millisecond else ms // MS_PER_SECOND
    if value > MAX_PREFIX_VALUE:
        last = to_datetime(MAX_PREFIX_VALUE).isoformat()
        raise InvalidTimeError(
            f"{to_datetime(ms).isoformat()} is past the last millisecond an 8-character "
            f"prefix holds ({last}); use second precision for later times"
        )
    return MAX_PREFIX_VALUE - value if reverse else value


def prefix(timestamp: TimeLike = None, *, reverse: bool = False, millisecond: bool = False) -> str:
    """The 8-character time prefix of an id made at ``timestamp``.

    Args:
        timestamp: any time couchids accepts (:func:`~couchids.idforms.times.to_ms`), or
            ``None`` for now.
        reverse: store ``62**8 - 1 - time`` so that newer ids sort first.
        millisecond: count milliseconds instead of seconds.

    Raises:
        InvalidTimeError: the time is unreadable, before 1970 or past what 8 characters hold.

    >>> prefix("2018-01-01T00:00:00Z")
    '001eVnWK'
    >>> prefix("1970-01-01", reverse=True)
    'zzzzzzzz'
    """
    ms = now_ms() if timestamp is None else to_ms(timestamp)
    return encode_prefix(prefix_value(ms, reverse=reverse, millisecond=millisecond))


def prefix_ms(timestamp: TimeLike = None) -> str:
    """kuuid's ``prefixms``: the millisecond prefix of ``timestamp``.

    >>> prefix_ms("2018-01-01T00:00:00.001Z")
    '0QfQsjKb'
    """
    return prefix(timestamp, millisecond=True)


def prefix_reverse(timestamp: TimeLike = None) -> str:
    """kuuid's ``prefixReverse``: the newest-first second prefix of ``timestamp``.

    >>> prefix_reverse("2018-01-01T00:00:00Z")
    'zzyLUCTf'
    """
    return prefix(timestamp, reverse=True)


def prefix_reverse_ms(timestamp: TimeLike = None) -> str:
    """kuuid's ``prefixReverseMs``: the newest-first millisecond prefix of ``timestamp``.

    >>> prefix_reverse_ms("2018-01-01T00:00:00.001Z")
    'zZKZ7GfO'
    """
    return prefix(timestamp, reverse=True, millisecond=True)


def check_blocks(blocks: int) -> int:
    """Return ``blocks`` if it is an int from 1 to 4 (not a bool, nor a float such as ``4.0``),
    else raise :class:`InvalidArgumentError`."""
    if (
        isinstance(blocks, bool)
        or not isinstance(blocks, int)
        or not (MIN_BLOCKS <= blocks <= MAX_BLOCKS)
    ):
        raise InvalidArgumentError(
            f"random={blocks!r}: the number of random blocks must be an int from "
            f"{MIN_BLOCKS} to {MAX_BLOCKS}"
        )
    return blocks


def rand(blocks: int = DEFAULT_BLOCKS) -> str:
    """``blocks`` random blocks of 6 base62 characters, each a uniform 32-bit integer.

    Raises:
        InvalidArgumentError: ``blocks`` is not 1-4.

    >>> len(rand(2))
    12
    """
    check_blocks(blocks)
    suffix = POOL.take()
    return suffix if blocks == MAX_BLOCKS else suffix[: blocks * BLOCK_LEN]


def id(
    timestamp: TimeLike = None,
    *,
    type: str | None = None,
    random: int = DEFAULT_BLOCKS,
    reverse: bool = False,
    millisecond: bool = False,
) -> str:
    """A new kuuid id: 8 characters of time, then ``random`` blocks of randomness.

    Args:
        timestamp: when the id is made (default now); see :func:`~couchids.kuuid.prefix`.
        type: document type written before the id as ``type:``; ``None`` for none.
        random: number of 6-character random blocks, 1-4 (kuuid's short ids use 2).
        reverse: newest-first ids (kuuid's ``idr``).
        millisecond: millisecond precision (kuuid's ``idms``).

    Raises:
        InvalidTimeError, InvalidTypeError: a bad ``timestamp`` or ``type``.
        InvalidArgumentError: ``random`` is not 1-4, or ``reverse``/``millisecond`` not a bool.

    >>> doc_id = id("2018-01-01T00:00:00Z", type="user")
    >>> doc_id[:13], len(doc_id)
    ('user:001eVnWK', 37)
    """
    if random != DEFAULT_BLOCKS or random.__class__ is not int:  # 4.0 == 4, but is refused
        check_blocks(random)
    ms = now_ms() if timestamp is None else to_ms(timestamp)
    head = encode_prefix(prefix_value(ms, reverse=reverse, millisecond=millisecond))
    suffix = POOL.take()
    if random != MAX_BLOCKS:
        suffix = suffix[: random * BLOCK_LEN]
    if type is None:
        return head + suffix
    return type_prefix(type) + head + suffix


def idr(timestamp: TimeLike = None, *, type: str | None = None) -> str:
    """A newest-first id (kuuid's ``idr``): later times sort first.

    >>> idr("2018-01-01")[:8], len(idr())
    ('zzyLUCTf', 32)
    """
    return id(timestamp, type=type, reverse=True)


def ids(timestamp: TimeLike = None, *, type: str | None = None) -> str:
    """A short id: two random blocks, 20 characters (kuuid's ``ids``).

    >>> ids("2018-01-01")[:8], len(ids())
    ('001eVnWK', 20)
    """
    return id(timestamp, type=type, random=SHORT_BLOCKS)


def idsr(timestamp: TimeLike = None, *, type: str | None = None) -> str:
    """A short newest-first id (kuuid's ``idsr``).

    >>> idsr("2018-01-01")[:8], len(idsr())
    ('zzyLUCTf', 20)
    """
    return id(timestamp, type=type, random=SHORT_BLOCKS, reverse=True)


def idms(timestamp: TimeLike = None, *, type: str | None = None) -> str:
    """A millisecond-precision id (kuuid's ``idms``).

    >>> idms("2018-01-01T00:00:00.001Z", type="log")[:12]
    'log:0QfQsjKb'
    """
    return id(timestamp, type=type, millisecond=True)


def idmsr(timestamp: TimeLike = None, *, type: str | None = None) -> str:
    """A millisecond-precision newest-first id (kuuid's ``idmsr``).

    >>> idmsr("2018-01-01T00:00:00.001Z")[:8]
    'zZKZ7GfO'
    """
    return id(timestamp, type=type, reverse=True, millisecond=True)
