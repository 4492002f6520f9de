"""A fleet worker (tests/faults/fleet_worker.py) as a child process, for the fleet suite and the
fleet benchmark (benchmarks/fleet.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from ._files import Files

ROOT = Path(__file__).resolve().parents[2]


class FleetWorker:
    """``python -m tests.faults.fleet_worker`` as a child process, stopped only by its pid."""

    def __init__(
        self,
        name: str,
        address: str,
        queue: str,
        files: Files,
        store: str,
        *extra: str,
    ) -> None:
        self.name, self.address, self.queue, self.files = name, address, queue, files
        self.store, self.extra = store, list(extra)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = files.folder / f"{name}-{uuid.uuid4().hex[:6]}.log"

    async def start(self) -> FleetWorker:
        f = self.files
        cmd = [sys.executable, "-m", "tests.faults.fleet_worker", "--address", self.address]
        cmd += ["--task-queue", self.queue, "--desk", str(f.desk), "--payments", str(f.payments)]
        cmd += ["--markers", str(f.markers), "--approvers", str(f.approvers)]
        cmd += ["--store", self.store, "--name", self.name]
        cmd += self.extra
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                cmd,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                start_new_session=True,
            )
        ready = f.markers / f"ready-{self.proc.pid}"
        for _ in range(3000):
            if ready.exists():
                return self
            if self.proc.poll() is not None:
                break
            await asyncio.sleep(0.02)
        self.kill()
        raise AssertionError(f"worker {self.name} did not start:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL, by pid: as a crash would be."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
