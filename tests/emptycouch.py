"""A request handler that answers like an empty CouchDB database, for loopback test servers
(tests/test_tls.py's HTTPS one, tests/test_aio_client.py's recorder): ``GET /{db}`` is the
database's information, anything else (``_all_docs`` by GET or POST) an empty listing.

    server = ThreadingHTTPServer(("127.0.0.1", 0), empty_database_handler())
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler


def empty_database_handler(
    seen: Callable[[BaseHTTPRequestHandler], None] | None = None,
) -> type[BaseHTTPRequestHandler]:
    """The handler class; ``seen`` is called with each request's handler before it answers
    (to keep what was sent)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _any(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if seen is not None:
                seen(self)
            path = self.path.split("?")[0]
            if path.count("/") == 1:
                answer: object = {"db_name": path[1:], "update_seq": "0", "props": {}}
            else:
                answer = {"total_rows": 0, "offset": 0, "rows": []}
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _any

    return Handler
