"""The kuuid npm package's functions, for code that moves between Node and Python.

``from couchids import kuuid`` gives every function kuuid 3 exports, under the same names,
answering with the same ids byte for byte (the random part aside): ``kuuid.id()``,
``kuuid.idms()``, ``kuuid.prefix(t)``, ``kuuid.v7s()`` and the rest, so a line of Node such as
``kuuid.idmsr(t)`` reads the same in Python. The three camelCase names of the npm package are
here too (``prefixms``, ``prefixReverse``, ``prefixReverseMs``), each the same function as its
Python spelling (``prefix_ms``, ``prefix_reverse``, ``prefix_reverse_ms``).

Every function takes ``timestamp`` as kuuid does (an ISO-8601 string or epoch milliseconds),
and also a ``datetime``; the id makers take ``type=`` too, written before the id as
``type:``. Where couchids differs from kuuid, on purpose: ``timestamp=0`` is the epoch (kuuid
reads any falsy timestamp as "now"); an argument out of range raises
:class:`~couchids.InvalidArgumentError` or :class:`~couchids.InvalidTimeError` instead of
falling back to a default; and an ISO string without an offset is UTC (kuuid's ``new Date()``
reads it as local time). :func:`v7` and :func:`v7s` keep a strictly increasing random part
within a millisecond instead of kuuid 3's counter, which overflows after 4,096 ids (see
``couchids.idforms.v7``).

The id forms (:data:`couchids.KUUID`, :data:`couchids.KUUID_MS`, :data:`couchids.V7S`, ...)
make the same ids and also read them back and query them; ``couchids.id`` is :func:`id`.

>>> from couchids import kuuid
>>> kuuid.prefix("2018-01-01T00:00:00.000Z")
'001eVnWK'
>>> kuuid.prefixReverse is kuuid.prefix_reverse
True
"""

from __future__ import annotations

from couchids.idforms.kuuid import (
    id,
    idms,
    idmsr,
    idr,
    ids,
    idsr,
    prefix,
    prefix_ms,
    prefix_reverse,
    prefix_reverse_ms,
    rand,
)
from couchids.idforms.v7 import v7, v7s

__all__ = [
    "id",
    "idms",
    "idmsr",
    "idr",
    "ids",
    "idsr",
    "prefix",
    "prefixReverse",
    "prefixReverseMs",
    "prefix_ms",
    "prefix_reverse",
    "prefix_reverse_ms",
    "prefixms",
    "rand",
    "v7",
    "v7s",
]

#: kuuid's own spelling of :func:`prefix_ms`.
prefixms = prefix_ms
#: kuuid's own spelling of :func:`prefix_reverse`.
prefixReverse = prefix_reverse
#: kuuid's own spelling of :func:`prefix_reverse_ms`.
prefixReverseMs = prefix_reverse_ms
