"""One worker process against three on one task queue, one shared PostgreSQL conversation store:
calls per second, bytes per call and the by-reference protocol's miss rate.

The sessions are the fleet suite's (tests/faults/_fleet.py): an ``agent_loop`` of four refunds,
one a model turn, under a guardrail that reads the session (so the guardrails, the session's
entries and the person's turn travel once per run, then by reference). Variants, interleaved
over repetitions, each on fresh worker processes:

* ``1 worker``;
* ``3 workers``: the SDK's defaults, where a step scheduled by a workflow task is handed eagerly
  to the worker that ran that task (a session's steps stay where its workflow is cached);
* ``3 workers, no eager``: eager dispatch off, so every step goes to whichever worker polls
  first (the case the by-reference protocol is weakest in);
* ``3 workers, one killed``: the default, with one worker SIGKILLed once the first session
  ended (the others under way: the killed worker's sessions move to the other two).

A miss is a step that named something by reference on a worker that had not seen it; it is
answered "missing" and the workflow sends it in full (benchmarks/_byref.py reads both from
history). Bytes per call are the history's bytes over the calls; missed bytes are what the
missed steps carried for nothing. On a 2-core machine three worker processes compete with the
dev server and PostgreSQL for the same cores: the throughput column says what the protocol and
the extra processes cost here, not what three hosts would do.

Run: ``.venv/bin/python benchmarks/fleet.py [--sessions 30] [--reps 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from temporalio.client import Client  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402

import duraguard  # noqa: E402
from benchmarks._byref import ByRef, by_reference  # noqa: E402
from benchmarks._setup import log, on_server, run_and_exit  # noqa: E402
from benchmarks.overhead import table  # noqa: E402
from tests._postgres import PostgresServer, binaries  # noqa: E402
from tests.faults._files import Files, make_files  # noqa: E402
from tests.faults._fleet import AMOUNTS, CAP_GUARD, FleetInput, FleetRun  # noqa: E402
from tests.faults._fleet_process import FleetWorker  # noqa: E402

VARIANTS: tuple[tuple[str, int, tuple[str, ...], bool], ...] = (
    ("1 worker", 1, (), False),
    ("3 workers", 3, (), False),
    ("3 workers, no eager", 3, ("--no-eager",), False),
    ("3 workers, one killed", 3, (), True),
)
HEADERS = ("workers", "calls/s", "bytes/call", "by-ref steps", "missed", "miss rate",
           "missed bytes/call", "sessions on >1 worker")  # fmt: skip


@dataclass
class Measured:
    seconds: list[float] = field(default_factory=list)
    protocol: ByRef = field(default_factory=ByRef)
    calls: int = 0
    sessions: int = 0
    spread: int = 0
    """Sessions whose steps ran on more than one worker."""


def _order(desk: Path) -> str:
    order_id = f"B-{uuid.uuid4().hex[:10]}"
    with closing(sqlite3.connect(desk)) as conn, conn:
        conn.execute(
            "INSERT INTO orders (id, customer, item, cents) VALUES (?, ?, ?, ?)",
            (order_id, "bench@example.com", "bench item", 100_000),
        )
    return order_id


def _inputs(files: Files, n: int) -> list[FleetInput]:
    return [
        FleetInput(
            refunds=[{"order_id": _order(files.desk), "amount": a} for a in AMOUNTS],
            guardrails=[CAP_GUARD.spec()],
        )
        for _ in range(n)
    ]


async def _wave(
    client: Client,
    address: str,
    files: Files,
    dsn: str,
    variant: tuple[str, int, tuple[str, ...], bool],
    n: int,
    into: Measured,
) -> None:
    name, count, extra, kill = variant
    queue = f"fleet-bench-{uuid.uuid4().hex[:8]}"
    workers = [
        FleetWorker(f"{name[0]}-{i}", address, queue, files, dsn, *extra) for i in range(count)
    ]
    try:
        for w in workers:
            await w.start()
        specs = _inputs(files, n)
        began = time.perf_counter()
        handles = [
            await client.start_workflow(
                FleetRun.run, spec, id=f"fb-{uuid.uuid4().hex[:10]}", task_queue=queue,
                task_timeout=timedelta(seconds=2), execution_timeout=timedelta(minutes=10),
            )
            for spec in specs
        ]  # fmt: skip
        if kill:  # once the first session ends, the others are under way
            pending = [asyncio.ensure_future(h.result()) for h in handles]
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            workers[0].kill()
        results = await asyncio.gather(*(h.result() for h in handles))
        into.seconds.append(time.perf_counter() - began)
        assert all(r["stop_reason"] == "done" for r in results), results
        for h in handles:
            run = by_reference((await h.fetch_history()).events)
            into.protocol += run
            into.spread += len(run.workers) > 1
        into.calls += n * len(AMOUNTS)
        into.sessions += n
    finally:
        for w in workers:
            w.kill()


def _row(name: str, m: Measured) -> tuple[str, ...]:
    calls_per_wave = m.calls / len(m.seconds)
    p = m.protocol
    return (
        name,
        f"{calls_per_wave / statistics.median(m.seconds):.1f}",
        f"{p.history_bytes / m.calls:,.0f}",
        str(p.by_ref),
        str(p.misses),
        f"{p.miss_rate:.1%}",
        f"{p.missed_bytes / m.calls:,.0f}",
        f"{m.spread}/{m.sessions}",
    )


async def measure(
    env: WorkflowEnvironment, sessions: int, reps: int, dsn: str | None = None
) -> dict[str, Measured]:
    """Every variant's waves; on the PostgreSQL server at ``dsn``, else on one started here."""
    server = None
    if dsn is None:
        bindir = binaries()
        if bindir is None:
            raise SystemExit("PostgreSQL is not installed: apt-get install postgresql")
        server = PostgresServer(bindir).init().start()
        dsn = server.dsn
    folder = Path(tempfile.mkdtemp(prefix="duraguard-fleet-bench-"))
    files = make_files(folder)
    address = str(env.client.service_client.config.target_host)
    client = await Client.connect(address, plugins=[duraguard.DuraguardPlugin()])
    out = {v[0]: Measured() for v in VARIANTS}
    try:
        await _wave(client, address, files, dsn, VARIANTS[0], 2, Measured())  # warm-up
        for rep in range(reps):
            for variant in VARIANTS:
                log(f"fleet: {variant[0]}, repetition {rep + 1} of {reps}")
                await _wave(client, address, files, dsn, variant, sessions, out[variant[0]])
    finally:
        if server is not None:
            server.remove()
        shutil.rmtree(folder, ignore_errors=True)
    return out


def render(measured: dict[str, Measured], sessions: int) -> str:
    rows = [_row(name, m) for name, m in measured.items()]
    return "\n".join(
        [
            f"## Fleet: worker processes on one task queue, one PostgreSQL store ({sessions} "
            f"sessions of {len(AMOUNTS)} calls a wave)",
            "",
            "calls/s: the wave's tool calls over its wall time (median); bytes/call: history "
            "bytes over calls; a by-ref step names the guardrails, entries or turns by "
            "reference; missed: its worker had not seen them and the workflow sent them in full",
            table(HEADERS, rows),
        ]
    )


async def amain(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args(argv)

    async def report(env: WorkflowEnvironment) -> str:
        return render(await measure(env, args.sessions, args.reps), args.sessions)

    return await on_server(report)


if __name__ == "__main__":
    run_and_exit(amain)
