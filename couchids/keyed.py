"""Ids named by an idempotency key: one key and one time always make the same id (pure; no I/O).

A job that stores one document per event names each event with a key of its own, such as
``"settle:table-7:hand-42"``, and gives the event's time. The id is then a function of the key
and the time alone, so running the job again after a crash writes every document under the id
it had the first time: CouchDB's create-if-absent finds it there, and couchids reports it as a
duplicate instead of storing it twice.

- **Time part**: the time the caller gives (never "now", which would differ on a re-run),
  written exactly as :meth:`IdForm.new <couchids.IdForm.new>` writes it, so keyed ids sort
  and are queried like every other id of their form.
- **Random part**: the 128-bit BLAKE2b hash of the key (UTF-8), personalised with
  :data:`KEY_HASH_PERSON` so that it is unrelated to other uses of BLAKE2b. A kuuid id takes
  its blocks from it, 32 bits each; a UUIDv7 takes its 74 bits. Keys are hashed, not shown:
  the id does not reveal the key. Two different keys share an id only if their hashes agree
  in those bits (as likely as two random ids of the form agreeing, for the same time unit).

The key and the time together name the document: the same key with another time is another
document, and so is the same key in another form or type.
"""

from __future__ import annotations

import hashlib
from typing import Final

from .base62 import encode, encode_prefix
from .constants import BLOCK_BITS, BLOCK_LEN, V7_RANDOM_BITS
from .errors import InvalidArgumentError
from .forms import KUUID, KuuidForm
from .idform import IdForm
from .kuuid import prefix_value
from .times import TimeLike, to_ms
from .v7 import v7_hex

__all__ = ["KEY_HASH_PERSON", "keyed_id"]

#: BLAKE2b's personalisation string for key hashes; changing it would change every keyed id.
KEY_HASH_PERSON: Final = b"couchids-key-v1"
_DIGEST_BITS: Final = 128


def keyed_id(
    key: str, timestamp: TimeLike, *, type: str | None = None, form: IdForm = KUUID
) -> str:
    """The id of form ``form`` that idempotency key ``key`` names at time ``timestamp``.

    The same arguments always give the same id, in every process and on every machine (see
    the module docstring). :func:`couchids.create` and :func:`couchids.bulk_create` use it
    when given ``key=``; call it to find a keyed document again.

    Args:
        key: a non-empty string naming the document, such as ``"settle:table-7:hand-42"``.
        timestamp: the document's own time (any time couchids accepts except ``None``: a key
            needs a time that is the same on every run).
        type: the document type written before the id as ``type:``.
        form: the id layout (:data:`couchids.KUUID` and friends, UUIDv7 forms too).

    Raises:
        InvalidArgumentError: ``key`` is not a non-empty string, ``timestamp`` is ``None`` or
            ``form`` is not an :class:`~couchids.IdForm`.
        InvalidTimeError, InvalidTypeError: a bad ``timestamp`` or ``type``.

    >>> keyed_id("settle:table-7:hand-42", "2024-05-01T12:00:00Z", type="settlement")
    'settlement:001s28cy2KTC774XfdSt1Y265q4Zu951'
    >>> keyed_id("a", 0) == keyed_id("a", 999) != keyed_id("b", 0)
    True
    """
    if not isinstance(key, str) or not key:
        raise InvalidArgumentError(
            f"key={key!r}: an idempotency key is a non-empty string naming the document"
        )
    if timestamp is None:
        raise InvalidArgumentError(
            "a keyed id needs the document's own time (timestamp=): 'now' differs on a re-run, "
            "and so would the id"
        )
    if not isinstance(form, KuuidForm):
        raise InvalidArgumentError(
            f"form={form!r}: keyed ids are made in the kuuid and UUIDv7 forms (KUUID and its "
            "modes, V7, V7S)"
        )
    ms = to_ms(timestamp)
    head = form.type_prefix(type)
    try:
        data = key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(f"key={key!r} is not valid Unicode text: {exc}") from None
    digest = int.from_bytes(
        hashlib.blake2b(data, digest_size=_DIGEST_BITS // 8, person=KEY_HASH_PERSON).digest()
    )
    if form.kind != "kuuid":
        text = v7_hex(ms, digest >> (_DIGEST_BITS - V7_RANDOM_BITS))
        if form.kind == "v7":
            text = f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
        return head + text
    time_part = encode_prefix(prefix_value(ms, reverse=form.reverse, millisecond=form.millisecond))
    mask = (1 << BLOCK_BITS) - 1
    blocks = (
        encode((digest >> (_DIGEST_BITS - BLOCK_BITS * (i + 1))) & mask, BLOCK_LEN)
        for i in range(form.random)
    )
    return head + time_part + "".join(blocks)
