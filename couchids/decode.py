"""Reading an id back into its type, time and form."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from .constants import TYPE_SEPARATOR
from .doctypes import check_type
from .errors import InvalidArgumentError, InvalidIdError, InvalidTypeError
from .forms import ALL_FORMS, IdForm
from .times import to_datetime

#: Without flags, a kuuid mode is inferred only when exactly one reading falls between these.
PLAUSIBLE_FROM = datetime(2000, 1, 1, tzinfo=UTC)
PLAUSIBLE_UNTIL = datetime(2100, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class DecodedId:
    """What an id says about itself."""

    id: str
    #: The document type before the colon, or ``None``.
    type: str | None
    #: When the id was made, aware UTC, at the id's precision.
    timestamp: datetime
    #: The layout; ``form.kind`` is ``"kuuid"``, ``"v7"`` (hyphenated) or ``"v7s"``.
    form: IdForm

    @property
    def reverse(self) -> bool:
        """Whether the id sorts newest-first."""
        return self.form.reverse

    @property
    def millisecond(self) -> bool:
        """Whether the time has millisecond precision."""
        return self.form.millisecond


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
    doc_id: str, *, reverse: bool | None = None, millisecond: bool | None = None
) -> DecodedId:
    """Read the type, time and form of an id made by couchids or kuuid.

    The form follows from the length (kuuid: 8 + 6 per random block; v7s: 32; v7: 36). A
    kuuid id's mode cannot be read from it, so it is inferred: of the readings that
    ``reverse``/``millisecond`` allow, the one whose time lies in 2000-2100 is taken. Pass both
    flags to read ids from outside those years. A 32-character id that is a valid UUIDv7 is
    read as one, although it may also fit the kuuid pattern (see :meth:`IdForm.parse`).

    Raises:
        InvalidIdError: no form fits, none fits with a time in 2000-2100, or the type before
            the colon breaks the type rule (the string is then not an id).
        InvalidArgumentError: ``reverse`` or ``millisecond`` is not a bool or ``None``.

    >>> d = decode("user:001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn")
    >>> d.type, d.timestamp.isoformat(), str(d.form)
    ('user', '2018-01-01T00:00:00+00:00', 'kuuid')
    """
    if not isinstance(doc_id, str):
        raise InvalidIdError(f"{doc_id!r} is not an id: ids are strings")
    for name, flag in (("reverse", reverse), ("millisecond", millisecond)):
        if flag is not None and not isinstance(flag, bool):
            raise InvalidArgumentError(f"{name}={flag!r}: must be True, False or None")
    try:
        doc_type, body = split_type(doc_id)
    except InvalidTypeError as exc:
        raise InvalidIdError(f"{doc_id!r}: {exc}") from None
    candidates = [
        form
        for form in ALL_FORMS
        if form.length == len(body)
        and (reverse is None or form.reverse == reverse)
        and (millisecond is None or form.millisecond == millisecond)
    ]
    readings: list[tuple[IdForm, datetime]] = []
    errors: list[tuple[IdForm, str]] = []
    for form in candidates:
        try:
            readings.append((form, to_datetime(form.parse(body))))
        except InvalidIdError as exc:
            errors.append((form, str(exc)))
    if not readings:
        raise InvalidIdError(_no_form(doc_id, body, errors))
    if len(readings) > 1:
        # The readings of one kuuid prefix lie centuries apart, so at most one of them falls
        # in 2000-2100 (tests/test_decode.py checks this for every mode).
        readings = [r for r in readings if PLAUSIBLE_FROM <= r[1] < PLAUSIBLE_UNTIL]
        if not readings:
            raise InvalidIdError(
                f"{doc_id!r}: no reading of this id has a time between 2000 and 2100; "
                "pass reverse= and millisecond= to say which kuuid mode it is in"
            )
    form, timestamp = readings[0]
    return DecodedId(id=doc_id, type=doc_type, timestamp=timestamp, form=form)


def _no_form(doc_id: str, body: str, errors: list[tuple[IdForm, str]]) -> str:
    if errors:
        # One complaint per kind: a 32-character string fails as a kuuid id and as a v7s id,
        # and the caller may have meant either.
        first_by_kind: dict[str, str] = {}
        for form, message in errors:
            first_by_kind.setdefault(form.kind, message)
        return f"{doc_id!r} is not a valid id: " + "; ".join(first_by_kind.values())
    return (
        f"{doc_id!r} is not an id couchids reads: after an optional 'type:', a kuuid id has "
        f"14, 20, 26 or 32 characters, a v7s id 32 and a v7 id 36; this one has {len(body)}"
    )
