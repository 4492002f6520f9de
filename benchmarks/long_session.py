"""One agent session of 10,000 tool calls through ``agent_loop``, and what its history costs.

The agent (``duraguard.testing.AgentWorkflow``, schema + pii + policy) searches a knowledge
base page after page: ten hits a call, every id, URL, token and number new, so the provenance
index keeps meeting values it has never seen. Every 10th call refunds a hit of the search
before it; the refund at calls 50, 150, 250, ... is over 100, so the policy asks a manager, and
a scripted manager answers the ``duraguard.pending`` query with a signed yes. The loop
continues-as-new whenever the server suggests it, carrying its sealed session.

Printed: history events and bytes of calls 10, 1,000 and 10,000 (and the drift), what an
approved call costs, the carried session's size at each continue-as-new (and what it holds),
the number of runs and the largest payload; then a 1,000-call history (one run, no
continue-as-new) replayed with the plugin, each replay on a quiet dev server (the timers the
run's last workflow tasks leave fire first): no check runs, and its time beside the run's.
Run: ``.venv/bin/python benchmarks/long_session.py [--calls 10000] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
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
from temporalio.testing import WorkflowEnvironment  # noqa: E402
from temporalio.worker import Replayer, Worker  # noqa: E402

from benchmarks._setup import (  # noqa: E402
    Approvals,
    approver_keys,
    bench_activities,
    chain,
    client_with,
    largest_payload,
    log,
    make_plugin,
    on_server,
    run_and_exit,
    scratch,
)
from benchmarks._workflows import ASK_EVERY, SearchSessionWorkflow, asks_in  # noqa: E402
from benchmarks.concurrency import QUIET_WAIT, quiet_server  # noqa: E402
from benchmarks.overhead import CallCost, analyse, table  # noqa: E402
from duraguard import pii, schema  # noqa: E402
from duraguard.checks.policy import policy  # noqa: E402
from duraguard.testing import AgentInput, AgentWorkflow  # noqa: E402

MAX_DRIFT = 0.20
MAX_REPLAY_RATIO = 0.10
ISSUE_REPLAY_RATIO = 0.05
"""Issue 29's target for the same ratio."""


def guardrails() -> list[Any]:
    return [schema(), pii(), policy()]


def agent_input(calls: int, **kw: Any) -> AgentInput:
    return AgentInput(
        name="search",
        prompt="Go through the knowledge base page by page and refund the orders charged twice.",
        model=f"bench:search-{calls}",
        tools=["search", "refund"],
        guardrails=guardrails(),
        max_iterations=calls + 1,
        approval_timeout_seconds=600,
        **kw,
    )


@dataclass(frozen=True)
class Carried:
    """What one run handed the next at continue-as-new, in bytes of compact JSON."""

    after_call: int
    input_bytes: int
    sealed_bytes: int
    parts: dict[str, int]


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def carried(history: Any, last_call: int) -> Carried | None:
    last = history.events[-1]
    if not last.HasField("workflow_execution_continued_as_new_event_attributes"):
        return None
    payload = last.workflow_execution_continued_as_new_event_attributes.input.payloads[0]
    data = json.loads(payload.data)
    sealed = data["loop"]["sealed"]
    snap = sealed["snapshot"]
    ledger = snap["ledger"]
    parts = {
        "entries": _size(ledger.get("entries", [])),
        "provenance": _size(ledger.get("sources", {})),
        "nonces": _size(ledger.get("used_nonces", [])),
        "rows": _size(snap.get("rows", [])),
        "results": _size(snap.get("results", [])),
        "pending msgs": _size(data["loop"].get("pending", [])),
    }
    return Carried(last_call, len(payload.data), _size(sealed), parts)


@dataclass
class Session:
    calls: int
    seconds: float
    stop_reason: str
    runs: int
    events: int
    bytes: int
    per_call: dict[int, CallCost]
    carried: list[Carried]
    largest: tuple[int, str]
    approvals: int
    asked: int
    history_lengths: list[int] = field(default_factory=list)


async def run_session(
    client: Client,
    task_queue: str,
    calls: int,
    private_key: Any,
    *,
    continue_after_events: int | None = None,
    check_mode: str | None = None,
    log: Any = None,
) -> Session:
    """One session of ``calls`` calls through agent_loop, answered by a scripted manager;
    continue-as-new when the server suggests it (or past ``continue_after_events``)."""
    say = log or (lambda _m: None)
    wid = f"bench-long-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    handle = await client.start_workflow(
        AgentWorkflow.run,
        agent_input(calls, continue_after_events=continue_after_events, check_mode=check_mode),
        id=wid,
        task_queue=task_queue,
    )
    approvals = Approvals(handle, private_key)
    person = asyncio.create_task(approvals.run())
    try:
        result = await handle.result()
    finally:
        person.cancel()
    seconds = time.perf_counter() - started
    say(f"session of {calls} calls done in {seconds:.0f} s ({result.stop_reason})")
    first = handle.result_run_id or handle.first_execution_run_id or handle.run_id
    histories = await chain(client, wid, str(first))
    per_call: dict[int, CallCost] = {}
    kept: list[Carried] = []
    events = size = 0
    largest = (0, "-")
    for h in histories:
        stats = analyse(h)
        per_call.update(stats.per_call)
        events += stats.events
        size += stats.bytes
        numbers = [n for n in stats.per_call] or [0]
        c = carried(h, max(numbers))
        if c is not None:
            kept.append(c)
        largest = max(largest, largest_payload(h))
    return Session(
        calls=calls,
        seconds=seconds,
        stop_reason=result.stop_reason,
        runs=len(histories),
        events=events,
        bytes=size,
        per_call=per_call,
        carried=kept,
        largest=largest,
        approvals=len(approvals.answered),
        asked=asks_in(calls),
        history_lengths=[len(h.events) for h in histories],
    )


@dataclass(frozen=True)
class Replay:
    calls: int
    run_seconds: float
    replay_seconds: float
    """The first replay in this process (the replayer's imports and caches included)."""
    checks_during_replay: int
    events: int
    again_seconds: float = 0.0
    """The same history replayed again by the same replayer."""
    cpu_seconds: tuple[float, ...] = ()
    """This process's CPU time in each replay (its Rust threads included)."""

    @property
    def ratio(self) -> float:
        """The slower of the two replays over the run's time (the figure held to the target)."""
        return max(self.replay_seconds, self.again_seconds) / self.run_seconds


@dataclass
class Ran:
    """A session run in one run, for :func:`replay`."""

    calls: int
    seconds: float
    history: Any


async def run_for_replay(
    client: Client, task_queue: str, calls: int, private_key: Any, check_mode: str | None = None
) -> Ran:
    """A ``calls``-call session in one run (no continue-as-new) and its history."""
    wid = f"bench-replay-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    handle = await client.start_workflow(
        SearchSessionWorkflow.run,
        agent_input(calls, check_mode=check_mode),
        id=wid,
        task_queue=task_queue,
    )
    person = asyncio.create_task(Approvals(handle, private_key).run())
    try:
        await handle.result()
    finally:
        person.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await person
    seconds = time.perf_counter() - started
    return Ran(calls, seconds, await handle.fetch_history())


async def replay(ran: Ran, plugin: Any, quiet: float = QUIET_WAIT) -> Replay:
    """The history replayed twice with the plugin, each after waiting (``quiet`` seconds at
    most) for a quiet dev server. Called with the session's worker shut down: a query the
    person sent as the run ended makes that worker replay the whole history to answer it (the
    run left its cache), which would run beside the replay measured here."""
    calls, run_seconds, history = ran.calls, ran.seconds, ran.history
    before = plugin.checks_run
    replayer = Replayer(workflows=[SearchSessionWorkflow], plugins=[plugin])
    times = []
    cpu = []
    for _ in range(2):
        await quiet_server(quiet)
        t0, c0 = time.perf_counter(), time.process_time()
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        if replayed.replay_failure is not None:
            raise RuntimeError(f"the history did not replay: {replayed.replay_failure}")
    return Replay(
        calls, run_seconds, times[0], plugin.checks_run - before, len(history.events), times[1],
        tuple(cpu),
    )  # fmt: skip


@dataclass
class Report:
    session: Session
    replay: Replay | None
    probes: tuple[int, ...]


async def measure(
    env: WorkflowEnvironment,
    *,
    calls: int = 10_000,
    replay_calls: int = 1_000,
    probes: Sequence[int] = (10, 1_000, 10_000),
    continue_after_events: int | None = None,
    check_mode: str | None = None,
    log: Any = None,
    quiet: float = QUIET_WAIT,
) -> Report:
    keys, private_key = approver_keys()
    plugin, _ = make_plugin(keys, scratch("conversations"))
    client = client_with(env, plugin)
    tq = f"bench-long-{uuid.uuid4().hex[:8]}"
    worker = Worker(
        client,
        task_queue=tq,
        workflows=[AgentWorkflow, SearchSessionWorkflow],
        activities=bench_activities(plugin),
    )
    ran = None
    async with worker:
        session = await run_session(
            client, tq, calls, private_key, continue_after_events=continue_after_events,
            check_mode=check_mode, log=log,
        )  # fmt: skip
        if replay_calls:
            ran = await run_for_replay(client, tq, replay_calls, private_key, check_mode)
    replayed = None
    if ran is not None:
        replayed = await replay(ran, plugin, quiet)
        if log:
            log(f"replay of {replay_calls} calls done")
    return Report(session, replayed, tuple(p for p in probes if p <= calls))


def probe(per_call: dict[int, CallCost], n: int) -> tuple[int, CallCost] | None:
    """Call ``n``'s cost, or the nearest ordinary call's (within 9) where ``n`` opened a run (its
    segment then holds the continue-as-new) or asked a person."""
    for m in sorted(range(n - 9, n + 10), key=lambda m: (abs(m - n), m)):
        if m in per_call and m % ASK_EVERY != ASK_EVERY // 2:
            return m, per_call[m]
    return None


def render(report: Report) -> str:
    s = report.session
    out = [
        f"One agent_loop session of {s.calls} tool calls (schema + pii + policy; search results "
        f"of 10 hits with distinct values; every {ASK_EVERY}th call asks a manager)",
        f"  stop reason {s.stop_reason}; {s.runs} runs (continue-as-new when the server "
        f"suggests); {s.seconds:.0f} s; {s.events} events, {s.bytes / 1e6:.1f} MB of history "
        "in all",
        f"  approvals: {s.approvals} signed yes sent, {s.asked} asks expected",
        f"  largest payload: {s.largest[0]:,} bytes ({s.largest[1]})",
        "",
    ]
    rows = []
    base: CallCost | None = None
    for n in report.probes:
        found = probe(s.per_call, n)
        if found is None:
            rows.append([f"call {n}", "-", "-", "-", "-"])
            continue
        m, c = found
        base = base or c
        d = (c.bytes - base.bytes) / base.bytes
        rows.append([f"call {m}", c.events, c.bytes, c.guard_bytes, f"{d:+.1%}"])
    out.append(table(["per call", "events", "bytes", "guard bytes", "vs call 10"], rows))
    last = probe(s.per_call, report.probes[-1]) if report.probes else None
    if base is not None and last is not None:
        d = (last[1].bytes - base.bytes) / base.bytes
        out.append(
            f"  bytes per call, last probe vs call 10: {d:+.1%} (target |drift| <= "
            f"{MAX_DRIFT:.0%}): {'PASS' if abs(d) <= MAX_DRIFT else 'FAIL'}"
        )
    asked = [c for n, c in s.per_call.items() if n % ASK_EVERY == ASK_EVERY // 2]
    if asked:
        out.append(
            f"  a call a manager approved: median {statistics.median(c.events for c in asked):.0f} "
            f"events, {statistics.median(c.bytes for c in asked):.0f} bytes"
        )
    out.append("")
    if s.carried:
        sizes = [c.sealed_bytes for c in s.carried]
        out.append(
            f"Carried at each continue-as-new ({len(s.carried)}): sealed session "
            f"{min(sizes):,}..{max(sizes):,} bytes; input of the next run "
            f"{max(c.input_bytes for c in s.carried):,} bytes at most"
        )
        keys = list(s.carried[0].parts)
        rows = [
            [
                f"after call {c.after_call}",
                c.input_bytes,
                c.sealed_bytes,
                *(c.parts[k] for k in keys),
            ]
            for c in s.carried
        ]
        out.append(table(["run ended", "input", "sealed", *keys], rows))
    if report.replay is not None:
        r = report.replay
        ok = r.ratio <= MAX_REPLAY_RATIO and r.checks_during_replay == 0
        out.append("")
        out.append(
            f"Replay of a {r.calls}-call history ({r.events} events, one run): "
            f"{r.replay_seconds:.2f} s, then {r.again_seconds:.2f} s again, vs {r.run_seconds:.1f} "
            f"s to run it = {r.ratio:.3f} (the slower; target <= {MAX_REPLAY_RATIO}): "
            f"{'PASS' if ok else 'FAIL'}; issue 29's <= {ISSUE_REPLAY_RATIO}: "
            f"{'met' if r.ratio <= ISSUE_REPLAY_RATIO else 'missed'}; checks run during the two "
            f"replays: {r.checks_during_replay}"
        )
        if r.cpu_seconds:
            cpu = ", ".join(f"{c:.2f}" for c in r.cpu_seconds)
            out.append(f"  CPU in the replays (this process, its Rust threads included): {cpu} s")
    return "\n".join(out)


async def amain(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--replay-calls", type=int, default=1_000)
    parser.add_argument("--quick", action="store_true", help="300 calls, a 100-call replay")
    parser.add_argument(
        "--check-mode", default=None, help="auto (default), local, activity, inline"
    )
    args = parser.parse_args(argv)
    calls, replay_calls = (300, 100) if args.quick else (args.calls, args.replay_calls)
    if calls < 11:
        parser.error("--calls must be at least 11 (call 10 is a probe)")
    probes = (10, 1_000, 10_000) if calls >= 10_000 else (10, calls // 2, calls - 5)

    async def report(env: WorkflowEnvironment) -> str:
        return render(
            await measure(
                env,
                calls=calls,
                replay_calls=replay_calls,
                probes=probes,
                check_mode=args.check_mode,
                log=log,
            )
        )

    return await on_server(report)


if __name__ == "__main__":
    run_and_exit(amain)
