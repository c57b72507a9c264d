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
    """What couchids needs to know about a database, asked once per client and database.

    Attributes:
        partitioned: whether it is a partitioned database.
        copies: how many copies the server keeps of each document (CouchDB's ``n``; 1 for a
            server that does not say, such as a single node or PouchDB Server).
    """

    partitioned: bool
    copies: int


class FactsCache(dict[str, DatabaseFacts]):
    """What a driver has learnt through one client: the facts of each database by name, and
    which server it is (``server_kind``, see ``couchids.core.counting.server_kind``)."""

    server_kind: str | None = None
    #: The ``version`` of the server's welcome (``None``: not read yet, or not given).
    server_version: str | None = None
    #: Ids per ``_purge`` request the server was found to take, once it refused more
    #: (``None``: as its version says, see ``couchids.core.expiry.purge_batch_for``).
    purge_batch: int | None = None
    #: Whether the server reads a time as ``_changes``' ``since`` (``None``: not asked yet;
    #: see ``couchids.core.features.has_time_seq``).
    time_seq: bool | None = None
    #: Whether the server keeps a database's auto purge settings (``None``: not asked yet;
    #: see ``couchids.core.features.has_auto_purge``).
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
    partitioned = props.get("partitioned", False) if isinstance(props, dict) else False
    facts = DatabaseFacts(
        partitioned=partitioned is True,
        copies=copies
        if isinstance(copies, int) and not isinstance(copies, bool) and copies >= 1
        else 1,
    )
    known[db] = facts
    return facts
