"""The smallest guarded agent: one tool, two guardrails, one run, then a replay that asks nothing.

A scripted model first calls ``lookup_order`` with a number where the tool wants a string;
``schema`` refuses the call and the model reads why. It calls again correctly; the order it gets
back holds the customer's email, which ``pii`` masks before the model sees it. Then the model
answers. The run's history is replayed with the same plugin: every verdict is read back from
history, so no guardrail is asked again.

Run it: ``python samples/first_guardrail/first_agent.py`` (starts an embedded Temporal dev
server unless ``TEMPORAL_ADDRESS`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Replayer, Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.models import ScriptedModels, answer, calls
    from duraguard.server import DevServer


@duraguard.tool(kind="read")
def lookup_order(order_id: str) -> dict[str, object]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped", "email": "ana@example.com"}


@workflow.defn
class FirstAgent:
    @workflow.run
    async def run(self, request: str) -> duraguard.AgentResult:
        return await duraguard.agent_loop(
            "support",
            prompt=request,
            model="scripted:first",
            tools=["lookup_order"],
            guardrails=[duraguard.schema(), duraguard.pii()],
            max_iterations=4,
        )


# The model, scripted: a wrong call, the corrected call, an answer.
MODELS = ScriptedModels(
    {
        "first": [
            calls(("lookup_order", {"order_id": 42})),
            calls(("lookup_order", {"order_id": "A-42"})),
            answer("Order A-42 has shipped."),
        ]
    }
)


async def main() -> int:
    plugin = duraguard.DuraguardPlugin(tools=[lookup_order], models={"scripted": MODELS})
    async with contextlib.AsyncExitStack() as stack:
        address = os.environ.get("TEMPORAL_ADDRESS")
        if not address:
            server = await stack.enter_async_context(DevServer(ui=False))
            address = server.address
        client = await Client.connect(
            address,
            namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"),
            plugins=[plugin],
        )
        task_queue = f"first-guardrail-{uuid.uuid4().hex[:8]}"
        async with Worker(client, task_queue=task_queue, workflows=[FirstAgent]):
            handle = await client.start_workflow(
                FirstAgent.run,
                "Where is order A-42?",
                id=f"first-guardrail-{uuid.uuid4().hex[:8]}",
                task_queue=task_queue,
            )
            result = await handle.result()

        print(f"stop reason: {result.stop_reason}")
        print(f"answer:      {result.answer}")
        for v in result.verdicts:
            print(f"verdict:     {v.action:5} {v.tool} ({v.placement}) by {v.by}")

        # Replay: the verdicts come back from history; no guardrail runs again.
        history = await handle.fetch_history()
        before = plugin.checks_run
        await Replayer(workflows=[FirstAgent], plugins=[plugin]).replay_workflow(history)
        print(f"replayed:    guardrail passes run {before} before, {plugin.checks_run} after")
        return 0 if plugin.checks_run == before else 1


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not interpreter shutdown: the SDK can abort there (sdk-python issue 300)
