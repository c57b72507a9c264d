"""JSON, fast and exact: ``orjson`` where it keeps every value, ``json`` where it would not
(an integer beyond 64 bits), and no object whose keys are not strings."""

from __future__ import annotations

import json
from typing import Any, Final

import orjson

from couchids.errors import InvalidArgumentError

#: Every digit becomes ``0``, every other byte a space: a run of digits becomes a run of 0s.
_DIGITS_ONLY: Final = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
#: Integers of this many digits may not fit the 64 bits ``orjson`` keeps.
_LONG_RUN: Final = b"0" * 19
#: What may stand before a number in JSON, whitespace aside (or nothing: the text's start).
_BEFORE_NUMBER: Final = frozenset(b":[,")
_WHITESPACE: Final = frozenset(b" \t\r\n")
_MINUS: Final = ord("-")


def loads(body: bytes) -> Any:
    """JSON ``body``, decoded exactly: by ``orjson``, or by ``json`` when the body may hold an
    integer beyond 64 bits (:func:`long_integer`; ``orjson`` would make it a float) or
    ``orjson`` refuses it (a number beyond a double's range).

    Raises:
        ValueError: (``json.JSONDecodeError``, ``UnicodeDecodeError``) the body is not JSON.

    >>> loads(b'{"n": 123456789012345678901234567890, "m": 1}')
    {'n': 123456789012345678901234567890, 'm': 1}
    """
    if not long_integer(body):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return json.loads(body)


def long_integer(body: bytes) -> bool:
    """Whether JSON ``body`` may hold an integer of 19 digits or more: a run of that many
    digits that starts a number (after ``:``, ``[``, ``,`` or nothing, whitespace and a minus
    aside). Runs alone are in most pages (a revision holds one about once in 1,200) and would
    send them to ``json``, three times slower; a string that looks like a number only costs
    the slower decoding.

    >>> long_integer(b'{"n": -12345678901234567890}'), long_integer(b'[1, 12345678901234567890]')
    (True, True)
    >>> long_integer(b'{"_rev": "1-a1234567890123456789012b", "n": 0.12345678901234567890}')
    False
    """
    digits = body.translate(_DIGITS_ONLY)
    at = digits.find(_LONG_RUN)
    while at >= 0:
        before = at - 1
        if before >= 0 and body[before] == _MINUS:
            before -= 1
        while before >= 0 and body[before] in _WHITESPACE:
            before -= 1
        if before < 0 or body[before] in _BEFORE_NUMBER:
            return True
        end = digits.find(b" ", at + len(_LONG_RUN))
        if end < 0:
            return False
        at = digits.find(_LONG_RUN, end)
    return False


def dumps(value: Any) -> bytes:
    """``value`` as compact JSON: by ``orjson``, or by ``json`` when it holds an integer
    beyond 64 bits, which ``orjson`` refuses (and then no key that is not a string)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        _walk_keys(value)
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


def encode(body: Any, label: str) -> bytes:
    """``body`` as the compact JSON a write sends; :class:`~couchids.InvalidArgumentError`
    naming ``label`` when it is not JSON (NaN and Infinity included: CouchDB refuses them)."""
    try:
        check_keys(body)
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{label} is not JSON: {exc}") from None


def check_keys(value: Any) -> None:
    """Refuse a JSON object (at any depth) with a key that is not a string: ``json`` would
    write a key ``1`` as ``"1"``, beside a key ``"1"``, and lose one of the values.

    >>> check_keys({"a": [{1: "x", "1": "y"}]})
    Traceback (most recent call last):
      ...
    couchids.errors.InvalidArgumentError: a JSON object has the key 1 (int): ...
    """
    try:
        orjson.dumps(value)
    except TypeError:  # such a key, an integer beyond 64 bits, or no JSON: orjson is fast
        _walk_keys(value)


def _walk_keys(value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidArgumentError(
                    f"a JSON object has the key {key!r:.40} ({type(key).__name__}): the keys "
                    'of a JSON object are strings, and a key 1 would be written as "1"'
                )
            _walk_keys(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _walk_keys(item)
