"""Throwaway CouchDB-compatible servers on loopback, for tests, benches and the demo.

Three kinds, each started on free ports of 127.0.0.1 and stopped with the ``with`` block:

- ``pouchdb`` (:class:`LocalServer`): PouchDB Server (npm ``pouchdb-server``, pinned in
  ``node/package-lock.json``), in memory. Installed by ``scripts/bootstrap``, or alone by
  :func:`install_pouchdb` (``python scripts/localserver.py --install``); the default.
- ``couchdb`` (:class:`CouchDBNode`): one Apache CouchDB node.
- ``cluster`` (:class:`CouchDBCluster`): three Apache CouchDB nodes joined into one cluster
  (n=3), each of which can be paused (SIGSTOP) and resumed, for fault tests.

Apache CouchDB is not on the package registries, so the two CouchDB kinds need a *launcher*:
an executable named by ``COUCHIDS_COUCHDB`` that understands ``LAUNCHER run PORT DIR USER:PASS``
(one node in the foreground) and ``LAUNCHER cluster P1,P2,P3 DIR USER:PASS`` (prints ``ready``
once joined; each node's pid in ``DIR/nodeN/pid``). couchids' CI passes one that builds
CouchDB 3.4.3 from source. To test against a CouchDB you already run (a container, a package,
Cloudant), set ``COUCHIDS_TEST_URL`` instead; see docs/development.md.

Use one as a context manager::

    with start("couchdb") as server:
        client.set_service_url(server.url)   # the URL carries the admin credentials

or from a shell::

    python scripts/localserver.py                         # PouchDB in the foreground
    python scripts/localserver.py --install -- python     # npm ci first if it is missing
    python scripts/localserver.py --server cluster -- CMD  # run CMD with CLOUDANT_URL set

Each server runs in a private temporary directory (PouchDB Server writes ``log.txt`` and
``config.json`` into its working directory) and in its own process group; leaving the block
ends the whole group and removes the directory.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Literal, Self
from urllib.parse import unquote, urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
NODE_DIR = REPO / "node"
NODE_MODULES = NODE_DIR / "node_modules"
#: npm's flags for node/, the same as scripts/bootstrap's (whose stamp covers them):
#: --omit=optional leaves out pouchdb-server's on-disk adapters, which build native code; the
#: servers here run in memory.
NPM_FLAGS = ("--omit=optional", "--no-audit", "--no-fund", "--loglevel=error")
#: Where scripts/bootstrap keeps what it installed, beside node/: ``lock``, held while it (or
#: :func:`install_pouchdb`) installs, and ``node``, the stamp of the install of node/.
STAMPS = ".stamps"
#: The Node.js version couchids states (node/package.json "engines").
NODE_MAJOR = 20
SERVER_SCRIPT = Path("pouchdb-server") / "bin" / "pouchdb-server"
HOST = "127.0.0.1"
#: The environment variable that names the CouchDB launcher (see the module docstring).
LAUNCHER_VARIABLE = "COUCHIDS_COUCHDB"
#: The admin the CouchDB kinds are started with (loopback only, thrown away with the server).
COUCHDB_ADMIN = ("admin", "pass")
Kind = Literal["pouchdb", "couchdb", "cluster"]
KINDS: tuple[Kind, ...] = ("pouchdb", "couchdb", "cluster")
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


class _Process:
    """A server process in its own process group and temporary directory."""

    #: What the log tail in error messages is called.
    name = "server"

    def __init__(self, *, timeout: float) -> None:
        self.timeout = timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        """Base URL without a trailing slash, e.g. ``http://127.0.0.1:54321``."""
        if self._url is None:
            raise LocalServerError(f"the {self.name} is not running; use it in a `with` block")
        return self._url

    @property
    def pid(self) -> int | None:
        """Process id of the server (also its process group id), or None when stopped."""
        return self._process.pid if self._process else None

    def __enter__(self) -> Self:
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
        raise NotImplementedError

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
            raise LocalServerError(f"the {self.name} is not running")
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

    def _prepare(self, prefix: str) -> Path:
        self._workdir = Path(tempfile.mkdtemp(prefix=prefix))
        atexit.register(self.stop)
        return self._workdir

    def _spawn(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        assert self._workdir is not None
        # A fresh log per attempt, so a retry does not see the previous attempt's messages.
        with open(self._workdir / "server.out", "wb") as out:
            self._process = subprocess.Popen(
                argv,
                cwd=self._workdir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )

    def _check_alive(self) -> None:
        assert self._process is not None
        code = self._process.poll()
        if code is not None:
            raise self._error(f"the {self.name} exited with status {code} before answering")

    def _kill_group(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                # A paused node ignores SIGTERM until it runs again.
                os.killpg(process.pid, signal.SIGCONT)
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
            f"{message}.\n--- last lines of the {self.name} log ---\n{self.log_tail()}"
        )


class LocalServer(_Process):
    """PouchDB Server, in memory, on a free loopback port, for the life of a ``with`` block.

    Args:
        timeout: seconds to wait for the server to answer ``GET /``.
        port: a fixed port instead of a free one.
        node_modules: where ``npm ci`` installed pouchdb-server (default ``node/node_modules``).

    Raises:
        LocalServerError: on entry, if pouchdb-server is not installed, exits early, or does not
            answer within ``timeout``; the message ends with the tail of the server's log.
    """

    kind: Kind = "pouchdb"
    name = "pouchdb-server"

    def __init__(
        self,
        *,
        timeout: float = 60.0,
        port: int | None = None,
        node_modules: Path = NODE_MODULES,
    ) -> None:
        super().__init__(timeout=timeout)
        self._fixed_port = port
        self._node_dir = node_modules.parent
        self._script = node_modules / SERVER_SCRIPT

    def start(self) -> str:
        if self._url is not None:
            return self._url
        if not installed(self._node_dir):
            wait_for_install(self._node_dir)
        node = shutil.which("node")
        if not self._script.is_file() or node is None:
            missing = "node" if node is None else str(self._script)
            raise LocalServerError(
                f"PouchDB Server is not installed ({missing} not found). "
                "Run scripts/bootstrap, which runs `npm ci` in node/ (or start it with "
                "`python scripts/localserver.py --install`)."
            )
        workdir = self._prepare("couchids-pouchdb-")
        try:
            for _ in range(PORT_ATTEMPTS):
                port = self._fixed_port or free_port()
                self._spawn(
                    [
                        node,
                        str(self._script),
                        "--in-memory",
                        "--host",
                        HOST,
                        "--port",
                        str(port),
                        "--config",
                        str(workdir / "config.json"),
                        "--no-color",
                    ]
                )
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

    def _wait_until_ready(self, port: int) -> bool:
        """True once the server answers; False if its port was taken. Raises on death/timeout."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            self._check_alive()
            log = self.log_tail()
            if PORT_IN_USE in log:
                return False
            # Our own process logs this line only once it has bound the port, so an answer
            # from some other server on the same port is not mistaken for ours.
            if f"has started on http://{HOST}:{port}/" in log and _answers(port):
                return True
            time.sleep(0.1)
        raise self._error(f"pouchdb-server did not answer GET / within {self.timeout:g}s")


def node_stamp(node_dir: Path = NODE_DIR) -> str:
    """The stamp of an install of ``node_dir`` from its lockfile as it is now, with
    :data:`NPM_FLAGS`: what scripts/bootstrap computes and keeps in ``.stamps/node`` (so that
    each reuses the other's install)."""
    lockfile = hashlib.sha256((node_dir / "package-lock.json").read_bytes()).hexdigest()
    return hashlib.sha256(f"{lockfile}\n{' '.join(NPM_FLAGS)}".encode()).hexdigest()


def installed(node_dir: Path = NODE_DIR) -> bool:
    """Whether PouchDB Server is in ``node_dir/node_modules``, installed (by scripts/bootstrap
    or :func:`install_pouchdb`) from the lockfile as it is now."""
    try:
        stamped = (node_dir.parent / STAMPS / "node").read_text().strip()
        return (
            stamped == node_stamp(node_dir)
            and (node_dir / "node_modules" / SERVER_SCRIPT).is_file()
        )
    except OSError:
        return False


@contextlib.contextmanager
def _install_lock(node_dir: Path, *, shared: bool) -> Iterator[None]:
    """Hold the lock of installs into ``node_dir`` (``.stamps/lock``, scripts/bootstrap's):
    exclusive to install, shared to wait for an install to end. When another holds it, say so
    on stderr, then wait. A lock that does not exist is held by no one."""
    path = node_dir.parent / STAMPS / "lock"
    if shared and not path.exists():
        yield
        return
    path.parent.mkdir(exist_ok=True)
    with open(path, "a") as lock:
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        try:
            fcntl.flock(lock, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            print(
                f"localserver: waiting for the install in progress in {node_dir} to end "
                f"(scripts/bootstrap, or another localserver.py --install, holds {path}; "
                "npm ci empties node_modules before it installs)",
                file=sys.stderr,
                flush=True,
            )
            fcntl.flock(lock, mode)
        yield


def wait_for_install(node_dir: Path = NODE_DIR) -> None:
    """Return once no install into ``node_dir`` is in progress: at once when none is, else
    after saying on stderr what it waits for."""
    with _install_lock(node_dir, shared=True):
        pass


def install_pouchdb(node_dir: Path = NODE_DIR) -> bool:
    """Install PouchDB Server into ``node_dir/node_modules`` with ``npm ci`` of its lockfile,
    unless it is there already: an existing install is never touched (``npm ci`` would empty
    it first). Returns whether it installed. npm's output goes to stderr.

    It needs Node.js 20 or later and npm, and takes about 10 s and 30 MB: the quickstart's
    server, without the test toolchain of ``scripts/bootstrap``. It waits for a bootstrap that
    is running (their shared lock, ``.stamps/lock`` beside ``node_dir``), and stamps its install
    as bootstrap does (:func:`node_stamp`), which then does not install it again.

    Raises:
        LocalServerError: node or npm is missing or too old, or ``npm ci`` failed.
    """
    script = node_dir / "node_modules" / SERVER_SCRIPT
    if script.is_file():
        return False
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise LocalServerError(
            f"PouchDB Server needs node and npm (Node.js {NODE_MAJOR} or later) to install; "
            f"{'node' if node is None else 'npm'} is not on PATH"
        )
    version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, timeout=60
    ).stdout.strip()
    major = version.lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < NODE_MAJOR:
        raise LocalServerError(
            f"PouchDB Server needs Node.js {NODE_MAJOR} or later; this is {version or 'unknown'}"
        )
    with _install_lock(node_dir, shared=False):
        if script.is_file():  # a bootstrap installed it meanwhile
            return False
        print(
            f"localserver: installing PouchDB Server into {node_dir} "
            f"(npm ci {' '.join(NPM_FLAGS)})",
            file=sys.stderr,
            flush=True,
        )
        done = subprocess.run([npm, "ci", *NPM_FLAGS], cwd=node_dir, stdout=sys.stderr)
        if done.returncode != 0 or not script.is_file():
            raise LocalServerError(f"npm ci in {node_dir} failed (exit status {done.returncode})")
        (node_dir.parent / STAMPS / "node").write_text(node_stamp(node_dir) + "\n")
    return True


#: Erlang flags for the CouchDB servers started here: a scheduler out of work sleeps at once
#: instead of spinning first, which on a small machine takes CPU from the client and the other
#: servers of a test run (the launcher sets it for a cluster's nodes already).
QUIET_ERLANG = "+sbwt none +sbwtdcpu none +sbwtdio none"


def _quiet_erlang() -> dict[str, str]:
    """The environment of a CouchDB launched here: this one, with :data:`QUIET_ERLANG` added to
    ``ERL_FLAGS``."""
    flags = f"{os.environ.get('ERL_FLAGS', '')} {QUIET_ERLANG}".strip()
    return {**os.environ, "ERL_FLAGS": flags}


def couchdb_launcher() -> Path:
    """The CouchDB launcher named by ``COUCHIDS_COUCHDB``.

    Raises:
        LocalServerError: the variable is unset or names no executable file.
    """
    value = os.environ.get(LAUNCHER_VARIABLE, "")
    path = Path(value).resolve() if value else None
    if path is None or not path.is_file() or not os.access(path, os.X_OK):
        raise LocalServerError(
            f"{LAUNCHER_VARIABLE}={value!r} names no executable CouchDB launcher; point it at "
            "one that understands `run PORT DIR USER:PASS` and `cluster P1,P2,P3 DIR USER:PASS` "
            "(see scripts/localserver.py), or set COUCHIDS_TEST_URL to a CouchDB you run"
        )
    return path


class CouchDBNode(_Process):
    """One Apache CouchDB node on a free loopback port, started through the launcher.

    :attr:`url` carries the admin credentials (``http://admin:pass@127.0.0.1:PORT``), which
    ``requests`` sends as basic authentication.

    Args:
        timeout: seconds to wait for the node to answer (the first start may build CouchDB).
        launcher: the launcher (default: :func:`couchdb_launcher`).
    """

    kind: Kind = "couchdb"
    name = "couchdb"

    def __init__(self, *, timeout: float = 900.0, launcher: Path | None = None) -> None:
        super().__init__(timeout=timeout)
        self._launcher = launcher

    def start(self) -> str:
        if self._url is not None:
            return self._url
        launcher = self._launcher or couchdb_launcher()
        workdir = self._prepare("couchids-couchdb-")
        try:
            port = free_port()
            self._spawn(
                [str(launcher), "run", str(port), str(workdir / "node"), _admin()],
                _quiet_erlang(),
            )
            url = _admin_url(port)
            deadline = time.monotonic() + self.timeout
            # _up answers a moment before CouchDB has made its _replicator database, which a
            # replication started at once would meet as missing.
            while not (_answers(port, auth=True) and _answers(port, auth=True, path="_replicator")):
                self._check_alive()
                if time.monotonic() > deadline:
                    raise self._error(f"CouchDB did not answer within {self.timeout:g}s")
                time.sleep(0.2)
            self._url = url
            return url
        except BaseException:
            self.stop()
            raise


class CouchDBCluster(_Process):
    """Three Apache CouchDB nodes joined into one cluster (n=3) on free loopback ports.

    :attr:`url` is the first node's; :attr:`node_urls` has all three (each with the admin
    credentials). :meth:`pause` and :meth:`resume` stop and continue one node's process.
    """

    kind: Kind = "cluster"
    name = "couchdb cluster"

    def __init__(self, *, timeout: float = 900.0, launcher: Path | None = None) -> None:
        super().__init__(timeout=timeout)
        self._launcher = launcher
        self.node_urls: list[str] = []

    def start(self) -> str:
        if self._url is not None:
            return self._url
        launcher = self._launcher or couchdb_launcher()
        workdir = self._prepare("couchids-cluster-")
        try:
            ports = _free_ports(3)
            self._spawn(
                [
                    str(launcher),
                    "cluster",
                    ",".join(map(str, ports)),
                    str(workdir / "nodes"),
                    _admin(),
                ],
                _quiet_erlang(),
            )
            deadline = time.monotonic() + self.timeout
            while "ready" not in self.log_tail().split() or not all(
                _answers(port, auth=True, path="_replicator") for port in ports
            ):
                self._check_alive()
                if time.monotonic() > deadline:
                    raise self._error(f"the cluster was not ready within {self.timeout:g}s")
                time.sleep(0.2)
            self.node_urls = [_admin_url(port) for port in ports]
            self._url = self.node_urls[0]
            return self._url
        except BaseException:
            self.stop()
            raise

    def node_pid(self, node: int) -> int:
        """The Erlang VM's pid of node ``node`` (0, 1 or 2)."""
        assert self._workdir is not None, "the cluster is not running"
        return int((self._workdir / "nodes" / f"node{node + 1}" / "pid").read_text())

    def pause(self, node: int) -> None:
        """Stop node ``node``'s process (SIGSTOP): it holds its connections and answers nothing."""
        os.kill(self.node_pid(node), signal.SIGSTOP)

    def resume(self, node: int) -> None:
        """Let a paused node run again (SIGCONT)."""
        os.kill(self.node_pid(node), signal.SIGCONT)


Server = LocalServer | CouchDBNode | CouchDBCluster


def start(kind: Kind) -> Server:
    """A server of ``kind`` (not yet started: use it in a ``with`` block)."""
    if kind == "pouchdb":
        return LocalServer()
    if kind == "couchdb":
        return CouchDBNode()
    if kind == "cluster":
        return CouchDBCluster()
    raise LocalServerError(f"no server kind {kind!r}; one of {', '.join(KINDS)}")


def _admin() -> str:
    return ":".join(COUCHDB_ADMIN)


def _admin_url(port: int) -> str:
    return f"http://{_admin()}@{HOST}:{port}"


def _free_ports(count: int) -> list[int]:
    ports: set[int] = set()
    while len(ports) < count:
        ports.add(free_port())
    return sorted(ports)


def _answers(port: int, *, auth: bool = False, path: str | None = None) -> bool:
    if path is None:
        path = "_up" if auth else ""
    request = urllib.request.Request(f"http://{HOST}:{port}/{path}")
    if auth:
        token = base64.b64encode(_admin().encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with _direct.open(request, timeout=2) as response:
            return isinstance(json.load(response), dict)
    except (OSError, ValueError, urllib.error.URLError):
        return False


def client_environment(url: str) -> dict[str, str]:
    """``CLOUDANT_*`` variables for a server at ``url``: basic authentication when the URL
    carries credentials (they go to ``CLOUDANT_USERNAME``/``PASSWORD``), else none."""
    parts = urlsplit(url)
    if parts.username is None:
        return {"CLOUDANT_URL": url, "CLOUDANT_AUTH_TYPE": "noauth"}
    host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
    return {
        "CLOUDANT_URL": urlunsplit((parts.scheme, host, parts.path, "", "")),
        "CLOUDANT_AUTH_TYPE": "basic",
        "CLOUDANT_USERNAME": unquote(parts.username),
        "CLOUDANT_PASSWORD": unquote(parts.password or ""),
    }


def run_command(command: list[str], env: dict[str, str]) -> int:
    """Run ``command`` with ``env`` to its end; its exit status (``128 + N`` when signal ``N``
    ended it). A terminal's Ctrl-C reaches the command, whose own it is (a Python prompt
    drops the line, Jupyter asks): meanwhile this process ignores it, and keeps the server."""
    child = subprocess.Popen(command, env=env)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child started with its own
    try:
        code = child.wait()
    except BaseException:  # SIGTERM: the command does not outlive its server
        child.kill()
        child.wait()
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    return 128 - code if code < 0 else code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Start a throwaway CouchDB-compatible server on loopback (the tests' servers)."
    )
    parser.add_argument(
        "--server",
        choices=KINDS,
        default="pouchdb",
        help="pouchdb (default), or couchdb/cluster through the launcher in $COUCHIDS_COUCHDB",
    )
    parser.add_argument(
        "--install",
        action="store_true",
        help="install PouchDB Server into node/ first when it is missing (npm ci of its "
        "lockfile: Node.js 20 or later, about 10 s and 30 MB)",
    )
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="after --: a command to run with CLOUDANT_URL and CLOUDANT_AUTH_TYPE (and, for "
        "CouchDB, CLOUDANT_USERNAME/PASSWORD) set; the server stops when it ends and its exit "
        "status is returned",
    )
    args = parser.parse_args(argv)
    if args.install and args.server != "pouchdb":
        parser.error("--install installs PouchDB Server: it goes with --server pouchdb")
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    # Ctrl-C must stop the server even when started from a shell that ignores SIGINT in
    # background jobs, and SIGTERM (e.g. a CI timeout) should clean up the same way.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        if args.install:
            install_pouchdb()
        with start(args.server) as server:
            env = client_environment(server.url)
            if command:
                return run_command(command, {**os.environ, **env})
            for name, value in env.items():  # lines to paste into another shell
                print(f"export {name}={shlex.quote(value)}", flush=True)
            print(f"The {server.name} is running; press Ctrl-C to stop it.", file=sys.stderr)
            code = server.wait()
            print(f"{server.name} exited ({code}):\n{server.log_tail()}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        return 0
    except LocalServerError as error:
        print(f"localserver: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
