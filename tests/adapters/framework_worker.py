"""An OpenAI Agents SDK worker guarded by duraguard, as its own OS process, for a test to kill
with SIGKILL (``test_framework_faults.py``).

    python -m tests.adapters.framework_worker --address HOST:PORT --task-queue Q \
        --approvers FILE --ready DIR

It serves :class:`~tests.adapters._openai_scenarios.OpenAIScenarios` with the scripted plan
model and writes ``DIR/ready-PID`` once it polls its task queue.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from temporalio.client import Client  # noqa: E402
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin  # noqa: E402
from temporalio.openai_agents.testing import TestModelProvider  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

import duraguard  # noqa: E402
from tests.adapters._guarded_openai import PlanModel, lookup_order  # noqa: E402
from tests.adapters._openai_scenarios import OpenAIScenarios, refund_card  # noqa: E402
from tests.adapters._rules import Rules  # noqa: E402


async def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--address", required=True)
    p.add_argument("--task-queue", required=True)
    p.add_argument("--approvers", required=True)
    p.add_argument("--ready", required=True)
    args = p.parse_args(argv)
    agents = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
        model_provider=TestModelProvider(PlanModel()),
    )
    guard = duraguard.DuraguardPlugin(
        guardrails=[Rules()], approvers=args.approvers, search_attributes=True
    )
    client = await Client.connect(args.address, plugins=[agents, guard])
    worker = Worker(
        client,
        task_queue=args.task_queue,
        workflows=[OpenAIScenarios],
        activities=[lookup_order, refund_card],
        # A dead worker's sticky queue is given up on quickly, so its runs move on.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
    )
    async with worker:
        (Path(args.ready) / f"ready-{os.getpid()}").write_text(args.task_queue)
        await asyncio.Event().wait()
    return 0


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1:]))
    except KeyboardInterrupt:
        pass
