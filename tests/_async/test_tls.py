"""``https://`` on a port that speaks plain HTTP fails when the connection is made, saying to
write ``http://``, rather than when the deadline passes: through couchids.aio.AsyncDatabase
and, in the generated twin, couchids.Database. (The TLS server and the tests of one API alone
are in tests/test_tls.py.)"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from ibmcloudant.cloudant_v1 import CloudantV1
from localserver import Server
from test_tls import DEADLINE, plain_port

from couchids import ServerError, ServerTimeoutError, connect
from couchids.drivers.aio import AsyncClient

from .helpers import database


async def test_https_on_a_plain_http_port_fails_at_the_connection(
    couch_server: Server, async_client_for: Callable[[CloudantV1], AsyncClient]
) -> None:
    host, port = plain_port(couch_server)
    client = async_client_for(connect(f"https://{host}:{port}", auth_type="noauth"))
    started = time.monotonic()
    with pytest.raises(ServerError) as caught:
        await database(client, "shop", timeout=DEADLINE).latest(1)
    took = time.monotonic() - started
    message = str(caught.value)
    assert not isinstance(caught.value, ServerTimeoutError), message
    assert message == (
        f"latest on 'shop' (GET /shop): could not reach the server: https://{host}:{port} "
        f"speaks plain HTTP, not TLS: write http://{host}:{port} as the server's URL "
        "(CLOUDANT_URL)"
    )
    assert took < DEADLINE / 2, f"{took:.0f} s: the handshake waited for the deadline"
