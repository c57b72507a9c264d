"""What couchids reads of ibmcloudant's configuration (a credentials file, ``CLOUDANT_*``
variables, ``VCAP_SERVICES``, as ``CloudantV1.new_instance()`` reads them): the server URL and
the secrets to mask in messages.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections.abc import Iterable

from ibm_cloud_sdk_core import read_external_sources
from ibm_cloud_sdk_core.logger import get_logger
from ibmcloudant.cloudant_v1 import CloudantV1

from couchids.drivers.access import credentials_of
from couchids.drivers.redact import redact, secrets_of
from couchids.errors import mask_with

__all__ = [
    "cloudant_config",
    "configured_secrets",
    "mask_sdk_logs",
    "remember_secrets",
    "safe_url",
    "scrub",
    "variables_of",
]

# How couchids' messages about a database start: "<operation> on '<database>'".
_HEAD = re.compile(r"[\w.]+ on '([^'\s]+)'")


def cloudant_config(service_name: str = CloudantV1.DEFAULT_SERVICE_NAME) -> dict[str, str]:
    """ibmcloudant's configuration of the service (``CLOUDANT`` unless named), keys without
    the prefix of its variables (:func:`variables_of`)."""
    config: dict[str, str] = read_external_sources(service_name)
    return config


def variables_of(service_name: str) -> str:
    """What the names of a service's variables start with, as ibmcloudant reads them.

    >>> variables_of("cloudant"), variables_of("other-db")
    ('CLOUDANT_', 'OTHER_DB_')
    """
    return service_name.replace(" ", "_").replace("-", "_").upper() + "_"


def configured_secrets() -> list[str]:
    """Every credential of the configuration; none when it cannot be read."""
    try:
        return secrets_of(cloudant_config())
    except Exception:  # a broken credentials file must not hide the error being reported
        return []


#: The secrets of each client couchids sends requests with (its password or API key, the user
#: info of its URL), masked as the configuration's are: a client of another service's settings
#: (``new_instance("other")``) or of arguments has them in no ``CLOUDANT_*`` setting.
_clients: weakref.WeakKeyDictionary[CloudantV1, list[str]] = weakref.WeakKeyDictionary()
_clients_lock = threading.Lock()


def remember_secrets(client: CloudantV1) -> None:
    """Mask the credentials ``client`` signs in with in every message from now on."""
    settings = {"URL": client.service_url or ""}
    found = credentials_of(client.authenticator)
    if found is not None:
        settings |= {"PASSWORD": found.secret, "USERNAME": found.username}
    secrets = secrets_of(settings)
    with _clients_lock:
        _clients[client] = secrets


def _client_secrets() -> list[str]:
    with _clients_lock:
        return [secret for secrets in _clients.values() for secret in secrets]


def safe_url() -> str:
    """The configured ``CLOUDANT_URL``, credentials masked."""
    try:
        url = cloudant_config().get("URL") or ""
    except Exception:
        return ""
    return scrub(url)


def scrub(text: str, *, names: Iterable[str] | None = None) -> str:
    """``text`` with every credential masked: :func:`couchids.drivers.redact.redact` with the
    configured secrets and the clients' (:func:`remember_secrets`), and ``names``, the
    databases it is about: by default the one a message of couchids names first (``latest on
    'shop'``)."""
    if names is None:
        head = _HEAD.match(text)
        names = [head[1]] if head else []
    return redact(text, [*configured_secrets(), *_client_secrets()], names=names)


def _masked(record: logging.LogRecord) -> bool:
    """A logger filter masking credentials in a record by their shape only: finding the
    configured secrets reads the configuration, which the SDK logs about, through it."""
    try:
        message = record.getMessage()
    except Exception:  # a record that cannot be formatted fails in the handler, as before
        return True
    masked = redact(message)
    if masked != message:
        record.msg, record.args = masked, None
    return True


def mask_sdk_logs() -> None:
    """Mask credentials in what ibmcloudant's core logs (at DEBUG, each request's URL and the
    service URL, user info and all), once."""
    logger = get_logger()
    if _masked not in logger.filters:
        logger.addFilter(_masked)


# The server-side errors mask their texts with scrub from now on: a driver imports this module
# before it sends anything, and only a driver's requests make such errors.
mask_with(scrub)
