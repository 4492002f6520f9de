"""How long one workflow task of duraguard's takes, at its largest: the SDK fails any activation
that runs longer than 2 seconds (its deadlock detector), and a busy worker stretches every one.

Each scenario runs on a local dev server with a worker in this process, and every workflow
activation is timed (wall and the thread's CPU). Printed per scenario: activations, the largest
one's wall and CPU time in ms, and the share of the 2-second budget it took.

* ``turn-N``: one model turn proposing N calls of a trivial tool (schema + pii + policy);
* ``before_calls-N``: a hand-written loop handing N calls to ``session.before_calls`` at once;
* ``feed-N``: an ``agent_loop`` run reading a web feed of N rows of forty words (outside
  content, noted on the worker since ``_outside_keys``), and ``feed-in-workflow-N`` the same
  with that noting held in workflow code, as before it (side by side, in one run);
* ``carried-N``: an ``agent_loop`` session of N search calls that continues-as-new past 4,000
  events; its first run replayed as a worker that lost the run from its cache (a restart, a
  sticky-queue timeout under load) replays it: the last task seals the session, provenance
  index and all, for the next run.

Run: ``.venv/bin/python benchmarks/task_cpu.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from temporalio.client import Client  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402
from temporalio.worker import Replayer, Worker  # noqa: E402
from temporalio.worker.workflow_sandbox import _runner  # noqa: E402

from benchmarks._setup import (  # noqa: E402
    approver_keys,
    client_with,
    make_plugin,
    on_server,
    run_and_exit,
    scratch,
)
from benchmarks._workflows import BeforeCallsInput, BeforeCallsWorkflow  # noqa: E402
from duraguard import pii, schema  # noqa: E402
from duraguard._wire import ModelResponse  # noqa: E402
from duraguard.checks.policy import policy  # noqa: E402
from duraguard.models import calls as turn_of  # noqa: E402
from duraguard.testing import AgentInput, AgentWorkflow  # noqa: E402

BUDGET_MS = 2000.0
FEED_ROWS = 1000


@dataclass
class Timed:
    """The activations of one scenario."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


_LOCK = threading.Lock()
_CURRENT: list[Timed] = []


@contextmanager
def timing(timed: Timed) -> Iterator[Timed]:
    """Time every workflow activation (sandboxed runner) while the block runs."""
    real = _runner._Instance.activate

    def activate(self: Any, act: Any) -> Any:
        w0, c0 = time.perf_counter(), time.thread_time()
        try:
            return real(self, act)
        finally:
            with _LOCK:
                timed.wall.append((time.perf_counter() - w0) * 1000)
                timed.cpu.append((time.thread_time() - c0) * 1000)

    _runner._Instance.activate = activate  # type: ignore[method-assign]
    try:
        yield timed
    finally:
        _runner._Instance.activate = real  # type: ignore[method-assign]


def guardrails() -> list[Any]:
    return [schema(), pii(), policy()]


async def _scripted(
    env: WorkflowEnvironment, turns: list[Any], prompt: str, tools: list[str], timed: Timed
) -> Timed:
    """One ``agent_loop`` run of the scripted ``turns`` (then an answer), its activations
    timed."""
    keys, _ = approver_keys()
    plugin, scripts = make_plugin(keys, scratch("store"))
    name = f"run-{uuid.uuid4().hex[:6]}"
    scripts.register(name, [*turns, ModelResponse(content="done")])
    client = client_with(env, plugin)
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    with timing(timed):
        async with Worker(client, task_queue=tq, workflows=[AgentWorkflow]):
            await client.execute_workflow(
                AgentWorkflow.run,
                AgentInput(prompt=prompt, model=f"scripted:{name}", tools=tools,
                           guardrails=guardrails()),
                id=f"{name}-{uuid.uuid4().hex[:8]}", task_queue=tq,
                execution_timeout=timedelta(minutes=10),
            )  # fmt: skip
    return timed


async def _turn(env: WorkflowEnvironment, n: int, timed: Timed) -> Timed:
    pings = tuple(("ping", {"n": i}) for i in range(n))
    return await _scripted(env, [turn_of(*pings)], "ping them all", ["ping"], timed)


async def _before_calls(env: WorkflowEnvironment, n: int, timed: Timed) -> Timed:
    keys, _ = approver_keys()
    plugin, _ = make_plugin(keys, scratch("store"))
    client = client_with(env, plugin)
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    with timing(timed):
        async with Worker(client, task_queue=tq, workflows=[BeforeCallsWorkflow]):
            await client.execute_workflow(
                BeforeCallsWorkflow.run, BeforeCallsInput(calls=n, guardrails=guardrails()), id=f"bc-{uuid.uuid4().hex[:8]}", task_queue=tq,
                execution_timeout=timedelta(minutes=10),
            )  # fmt: skip
    return timed


async def _feed(env: WorkflowEnvironment, n: int, timed: Timed, *, on_worker: bool = True) -> Timed:
    """A run that reads a web feed of ``n`` long rows, pings, then answers; with ``on_worker`` false,
    the feed is noted in workflow code (the step sends no notes), as before ``_outside_keys``."""
    import duraguard._after
    import duraguard._outside_keys

    if not on_worker:  # this process only: each scenario runs in its own
        duraguard._outside_keys.NOTED_ON_THE_WORKER = 1 << 60  # type: ignore[misc]
        duraguard._after.NOTED_ON_THE_WORKER = 1 << 60  # type: ignore[misc]
    # the ping's check reads the index, where the feed is noted
    turns = [turn_of(("web_feed", {"rows": n})), turn_of(("ping", {"n": 1}))]
    return await _scripted(env, turns, "read the feed", ["web_feed", "ping"], timed)


async def _feed_in_workflow(env: WorkflowEnvironment, n: int, timed: Timed) -> Timed:
    return await _feed(env, n, timed, on_worker=False)


async def _carried(env: WorkflowEnvironment, n: int, timed: Timed) -> Timed:
    """A search session that continues-as-new past 4,000 events (where the server suggests it),
    its first run's history then replayed as a worker that lost the run from its cache does:
    every task again, the last one sealing the session for the next run."""
    keys, _ = approver_keys()
    plugin, _ = make_plugin(keys, scratch("store"))
    client: Client = client_with(env, plugin)
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    spec = AgentInput(
        name="search", prompt="Go through the knowledge base page by page.",
        model=f"bench:search-{n}", tools=["search"], guardrails=guardrails(),
        max_iterations=n + 1, continue_after_events=4000,
    )  # fmt: skip
    wid = f"carried-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=tq, workflows=[AgentWorkflow]):
        handle = await client.start_workflow(
            AgentWorkflow.run, spec, id=wid, task_queue=tq,
            execution_timeout=timedelta(minutes=20),
        )  # fmt: skip
        await handle.result()
    first = client.get_workflow_handle(wid, run_id=handle.first_execution_run_id)
    history = await first.fetch_history()
    with timing(timed):
        await Replayer(workflows=[AgentWorkflow], plugins=[plugin]).replay_workflow(history)
    return timed


ENDS_WITHIN = 240.0
"""Seconds a scenario may take; one still going then is reported as not ended (its process is
stopped: a worker whose workflow thread is stuck cannot shut down)."""
SCENARIOS = {
    "turn": _turn,
    "before_calls": _before_calls,
    "feed": _feed,
    "feed-in-workflow": _feed_in_workflow,
    "carried": _carried,
}


def _row(name: str, t: Timed | None) -> str:
    if t is None or not t.wall:
        return f"{name:<20} {'-':>11} {'-':>12} {'-':>11} {'-':>13}   (the run did not end)"
    top = max(range(len(t.wall)), key=lambda i: t.wall[i])
    wall, cpu = t.wall[top], t.cpu[top]
    return f"{name:<20} {len(t.wall):>11} {wall:>12.0f} {cpu:>11.0f} {wall / BUDGET_MS:>13.0%}"


async def _one(address: str, kind: str, n: int) -> int:
    """One scenario in this process, against the server at ``address``; prints its timings."""
    env = WorkflowEnvironment.from_client(await Client.connect(address))
    timed = await SCENARIOS[kind](env, n, Timed())
    print(json.dumps({"wall": timed.wall, "cpu": timed.cpu}))
    return 0


def _scenario(address: str, kind: str, n: int) -> Timed | None:
    """Run one scenario in a process of its own; ``None`` where it did not end in time."""
    cmd = [sys.executable, __file__, "--one", kind, str(n), "--address", address]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=ENDS_WITHIN)
    except subprocess.TimeoutExpired:
        return None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return None
    data = json.loads(lines[-1])
    return Timed(wall=data["wall"], cpu=data["cpu"])


async def report(env: WorkflowEnvironment, sizes: Sequence[int], carried: int) -> str:
    address = str(env.client.service_client.config.target_host)
    lines = [
        "largest workflow activation per scenario (the SDK's deadlock detector fails one at 2 s)",
        f"{'scenario':<20} {'activations':>11} {'max wall ms':>12} {'its cpu ms':>11} "
        f"{'of the 2 s':>13}",
    ]
    runs = [("turn", n) for n in sizes] + [("before_calls", n) for n in sizes]
    runs += [("feed", FEED_ROWS), ("feed-in-workflow", FEED_ROWS)]
    runs += [("carried", carried)] if carried else []
    for kind, n in runs:
        timed = await asyncio.to_thread(_scenario, address, kind, n)
        lines.append(_row(f"{kind}-{n}", timed))
        print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sizes", default="")
    p.add_argument("--carried", type=int, default=None)
    p.add_argument("--one", nargs=2, metavar=("KIND", "N"))
    p.add_argument("--address")
    args = p.parse_args()
    if args.one:
        kind, n = args.one[0], int(args.one[1])
        run_and_exit(lambda: _one(args.address, kind, n))
    sizes = [int(x) for x in args.sizes.split(",") if x] or ([64] if args.quick else [64, 3000])
    carried = args.carried if args.carried is not None else (0 if args.quick else 400)

    async def amain() -> int:
        return await on_server(lambda env: report(env, sizes, carried))

    run_and_exit(amain)


if __name__ == "__main__":
    main()
