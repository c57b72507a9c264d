"""Which credentials a client signs in with, in words for messages, and the logins that a
server or a token service refuses (:class:`LoginRefused`).

ibmcloudant's ``couchdb_session`` login takes any answer holding an ``AuthSession`` cookie for
a session, and CouchDB answers a refused login with ``401`` and an empty one: the client would
go on as an anonymous user, to whom a database it may not see reads as missing.
:func:`check_logins` has every login of a client checked instead.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Final

import requests
from ibm_cloud_sdk_core import ApiException
from ibm_cloud_sdk_core.authenticators import IAMAuthenticator, NoAuthAuthenticator
from ibm_cloud_sdk_core.token_managers.jwt_token_manager import JWTTokenManager
from ibmcloudant.cloudant_v1 import CloudantV1
from ibmcloudant.couchdb_session_token_manager import CouchDbSessionTokenManager

from couchids.core.answers import QUOTE_LEN, couchdb_error
from couchids.core.effects import Response
from couchids.core.urls import ParsedUrl, parse_url
from couchids.drivers.access import credentials_of
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
    """Where a client's settings came from, in the words of the settings: its authentication
    type (``""`` when it followed from the rest), its credentials (``CLOUDANT_USERNAME and
    CLOUDANT_PASSWORD``, ``the apikey argument``, ...; ``""`` for none) and its URL."""

    auth_type: str = "CLOUDANT_AUTH_TYPE"
    secrets: str = ""
    url: str = "CLOUDANT_URL"

    @property
    def arguments(self) -> bool:
        """Whether the authentication type was an argument (advice then names arguments)."""
        return self.auth_type == "auth_type"


_sources: weakref.WeakKeyDictionary[CloudantV1, Source] = weakref.WeakKeyDictionary()


def remember(client: CloudantV1, source: Source) -> None:
    """Record where ``client``'s settings came from (:func:`couchids.connect` does)."""
    _sources[client] = source


def _source(client: CloudantV1) -> Source:
    """Where ``client``'s settings came from; for a client made otherwise, the variables
    ibmcloudant reads for its authenticator."""
    found = _sources.get(client)
    if found is not None:
        return found
    credentials = credentials_of(client.authenticator)
    if credentials is None:
        return Source()
    if credentials.kind == "iam":
        return Source(secrets="CLOUDANT_APIKEY")
    return Source(secrets="CLOUDANT_USERNAME and CLOUDANT_PASSWORD")


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
    credentials = credentials_of(auth)
    if credentials is not None and credentials.kind == "iam":
        return f"the API key of {source.secrets}"
    if credentials is not None:
        return f"user {credentials.username!r} with its password ({source.secrets})"
    if not isinstance(auth, NoAuthAuthenticator):
        return f"the credentials of its {auth.authentication_type()} authentication"
    parsed = _url_user(client)
    if parsed is None:
        return ""
    return f"user {parsed.username!r} with its password (the user:password@ of {source.url})"


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
    """What to check after the server refused a request (401 or 403): the credentials it was
    sent with, by name; or, when it was sent with none, the setting that chose none, and how
    to send some."""
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
    (IAM's for a wrong API key); the drivers make it an :class:`~couchids.UnauthorizedError`."""

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
    found = couchdb_error(Response(answer.status_code, answer.content))
    return ": ".join(part for part in found if part) if found else ""


def check_logins(client: CloudantV1) -> None:
    """Have ``client``'s logins (its ``couchdb_session`` login, the token requests of its IAM
    or other token authentication) raise :class:`LoginRefused` when refused, once per token
    manager: a new authenticator is checked at the next call."""
    manager = getattr(client.authenticator, "token_manager", None)
    if not isinstance(manager, CouchDbSessionTokenManager | JWTTokenManager):
        return
    if not isinstance(vars(manager).get("request_token"), _CheckedLogin):
        manager.request_token = _CheckedLogin(manager, client)
