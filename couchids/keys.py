"""The key range of a time window: pure arithmetic on strings, no I/O.

``_all_docs`` compares ids as raw bytes, and every id of one form and type has the same
length and sorts by its time text, so "ids of type T made in [start, end)" is one contiguous
key range. The rules it follows (see CouchDB's ``_all_docs`` documentation):

- The range is computed exactly and sent with the default ``inclusive_end=true``; the only
  string the inclusive end adds is the bare bound itself. For most forms that is never a
  valid id (too short, or a UUID without its version); for tid62 it could be one (a tid62
  whose 64 random bits are all zero), so callers drop the high bound by name
  (:meth:`KeyRange.excludes`). couchids never leans on ``inclusive_end=false`` (CouchDB
  issue 2156).
- With ``descending=true`` the direction applies first: ``startkey`` is the high key.
- The exclusive upper bound of everything starting with ``user:`` is ``user;`` (the next
  byte), as CouchDB itself uses for partitions; ``"\\ufff0"`` is only a convention. The same
  holds for the ``user-`` (``user.``) and ``acct_`` (``acct```) conventions, so ``user`` never
  reaches into ``users``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .constants import TYPE_CHARS, TYPE_MAX_LEN
from .errors import InvalidArgumentError
from .idform import IdForm

#: Above every character of every sortable form's alphabet: the end of an untyped range.
_AFTER_ALPHABET = "{"


@dataclass(frozen=True)
class KeyRange:
    """Ids ``low <= id < high`` in ``_all_docs`` order, and how to ask for them."""

    low: str
    high: str
    #: The text every wanted id starts with (``"user:"``, or ``""``).
    prefix: str

    def excludes(self, doc_id: str) -> bool:
        """Whether ``doc_id`` is the high bound itself, which ``inclusive_end`` lets in."""
        return doc_id == self.high

    def bounds(self, *, newest_first: bool, form: IdForm) -> tuple[str, str, bool]:
        """``(startkey, endkey, descending)`` for a request in the wanted time order.

        Reverse ids store later times as smaller keys, so newest-first reads them ascending.
        """
        descending = newest_first != form.reverse
        if descending:
            return self.high, self.low, True
        return self.low, self.high, False


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def window_keys(form: IdForm, doc_type: str | None, start_ms: int, end_ms: int) -> KeyRange | None:
    """The key range of ids of ``form`` and ``doc_type`` whose time ``t`` has
    ``start_ms <= t < end_ms``; ``None`` when no id can (for example a window inside one
    second for second-precision ids).

    ``doc_type`` may be a composite scope (``sensor-260:reading``); the form's separator
    follows it.

    Raises:
        InvalidArgumentError: the form's ids do not sort by time (uuid464) or hold none.
        InvalidTypeError: ``doc_type`` breaks the type rule.

    >>> from couchids.forms import KUUID
    >>> window_keys(KUUID, "user", 1514764800000, 1514764801000)
    KeyRange(low='user:001eVnWK', high='user:001eVnWL', prefix='user:')
    """
    check_time_form(form)
    prefix = form.type_prefix(doc_type)
    unit = form.unit_ms
    # An id's time is its unit counted down, so t >= start means unit >= ceil(start/unit)
    # and t < end means unit < ceil(end/unit).
    first = max(_ceil_div(max(start_ms, 0), unit), form.min_unit)
    stop = min(_ceil_div(end_ms, unit), form.max_unit + 1)
    if first >= stop:
        return None
    top = _next_text(prefix) if prefix else _AFTER_ALPHABET
    if form.reverse:
        # Keys fall as time rises: the latest time has the lowest key, and the key just above
        # the earliest time's is that of the unit before it.
        low = prefix + form.key(stop - 1)
        high = prefix + form.key(first - 1) if form.key_fits(first - 1) else top
    else:
        low = prefix + form.key(first)
        high = prefix + form.key(stop) if form.key_fits(stop) else top
    return KeyRange(low=low, high=high, prefix=prefix)


def beyond_keys(form: IdForm, doc_type: str | None) -> KeyRange | None:
    """The key range of the ids of ``doc_type`` that sort after every time ``form`` holds,
    up to the end of the type; ``None`` for a form whose time runs to the end of its digits.

    An id of the form's alphabet and length there is an id of another form: ``utc_random``
    ids hold times up to 2100 in digits that run to 4253, so 32 hex digits past 2100 are
    CouchDB's ``random`` ids (see :func:`couchids.core.scan.check_one_form`).

    >>> from couchids import TID62, UTC_RANDOM
    >>> beyond_keys(UTC_RANDOM, "t"), beyond_keys(TID62, "t")
    (KeyRange(low='t:0e9326dd03c000', high='t;', prefix='t:'), None)
    """
    check_time_form(form)
    prefix = form.type_prefix(doc_type)
    after = form.max_unit + 1
    if form.reverse or not form.key_fits(after):
        return None
    top = _next_text(prefix) if prefix else _AFTER_ALPHABET
    return KeyRange(low=prefix + form.key(after), high=top, prefix=prefix)


def check_time_form(form: IdForm) -> IdForm:
    """Return ``form`` if its ids sort by time in ``_all_docs``, so a time query can use it.

    Raises:
        InvalidArgumentError: not an :class:`IdForm`, or a form without sortable time.

    >>> from couchids import UUID464
    >>> check_time_form(UUID464)
    Traceback (most recent call last):
    ...
    couchids.errors.InvalidArgumentError: uuid464 ids cannot be queried by time: ...
    """
    if not isinstance(form, IdForm):
        raise InvalidArgumentError(
            f"form={form!r}: pass an IdForm such as couchids.KUUID, couchids.TID62 or couchids.ULID"
        )
    if not form.has_time:
        raise InvalidArgumentError(f"{form} ids cannot be queried by time: they hold no time")
    if not form.sortable:
        raise InvalidArgumentError(
            f"{form} ids cannot be queried by time: they do not sort by time in _all_docs "
            "(base64url's alphabet is not in byte order)"
        )
    return form


@dataclass(frozen=True)
class TypeStep:
    """What one id met while finding the types of a database tells (see :func:`type_step`).

    ``doc_type`` is the type the id names (``None`` when it names none), and the next id worth
    looking at is the first one at or after ``next_key``, or after it if ``after`` is set.
    """

    doc_type: str | None
    next_key: str
    after: bool = False


def type_step(doc_id: str, separator: str) -> TypeStep:
    """Where to look next, having met ``doc_id``, for the types of ids ``<type><separator>…``.

    The type of an id is the text before its first ``separator``. A type found, the next
    type starts after every id of it (``user:`` ends below ``user;``, the next byte, which
    is below ``users:``). An id naming no type sends the search past every id that shares
    the text that rules it out (``_design/…`` rules out everything under ``_``), so design
    documents and foreign ids cost one step each, never a type's worth of rows. Only an id
    made of type characters alone (an untyped id) can be followed by types that extend it,
    so the search moves just past it.

    Pure: no I/O. A type that holds the separator character itself (``sensor-260`` under
    ``-``) reads as its first part.

    >>> type_step("user:001eVnWK", ":")
    TypeStep(doc_type='user', next_key='user;', after=False)
    >>> type_step("_design/views", ":")
    TypeStep(doc_type=None, next_key='`', after=False)
    >>> type_step("acct_01hz", "_").next_key, type_step("001eVnWK", ":")
    ('acct`', TypeStep(doc_type=None, next_key='001eVnWK', after=True))
    """
    end = 0
    while end < len(doc_id) and doc_id[end] in TYPE_CHARS and doc_id[end] != separator:
        end += 1
    run = doc_id[:end]
    if run.startswith("_"):
        # No type starts with '_' (design documents do): skip everything under '_'.
        return TypeStep(None, _next_text(run[:1]))
    if len(run) > TYPE_MAX_LEN:
        return TypeStep(None, _next_text(run[: TYPE_MAX_LEN + 1]))
    if end == len(doc_id):
        return TypeStep(None, doc_id, after=True)
    if doc_id[end] == separator and run:
        return TypeStep(run, _next_text(run + separator))
    return TypeStep(None, _next_text(doc_id[: end + 1]))


def _next_text(text: str) -> str:
    """The smallest string above every string that starts with ``text``."""
    return text[:-1] + chr(ord(text[-1]) + 1)
