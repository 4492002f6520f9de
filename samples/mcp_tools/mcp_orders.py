"""An MCP server's tools, guarded: kinds from the server's hints, every verdict a recorded step.

The worker asks the MCP server (``orders_server.py``, over stdio) for its tools and builds a
duraguard tool from each (:func:`duraguard.mcp.list_mcp_tools`): ``get_order`` is read-only, so
a read; ``cancel_order`` is destructive, a write the policy asks a person about; ``post_webhook``
reaches the open world, a send whose URLs the policy's address check judges. A workflow makes
three calls with ``guarded_call`` and ``policy()``: the read runs, the webhook to a cloud metadata
address is refused before it reaches the server, and a read the server answers with ``isError``
comes back as a failure the model would read. Then the history replays and no guardrail runs.

Run it: ``python samples/mcp_tools/mcp_orders.py`` (starts an embedded Temporal dev server
unless ``TEMPORAL_ADDRESS`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Replayer, Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.checks.policy import policy
    from duraguard.server import DevServer

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_order", {"order_id": "A1"}),
    ("post_webhook", {"url": "http://169.254.169.254/latest/meta-data/", "body": "refund done"}),
    ("order_history", {"order_id": "A9"}),
]


@workflow.defn
class McpOrders:
    @workflow.run
    async def run(self) -> list[dict[str, Any]]:
        out = []
        for tool, args in CALLS:
            o = await duraguard.guarded_call(tool, args, guardrails=[policy()])
            out.append({"tool": tool, "action": o.verdict.action, "ran": o.ran, "result": o.result})
        return out


def connect() -> Any:
    """A stdio client: the server is a subprocess of the worker, one session for every call."""
    import mcp

    server = Path(__file__).with_name("orders_server.py")
    return mcp.Client(mcp.StdioServerParameters(command=sys.executable, args=[str(server)]))


async def main() -> int:
    from duraguard.mcp import list_mcp_tools

    tools = await list_mcp_tools(connect)
    for t in tools:
        print(f"tool:     {t.name:14} {t.kind:5} asks={t.approval_required}")
    plugin = duraguard.DuraguardPlugin(tools=tools)
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
        task_queue = f"mcp-tools-{uuid.uuid4().hex[:8]}"
        async with Worker(client, task_queue=task_queue, workflows=[McpOrders]):
            handle = await client.start_workflow(
                McpOrders.run, id=f"mcp-tools-{uuid.uuid4().hex[:8]}", task_queue=task_queue
            )
            result = await handle.result()
        await duraguard.mcp.close_sessions()  # the worker stopped: its server session goes
        for row in result:
            print(f"call:     {row['tool']:14} {row['action']:5} ran={row['ran']} "
                  f"{json.dumps(row['result'])[:200]}")  # fmt: skip

        history = await handle.fetch_history()
        before = plugin.checks_run
        await Replayer(workflows=[McpOrders], plugins=[plugin]).replay_workflow(history)
        print(f"replayed: guardrail passes run {before} before, {plugin.checks_run} after")
        return 0 if plugin.checks_run == before else 1


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not interpreter shutdown: the SDK can abort there (sdk-python issue 300)
