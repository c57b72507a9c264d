"""Which credentials a client signs in with, in words for messages, and the logins that a
server or a token service refuses (:class:`LoginRefused`).

:func:`couchids.connect` records where it took a client's credentials from (:func:`remember`):
the ``CLOUDANT_*`` variables, its arguments, or the user info of the URL. A client made
otherwise (``CloudantV1.new_instance()``) is described by its authenticator, with the
variables ibmcloudant reads.

ibmcloudant's ``couchdb_session`` login takes any answer holding an ``AuthSession`` cookie
for a session, and CouchDB answers a refused login with ``401`` and an empty ``AuthSession``
cookie: the client then goes on without a session, as an anonymous user, and a database it
may not see reads as missing. :func:`check_logins` has every login of a client checked:
a refused one raises :class:`LoginRefused`, which the drivers report as an
:class:`~couchids.UnauthorizedError` naming the credentials, before any request it was for.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Final

import requests
from ibm_cloud_sdk_core import ApiException
from ibm_cloud_sdk_core.authenticators import (
    BasicAuthenticator,
    IAMAuthenticator,
    NoAuthAuthenticator,
)
from ibm_cloud_sdk_core.token_managers.jwt_token_manager import JWTTokenManager
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from ibmcloudant.couchdb_session_token_manager import CouchDbSessionTokenManager

from couchids.core.answers import QUOTE_LEN
from couchids.core.urls import ParsedUrl, parse_url
from couchids.errors import InvalidArgumentError

__all__ = [
    "REFUSED_STATUSES",
    "LoginRefused",
    "Source",
    "answer_hint",
    "check_logins",
    "refused_hint",
    "remember",
    "signs_in_as",
]

#: The statuses of a login that was refused (IAM answers a wrong API key with 400).
REFUSED_STATUSES: Final = (400, 401, 403)


@dataclass(frozen=True)
class Source:
    """Where a client's settings came from, in the words of the settings.

    Attributes:
        auth_type: what set the authentication type: ``CLOUDANT_AUTH_TYPE``, ``auth_type``,
            or ``""`` when it followed from the rest (a URL with user info, an API key).
        secrets: what gave the credentials: ``CLOUDANT_USERNAME and CLOUDANT_PASSWORD``,
            ``the username and password arguments``, ``the user:password@ of CLOUDANT_URL``,
            ``CLOUDANT_APIKEY``, ...; ``""`` for none.
        url: what gave the URL: ``CLOUDANT_URL`` or ``url``.
    """

    auth_type: str = "CLOUDANT_AUTH_TYPE"
    secrets: str = ""
    url: str = "CLOUDANT_URL"

    @property
    def arguments(self) -> bool:
        """Whether the authentication type was an argument (advice then names arguments)."""
        return self.auth_type == "auth_type"


_sources: weakref.WeakKeyDictionary[CloudantV1, Source] = weakref.WeakKeyDictionary()


def remember(client: CloudantV1, source: Source) -> None:
    """Record where ``client``'s settings came from, for messages about it."""
    _sources[client] = source


def _source(client: CloudantV1) -> Source:
    found = _sources.get(client)
    if found is not None:
        return found
    auth = client.authenticator
    if isinstance(auth, BasicAuthenticator | CouchDbSessionAuthenticator):
        return Source(secrets="CLOUDANT_USERNAME and CLOUDANT_PASSWORD")
    if isinstance(auth, IAMAuthenticator):
        return Source(secrets="CLOUDANT_APIKEY")
    return Source()


def _url_user(client: CloudantV1) -> ParsedUrl | None:
    """The client's service URL, when it holds user info that requests sends."""
    url = client.service_url or ""
    if "@" not in url:
        return None
    try:
        parsed = parse_url(url, "url", role="server")
    except InvalidArgumentError:
        return None
    return parsed if parsed.username else None


def signs_in_as(client: CloudantV1) -> str:
    """The credentials ``client`` signs in with, in words (``""``: it sends none).

    ``user 'admin' with its password (CLOUDANT_USERNAME and CLOUDANT_PASSWORD)``, ``the API
    key of CLOUDANT_APIKEY``, ...; never a secret.
    """
    auth, source = client.authenticator, _source(client)
    if isinstance(auth, NoAuthAuthenticator):
        parsed = _url_user(client)
        if parsed is None:
            return ""
        return f"user {parsed.username!r} with its password (the user:password@ of {source.url})"
    if isinstance(auth, BasicAuthenticator):
        return f"user {auth.username!r} with its password ({source.secrets})"
    if isinstance(auth, CouchDbSessionAuthenticator):
        user = auth.token_manager.username
        return f"user {user!r} with its password ({source.secrets})"
    if isinstance(auth, IAMAuthenticator):
        return f"the API key of {source.secrets}"
    return f"the credentials of its {auth.authentication_type()} authentication"


def _advice(source: Source) -> str:
    """How to send credentials, in the words of the settings used."""
    if source.arguments:
        return (
            "pass auth_type='basic' or 'couchdb_session' with the username and password "
            "arguments (auth_type='iam' with the apikey argument on Cloudant)"
        )
    return (
        "set CLOUDANT_AUTH_TYPE to basic or couchdb_session with CLOUDANT_USERNAME and "
        "CLOUDANT_PASSWORD (iam with CLOUDANT_APIKEY on Cloudant)"
    )


def refused_hint(client: CloudantV1) -> str:
    """What to check after the server refused a request (401 or 403): the
    credentials it was sent with, by name; or, when it was sent with none, the setting that
    chose none, and how to send some."""
    who = signs_in_as(client)
    if not who:
        source = _source(client)
        named = source.auth_type or "CLOUDANT_AUTH_TYPE"
        setting = f"{named}='noauth'" if source.arguments else f"{named}=noauth"
        return f"the client sends no credentials ({setting}): {_advice(source)}"
    return f"sent as {who}: check them, and that they may do this"


def answer_hint(client: CloudantV1, status: int) -> str:
    """What to check after an error answer of ``status`` to ``client``: the credentials
    (:func:`refused_hint`) after a 401 or 403; else ``""``."""
    return refused_hint(client) if status in (401, 403) else ""


# -- refused logins ------------------------------------------------------------------------------


class LoginRefused(Exception):
    """The server refused a ``couchdb_session`` login, or a token service a token request
    (IAM's for a wrong API key). Its message names the login and the credentials; the
    drivers make it an :class:`~couchids.UnauthorizedError`."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class _CheckedLogin:
    """A token manager's ``request_token``, raising :class:`LoginRefused` for a refused
    login and an ``ApiException`` for any other error answer (a session login's answer is
    otherwise taken as it is, cookie or not)."""

    def __init__(self, manager: Any, client: CloudantV1) -> None:
        self.request_token = manager.request_token
        self.session = isinstance(manager, CouchDbSessionTokenManager)
        self.client = weakref.ref(client)

    def __call__(self) -> Any:
        try:
            answer = self.request_token()
        except ApiException as exc:
            if exc.status_code in REFUSED_STATUSES:
                raise self._refused(exc.status_code, str(exc.message or "")) from None
            raise
        if self.session and isinstance(answer, requests.Response):
            status = answer.status_code
            if status in REFUSED_STATUSES:
                raise self._refused(status, _couchdb_reason(answer))
            if not 200 <= status < 300:
                raise ApiException(status, http_response=answer)
        return answer

    def _refused(self, status: int, said: str) -> LoginRefused:
        client = self.client()
        who = signs_in_as(client) if client is not None else "its credentials"
        login = (
            "the couchdb_session login (POST /_session)"
            if self.session
            else "the token request of its authentication"
        )
        if client is not None and isinstance(client.authenticator, IAMAuthenticator):
            login = "the IAM token request"
        quoted = f": {said[:QUOTE_LEN]}" if said else ""
        return LoginRefused(f"{login} was refused (HTTP {status}{quoted}): {who}", status)


def _couchdb_reason(answer: requests.Response) -> str:
    try:
        body = answer.json()
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    error, reason = body.get("error"), body.get("reason")
    return ": ".join(str(part) for part in (error, reason) if isinstance(part, str) and part)


def check_logins(client: CloudantV1) -> None:
    """Have ``client``'s logins checked: its ``couchdb_session`` login and the token requests
    of its IAM (or other token) authentication raise :class:`LoginRefused` when refused.
    Once per token manager; a new authenticator is checked at the next call."""
    manager = getattr(client.authenticator, "token_manager", None)
    if not isinstance(manager, CouchDbSessionTokenManager | JWTTokenManager):
        return
    if not isinstance(vars(manager).get("request_token"), _CheckedLogin):
        manager.request_token = _CheckedLogin(manager, client)
