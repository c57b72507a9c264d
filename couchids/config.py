"""What couchids reads of ibmcloudant's standard configuration: the server URL and the secrets
to mask in messages.

The same sources, in the same order, that ``CloudantV1.new_instance()`` reads: a credentials
file, ``CLOUDANT_*`` variables, ``VCAP_SERVICES``.
"""

from __future__ import annotations

from ibm_cloud_sdk_core import read_external_sources
from ibmcloudant.cloudant_v1 import CloudantV1

from .redact import redact, secrets_of

__all__ = ["cloudant_config", "configured_secrets", "safe_url", "scrub"]


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
    return redact(url, configured_secrets())


def scrub(text: str) -> str:
    """``text`` with every credential masked: :func:`couchids.redact.redact` with the
    configured secrets."""
    return redact(text, configured_secrets())
