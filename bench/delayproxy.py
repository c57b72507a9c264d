"""A loopback TCP proxy that adds a fixed round trip to every request, for the benches.

Every byte a client sends reaches the server ``delay`` seconds late (a pipe of that latency,
not a pause per chunk: bytes sent together arrive together), and answers come back at once,
so each request/answer exchange costs ``delay`` more, as on a remote CouchDB or Cloudant. The
proxy works on TCP, below HTTP: keep-alive, chunked answers and authentication pass through
untouched.

    with DelayProxy(server.url, delay=0.020) as proxy:
        client.set_service_url(proxy.url)   # the same credentials, another port

or from a shell: ``python bench/delayproxy.py URL [--delay-ms 20]`` prints the proxy's URL.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit, urlunsplit

CHUNK = 1 << 16


class DelayProxy:
    """Forwards 127.0.0.1:<port> to the server of ``url``, client bytes ``delay`` s late."""

    def __init__(self, url: str, delay: float = 0.020) -> None:
        parts = urlsplit(url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.delay = delay
        self._parts = parts
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """``url`` with the proxy's port (credentials and path kept)."""
        parts = self._parts
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@127.0.0.1:{self.port}" if userinfo else f"127.0.0.1:{self.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))

    def __enter__(self) -> Self:
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self._server = started.result(timeout=10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._connection, "127.0.0.1", 0)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self._pipe(reader, up_writer, self.delay),
            self._pipe(up_reader, writer, 0.0),
            return_exceptions=True,
        )

    @staticmethod
    async def _pipe(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float
    ) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()

        sender = asyncio.ensure_future(deliver()) if delay else None
        try:
            while data := await reader.read(CHUNK):
                if sender is None:
                    writer.write(data)
                    await writer.drain()
                else:
                    queue.put_nowait((loop.time() + delay, data))
        finally:
            if sender is not None:
                queue.put_nowait((0.0, b""))
                await sender
            writer.close()


@contextmanager
def delayed(url: str, delay_ms: float) -> Iterator[str]:
    """``url`` through this proxy run in a process of its own (it must not take the caller's
    interpreter lock); ``url`` itself at 0 ms."""
    if not delay_ms:
        yield url
        return
    proxy = subprocess.Popen(
        [sys.executable, __file__, url, "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proxy.stdout is not None
        yield proxy.stdout.readline().strip()
    finally:
        proxy.terminate()
        proxy.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the server, such as http://127.0.0.1:5984")
    parser.add_argument("--delay-ms", type=float, default=20.0)
    args = parser.parse_args(argv)
    with DelayProxy(args.url, args.delay_ms / 1000) as proxy:
        print(proxy.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
