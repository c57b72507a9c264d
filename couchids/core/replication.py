"""Time-window replication: the selector of a window, the replication document, and the
programs that start, watch and cancel it (:meth:`couchids.Database.replicate`).

CouchDB 2+ replication takes a Mango ``selector``, applied on the server to each change of
the source's ``_changes`` feed. couchids builds the selector of "the ids of these types and
this form made in ``[start, end)``" from the same key ranges its queries read
(``couchids.core.keys.window_keys``: ``low <= id < high`` in ``_all_docs`` order).

**Why a regular expression, not ``$gte``/``$lt``.** The replicator matches a selector with
``mango_selector:match/3``, which compares values with ``mango_json:cmp/2``: ICU collation,
in which ``a`` sorts before ``A`` before ``b``, not the code-point order of ``_all_docs``.
CouchDB 3.4.3 makes an exception for the ``_id`` field, which it compares raw
(``mango_json:cmp_raw/2``, ``mango_selector.erl``), and a ``$gte``/``$lt`` window over
mixed-case kuuid ids was copied exactly there (checked: ``tests/test_replication.py`` passes
with such a selector). couchids does not lean on that exception, which other servers and
versions need not share: ``$regex`` is run by Erlang's ``re`` on the id's UTF-8 bytes with
no options (Latin-1 mode: a pattern byte is a subject byte), and UTF-8's byte order is
code-point order, so a regex is exact under either comparison. Each type's range becomes a
regex that matches exactly the strings ``s`` with ``low <= s < high`` (:func:`range_regex`),
and a second one keeps only ids of the form (:func:`shape_regex`), which is what
:meth:`~couchids.Database.window` keeps too (foreign ids inside a key range, and, for untyped
ids, typed ids and design documents). The patterns use only what PCRE and Python's ``re``
(on ``bytes``) read alike: ``^``, ``(?:…)``, ``(?!…)``, ``|``, byte classes
``[\\x00-\\x2f]`` and ``\\xHH`` escapes (every byte but an ASCII letter or digit is
escaped), ``{n}``; the end of the id is ``(?![\\x00-\\xff])`` ("no byte follows"), since
``$`` and ``\\Z`` also match before a final newline in PCRE.

**Why ``_replicator`` documents, not ``POST /_replicate``.** A replication is a document
``couchids-<kuuid id>`` in the server's ``_replicator`` database:

- it survives a restart of the server (``_replicate`` jobs are transient) and runs whether
  or not the caller stays connected: ``POST /_replicate`` holds its request open until a
  one-shot replication ends, which outlives any sensible HTTP timeout for a large window;
- ``GET /_scheduler/docs/_replicator/<id>`` reports its state and statistics at any time
  (initializing, running, pending, crashing, error, failed, completed), from any process;
- deleting the document cancels it, whoever does it and whenever;
- a one-shot replication's document is removed once it completed (:func:`remove_completed`,
  from :func:`status`): a ``_replicator`` of thousands of finished replications would slow
  every listing of it, and their documents hold the endpoints' credentials.

The price is a poll for the end of a one-shot replication, which adds up to one poll
interval (0.25 s at first, growing to 1 s). Measured with ``bench/bench_replication.py`` on
CouchDB 3.4.3, one node on loopback, 2000 orders and 2000 clicks, a window of 1000 orders,
medians of 7 interleaved rounds on a busy 2-core machine: ``POST /_replicate`` answered after
5.2 s, a ``_replicator`` document was seen ``completed`` after 6.2 s (1.19x); polling every
0.25 s throughout, 3.3 s against 3.6 s (0.94x): the replication itself takes as long either
way, the difference is the poll interval.

CouchDB 3 wants URLs, not bare names, as the endpoints of a ``_replicator`` document
(apache/couchdb#2089), so couchids builds them from the client's service URL (or the
``server_url`` it is given): the server must reach itself there.

**Credentials** never travel in a URL: the user info of a URL, and the client's own basic or
CouchDB-session credentials, go into the endpoint's ``auth`` object
(``{"url": ..., "auth": {"basic": {"username": ..., "password": ...}}}``, apache/couchdb#3599).
A client signed in with IAM (``CLOUDANT_AUTH_TYPE=iam``, an ``IAMAuthenticator``) gives its
API key to the replicator, which gets its own tokens with it. The ``auth`` object that holds
it is read by the replicator of the server that runs the replication (the client's), so
couchids writes the one that server reads, by the welcome it answered
(``couchids.core.counting.server_kind``):

- IBM Cloudant: ``{"auth": {"iam": {"api_key": ...}}}``, the replication document's
  ``ReplicationDatabaseAuthIam`` of Cloudant's API reference
  (https://cloud.ibm.com/apidocs/cloudant, "Create or modify a replication"; its SDKs build it,
  e.g. ``ReplicationDatabaseAuth(iam=ReplicationDatabaseAuthIam(api_key=...))``).
- Apache CouchDB: ``{"auth": {"ibm": {"api_key": ...}}}``: CouchDB's IAM plugin
  (``couch_replicator_auth_ibm``, apache/couchdb ``src/couch_replicator/src/
  couch_replicator_auth_ibm.erl``, ``extract_api_key/1``) reads ``auth.ibm.api_key`` and
  nothing under ``iam``; a CouchDB without that plugin (before 3.5.3, or with it not enabled
  in ``[replicator] auth_plugins``) ignores it, and the replication crashes as unauthorized
  (:func:`wait` says so).

The ``_replicator`` document must hold the secret for the replicator to use it: whoever may
read ``_replicator`` sees it, as with basic credentials. An :class:`Endpoint`'s repr and every
message show the URL alone.

Pure: no I/O; the drivers send what these programs ask (:mod:`couchids.core.effects`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from couchids.core.alltypes import types_present
from couchids.core.answers import check_listing, expect_object
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
from couchids.core.urls import parse_url
from couchids.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    ReplicationFailed,
    ServerTimeoutError,
)
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import IdForm
from couchids.idforms.kuuid import id as kuuid_id
from couchids.idforms.times import TimeLike

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
STATES: Final = (
    "initializing",
    "running",
    "pending",
    "crashing",
    "error",
    "failed",
    "completed",
)
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
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
#: How a host that names this machine's loopback interface (``localhost``, ``127.0.0.1``,
#: ``::1``, in any spelling) reads when endpoints are compared: ``localhost:5984`` and
#: ``127.0.0.1:5984`` are the same server.
_LOOPBACK: Final = "127.0.0.1"


# -- the selector --------------------------------------------------------------------------------


def _byte(b: int) -> str:
    """Byte ``b`` in a pattern: itself if an ASCII letter or digit, else ``\\xHH``."""
    char = chr(b)
    return char if char.isascii() and char.isalnum() else f"\\x{b:02x}"


def _klass(first: int, last: int) -> str | None:
    """The bytes ``first..last`` as a pattern, or ``None`` when there are none."""
    if first > last:
        return None
    if first == last:
        return _byte(first)
    return f"[{_byte(first)}-{_byte(last)}]"


def _either(options: list[str]) -> str:
    """A pattern matching what any of ``options`` matches (nothing for none)."""
    if not options:
        return NOTHING
    return options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"


def _at_least(low: bytes) -> list[str]:
    """Alternatives for the byte strings ``t >= low`` (what follows is free)."""
    if not low:
        return [""]
    rest = _at_least(low[1:])
    options = [_byte(low[0]) + _either(rest) if rest != [""] else _byte(low[0])]
    above = _klass(low[0] + 1, 0xFF)
    if above is not None:
        options.append(above)
    return options


def _below(high: bytes) -> list[str]:
    """Alternatives for the byte strings ``t < high``: a proper prefix of ``high`` (the empty
    string too) or a smaller byte where they first differ."""
    if not high:
        return []
    options = [END]
    under = _klass(0, high[0] - 1)
    if under is not None:
        options.append(under)
    rest = _below(high[1:])
    if rest:
        options.append(_byte(high[0]) + _either(rest))
    return options


def _between(low: bytes, high: bytes) -> list[str]:
    """Alternatives for the byte strings ``low <= t < high``."""
    if not high:
        return []
    if not low:
        return _below(high)
    if low[0] == high[0]:
        rest = _between(low[1:], high[1:])
        return [_byte(low[0]) + _either(rest)] if rest else []
    if low[0] > high[0]:
        return []
    options = []
    rest = _at_least(low[1:])
    options.append(_byte(low[0]) + (_either(rest) if rest != [""] else ""))
    middle = _klass(low[0] + 1, high[0] - 1)
    if middle is not None:
        options.append(middle)
    under = _below(high[1:])
    if under:
        options.append(_byte(high[0]) + _either(under))
    return options


def range_regex(low: str, high: str) -> str:
    """A regex matching exactly the strings ``s`` with ``low <= s < high`` in code-point order
    (the order of ``_all_docs`` and of Python's ``str``), read on the UTF-8 bytes of ``s``.

    It is what CouchDB's ``$regex`` does with an id (Erlang's ``re`` on the id's bytes, no
    options), and what Python's ``re`` does with a ``bytes`` pattern and subject; see the
    module docstring for the subset of the syntax it keeps to.

    >>> import re
    >>> pattern = re.compile(range_regex("user:001e", "user:001f").encode())
    >>> [bool(pattern.match(s.encode())) for s in ("user:001e", "user:001eZ", "user:001f")]
    [True, True, False]
    >>> range_regex("a", "c")
    '^(?:a|b)'
    """
    return "^" + _either(_between(low.encode(), high.encode()))


def shape_regex(form: IdForm, prefix: str) -> str:
    """A regex matching ``prefix`` followed by a whole id of ``form``, on UTF-8 bytes (the
    form's own pattern, anchored at both ends; ``\\Z`` becomes "no byte follows").

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
    clauses = []
    for doc_type in dict.fromkeys(types):
        keys = window_keys(form, doc_type, start_ms, end_ms)
        if keys is None:
            continue
        clauses.append(
            {
                "$and": [
                    {"_id": {"$regex": range_regex(keys.low, keys.high)}},
                    {"_id": {"$regex": shape_regex(form, keys.prefix)}},
                ]
            }
        )
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
        runs the replication) reads it: an API key under ``iam`` for Cloudant, under ``ibm``
        for Apache CouchDB's ``couch_replicator_auth_ibm`` (see the module docstring).

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
        """The endpoint as a replication document on ``server`` gives it
        (:meth:`Credentials.auth`)."""
        out: dict[str, Any] = {"url": self.url}
        if self.credentials is not None:
            out["auth"] = self.credentials.auth(server)
        return out

    def same_database(self, other: Endpoint) -> bool:
        """Whether both name the same database of the same server, however each is spelt:
        scheme and host compared case-insensitively, default ports filled in, an IP address
        in any of its spellings and the loopback's names (``localhost``, ``127.0.0.1``,
        ``::1``) as one host, and the paths as a server reads them (``_database_path``:
        ``//db``, ``/./db``, ``/x/../db``, ``/d%62`` and ``/db/`` are all ``db``).

        >>> def same(a: str, b: str) -> bool:
        ...     return url_endpoint(a).same_database(url_endpoint(b))
        >>> same("http://127.0.0.1:5984/shop", "HTTP://localhost:5984//x/../sh%6Fp/")
        True
        >>> same("http://127.0.0.1:5984/shop", "http://127.0.0.2:5984/shop")
        False
        """
        return _normalised(self.url) == _normalised(other.url)

    def server(self) -> tuple[str, str, int]:
        """``(scheme, host, port)`` of the URL, normalised."""
        return _normalised(self.url)[:3]

    def secrets(self) -> tuple[str, ...]:
        """The secrets it holds (to keep out of messages)."""
        return (self.credentials.secret,) if self.credentials and self.credentials.secret else ()


def _normalised(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, database path)`` of ``url``, each as the server reads it."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    return scheme, _host(parts.hostname or ""), port, _database_path(parts.path)


def _host(name: str) -> str:
    """A URL's host as one spelling: lower case, without the dot that ends a fully qualified
    name, an IPv4 address in dotted decimal (``127.1``, ``0x7f.0.0.1`` and ``2130706433`` are
    ``127.0.0.1``, as URL parsers and Erlang's ``inet`` read them), an IPv6 address
    compressed (an IPv4-mapped one as its IPv4 address), and every name of the loopback
    interface as :data:`_LOOPBACK`.

    >>> [_host(h) for h in ("LOCALHOST.", "0:0:0:0:0:0:0:1", "::ffff:7f00:1", "127.1")]
    ['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']
    >>> [_host(h) for h in ("Db.Example.COM", "127.0.0.2", "0x0a.1", "2001:DB8::0:1")]
    ['db.example.com', '127.0.0.2', '10.0.0.1', '2001:db8::1']
    """
    host = unquote(name).lower()
    host = host[:-1] if host.endswith(".") else host
    if host == "localhost" or host.endswith(".localhost"):
        return _LOOPBACK
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = _ipv4(host)
    if address is None:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address in (ipaddress.IPv4Address(_LOOPBACK), ipaddress.IPv6Address("::1")):
        return _LOOPBACK
    return address.compressed


def _ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address of a host written in the short or numeric forms URL parsers accept
    (one to four parts, each decimal, ``0x`` hex or ``0`` octal; the last part fills the
    bytes left), or ``None`` when it is a name."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = []
    for part in parts:
        base, digits = 10, part
        if part[:2] == "0x":
            base, digits = 16, part[2:] or "0"
        elif len(part) > 1 and part[0] == "0":
            base, digits = 8, part[1:]
        try:
            numbers.append(int(digits, base) if digits.isascii() and digits.isalnum() else -1)
        except ValueError:
            return None
    *head, last = numbers
    if any(not 0 <= n <= 255 for n in head) or not 0 <= last < 256 ** (5 - len(numbers)):
        return None
    value = last
    for at, number in enumerate(head):
        value += number << (8 * (3 - at))
    return ipaddress.IPv4Address(value)


def _database_path(path: str) -> str:
    """A URL's path as CouchDB reads it, to compare two databases: percent-decoded (``%2F``
    too, so that a name holding ``/`` is compared whole), then split on ``/`` with the empty
    and ``.`` segments dropped and each ``..`` dropping the segment before it (RFC 3986's dot
    segments, which HTTP clients resolve; CouchDB reads ``//db`` as ``db``).

    >>> [_database_path(p) for p in ("/shop/", "//shop", "/./shop", "/x/../shop", "/%73hop")]
    ['shop', 'shop', 'shop', 'shop', 'shop']
    >>> _database_path("/couch/a%2Fb"), _database_path("/a/b")
    ('couch/a/b', 'a/b')
    """
    segments: list[str] = []
    for segment in unquote(path).split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    return "/".join(segments)


def url_endpoint(url: str, fallback: Credentials | None = None) -> Endpoint:
    """The endpoint of a database URL (``https://[user:password@]host[:port]/db``): its user
    info, percent-decoded, becomes its :class:`Credentials`; without user info it gets
    ``fallback``. The URL is read by :func:`couchids.core.urls.parse_url`: query and fragment
    are refused, and so is a path that is no database name, a user name or password holding
    a reserved character unencoded, and a host or port that is not one.

    Raises:
        InvalidArgumentError: not such a URL (the message shows it without credentials).
    """
    if not isinstance(url, str):
        raise InvalidArgumentError(f"target={url!r}: give a database name or an http(s) URL")
    parsed = parse_url(url, "target", role="database")
    credentials = fallback
    if parsed.username is not None:
        credentials = Credentials("basic", parsed.username, parsed.password or "")
    return Endpoint(parsed.bare, credentials)


def server_root(url: str, credentials: Credentials | None) -> tuple[str, Credentials | None]:
    """The service URL without user info and trailing slash, and the credentials to use
    (``credentials`` when given, else the URL's user info)."""
    parts = urlsplit(url)
    info, at, host = parts.netloc.rpartition("@")
    if at and credentials is None:
        user, _, password = info.partition(":")
        credentials = Credentials("basic", unquote(user), unquote(password))
    root = urlunsplit((parts.scheme.lower(), host, parts.path.rstrip("/"), "", ""))
    return root, credentials


def database_endpoint(server_url: str, credentials: Credentials | None, db: str) -> Endpoint:
    """The endpoint of database ``db`` on the server at ``server_url`` (a service URL, user
    info moved into the credentials when no ``credentials`` are given).

    >>> database_endpoint("http://admin:pw@127.0.0.1:5984/", None, "a/b")
    Endpoint('http://127.0.0.1:5984/a%2Fb', basic auth as 'admin')
    """
    root, found = server_root(server_url, credentials)
    return Endpoint(f"{root}/{quote(check_db(db), safe='')}", found)


def check_target(
    source: Endpoint, target: str, server_url: str, credentials: Credentials | None
) -> Endpoint:
    """The endpoint of ``target`` (a database name on the source's server, or a URL), refused
    when it is the source itself under any spelling.

    A URL naming no credentials on the source's own server (same scheme, host and port) gets
    the source's.

    Raises:
        InvalidArgumentError: not a name or URL, or the source itself.
    """
    if isinstance(target, str) and "://" not in target:
        endpoint = database_endpoint(server_url, credentials, check_db(target, "target"))
    else:
        endpoint = url_endpoint(target)
        if endpoint.credentials is None and endpoint.server() == source.server():
            endpoint = Endpoint(endpoint.url, source.credentials)
    if endpoint.same_database(source):
        raise InvalidArgumentError(
            f"target {endpoint.url!r} is the source database itself: replicate to another "
            "database (a name on this server, or a URL)"
        )
    return endpoint


def endpoints(
    service_url: str,
    credentials: Credentials | None,
    db: str,
    target: str,
    server_url: str | None = None,
) -> tuple[Endpoint, Endpoint]:
    """The replicator's endpoints of database ``db`` (the source) and of ``target``.

    The source is ``db`` on the server at ``server_url`` (the URL the server reaches itself
    at), by default the client's ``service_url``. Its credentials are the user info of
    ``server_url`` if it has some, else the client's (``credentials``, or the user info of
    ``service_url``). ``target`` is checked by :func:`check_target`.

    Raises:
        InvalidArgumentError: a bad ``server_url`` or ``target``, or a target that is the
            source under any spelling (nothing is sent).

    >>> server = "http://admin:pw@127.0.0.1:5984"
    >>> source, target = endpoints(server, None, "shop", "http://127.0.0.1:5984/edge/")
    >>> source
    Endpoint('http://127.0.0.1:5984/shop', basic auth as 'admin')
    >>> target
    Endpoint('http://127.0.0.1:5984/edge', basic auth as 'admin')
    """
    root, signed = server_root(service_url, credentials)
    if server_url is not None:
        if not isinstance(server_url, str):
            raise InvalidArgumentError(f"server_url={server_url!r}: give the server's http(s) URL")
        given = parse_url(server_url, "server_url", role="server")
        root = given.root
        if given.username is not None:
            signed = Credentials("basic", given.username, given.password or "")
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
    for name, flag in (("continuous", continuous), ("create_target", create_target)):
        if not isinstance(flag, bool):
            raise InvalidArgumentError(f"{name}={flag!r}: must be True or False")
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
    if source.same_database(target):
        raise InvalidArgumentError(
            f"target {target.url!r} is the source database itself: replicate to another database"
        )
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
    """A new replication document id, ``couchids-<kuuid id>``: time-sortable, so the
    replications couchids started list in the order they were started."""
    return "couchids-" + kuuid_id()


# -- the programs --------------------------------------------------------------------------------


def _hide(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


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

    Several plans (say, each period database of a series into one target, each made by
    :func:`plan` with its own source) start one after the other, and one handle watches them
    all (``couchids.aio.AsyncReplication(client, plans)``).

    The server is checked first (:func:`check_server`), then that each source database
    exists (a missing one starts nothing: ``DatabaseNotFoundError``, rather than a
    replication that crashes on the server), and, with ``create_target=False``, that a
    target on the source's server exists too (``check_target_exists``; a target on
    another server is the replicator's to reach); ``ALL_TYPES`` is resolved for each source
    database to the types present now (a continuous replication keeps to those).
    A missing ``_replicator`` database is created (CouchDB makes it at start-up; an admin
    may have deleted it).
    """
    started: list[str] = []
    for each in plans:
        server = yield from check_server(known, policy, each.db)
        yield from database_facts(known, each.db, policy)
        if not each.create_target:
            yield from check_target_exists(known, each, policy)
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
            made = Request("PUT", path(REPLICATOR_DB))
            yield from ask(made, policy, REPLICATOR_DB, expect=(CONFLICT,))
            reply = yield from ask(put, policy, REPLICATOR_DB, expect=(CONFLICT,))
        if reply is CONFLICT:  # a retried PUT that met its own first write
            yield from ask(Request("GET", path(REPLICATOR_DB, each.doc_id)), policy, REPLICATOR_DB)
        started.append(each.doc_id)
    return started


def local_target(each: ReplicationPlan) -> str | None:
    """The name of the plan's target database when it is on the source's own server (the
    client's, reached at the same root), else ``None``.

    >>> from dataclasses import replace
    >>> from couchids.idforms.forms import UTC_RANDOM
    >>> source, target = endpoints("http://127.0.0.1:5984", None, "shop", "shop-edge")
    >>> each = plan("shop", source, target, 0, None, type=None, form=UTC_RANDOM,
    ...             continuous=False, create_target=False)
    >>> local_target(each)
    'shop-edge'
    >>> local_target(replace(each, target=url_endpoint("http://10.0.0.2:5984/shop-edge")))
    """
    if each.target.server() != each.source.server():
        return None
    source_path = _normalised(each.source.url)[3]
    root = source_path[: len(source_path) - len(each.db)]
    target_path = _normalised(each.target.url)[3]
    if not source_path.endswith(each.db) or not target_path.startswith(root):
        return None
    return target_path[len(root) :]


def check_target_exists(
    known: FactsCache, each: ReplicationPlan, policy: RetryPolicy
) -> Program[None]:
    """With ``create_target=False``, refuse a target database on the source's server that
    does not exist, before the ``_replicator`` document is written: the replicator would
    only fail the job there (``db_not_found``), after the call returned.

    Raises:
        DatabaseNotFoundError: the target does not exist (nothing was started).
    """
    name = local_target(each)
    if name is None:
        return
    try:
        yield from database_facts(known, name, policy)
    except DatabaseNotFoundError:
        raise DatabaseNotFoundError(
            f"{policy.operation} on {each.db!r}: the target database {name!r} does not exist "
            "and create_target is False (the command's --no-create-target): create it first, "
            "or let the replication create it. Nothing was started.",
            404,
        ) from None


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
        info: the server's ``info`` object of each document, by document id.
    """

    state: str
    docs_read: int = 0
    docs_written: int = 0
    doc_write_failures: int = 0
    changes_pending: int | None = None
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict, repr=False)


#: How much each state matters when several documents are summed up (lowest first).
_RANK: Final = {
    "completed": 0,
    CANCELLED: 1,
    "running": 2,
    "pending": 3,
    "initializing": 4,
    "error": 5,
    "crashing": 6,
    "failed": 7,
}


def _count(info: dict[str, Any], key: str) -> int:
    value = info.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _doc_status(known: FactsCache, doc_id: str, policy: RetryPolicy) -> Program[dict[str, Any]]:
    """The scheduler's view of one replication document, with ``state`` ``cancelled`` when
    the document is gone and ``initializing`` while the scheduler has not seen it yet.

    Whether the document lives is read from every copy
    (:func:`~couchids.core.revisions.live_leaves`): on a cluster a plain read may still
    answer a revision from before the deletion."""
    docs = path("_scheduler", "docs", REPLICATOR_DB, doc_id)
    reply = yield from ask(Request("GET", docs), policy, REPLICATOR_DB, expect=(MISSING,))
    if reply is not MISSING:
        # The answer is this document's entry, not another's nor a listing of them all (a
        # server or proxy that ignores the document id in the path).
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
    # Not (or no longer) in the scheduler, or listed without a state (a cluster's node lists
    # a document deleted a moment ago so for a few seconds): the document says how it ended,
    # if it did (CouchDB records a final state in it; on a cluster the scheduler may forget a
    # completed one-shot replication).
    leaves = yield from live_leaves(known, REPLICATOR_DB, doc_id, policy)
    if not leaves:
        gone = yield from _check_known(known, doc_id, policy)
        return _removed_completed(gone) or {"state": CANCELLED}
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
    """Refuse ``doc_id`` when no replication document of that id was ever written: a
    cancelled one leaves its deletion (a tombstone) in ``_replicator``, an unknown id (a
    typo, another server) nothing, and is never reported as ``cancelled``. Returns the
    leaf revisions read (the entries of ``open_revs=all``).

    ``GET /_replicator/{doc_id}?open_revs=all`` from every copy: ``404 missing`` when the id
    has no revision at all, the tombstone when it was deleted.

    Raises:
        ReplicationFailed: (``status`` 404) no document of that id was ever written.
    """
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


def _removed_completed(leaves: list[Any]) -> dict[str, Any] | None:
    """How a replication ended, from the deletion :func:`remove_completed` wrote (it keeps
    :data:`COMPLETED_FIELD`), or ``None`` (the document was cancelled)."""
    for entry in leaves:
        leaf = entry.get("ok") if isinstance(entry, dict) else None
        kept = leaf.get(COMPLETED_FIELD) if isinstance(leaf, dict) else None
        if leaf is not None and leaf.get("_deleted") and isinstance(kept, dict):
            counts = {name: kept[name] for name in KEPT_COUNTS if isinstance(kept.get(name), int)}
            return {"state": "completed", "info": counts, "removed": True}
    return None


def remove_completed(
    known: FactsCache, doc_id: str, info: dict[str, Any], policy: RetryPolicy
) -> Program[bool]:
    """Remove the ``_replicator`` document of a one-shot replication that completed, once
    the document records it (``_replication_state: completed``); return whether it is gone.

    Each live revision is deleted by a tombstone that keeps the replication's counts
    (:data:`COMPLETED_FIELD`, no endpoint nor credential): a later :func:`status`, from any
    process, still reads ``completed`` and its counts, where a cancelled one reads
    ``cancelled``. A document that does not yet record its end (on a cluster the scheduler
    may report it first) is left for a later call: deleting it then would race the
    replicator's own write of the end, which would bring it back.

    Raises:
        ReplicationFailed: the document still lives after :data:`CANCEL_ROUNDS` rounds.
    """
    kept = {name: info[name] for name in KEPT_COUNTS if isinstance(info.get(name), int)}
    for _ in range(CANCEL_ROUNDS):
        leaves = yield from live_leaves(known, REPLICATOR_DB, doc_id, policy)
        if not leaves:
            return True
        if winner(leaves).get("_replication_state") != "completed":
            return False
        for leaf in leaves:
            tombstone = {
                "_id": doc_id,
                "_rev": leaf["_rev"],
                "_deleted": True,
                COMPLETED_FIELD: kept,
            }
            put = Request("PUT", path(REPLICATOR_DB, doc_id), body=dumps(tombstone))
            yield from ask(put, policy, REPLICATOR_DB, expect=(MISSING, CONFLICT))
    raise ReplicationFailed(
        f"{policy.operation}: the completed replication's document {doc_id} still lives after "
        f"{CANCEL_ROUNDS} rounds of deleting its revisions"
    )


def status(
    known: FactsCache,
    doc_ids: Sequence[str],
    policy: RetryPolicy,
    secrets: Sequence[str] = (),
    ended: dict[str, dict[str, Any]] | None = None,
) -> Program[ReplicationStatus]:
    """The :class:`ReplicationStatus` of a replication's documents (one request each, two for
    a document the scheduler does not list).

    ``ended`` (kept by the caller across calls) remembers the documents seen ``completed`` or
    ``failed``: on a cluster the scheduler may forget a finished one-shot replication before
    the replicator has recorded its end in the document, which then reads as not yet
    started. A moment after :func:`cancel`, a cluster's scheduler may still list the document
    it deleted. A document seen ``completed`` is removed (:func:`remove_completed`), once.

    Raises:
        ReplicationFailed: (``status`` 404) a document of ``doc_ids`` was never written (an
            unknown id is not a cancelled replication).
    """
    ended = {} if ended is None else ended
    states: list[str] = []
    read = written = failures = 0
    pending: int | None = None
    errors: list[str] = []
    infos: dict[str, Any] = {}
    for doc_id in doc_ids:
        doc = yield from _doc_status(known, doc_id, policy)
        if doc["state"] in ("completed", "failed"):
            ended[doc_id] = doc
        elif doc["state"] != CANCELLED and doc_id in ended:
            doc = ended[doc_id]
        found = doc.get("info")
        info: dict[str, Any] = found if isinstance(found, dict) else {}
        if doc["state"] == "completed" and not doc.get("removed"):
            doc["removed"] = yield from remove_completed(known, doc_id, info, policy)
        states.append(str(doc["state"]))
        read += _count(info, "docs_read")
        written += _count(info, "docs_written")
        failures += _count(info, "doc_write_failures")
        if isinstance(info.get("changes_pending"), int):
            pending = (pending or 0) + info["changes_pending"]
        reason = info.get("error") or (
            doc.get("info") if isinstance(doc.get("info"), str) else None
        )
        if reason:
            errors.append(_hide(str(reason), secrets)[:400])
        infos[doc_id] = info
    state = max(states, key=lambda s: _RANK.get(s, 4)) if states else CANCELLED
    if states and all(s == "completed" for s in states):
        state = "completed"
    return ReplicationStatus(
        state=state,
        docs_read=read,
        docs_written=written,
        doc_write_failures=failures,
        changes_pending=pending,
        error="; ".join(errors) or None,
        info=infos,
    )


def wait(
    known: FactsCache,
    doc_ids: Sequence[str],
    *,
    continuous: bool,
    timeout: float | None,
    secrets: Sequence[str] = (),
    ended: dict[str, dict[str, Any]] | None = None,
) -> Program[ReplicationStatus]:
    """Poll until the replication is done (one-shot: ``completed``; continuous: ``running``,
    its first pass under way); return its status.

    ``timeout`` is one deadline for the whole wait: every request of every poll, its retries
    and every pause between polls end by it. Without one, each poll (its requests and their
    retries) still ends within ``DEFAULT_TIMEOUT`` (60) seconds.

    Raises:
        ReplicationFailed: the server gave up (``failed``), the replication was cancelled, or
            it is crashing with an error its retries do not mend (a database not found,
            credentials refused), or still crashing when ``timeout`` ran out.
        ServerTimeoutError: ``timeout`` ran out while it was still on its way.
    """
    policy = RetryPolicy.within(timeout, "wait")
    ended = {} if ended is None else ended
    pause = FIRST_POLL
    while True:
        now = yield from status(known, doc_ids, policy.each_step(DEFAULT_TIMEOUT), secrets, ended)
        what = _what(doc_ids)
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


def _what(doc_ids: Sequence[str]) -> str:
    names = ", ".join(doc_ids[:3]) + (f" and {len(doc_ids) - 3} more" if len(doc_ids) > 3 else "")
    return f"replication {names}"


def cancel(known: FactsCache, doc_ids: Sequence[str], policy: RetryPolicy) -> Program[bool]:
    """Delete each replication document (the replicator stops its job); return whether any
    was still there. Idempotent: a document already deleted is no error, but an id no
    document ever had is (``ReplicationFailed``, status 404).

    Every live revision is deleted, read from every copy
    (:func:`~couchids.core.revisions.live_leaves`): on a cluster the replicator may record a
    one-shot replication's end in its document while the deletion reaches other copies, and
    the two revisions then conflict; the live one would win and bring the document back.

    Raises:
        ReplicationFailed: a document still lives after :data:`CANCEL_ROUNDS` rounds, or
            (``status`` 404) a document of ``doc_ids`` was never written.
    """
    found = False
    for doc_id in doc_ids:
        for attempt in range(CANCEL_ROUNDS):
            leaves = yield from live_leaves(known, REPLICATOR_DB, doc_id, policy)
            if not leaves:
                if not attempt:
                    yield from _check_known(known, doc_id, policy)
                break
            for leaf in leaves:
                gone = yield from ask(
                    Request("DELETE", path(REPLICATOR_DB, doc_id), {"rev": str(leaf["_rev"])}),
                    policy,
                    REPLICATOR_DB,
                    expect=(MISSING, CONFLICT),
                )
                found = found or gone not in (MISSING, CONFLICT)
        else:
            raise ReplicationFailed(
                f"cancel: the replication document {doc_id} still lives after "
                f"{CANCEL_ROUNDS} rounds of deleting its revisions"
            )
    return found
