"""``https://`` on a port that speaks plain HTTP, found when the connection is made rather than
at the operation's deadline: such a server answers a TLS handshake with an HTTP error
(PouchDB Server) or never (CouchDB, waiting for the rest of a request line). Both drivers
give a new connection's handshake :data:`HANDSHAKE_TIMEOUT` at most; when it fails,
:func:`speaks_plain_http` asks the port for ``HEAD /`` in plain HTTP, and an answer makes the
error say to write ``http://`` (:func:`plain_http_reason`), not retried.
"""

from __future__ import annotations

import socket
import time
from typing import Final

__all__ = ["HANDSHAKE_TIMEOUT", "PROBE_TIMEOUT", "plain_http_reason", "speaks_plain_http"]

#: Seconds the TLS handshake of a new connection may take (or the time left, if less). A
#: handshake takes a few round trips: milliseconds on a LAN, well under a second across an
#: ocean; this leaves room for a loaded machine and a lossy link.
HANDSHAKE_TIMEOUT: Final = 10.0
#: Seconds the plain-HTTP question may take, once a handshake failed.
PROBE_TIMEOUT: Final = 2.0


def speaks_plain_http(host: str, port: int, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether the server at ``host:port`` answers a plain-HTTP ``HEAD /`` with an HTTP status
    line within ``timeout`` seconds."""
    host = host.removeprefix("[").removesuffix("]")
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            name = (host if ":" not in host else f"[{host}]").encode("idna")
            sock.sendall(b"HEAD / HTTP/1.0\r\nHost: %s:%d\r\n\r\n" % (name, port))
            head = b""
            while len(head) < 5:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                sock.settimeout(left)
                chunk = sock.recv(5 - len(head))
                if not chunk:
                    break
                head += chunk
            return head == b"HTTP/"
    except (OSError, UnicodeError):
        return False


def plain_http_reason(host: str, port: int) -> str:
    """Why the server at ``host:port`` could not be reached over ``https://``, and what to
    write instead."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return (
        f"https://{where} speaks plain HTTP, not TLS: write http://{where} as the server's URL "
        "(CLOUDANT_URL)"
    )
