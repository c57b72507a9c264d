"""The rules of couchids' arguments, each written once, so that an argument is refused alike
everywhere: a rule returns the value it accepts (as the type the code uses), or raises
:class:`~couchids.InvalidArgumentError` naming the public parameter.

>>> count("parallel", 3)
3
>>> seconds("timeout", 5)
5.0
>>> count("batch_size", 0)
Traceback (most recent call last):
...
couchids.errors.InvalidArgumentError: batch_size=0: must be an int >= 1
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any, Final

from couchids.core.defaults import MAX_TIMEOUT
from couchids.errors import InvalidArgumentError, InvalidInputError, InvalidTimeError
from couchids.idforms.forms import IdForm
from couchids.idforms.times import MAX_MS, TimeLike, duration_ms, iso_ms, now_ms, to_ms

#: What a ``_changes`` sequence to begin after can be: ``now``, a count (PouchDB Server,
#: CouchDB 1) or CouchDB 2+'s and Cloudant's ``N-<opaque>``. CouchDB answers another with
#: 400; PouchDB Server begins somewhere of its own choosing.
SEQUENCE: Final = re.compile(r"now|\d+|\d+-\S+", re.ASCII)


def flag(name: str, value: object) -> bool:
    """``value`` if it is a bool (not merely truthy)."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name}={value!r}: must be True or False")
    return value


def count(name: str, value: object, least: int = 1, *, most: int | None = None) -> int:
    """``value`` if it is an int (not a bool) from ``least`` (to ``most``)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < least
        or (most is not None and value > most)
    ):
        bound = f">= {least}" if most is None else f"from {least} to {most}"
        raise InvalidArgumentError(f"{name}={value!r}: must be an int {bound}")
    return value


def seconds(
    name: str,
    value: object,
    *,
    most: float = MAX_TIMEOUT,
    zero: bool = True,
    what: str = "a duration (seconds, a timedelta or such as '30s')",
) -> float:
    """``value`` as a float of seconds if it is a number of seconds (not a bool), a
    ``timedelta`` or a whole number and a unit (``"2s"``, ``"10m"``, as the command's flags take
    them), from 0 (above 0 unless ``zero``) to ``most``.

    >>> seconds("poll", "2m"), seconds("poll", timedelta(milliseconds=500))
    (120.0, 0.5)
    """
    given = value
    if isinstance(value, timedelta | str):
        value = duration_ms(value, name) / 1000
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not (value >= 0 if zero else value > 0)
        or value > most
    ):
        bound = f"from 0 to {most:g} seconds" if zero else f"above 0 and at most {most:g} seconds"
        raise InvalidArgumentError(f"{name}={given!r}: must be {what} {bound}")
    return float(value)


def timeout(name: str, value: object) -> float | None:
    """A ``timeout``: ``None`` (no limit of couchids' own) or seconds above 0, at most a day."""
    what = "None or a duration (seconds, a timedelta or such as '30s')"
    return None if value is None else seconds(name, value, zero=False, what=what)


def form(name: str, value: object) -> IdForm:
    """``value`` if it is an id form."""
    if not isinstance(value, IdForm):
        raise InvalidArgumentError(
            f"{name}={value!r}: pass an id form, such as couchids.KUUID or couchids.V7S"
        )
    return value


def other_database(name: str, value: object, source: str, operation: str) -> None:
    """Refuse a target database ``value`` that is the ``source`` the ``operation`` reads: it
    would read its own copies again (and archive's expire delete what it copied)."""
    if value == source:
        raise InvalidArgumentError(
            f"{name}={value!r} is the source database: {operation} into another database"
        )


def documents(name: str, value: Any) -> Iterable[Any]:
    """``value`` if it is an iterable of documents (not one document, str or bytes)."""
    if isinstance(value, Mapping | str | bytes) or not isinstance(value, Iterable):
        raise InvalidArgumentError(
            f"{name}={value!r:.80}: must be an iterable of documents (e.g. a list of dicts), "
            f"not one {type(value).__name__}"
        )
    return value


def sequence(name: str, value: object, *, optional: bool = False) -> str | int | None:
    """``value`` if it is a ``_changes`` sequence (``SEQUENCE``), a str or an int (or
    ``None`` when ``optional``)."""
    if value is None and optional:
        return value
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise InvalidArgumentError(
            f"{name}={value!r:.80}: a _changes sequence is a str (such as '0', 'now' or "
            f"CouchDB's '12-g1AAAA...') or an int{', or None' if optional else ''}"
        )
    if not SEQUENCE.fullmatch(str(value)):
        raise InvalidArgumentError(
            f"{name}={value!r:.80} is no _changes sequence: pass 'now', 0, a number "
            "(PouchDB Server's) or CouchDB's '12-g1AAAA...'"
        )
    return value


def function(name: str, value: Any, *, optional: bool = True, giving: str = "") -> Any:
    """``value`` if it is callable (or ``None`` when ``optional``); ``giving`` says what it
    gives, such as ``" giving each document's own time"``."""
    if (value is None and optional) or callable(value):
        return value
    raise InvalidArgumentError(
        f"{name}={value!r:.80}: pass a function{giving}{', or None' if optional else ''}"
    )


def called(name: str, value: Callable[[Any], Any], argument: Any, label: str) -> Any:
    """``value(argument)``, ``value`` being the function passed as ``name``; its failure for
    ``label`` (such as ``"document 3"``) is a :class:`~couchids.InvalidArgumentError`."""
    try:
        return value(argument)
    except Exception as exc:
        raise InvalidArgumentError(
            f"{name}= failed for {label}: {type(exc).__name__}: {exc}"
        ) from exc


def gave(name: str, value: object, label: str, exc: InvalidInputError) -> InvalidInputError:
    """``exc``, raised for what the function passed as ``name`` gave for ``label`` (``value``),
    as an error of its class naming both.

    >>> str(gave("time_of", "soon", "document 3", InvalidTimeError("'soon' is no time")))
    "document 3: time_of= gave 'soon': 'soon' is no time"
    """
    return exc.__class__(f"{label}: {name}= gave {value!r:.80}: {exc}")


def text_stream(name: str, value: object) -> None:
    """Refuse a ``value`` that is not a text stream open for writing (``out`` of an export,
    ``mapping`` of a rekey), before anything is read."""
    mode = getattr(value, "mode", None)
    if isinstance(value, io.RawIOBase | io.BufferedIOBase) or (
        isinstance(mode, str) and "b" in mode
    ):
        raise InvalidArgumentError(
            f"{name}={value!r:.80} is a binary stream, and couchids writes text: open the file "
            "in text mode, such as open(path, 'w', encoding='utf-8', newline='')"
        )
    if not callable(getattr(value, "write", None)):
        raise InvalidArgumentError(
            f"{name}={value!r:.80}: pass a text stream to write to, such as "
            "open(path, 'w', encoding='utf-8', newline=''), sys.stdout or io.StringIO()"
        )
    writable = getattr(value, "writable", None)
    if callable(writable):
        try:
            open_for_writing = bool(writable())
        except ValueError:  # closed
            open_for_writing = False
        if not open_for_writing:
            raise InvalidArgumentError(
                f"{name}={value!r:.80} is closed or not open for writing: open the file with "
                "'w' or 'a', such as open(path, 'w', encoding='utf-8', newline='')"
            )


def window(start: TimeLike, end: TimeLike | None, *, open_end: bool = False) -> tuple[int, int]:
    """The window ``[start, end)`` in ms since the epoch (an ``end`` before ``start`` is an
    :class:`~couchids.errors.InvalidTimeError`); ``end=None`` is now, or with ``open_end`` no
    end. Times ago (``"24h"``) and now are read from one reading of the clock.

    >>> window("2024-01-01T00:00Z", "2024-01-02T00:00Z")
    (1704067200000, 1704153600000)
    >>> window("2024-01-02T00:00Z", "2024-01-01T00:00Z")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    couchids.errors.InvalidTimeError: the window ends (...) before it starts (...); ...
    """
    now = now_ms()
    start_ms = to_ms(start, now=now)
    end_ms = MAX_MS + 1 if open_end and end is None else to_ms(end, now=now)
    if end_ms < start_ms:
        hint = ", or end=None for no end" if open_end else ""
        raise InvalidTimeError(
            f"the window ends ({iso_ms(end_ms)}) before it starts ({iso_ms(start_ms)}); "
            f"pass start <= end{hint}"
        )
    return start_ms, end_ms
