"""How a client reaches its server, for the server's own replicator: the service URL and the
credentials of the client's authenticator (:meth:`couchids.Database.replicate`).

Both drivers' clients carry an ``ibmcloudant`` ``CloudantV1`` (the asyncio client holds one),
whose authenticator knows the credentials: basic and CouchDB session authentication a user
name and password, IAM an API key. Credentials in the service URL's user info
(``http://admin:pass@host``, with no authenticator) are read by
:func:`couchids.core.replication.server_root`.
"""

from __future__ import annotations

from typing import Any

from ibm_cloud_sdk_core.authenticators import (
    BasicAuthenticator,
    IAMAuthenticator,
    NoAuthAuthenticator,
)
from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1

from couchids.core.replication import Credentials
from couchids.errors import InvalidArgumentError

__all__ = ["server_access"]


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
    url: str = cloudant.service_url or ""
    auth = cloudant.authenticator
    if isinstance(auth, NoAuthAuthenticator):
        return url, None
    if isinstance(auth, BasicAuthenticator):
        return url, Credentials("basic", auth.username, auth.password)
    if isinstance(auth, CouchDbSessionAuthenticator):
        manager = auth.token_manager
        return url, Credentials("basic", manager.username, manager.password)
    if isinstance(auth, IAMAuthenticator):
        return url, Credentials("iam", secret=auth.token_manager.apikey)
    raise InvalidArgumentError(
        f"replicate: the client signs in with {type(auth).__name__}, whose credentials the "
        "server's replicator cannot be given; supported: basic or couchdb_session "
        "(CLOUDANT_USERNAME/CLOUDANT_PASSWORD), iam (CLOUDANT_APIKEY, on Cloudant), user:password@ "
        "in CLOUDANT_URL, or none"
    )
