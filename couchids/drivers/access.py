"""The credentials a client's authenticator signs in with, and how the server's own replicator
reaches it (:meth:`couchids.Database.replicate`); credentials in the service URL's user info
are read by :func:`couchids.core.replication.server_root`.
"""

from __future__ import annotations

from typing import Any

from ibm_cloud_sdk_core.authenticators import (
    Authenticator,
    BasicAuthenticator,
    IAMAuthenticator,
    NoAuthAuthenticator,
)
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

from couchids.core.replication import Credentials
from couchids.errors import InvalidArgumentError

__all__ = ["credentials_of", "server_access"]


def credentials_of(auth: Authenticator) -> Credentials | None:
    """The credentials an authenticator signs in with: basic and CouchDB session authentication
    a user name and password, IAM an API key; ``None`` for others."""
    if isinstance(auth, BasicAuthenticator):
        return Credentials("basic", auth.username, auth.password)
    if isinstance(auth, CouchDbSessionAuthenticator):
        manager = auth.token_manager
        return Credentials("basic", manager.username, manager.password)
    if isinstance(auth, IAMAuthenticator):
        return Credentials("iam", secret=auth.token_manager.apikey)
    return None


def server_access(client: Any) -> tuple[str, Credentials | None]:
    """The service URL of ``client`` (a ``CloudantV1`` or a :class:`couchids.aio.AsyncClient`)
    and the credentials its authenticator signs in with (``None``: none, or those in the URL).

    Raises:
        InvalidArgumentError: an authenticator whose credentials a replicator cannot use
            (a bearer token, container or VPC identities...), saying which are supported.
    """
    cloudant = getattr(client, "cloudant", client)
    if not isinstance(cloudant, CloudantV1):
        raise InvalidArgumentError(f"client={client!r}: not an ibmcloudant CloudantV1 client")
    auth = cloudant.authenticator
    found = credentials_of(auth)
    if found is not None or isinstance(auth, NoAuthAuthenticator):
        return cloudant.service_url or "", found
    raise InvalidArgumentError(
        f"replicate: the client signs in with {type(auth).__name__}, whose credentials the "
        "server's replicator cannot be given; supported: basic or couchdb_session "
        "(CLOUDANT_USERNAME/CLOUDANT_PASSWORD), iam (CLOUDANT_APIKEY, on Cloudant), user:password@ "
        "in CLOUDANT_URL, or none"
    )
