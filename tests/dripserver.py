"""A loopback HTTP server that answers slowly but steadily: a byte every ``pause`` seconds.

``GET /{db}`` is answered at once, as CouchDB would for a plain database; every other request
gets ``200`` and a valid JSON body (an empty ``_all_docs`` page, padded with spaces) whose
``Content-Length`` is honest, sent one byte at a time. With ``headers=True`` the status line and
headers drip too. A client whose read timeout bounds each read from the socket, not the answer,
keeps reading such an answer for minutes.

    with DripServer() as server:
        client = client_for(server.url)
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Final

#: Seconds between two bytes.
PAUSE: Final = 0.05
#: The body of every slow answer: about 20 s at :data:`PAUSE`.
BODY: Final = json.dumps({"total_rows": 0, "offset": 0, "rows": []}).encode().ljust(400)


class DripServer:
    """The server, on a free loopback port, in a thread. :attr:`requests` counts the requests
    that got a slow answer."""

    def __init__(self, *, headers: bool = False, pause: float = PAUSE) -> None:
        self.headers, self.pause, self.requests = headers, pause, 0
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                server.answer(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # A client that gave up resets its connection: nothing to report.
        self.httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> DripServer:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        path, method = handler.path.split("?")[0], handler.command
        if method == "GET" and path.count("/") == 1 and not path.startswith("/_"):
            info = json.dumps({"db_name": path[1:], "update_seq": "0", "props": {}}).encode()
            head = _head(len(info))
            handler.wfile.write(head + info)
            return
        self.requests += 1
        handler.close_connection = True
        body = b"" if method == "HEAD" else BODY
        slow = _head(len(BODY)) + body
        if not self.headers:
            handler.wfile.write(slow[: -len(body) or None])
            slow = body
        try:
            for i in range(len(slow)):
                if self.stopping.wait(self.pause):
                    return
                handler.wfile.write(slow[i : i + 1])
        except OSError:  # the client gave up
            return


def _head(length: int) -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()
