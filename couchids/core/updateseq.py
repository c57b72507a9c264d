"""Which state of a database an ``update_seq`` names, whatever order its shards answered in.

A CouchDB 2+ (and Cloudant) ``update_seq`` is ``<sum>-<opaque>``: the opaque part is
base64url of an Erlang term (``term_to_binary``, often compressed), a list with one
``{node, [begin, end], seq}`` per shard range: the copy that answered for that range and its
sequence. The list is in the order the shards answered, so two answers read in one state by the
same copies can differ as strings (measured on CouchDB 3.4.3, single node, q=2: 1 to 6
answers in 100 on a quiet database, more on a loaded machine). :func:`shard_sequences` reads
the list as a set; a sequence it cannot read stays the string it is.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Hashable
from typing import Final

__all__ = ["shard_sequences"]

#: The first byte of a term_to_binary, and the tag of a compressed one.
_VERSION: Final = 131
_COMPRESSED: Final = 80


def shard_sequences(update_seq: str) -> Hashable:
    """The shard copies and sequences ``update_seq`` names, as a set of ``(node, range, seq)``:
    equal for the answers of one state read by the same copies, in whatever order the shards
    answered. ``update_seq`` itself when it is no such sequence (PouchDB's, CouchDB 1's).

    >>> a = "500-g1AAAABmeJzLYWBgYMpgTmEQT84vTc5ISdI1NLW0MHEwNDLXMwBCwxyQgjwWIMnQAKT-A0FW4h2COhIZkupBSpMYGBglsgAwoRu2"
    >>> b = "500-g1AAAABmeJzLYWBgYMpgTmEQT84vTc5ISdI1NLW0MHEwNDLXMwBCwxyQgkSGpPr___9nJTEwMEoQVJ3HAiQZGoDUf5CmxDtZAAvLG7Y"
    >>> a == b, shard_sequences(a) == shard_sequences(b)
    (False, True)
    >>> sorted(shard_sequences(a))  # doctest: +NORMALIZE_WHITESPACE
    [('couchdb-15984@127.0.0.1', (0, 2147483647), 280),
     ('couchdb-15984@127.0.0.1', (2147483648, 4294967295), 220)]
    >>> shard_sequences("12-not a term"), shard_sequences("7")
    ('12-not a term', '7')
    """  # noqa: E501
    _, dash, opaque = update_seq.partition("-")
    try:
        raw = base64.urlsafe_b64decode(opaque + "=" * (-len(opaque) % 4))
        if not dash or len(raw) < 2 or raw[0] != _VERSION:
            return update_seq
        data = zlib.decompress(raw[6:]) if raw[1] == _COMPRESSED else raw[1:]
        term, end = _term(data, 0)
    except (binascii.Error, zlib.error, ValueError, IndexError):
        return update_seq
    return frozenset(term) if isinstance(term, tuple) and end == len(data) else update_seq


def _term(data: bytes, at: int) -> tuple[Hashable, int]:
    """The Erlang term at ``data[at]`` (the kinds a cluster sequence holds; lists and tuples
    both as tuples, atoms as str), and where the next begins."""
    tag, at = data[at], at + 1
    if tag == 97:  # SMALL_INTEGER_EXT
        return data[at], at + 1
    if tag == 98:  # INTEGER_EXT
        return int.from_bytes(data[at : at + 4], "big", signed=True), at + 4
    if tag == 110:  # SMALL_BIG_EXT: n, sign, n bytes little-endian
        n, sign = data[at], data[at + 1]
        value = int.from_bytes(data[at + 2 : at + 2 + n], "little")
        return -value if sign else value, at + 2 + n
    if tag in (100, 118, 109, 107):  # ATOM_EXT, ATOM_UTF8_EXT, BINARY_EXT, STRING_EXT
        width = 4 if tag == 109 else 2
        n, at = int.from_bytes(data[at : at + width], "big"), at + width
        chunk = data[at : at + n]
        if len(chunk) != n:
            raise ValueError("cut short")
        return (chunk.decode() if tag in (100, 118) else bytes(chunk)), at + n
    if tag in (115, 119):  # SMALL_ATOM_EXT, SMALL_ATOM_UTF8_EXT
        n = data[at]
        return data[at + 1 : at + 1 + n].decode(), at + 1 + n
    if tag == 106:  # NIL_EXT
        return (), at
    if tag in (104, 105, 108):  # SMALL_TUPLE_EXT, LARGE_TUPLE_EXT, LIST_EXT
        width = 1 if tag == 104 else 4
        n, at = int.from_bytes(data[at : at + width], "big"), at + width
        items = []
        for _ in range(n):
            item, at = _term(data, at)
            items.append(item)
        if tag == 108:
            _, at = _term(data, at)  # the tail, [] in a proper list
        return tuple(items), at
    raise ValueError(f"no term tag {tag}")
