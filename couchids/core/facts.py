"""What couchids learns about a database, asked once per client and database: whether it is
partitioned and how many copies the server keeps (:class:`DatabaseFacts`), kept with what is
known of the server in a driver's :class:`FactsCache`."""

from __future__ import annotations

from dataclasses import dataclass

from couchids.core.answers import expect_object
from couchids.core.asking import ask
from couchids.core.effects import Program, Request, path
from couchids.core.policy import RetryPolicy


@dataclass(frozen=True, slots=True)
class DatabaseFacts:
    """Whether a database is ``partitioned``, and the ``copies`` of each document the server
    keeps (CouchDB's ``n``; 1 where the server does not say)."""

    partitioned: bool
    copies: int


class FactsCache(dict[str, DatabaseFacts]):
    """What a driver has learnt through one client: the facts of each database by name, and
    of the server (``None``: not known yet): its kind (``core.counting.server_kind``), its
    welcome's version, the ids per ``_purge`` it was found to take (``core.expiry``), and
    whether it has ``_time_seq`` and ``_auto_purge`` (``core.features``)."""

    server_kind: str | None = None
    server_version: str | None = None
    purge_batch: int | None = None
    time_seq: bool | None = None
    auto_purge: bool | None = None


def database_facts(known: FactsCache, db: str, policy: RetryPolicy) -> Program[DatabaseFacts]:
    """The :class:`DatabaseFacts` of ``db``, from one ``GET /{db}`` per ``known`` cache."""
    facts = known.get(db)
    if facts is not None:
        return facts
    reply = yield from ask(Request("GET", path(db)), policy, db)
    info = expect_object(reply.body, policy, db, sent=reply.sent)
    cluster, props = info.get("cluster"), info.get("props")
    copies = cluster.get("n", 1) if isinstance(cluster, dict) else 1
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        copies = 1
    partitioned = isinstance(props, dict) and props.get("partitioned") is True
    known[db] = facts = DatabaseFacts(partitioned, copies)
    return facts
