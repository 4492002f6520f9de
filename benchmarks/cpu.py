"""Python CPU per guarded call, measured in the worker's own process.

The worker runs as a child process (:mod:`benchmarks._worker`); before and after each agent
loop this process reads the child's CPU time (every thread of it: the SDK's core threads
included), so the client, the server and other load on the machine do not count. The loop is
``duraguard.testing.AgentWorkflow`` with a scripted model making N order lookups, unguarded and
guarded with schema + pii (+ policy), interleaved over several repetitions; the figure is the
median CPU ms per call, and what a guard adds is its difference from the unguarded loop.

With ``--profile PATH`` the worker's Python threads are profiled (cProfile) during the guarded
runs and the top functions are printed. Run:
``.venv/bin/python benchmarks/cpu.py [--calls 50] [--reps 5] [--profile /tmp/guarded.prof]``.
"""

from __future__ import annotations

import argparse
import pstats
import statistics
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from temporalio.client import Client  # noqa: E402
from temporalio.contrib.pydantic import pydantic_data_converter  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402

from benchmarks._setup import (  # noqa: E402
    NOOP,
    approver_keys,
    log,
    on_server,
    run_and_exit,
    scratch,
)
from benchmarks._worker import WorkerProcess  # noqa: E402
from benchmarks._workflows import HandInput, HandLoopWorkflow  # noqa: E402
from benchmarks.overhead import table  # noqa: E402
from duraguard import pii, schema  # noqa: E402
from duraguard.checks.policy import policy  # noqa: E402
from duraguard.guardrail import GuardrailSpec  # noqa: E402
from duraguard.testing import AgentInput, AgentWorkflow  # noqa: E402

MAX_ADDED_MS = 5.0


@dataclass(frozen=True)
class Variant:
    key: str
    guardrails: tuple[GuardrailSpec, ...]
    check_mode: str | None = None
    hand: str | None = None
    """A hand-written loop instead of agent_loop, with its own check step: none/local/activity."""


def variants() -> list[Variant]:
    return [
        Variant("unguarded agent_loop", ()),
        Variant("hand loop, no check", (), hand="none"),
        Variant("hand loop + own local check", (), hand="local"),
        Variant("duraguard noop pass", (NOOP.spec(),), "local"),
        Variant("duraguard schema+pii", (schema(), pii())),
        Variant("duraguard schema+pii+policy", (schema(), pii(), policy())),
        Variant("duraguard schema+pii+policy, local pass", (schema(), pii(), policy()), "local"),
    ]


PROFILED = "duraguard schema+pii+policy"
"""The variant ``--profile`` profiles, by key: schema + pii + policy, judged the default way
(issue 29's guarded loop)."""


@dataclass
class Report:
    calls: int
    reps: int
    variants: list[Variant]
    ms_per_call: dict[int, list[dict[str, float]]]
    """Variant index -> per repetition, CPU ms per call: total and by thread role."""
    profile: str | None = None


async def _loop(client: Client, tq: str, v: Variant, calls: int) -> None:
    if v.hand is not None:
        ran = await client.execute_workflow(
            HandLoopWorkflow.run,
            HandInput(
                prompt="Look up the orders.", model=f"bench:lookup-{calls}", tools=["lookup"],
                check=v.hand,  # type: ignore[arg-type]
            ),
            id=f"bench-cpu-{uuid.uuid4().hex[:10]}",
            task_queue=tq,
        )  # fmt: skip
        if ran != calls:
            raise RuntimeError(f"{v.key}: {ran} of {calls} calls ran")
        return
    spec = AgentInput(
        name="bench",
        prompt=f"Look up orders A0 to A{calls - 1}.",
        model=f"bench:lookup-{calls}",
        tools=["lookup"],
        guardrails=list(v.guardrails),
        max_iterations=calls + 1,
        check_mode=v.check_mode,
        approval_timeout_seconds=1.0,
    )
    result = await client.execute_workflow(
        AgentWorkflow.run, spec, id=f"bench-cpu-{uuid.uuid4().hex[:10]}", task_queue=tq
    )
    refused = [r for r in result.verdicts if r.action != "allow"]
    if result.stop_reason != "done" or refused:
        raise RuntimeError(f"{v.key}: the loop ended {result.stop_reason} with {refused}")


async def measure(
    env: WorkflowEnvironment,
    *,
    calls: int = 50,
    reps: int = 5,
    warmup: int = 3,
    profile: str | None = None,
    log: Any = None,
) -> Report:
    say = log or (lambda _m: None)
    vs = variants()
    keys = scratch("keys.json")
    approver_keys(keys)
    config = env.client.config()
    config["data_converter"] = pydantic_data_converter
    client = Client(**config)
    tq = f"bench-cpu-{uuid.uuid4().hex[:8]}"
    address = env.client.service_client.config.target_host
    ms: dict[int, list[dict[str, float]]] = {i: [] for i in range(len(vs))}
    flags = {"BENCH_PROFILE": "1"} if profile else {}
    store = scratch("store")
    async with WorkerProcess(address, env.client.namespace, tq, keys, store, **flags) as w:
        for v in vs:
            await _loop(client, tq, v, warmup)  # imports, sandbox caches, the first session
        for rep in range(reps):
            for i in [(rep + k) % len(vs) for k in range(len(vs))]:
                c0 = await w.cpu()
                await _loop(client, tq, vs[i], calls)
                c1 = await w.cpu()
                spent = {k: (c1[k] - c0[k]) / calls * 1000 for k in c0}
                ms[i].append({"total": sum(spent.values()), **spent})
            say(f"cpu: repetition {rep + 1}/{reps} done")
        if profile:
            await w.ask("profile-start")
            profiled = next(v for v in vs if v.key == PROFILED)
            for _ in range(max(reps, 1)):
                await _loop(client, tq, profiled, calls)
            await w.ask(f"profile-stop {profile}")
    return Report(calls, reps, vs, ms, profile)


def median_ms(report: Report, i: int, role: str = "total") -> float:
    return statistics.median(r[role] for r in report.ms_per_call[i])


def render(report: Report) -> str:
    base = median_ms(report, 0)
    rows = []
    for i, v in enumerate(report.variants):
        med = median_ms(report, i)
        totals = [r["total"] for r in report.ms_per_call[i]]
        added = med - base
        ok = "-" if i == 0 else ("PASS" if added <= MAX_ADDED_MS else "FAIL")
        rows.append(
            [v.key, f"{med:.2f}", f"{min(totals):.2f}-{max(totals):.2f}",
             *(f"{median_ms(report, i, r):.2f}" for r in ("loop", "workflow", "other")),
             "-" if i == 0 else f"{added:+.2f}", "-" if i == 0 else f"<= +{MAX_ADDED_MS:.0f}", ok]
        )  # fmt: skip
    out = [
        f"Worker process CPU per call ({report.calls}-call agent loop, order lookups; "
        f"{report.reps} interleaved repetitions, medians). By thread: the event loop "
        "(activities, local activities, the SDK's Python side), workflow activations "
        "(sandboxed workflow code), other (the SDK's Rust core)",
        table(
            [
                "guardrails",
                "CPU ms/call",
                "range",
                "loop",
                "workflow",
                "other",
                "added ms",
                "target",
                "result",
            ],
            rows,
        ),
    ]
    if report.profile:
        out.append("")
        out.append("Profile of the guarded runs (the worker's Python threads), top 25 by own time:")
        stats = pstats.Stats(report.profile)
        out.append(_top(stats, 25))
    return "\n".join(out)


def _top(stats: pstats.Stats, n: int) -> str:
    rows = []
    entries = stats.stats  # type: ignore[attr-defined]
    ranked = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)[:n]
    for (file, line, name), (_cc, calls, tottime, cumtime, _callers) in ranked:
        where = f"{Path(file).name}:{line}({name})"
        rows.append([where[:70], calls, f"{tottime:.3f}", f"{cumtime:.3f}"])
    return table(["function", "calls", "own s", "cum s"], rows)


async def amain(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--profile", default=None, help="cProfile the guarded runs into PATH")
    args = parser.parse_args(argv)

    async def report(env: WorkflowEnvironment) -> str:
        return render(
            await measure(env, calls=args.calls, reps=args.reps, profile=args.profile, log=log)
        )

    return await on_server(report)


if __name__ == "__main__":
    run_and_exit(amain)
