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

from couchids.core.answers import couchdb_error, excerpt
from couchids.core.effects import Response
from couchids.core.urls import parse_url
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


_sources: weakref.WeakKeyDictionary[CloudantV1, Source] = weakref.WeakKeyDictionary()


def remember(client: CloudantV1, source: Source) -> None:
    """Record where ``client``'s settings came from (:func:`couchids.connect` does)."""
    _sources[client] = source


def signs_in_as(client: CloudantV1) -> str:
    """The credentials ``client`` signs in with, in words (``""``: it sends none).

    ``user 'admin' with its password (CLOUDANT_USERNAME and CLOUDANT_PASSWORD)``, ``the API
    key of CLOUDANT_APIKEY``, ...; never a secret.
    """
    auth = client.authenticator
    credentials = credentials_of(auth)
    iam = credentials is not None and credentials.kind == "iam"
    # A client made otherwise has the settings ibmcloudant reads for its authenticator.
    made = Source(secrets="CLOUDANT_APIKEY" if iam else "CLOUDANT_USERNAME and CLOUDANT_PASSWORD")
    source = _sources.get(client) or made
    if credentials is not None:
        if iam:
            return f"the API key of {source.secrets}"
        return f"user {credentials.username!r} with its password ({source.secrets})"
    if not isinstance(auth, NoAuthAuthenticator):
        return f"the credentials of its {auth.authentication_type()} authentication"
    # The user info of the service URL, which requests sends.
    url = client.service_url or ""
    try:
        user = parse_url(url, "url", role="service").username if "@" in url else None
    except InvalidArgumentError:
        user = None
    return f"user {user!r} with its password (the user:password@ of {source.url})" if user else ""


def refused_hint(client: CloudantV1) -> str:
    """What to check after the server refused a request (401 or 403): the credentials it was
    sent with, by name; or, when it was sent with none, the setting that chose none, and how
    to send some."""
    who = signs_in_as(client)
    if not who:
        source = _sources.get(client) or Source()
        named = source.auth_type or "CLOUDANT_AUTH_TYPE"
        # The variables of the service whose settings the client was made of (OTHER_...).
        prefix = named.removesuffix("AUTH_TYPE") if named.endswith("_AUTH_TYPE") else "CLOUDANT_"
        if source.auth_type == "auth_type":  # advice names the arguments
            return (
                f"the client sends no credentials ({named}='noauth'): pass auth_type='basic' or "
                "'couchdb_session' with the username and password arguments (auth_type='iam' "
                "with the apikey argument on Cloudant)"
            )
        return (
            f"the client sends no credentials ({named}=noauth): set {named} to basic or "
            f"couchdb_session with {prefix}USERNAME and {prefix}PASSWORD (iam with "
            f"{prefix}APIKEY on Cloudant)"
        )
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


def check_logins(client: CloudantV1) -> None:
    """Have ``client``'s logins (its ``couchdb_session`` login, the token requests of its IAM
    or other token authentication) raise :class:`LoginRefused` when refused, once per token
    manager: a new authenticator is checked at the next call. Any other error answer raises
    an ``ApiException`` (a session login's answer is otherwise taken as it is, cookie or not).
    """
    manager = getattr(client.authenticator, "token_manager", None)
    if not isinstance(manager, CouchDbSessionTokenManager | JWTTokenManager):
        return
    if "request_token" in vars(manager):  # checked already: the SDK's is the class's method
        return
    request_token = manager.request_token
    session = isinstance(manager, CouchDbSessionTokenManager)
    owner = weakref.ref(client)

    def refused(status: int, said: str) -> LoginRefused:
        found = owner()
        if found is not None and isinstance(found.authenticator, IAMAuthenticator):
            login = "the IAM token request"
        elif session:
            login = "the couchdb_session login (POST /_session)"
        else:
            login = "the token request of its authentication"
        who = signs_in_as(found) if found is not None else "its credentials"
        quoted = f": {excerpt(said)}" if said else ""
        return LoginRefused(f"{login} was refused (HTTP {status}{quoted}): {who}", status)

    def checked() -> Any:
        try:
            answer = request_token()
        except ApiException as exc:
            if exc.status_code in REFUSED_STATUSES:
                raise refused(exc.status_code, str(exc.message or "")) from None
            raise
        if session and isinstance(answer, requests.Response):
            status = answer.status_code
            if status in REFUSED_STATUSES:
                found = couchdb_error(Response(status, answer.content))
                raise refused(status, ": ".join(part for part in found if part) if found else "")
            if not 200 <= status < 300:
                raise ApiException(status, http_response=answer)
        return answer

    manager.request_token = checked
