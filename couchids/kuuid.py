"""The kuuid npm package's functions, for code that moves between Node and Python.

Every function kuuid 3 exports, under the same names (the camelCase ``prefixms``,
``prefixReverse`` and ``prefixReverseMs`` too, the same functions as ``prefix_ms``,
``prefix_reverse`` and ``prefix_reverse_ms``), answering with the same ids byte for byte (the
random part aside), so a line of Node such as ``kuuid.idmsr(t)`` reads the same in Python.

Every function takes ``timestamp`` as kuuid does (an ISO-8601 string or epoch milliseconds) or a
``datetime``; the id makers take ``type=`` too (``type:`` before the id). Where couchids differs
on purpose: ``timestamp=0`` is the epoch (kuuid reads any falsy timestamp as "now"); an argument
out of range raises :class:`~couchids.InvalidArgumentError` or
:class:`~couchids.InvalidTimeError` instead of falling back to a default; an ISO string without
an offset is UTC (kuuid reads it as local time); :func:`v7` and :func:`v7s` keep a strictly
increasing random part within a millisecond instead of kuuid 3's counter, which overflows after
4,096 ids. The id forms (:data:`couchids.KUUID`, ...) make the same ids and also read them back
and query them.

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
