"""The key range of a time window: pure arithmetic on strings, no I/O.

``_all_docs`` compares ids as raw bytes, and every id of one form and type has the same
length and sorts by its time text, so "ids of type T made in [start, end)" is one contiguous
key range. The rules it follows (see CouchDB's ``_all_docs`` documentation):

- The range is computed exactly and sent with the default ``inclusive_end=true``; the only
  string the inclusive end adds is the bare bound itself, which is never a valid id of the
  form (too short), so callers filter it out with every other foreign id. couchids never
  leans on ``inclusive_end=false`` (CouchDB issue 2156).
- With ``descending=true`` the direction applies first: ``startkey`` is the high key.
- The exclusive upper bound of everything starting with ``user:`` is ``user;`` (the next
  byte), as CouchDB itself uses for partitions; ``"\\ufff0"`` is only a convention.
"""

from __future__ import annotations

from dataclasses import dataclass

from .constants import TYPE_SEPARATOR
from .doctypes import type_prefix
from .forms import IdForm

#: The byte after ``:``: ``"user;"`` is above every ``"user:..."`` id.
_AFTER_SEPARATOR = chr(ord(TYPE_SEPARATOR) + 1)
#: Above every base62 or hex character: the end of an untyped range.
_AFTER_ALPHABET = "{"


@dataclass(frozen=True)
class KeyRange:
    """Ids ``low <= id < high`` in ``_all_docs`` order, and how to ask for them."""

    low: str
    high: str
    #: The text every wanted id starts with (``"user:"``, or ``""``).
    prefix: str

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

    >>> from couchids.forms import KUUID
    >>> window_keys(KUUID, "user", 1514764800000, 1514764801000)
    KeyRange(low='user:001eVnWK', high='user:001eVnWL', prefix='user:')
    """
    prefix = type_prefix(doc_type)
    unit = form.unit_ms
    # An id's time is its unit counted down, so t >= start means unit >= ceil(start/unit)
    # and t < end means unit < ceil(end/unit).
    first = _ceil_div(max(start_ms, 0), unit)
    stop = min(_ceil_div(end_ms, unit), form.max_unit + 1)
    if first >= stop:
        return None
    top = prefix[:-1] + _AFTER_SEPARATOR if prefix else _AFTER_ALPHABET
    if form.reverse:
        # Keys fall as time rises: the latest time has the lowest key, and the key just above
        # the earliest time's is that of the unit before it.
        low = prefix + form.key(stop - 1)
        high = prefix + form.key(first - 1) if form.key_fits(first - 1) else top
    else:
        low = prefix + form.key(first)
        high = prefix + form.key(stop) if form.key_fits(stop) else top
    return KeyRange(low=low, high=high, prefix=prefix)
