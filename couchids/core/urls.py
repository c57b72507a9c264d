"""Reading a URL couchids is given (a server's, or a database's for a replication), once,
before anything is sent: :func:`parse_url`.

``urlsplit`` and ``requests`` end the host at the first ``/``, ``?`` or ``#``: a password
holding one unencoded (``http://bob:pa/ss@host``) would send the request to the host ``pa``
and show the rest of the password in the path. RFC 3986 (3.2.1) allows none of
``@ : / ? # [ ]`` or a space in user info except percent-encoded, so such a URL is refused,
with messages that show none of the user info (:func:`shown`). Two URLs of one database,
however spelt, have one ``place``.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import unquote

from couchids.errors import InvalidArgumentError

__all__ = ["SCHEMES", "ParsedUrl", "parse_url", "shown"]

#: The schemes a server speaks, and the port of each when a URL names none.
SCHEMES: Final = ("http", "https")
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
#: Every name of the loopback interface reads as this when URLs are compared.
_LOOPBACK: Final = "127.0.0.1"
#: What a user name or password must not hold unencoded, in words for messages.
_RESERVED_WORDS: Final = "@ : / ? # [ ] %, a space"
# A user name or password: no gen-delim of RFC 3986 but the ":" between them, no space or
# control character, and a "%" only as the start of an escape.
_BAD_USER_INFO: Final = re.compile(r"[@:/?#\[\]\s\x00-\x1f\x7f]|%(?![0-9A-Fa-f]{2})")
# A host name: labels of letters, digits, "-" and "_" (names such as docker's), dot-separated.
_HOST_NAME: Final = re.compile(r"[\w-]+(?:\.[\w-]+)*\.?")
_PORT: Final = re.compile(r"[0-9]{1,5}")


@dataclass(frozen=True, slots=True)
class ParsedUrl:
    """A URL couchids accepted: ``scheme`` (lower-case), ``host`` (and port) as written,
    ``hostname`` (lower-case, no brackets), ``port`` (``None``: not written), ``path`` as
    written, and the user info percent-decoded (``None``: not given)."""

    scheme: str
    host: str
    hostname: str
    port: int | None
    path: str
    username: str | None = None
    password: str | None = None

    def __repr__(self) -> str:
        who = "" if self.username is None else f", user {self.username!r}"
        return f"ParsedUrl({self.bare!r}{who})"

    @property
    def root(self) -> str:
        """``scheme://host[:port]``: the server, without user info or path."""
        return f"{self.scheme}://{self.host}"

    @property
    def bare(self) -> str:
        """The URL without user info, its path without trailing slashes."""
        return self.root + self.path.rstrip("/")

    @property
    def place(self) -> tuple[str, str, int, str]:
        """``(scheme, host, port, database path)``, each as the server reads it: one spelling of
        the host (``_one_host``) and of the path (``_one_path``), the port said.

        >>> parse_url("HTTP://LOCALHOST.//x/../sh%6Fp/", "url", role="database").place
        ('http', '127.0.0.1', 80, 'shop')
        """
        port = self.port or _DEFAULT_PORTS[self.scheme]
        return self.scheme, _one_host(self.hostname), port, _one_path(self.path)


def shown(url: str) -> str:
    """``url`` as messages show it: everything between ``//`` (or its start, without one) and
    its last ``@`` is ``***``, whatever it holds.

    >>> shown("http://bob:pa/ss@db.example:5984")
    'http://***@db.example:5984'
    >>> shown("bob:pw@127.0.0.1:5984")
    '***@127.0.0.1:5984'
    """
    head, slashes, rest = url.partition("//")
    if not slashes:
        head, rest = "", url
    at = rest.rfind("@")
    return url if at < 0 else f"{head}{slashes}***{rest[at:]}"


def parse_url(url: str, name: str, *, role: Literal["server", "service", "database"]) -> ParsedUrl:
    """``url`` read as a server's URL (``role="server"``: ``http(s)://[user:password@]host
    [:port]`` and at most a ``/``), a client's service URL (``"service"``: a server's, which
    may sit under a path) or a database's (with a path naming it); ``name`` is what messages
    call it (``CLOUDANT_URL``, ``target``).

    Raises:
        InvalidArgumentError: no http(s) scheme; user info holding ``@ : / ? # [ ]``, a space
            or a stray ``%`` unencoded, or an escape that is not UTF-8; no host or a bad one;
            a port not from 1 to 65535; a query or fragment; a server's URL with a path, or a
            database's without one. The message shows ``***`` for the user info.

    >>> parse_url("https://b%40b:p%2Fw@DB.example.com:443/", "url", role="server")
    ParsedUrl('https://DB.example.com:443', user 'b@b')
    >>> parse_url("http://bob:p/w@db.example", "url", role="server")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    couchids.errors.InvalidArgumentError: url='http://***@db.example': its user name or ...
    """
    said = f"{name}={shown(url)!r}"
    server = role != "database"
    scheme, slashes, rest = url.partition("://")
    if not slashes or scheme.lower() not in SCHEMES:
        if not server:
            raise InvalidArgumentError(
                f"{said} is not a database URL: give http(s)://[user:password@]host[:port]/db"
            )
        fix = "give an http:// or https:// URL, e.g. http://127.0.0.1:5984"
        if not slashes:
            fix = f"write it with its scheme, e.g. http://{shown(url)}"
        raise InvalidArgumentError(f"{said} has no http:// or https:// scheme: {fix}")
    # An "@" after the host part means that the user info holds a "/", "?" or "#" unencoded
    # (a database name holds no "@").
    end = _cut(rest, "/?#")
    info, at, host = rest[:end].rpartition("@")
    # The one ":" allowed is the one between the user name and the password.
    if "@" in rest[end:] or (at and _BAD_USER_INFO.search(info.replace(":", "", 1))):
        raise InvalidArgumentError(
            f"{said}: its user name or password holds a character that must be "
            f"percent-encoded (any of {_RESERVED_WORDS}): write it as %XX, as "
            'urllib.parse.quote(password, safe="") does'
        )
    username = password = None
    if at:
        user, colon, secret = info.partition(":")
        try:
            username = unquote(user, errors="strict")
            password = unquote(secret, errors="strict") if colon else None
        except UnicodeDecodeError:
            raise InvalidArgumentError(
                f"{said}: its user name or password holds a percent-escape that is not UTF-8"
            ) from None
    where = said
    if not at:  # then a password may stand where the port is (``http://admin:s3cret``)
        port_at = host.find(":", host.find("]") + 1 if host.startswith("[") else 0)
        unported = host if port_at < 0 else host[:port_at] + ":***"
        where = f"{name}={url[: len(scheme) + 3] + unported + rest[end:]!r}"
    hostname, port = _host_and_port(host, where, "a database" if not server else "a server")
    tail = rest[end:]
    cut = _cut(tail, "?#")
    path = tail[:cut]
    if tail[cut:]:
        what = "server" if server else "database"
        raise InvalidArgumentError(f"{said}: a {what} URL has no query or fragment (?... or #...)")
    parsed = ParsedUrl(scheme.lower(), host, hostname, port, path, username, password)
    if role == "server" and path.strip("/"):
        named = unquote(path).strip("/")
        what = f"names a database ({named!r})" if "/" not in named else f"has a path ({path!r})"
        raise InvalidArgumentError(
            f"{said} {what}: give the server's URL, {parsed.root}, and name the database "
            "apart (couchids.Database(client, name), the command's DB argument)"
        )
    if not server and not unquote(path).strip("/"):
        raise InvalidArgumentError(f"{said} names no database: add /dbname to the URL")
    return parsed


def _cut(text: str, ends: str) -> int:
    """Where the first of the characters ``ends`` stands in ``text`` (its length: none)."""
    return min((i for i in map(text.find, ends) if i >= 0), default=len(text))


def _host_and_port(host: str, said: str, what: str) -> tuple[str, int | None]:
    """The host name (lower-case, no brackets) and port of ``host[:port]``; ``said`` names
    the URL in messages."""
    if host.startswith("["):
        inside, bracket, after = host[1:].partition("]")
        try:
            ipaddress.IPv6Address(unquote(inside))
        except ValueError:
            bracket = ""
        hostname, colon, port = inside.lower(), after[:1], after[1:]
        if not bracket or (after and colon != ":"):
            raise InvalidArgumentError(f"{said}: its host is not an IPv6 address in brackets")
    else:
        written, colon, port = host.partition(":")
        # A host name may be percent-encoded (RFC 3986, 3.2.2): it is read decoded.
        hostname = unquote(written, errors="replace")
        if not hostname:
            raise InvalidArgumentError(f"{said} names no host: give {what}'s host name or address")
        if not _HOST_NAME.fullmatch(hostname):
            raise InvalidArgumentError(f"{said}: its host is not a host name or IP address")
        hostname = hostname.lower()
    if not colon:
        return hostname, None
    if not _PORT.fullmatch(port) or not 0 < int(port) < 65536:
        raise InvalidArgumentError(f"{said} is not a URL: its port is not a number from 1 to 65535")
    return hostname, int(port)


def _one_host(host: str) -> str:
    """A URL's host name as one spelling: lower case without a final dot, an IP address in its
    usual form (IPv4-mapped IPv6 as IPv4; ``127.1``, ``0x7f.0.0.1`` and ``2130706433`` as
    ``127.0.0.1``, as URL parsers and Erlang's ``inet`` read them), the loopback as
    ``_LOOPBACK``.

    >>> [_one_host(h) for h in ("localhost.", "0:0:0:0:0:0:0:1", "::ffff:7f00:1", "127.1")]
    ['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']
    >>> [_one_host(h) for h in ("db.example.com", "127.0.0.2", "0x0a.1", "2001:db8::0:1")]
    ['db.example.com', '127.0.0.2', '10.0.0.1', '2001:db8::1']
    """
    host = unquote(host).removesuffix(".")
    if host == "localhost" or host.endswith(".localhost"):
        return _LOOPBACK
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = _ipv4(host)
    if address is None:
        try:
            address = ipaddress.IPv6Address(host)
        except ValueError:
            return host
        address = address.ipv4_mapped or address
    if address in (ipaddress.IPv4Address(_LOOPBACK), ipaddress.IPv6Address("::1")):
        return _LOOPBACK
    return address.compressed


def _ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address of a host in the forms URL parsers accept (one to four parts, each
    decimal, ``0x`` hex or ``0`` octal; the last fills the bytes left), else ``None``."""
    numbers = []
    for part in host.split("."):
        base, digits = 10, part
        if part[:2] == "0x":
            base, digits = 16, part[2:] or "0"
        elif len(part) > 1 and part[0] == "0":
            base, digits = 8, part[1:]
        try:  # int() would also read "+1", " 1" and "1_0"
            numbers.append(int(digits, base) if digits.isascii() and digits.isalnum() else -1)
        except ValueError:
            return None
    *head, last = numbers
    if len(numbers) > 4 or min(numbers) < 0 or max(head, default=0) > 255:
        return None
    if last >= 256 ** (5 - len(numbers)):
        return None
    return ipaddress.IPv4Address(last + sum(n << (24 - 8 * at) for at, n in enumerate(head)))


def _one_path(path: str) -> str:
    """A URL's path as CouchDB reads it: percent-decoded (``%2F`` too), empty and ``.``
    segments dropped, each ``..`` dropping the one before (RFC 3986's dot segments).

    >>> [_one_path(p) for p in ("/shop/", "//shop", "/./shop", "/x/../shop", "/%73hop")]
    ['shop', 'shop', 'shop', 'shop', 'shop']
    >>> _one_path("/couch/a%2Fb"), _one_path("/a/b")
    ('couch/a/b', 'a/b')
    """
    segments: list[str] = []
    for segment in unquote(path).split("/"):
        if segment == "..":
            segments = segments[:-1]
        elif segment not in ("", "."):
            segments.append(segment)
    return "/".join(segments)
