"""The numbers the operations' defaults and limits come from, in a module that imports
nothing, so that the command line builds its help without loading the query machinery."""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_EXPIRE_BATCH",
    "DEFAULT_FOLLOW_BATCH",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_PARALLEL",
    "DEFAULT_REKEY_BATCH",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WORKERS",
    "MAX_TIMEOUT",
    "REMOTE_PARALLEL",
]

#: Seconds an operation (a write with its retries, a ``latest``, a page of a ``window``, a
#: batch of a ``bulk_create``) may take by default before it gives up with
#: :class:`~couchids.ServerTimeoutError`.
DEFAULT_TIMEOUT: Final = 60.0
#: The longest ``timeout`` accepted: a day.
MAX_TIMEOUT: Final = 86_400.0
#: Time slices :meth:`~couchids.Database.window` reads at a time by default. 50,000 documents
#: (bench/bench_query.py): 3 slices took 0.86x the time of one raw request on PouchDB Server
#: (1 slice: 1.12x) and 1.03x on CouchDB 3.4.3 (server-bound), in 0.09x its peak memory; with
#: 20 ms added to each round trip, 3 were 1.76x faster than 1 on PouchDB Server.
DEFAULT_PARALLEL: Final = 3
#: Time slices worth reading at a time from a server tens of milliseconds away, where more
#: slices in flight hide the round trips (figures in the querying guide). Memory grows with
#: it (about ``parallel + 2`` pages), so it is not the default.
REMOTE_PARALLEL: Final = 8
#: Rows a page of :meth:`~couchids.Database.window` asks for by default. Two pages are held
#: at a time, so this bounds memory (bench/bench_query.py: at 2000 a 50,000-document window
#: takes about as long as one unpaged request, in a fifteenth of its memory).
DEFAULT_PAGE_SIZE: Final = 2000
#: Documents per ``_bulk_docs`` request.
DEFAULT_BATCH_SIZE: Final = 500
#: Offset requests :meth:`~couchids.Database.histogram` has in flight at once.
DEFAULT_WORKERS: Final = 8
#: Documents per ``_bulk_docs`` delete request of :meth:`~couchids.Database.expire`.
DEFAULT_EXPIRE_BATCH: Final = 500
#: Changes per request of :meth:`~couchids.Database.follow`.
DEFAULT_FOLLOW_BATCH: Final = 500
#: Documents per ``_bulk_docs`` request of :meth:`~couchids.Database.rekey`.
DEFAULT_REKEY_BATCH: Final = 500
