"""Reading an id back into its type, time and form.

:func:`decode` recognises every form of ``couchids.forms.ALL_FORMS`` by its length and
alphabet, after an optional prefix ``<type>:``, ``<type>-`` or ``<type>_``. When several
forms read an id (``acct_`` and a 17-character tid62 are 22 characters, as a uuid464 is), the
one whose time lies in 2000-2100 is taken; when none or several do, the message names the
candidates and ``form=`` settles it.

Forms that hold no time (seq10, seq36, CouchDB's ``random`` and ``sequential`` ids) are read
only when ``form=`` names them: nearly any short string of digits or letters is an ordinal
(``abcdefg`` is a seq36 id, a phone number a seq10 one), so guessing them would make every
typo an id. A string that only they read is refused with a message naming them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .constants import SEPARATORS, TYPE_SEPARATOR
from .doctypes import check_type, scope_prefix
from .errors import InvalidArgumentError, InvalidIdError, InvalidTypeError
from .forms import ALL_FORMS, NAMED_FORMS
from .idform import IdForm
from .times import EPOCH

#: Without ``form=``, of several readings the one whose time lies between these is taken.
PLAUSIBLE_FROM = datetime(2000, 1, 1, tzinfo=UTC)
PLAUSIBLE_UNTIL = datetime(2100, 1, 1, tzinfo=UTC)
#: The named forms that hold no time: read only with ``form=``.
TIMELESS_FORMS: tuple[IdForm, ...] = tuple(f for f in NAMED_FORMS.values() if not f.has_time)
#: What each of ``TIMELESS_FORMS`` is, for messages.
_WITHOUT_TIME = {
    "seq10": "an ordinal of 10 digits",
    "seq36": "an ordinal of 7 base36 characters",
    "couch_random": "CouchDB's random or sequential uuid",
}


@dataclass(frozen=True)
class DecodedId:
    """What an id says about itself."""

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

    Without ``form``, every form of ``ALL_FORMS`` whose length fits is
    tried (kuuid: 8 + 6 per random block; tid62 17; uuid464 22; base36 UUIDv7 25, or 24
    unpadded; ULID 26; v7s and CouchDB's ``utc_random`` 32; v7 36). A kuuid id's mode cannot
    be read from it, so it is inferred: of the readings that ``reverse``/``millisecond``
    allow, the one whose time lies in 2000-2100 is taken. Forms that hold no time (seq10,
    seq36, CouchDB's ``random`` and ``sequential`` ids: ``TIMELESS_FORMS``) are read only
    with ``form=``: a string only they read is refused, and the message names them.

    Args:
        doc_id: the id, with or without a prefix.
        form: read it as this form only (its separator joins prefix and id); ``utc_id``
            ids need this (``form=UtcIdForm(suffix)``).
        reverse, millisecond: only readings with this direction / precision.

    Raises:
        InvalidIdError: no form fits, none or several fit with a time in 2000-2100 (the
            message names the candidates), only a form without a time fits (the message
            names it: pass it as ``form=``), or the prefix breaks the type rule.
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
    if not isinstance(doc_id, str):
        raise InvalidIdError(f"{doc_id!r} is not an id: ids are strings")
    for name, flag in (("reverse", reverse), ("millisecond", millisecond)):
        if flag is not None and not isinstance(flag, bool):
            raise InvalidArgumentError(f"{name}={flag!r}: must be True, False or None")
    if form is not None:
        if not isinstance(form, IdForm):
            raise InvalidArgumentError(f"form={form!r} is not a couchids IdForm such as TID62")
        return _read_as(doc_id, form)
    return _infer(doc_id, reverse, millisecond)


def _split(doc_id: str, length: int, separators: tuple[str, ...]) -> tuple[str | None, str] | None:
    """``(prefix, body)`` when the last ``length`` characters may be a body after a valid
    prefix ending in one of ``separators`` (or no prefix), else ``None``."""
    if len(doc_id) < length:
        return None
    cut = len(doc_id) - length
    if cut == 0:
        return None, doc_id
    head = doc_id[: cut - 1]
    if doc_id[cut - 1] not in separators or not head:
        return None
    try:
        scope_prefix(head, doc_id[cut - 1])
    except InvalidTypeError:
        return None
    return head, doc_id[cut:]


def _read_as(doc_id: str, form: IdForm) -> DecodedId:
    split = _split(doc_id, form.length, (form.separator,))
    if split is None:
        raise InvalidIdError(
            f"{doc_id!r} is not a {form} id: {form.length} characters after an optional "
            f"'<type>{form.separator}' ({len(doc_id)} in all here)"
        )
    doc_type, body = split
    us = form.read(body)
    return DecodedId(id=doc_id, type=doc_type, timestamp=_datetime(us), form=form)


Reading = tuple[IdForm, str | None, datetime | None]


def _infer(doc_id: str, reverse: bool | None, millisecond: bool | None) -> DecodedId:
    sized = [f for f in ALL_FORMS if f.has_time and len(doc_id) >= f.length]
    candidates = [
        f
        for f in sized
        if (reverse is None or f.reverse == reverse)
        and (millisecond is None or f.millisecond == millisecond)
    ]
    if sized and not candidates:
        flags = [f"{k}={v}" for k, v in (("reverse", reverse), ("millisecond", millisecond)) if v]
        raise InvalidIdError(
            f"{doc_id!r}: no id form of this length has {' and '.join(flags) or 'these flags'}; "
            "only kuuid ids have reverse and second/millisecond modes"
        )
    errors: list[tuple[IdForm, str]] = []
    readings: list[Reading] = []
    # Every split the string allows: no prefix, or a valid prefix and one of the separators
    # right before a body of the form's length. _choose settles between readings.
    for form in candidates:
        split = _split(doc_id, form.length, SEPARATORS)
        if split is None:
            continue
        doc_type, body = split
        sep = doc_id[-form.length - 1] if doc_type is not None else TYPE_SEPARATOR
        try:
            us = form.read(body)
        except InvalidIdError as exc:
            # No form's alphabet has a colon: in a body holding one, the colon is a type's,
            # and the reading after it is the one to explain ('user:admin' as 'order:admin').
            if sep == TYPE_SEPARATOR and TYPE_SEPARATOR not in body:
                errors.append((form, str(exc)))
            continue
        readings.append(
            (form.with_separator(sep) if sep != form.separator else form, doc_type, _datetime(us))
        )
    if not readings:
        _check_prefix(doc_id)
        timeless = _timeless_readings(doc_id)
        if timeless:
            raise InvalidIdError(_no_time(doc_id, timeless, errors))
        raise InvalidIdError(_no_form(doc_id, errors))
    chosen = _choose(doc_id, readings, errors)
    form, doc_type, timestamp = chosen
    return DecodedId(id=doc_id, type=doc_type, timestamp=timestamp, form=form)


def _choose(doc_id: str, readings: list[Reading], errors: list[tuple[IdForm, str]]) -> Reading:
    """The one reading to take, by tiers: a time in 2000-2100 (a structured form first);
    else a structured form (a UUIDv7, whose version bits a random string rarely has); else
    a form holding no time. A single reading is taken unless its form is loose."""
    if len(readings) == 1 and not readings[0][0].loose:
        return readings[0]
    # The readings of one kuuid prefix lie centuries apart, so at most one of them falls in
    # 2000-2100 (tests/test_decode.py checks this for every mode); tests/test_idforms.py
    # checks that each form's ids made in those years have no other reading there.
    tiers = (
        [r for r in readings if r[2] is not None and _plausible(r[2])],
        [r for r in readings if r[0].structured],
        [r for r in readings if r[2] is None],
    )
    for tier in tiers:
        if len(tier) > 1:
            # A v7s id made in 2087-2100 also reads as a utc_random id of 2000-2003.
            structured = [r for r in tier if r[0].structured]
            tier = structured if len(structured) == 1 else tier
        if len(tier) == 1:
            return tier[0]
        if tier:
            names = ", ".join(sorted({str(r[0]) for r in tier}))
            raise InvalidIdError(
                f"{doc_id!r} is ambiguous: it reads as {names}; pass form= to say which it is"
            )
    names = ", ".join(sorted({str(r[0]) for r in readings}))
    hint = (
        "pass reverse= and millisecond= to say which kuuid mode it is in"
        if all(r[0].kind == "kuuid" for r in readings)
        else "pass form= to say which it is"
    )
    why = "".join(f"; {message}" for message in _first_by_kind(errors).values())
    raise InvalidIdError(
        f"{doc_id!r}: no reading of this id has a time between 2000 and 2100 "
        f"(it reads as {names}); {hint}{why}"
    )


def _plausible(when: datetime) -> bool:
    return PLAUSIBLE_FROM <= when < PLAUSIBLE_UNTIL


def _datetime(us: int | None) -> datetime | None:
    return None if us is None else EPOCH + timedelta(microseconds=us)


def _first_by_kind(errors: list[tuple[IdForm, str]]) -> dict[str, str]:
    # One complaint per kind: a 32-character string fails as a kuuid id and as a v7s id,
    # and the caller may have meant either.
    first: dict[str, str] = {}
    for form, message in errors:
        first.setdefault(form.kind, message)
    return first


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
        if split is None:
            continue
        doc_type, body = split
        try:
            form.read(body)
        except InvalidIdError:
            continue
        sep = doc_id[-form.length - 1] if doc_type is not None else TYPE_SEPARATOR
        found.append((form.with_separator(sep) if sep != form.separator else form, doc_type))
    return found


def _no_time(
    doc_id: str, timeless: list[tuple[IdForm, str | None]], errors: list[tuple[IdForm, str]]
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
    complaints = list(_first_by_kind(errors).values())
    why = f"; as an id with a time: {'; '.join(complaints)}" if complaints else ""
    return (
        f"{doc_id!r} holds no time: it reads only as {' or '.join(readings)}, and forms "
        f"without a time are read only when named: pass form={' or form='.join(passes)} "
        f"(couchids decode {' or '.join(flags)}){why}"
    )


def _no_form(doc_id: str, errors: list[tuple[IdForm, str]]) -> str:
    if errors:
        return f"{doc_id!r} is not a valid id: " + "; ".join(_first_by_kind(errors).values())
    timed = [form for form in ALL_FORMS if form.has_time]
    others = ", ".join(
        f"{form} {form.length}" for form in timed if form.kind not in ("kuuid", "v7")
    )
    timeless = ", ".join(f"{form} {form.length}" for form in TIMELESS_FORMS)
    body = doc_id.rpartition(TYPE_SEPARATOR)[2]
    return (
        f"{doc_id!r} is not an id couchids reads: after an optional 'type:', a kuuid id has "
        f"14, 20, 26 or 32 characters, a v7 id 36, and {others}; this one has {len(body)}; "
        f"the closest: {_closest(len(body))}. Forms without a time ({timeless}) are read only "
        "with form="
    )


def _closest(length: int) -> str:
    """The forms with a time whose length is nearest ``length`` (kuuid's modes as one)."""
    sizes = {
        (form.kind if form.kind in ("kuuid", "v7") else str(form), form.length)
        for form in ALL_FORMS
        if form.has_time
    }
    nearest = min(abs(size - length) for _, size in sizes)
    return ", ".join(
        f"{name} ({size} characters)"
        for name, size in sorted(sizes, key=lambda pair: (pair[1], pair[0]))
        if abs(size - length) == nearest
    )
