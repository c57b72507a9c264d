"""Ids named by an idempotency key: one key and one time always make the same id.

A re-run job writes each document under the id it had the first time, and CouchDB's
create-if-absent turns the second write into a duplicate. The time part is the caller's time,
written as the form writes any id; the random part is the top
:attr:`~couchids.IdForm.random_bits` bits of the key's 128-bit BLAKE2b hash (personalised with
:data:`KEY_HASH_PERSON`), so the id does not reveal the key, and two keys share an id only as
often as two random ids of one time unit would. The same key with another time, form or type
is another document.
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

    The same arguments give the same id in every process (see the module docstring):
    :meth:`~couchids.Database.create` uses it when given ``key=``; call it to find a keyed
    document again.

    Args:
        key: a non-empty string naming the document, such as ``"settle:table-7:hand-42"``.
        timestamp: the document's own time (any time couchids accepts except ``None``: a key
            needs a time that is the same on every run).
        type: the document type written before the id as ``type:``.
        form: any form that holds a time and a random part (:data:`couchids.KUUID` and
            friends, UUIDv7s, TID62, BASE36_V7, ULID, UTC_RANDOM; not ``utc_id``, which has
            no random part for the key).

    Raises:
        InvalidArgumentError: ``key`` is not a non-empty string, ``timestamp`` is ``None`` or
            ``form`` is not an :class:`~couchids.IdForm` holding a time and a random part.
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
            "(KUUID and its modes, V7, V7S, TID62, BASE36_V7, ULID, UTC_RANDOM)"
        )
    if not form.random_bits:
        # The key goes in the random part: without one, every key of a time is one id.
        raise InvalidArgumentError(
            f"form={form}: its ids hold no random part, so a key cannot name one (every key "
            "of one millisecond would be the same document); keyed ids are made in KUUID and "
            "its modes, V7, V7S, TID62, BASE36_V7, ULID and UTC_RANDOM"
        )
    ms = to_ms(timestamp)
    head = form.type_prefix(type)
    try:
        data = key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(f"key={key!r} is not valid Unicode text: {exc}") from None
    # Imported here: hashlib loads OpenSSL, which ``couchids new`` need not pay for.
    import hashlib

    digest = int.from_bytes(
        hashlib.blake2b(data, digest_size=_DIGEST_BITS // 8, person=KEY_HASH_PERSON).digest()
    )
    return head + form.compose(ms * US_PER_MS, digest >> (_DIGEST_BITS - form.random_bits))
