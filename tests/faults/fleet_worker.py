"""A worker of a fleet, as its own OS process: several of them serve one task queue, each with
its own caches, all on one PostgreSQL conversation store.

    python -m tests.faults.fleet_worker --address HOST:PORT --task-queue Q --desk DESK.db \
        --payments PAYMENTS.db --markers DIR --approvers FILE --store DSN --name NAME \
        [--fault POINT [--fault-call c2]] [--slow SECONDS] [--no-eager]

It runs the fault suite's tools (tests/faults/worker.py) and :class:`~tests.faults._fleet.FleetRun`
with :class:`~tests.faults._fleet.FleetModel`. Its worker identity is ``NAME`` (history names the
worker of every step by it). ``--fault`` stops it where the fault worker stops (``--fault-call c2``: only
each run's second call); ``--slow`` makes each model turn that much slower; ``--no-eager`` turns
off eager activity dispatch (a step then goes to whichever worker polls first, not to the one
that ran the workflow task scheduling it). It writes ``DIR/ready-PID`` once it polls.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "samples" / "idempotent_tool")]

from pay_invoice import open_payments  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

import duraguard  # noqa: E402
from activities.store import open_db  # noqa: E402
from duraguard.postgres import PostgresConversations  # noqa: E402
from tests.faults._fleet import CAP_GUARD, FleetModel, FleetRun  # noqa: E402
from tests.faults._guards import ASK, HOLD, Stops  # noqa: E402
from tests.faults._workflows import FaultRun  # noqa: E402
from tests.faults.worker import desk_tools  # noqa: E402


async def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    for name in ("address", "task-queue", "desk", "payments", "markers", "approvers", "store"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--fault")
    p.add_argument("--fault-call", default="", help="stop only this call of each run (c2)")
    p.add_argument("--slow", type=float, default=0.0)
    p.add_argument("--no-eager", action="store_true")
    args = p.parse_args(argv)
    Stops.point, Stops.markers = args.fault, Path(args.markers)
    Stops.only = f"/{args.fault_call}" if args.fault_call else ""
    plugin = duraguard.DuraguardPlugin(
        tools=desk_tools(open_db(args.desk), open_payments(args.payments)),
        models={"fleet": FleetModel(args.slow)},
        guardrails=[CAP_GUARD, HOLD, ASK],
        approvers=args.approvers,
        # Nothing kept in memory: every model step reads the tool results it is sent by digest
        # from PostgreSQL, as a worker on another host would (a model step mostly follows its
        # tool step on the same worker, which would otherwise find the result in memory).
        conversations=PostgresConversations(args.store, kept_in_memory=0),
    )
    client = await Client.connect(args.address, plugins=[plugin])
    worker = Worker(
        client,
        task_queue=args.task_queue,
        workflows=[FleetRun, FaultRun],
        identity=args.name,
        disable_eager_activity_execution=args.no_eager,
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
    )
    async with worker:
        (Stops.markers / f"ready-{os.getpid()}").write_text(args.name)
        await asyncio.Event().wait()
    return 0


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1:]))
    except KeyboardInterrupt:
        pass
