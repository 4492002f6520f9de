"""A fleet worker (tests/faults/fleet_worker.py) as a child process, for the fleet suite and the
fleet benchmark (benchmarks/fleet.py): the fault suite's worker process with another command."""

from __future__ import annotations

import sys
import uuid

from ._files import Files
from .test_faults import WorkerProcess


class FleetWorker(WorkerProcess):
    """``python -m tests.faults.fleet_worker`` as a child process, stopped only by its pid."""

    def __init__(
        self, name: str, address: str, queue: str, files: Files, store: str, *extra: str
    ) -> None:
        super().__init__(address, queue, files, None)
        self.name, self.store, self.extra = name, store, list(extra)
        self.log = files.folder / f"{name}-{uuid.uuid4().hex[:6]}.log"

    def command(self) -> list[str]:
        f = self.files
        cmd = [sys.executable, "-m", "tests.faults.fleet_worker", "--address", self.address]
        cmd += ["--task-queue", self.task_queue, "--desk", str(f.desk)]
        cmd += ["--payments", str(f.payments), "--markers", str(f.markers)]
        cmd += ["--approvers", str(f.approvers), "--store", self.store, "--name", self.name]
        return [*cmd, *self.extra]
