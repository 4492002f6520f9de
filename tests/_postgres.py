"""A real PostgreSQL server for tests, started and stopped by the suite itself.

Debian's ``postgresql`` package puts its binaries under ``/usr/lib/postgresql/*/bin``. ``initdb``
refuses to run as root, so as root the server runs as the ``postgres`` user (``Popen(user=...)``,
which changes user in the child before it runs the binary: the pid is the postmaster's own).
The data directory is a fresh temporary folder; the server listens on 127.0.0.1 on a free port
(and on a Unix socket in that folder, never the system's); it is stopped by its pid.

Where the binaries are missing the tests that need a server are skipped with the reason, except
under CI (``CI`` set), where they fail: CI installs the package (``.ci/run``), so a missing one
is a broken run, never a quiet skip. A server that is there but cannot start always fails.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from ._servers import free_port

USER = "duraguard"
"""The database superuser initdb creates (trust authentication on 127.0.0.1 only)."""


def binaries() -> Path | None:
    """The newest installed PostgreSQL's ``bin`` folder, or ``None``."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/postgres"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("postgres")
    return Path(on_path).parent if on_path else None


def require_binaries() -> Path:
    """The binaries, or a skip (locally) / a failure (in CI) saying how to get them."""
    bindir = binaries()
    if bindir is not None and (bindir / "initdb").exists():
        return bindir
    why = (
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres): "
        "apt-get install postgresql (.ci/run does)"
    )
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


class PostgresServer:
    """One PostgreSQL server in a temporary folder, on 127.0.0.1 and a free port."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:
            try:
                pg = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError(
                    "initdb refuses to run as root and there is no 'postgres' user to run it "
                    "as (Debian's postgresql package makes one): create it, or run the tests "
                    "as another user"
                ) from None
            self._as = {"user": pg.pw_uid, "group": pg.pw_gid, "extra_groups": []}
        self.folder = Path(tempfile.mkdtemp(prefix="duraguard-pg-"))
        if self._as:
            os.chown(self.folder, self._as["user"], self._as["group"])
        self.data = self.folder / "data"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = self.folder / "server.log"

    @property
    def dsn(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> None:
        done = subprocess.run(
            [str(self.bindir / argv[0]), *argv[1:]],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            cwd=self.folder,
            **self._as,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{argv[0]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}"
            )

    def init(self) -> PostgresServer:
        self._run(
            "initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync"
        )
        return self

    def start(self, timeout: float = 60.0) -> PostgresServer:
        """Start the server (again, on the same port and data) and wait until it answers."""
        argv = [str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port)]
        argv += ["-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.folder}"]
        argv += ["-c", "fsync=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB"]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.folder,
                start_new_session=True,
                **self._as,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            ready = subprocess.run(
                [str(self.bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                capture_output=True,
            )
            if ready.returncode == 0:
                return self
            time.sleep(0.1)
        tail = self.log.read_text(errors="replace")[-3000:]
        self.stop()
        raise RuntimeError(f"PostgreSQL did not start on 127.0.0.1:{self.port}:\n{tail}")

    def stop(self, sig: int = signal.SIGINT) -> None:
        """Stop by pid: SIGINT is a fast shutdown, SIGKILL a crash (the data is recovered from
        the write-ahead log on the next start)."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        if sig == signal.SIGKILL:
            # The postmaster's children notice it is gone and exit; its shared memory goes with
            # the last of them, and a restart waits for that (its lock file names the old pid).
            time.sleep(0.5)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """A fresh server, or a failure saying why it could not start."""
    server: PostgresServer | None = None
    try:
        server = PostgresServer(require_binaries())
        return server.init().start()
    except (RuntimeError, OSError) as err:
        if server is not None:
            server.remove()
        pytest.fail(f"PostgreSQL could not be started for the tests: {err}")
