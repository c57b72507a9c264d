"""Masking credentials in text: every message couchids produces goes through :func:`redact`.

Pure string work, no I/O: the secrets to mask besides the ones recognisable by their shape
(the user info of a URL, an ``Authorization`` or cookie value, a ``password``/``apikey``/token
field) are passed in; :func:`couchids.drivers.config.configured_secrets` finds them in ibmcloudant's
configuration.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Final
from urllib.parse import quote, unquote

__all__ = ["MASK", "SECRET_KEYS", "redact", "secrets_of"]

#: What a secret is replaced with.
MASK: Final = "***"
#: Configuration keys (``CLOUDANT_<key>``) whose values are secrets.
SECRET_KEYS: Final = ("PASSWORD", "APIKEY", "BEARER_TOKEN", "CLIENT_SECRET", "AUTHSESSION")

# The user info of a URL with a scheme: everything between "//" and the last "@" before the
# host ends (a password may hold an unencoded "@" or ":"). Not the optional part of a URL's
# pattern in couchids' own guidance ("give http(s)://[user:password@]host/db"): no host
# starts with "]".
_URL_USERINFO = re.compile(r"(?<=//)(?!\[[^\s/?#'\"<>]*@\])[^\s/?#'\"<>]*@")
# Without a scheme ("alice:pw@127.0.0.1:5984", as requests reports a URL it could not parse):
# a word holding "user:password@" followed by a host (which does not start with "]").
_BARE_USERINFO = re.compile(
    r"(?<![\w/.@%:-])[^\s/?#'\"<>@:(){}\[\],;]+:[^\s/?#'\"<>(){}\[\],;]*@(?=[\w.\[-])"
)
# "Authorization: Basic abc", "'Authorization': 'Bearer abc'", "authorization=abc".
_AUTHORIZATION = re.compile(
    r"(?i)((?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?)"
    r"(?:(basic|bearer|token|digest)\s+)?[^\s'\",;}]+"
)
# A cookie header ("Cookie: name=value; name=value"): each pair's value, bare or in double
# quotes, to where a cookie value ends (RFC 6265: a space, ";", ",", a quote or a backslash), not
# the words after it; AuthSession anywhere.
_COOKIE_PAIR: Final = r"""[^\s=;,'"\\]+=(?:"[^\s;,"\\]*"|[^\s;,'"\\]*)"""
_COOKIE = re.compile(
    rf"""(?i)\b((?:set-)?cookie['"]?\s*[:=]\s*['"]?){_COOKIE_PAIR}(?:;\s?{_COOKIE_PAIR})*"""
)
_AUTH_SESSION = re.compile(r"(?i)(AuthSession=)[^;\s'\",]+")
# "password": "x", password=x, apikey=x, access_token=x ... in JSON, forms and query strings.
# A quoted value is masked to its closing quote, whatever it holds (a space, a comma, an
# escaped quote, a brace: a password may), or to the end of the line when it was cut short;
# in JSON inside a JSON string (\"password\": \"x\") to the next escaped quote. A closing
# quote is one followed by a space, punctuation or the end: in the repr of a JSON body
# (http.client's DEBUG "send: b'...'" lines) an escaped quote reads \\", which is no end.
_FIELD = re.compile(
    r"(?i)((?:\\?['\"])?\b(?:password|passwd|apikey|api_key|client_secret|secret|access_token|"
    r"refresh_token|bearer_token|token)(?:\\?['\"])?\s*[:=]\s*)"
    r"(?:(?P<quote>\\?['\"])(?:(?!(?P=quote)(?:[\s,;:.!?})\]>&'\"\\]|\Z))(?:\\.|[^\\\n]))*"
    r"(?P<end>(?P=quote))?"
    r"|[^\s'\",&;}]+)"
)

# A bytes literal as repr() writes it: http.client's DEBUG "send: b'...'" lines of a request's
# body, whose data is masked as text (in the repr, a JSON value's escaped quote reads \\", which
# can be taken for its end).
_BYTES_REPR = re.compile(r"""\bb(['"])(?:\\.|(?!\1)[^\\\n])*\1""")
# ibm_cloud_sdk_core's own masking of a JSON field, which runs to the first quote, escaped or
# not: a value holding a quote keeps its rest after the placeholder, up to its closing quote.
_SDK_REDACTED = re.compile(r'("[^"\n]*":)"\[redacted\](?:"(?:\\.|[^"\\\n])*)?"')

# Where a given secret starts and ends, on a side where it has a word character: next to no
# other word character, unless that one ends an escape ("%3A", "\\n") that stands for a
# character that is not one.
_START: Final = (
    r"(?:(?<!\w)|(?<=%[0-9A-Fa-f]{2})|(?<=\\[nrt])|(?<=\\x[0-9A-Fa-f]{2})"
    r"|(?<=\\u[0-9A-Fa-f]{4}))"
)
_END: Final = r"(?!\w)"
# Beside a secret that is an ordinary word, what makes it a value rather than a word of a
# sentence: before it a quote, = or :, a URL's / ? & # or a percent-escape; after it a quote
# or a URL's @ / ? & # %; brackets around it. (Not "pass:" or "pass=": a key, or prose; not
# "(GET /db)" or "(http://...": couchids' words in brackets; not a URL's scheme before "://".)
_VALUE_BEFORE: Final = r"""(?:(?<=['"`=:/?&#])|(?<=%[0-9A-Fa-f]{2}))"""
_VALUE_AFTER: Final = r"""(?=['"`@/?&#%])"""
_NOT_SCHEME: Final = r"(?!://)"


def redact(text: str, secrets: Iterable[str] = (), *, names: Iterable[str] = ()) -> str:
    """``text`` with every credential in it replaced by ``***``.

    Masks the user info of URLs, with or without a scheme; ``Authorization`` and cookie
    values; ``password``/``apikey``/token fields; and each of ``secrets`` as given,
    percent-encoded and percent-decoded, where it stands whole: not as part of a longer word
    (a secret ``pass`` is left in ``passed``). A secret that is an ordinary word (letters
    only, or digits only) is masked where it stands as a value (quoted, after ``=`` or ``:``,
    in a URL, in brackets, the whole text), not where it reads as a word of a sentence:
    ``*** start <= end`` would tell the secret to anyone who knows the message. Nor is a
    secret that is one of ``names`` (the databases the text is about) masked where it stands
    as that name, quoted or as a path's segment: ``latest on '***' (GET /***)`` would tell it.

    >>> redact("could not reach http://bob:pw@db.local/x")
    'could not reach http://***@db.local/x'
    >>> redact("Failed to parse: alice:S3cret@127.0.0.1:1")
    'Failed to parse: ***@127.0.0.1:1'
    >>> redact("user bob with password hunter2 may not", ["hunter2"])
    'user bob with password *** may not'
    >>> redact("pass: the server said 'pass'; pass start <= end", ["pass"])
    "pass: the server said '***'; pass start <= end"
    >>> redact("'ftp://x' is not a database URL: give http(s)://[user:password@]host/db")
    "'ftp://x' is not a database URL: give http(s)://[user:password@]host/db"
    >>> redact("latest on 'shop' (GET /shop): refused bob:shop", ["shop"], names=["shop"])
    "latest on 'shop' (GET /shop): refused bob:***"
    """
    if "b" in text:
        text = _BYTES_REPR.sub(lambda found: _masked_bytes(found[0], secrets), text)
    variants = _variants(secrets)
    if variants:
        named = {unquote(name) for name in names if name}
        text = _secrets_pattern(tuple(variants)).sub(
            lambda found: found[0] if _a_name(found, named) else MASK, text
        )
    text = _URL_USERINFO.sub(MASK + "@", text)
    text = _BARE_USERINFO.sub(MASK + "@", text)
    text = _AUTHORIZATION.sub(lambda m: m[1] + (f"{m[2]} " if m[2] else "") + MASK, text)
    text = _COOKIE.sub(lambda m: m[1] + MASK, text)
    text = _AUTH_SESSION.sub(lambda m: m[1] + MASK, text)
    return _FIELD.sub(_masked_field, text)


def secrets_of(config: Mapping[str, str]) -> list[str]:
    """The secret values of an ibmcloudant configuration (keys without ``CLOUDANT_``).

    The values of :data:`SECRET_KEYS`, and the user info of ``URL`` and its password; but
    not one that is the user name (``admin``/``admin``), which messages name: masking it
    there (``user '***'``) would tell the password, and lose the name.

    >>> secrets_of({"URL": "http://bob:pw@host", "PASSWORD": "x", "USERNAME": "bob"})
    ['bob:pw', 'pw', 'x']
    >>> secrets_of({"URL": "http://admin:admin@host"})
    ['admin:admin']
    >>> secrets_of({"USERNAME": "admin", "PASSWORD": "admin"})
    []
    """
    found = [config.get(key) or "" for key in SECRET_KEYS]
    users = {config.get("USERNAME") or ""}
    url = config.get("URL") or ""
    head, at, _ = url.rpartition("@")
    if at:
        info = head.rpartition("//")[2]
        user, _, password = info.partition(":")
        found += [info, password]
        users |= {user, unquote(user)}
    return sorted({secret for secret in found if secret and secret not in users})


def _a_name(found: re.Match[str], names: set[str]) -> bool:
    """Whether a secret ``found`` stands as one of ``names``: quoted, or as a path's segment."""
    if unquote(found[0]) not in names:
        return False
    text, start, end = found.string, found.start(), found.end()
    before, after = text[start - 1 : start], text[end : end + 1]
    return (before == after and before in "'\"" and before != "") or (
        before == "/" and (after == "" or after in "/?#)'\"" or after.isspace())
    )


def _masked_bytes(literal: str, secrets: Iterable[str]) -> str:
    """The repr of a bytes literal's data with every credential masked; the literal as it was
    when none is found (or it is not one)."""
    try:
        data = ast.literal_eval(literal)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return literal
    if not isinstance(data, bytes):
        return literal
    text = data.decode("utf-8", "surrogateescape")
    if "[redacted]" in text:
        try:
            json.loads(text)
        except ValueError:  # not JSON with the placeholder whole: what follows it is the rest
            text = _SDK_REDACTED.sub(lambda found: f'{found[1]}"{MASK}"', text)
    masked = redact(text, secrets)
    if masked == data.decode("utf-8", "surrogateescape"):
        return literal
    return repr(masked.encode("utf-8", "surrogateescape"))


def _masked_field(found: re.Match[str]) -> str:
    """A field's key with its value masked, in the quotes it had."""
    quote = found["quote"] or ""
    return found[1] + quote + MASK + (found["end"] or "")


@functools.lru_cache(maxsize=32)
def _secrets_pattern(variants: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for every variant (longest first), each where it stands whole."""
    return re.compile("|".join(_whole(variant) for variant in variants))


def _whole(secret: str) -> str:
    start = _START if re.match(r"\w", secret) else ""
    end = _END if re.search(r"\w$", secret) else ""
    escaped = re.escape(secret)
    if secret.isalpha() or secret.isdigit():
        # As a value on at least one side, and whole on both; in brackets; or the whole text.
        enclosed = "|".join(
            rf"(?<={re.escape(a)}){escaped}(?={re.escape(b)})" for a, b in ("()", "[]", "{}", "<>")
        )
        return (
            f"(?:(?:{_VALUE_BEFORE}{escaped}{end}|{start}{escaped}{_VALUE_AFTER}){_NOT_SCHEME}"
            rf"|{enclosed}|\A{escaped}\Z)"
        )
    return f"{start}{escaped}{end}"


def _variants(secrets: Iterable[str]) -> list[str]:
    forms = set()
    for secret in secrets:
        if secret:
            forms.update({secret, quote(secret, safe=""), quote(secret), unquote(secret)})
    return sorted((form for form in forms if form), key=len, reverse=True)
