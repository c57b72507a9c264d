"""A client for the server: :func:`connect`, which reads ibmcloudant's ``CLOUDANT_*``
configuration as ``CloudantV1.new_instance()`` does, lets arguments take the place of its
variables, and checks it first, where ibmcloudant would fall back to IBM Cloud container
authentication and fail with a message about IAM profiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ibm_cloud_sdk_core.authenticators import Authenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from ibmcloudant.couchdb_session_get_authenticator_patch import new_construct_authenticator

from couchids.core.pacing import Rate
from couchids.core.urls import parse_url
from couchids.drivers.blocking import set_rate
from couchids.drivers.config import cloudant_config, variables_of
from couchids.drivers.credentials import Source, remember
from couchids.drivers.redact import redact, secrets_of
from couchids.errors import InvalidArgumentError

__all__ = ["AUTH_TYPES", "EXAMPLE_URL", "SERVER_SETUP", "cloudant_client", "connect"]

#: The URL messages suggest: CouchDB's port on this machine.
EXAMPLE_URL: Final = "http://127.0.0.1:5984"
#: The authentication types ibmcloudant builds (``CLOUDANT_AUTH_TYPE``, ``auth_type=``; any
#: case), the ones a CouchDB or Cloudant user needs first.
AUTH_TYPES: Final = (
    "noauth",
    "basic",
    "couchdb_session",
    "iam",
    "bearertoken",
    "container",
    "vpc",
    "iamassume",
    "cp4d",
    "mcsp",
    "mcspv2",
)
#: The types that take a user name and a password.
_PASSWORD_TYPES: Final = ("basic", "couchdb_session")
#: What to set besides the URL, for messages.
SERVER_SETUP: Final = (
    "CLOUDANT_AUTH_TYPE to noauth for a server without authentication, basic or "
    "couchdb_session with CLOUDANT_USERNAME and CLOUDANT_PASSWORD, iam with CLOUDANT_APIKEY, "
    f"or another of ibmcloudant's types ({', '.join(AUTH_TYPES[4:])})"
)


def connect(
    url: str | None = None,
    *,
    auth_type: str | None = None,
    username: str | None = None,
    password: str | None = None,
    apikey: str | None = None,
    rate: Rate | str | Mapping[str, int | None] | None = None,
) -> CloudantV1:
    """An ``ibmcloudant`` ``CloudantV1`` client for the configured server, or the one given.

    Each argument takes the place of its variable (``url`` of ``CLOUDANT_URL``, ``auth_type``
    of ``CLOUDANT_AUTH_TYPE``, ...); the rest (``CLOUDANT_ENABLE_RETRIES``, ...) is read as
    ``CloudantV1.new_instance()`` reads it. Without an authentication type: ``basic`` when the
    URL carries a user name and password (``http://admin:pass@127.0.0.1:5984``), ``iam`` when
    an API key is configured, and otherwise an error. With ``basic`` or ``couchdb_session`` the
    URL's user info is the credentials when no user name is configured, and is taken out of
    the URL requests go to either way. The client's errors name its credentials by where they
    came from (``user 'admin' with its password (CLOUDANT_USERNAME and CLOUDANT_PASSWORD)``).

    Args:
        url: the server's, ``http(s)://[user:password@]host[:port]`` with no path (a database
            is named by its handle); ``@ : / ? # [ ] %`` and spaces in the user name or
            password percent-encoded (``urllib.parse.quote(password, safe="")``).
        auth_type: one of ``AUTH_TYPES`` (``noauth``, ``basic``, ``couchdb_session``,
            ``iam``, ...).
        username, password: for ``basic`` and ``couchdb_session``.
        apikey: for ``iam``.
        rate: the requests a second of each of IBM Cloudant's request classes to keep to:
            ``"lite"`` (20 reads, 10 writes, 5 global queries), ``"standard"`` (one block: 100,
            50, 5), or a mapping such as ``{"reads": 200, "writes": 100, "queries": 10}``.
            ``None``: learnt from the server's ``429`` answers (see the IBM Cloudant guide).

    Raises:
        InvalidArgumentError: no URL, or one that is not a server's (another scheme, a user
            name or password with a reserved character unencoded, a bad host or port, a path,
            a query or a fragment); no or an unknown authentication type; or missing
            credentials. The message says what to set, and holds no part of a credential.

    Example::

        client = couchids.connect()  # CLOUDANT_URL, CLOUDANT_AUTH_TYPE, ...
        client = couchids.connect("http://127.0.0.1:5984", auth_type="noauth")
        client = couchids.connect(rate="lite")  # at most 20 reads, 10 writes, 5 queries a second
    """
    budget = Rate.of(rate)
    client = cloudant_client(
        url, auth_type=auth_type, username=username, password=password, apikey=apikey
    )
    if budget is not None:
        set_rate(client, budget)
    return client


def cloudant_client(
    url: str | None = None,
    *,
    auth_type: str | None = None,
    username: str | None = None,
    password: str | None = None,
    apikey: str | None = None,
    arguments: bool = True,
    service_name: str = CloudantV1.DEFAULT_SERVICE_NAME,
) -> CloudantV1:
    """:func:`connect`'s client, checked and recorded with where its credentials came from;
    ``arguments=False`` (the command, ``aio.new_instance``, which take none) leaves the
    arguments out of the messages' advice. ``service_name``: the service whose variables are
    read (``new_instance("other")``: ``OTHER_URL``, ...), and named in the messages."""
    given = {
        "URL": url,
        "AUTH_TYPE": auth_type,
        "USERNAME": username,
        "PASSWORD": password,
        "APIKEY": apikey,
    }
    config, source = _configuration(given, service_name)
    secrets, prefix = secrets_of(config), variables_of(service_name)

    def refuse(message: str) -> InvalidArgumentError:
        # The advice names the CLOUDANT_* variables: another service's are its own.
        return InvalidArgumentError(redact(message.replace("CLOUDANT_", prefix), secrets))

    def also(argument: str) -> str:
        return f" (or {argument})" if arguments else ""

    service_url = (config.get("URL") or "").strip()
    if not service_url:
        raise refuse(
            f"no server is configured: set CLOUDANT_URL, e.g. {EXAMPLE_URL}{also('pass url=')}, "
            f"and {SERVER_SETUP}"
        )
    try:
        parsed = parse_url(service_url, source["URL"], role="server")
    except InvalidArgumentError as exc:
        raise refuse(str(exc)) from None

    kind = (config.get("AUTH_TYPE") or "").strip().lower()
    if not kind:
        source["AUTH_TYPE"] = ""
        if parsed.username:
            kind = "basic"
        elif config.get("APIKEY"):
            kind = "iam"
        else:
            raise refuse(
                f"CLOUDANT_AUTH_TYPE is not set{' (nor auth_type=)' if arguments else ''}, and "
                "ibmcloudant would then try IBM Cloud container authentication: set "
                f"{SERVER_SETUP}"
            )
    elif kind not in AUTH_TYPES:
        raise refuse(
            f"{source['AUTH_TYPE']}={config['AUTH_TYPE']!r} is not an authentication type: use "
            f"{SERVER_SETUP.partition(' to ')[2]}"
        )
    credentials = ""
    if kind in _PASSWORD_TYPES:
        credentials = _named(source["USERNAME"], source["PASSWORD"])
        if parsed.username and not config.get("USERNAME"):
            config["USERNAME"], config["PASSWORD"] = parsed.username, parsed.password or ""
            credentials = f"the user:password@ of {source['URL']}"
        service_url = parsed.bare
        if not config.get("USERNAME") or config.get("PASSWORD") is None:
            in_url = "user:password@ in the URL" if arguments else "user:password@ in CLOUDANT_URL"
            raise refuse(
                f"{kind} authentication needs CLOUDANT_USERNAME and CLOUDANT_PASSWORD (or "
                + ("the username and password arguments, or " if arguments else "")
                + f"{in_url})"
            )
    if kind == "iam":
        if not config.get("APIKEY"):
            raise refuse(f"iam authentication needs CLOUDANT_APIKEY{also('the apikey argument')}")
        credentials = _named(source["APIKEY"])
    config["AUTH_TYPE"], config["URL"] = kind, service_url
    try:
        client = _built(config, service_name)
    except ValueError as exc:
        raise refuse(
            f"ibmcloudant could not set up {kind} authentication ({exc}); set {SERVER_SETUP}"
        ) from None
    remember(client, Source(source["AUTH_TYPE"], credentials, source["URL"]))
    return client


def _configuration(
    given: dict[str, str | None], service_name: str
) -> tuple[dict[str, str], dict[str, str]]:
    """The configuration ibmcloudant reads, with the arguments ``given`` (by variable name
    without ``CLOUDANT_``) in place of their variables; and where each setting came from, for
    messages: its variable, or its argument. Refuses an argument that is not a str."""
    for key, value in given.items():
        if value is not None and not isinstance(value, str):
            raise InvalidArgumentError(
                f"{key.lower()}=: give a str (or None), not a {type(value).__name__}"
            )
    config, prefix = dict(cloudant_config(service_name)), variables_of(service_name)
    source = {key: f"{prefix}{key}" for key in given}
    if config.get("AUTHTYPE") and not config.get("AUTH_TYPE"):
        config["AUTH_TYPE"], source["AUTH_TYPE"] = config["AUTHTYPE"], f"{prefix}AUTHTYPE"
    for key, value in given.items():
        if value is not None:
            config[key], source[key] = value, key.lower()
    config.pop("AUTHTYPE", None)
    return config, source


def _built(config: dict[str, str], service_name: str) -> CloudantV1:
    """The client of a checked configuration (its ``AUTH_TYPE`` and bare ``URL`` set), its
    authenticator built as ``CloudantV1.new_instance()`` builds it; ``ValueError`` when
    ibmcloudant cannot."""
    authenticator: Authenticator | None = new_construct_authenticator(config)
    if authenticator is None:
        raise ValueError(
            f"ibmcloudant built no {config['AUTH_TYPE']} authenticator from this configuration"
        )
    client = CloudantV1(authenticator)
    client.configure_service(service_name)
    client.set_service_url(config["URL"])
    return client


def _named(*settings: str) -> str:
    """Settings as messages name them: ``CLOUDANT_USERNAME and CLOUDANT_PASSWORD``, ``the
    username and password arguments``, ``the apikey argument``. (Not ``password=``, which
    masking reads as a password given.)"""
    if not any(setting.isupper() for setting in settings):  # arguments: no variable
        return f"the {' and '.join(settings)} argument{'s' if len(settings) > 1 else ''}"
    return " and ".join(
        setting if setting.isupper() else f"the {setting} argument" for setting in settings
    )
