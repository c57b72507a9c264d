"""The numbers the operations' defaults and limits come from, in a module that imports
nothing: the command line reads them to build its help without loading the query machinery
(``couchids new`` and ``couchids decode`` start as fast as the id forms load).
"""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_PARALLEL", "DEFAULT_TIMEOUT", "MAX_TIMEOUT", "REMOTE_PARALLEL"]

#: Seconds an operation (a write with its retries, a ``latest``, a page of a ``window``, a
#: batch of a ``bulk_create``) may take by default before it gives up with
#: :class:`~couchids.ServerTimeoutError`.
DEFAULT_TIMEOUT: Final = 60.0
#: The longest ``timeout`` accepted: a day.
MAX_TIMEOUT: Final = 86_400.0
#: Time slices :meth:`~couchids.Database.window` reads at a time by default. 50,000 documents
#: in pages of 2000 (bench/bench_query.py's data, medians of interleaved runs): against one raw
#: request, 1, 2, 3 and 4 slices took 1.12, 0.81, 0.86 and 0.84x on PouchDB Server and 1.05,
#: 1.07, 1.03 and 1.03x on CouchDB 3.4.3, whose own work on one request already keeps both
#: cores of the machine busy; peak memory 0.07, 0.09 and 0.10x the raw request's with 2, 3
#: and 4. 200,000 documents with 20 ms added to each round trip: 3 slices were 1.76x faster
#: than 1 on PouchDB Server (2: 1.25x, 4: 1.81x), 1.1-1.2x on CouchDB (server-bound).
DEFAULT_PARALLEL: Final = 3
#: Time slices worth reading at a time from a server tens of milliseconds away, where each
#: request waits a round trip that more slices in flight hide. 100,000 documents with 20 ms
#: added to each round trip (medians of 3): page after page took 1.6x as long as 3 slices
#: and 1.9x as long as 8 on PouchDB Server, and 1.1x and 1.4x on CouchDB 3.4.3, whose work
#: then keeps the rest of this 2-core machine busy. Memory grows with it (about
#: ``parallel + 2`` pages), so it is not the default.
REMOTE_PARALLEL: Final = 8
