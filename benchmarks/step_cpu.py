"""Where a guarded call's worker CPU goes, part by part, measured in one process.

``cpu.py`` and ``at_scale.py`` read a worker process's CPU per call. On a shared 2-core machine
their figure for one variant moves by 1.5 ms and more from one run to the next, more than any
single part of what duraguard adds, so they say where a loop stands but not which part costs
what. This benchmark takes a call apart instead, each part timed on one thread of this process
(``time.thread_time``), the lowest of ``--reps`` repetitions (the least disturbed):

1. It runs ``agent_loop`` over ``--calls`` order lookups (the bench model), unguarded and guarded
   with schema + pii + policy (the default check mode), on a dev server with a worker in this
   process, interleaved ``--reps`` times; it reads the CPU of the worker's two Python threads
   (the event loop, and the one thread workflow activations run on) and keeps the histories.
2. **Steps**: each step the history recorded is run again here as a worker runs it: its input
   decoded, the plugin's own activity run (``ActivityEnvironment``, a fresh plugin and store per
   repetition, the steps in their order) and its output encoded. Per call: the model step, the
   tool step.
3. **Workflow code, replayed**: each history replayed (``Replayer``) on a one-thread executor
   whose CPU is read. A replay does what the run did in workflow code except build each call's
   session view (a step's input is not sent again), so the live figure is somewhat higher.
4. **The guardrails' own work**: ``run_pass`` over one call's arguments (schema, pii, policy, one
   at a time) and its result (pii), and over no guardrail (the pass itself).

Printed in ms per call, unguarded and guarded side by side, and what the guardrails add.
Run: ``.venv/bin/python benchmarks/step_cpu.py [--calls 50] [--reps 5]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from temporalio import activity  # noqa: E402
from temporalio.client import Client, WorkflowHistory  # noqa: E402
from temporalio.contrib.pydantic import pydantic_data_converter  # noqa: E402
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment  # noqa: E402
from temporalio.worker import Replayer, Worker  # noqa: E402

from benchmarks._setup import (  # noqa: E402
    approver_keys,
    bench_activities,
    log,
    make_plugin,
    on_server,
    run_and_exit,
    scratch,
)
from benchmarks._workflows import TOOLS, SearchSessionWorkflow  # noqa: E402
from benchmarks.overhead import table  # noqa: E402
from duraguard import pii, schema  # noqa: E402
from duraguard._types import Context, Placement, Subject  # noqa: E402
from duraguard._wire import MODEL_ACTIVITY  # noqa: E402
from duraguard.checks.policy import policy  # noqa: E402
from duraguard.engine import run_pass  # noqa: E402
from duraguard.guardrail import GuardrailSpec, Resources  # noqa: E402
from duraguard.testing import AgentInput  # noqa: E402

VARIANTS: dict[str, Callable[[], list[GuardrailSpec]]] = {
    "unguarded": list,
    "schema+pii+policy": lambda: [schema(), pii(), policy()],
}
PARTS = ("model step", "tool step", "workflow code, replayed")
LIVE = ("live run: event loop", "live run: workflow code")
"""What the live runs spent on the worker's two Python threads (not in the total of the parts:
the event loop's holds the steps, the workflow code's the replayed part and the views)."""
ARGS = {"order_id": "A17"}
RESULT = {"order_id": "A17", "status": "shipped", "amount": 20.0}


@dataclass
class Figures:
    """Per variant and part, ms per call of each repetition; the guardrails' own, per pass."""

    calls: int
    parts: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    passes: dict[str, list[float]] = field(default_factory=dict)

    def add(self, variant: str, part: str, ms: float) -> None:
        self.parts.setdefault(variant, {}).setdefault(part, []).append(ms)


async def _record(client: Client, tq: str, key: str, calls: int) -> WorkflowHistory:
    spec = AgentInput(
        name="bench",
        prompt=f"Look up orders A0 to A{calls - 1}.",
        model=f"bench:lookup-{calls}",
        tools=["lookup"],
        guardrails=VARIANTS[key](),
        max_iterations=calls + 1,
        approval_timeout_seconds=1.0,
    )
    handle = await client.start_workflow(
        SearchSessionWorkflow.run, spec, id=f"bench-steps-{uuid.uuid4().hex[:10]}", task_queue=tq
    )
    result = await handle.result()
    refused = [v for v in result.verdicts if v.action != "allow"]
    if result.stop_reason != "done" or refused:
        raise RuntimeError(f"{key}: the loop ended {result.stop_reason} with {refused}")
    return await handle.fetch_history()


async def record(
    env: WorkflowEnvironment, calls: int, reps: int, figures: Figures
) -> dict[str, WorkflowHistory]:
    """Each variant's loop run ``reps`` times, interleaved, on a worker in this process whose
    workflow activations run on one thread: the CPU per call of that thread and of the event
    loop's (the steps, the SDK's Python side, this client's few calls); the last histories."""
    keys, _ = approver_keys(scratch("keys.json"))
    plugin, _ = make_plugin(keys, scratch("store"))
    config = env.client.config()
    config["plugins"] = [plugin]
    client = Client(**config)
    tq = f"bench-steps-{uuid.uuid4().hex[:8]}"
    executor = ThreadPoolExecutor(1, thread_name_prefix="bench-workflow")
    histories: dict[str, WorkflowHistory] = {}
    async with Worker(
        client, task_queue=tq, workflows=[SearchSessionWorkflow],
        activities=bench_activities(plugin), workflow_task_executor=executor,
    ):  # fmt: skip
        for key in VARIANTS:
            await _record(client, tq, key, 3)  # the first session, imports, sandbox loads
        for _ in range(reps):
            for key in VARIANTS:
                loop, flow = time.thread_time(), executor.submit(time.thread_time).result()
                histories[key] = await _record(client, tq, key, calls)
                flow = executor.submit(time.thread_time).result() - flow
                figures.add(key, LIVE[0], (time.thread_time() - loop) * 1000 / calls)
                figures.add(key, LIVE[1], flow * 1000 / calls)
    executor.shutdown()
    return histories


def _steps(history: WorkflowHistory) -> list[tuple[str, str, Any]]:
    """Each step the history scheduled: its activity type, id and input payloads, in order."""
    out = []
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            a = e.activity_task_scheduled_event_attributes
            out.append((a.activity_type.name, a.activity_id, list(a.input.payloads)))
    return out


async def time_steps(history: WorkflowHistory, calls: int) -> dict[str, float]:
    """The history's steps run again in order, each decoded, run and encoded as a worker does,
    on a fresh plugin and store: ms of this thread's CPU per call, model steps and tool steps."""
    keys, _ = approver_keys(scratch("keys.json"))
    plugin, _ = make_plugin(keys, scratch("store"))
    runs: dict[str, tuple[Callable[..., Awaitable[Any]], Sequence[type]]] = {}
    for fn in plugin.runtime.activities():
        d = activity._Definition.must_from_callable(fn)
        runs[d.name or ""] = (fn, d.arg_types or ())
    converter = pydantic_data_converter.payload_converter
    env = ActivityEnvironment()
    env.payload_converter = converter
    info = dataclasses.replace(
        env.info, workflow_id=history.workflow_id, workflow_run_id=_run_id(history)
    )
    spent = {"model step": 0.0, "tool step": 0.0}
    for name, activity_id, payloads in _steps(history):
        fn, types = runs[name]
        env.info = dataclasses.replace(info, activity_type=name, activity_id=activity_id)
        started = time.thread_time()
        args = converter.from_payloads(payloads, list(types))
        out = await env.run(fn, *args)
        converter.to_payloads([out])
        spent["model step" if name == MODEL_ACTIVITY else "tool step"] += (
            time.thread_time() - started
        )
    return {k: v * 1000 / calls for k, v in spent.items()}


def _run_id(history: WorkflowHistory) -> str:
    first = history.events[0].workflow_execution_started_event_attributes
    return first.original_execution_run_id


async def time_replays(
    histories: dict[str, WorkflowHistory], calls: int, reps: int, figures: Figures
) -> None:
    """Each history replayed ``reps`` times, interleaved: the workflow thread's CPU per call."""
    keys, _ = approver_keys(scratch("keys.json"))
    plugin, _ = make_plugin(keys, scratch("store"))
    executor = ThreadPoolExecutor(1, thread_name_prefix="bench-replay")
    try:
        replayer = Replayer(
            workflows=[SearchSessionWorkflow], plugins=[plugin], workflow_task_executor=executor
        )
        for h in histories.values():
            await replayer.replay_workflow(h)  # imports, the sandbox's first module loads
        for _ in range(reps):
            for key, h in histories.items():
                before = executor.submit(time.thread_time).result()
                await replayer.replay_workflow(h)
                spent = executor.submit(time.thread_time).result() - before
                figures.add(key, PARTS[2], spent * 1000 / calls)
    finally:
        executor.shutdown()


async def time_passes(reps: int, figures: Figures, n: int = 2000) -> None:
    """``run_pass`` over one call's arguments and result, guardrail by guardrail (µs a pass)."""
    resources = Resources(tools={t.name: t for t in TOOLS})
    ctx = Context(principal="user:ann", agent="bench")

    def subject(placement: Placement, value: Any) -> Subject:
        return Subject(placement=placement, value=value, tool="lookup", call_id="c1", context=ctx)

    cases = {
        "no guardrail (the pass itself), arguments": ([], subject("tool-args", ARGS)),
        "schema, arguments": ([schema()], subject("tool-args", ARGS)),
        "pii, arguments": ([pii()], subject("tool-args", ARGS)),
        "policy, arguments (no session view)": ([policy()], subject("tool-args", ARGS)),
        "pii, result": ([pii()], subject("tool-result", RESULT)),
    }
    for _ in range(reps):
        for name, (specs, subj) in cases.items():
            await run_pass(specs, subj, resources)
            started = time.thread_time()
            for _ in range(n):
                await run_pass(specs, subj, resources)
            figures.passes.setdefault(name, []).append((time.thread_time() - started) / n * 1e6)


async def measure(
    env: WorkflowEnvironment, *, calls: int = 50, reps: int = 5, passes: int = 2000, log: Any = None
) -> Figures:
    say = log or (lambda _m: None)
    figures = Figures(calls)
    histories = await record(env, calls, reps, figures)
    say("steps: loops run")
    for _ in range(reps):
        for key, h in histories.items():
            for part, ms in (await time_steps(h, calls)).items():
                figures.add(key, part, ms)
    say("steps: steps timed")
    await time_replays(histories, calls, reps, figures)
    await time_passes(reps, figures, passes)
    return figures


def render(figures: Figures) -> str:
    low = {k: {p: min(v) for p, v in parts.items()} for k, parts in figures.parts.items()}
    (base, guarded) = list(VARIANTS)
    rows = []
    for part in (*PARTS, "total", *LIVE):

        def ms(key: str, part: str = part) -> float:
            return sum(low[key][p] for p in PARTS) if part == "total" else low[key][part]

        a, b = ms(base), ms(guarded)
        rows.append([part, f"{a:.3f}", f"{b:.3f}", f"{b - a:+.3f}"])
    passes = [[name, f"{min(v):.1f}"] for name, v in figures.passes.items()]
    return "\n".join(
        [
            f"CPU of one thread, ms per call ({figures.calls}-call loop of order lookups; lowest "
            f"of {len(next(iter(figures.passes.values())))} repetitions). Steps: decoded, run and "
            "encoded as a worker does; workflow code: a replay (a live run also builds each "
            "call's session view)",
            table(["part", base, guarded, "added"], rows),
            "",
            "The guardrails' own work: run_pass over one call's values, µs a pass",
            table(["pass", "µs"], passes),
        ]
    )


async def amain(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)

    async def report(env: WorkflowEnvironment) -> str:
        return render(await measure(env, calls=args.calls, reps=args.reps, log=log))

    return await on_server(report)


if __name__ == "__main__":
    run_and_exit(lambda: amain())
