"""A throwaway CouchDB-compatible server on loopback, for tests and the demo.

Apache CouchDB is not installable from the package registries our machines reach, so this starts
PouchDB Server (npm ``pouchdb-server``, pinned in ``node/package-lock.json``) in memory on a free
port of 127.0.0.1. Install it first with ``scripts/bootstrap``.

Use it as a context manager::

    with LocalServer() as server:
        client.set_service_url(server.url)

or from a shell::

    python scripts/localserver.py                 # serve in the foreground; Ctrl-C stops it
    python scripts/localserver.py -- CMD ARGS...  # run CMD with CLOUDANT_URL set, then stop

The server runs with its working directory in a private temporary directory, because PouchDB
Server writes ``log.txt`` and ``config.json`` into it; nothing lands in the repository.
It runs in its own process group, and leaving the context ends the whole group.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

REPO = Path(__file__).resolve().parent.parent
NODE_MODULES = REPO / "node" / "node_modules"
SERVER_SCRIPT = Path("pouchdb-server") / "bin" / "pouchdb-server"
HOST = "127.0.0.1"
# Port choice races with other processes; PouchDB Server does not exit when its port is taken,
# it logs this and keeps running, so we watch for it and try another port.
PORT_IN_USE = "is already in use"
PORT_ATTEMPTS = 5
LOG_TAIL_LINES = 40

# urllib honours *_proxy variables; a loopback check must never go through a proxy.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LocalServerError(RuntimeError):
    """The local server could not be started (or is not installed)."""


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


class LocalServer:
    """PouchDB Server, in memory, on a free loopback port, for the life of a ``with`` block.

    Args:
        timeout: seconds to wait for the server to answer ``GET /``.
        port: a fixed port instead of a free one.
        node_modules: where ``npm ci`` installed pouchdb-server (default ``node/node_modules``).

    Raises:
        LocalServerError: on entry, if pouchdb-server is not installed, exits early, or does not
            answer within ``timeout``; the message ends with the tail of the server's log.
    """

    def __init__(
        self,
        *,
        timeout: float = 60.0,
        port: int | None = None,
        node_modules: Path = NODE_MODULES,
    ) -> None:
        self.timeout = timeout
        self._fixed_port = port
        self._script = node_modules / SERVER_SCRIPT
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        """Base URL without a trailing slash, e.g. ``http://127.0.0.1:54321``."""
        if self._url is None:
            raise LocalServerError("the local server is not running; use it in a `with` block")
        return self._url

    @property
    def pid(self) -> int | None:
        """Process id of the server (also its process group id), or None when stopped."""
        return self._process.pid if self._process else None

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> str:
        """Start the server and wait until it answers; return its URL."""
        if self._url is not None:
            return self._url
        node = shutil.which("node")
        if not self._script.is_file() or node is None:
            missing = "node" if node is None else str(self._script)
            raise LocalServerError(
                f"PouchDB Server is not installed ({missing} not found). "
                "Run scripts/bootstrap, which runs `npm ci` in node/."
            )
        self._workdir = Path(tempfile.mkdtemp(prefix="couchids-pouchdb-"))
        atexit.register(self.stop)
        try:
            for _ in range(PORT_ATTEMPTS):
                port = self._fixed_port or free_port()
                self._spawn(node, port)
                if self._wait_until_ready(port):
                    self._url = f"http://{HOST}:{port}"
                    return self._url
                self._kill_group()
                if self._fixed_port:
                    break
            raise self._error(f"port {port} is already in use")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Terminate the server's process group and remove its working directory."""
        self._kill_group()
        self._url = None
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        atexit.unregister(self.stop)

    def wait(self) -> int:
        """Block until the server exits on its own; return its exit status."""
        if self._process is None:
            raise LocalServerError("the local server is not running")
        return self._process.wait()

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last lines of the server's output (its stdout and stderr)."""
        if self._workdir is None:
            return ""
        try:
            text = (self._workdir / "server.out").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _spawn(self, node: str, port: int) -> None:
        assert self._workdir is not None
        # A fresh log per attempt, so a retry does not see the previous attempt's messages.
        with open(self._workdir / "server.out", "wb") as out:
            self._process = subprocess.Popen(
                [
                    node,
                    str(self._script),
                    "--in-memory",
                    "--host",
                    HOST,
                    "--port",
                    str(port),
                    "--config",
                    str(self._workdir / "config.json"),
                    "--no-color",
                ],
                cwd=self._workdir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def _wait_until_ready(self, port: int) -> bool:
        """True once the server answers; False if its port was taken. Raises on death/timeout."""
        assert self._process is not None
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise self._error(f"pouchdb-server exited with status {code} before answering")
            log = self.log_tail()
            if PORT_IN_USE in log:
                return False
            # Our own process logs this line only once it has bound the port, so an answer
            # from some other server on the same port is not mistaken for ours.
            if f"has started on http://{HOST}:{port}/" in log and _answers(port):
                return True
            time.sleep(0.1)
        raise self._error(f"pouchdb-server did not answer GET / within {self.timeout:g}s")

    def _kill_group(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue

    def _error(self, message: str) -> LocalServerError:
        return LocalServerError(
            f"{message}.\n--- last lines of the pouchdb-server log ---\n{self.log_tail()}"
        )


def _answers(port: int) -> bool:
    try:
        with _direct.open(f"http://{HOST}:{port}/", timeout=2) as response:
            return isinstance(json.load(response), dict)
    except (OSError, ValueError, urllib.error.URLError):
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Start PouchDB Server in memory on loopback (the tests' local server)."
    )
    parser.add_argument("--port", type=int, help="port to use (default: a free one)")
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="after --: a command to run with CLOUDANT_URL and CLOUDANT_AUTH_TYPE=noauth set; "
        "the server stops when it ends and its exit status is returned",
    )
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    # Ctrl-C must stop the server even when started from a shell that ignores SIGINT in
    # background jobs, and SIGTERM (e.g. a CI timeout) should clean up the same way.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        with LocalServer(port=args.port) as server:
            if command:
                env = {**os.environ, "CLOUDANT_URL": server.url, "CLOUDANT_AUTH_TYPE": "noauth"}
                return subprocess.call(command, env=env)
            print(server.url, flush=True)
            print("PouchDB Server is running; press Ctrl-C to stop it.", file=sys.stderr)
            code = server.wait()
            print(f"pouchdb-server exited ({code}):\n{server.log_tail()}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        return 0
    except LocalServerError as error:
        print(f"localserver: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
