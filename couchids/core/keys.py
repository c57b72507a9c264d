"""The key range of a time window: pure arithmetic on strings, no I/O.

``_all_docs`` compares ids as raw bytes, and every id of one form and type has the same length
and sorts by its time text, so "ids of type T made in [start, end)" is one contiguous key range.
It is computed exactly and sent with the default ``inclusive_end=true`` (never ``false``:
CouchDB issue 2156); readers drop the bare high bound itself. The exclusive end of everything
starting with ``user:`` is ``user;`` (the next byte, as CouchDB uses for partitions), so
``user`` never reaches into ``users``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from couchids.core import arguments
from couchids.errors import InvalidArgumentError, InvalidIdError
from couchids.idforms.constants import TYPE_CHARS, TYPE_MAX_LEN
from couchids.idforms.idform import IdForm

#: Above every character of every sortable form's alphabet: the end of an untyped range.
_AFTER_ALPHABET = "{"


@dataclass(frozen=True)
class KeyRange:
    """Ids ``low <= id < high`` in ``_all_docs`` order, and how to ask for them."""

    low: str
    high: str
    #: The text every wanted id starts with (``"user:"``, or ``""``).
    prefix: str

    def bounds(self, *, newest_first: bool, form: IdForm) -> tuple[str, str, bool]:
        """``(startkey, endkey, descending)`` for a request in the wanted time order (reverse
        ids store later times as smaller keys, so newest-first reads them ascending)."""
        descending = newest_first != form.reverse
        if descending:
            return self.high, self.low, True
        return self.low, self.high, False


def units(form: IdForm, start_ms: int, end_ms: int) -> tuple[int, int]:
    """The units ``[first, stop)`` of ``form`` whose ids hold a time ``start_ms <= t < end_ms``
    (ids hold whole units: ``t >= start`` means ``unit >= ceil(start / unit_ms)``), within the
    form's range; empty when ``first >= stop``."""
    unit = form.unit_ms
    first = max(-(-max(start_ms, 0) // unit), form.min_unit)
    return first, min(-(-end_ms // unit), form.max_unit + 1)


def window_keys(form: IdForm, doc_type: str | None, start_ms: int, end_ms: int) -> KeyRange | None:
    """The key range of ids of ``form`` and ``doc_type`` (which may be a composite scope such as
    ``sensor-260:reading``) whose time has ``start_ms <= t < end_ms``; ``None`` when no id can.

    Raises:
        InvalidArgumentError: the form's ids do not sort by time or hold none.
        InvalidTypeError: ``doc_type`` breaks the type rule.

    >>> from couchids.idforms.forms import KUUID
    >>> window_keys(KUUID, "user", 1514764800000, 1514764801000)
    KeyRange(low='user:001eVnWK', high='user:001eVnWL', prefix='user:')
    """
    check_time_form(form)
    prefix = form.type_prefix(doc_type)
    first, stop = units(form, start_ms, end_ms)
    if first >= stop:
        return None
    top = next_text(prefix) if prefix else _AFTER_ALPHABET
    if form.reverse:
        # Keys fall as time rises: the key just above the earliest time's is the unit's before.
        low = prefix + form.key(stop - 1)
        high = prefix + form.key(first - 1) if form.key_fits(first - 1) else top
    else:
        low = prefix + form.key(first)
        high = prefix + form.key(stop) if form.key_fits(stop) else top
    return KeyRange(low=low, high=high, prefix=prefix)


def beyond_keys(form: IdForm, doc_type: str | None) -> KeyRange | None:
    """The key range of ids of ``doc_type`` that sort after every time ``form`` holds, up to the
    end of the type (ids of another form there, such as CouchDB's ``random`` ids past
    ``utc_random``'s 2100); ``None`` for a form whose time runs to the end of its digits.

    >>> from couchids import TID62, UTC_RANDOM
    >>> beyond_keys(UTC_RANDOM, "t"), beyond_keys(TID62, "t")
    (KeyRange(low='t:0e9326dd03c000', high='t;', prefix='t:'), None)
    """
    check_time_form(form)
    prefix = form.type_prefix(doc_type)
    after = form.max_unit + 1
    if form.reverse or not form.key_fits(after):
        return None
    top = next_text(prefix) if prefix else _AFTER_ALPHABET
    return KeyRange(low=prefix + form.key(after), high=top, prefix=prefix)


def in_window(
    form: IdForm, doc_type: str | None, start_ms: int, end_ms: int
) -> Callable[[str], bool]:
    """Whether an id is of ``form`` and ``doc_type`` with a time ``start_ms <= t < end_ms``
    that :func:`window_keys` reaches (exactly the ids of the form in its key range), from the
    id alone: what an operation that deletes, copies or writes checks of each id,
    whatever the server answered and wherever a checkpoint said to resume.

    >>> from couchids.idforms.forms import KUUID
    >>> from couchids.idforms.kuuid import id
    >>> ok = in_window(KUUID, "user", 1514764800000, 1514764860000)
    >>> ok(id("2018-01-01T00:00:30Z", type="user")), ok(id("2018-01-01T00:01:00Z", type="user"))
    (True, False)
    >>> ok(id("2018-01-01T00:00:30Z", type="order")), ok(id("2018-01-01T00:00:30Z"))
    (False, False)
    """
    check_time_form(form)
    prefix = form.type_prefix(doc_type)
    # The units window_keys reaches: millisecond kuuid ids before 1980 are left to the ids of
    # the second modes, which read as those times.
    first, stop = units(form, start_ms, end_ms)
    low, high = first * form.unit_ms, stop * form.unit_ms
    matches, parse, cut = form.matcher(prefix), form.parse, len(prefix)

    def inside(doc_id: str) -> bool:
        if not matches(doc_id):
            return False
        try:
            return low <= parse(doc_id[cut:]) < high
        except InvalidIdError:
            return False

    return inside


def resume_point(
    keys: KeyRange,
    after: str | None,
    *,
    descending: bool,
    wanted: Callable[[str], bool],
    what: str,
) -> str | None:
    """Where a walk of ``keys`` resumes after ``after``, a checkpoint's id: ``None`` to start at
    the beginning, else the id to continue just past (the far end when ``after`` is beyond it).
    Only an id the walk hands out (``wanted``) is a resume point of it.

    Raises:
        InvalidArgumentError: ``after`` is not a wanted id; ``what`` says what is.

    >>> from couchids.idforms.forms import KUUID
    >>> from couchids.idforms.kuuid import id
    >>> keys = window_keys(KUUID, "user", 1514764800000, 1514764860000)
    >>> ok = KUUID.matcher("user:")
    >>> inside, before = id("2018-01-01T00:00:30Z", type="user"), id("2017-01-01", type="user")
    >>> resume_point(keys, inside, descending=False, wanted=ok, what="a kuuid id")[:13]
    'user:001eVnWo'
    >>> resume_point(keys, before, descending=False, wanted=ok, what="a kuuid id") is None
    True
    >>> resume_point(keys, "order:", descending=False, wanted=ok, what="a kuuid id of type 'user'")
    Traceback (most recent call last):
      ...
    couchids.errors.InvalidArgumentError: checkpoint last_id='order:' is not a kuuid id ...
    """
    if after is None:
        return None
    if not isinstance(after, str) or not wanted(after):
        raise InvalidArgumentError(
            f"checkpoint last_id={after!r:.80} is not {what}: a checkpoint resumes the "
            "operation that wrote it (the same database, type and form); pass "
            "checkpoint=None to start from the beginning"
        )
    if descending:
        return None if after >= keys.high else keys.low if after < keys.low else after
    return None if after < keys.low else keys.high if after >= keys.high else after


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
    arguments.form("form", form)
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

    The type of an id is the text before its first ``separator``. A type found, the next type
    starts after every id of it (``user:`` ends below ``user;``). An id naming no type sends the
    search past every id that shares the text that rules it out (``_design/…`` rules out
    everything under ``_``); only an untyped id (type characters alone) can be followed by types
    that extend it, so the search moves just past it. A type that holds the separator itself
    (``sensor-260`` under ``-``) reads as its first part.

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
        return TypeStep(None, next_text(run[:1]))
    if len(run) > TYPE_MAX_LEN:
        return TypeStep(None, next_text(run[: TYPE_MAX_LEN + 1]))
    if end == len(doc_id):
        return TypeStep(None, doc_id, after=True)
    if doc_id[end] == separator and run:
        return TypeStep(run, next_text(run + separator))
    return TypeStep(None, next_text(doc_id[: end + 1]))


def next_text(text: str) -> str:
    """The smallest string above every string that starts with ``text``."""
    return text[:-1] + chr(ord(text[-1]) + 1)
