"""A benchmark worker in a process of its own, so its CPU time is the worker's alone.

Started by :class:`WorkerProcess`; it connects to the server, runs a worker with the benchmark
plugin (``BENCH_PLAIN=1``: only the plain loop, no plugin; ``BENCH_SDK_WALK=1``: the plugin, but
the SDK's own payload walk, :mod:`duraguard._payload_walk` taken out), prints ``ready`` and
answers lines on stdin: ``cpu`` (the process's CPU seconds, every thread: the SDK's core threads
included), ``walk`` (whether :mod:`duraguard._payload_walk` is in place), ``profile-start`` /
``profile-stop PATH`` (cProfile of its Python threads, when started with ``BENCH_PROFILE=1``) and
``quit``. Run by hand:
``python -m benchmarks._worker --address 127.0.0.1:7233 --task-queue q --keys keys.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import logging
import os
import pstats
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from temporalio.client import Client  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from benchmarks._plain import ACTIVITIES as PLAIN_ACTIVITIES  # noqa: E402
from benchmarks._plain import PlainLoopWorkflow  # noqa: E402
from benchmarks._setup import approver_keys, bench_activities, make_plugin  # noqa: E402
from benchmarks._workflows import (  # noqa: E402
    GuardedCallsWorkflow,
    HandLoopWorkflow,
    SearchSessionWorkflow,
)
from duraguard import _payload_walk  # noqa: E402
from duraguard.testing import AgentWorkflow  # noqa: E402

WORKFLOWS: list[type] = [
    AgentWorkflow,
    GuardedCallsWorkflow,
    HandLoopWorkflow,
    SearchSessionWorkflow,
]


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def cpu_by_role() -> dict[str, float]:
    """CPU seconds of this process by thread role: the event loop (activities, local
    activities and the SDK's Python side), the threads running workflow activations (sandboxed
    workflow code) and the rest (the SDK's Rust core, gRPC). Linux (``/proc``) only; elsewhere
    everything is ``other``."""
    total = cpu_seconds()
    roles = {"loop": 0.0, "workflow": 0.0}
    tasks = Path("/proc/self/task")
    if not tasks.exists():
        return {**roles, "other": total}
    tick = os.sysconf("SC_CLK_TCK")
    main = threading.main_thread().native_id
    workflow = {
        t.native_id for t in threading.enumerate() if t.name.startswith("temporal_workflow")
    }
    for task in tasks.iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        seconds = (int(fields[11]) + int(fields[12])) / tick
        tid = int(task.name)
        if tid == main:
            roles["loop"] += seconds
        elif tid in workflow:
            roles["workflow"] += seconds
    return {**roles, "other": max(total - roles["loop"] - roles["workflow"], 0.0)}


class Profiled:
    """cProfile on the worker's two Python threads: the event loop (activities, local
    activities included) and the one thread workflow activations run on (sandboxed code)."""

    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="temporal_workflow_")
        # CPU time of the thread, not the wall clock: a thread waiting for the GIL spends none.
        self.loop_profile = cProfile.Profile(time.thread_time)
        self.workflow_profile = cProfile.Profile(time.thread_time)

    async def start(self) -> None:
        self.loop_profile = cProfile.Profile(time.thread_time)
        self.workflow_profile = cProfile.Profile(time.thread_time)
        await asyncio.wrap_future(self.executor.submit(self.workflow_profile.enable))
        self.loop_profile.enable()

    async def stop(self, path: str) -> None:
        self.loop_profile.disable()
        await asyncio.wrap_future(self.executor.submit(self.workflow_profile.disable))
        pstats.Stats(self.loop_profile).add(self.workflow_profile).dump_stats(path)


async def serve(address: str, namespace: str, task_queue: str, keys: Path, store: Path) -> None:
    plain = bool(os.environ.get("BENCH_PLAIN"))  # no duraguard at all: the plain loop's worker
    approvers, _ = approver_keys(keys)
    plugin, _ = make_plugin(approvers, store)
    client = await Client.connect(address, namespace=namespace, plugins=[] if plain else [plugin])
    profiled = Profiled() if os.environ.get("BENCH_PROFILE") else None
    extra: dict[str, Any] = {}
    slots = os.environ.get("BENCH_ACTIVITY_SLOTS")
    if slots:
        extra["max_concurrent_activities"] = int(slots)
    if profiled is not None:
        extra["workflow_task_executor"] = profiled.executor
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[PlainLoopWorkflow] if plain else [*WORKFLOWS, PlainLoopWorkflow],
        activities=PLAIN_ACTIVITIES if plain else [*bench_activities(plugin), *PLAIN_ACTIVITIES],
        **extra,
    )
    if os.environ.get("BENCH_SDK_WALK"):  # the SDK's own payload walk, look-ups and all
        _payload_walk.uninstall()
    loop = asyncio.get_running_loop()
    async with worker:
        print("ready", flush=True)
        while True:
            line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
            if line == "cpu":
                print(json.dumps(cpu_by_role()), flush=True)
            elif line == "walk":  # whether duraguard's payload walk is in place
                print(json.dumps(_payload_walk.installed()), flush=True)
            elif line == "profile-start" and profiled is not None:
                await profiled.start()
                print("ok", flush=True)
            elif line.startswith("profile-stop") and profiled is not None:
                await profiled.stop(line.split(" ", 1)[1])
                print("ok", flush=True)
            elif line in ("quit", ""):
                break
            else:
                print(f"unknown command {line!r}", flush=True)


class WorkerProcess:
    """The worker above, as a child process of this one."""

    def __init__(
        self, address: str, namespace: str, task_queue: str, keys: Path, store: Path, **env: str
    ) -> None:
        self.args = [
            sys.executable, "-m", "benchmarks._worker", "--address", address,
            "--namespace", namespace, "--task-queue", task_queue, "--keys", str(keys),
            "--store", str(store),
        ]  # fmt: skip
        self.env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
        self.proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> WorkerProcess:
        self.proc = await asyncio.create_subprocess_exec(
            *self.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=ROOT,
            env=self.env,
        )
        ready = await self._line()
        if ready != "ready":
            raise RuntimeError(f"the benchmark worker did not start: {ready!r}")
        return self

    async def __aexit__(self, *exc: Any) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None and proc.stdin is not None:
            proc.stdin.write(b"quit\n")
            await proc.stdin.drain()
            try:
                await asyncio.wait_for(proc.wait(), timeout=30)
            except TimeoutError:
                proc.kill()  # our own child, by its handle
                await proc.wait()

    async def _line(self) -> str:
        if self.proc is None or self.proc.stdout is None:
            raise RuntimeError("the benchmark worker is not running")
        raw = await self.proc.stdout.readline()
        return raw.decode().strip()

    async def ask(self, command: str) -> str:
        if self.proc is None or self.proc.stdin is None:
            raise RuntimeError("the benchmark worker is not running")
        self.proc.stdin.write(command.encode() + b"\n")
        await self.proc.stdin.drain()
        return await self._line()

    async def cpu(self) -> dict[str, float]:
        """CPU seconds of the worker process so far, by thread role (see :func:`cpu_by_role`)."""
        return dict(json.loads(await self.ask("cpu")))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--keys", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    asyncio.run(serve(args.address, args.namespace, args.task_queue, args.keys, args.store))


if __name__ == "__main__":
    main()
    logging.shutdown()
    sys.stdout.flush()
    os._exit(0)
