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
  :data:`KEY_HASH_PERSON` so that it is unrelated to other uses of BLAKE2b. The form takes its
  top :attr:`~couchids.IdForm.random_bits` bits and writes the id with
  :meth:`~couchids.IdForm.compose`, as it writes any id: a kuuid id's blocks (32 bits each), a
  UUIDv7's (or base36 UUIDv7's) 74 bits, a tid62's 64, a ULID's 80, a ``utc_random``'s 72
  (``utc_id`` has none: its id is the time and the suffix). Keys are hashed, not shown:
  the id does not reveal the key. Two different keys share an id only if their hashes agree
  in those bits (as likely as two random ids of the form agreeing, for the same time unit).

The key and the time together name the document: the same key with another time is another
document, and so is the same key in another form or type.
"""

from __future__ import annotations

from typing import Final

from couchids.errors import InvalidArgumentError
from couchids.idforms.constants import US_PER_MS
from couchids.idforms.forms import KUUID
from couchids.idforms.idform import IdForm
from couchids.idforms.times import TimeLike, to_ms

__all__ = ["KEY_HASH_PERSON", "keyed_id"]

#: BLAKE2b's personalisation string for key hashes; changing it would change every keyed id.
KEY_HASH_PERSON: Final = b"couchids-key-v1"
_DIGEST_BITS: Final = 128


def keyed_id(
    key: str, timestamp: TimeLike, *, type: str | None = None, form: IdForm = KUUID
) -> str:
    """The id of form ``form`` that idempotency key ``key`` names at time ``timestamp``.

    The same arguments always give the same id, in every process and on every machine (see
    the module docstring). :meth:`~couchids.Database.create` and
    :meth:`~couchids.Database.bulk_create` use it
    when given ``key=``; call it to find a keyed document again.

    Args:
        key: a non-empty string naming the document, such as ``"settle:table-7:hand-42"``.
        timestamp: the document's own time (any time couchids accepts except ``None``: a key
            needs a time that is the same on every run).
        type: the document type written before the id as ``type:``.
        form: any form that holds a time (:data:`couchids.KUUID` and friends, UUIDv7s,
            TID62, BASE36_V7, ULID, UTC_RANDOM, ...).

    Raises:
        InvalidArgumentError: ``key`` is not a non-empty string, ``timestamp`` is ``None`` or
            ``form`` is not an :class:`~couchids.IdForm` holding a time.
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
    if not isinstance(form, IdForm) or not (form.has_time and form.sortable):
        raise InvalidArgumentError(
            f"form={form!r}: keyed ids are made in the forms that hold a time and sort by it "
            "(KUUID and its "
            "modes, V7, V7S, TID62, BASE36_V7, ULID, UTC_RANDOM, UtcIdForm(...))"
        )
    ms = to_ms(timestamp)
    head = form.type_prefix(type)
    try:
        data = key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(f"key={key!r} is not valid Unicode text: {exc}") from None
    # Imported here: hashlib loads OpenSSL, which a program that never makes keyed ids (such
    # as ``couchids new``) need not pay for at start-up.
    import hashlib

    digest = int.from_bytes(
        hashlib.blake2b(data, digest_size=_DIGEST_BITS // 8, person=KEY_HASH_PERSON).digest()
    )
    # The top bits of the hash, as many as the form's random part holds.
    return head + form.compose(ms * US_PER_MS, digest >> (_DIGEST_BITS - form.random_bits))
