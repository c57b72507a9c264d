"""Reading an id back into its type, time and form: :func:`decode`.

Without ``form=``, the forms are looked up by length and tried without raising
(``IdForm.try_read``); the one reading in 2000-2100 is looked for first, kuuid's modes by
their prefix number alone (one bisection of :class:`_Modes`). Every reading, and the messages
of refusals, are made only when that does not settle it. docs/guide/ids.md says what is read.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from itertools import pairwise
from typing import NamedTuple, cast

from couchids.errors import InvalidArgumentError, InvalidIdError, InvalidTypeError
from couchids.idforms.constants import (
    MAX_PREFIX_VALUE,
    SEPARATORS,
    TYPE_PATTERN,
    TYPE_SEPARATOR,
    US_PER_MS,
    V7_HEX_LEN,
)
from couchids.idforms.couchid import UTC_RANDOM
from couchids.idforms.doctypes import check_type, scope_prefix
from couchids.idforms.forms import ALL_FORMS, NAMED_FORMS, V7S, KuuidForm
from couchids.idforms.idform import NOT_READ, IdForm, NotRead, ReadAttempt
from couchids.idforms.times import EPOCH

#: Without ``form=``, a reading is taken only when its time lies between these, and no other
#: reading's does.
PLAUSIBLE_FROM = datetime(2000, 1, 1, tzinfo=UTC)
PLAUSIBLE_UNTIL = datetime(2100, 1, 1, tzinfo=UTC)
_FROM_US = (PLAUSIBLE_FROM - EPOCH) // timedelta(microseconds=1)
_UNTIL_US = (PLAUSIBLE_UNTIL - EPOCH) // timedelta(microseconds=1)
_MICROSECOND = timedelta(microseconds=1)
#: The named forms that hold no time: read only with ``form=``.
TIMELESS_FORMS: tuple[IdForm, ...] = tuple(f for f in NAMED_FORMS.values() if not f.has_time)
#: The forms with a time whose bodies are lower-case hex digits only (32 of them).
_HEX_FORMS: tuple[IdForm, ...] = (V7S, UTC_RANDOM)
#: What each of ``TIMELESS_FORMS`` is, for messages.
_WITHOUT_TIME = {
    "seq10": "an ordinal of 10 digits",
    "seq36": "an ordinal of 7 base36 characters",
    "couch_random": "CouchDB's random or sequential uuid",
    "uuid464": "a UUID that is not a UUIDv7, such as a random one",
}


@dataclass(frozen=True)
class DecodedId:
    """What an id says about itself: what :func:`couchids.decode` answers.

    >>> d = decode("order:001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn")
    >>> d.type, d.timestamp.isoformat(), str(d.form), d.reverse
    ('order', '2018-01-01T00:00:00+00:00', 'kuuid', False)
    """

    id: str
    #: The prefix before the separator (a type, or ``partition:type``), or ``None``.
    type: str | None
    #: When the id was made, aware UTC, at the id's precision; ``None`` for forms that hold
    #: no time (seq10/seq36, CouchDB's ``random``, a uuid464 that is not a UUIDv7).
    timestamp: datetime | None
    #: The layout (with the separator the id uses); ``str(form)`` names it.
    form: IdForm

    @property
    def reverse(self) -> bool:
        """Whether the id sorts newest-first."""
        return self.form.reverse

    @property
    def millisecond(self) -> bool | None:
        """Whether the time is finer than seconds; ``None`` for an id that holds no time."""
        return None if self.timestamp is None else self.form.millisecond


_new_object = object.__new__
_set_attribute = object.__setattr__


def _decoded(
    doc_id: str, doc_type: str | None, timestamp: datetime | None, form: IdForm
) -> DecodedId:
    """``DecodedId(doc_id, doc_type, timestamp, form)`` in two thirds of the time: the
    instance's ``__dict__`` set at once (decode's usual path costs a few ``uuid.UUID()``)."""
    decoded = _new_object(DecodedId)
    _set_attribute(
        decoded, "__dict__", {"id": doc_id, "type": doc_type, "timestamp": timestamp, "form": form}
    )
    return decoded


def split_type(doc_id: str) -> tuple[str | None, str]:
    """Split ``"user:<body>"`` into ``("user", "<body>")``; an id without a colon has no type.

    Raises:
        InvalidTypeError: the part before the first colon breaks the type rule.
    """
    doc_type, sep, body = doc_id.partition(TYPE_SEPARATOR)
    if not sep:
        return None, doc_id
    return check_type(doc_type), body


def decode(
    doc_id: str,
    *,
    form: IdForm | None = None,
    reverse: bool | None = None,
    millisecond: bool | None = None,
) -> DecodedId:
    """Read the type, time and form of an id.

    Without ``form``, every form of ``ALL_FORMS`` whose length fits is tried, after an
    optional prefix ``<type>:``, ``<type>-`` or ``<type>_``, and a reading is taken only when
    its time lies in 2000-2100 and no other reading's does, or when it is the one UUIDv7
    reading among several there (a v7s id of 2087-2100 also reads as a ``utc_random`` id of
    2000-2003: it is read as the v7s id; ``form=UTC_RANDOM`` reads the other). Ids that hold
    no time (seq10, seq36, CouchDB's ``random``, a uuid464 that is not a UUIDv7) are read only
    with ``form=`` (docs/guide/ids.md says why).

    Args:
        doc_id: the id, with or without a prefix.
        form: read it as this form only (its separator joins prefix and id); ``utc_id``
            ids need this (``form=UtcIdForm(suffix)``).
        reverse, millisecond: only readings with this direction / precision; both together
            name a kuuid mode, whose only reading is taken in any year.

    Raises:
        InvalidIdError: no form fits, none or several fit with a time in 2000-2100 (and
            not exactly one of those is a UUIDv7's), only forms without a time fit, or the
            prefix breaks the type rule; the message names the candidates.
        InvalidArgumentError: ``reverse`` or ``millisecond`` is not a bool or ``None``.

    >>> d = decode("user:001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn")
    >>> d.type, d.timestamp.isoformat(), str(d.form)
    ('user', '2018-01-01T00:00:00+00:00', 'kuuid')
    >>> str(decode("01ARYZ6S41TSV4RRFFQ69G5FAV").form)
    'ulid'
    >>> decode("0000000042")
    Traceback (most recent call last):
      ...
    couchids.errors.InvalidIdError: '0000000042' holds no time: it reads only as a seq10 id ...
    >>> from couchids import SEQ10
    >>> decode("0000000042", form=SEQ10).millisecond is None
    True
    """
    typed = doc_id.__class__ is str and TYPE_SEPARATOR in doc_id
    if typed and form is None and reverse is None and millisecond is None:
        decoded = _typed_kuuid(doc_id)
        if decoded is not None:
            return decoded
    if not isinstance(doc_id, str):
        raise InvalidIdError(f"{doc_id!r} is not an id: ids are strings")
    if reverse is not None or millisecond is not None:
        for name, flag in (("reverse", reverse), ("millisecond", millisecond)):
            if flag is not None and not isinstance(flag, bool):
                raise InvalidArgumentError(f"{name}={flag!r}: must be True, False or None")
    if form is not None:
        if not isinstance(form, IdForm):
            raise InvalidArgumentError(f"form={form!r} is not a couchids IdForm such as TID62")
        return _read_as(doc_id, form)
    return _infer(doc_id, reverse, millisecond)


def _typed_kuuid(doc_id: str) -> DecodedId | None:
    """decode's usual case, ``<type>:<kuuid id of 2000-2100>`` at a length where only kuuid's
    modes read; ``None`` sends every other string down the whole path (_infer).

    No form's alphabet has a colon, so the whole string is no form's and the split after the
    last colon is the one split of an alphanumeric body."""
    colon = doc_id.rfind(TYPE_SEPARATOR)
    body = doc_id[colon + 1 :]
    modes = _ONLY_MODES.get(len(body))
    # A v7s id (version 7 in its 13th of 32 digits), which kuuid's pattern refuses, takes the
    # whole path at once.
    if modes is None or body[12:13] == "7":
        return None
    if not body.isalnum():
        return None
    head = doc_id[:colon]
    if not (_SCOPES.get(head) or (head and _is_scope(head))):
        return None
    value = modes.prefix(body)
    if value is NOT_READ:
        return None
    at = bisect_right(modes.starts, value) - 1
    if at < 0 or value >= modes.ranges[at].end:
        return None
    _, offset, slope, by_separator = modes.ranges[at]
    us = offset + slope * value
    return _decoded(doc_id, head, EPOCH + _MICROSECOND * us, by_separator[TYPE_SEPARATOR])


def _split(doc_id: str, length: int, separators: tuple[str, ...]) -> tuple[str | None, str] | None:
    """``(prefix, body)`` when the last ``length`` characters may be a body after a valid
    prefix ending in one of ``separators`` (or no prefix), else ``None``."""
    if len(doc_id) < length:
        return None
    cut = len(doc_id) - length
    if cut == 0:
        return None, doc_id
    if cut < 2 or doc_id[cut - 1] not in separators:
        return None
    head = doc_id[: cut - 1]
    return (head, doc_id[cut:]) if _is_scope(head) else None


#: A type, or types joined by colons (``partition:type``): the rule :func:`scope_prefix`
#: checks, as a pattern that builds no exception.
_SCOPE = re.compile(f"{TYPE_PATTERN}(?:{re.escape(TYPE_SEPARATOR)}{TYPE_PATTERN})*")
#: The answers of :func:`_is_scope` (a program meets its few types again and again), for
#: at most ``_KEPT_SCOPES`` prefixes of at most ``_KEPT_LENGTH`` characters.
_SCOPES: dict[str, bool] = {}
_KEPT_LENGTH = 64
_KEPT_SCOPES = 1024


def _is_scope(head: str) -> bool:
    """Whether ``scope_prefix(head, ...)`` accepts ``head`` (a non-empty string)."""
    known = _SCOPES.get(head)
    if known is None:
        known = _SCOPE.fullmatch(head) is not None
        if len(head) <= _KEPT_LENGTH:
            if len(_SCOPES) >= _KEPT_SCOPES:
                _SCOPES.clear()  # a race clears it twice or keeps one more, harmlessly
            _SCOPES[head] = known
    return known


def _read_as(doc_id: str, form: IdForm) -> DecodedId:
    split = _split(doc_id, form.length, (form.separator,))
    if split is None:
        raise InvalidIdError(
            f"{doc_id!r} is not a {form} id: {form.length} characters after an optional "
            f"'<type>{form.separator}' ({len(doc_id)} in all here)"
        )
    doc_type, body = split
    return DecodedId(id=doc_id, type=doc_type, timestamp=_datetime(form.read(body)), form=form)


# -- inference: the forms by length, in a table made at first use per pair of flags ----------


@dataclass(frozen=True)
class _Candidate:
    """A form decode tries: its position in ``ALL_FORMS`` (the order of messages), the form,
    itself with each separator, and its ``try_read``."""

    position: int
    form: IdForm
    by_separator: dict[str, IdForm]
    read: Callable[[str], ReadAttempt]


class _Range(NamedTuple):
    """The prefix numbers from a start of ``_Modes.starts`` to ``end`` that one kuuid mode
    reads in 2000-2100 (its forms by separator), as ``offset + slope * number`` µs."""

    end: int
    offset: int
    slope: int
    by_separator: dict[str, IdForm]


@dataclass(frozen=True)
class _Modes:
    """kuuid's modes of one number of blocks: they check a body alike and read one prefix
    number (``prefix``); the ranges each reads in 2000-2100, by their starts, never overlap."""

    prefix: Callable[[str], int | NotRead]
    starts: tuple[int, ...]
    ranges: tuple[_Range, ...]


@dataclass(frozen=True)
class _Length:
    """The forms of one length that a table tries."""

    #: Every form, in ``ALL_FORMS`` order.
    every: tuple[_Candidate, ...]
    #: The forms that are not kuuid modes, and the modes.
    singles: tuple[_Candidate, ...]
    modes: _Modes | None
    #: Whether a body the modes read is none of the singles' (they are ``_HEX_FORMS``, and
    #: kuuid's pattern refuses lower-case hex).
    modes_exclude_singles: bool


@dataclass(frozen=True)
class _Table:
    """The forms with a time that the flags ``reverse``/``millisecond`` allow, by length."""

    by_length: dict[int, _Length]
    #: The lengths of ``by_length``, shortest first.
    lengths: tuple[int, ...]
    #: The lengths some form with a time reads but no form with these flags.
    unflagged: range


_TABLES: dict[tuple[bool | None, bool | None], _Table] = {}
#: The lengths at which, without flags, kuuid's modes are all a body may be: their modes
#: (_typed_kuuid).
_ONLY_MODES: dict[int, _Modes] = {}


def _table(reverse: bool | None, millisecond: bool | None) -> _Table:
    """The table of the flags, made at its first use (a race makes it twice, harmlessly)."""
    table = _TABLES.get((reverse, millisecond))
    if table is None:
        table = _TABLES[reverse, millisecond] = _make_table(reverse, millisecond)
    return table


def _make_table(reverse: bool | None, millisecond: bool | None) -> _Table:
    every: dict[int, list[_Candidate]] = {}
    for position, form in enumerate(ALL_FORMS):
        if not form.has_time or (reverse is not None and form.reverse != reverse):
            continue
        if millisecond is not None and form.millisecond != millisecond:
            continue
        variants = {sep: form.with_separator(sep) for sep in SEPARATORS}
        candidate = _Candidate(position, form, {**variants, form.separator: form}, form.try_read)
        every.setdefault(form.length, []).append(candidate)
    lengths = sorted(every)
    by_length = {}
    for length in lengths:
        modes = [
            c for c in every[length] if isinstance(c.form, KuuidForm) and c.form.kind == "kuuid"
        ]
        singles = tuple(c for c in every[length] if c not in modes)
        kuuid = _modes(modes) if modes else None
        exclude = length == V7_HEX_LEN and all(s.form in _HEX_FORMS for s in singles)
        by_length[length] = _Length(tuple(every[length]), singles, kuuid, exclude)
        if reverse is None and millisecond is None and kuuid and (exclude or not singles):
            _ONLY_MODES[length] = kuuid
    shortest_timed = min(form.length for form in ALL_FORMS if form.has_time)
    return _Table(
        by_length,
        lengths=tuple(lengths),
        unflagged=range(shortest_timed, lengths[0] if lengths else sys.maxsize),
    )


def _modes(candidates: list[_Candidate]) -> _Modes:
    """kuuid's modes of one number of blocks, with the prefix numbers each reads in
    2000-2100."""
    modes = [cast(KuuidForm, c.form) for c in candidates]
    windows = sorted(
        (window, index)
        for index, mode in enumerate(modes)
        if (window := _in_window(mode)) is not None
    )
    # tests/test_decode.py checks this for every mode, through decode.
    for ((_, end), _), ((start, _), _) in pairwise(windows):
        assert end <= start, "two kuuid modes read one prefix in 2000-2100"
    ranges = []
    for (start, end), index in windows:
        offset, slope = _line(modes[index])
        for n in (start, end - 1):
            assert modes[index].time_of_prefix(n) == offset + slope * n, "not a kuuid mode's line"
        ranges.append(_Range(end, offset, slope, candidates[index].by_separator))
    starts = tuple(start for (start, _), _ in windows)
    return _Modes(modes[0].read_prefix, starts, tuple(ranges))


def _in_window(mode: KuuidForm) -> tuple[int, int] | None:
    """The prefix numbers ``[start, end)`` that ``mode`` reads as a time in 2000-2100, or
    ``None``; its time is ``offset + slope * number`` microseconds (:func:`_line`)."""
    offset, slope = _line(mode)
    if slope > 0:
        start, end = -((offset - _FROM_US) // slope), -((offset - _UNTIL_US) // slope)
    else:
        start, end = (offset - _UNTIL_US) // -slope + 1, (offset - _FROM_US) // -slope + 1
    start, end = max(start, 0), min(end, MAX_PREFIX_VALUE + 1)
    return (start, end) if start < end else None


def _line(mode: KuuidForm) -> tuple[int, int]:
    """``(offset, slope)``: the microseconds of prefix number ``n`` are ``offset + slope * n``."""
    step = mode.unit_ms * US_PER_MS
    return (MAX_PREFIX_VALUE * step, -step) if mode.reverse else (0, step)


#: A reading: the form (with the separator the id uses), the type, the time in microseconds.
Reading = tuple[IdForm, str | None, int | None]
#: A form that refused a body and may say why: its position in ``ALL_FORMS``, the form, the body.
Miss = tuple[int, IdForm, str]
#: A split after a prefix: the forms of the length left, the body, the prefix, the separator.
Split = tuple[_Length, str, str, str]


def _infer(doc_id: str, reverse: bool | None, millisecond: bool | None) -> DecodedId:
    table = _TABLES.get((reverse, millisecond)) or _table(reverse, millisecond)
    if len(doc_id) in table.unflagged:
        flags = [f"{k}={v}" for k, v in (("reverse", reverse), ("millisecond", millisecond)) if v]
        raise InvalidIdError(
            f"{doc_id!r}: no id form of this length has {' and '.join(flags) or 'these flags'}; "
            "only kuuid ids have reverse and second/millisecond modes"
        )
    in_window: list[Reading] = []
    whole = table.by_length.get(len(doc_id))
    read = whole is not None and _read_in_window(whole, doc_id, None, TYPE_SEPARATOR, in_window)
    prefixed = [] if doc_id.isalnum() else _prefixed(doc_id, table)
    for forms, body, head, sep in prefixed:
        if _read_in_window(forms, body, head, sep, in_window):
            read = True
    if len(in_window) == 1:
        form, doc_type, us = in_window[0]
        assert us is not None
        return _decoded(doc_id, doc_type, EPOCH + _MICROSECOND * us, form)
    # Every reading, and the forms that refused and may say why (nothing is read again
    # when no form read anything).
    readings: list[Reading] = []
    misses: list[Miss] = []
    if whole is not None:
        _read(whole, doc_id, None, TYPE_SEPARATOR, readings, misses, refused=not read)
    for split in prefixed:
        _read(*split, readings, misses, refused=not read)
    timed = [reading for reading in readings if reading[2] is not None]
    if not timed:
        _check_prefix(doc_id)
        timeless = [(form, doc_type) for form, doc_type, _ in readings]
        timeless += _timeless_readings(doc_id)
        if timeless:
            raise InvalidIdError(_no_time(doc_id, timeless, _complaints(misses)))
        raise InvalidIdError(_no_form(doc_id, _complaints(misses)))
    named_mode = reverse is not None and millisecond is not None
    form, doc_type, us = _choose(doc_id, timed, readings, misses, named_mode=named_mode)
    return DecodedId(doc_id, doc_type, _datetime(us), form)


def _prefixed(doc_id: str, table: _Table) -> list[Split]:
    """Every split of ``doc_id`` into a valid prefix, a separator and a body of a length of
    ``table``, but those whose body holds a colon (which every form refuses)."""
    colon = doc_id.rfind(TYPE_SEPARATOR)
    body = doc_id[colon + 1 :]
    if body.isalnum():
        # No '-' or '_' after the last colon: one place to split.
        forms = table.by_length.get(len(body))
        if forms is None or colon < 1:
            return []
        head = doc_id[:colon]
        if _SCOPES.get(head) or _is_scope(head):
            return [(forms, body, head, TYPE_SEPARATOR)]
        return []
    size = len(doc_id)
    splits: list[Split] = []
    for length in table.lengths:
        cut = size - length  # the body starts here, after a prefix and a separator
        if cut < 2 or cut <= colon:
            break
        sep = doc_id[cut - 1]
        if sep in SEPARATORS:
            head = doc_id[: cut - 1]
            if _is_scope(head):
                splits.append((table.by_length[length], doc_id[cut:], head, sep))
    return splits


def _read_in_window(
    forms: _Length, body: str, doc_type: str | None, sep: str, found: list[Reading]
) -> bool:
    """Add to ``found`` the readings of ``body`` as ``forms`` whose time lies in 2000-2100;
    whether any form read it at all."""
    read = False
    modes = forms.modes
    if modes is not None:
        value = modes.prefix(body)
        if value is not NOT_READ:
            read = True
            at = bisect_right(modes.starts, value) - 1  # the one range that may hold value
            if at >= 0:
                end, offset, slope, by_separator = modes.ranges[at]
                if value < end:
                    found.append((by_separator[sep], doc_type, offset + slope * value))
            if forms.modes_exclude_singles:
                return True
    for single in forms.singles:
        us = single.read(body)
        if us is not NOT_READ:
            read = True
            if us is not None and _FROM_US <= us < _UNTIL_US:
                found.append((single.by_separator[sep], doc_type, us))
    return read


def _read(
    forms: _Length,
    body: str,
    doc_type: str | None,
    sep: str,
    readings: list[Reading],
    misses: list[Miss],
    *,
    refused: bool,
) -> None:
    """Add to ``readings`` every reading of ``body`` as ``forms``, and to ``misses`` the forms
    that refused it and may say why; ``refused``: every form is known to refuse it."""
    # In a body holding a colon, the colon is a type's: the reading after it is the one to
    # explain ('user:admin' as 'order:admin').
    explains = sep == TYPE_SEPARATOR and TYPE_SEPARATOR not in body
    for candidate in forms.every:
        us = NOT_READ if refused else candidate.read(body)
        if us is not NOT_READ:
            readings.append((candidate.by_separator[sep], doc_type, us))
        elif explains:
            misses.append((candidate.position, candidate.form, body))


def _complaints(misses: list[Miss]) -> dict[str, str]:
    """Why the forms of ``misses`` refused their bodies, by kind (the first form of each), in
    ``ALL_FORMS`` order (positions differ, so the tuples sort by them alone)."""
    found: dict[str, str] = {}
    for _, form, body in sorted(misses):
        if form.kind not in found:
            found[form.kind] = form.refusal(body)
    return found


def _choose(
    doc_id: str,
    timed: list[Reading],
    readings: list[Reading],
    misses: list[Miss],
    *,
    named_mode: bool,
) -> Reading:
    """The reading of ``timed`` with a time in 2000-2100 (a structured form's, when several
    are); outside those years only the one reading of a kuuid mode that ``reverse=`` and
    ``millisecond=`` name (``named_mode``)."""
    plausible = [r for r in timed if r[2] is not None and _FROM_US <= r[2] < _UNTIL_US]
    if len(plausible) > 1:
        # A v7s id made in 2087-2100 also reads as a utc_random id of 2000-2003.
        structured = [r for r in plausible if r[0].structured]
        if len(structured) != 1:
            names = ", ".join(sorted({str(r[0]) for r in plausible}))
            raise InvalidIdError(
                f"{doc_id!r} is ambiguous: it reads as {names}; pass form= to say which it is"
            )
        plausible = structured
    if plausible:
        return plausible[0]
    if named_mode and len(readings) == 1 and readings[0][0].kind == "kuuid":
        return readings[0]
    names = ", ".join(
        sorted({str(r[0]) + (" (without a time)" if r[2] is None else "") for r in readings})
    )
    hint = (
        "pass reverse= and millisecond= to say which kuuid mode it is in"
        if all(r[0].kind == "kuuid" for r in readings)
        else "pass form= to say which it is"
    )
    why = "".join(f"; {message}" for message in _complaints(misses).values())
    raise InvalidIdError(
        f"{doc_id!r}: no reading of this id has a time between 2000 and 2100 "
        f"(it reads as {names}); {hint}{why}"
    )


def _datetime(us: int | None) -> datetime | None:
    # A product of timedeltas costs less than a timedelta made from a keyword.
    return None if us is None else EPOCH + _MICROSECOND * us


def _check_prefix(doc_id: str) -> None:
    """Blame a bad prefix before a colon, rather than the length, when nothing reads."""
    head, colon, _ = doc_id.rpartition(TYPE_SEPARATOR)
    if colon:
        try:
            scope_prefix(head, TYPE_SEPARATOR)
        except InvalidTypeError as exc:
            raise InvalidIdError(f"{doc_id!r}: {exc}") from None


def _timeless_readings(doc_id: str) -> list[tuple[IdForm, str | None]]:
    """The readings of ``doc_id`` as a form of ``TIMELESS_FORMS``: ``(form, type)``."""
    found: list[tuple[IdForm, str | None]] = []
    for form in TIMELESS_FORMS:
        split = _split(doc_id, form.length, SEPARATORS)
        if split is None or form.try_read(split[1]) is NOT_READ:
            continue
        sep = doc_id[-form.length - 1] if split[0] is not None else TYPE_SEPARATOR
        found.append((form.with_separator(sep) if sep != form.separator else form, split[0]))
    return found


def _no_time(
    doc_id: str, timeless: list[tuple[IdForm, str | None]], complaints: dict[str, str]
) -> str:
    """Why a string only forms without a time read is refused, and how to read it anyway."""
    readings, passes, flags = [], [], []
    for form, doc_type in timeless:
        of_type = "" if doc_type is None else f" of type {doc_type!r}"
        readings.append(f"a {form.kind} id{of_type} ({_WITHOUT_TIME[form.kind]})")
        constant = "couchids." + form.kind.upper()
        sep = form.separator
        passes.append(constant if sep == TYPE_SEPARATOR else f"{constant}.with_separator({sep!r})")
        flags.append(f"--form {form.kind}" + ("" if sep == TYPE_SEPARATOR else f" --sep {sep}"))
    why = f"; as an id with a time: {'; '.join(complaints.values())}" if complaints else ""
    return (
        f"{doc_id!r} holds no time: it reads only as {' or '.join(readings)}, and ids "
        "without a time are read only when their form is named: "
        f"pass form={' or form='.join(passes)} (couchids decode {' or '.join(flags)}){why}"
    )


def _no_form(doc_id: str, complaints: dict[str, str]) -> str:
    if complaints:
        return f"{doc_id!r} is not a valid id: " + "; ".join(complaints.values())
    others, timeless, sizes = _lengths()
    length = len(doc_id.rpartition(TYPE_SEPARATOR)[2])
    nearest = min(abs(size - length) for _, size in sizes)
    closest = ", ".join(
        f"{name} ({size} characters)" for name, size in sizes if abs(size - length) == nearest
    )
    return (
        f"{doc_id!r} is not an id couchids reads: after an optional 'type:', a kuuid id has "
        f"14, 20, 26 or 32 characters, a v7 id 36, and {others}; this one has {length}; "
        f"the closest: {closest}. Forms without a time ({timeless}) are read only with form="
    )


@cache
def _lengths() -> tuple[str, str, tuple[tuple[str, int], ...]]:
    """For :func:`_no_form`, made once: the forms with a time but kuuid and v7, and the forms
    without, each with its length; and the forms with a time (kuuid's modes as one) and their
    lengths, by length then name."""
    others = ", ".join(
        f"{form} {form.length}"
        for form in ALL_FORMS
        if form.has_time and form.kind not in ("kuuid", "v7")
    )
    timeless = ", ".join(f"{form} {form.length}" for form in TIMELESS_FORMS)
    sizes = {
        (form.kind if form.kind in ("kuuid", "v7") else str(form), form.length)
        for form in ALL_FORMS
        if form.has_time
    }
    return others, timeless, tuple(sorted(sizes, key=lambda pair: (pair[1], pair[0])))
