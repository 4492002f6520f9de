"""Every benchmark of issue 12 in one run, on one dev server, and the README's "Measured" table.

In order (each interleaves its own variants over repetitions and prints its own section):

1. :mod:`benchmarks.overhead`: wall time of an agent loop guarded / unguarded (the default,
   judged in the tool's step; a local pass per call; a regular-activity pass; a hand-written
   loop with and without its own check activity), history
   events and bytes per call;
2. :mod:`benchmarks.cpu`: Python CPU ms per call in the worker's own process;
3. :mod:`benchmarks.concurrency`: many agents at once on one worker, throughput and latency;
4. :mod:`benchmarks.long_session`: one agent session of 10,000 tool calls through agent_loop,
   continuing-as-new, with approvals; then a 1,000-call history replayed;
5. :mod:`benchmarks.policy`: the policy pipeline in-process, warm and cold.

Then the table, with the machine and its load. ``--quick`` runs every part at a small size
(about a minute; ``tests/test_benchmarks.py`` runs it) and says the figures are not the real
ones. Run: ``.venv/bin/python benchmarks/measured.py [--quick]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from temporalio.testing import WorkflowEnvironment  # noqa: E402

from benchmarks import concurrency, cpu, long_session, overhead  # noqa: E402
from benchmarks._setup import log, on_server, run_and_exit  # noqa: E402
from benchmarks.overhead import table  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    overhead_calls: int = 50
    overhead_reps: int = 5
    overhead_session: int = 400
    cpu_calls: int = 100
    cpu_reps: int = 5
    agents: int = 200
    agent_calls: int = 10
    agent_reps: int = 3
    session_calls: int = 10_000
    replay_calls: int = 1_000
    continue_after_events: int | None = None
    policy_iterations: int = 3_000
    warmup: int = 3
    quiet: float = concurrency.QUIET_WAIT
    """The most seconds waited for a quiet dev server before each replay of the long session."""


FULL = Sizes()
QUICK = Sizes(
    overhead_calls=11, overhead_reps=1, overhead_session=20, cpu_calls=10, cpu_reps=1,
    agents=20, agent_calls=5, agent_reps=1, session_calls=150, replay_calls=60,
    continue_after_events=700, policy_iterations=300, warmup=1,
)  # fmt: skip


@dataclass
class Policy:
    warm_us: float | None
    cold_us: float | None
    text: str


@dataclass
class Everything:
    sizes: Sizes
    quick: bool
    machine: str
    load: tuple[tuple[float, float, float], tuple[float, float, float]] = ((0, 0, 0), (0, 0, 0))
    seconds: float = 0.0
    overhead: overhead.Report | None = None
    cpu: cpu.Report | None = None
    concurrency: concurrency.Report | None = None
    session: long_session.Report | None = None
    policy: Policy | None = None
    sections: list[str] = field(default_factory=list)


def machine() -> str:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (
        f"{os.cpu_count()} cores ({model}), {platform.system()}, Python {platform.python_version()}"
    )


async def run_policy(iterations: int) -> Policy:
    """``benchmarks/policy.py`` as its authors wrote it; its own printout, read back."""
    from benchmarks import policy

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        await policy.measure(None, iterations)
    text = out.getvalue()
    warm = re.search(r"median (\d+) us per call", text)
    cold = re.search(r"cold .*?median (\d+) us", text)
    return Policy(
        float(warm.group(1)) if warm else None, float(cold.group(1)) if cold else None, text
    )


async def measure_all(
    env: WorkflowEnvironment, sizes: Sizes, *, quick: bool = False, log: Any = None
) -> Everything:
    say = log or (lambda _m: None)
    out = Everything(sizes=sizes, quick=quick, machine=machine())
    started = time.perf_counter()
    before = os.getloadavg()
    out.overhead = await overhead.measure(
        env, calls=sizes.overhead_calls, reps=sizes.overhead_reps,
        session_calls=sizes.overhead_session,
        probes=(min(10, max(2, sizes.overhead_session // 2)), sizes.overhead_session),
        warmup=sizes.warmup, log=say,
    )  # fmt: skip
    out.sections.append(overhead.render(out.overhead))
    say("overhead done")
    out.cpu = await cpu.measure(
        env, calls=sizes.cpu_calls, reps=sizes.cpu_reps, warmup=sizes.warmup, log=say
    )
    out.sections.append(cpu.render(out.cpu))
    say("cpu done")
    # A worker for N agents at once is given more activity slots than agents (2N): with the
    # SDK's 100, 200 agents keep every slot taken and started steps wait in the worker.
    out.concurrency = await concurrency.measure(
        env, agents=sizes.agents, calls=sizes.agent_calls, reps=sizes.agent_reps,
        slots=2 * sizes.agents, log=say,
    )  # fmt: skip
    out.sections.append(concurrency.render(out.concurrency))
    say("concurrency done")
    n = sizes.session_calls
    probes = (10, 1_000, 10_000) if n >= 10_000 else (10, n // 2, n)
    out.session = await long_session.measure(
        env, calls=n, replay_calls=sizes.replay_calls, probes=probes,
        continue_after_events=sizes.continue_after_events, log=say, quiet=sizes.quiet,
    )  # fmt: skip
    out.sections.append(long_session.render(out.session))
    say("long session done")
    out.policy = await run_policy(sizes.policy_iterations)
    out.sections.append(out.policy.text.rstrip())
    out.seconds = time.perf_counter() - started
    out.load = (before, os.getloadavg())
    return out


def _fmt(x: float | None, spec: str = ".0f") -> str:
    return "-" if x is None else format(x, spec)


def summary(e: Everything) -> list[list[str]]:
    """The README's rows: measure, measured, target, result."""
    rows: list[list[str]] = []
    o = e.overhead
    if o is not None:
        base = statistics.median(o.seconds[0])
        for i, v in enumerate(o.variants):
            if i == 0 or v.hand:
                continue
            ratio = statistics.median(o.seconds[i]) / base
            limit = (
                overhead.MAX_ACTIVITY_RATIO if v.check_mode == "activity" else overhead.MAX_RATIO
            )
            rows.append(
                [f"wall time guarded / unguarded, {v.key}, {v.mode_label}", f"{ratio:.3f}",
                 f"<= {limit}", overhead.verdict(ratio <= limit)]
            )  # fmt: skip
        hand = [i for i, v in enumerate(o.variants) if v.hand]
        if len(hand) == 2:
            plain, checked = (statistics.median(o.seconds[i]) for i in hand)
            rows.append(
                ["  hand-written loop with its own check activity / without", f"{checked / plain:.3f}", "(reference)", "-"]
            )  # fmt: skip
        for i, v in enumerate(o.variants):
            if "policy" not in v.key or v.check_mode not in (None, "local"):
                continue
            added = overhead.added_events(o.loops[i].stats, o.loops[0].stats)
            rows.append(
                [f"history events added per guarded call, {v.mode_label}", f"+{added}",
                 f"<= {overhead.MAX_ADDED_EVENTS}", overhead.verdict(added <= overhead.MAX_ADDED_EVENTS)]
            )  # fmt: skip
    c = e.cpu
    if c is not None:
        base = cpu.median_ms(c, 0)
        for i, v in enumerate(c.variants):
            if i == 0:
                continue
            added = cpu.median_ms(c, i) - base
            guarded = v.key.startswith("duraguard schema+pii+policy")
            rows.append(
                [f"worker CPU ms per call added, {v.key}", f"{added:+.1f}",
                 f"<= +{cpu.MAX_ADDED_MS:.0f}" if guarded else "(reference)",
                 overhead.verdict(added <= cpu.MAX_ADDED_MS) if guarded else "-"]
            )  # fmt: skip
    k = e.concurrency
    if k is not None:
        lat = {i: [x for w in k.waves[i] for x in w.latencies_ms] for i in range(len(k.variants))}
        for g in range(1, len(k.variants)):
            r = concurrency.ratio(k, g)
            rows.append(
                [f"{k.agents} agents at once ({k.slots or 100} activity slots), throughput guarded / unguarded, {k.variants[g].key}",
                 f"{r:.3f}", f">= {concurrency.MIN_RATIO}", overhead.verdict(r >= concurrency.MIN_RATIO)]
            )  # fmt: skip
            rows.append(
                ["  per-call latency p50 / p99, unguarded -> guarded",
                 f"{concurrency.percentile(lat[0], 50):.0f}/{concurrency.percentile(lat[0], 99):.0f} -> "
                 f"{concurrency.percentile(lat[g], 50):.0f}/{concurrency.percentile(lat[g], 99):.0f} ms",
                 "reported", "-"]
            )  # fmt: skip
    s = e.session
    if s is not None:
        sess = s.session
        probes = [long_session.probe(sess.per_call, n) for n in s.probes]
        found = [p for p in probes if p is not None]
        if found:
            first, last = found[0][1].bytes, found[-1][1].bytes
            d = (last - first) / first
            rows.append(
                [f"one agent_loop session of {sess.calls} calls: bytes per call, "
                 + " -> ".join(f"#{m}" for m, _ in found),
                 " -> ".join(f"{cost.bytes}" for _, cost in found) + f" B ({d:+.1%})",
                 f"within {long_session.MAX_DRIFT:.0%}", overhead.verdict(abs(d) <= long_session.MAX_DRIFT)]
            )  # fmt: skip
        carried = max((x.sealed_bytes for x in sess.carried), default=0)
        rows.append(
            ["  runs (continue-as-new), approvals, largest payload, carried session",
             f"{sess.runs} runs, {sess.approvals}/{sess.asked} approved, "
             f"{sess.largest[0] / 1024:.0f} KB, <= {carried / 1024:.0f} KB", "bounded",
             overhead.verdict(sess.stop_reason == "done" and sess.largest[0] < 2 * 1024 * 1024)]
        )  # fmt: skip
        if s.replay is not None:
            rp = s.replay
            ratio = rp.ratio
            rows.append(
                [f"replay of a {rp.calls}-call history / the run (checks run: {rp.checks_during_replay})",
                 f"{ratio:.3f} ({max(rp.replay_seconds, rp.again_seconds):.1f} s / {rp.run_seconds:.0f} s)",
                 f"<= {long_session.MAX_REPLAY_RATIO}",
                 overhead.verdict(ratio <= long_session.MAX_REPLAY_RATIO and rp.checks_during_replay == 0)]
            )  # fmt: skip
    p = e.policy
    if p is not None:
        rows.append(
            ["policy in-process per call, warm / cold", f"{_fmt(p.warm_us)} / {_fmt(p.cold_us)} us",
             "<= 200 warm", overhead.verdict(p.warm_us is not None and p.warm_us <= 200)]
        )  # fmt: skip
    return rows


def render(e: Everything) -> str:
    out = [*e.sections, ""]
    label = "QUICK (small sizes: smoke test, not the figures)" if e.quick else "full sizes"
    out.append(
        f"Measured ({label}) in {e.seconds / 60:.1f} min on {e.machine}; load average "
        f"{e.load[0][0]:.2f} before, {e.load[1][0]:.2f} after (other work on the machine)"
    )
    out.append(table(["measure", "measured", "target", "result"], summary(e)))
    return "\n".join(out)


async def amain(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, about a minute")
    args = parser.parse_args(argv)

    async def report(env: WorkflowEnvironment) -> str:
        return render(
            await measure_all(env, QUICK if args.quick else FULL, quick=args.quick, log=log)
        )

    return await on_server(report)


if __name__ == "__main__":
    run_and_exit(amain)
