"""Why a query found nothing: the program of :meth:`couchids.Database.explain_empty`.

Typed ids asked for as untyped ones, ids of another form, or a misspelt type: a few small
``_all_docs`` requests tell which, in one sentence.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Final, Literal

from couchids.core import alltypes, arguments
from couchids.core.effects import Program
from couchids.core.keys import next_text, type_step, window_keys
from couchids.core.options import Options
from couchids.core.pages import all_docs
from couchids.core.policy import RetryPolicy
from couchids.errors import InvalidArgumentError, InvalidIdError
from couchids.idforms import forms
from couchids.idforms.constants import DEFAULT_BLOCKS, SEPARATORS, SHORT_BLOCKS, TYPE_SEPARATOR
from couchids.idforms.decode import TIMELESS_FORMS, decode
from couchids.idforms.forms import IdForm, KuuidForm
from couchids.idforms.uuid464 import UUID464

__all__ = ["COUCHDB_UUIDS", "FORM_CONSTANTS", "SAMPLE", "Style", "explain"]

#: Ids read from each place looked at: the start of the scope and the form's key range in it.
SAMPLE: Final = 20
#: Types named in a message before ``...``.
_NAMED_TYPES: Final = 8
#: Who reads the advice: Python code (``type='order'``) or the command (``--type order``).
Style = Literal["python", "command"]
#: The forms of the ids CouchDB makes itself (``POST /{db}`` without ``_id``, ``GET /_uuids``)
#: and the ``[uuids]`` settings that make them: ``uuid_v7`` (the default on CouchDB's main
#: branch) in each of its formats (src/couch/src/couch_uuids.erl ``uuid_format``;
#: rel/overlay/etc/default.ini), and ``utc_random``.
COUCHDB_UUIDS: Final = {
    "v7s": "algorithm = uuid_v7, format base_16",
    "base36_v7": "algorithm = uuid_v7, format base_36",
    "v7": "algorithm = uuid_v7, format rfc9562",
    "utc_random": "algorithm = utc_random",
}
#: The constant in ``couchids`` of each preset form (``--form NAME``), as advice to Python
#: code names a form.
FORM_CONSTANTS: Final = {
    name: next(key for key, value in vars(forms).items() if value is form and key.isupper())
    for name, form in forms.NAMED_FORMS.items()
}


def explain(
    db: str,
    *,
    type: str | None,
    form: IdForm,
    style: Style,
    options: Options,
) -> Program[str | None]:
    """The program of :meth:`couchids.Database.explain_empty`; arguments checked now."""
    arguments.form("form", form)
    if style not in ("python", "command"):
        raise InvalidArgumentError(f"style={style!r}: 'python' or 'command'")
    prefix = form.type_prefix(type)
    policy = options.policy("explain_empty")
    return _explain(db, type, prefix, form, style, policy)


def _explain(
    db: str, doc_type: str | None, prefix: str, form: IdForm, style: Style, policy: RetryPolicy
) -> Program[str | None]:
    advice = _ADVICE[style]
    scope = (
        f"the untyped ids of {db!r}"
        if doc_type is None
        else f"the ids of type {doc_type!r} in {db!r}"
    )
    # Ids of the form where the query looked (any time): the time is why it found none.
    if form.sortable:
        keys = window_keys(form, doc_type, 0, (form.max_unit + 1) * form.unit_ms)
        if keys is not None:
            probe = yield from _ids(db, keys.low, keys.high, policy)
            matches = form.matcher(prefix)
            if any(matches(doc_id) and _is_of(doc_id, form) for doc_id in probe):
                return None
    start = yield from _ids(db, "", None, policy)
    if doc_type is None:
        scoped = [doc_id for doc_id in start if _untyped(doc_id, form.separator)]
    else:
        scoped = yield from _ids(db, prefix, next_text(prefix), policy)
    if scoped:
        return _other_forms(scope, form, scoped, style, untyped=doc_type is None)
    types = yield from alltypes.types_present(db, form.separator, policy)
    if doc_type is None:
        if not types:
            return None
        return (
            f"no untyped {form} ids in {db!r}; it holds ids of types {_types(types)}: "
            f"{advice['typed'].format(types[0])}"
        )
    others = [t for t in types if t != doc_type]
    if others:
        return (
            f"no ids of type {doc_type!r} in {db!r}; it holds ids of types {_types(others)}: "
            f"{advice['another type']}"
        )
    if any(_untyped(doc_id, form.separator) for doc_id in start):
        return f"no ids of type {doc_type!r} in {db!r}; its ids are untyped: {advice['untyped']}"
    return None


def _ids(db: str, start: str, end: str | None, policy: RetryPolicy) -> Program[list[str]]:
    """Up to ``SAMPLE`` ids from ``start`` (inclusive) to ``end`` (exclusive)."""
    options: dict[str, Any] = {"limit": SAMPLE + 1}
    if start:
        options["start_key"] = start
    if end is not None:
        options["end_key"] = end
    rows = yield from all_docs(db, options, policy)
    return [row["id"] for row in rows if row["id"] != end][:SAMPLE]


def _untyped(doc_id: str, separator: str) -> bool:
    """Whether ``doc_id`` is neither a design (or other ``_``) document nor a typed id."""
    return not doc_id.startswith("_") and type_step(doc_id, separator).doc_type is None


def _is_of(doc_id: str, form: IdForm) -> bool:
    """Whether ``doc_id`` may be an id of ``form``: not when it reads as another (a
    second-precision kuuid id also matches a millisecond form, as a time in 1970)."""
    try:
        decoded = decode(doc_id)
    except InvalidIdError:
        return True
    return decoded.form.with_separator(form.separator) == form


def _reading(doc_id: str) -> tuple[IdForm, bool] | None:
    """``(form, holds a time)`` of the form ``doc_id`` reads as, or ``None``."""
    try:
        decoded = decode(doc_id)
    except InvalidIdError:
        # decode() guesses no reading without a time: a uuid464 that is not a UUIDv7 included.
        for form in (*TIMELESS_FORMS, UUID464):
            for sep in SEPARATORS:
                try:
                    found = decode(doc_id, form=form.with_separator(sep))
                except InvalidIdError:
                    continue
                if found.timestamp is None:
                    return found.form, False
        return None
    return decoded.form, True


def _other_forms(scope: str, form: IdForm, ids: list[str], style: Style, *, untyped: bool) -> str:
    readings = [_reading(doc_id) for doc_id in ids]
    known = Counter(reading for reading in readings if reading is not None)
    ranked = [reading for reading, _count in known.most_common()]
    named = [str(each) + ("" if timed else " (which holds no time)") for each, timed in ranked]
    if None in readings:
        named.append("no form couchids knows")
    # An id of the reading named first (the most common), or of none.
    example = ids[readings.index(ranked[0] if ranked else None)]
    if len(example) > 60:
        example = example[:57] + "..."
    sentence = f"{scope} are not {form} ids: they read as {', '.join(named)} (such as {example!r})"
    made = COUCHDB_UUIDS.get(str(ranked[0][0])) if ranked and untyped else None
    if made is not None:
        sentence += f", the ids CouchDB's [uuids] {made} makes"
    timed = [each for each, has_time in ranked if has_time]
    if timed:
        return f"{sentence}: {_form_advice(timed[0], style)}"
    return f"{sentence}; time queries read only forms with a time"


def _types(types: list[str]) -> str:
    shown = ", ".join(types[:_NAMED_TYPES])
    return shown if len(types) <= _NAMED_TYPES else f"{shown}, ... ({len(types)} types)"


#: What to pass instead, in the words of Python code or of the command.
_ADVICE: Final = {
    "python": {
        "typed": "pass type={!r} or type=couchids.ALL_TYPES",
        "another type": "pass type= one of them",
        "untyped": "pass type=None",
    },
    "command": {
        "typed": "pass --type {} or --all-types",
        "another type": "pass --type with one of them",
        "untyped": "leave out --type",
    },
}


def _form_advice(form: IdForm, style: Style) -> str:
    """How to read ids of ``form``: a preset by name or constant, a kuuid mode by the command's
    flags, else the form made from its class."""
    name, separator = str(form), form.separator
    constant = FORM_CONSTANTS.get(name)
    if style == "command":
        if constant is not None:
            sep = "" if separator == TYPE_SEPARATOR else f" --sep {separator}"
            return f"pass --form {name}{sep}"
        flags = _kuuid_flags(form)
        if flags is not None and separator == TYPE_SEPARATOR:
            return f"pass {flags}"
        return f"the command names no such form: read them in Python with form={_made(form)}"
    if constant is None:
        return f"pass form={_made(form)}"
    sep = "" if separator == TYPE_SEPARATOR else f".with_separator({separator!r})"
    return f"pass form=couchids.{constant}{sep}"


def _kuuid_flags(form: IdForm) -> str | None:
    """The command's flags for a kuuid mode (``--short --ms --reverse``), or ``None``."""
    if not isinstance(form, KuuidForm) or form.kind != "kuuid":
        return None
    if form.random not in (SHORT_BLOCKS, DEFAULT_BLOCKS):
        return None
    short = form.random == SHORT_BLOCKS
    flags = {"--short": short, "--ms": form.millisecond, "--reverse": form.reverse}
    return " ".join(flag for flag, on in flags.items() if on)


def _made(form: IdForm) -> str:
    """Python that makes ``form``: its class with the fields that differ from their defaults."""
    made = f"{type(form).__module__}.{type(form).__name__}"
    if not dataclasses.is_dataclass(form):
        return f"{type(form).__module__}.{form!r}"
    given = [
        f"{field.name}={getattr(form, field.name)!r}"
        for field in dataclasses.fields(form)
        if field.init and getattr(form, field.name) != field.default
    ]
    return f"{made}({', '.join(given)})"
