"""Time-window replication: the selector of a window, the ``_replicator`` document, and the
programs that start, watch and cancel it (:meth:`couchids.Database.replicate`). Pure: the
drivers send what these programs ask.

**The selector is regular expressions.** The replicator compares a selector's values with
``mango_json:cmp/2``, ICU collation (``a`` < ``A`` < ``b``), not the code-point order of
``_all_docs``; CouchDB 3.4.3 compares ``_id`` raw (``mango_json:cmp_raw/2``), but other
servers and versions need not. ``$regex`` runs Erlang's ``re`` on the id's UTF-8 bytes, whose
order is code-point order, so each type's key range becomes a regex of exactly
``low <= id < high`` (:func:`range_regex`) and a second one keeps the form's ids alone
(:func:`shape_regex`), as :meth:`~couchids.Database.window` does. The patterns keep to what
PCRE and Python's ``re`` on ``bytes`` read alike: ``^``, ``(?:…)``, ``(?!…)``, ``|``, byte
classes, ``\\xHH`` for every byte but an ASCII letter or digit, ``{n}``; the id's end is
``(?![\\x00-\\xff])``, since PCRE's ``$`` and ``\\Z`` also match before a final newline.

**A replication is a** ``_replicator`` **document** ``couchids-<kuuid id>``, not a ``POST
/_replicate`` (which holds its request open until a one-shot replication ends): it survives a
restart of the server, runs whether the caller stays connected or not, reports its state to
any process (``_scheduler/docs``), and deleting it cancels it. A one-shot replication's
document is removed once it completed (:func:`remove_completed`): it holds the endpoints'
credentials. The price is a poll for the end, up to one interval (0.25 s growing to 1 s;
``bench/bench_replication.py``). CouchDB 3 wants URLs as the endpoints
(apache/couchdb#2089): the server must reach itself at the client's service URL (or the
``server_url`` given).

**Credentials** never travel in a URL: they go into each endpoint's ``auth`` object
(apache/couchdb#3599), an IAM API key as the replicator of the server that runs the
replication reads it (:meth:`Credentials.auth`; the docs' IBM Cloudant page). Whoever may read
``_replicator`` sees them; an :class:`Endpoint`'s repr and every message show the URL alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import quote

from couchids.core.alltypes import types_present
from couchids.core.answers import check_listing, expect_object
from couchids.core.arguments import flag as check_flag
from couchids.core.arguments import window as check_window
from couchids.core.asking import CONFLICT, MISSING, ask
from couchids.core.counting import ServerKind, server_kind
from couchids.core.defaults import DEFAULT_TIMEOUT
from couchids.core.effects import Program, Request, Sleep, path
from couchids.core.exactjson import dumps
from couchids.core.facts import FactsCache, database_facts
from couchids.core.keys import check_time_form, window_keys
from couchids.core.names import check_db
from couchids.core.policy import RetryPolicy
from couchids.core.revisions import live_leaves, winner
from couchids.core.series import create_database
from couchids.core.urls import ParsedUrl, parse_url
from couchids.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    ReplicationFailed,
    ServerTimeoutError,
)
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import IdForm
from couchids.idforms.kuuid import id as kuuid_id
from couchids.idforms.times import SecondsLike, TimeLike

__all__ = [
    "CANCEL_ROUNDS",
    "COMPLETED_FIELD",
    "REPLICATOR_DB",
    "STATES",
    "Credentials",
    "Endpoint",
    "ReplicationPlan",
    "ReplicationStatus",
    "cancel",
    "check_server",
    "check_target",
    "database_endpoint",
    "endpoints",
    "new_doc_id",
    "plan",
    "range_regex",
    "remove_completed",
    "server_root",
    "shape_regex",
    "start",
    "status",
    "url_endpoint",
    "wait",
    "window_selector",
]

#: The database whose documents are replications.
REPLICATOR_DB: Final = "_replicator"
#: The states ``_scheduler/docs`` reports for a replication document (CouchDB 3).
STATES: Final = ("initializing", "running", "pending", "crashing", "error", "failed", "completed")
#: States in which the replicator retries on its own, with a growing backoff.
TROUBLED: Final = frozenset({"crashing", "error"})
#: What a replication's state is once its document is gone (cancelled).
CANCELLED: Final = "cancelled"
#: The first and the longest pause between two polls of :func:`wait` (seconds).
FIRST_POLL: Final = 0.25
LONGEST_POLL: Final = 1.0
#: Words of a replicator's error that no retry of its own mends: :func:`wait` raises at once.
LASTING: Final = ("not_found", "unauthorized", "forbidden", "invalid", "bad_request")
#: The end of the subject: no byte follows (PCRE's ``$`` and ``\Z`` allow a final newline).
END: Final = r"(?![\x00-\xff])"
#: Rounds of deleting a replication document's live revisions before :func:`cancel` gives up.
CANCEL_ROUNDS: Final = 5
#: The field of the deletion (tombstone) of a completed replication's document that keeps its
#: counts, so that its status still reads ``completed`` once the document is removed.
COMPLETED_FIELD: Final = "couchids_completed"
#: The counts a removed document's tombstone keeps.
KEPT_COUNTS: Final = (
    "revisions_checked",
    "missing_revisions_found",
    "docs_read",
    "docs_written",
    "doc_write_failures",
)
#: A pattern that matches nothing.
NOTHING: Final = "(?!)"
#: What a selector is that no id matches (an empty window, or no types present).
NO_IDS: Final[dict[str, Any]] = {"_id": {"$in": []}}


# -- the selector --------------------------------------------------------------------------------


def _byte(b: int) -> str:
    """Byte ``b`` in a pattern: itself if an ASCII letter or digit, else ``\\xHH``."""
    char = chr(b)
    return char if char.isascii() and char.isalnum() else f"\\x{b:02x}"


def _klass(first: int, last: int) -> str | None:
    """The bytes ``first..last`` as a pattern, or ``None`` when there are none."""
    if first > last:
        return None
    return _byte(first) if first == last else f"[{_byte(first)}-{_byte(last)}]"


def _either(options: list[str]) -> str:
    """A pattern matching what any of ``options`` matches (nothing for none)."""
    if not options:
        return NOTHING
    return options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"


def _then(b: int, rest: list[str]) -> str | None:
    """Byte ``b`` followed by one of ``rest`` (``[""]``: anything), ``None`` for none."""
    if not rest:
        return None
    return _byte(b) + (_either(rest) if rest != [""] else "")


def _span(low: bytes, high: bytes | None) -> list[str]:
    """Alternatives for the byte strings ``t`` with ``low <= t`` and, unless ``high`` is
    ``None``, ``t < high`` (``[""]``: every string)."""
    if high is None and not low:
        return [""]
    if high is not None and (not high or low[:1] > high[:1]):
        return []
    first = low[0] if low else -1
    last = high[0] if high else 0x100
    if low:
        head = _then(first, _span(low[1:], high[1:] if high and first == last else None))
    else:
        head = END  # the empty string, a proper prefix of ``high``
    tail = _then(last, _span(b"", high[1:])) if high and last != first else None
    return [option for option in (head, _klass(first + 1, last - 1), tail) if option]


def range_regex(low: str, high: str) -> str:
    """A regex matching exactly the strings ``s`` with ``low <= s < high`` in code-point order
    (the order of ``_all_docs`` and of Python's ``str``), read on the UTF-8 bytes of ``s`` as
    CouchDB's ``$regex`` and Python's ``re`` on ``bytes`` read them.

    >>> import re
    >>> pattern = re.compile(range_regex("user:001e", "user:001f").encode())
    >>> [bool(pattern.match(s.encode())) for s in ("user:001e", "user:001eZ", "user:001f")]
    [True, True, False]
    >>> range_regex("a", "c")
    '^(?:a|b)'
    """
    return "^" + _either(_span(low.encode(), high.encode()))


def shape_regex(form: IdForm, prefix: str) -> str:
    """A regex matching ``prefix`` followed by a whole id of ``form``, on UTF-8 bytes.

    >>> from couchids import V7S
    >>> shape_regex(V7S, "t:")
    '^t\\\\x3a[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}(?![\\\\x00-\\\\xff])'
    """
    body = form.body_pattern().replace(r"\Z", END)
    escaped = "".join(_byte(b) for b in prefix.encode())
    return f"^{escaped}{body}{END}"


def window_selector(
    types: Sequence[str | None], start_ms: int, end_ms: int, form: IdForm
) -> dict[str, Any]:
    """The Mango selector of the ids of ``form`` of each of ``types`` (``None``: untyped ids)
    that hold a time ``t`` with ``start_ms <= t < end_ms``: for each type, its key range
    (:func:`range_regex`) and the form's id shape (:func:`shape_regex`), joined by ``$or``.

    >>> from couchids import KUUID
    >>> sel = window_selector(["user"], 1514764800000, 1514764801000, KUUID)
    >>> sel["$and"][0]["_id"]["$regex"]
    '^user\\\\x3a001eVnWK'
    """
    check_time_form(form)
    clauses = [
        {
            "$and": [
                {"_id": {"$regex": regex}}
                for regex in (range_regex(keys.low, keys.high), shape_regex(form, keys.prefix))
            ]
        }
        for doc_type in dict.fromkeys(types)
        if (keys := window_keys(form, doc_type, start_ms, end_ms)) is not None
    ]
    if not clauses:
        return dict(NO_IDS)
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


# -- endpoints -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Credentials:
    """How an endpoint signs in: ``basic`` (a user name and password) or ``iam`` (an IBM
    Cloud API key). The secret never shows in a repr.

    >>> Credentials("basic", "admin", "s3cret")
    Credentials(kind='basic', username='admin')
    """

    kind: Literal["basic", "iam"]
    username: str = ""
    secret: str = field(default="", repr=False)

    def auth(self, server: ServerKind = "cloudant") -> dict[str, Any]:
        """The endpoint's ``auth`` object, as the replicator of ``server`` (the server that
        runs the replication) reads it: an API key under ``iam`` for Cloudant (its API
        reference's ``ReplicationDatabaseAuthIam``), under ``ibm`` for Apache CouchDB
        (``couch_replicator_auth_ibm.erl``, ``extract_api_key/1``; 3.5.3+, when enabled).

        >>> Credentials("iam", secret="KEY").auth("couchdb")
        {'ibm': {'api_key': 'KEY'}}
        """
        if self.kind == "iam":
            return {"ibm" if server == "couchdb" else "iam": {"api_key": self.secret}}
        return {"basic": {"username": self.username, "password": self.secret}}


@dataclass(frozen=True)
class Endpoint:
    """A database as the replicator reaches it: a URL without credentials, and the
    credentials apart.

    >>> e = url_endpoint("https://bob:pw@db.example.com/edge/")
    >>> e
    Endpoint('https://db.example.com/edge', basic auth as 'bob')
    >>> e.body()["auth"]
    {'basic': {'username': 'bob', 'password': 'pw'}}
    """

    url: str
    credentials: Credentials | None = None

    def __repr__(self) -> str:
        who = self.credentials
        if who is None:
            return f"Endpoint({self.url!r})"
        signed = "IAM auth" if who.kind == "iam" else f"basic auth as {who.username!r}"
        return f"Endpoint({self.url!r}, {signed})"

    def body(self, server: ServerKind = "cloudant") -> dict[str, Any]:
        """The endpoint in a replication document on ``server`` (:meth:`Credentials.auth`)."""
        out: dict[str, Any] = {"url": self.url}
        if self.credentials is not None:
            out["auth"] = self.credentials.auth(server)
        return out

    def same_database(self, other: Endpoint) -> bool:
        """Whether both name the same database of the same server, however each is spelt
        (scheme, host, port and path as the server reads them).

        >>> def same(a: str, b: str) -> bool:
        ...     return url_endpoint(a).same_database(url_endpoint(b))
        >>> same("http://127.0.0.1:5984/shop", "HTTP://localhost:5984//x/../sh%6Fp/")
        True
        >>> same("http://127.0.0.1:5984/shop", "http://127.0.0.2:5984/shop")
        False
        """
        return _place(self.url) == _place(other.url)

    def server(self) -> tuple[str, str, int]:
        """``(scheme, host, port)`` of the URL, normalised."""
        return _place(self.url)[:3]

    def secrets(self) -> tuple[str, ...]:
        """The secrets it holds (to keep out of messages)."""
        return (self.credentials.secret,) if self.credentials and self.credentials.secret else ()


def _place(url: str) -> tuple[str, str, int, str]:
    """Where an endpoint's URL leads (:attr:`couchids.core.urls.ParsedUrl.place`)."""
    return parse_url(url, "url", role="database").place


def _signed(parsed: ParsedUrl, fallback: Credentials | None) -> Credentials | None:
    """The basic credentials of a URL's user info, else ``fallback``."""
    if parsed.username is None:
        return fallback
    return Credentials("basic", parsed.username, parsed.password or "")


def url_endpoint(url: str, fallback: Credentials | None = None) -> Endpoint:
    """The endpoint of a database URL (``https://[user:password@]host[:port]/db``, as
    :func:`couchids.core.urls.parse_url` reads it): its user info becomes its
    :class:`Credentials`, else it gets ``fallback``.

    Raises:
        InvalidArgumentError: not such a URL (the message shows it without credentials).
    """
    if not isinstance(url, str):
        raise InvalidArgumentError(f"target={url!r}: give a database name or an http(s) URL")
    parsed = parse_url(url, "target", role="database")
    return Endpoint(parsed.bare, _signed(parsed, fallback))


def server_root(url: str, credentials: Credentials | None) -> tuple[str, Credentials | None]:
    """The service URL without user info and trailing slash, and the credentials to use
    (``credentials`` when given, else the URL's user info).

    Raises:
        InvalidArgumentError: not a service URL (:func:`couchids.core.urls.parse_url`).
    """
    parsed = parse_url(url, "service_url", role="service")
    return parsed.bare, credentials if credentials is not None else _signed(parsed, None)


def database_endpoint(server_url: str, credentials: Credentials | None, db: str) -> Endpoint:
    """The endpoint of database ``db`` on the server at ``server_url`` (see
    :func:`server_root`).

    >>> database_endpoint("http://admin:pw@127.0.0.1:5984/", None, "a/b")
    Endpoint('http://127.0.0.1:5984/a%2Fb', basic auth as 'admin')
    """
    root, found = server_root(server_url, credentials)
    return Endpoint(f"{root}/{quote(check_db(db), safe='')}", found)


def _refuse_source(source: Endpoint, target: Endpoint) -> None:
    if target.same_database(source):
        raise InvalidArgumentError(
            f"target {target.url!r} is the source database itself: replicate to another "
            "database (a name on this server, or a URL)"
        )


def check_target(
    source: Endpoint, target: str, server_url: str, credentials: Credentials | None
) -> Endpoint:
    """The endpoint of ``target`` (a database name on the source's server, or a URL; a URL
    naming no credentials on the source's server gets the source's).

    Raises:
        InvalidArgumentError: not a name or URL, or the source itself under any spelling.
    """
    if isinstance(target, str) and "://" not in target:
        endpoint = database_endpoint(server_url, credentials, check_db(target, "target"))
    else:
        endpoint = url_endpoint(target)
        if endpoint.credentials is None and endpoint.server() == source.server():
            endpoint = Endpoint(endpoint.url, source.credentials)
    _refuse_source(source, endpoint)
    return endpoint


def endpoints(
    service_url: str,
    credentials: Credentials | None,
    db: str,
    target: str,
    server_url: str | None = None,
) -> tuple[Endpoint, Endpoint]:
    """The replicator's endpoints of database ``db`` (the source) and of ``target``
    (:func:`check_target`). The source is on the server at ``server_url`` (where the server
    reaches itself), by default ``service_url``, signed in as its user info says, else as
    the client.

    Raises:
        InvalidArgumentError: a bad ``service_url``, ``server_url`` or ``target``, or a target
            that is the source (nothing is sent).

    >>> server = "http://admin:pw@127.0.0.1:5984"
    >>> endpoints(server, None, "shop", "http://127.0.0.1:5984/edge/")[1]
    Endpoint('http://127.0.0.1:5984/edge', basic auth as 'admin')
    """
    try:
        root, signed = server_root(service_url, credentials)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"replicate on {db!r}: the client's {exc}") from None
    if server_url is not None:
        if not isinstance(server_url, str):
            raise InvalidArgumentError(f"server_url={server_url!r}: give the server's http(s) URL")
        given = parse_url(server_url, "server_url", role="server")
        root, signed = given.root, _signed(given, signed)
    source = database_endpoint(root, signed, db)
    return source, check_target(source, target, root, signed)


# -- the replication document --------------------------------------------------------------------


@dataclass(frozen=True)
class ReplicationPlan:
    """One replication to start: from database ``db`` (reached by the replicator at
    ``source``) to ``target``, of the window's ids.

    ``types`` is a list of types (``None``: untyped ids) or :data:`~couchids.ALL_TYPES`,
    resolved to the types present in ``db`` when it starts.
    """

    db: str
    source: Endpoint
    target: Endpoint
    types: tuple[str | None, ...] | AllTypes
    form: IdForm
    start_ms: int
    end_ms: int
    continuous: bool
    create_target: bool
    doc_id: str

    def document(
        self, types: Sequence[str | None], server: ServerKind = "cloudant"
    ) -> dict[str, Any]:
        """The ``_replicator`` document, for these (resolved) types, as the replicator of
        ``server`` reads it (:meth:`Credentials.auth`)."""
        return {
            "_id": self.doc_id,
            "source": self.source.body(server),
            "target": self.target.body(server),
            "selector": window_selector(types, self.start_ms, self.end_ms, self.form),
            "continuous": self.continuous,
            "create_target": self.create_target,
        }

    def secrets(self) -> tuple[str, ...]:
        return self.source.secrets() + self.target.secrets()


def plan(
    db: str,
    source: Endpoint,
    target: Endpoint,
    start: TimeLike,
    end: TimeLike | None,
    *,
    type: str | AllTypes | Sequence[str | None] | None,
    form: IdForm,
    continuous: bool,
    create_target: bool,
    doc_id: str | None = None,
) -> ReplicationPlan:
    """A checked :class:`ReplicationPlan`; ``end=None`` runs to the last time ``form`` holds.

    Raises:
        InvalidTimeError: unreadable times, or ``end`` before ``start``.
        InvalidTypeError: a bad type.
        InvalidArgumentError: a bad form or flag, or a target that is the source.
    """
    check_time_form(form)
    start_ms, end_ms = check_window(start, end, open_end=True)
    check_flag("continuous", continuous)
    check_flag("create_target", create_target)
    types: tuple[str | None, ...] | AllTypes
    if type is ALL_TYPES:
        types = ALL_TYPES
    elif type is None or isinstance(type, str):
        types = (type,)
    elif isinstance(type, list | tuple):
        types = tuple(type)
    else:
        raise InvalidArgumentError(
            f"type={type!r}: a type (str), a list of types, None or couchids.ALL_TYPES"
        )
    if types is not ALL_TYPES:
        for doc_type in types:
            form.type_prefix(doc_type)  # raises InvalidTypeError
    _refuse_source(source, target)
    return ReplicationPlan(
        db=check_db(db),
        source=source,
        target=target,
        types=types,
        form=form,
        start_ms=start_ms,
        end_ms=end_ms,
        continuous=continuous,
        create_target=create_target,
        doc_id=doc_id if doc_id is not None else new_doc_id(),
    )


def new_doc_id() -> str:
    """A new replication document id, ``couchids-<kuuid id>``: listed in the order started."""
    return "couchids-" + kuuid_id()


# -- the programs --------------------------------------------------------------------------------


def check_server(known: FactsCache, policy: RetryPolicy, db: str) -> Program[ServerKind]:
    """Refuse a server whose replicator cannot run a time window (PouchDB Server's ignores
    a ``selector`` and has no ``_scheduler``), before anything is written; return which it
    is (``"couchdb"`` or ``"cloudant"``)."""
    kind = yield from server_kind(known, policy, db)
    if kind not in ("couchdb", "cloudant"):
        what = "PouchDB Server" if kind == "pouchdb" else "this server (not CouchDB or Cloudant)"
        raise ReplicationFailed(
            f"replicate on {db!r}: {what} cannot replicate a time window: its replicator "
            "ignores a selector and it has no _scheduler to watch a replication; time-window "
            "replication needs Apache CouchDB 2.0+ or IBM Cloudant. Nothing was started."
        )
    return kind


def start(
    known: FactsCache, plans: Sequence[ReplicationPlan], policy: RetryPolicy
) -> Program[list[str]]:
    """Start each plan (a ``_replicator`` document each); return their document ids.

    First the server (:func:`check_server`), the source and, unless ``create_target``, a
    target on the source's server must pass (the replicator would fail the job only after
    this returned); ``ALL_TYPES`` becomes the types present now.

    Raises:
        DatabaseNotFoundError: the source, or a target on its server without
            ``create_target``, does not exist (that plan was not started).
    """
    started: list[str] = []
    for each in plans:
        server = yield from check_server(known, policy, each.db)
        yield from database_facts(known, each.db, policy)
        name = None if each.create_target else local_target(each)
        try:
            if name is not None:
                yield from database_facts(known, name, policy)
        except DatabaseNotFoundError:
            raise DatabaseNotFoundError(
                f"{policy.operation} on {each.db!r}: the target database {name!r} does not "
                "exist and create_target is False (the command's --no-create-target): create it "
                "first, or let the replication create it. Nothing was started.",
                404,
            ) from None
        if each.types is ALL_TYPES:
            types: Sequence[str | None] = yield from types_present(
                each.db, each.form.separator, policy
            )
        else:
            types = each.types
        body = dumps(each.document(types, server))
        put = Request("PUT", path(REPLICATOR_DB, each.doc_id), body=body)
        reply = yield from ask(put, policy, REPLICATOR_DB, expect=(MISSING, CONFLICT))
        if reply is MISSING:
            yield from create_database(known, REPLICATOR_DB, partitioned=False, policy=policy)
            reply = yield from ask(put, policy, REPLICATOR_DB, expect=(CONFLICT,))
        if reply is CONFLICT:  # a retried PUT that met its own first write
            yield from ask(Request("GET", path(REPLICATOR_DB, each.doc_id)), policy, REPLICATOR_DB)
        started.append(each.doc_id)
    return started


def local_target(each: ReplicationPlan) -> str | None:
    """The name of the plan's target database when it is on the source's own server, else
    ``None``.

    >>> from dataclasses import replace
    >>> from couchids.idforms.forms import UTC_RANDOM
    >>> source, target = endpoints("http://127.0.0.1:5984", None, "shop", "shop-edge")
    >>> each = plan("shop", source, target, 0, None, type=None, form=UTC_RANDOM,
    ...             continuous=False, create_target=False)
    >>> local_target(each)
    'shop-edge'
    >>> local_target(replace(each, target=url_endpoint("http://10.0.0.2:5984/shop-edge")))
    """
    *source, source_path = _place(each.source.url)
    *target, target_path = _place(each.target.url)
    root = source_path.removesuffix(each.db)
    if source != target or root + each.db != source_path or not target_path.startswith(root):
        return None
    return target_path[len(root) :]


@dataclass(frozen=True)
class ReplicationStatus:
    """Where a replication stands, as ``_scheduler/docs`` reports it (summed over its
    documents when it has several).

    Attributes:
        state: one of :data:`~couchids.core.replication.STATES`, or ``"cancelled"`` once
            its document is gone. For several documents, the one that matters most:
            ``failed``, then ``crashing``, ``error``, ``initializing``, ``pending``,
            ``running``, ``cancelled``; and ``completed`` only when every one is.
        docs_read, docs_written, doc_write_failures: the replicator's counts so far.
        changes_pending: changes of the source not yet processed (``None`` when not said).
        error: the replicator's last error, if any (credentials masked).
        info: the server's ``info`` object of each document, by document id (credentials
            masked in every text of it).
    """

    state: str
    docs_read: int = 0
    docs_written: int = 0
    doc_write_failures: int = 0
    changes_pending: int | None = None
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict, repr=False)


#: The states from the one that matters least to the one that matters most, when several
#: documents are summed up (another state ranks as ``initializing``).
_RANK: Final = (
    *("completed", CANCELLED, "running", "pending", "initializing"),
    *("error", "crashing", "failed"),
)


def _counts(info: dict[str, Any], keys: Sequence[str] = KEPT_COUNTS) -> dict[str, int]:
    """The counts of ``info`` under ``keys`` (by default those a tombstone keeps)."""
    return {key: n for key in keys if type(n := info.get(key)) is int}


def _doc_status(known: FactsCache, doc_id: str, policy: RetryPolicy) -> Program[dict[str, Any]]:
    """The scheduler's entry of one replication document; ``state`` is ``cancelled`` when the
    document is gone, ``initializing`` while the scheduler has not seen it yet."""
    docs = path("_scheduler", "docs", REPLICATOR_DB, doc_id)
    reply = yield from ask(Request("GET", docs), policy, REPLICATOR_DB, expect=(MISSING,))
    if reply is not MISSING:
        # This document's entry, not a listing (a server or proxy that ignores the id).
        body = expect_object(reply.body, policy, REPLICATOR_DB, sent=reply.sent)
        check_listing(
            "_scheduler/docs",
            [body.get("doc_id")],
            policy,
            REPLICATOR_DB,
            sent=reply.sent,
            noun="the entry of ",
            among={doc_id},
        )
        if body.get("state") is not None:
            return body if body["state"] in STATES else {**body, "state": str(body["state"])}
    # Not in the scheduler (a cluster's may forget a finished one-shot replication), or
    # listed without a state (a cluster's node, for a few seconds after the deletion): the
    # document says how it ended, read from every copy (a plain read may answer a revision
    # from before the deletion).
    leaves = yield from live_leaves(known, REPLICATOR_DB, doc_id, policy)
    if not leaves:
        # Cancelled, or removed by remove_completed(), whose tombstone keeps the counts.
        for entry in (yield from _check_known(known, doc_id, policy)):
            leaf = entry.get("ok") if isinstance(entry, dict) else None
            kept = leaf.get(COMPLETED_FIELD) if isinstance(leaf, dict) else None
            if isinstance(kept, dict) and leaf and leaf.get("_deleted"):
                return {"state": "completed", "info": _counts(kept), "removed": True}
        return {"state": CANCELLED}
    stored = winner(leaves)
    state = stored.get("_replication_state")
    if state not in ("completed", "failed"):
        return {"state": "initializing"}
    info = stored.get("_replication_stats")
    info = dict(info) if isinstance(info, dict) else {}
    if isinstance(stored.get("_replication_state_reason"), str):
        info["error"] = stored["_replication_state_reason"]
    return {"state": state, "info": info}


def _check_known(
    known: FactsCache, doc_id: str, policy: RetryPolicy
) -> Program[list[dict[str, Any]]]:
    """The entries of ``open_revs=all`` of ``doc_id``, read from every copy; a
    :class:`ReplicationFailed` (404) when it was never written (a cancelled one leaves its
    tombstone)."""
    copies = (yield from database_facts(known, REPLICATOR_DB, policy)).copies
    params = {"open_revs": "all", "r": str(copies)}
    read = Request("GET", path(REPLICATOR_DB, doc_id), params)
    reply = yield from ask(read, policy, REPLICATOR_DB, expect=(MISSING,))
    if reply is MISSING or not reply.body:
        raise ReplicationFailed(
            f"{policy.operation}: no replication {doc_id!r} on this server: {REPLICATOR_DB} "
            "holds no document of that id, live or deleted (couchids replicate prints the id "
            "of each replication it starts)",
            404,
        )
    return reply.body if isinstance(reply.body, list) else []


def _delete(
    known: FactsCache, doc_id: str, policy: RetryPolicy, kept: dict[str, Any] | None = None
) -> Program[int | None]:
    """Delete every live revision of ``doc_id`` (read from every copy) round after round, up to
    :data:`CANCEL_ROUNDS`, until none is left: on a cluster the replicator may record the end
    while a deletion spreads. Return how many deletions were taken; with ``kept``, each
    tombstone keeps it, and a document not yet ``completed`` is left (``None``)."""
    deleted = 0
    for _ in range(CANCEL_ROUNDS):
        leaves = yield from live_leaves(known, REPLICATOR_DB, doc_id, policy)
        if not leaves:
            return deleted
        if kept is not None and winner(leaves).get("_replication_state") != "completed":
            return None
        for leaf in leaves:
            if kept is None:
                rev = {"rev": str(leaf["_rev"])}
                request = Request("DELETE", path(REPLICATOR_DB, doc_id), rev)
            else:
                tombstone = {"_id": doc_id, "_rev": leaf["_rev"], "_deleted": True}
                body = dumps({**tombstone, COMPLETED_FIELD: kept})
                request = Request("PUT", path(REPLICATOR_DB, doc_id), body=body)
            reply = yield from ask(request, policy, REPLICATOR_DB, expect=(MISSING, CONFLICT))
            deleted += reply not in (MISSING, CONFLICT)
    raise ReplicationFailed(
        f"{policy.operation}: the replication document {doc_id} still lives after "
        f"{CANCEL_ROUNDS} rounds of deleting its revisions"
    )


def remove_completed(
    known: FactsCache, doc_id: str, info: dict[str, Any], policy: RetryPolicy
) -> Program[bool]:
    """Remove the ``_replicator`` document of a one-shot replication once it records that it
    completed; return whether it is gone. Its tombstones keep the counts (no endpoint nor
    credential): a later :func:`status`, from any process, reads ``completed``, not
    ``cancelled``.

    Raises:
        ReplicationFailed: the document still lives after :data:`CANCEL_ROUNDS` rounds.
    """
    return (yield from _delete(known, doc_id, policy, _counts(info))) is not None


def status(
    known: FactsCache,
    doc_ids: Sequence[str],
    policy: RetryPolicy,
    mask: Callable[[str], str] = str,
    ended: dict[str, dict[str, Any]] | None = None,
) -> Program[ReplicationStatus]:
    """The :class:`ReplicationStatus` of a replication's documents, summed; a document seen
    ``completed`` is removed (:func:`remove_completed`), once.

    ``mask`` masks the credentials in the server's reasons (the handle's masks the replication's
    own where they stand as credentials: a password that is a word of a reason, ``http`` or
    ``db``, must not be masked out of it, which would tell it).

    ``ended`` (the caller's, across calls) remembers the documents seen ``completed`` or
    ``failed``: a cluster's scheduler may forget a finished one before the document records
    its end, which then reads as not yet started.

    Raises:
        ReplicationFailed: (``status`` 404) a document of ``doc_ids`` was never written.
    """
    ended = {} if ended is None else ended
    states: list[str] = []
    errors: list[str] = []
    infos: list[dict[str, Any]] = []  # one for each of doc_ids, as the counts are summed
    for doc_id in doc_ids:
        doc = yield from _doc_status(known, doc_id, policy)
        if doc["state"] in ("completed", "failed"):
            ended[doc_id] = doc
        elif doc["state"] != CANCELLED and doc_id in ended:
            doc = ended[doc_id]
        found = doc.get("info")
        infos.append(info := _masked_json(found, mask) if isinstance(found, dict) else {})
        if doc["state"] == "completed" and not doc.get("removed"):
            doc["removed"] = yield from remove_completed(known, doc_id, info, policy)
        states.append(str(doc["state"]))
        reason = info.get("error") or (found if isinstance(found, str) else None)
        if reason:
            errors.append(mask(str(reason))[:400])
    keys = (*KEPT_COUNTS, "changes_pending")
    counts = [_counts(info, keys) for info in infos]
    total = {key: sum(c.get(key, 0) for c in counts) for key in keys}
    state = max(
        states, key=lambda s: _RANK.index(s if s in _RANK else "initializing"), default=CANCELLED
    )
    return ReplicationStatus(
        state=state,
        docs_read=total["docs_read"],
        docs_written=total["docs_written"],
        doc_write_failures=total["doc_write_failures"],
        changes_pending=total["changes_pending"] if any(keys[-1] in c for c in counts) else None,
        error="; ".join(errors) or None,
        info=dict(zip(doc_ids, infos, strict=True)),
    )


def _masked_json(value: Any, mask: Callable[[str], str]) -> Any:
    """``value`` (the server's JSON) with every string in it masked by ``mask``."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {key: _masked_json(item, mask) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked_json(item, mask) for item in value]
    return value


def wait(
    known: FactsCache,
    doc_ids: Sequence[str],
    *,
    continuous: bool,
    timeout: SecondsLike | None,
    mask: Callable[[str], str] = str,
    ended: dict[str, dict[str, Any]] | None = None,
) -> Program[ReplicationStatus]:
    """The program of :meth:`couchids.Replication.wait` (see there): poll :func:`status`
    until a one-shot replication is ``completed``, a continuous one ``running``. ``timeout``
    bounds every request, retry and pause; without one, each poll still ends within
    ``DEFAULT_TIMEOUT`` seconds."""
    policy = RetryPolicy.within(timeout, "wait")
    ended = {} if ended is None else ended
    pause = FIRST_POLL
    names = ", ".join(doc_ids[:3]) + (f" and {len(doc_ids) - 3} more" if len(doc_ids) > 3 else "")
    what = f"replication {names}"
    while True:
        now = yield from status(known, doc_ids, policy.each_step(DEFAULT_TIMEOUT), mask, ended)
        if now.state == "completed" or (continuous and now.state == "running"):
            return now
        if now.state == "failed":
            raise ReplicationFailed(
                f"{what}: the server gave up on it: {now.error or 'no reason given'}"
            )
        if now.state == CANCELLED:
            raise ReplicationFailed(f"{what}: it was cancelled (its _replicator document is gone)")
        if now.state in TROUBLED and now.error and any(w in now.error for w in LASTING):
            raise ReplicationFailed(
                f"{what} is {now.state}: {now.error} (the server keeps retrying; fix the cause "
                "or cancel() it)"
            )
        left = policy.remaining()
        # A pause that runs to the deadline leaves no time for another poll: this was the last.
        last = left is not None and left <= pause
        yield Sleep.within(policy, pause)
        if last:
            if now.state in TROUBLED:
                reason = now.error or "no reason given"
                raise ReplicationFailed(f"{what} is still {now.state} after {timeout:g}s: {reason}")
            raise ServerTimeoutError(
                f"{what} is still {now.state} after {timeout:g}s ({now.docs_written} documents "
                "written so far); it goes on: wait() again, or cancel() it",
                0,
            )
        pause = min(pause * 1.5, LONGEST_POLL)


def cancel(known: FactsCache, doc_ids: Sequence[str], policy: RetryPolicy) -> Program[bool]:
    """The program of :meth:`couchids.Replication.cancel` (see there): delete each document.

    Raises:
        ReplicationFailed: a document still lives after :data:`CANCEL_ROUNDS` rounds, or
            (``status`` 404) a document of ``doc_ids`` was never written.
    """
    found = False
    for doc_id in doc_ids:
        if (yield from _delete(known, doc_id, policy)):
            found = True
        else:
            yield from _check_known(known, doc_id, policy)
    return found
