"""Many agents at once on one worker: throughput guarded / unguarded, and per-call latency.

N agent loops (``duraguard.testing.AgentWorkflow``, scripted order lookups) start together on
one worker, which runs in a process of its own (:mod:`benchmarks._worker`); unguarded and
guarded with schema + pii + policy take turns over several repetitions. Throughput is calls per
second from the first start to the last result. A call's latency is read from its history: from
the model step that proposed it completing to its tool step completing (the guardrail pass, the
queue waits and the tool in between). Beside each variant, CPU ms per call of the worker, the
dev server and this process while the agents ran (they share the machine). Run:
``.venv/bin/python benchmarks/concurrency.py [--agents 200] [--calls 10] [--reps 3]
[--activity-slots N]`` (the worker's ``max_concurrent_activities``; the SDK's default is 100).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from temporalio.client import Client  # noqa: E402
from temporalio.contrib.pydantic import pydantic_data_converter  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402

from benchmarks._setup import (  # noqa: E402
    approver_keys,
    log,
    on_server,
    run_and_exit,
    scratch,
    server_cpu_seconds,
)
from benchmarks._worker import WorkerProcess, cpu_seconds  # noqa: E402
from benchmarks.overhead import CHECKS, _marker_type, table  # noqa: E402
from duraguard import pii, schema  # noqa: E402
from duraguard.checks.policy import policy  # noqa: E402
from duraguard.guardrail import GuardrailSpec  # noqa: E402
from duraguard.testing import AgentInput, AgentWorkflow  # noqa: E402

MIN_RATIO = 0.9
MODEL = "duraguard.model"


@dataclass(frozen=True)
class Variant:
    key: str
    guardrails: tuple[GuardrailSpec, ...]
    check_mode: str | None = None


def variants() -> list[Variant]:
    checks = (schema(), pii(), policy())
    return [
        Variant("unguarded", ()),
        Variant("schema+pii+policy", checks),
        Variant("schema+pii+policy, local pass per call", checks, "local"),
    ]


@dataclass
class Wave:
    """One repetition of one variant: N agents started together."""

    seconds: float
    calls: int
    latencies_ms: list[float]
    events: int
    cpu_ms: dict[str, float] = field(default_factory=dict)
    """CPU ms per call while the wave ran: the worker, the dev server, this (client) process."""
    check_steps: int = 0
    """Guardrail steps of their own (``duraguard.check``, local or regular) in all its histories."""

    @property
    def throughput(self) -> float:
        return self.calls / self.seconds


@dataclass
class Report:
    agents: int
    calls: int
    reps: int
    variants: list[Variant]
    waves: dict[int, list[Wave]] = field(default_factory=dict)
    slots: int | None = None
    """The worker's activity slots (``max_concurrent_activities``; ``None``: the SDK's 100)."""


def check_steps(history: Any) -> int:
    """Guardrail steps of their own in one history: local ones by marker, regular ones when
    scheduled (a call judged inside its tool's step has none)."""
    n = 0
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            n += e.activity_task_scheduled_event_attributes.activity_type.name in CHECKS
        elif e.HasField("marker_recorded_event_attributes"):
            n += _marker_type(e) in CHECKS
    return n


def call_latencies(history: Any) -> list[float]:
    """Per tool call: ms from the model step that proposed it completing to the tool step
    completing (tool steps carry the call id ``c<N>`` as activity id)."""
    scheduled: dict[int, str] = {}
    proposed_at: float | None = None
    out: list[float] = []
    for e in history.events:
        at = e.event_time.ToNanoseconds() / 1e6
        if e.HasField("activity_task_scheduled_event_attributes"):
            a = e.activity_task_scheduled_event_attributes
            scheduled[e.event_id] = a.activity_type.name
            call = a.activity_id.split(".")[0]  # inline: c<N>.<digest of what it judged>
            if call.startswith("c") and call[1:].isdigit():
                scheduled[e.event_id] = "tool"
        elif e.HasField("activity_task_completed_event_attributes"):
            kind = scheduled.get(e.activity_task_completed_event_attributes.scheduled_event_id)
            if kind == MODEL:
                proposed_at = at
            elif kind == "tool" and proposed_at is not None:
                out.append(at - proposed_at)
    return out


async def _agent(client: Client, tq: str, v: Variant, calls: int) -> str:
    spec = AgentInput(
        name="bench",
        prompt=f"Look up orders A0 to A{calls - 1}.",
        model=f"bench:lookup-{calls}",
        tools=["lookup"],
        guardrails=list(v.guardrails),
        max_iterations=calls + 1,
        approval_timeout_seconds=1.0,
        check_mode=v.check_mode,
    )
    handle = await client.start_workflow(
        AgentWorkflow.run, spec, id=f"bench-many-{uuid.uuid4().hex[:10]}", task_queue=tq
    )
    result = await handle.result()
    if result.stop_reason != "done" or any(r.action != "allow" for r in result.verdicts):
        raise RuntimeError(f"{v.key}: an agent ended {result.stop_reason}: {result.verdicts}")
    return handle.id


async def _cpu(worker: WorkerProcess) -> dict[str, float]:
    return {
        "worker": sum((await worker.cpu()).values()),
        "server": server_cpu_seconds() or 0.0,
        "client": cpu_seconds(),
    }


QUIET_CPU = 0.05
"""Server CPU seconds per second below which the dev server counts as quiet ..."""
QUIET_WAIT = 20.0
"""... waited for at most this long before a wave."""


async def quiet_server(limit: float = QUIET_WAIT) -> float:
    """Wait until the dev server is quiet: the timers of the wave before (a workflow task's
    timeout is one for every task, firing 10 s after it started) fired, so each wave runs beside
    its own deferred work and not another variant's. Returns the seconds waited."""
    started = time.perf_counter()
    last = server_cpu_seconds()
    if last is None:
        return 0.0
    while time.perf_counter() - started < limit:
        await asyncio.sleep(1.0)
        now = server_cpu_seconds() or 0.0
        if now - last < QUIET_CPU:
            break
        last = now
    return time.perf_counter() - started


async def wave(
    client: Client, tq: str, v: Variant, agents: int, calls: int, worker: WorkerProcess
) -> Wave:
    await quiet_server()
    before = await _cpu(worker)
    started = time.perf_counter()
    ids = await asyncio.gather(*(_agent(client, tq, v, calls) for _ in range(agents)))
    seconds = time.perf_counter() - started
    after = await _cpu(worker)
    spent = {k: (after[k] - before[k]) / (agents * calls) * 1000 for k in before}
    latencies: list[float] = []
    events = steps = 0
    for wid in ids:
        history = await client.get_workflow_handle(wid).fetch_history()
        latencies.extend(call_latencies(history))
        events += len(history.events)
        steps += check_steps(history)
    return Wave(seconds, agents * calls, latencies, events, spent, steps)


async def measure(
    env: WorkflowEnvironment,
    *,
    agents: int = 200,
    calls: int = 10,
    reps: int = 3,
    slots: int | None = None,
    log: Any = None,
) -> Report:
    say = log or (lambda _m: None)
    vs = variants()
    keys = scratch("keys.json")
    approver_keys(keys)
    config = env.client.config()
    config["data_converter"] = pydantic_data_converter
    client = Client(**config)
    tq = f"bench-many-{uuid.uuid4().hex[:8]}"
    address = env.client.service_client.config.target_host
    report = Report(agents, calls, reps, vs, {i: [] for i in range(len(vs))}, slots)
    flags = {"BENCH_ACTIVITY_SLOTS": str(slots)} if slots else {}
    store = scratch("store")
    async with WorkerProcess(address, env.client.namespace, tq, keys, store, **flags) as w:
        for v in vs:
            await wave(client, tq, v, min(agents, 10), 2, w)  # warm the worker up
        for rep in range(reps):
            for i in [(rep + k) % len(vs) for k in range(len(vs))]:
                report.waves[i].append(await wave(client, tq, vs[i], agents, calls, w))
            say(f"concurrency: repetition {rep + 1}/{reps} done")
    return report


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def throughput(report: Report, i: int) -> float:
    return statistics.median(w.throughput for w in report.waves[i])


def ratio(report: Report, i: int = 1) -> float:
    """Throughput of variant ``i`` (default: guarded, a pass per call) over unguarded."""
    return throughput(report, i) / throughput(report, 0)


HEADERS = ["guardrails", "calls/s", "ratio", "p50 ms", "p99 ms", "calls"]
HEADERS += ["worker", "server", "client", "target", "result"]


def cpu_ms(report: Report, i: int, who: str) -> float:
    """Median CPU ms per call of ``who`` (worker, server, client) in variant ``i``'s waves."""
    return statistics.median(w.cpu_ms.get(who, 0.0) for w in report.waves[i])


def render(report: Report) -> str:
    rows = []
    for i, v in enumerate(report.variants):
        lat = [x for w in report.waves[i] for x in w.latencies_ms]
        r = throughput(report, i) / throughput(report, 0)
        rows.append(
            [v.key, f"{throughput(report, i):.1f}", f"{r:.3f}",
             f"{percentile(lat, 50):.0f}", f"{percentile(lat, 99):.0f}", len(lat),
             *(f"{cpu_ms(report, i, who):.1f}" for who in ("worker", "server", "client")),
             "-" if i == 0 else f">= {MIN_RATIO}",
             "-" if i == 0 else ("PASS" if r >= MIN_RATIO else "FAIL")]
        )  # fmt: skip
    return "\n".join(
        [
            f"{report.agents} agents at once on one worker (its own process, "
            f"{report.slots or 'the SDK default of 100'} activity slots), {report.calls} "
            f"calls each; {report.reps} interleaved repetitions, median throughput; each wave starts "
            "on a quiet dev server (the timers of the wave before fired, up to 20 s); latency per "
            "call from the model step proposing it to its tool step completing; CPU ms per call "
            "of the worker, the dev server and the client (this process) while the agents ran",
            table(HEADERS, rows),
        ]
    )


async def amain(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--activity-slots",
        type=int,
        default=None,
        help="the worker's max_concurrent_activities (default: the SDK's 100)",
    )
    args = parser.parse_args(argv)

    async def report(env: WorkflowEnvironment) -> str:
        return render(
            await measure(
                env,
                agents=args.agents,
                calls=args.calls,
                reps=args.reps,
                slots=args.activity_slots,
                log=log,
            )
        )

    return await on_server(report)


if __name__ == "__main__":
    run_and_exit(amain)
