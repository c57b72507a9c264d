"""What couchids reads of ibmcloudant's configuration (a credentials file, ``CLOUDANT_*``
variables, ``VCAP_SERVICES``, as ``CloudantV1.new_instance()`` reads them): the server URL and
the secrets to mask in messages.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from ibm_cloud_sdk_core import read_external_sources
from ibm_cloud_sdk_core.logger import get_logger
from ibmcloudant.cloudant_v1 import CloudantV1

from couchids.drivers.redact import redact, secrets_of
from couchids.errors import mask_with

__all__ = ["cloudant_config", "configured_secrets", "mask_sdk_logs", "safe_url", "scrub"]

# How couchids' messages about a database start: "<operation> on '<database>'".
_HEAD = re.compile(r"[\w.]+ on '([^'\s]+)'")


def cloudant_config() -> dict[str, str]:
    """ibmcloudant's configuration of the ``CLOUDANT`` service, keys without the prefix."""
    config: dict[str, str] = read_external_sources(CloudantV1.DEFAULT_SERVICE_NAME)
    return config


def configured_secrets() -> list[str]:
    """Every credential of the configuration; none when it cannot be read."""
    try:
        return secrets_of(cloudant_config())
    except Exception:  # a broken credentials file must not hide the error being reported
        return []


def safe_url() -> str:
    """The configured ``CLOUDANT_URL``, credentials masked."""
    try:
        url = cloudant_config().get("URL") or ""
    except Exception:
        return ""
    return scrub(url)


def scrub(text: str, *, names: Iterable[str] | None = None) -> str:
    """``text`` with every credential masked: :func:`couchids.drivers.redact.redact` with the
    configured secrets, and ``names``, the databases it is about: by default the one a message
    of couchids names first (``latest on 'shop'``)."""
    if names is None:
        head = _HEAD.match(text)
        names = [head[1]] if head else []
    return redact(text, configured_secrets(), names=names)


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
