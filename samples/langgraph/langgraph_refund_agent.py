"""A LangGraph agent on Temporal, guarded by duraguard with one tool node.

The graph is LangGraph's own ReAct shape under Temporal's LangGraph plugin: a model node that
runs as an activity and a tool node that runs in the workflow. duraguard's
``GuardedToolNode`` is LangGraph's ``ToolNode`` with every call judged::

    GuardedToolNode(TOOLS, guardrails=GUARDRAILS, interrupt_on={"refund_card": True})

and the workflow runs the graph with ``duraguard.langgraph.run(app, input)``. A refund for an
order that was never looked up is refused (the model reads the refusal as the call's
``ToolMessage`` and corrects itself), the card number the model wrote into a note is masked
before ``add_note`` receives it, and the refund (``interrupt_on``, LangGraph's human-in-the-loop
mark) waits, durably, for alice's signed yes. The refund's I/O is an activity of its own. The
model node follows a script (no network).

Run it: ``python samples/langgraph/langgraph_refund_agent.py`` (starts an embedded Temporal dev
server unless ``TEMPORAL_ADDRESS`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import sys
import uuid
from datetime import timedelta
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage, convert_to_messages
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.langgraph import LangGraphPlugin, graph
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard import ApproverKeys, PendingAsk, Subject, Verdict
    from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
    from duraguard.langgraph import GuardedToolNode, run
    from duraguard.server import DevServer
    from duraguard.types import AuditRow


class LookedUpFirst(duraguard.Guardrail):
    """A refund needs the order looked up earlier in the session (it reads the ledger)."""

    name = "looked-up-first"
    placements = frozenset({"tool-args"})

    async def check(self, subject: Subject) -> Verdict:
        if subject.tool != "refund_card" or subject.session is None:
            return Verdict.allow()
        order = subject.value.get("order_id")
        seen = [e for e in subject.session.entries if e.tool == "lookup_order" and e.ran]
        if any(e.args.get("order_id") == order for e in seen):
            return Verdict.allow()
        return Verdict.deny(f"look order {order} up before refunding it")


LOOKED_UP = LookedUpFirst()
GUARDRAILS = [duraguard.pii(rules=["credit-card"]), LOOKED_UP]
STEP = timedelta(seconds=30)

TURNS: list[tuple[str, dict[str, Any]] | str] = [
    ("refund_card", {"order_id": "A-7", "amount": 250.0}),
    ("lookup_order", {"order_id": "A-7"}),
    ("add_note", {"order_id": "A-7", "text": "paid with card 4111 1111 1111 1111"}),
    ("refund_card", {"order_id": "A-7", "amount": 250.0}),
    "Refunded 250.00 for order A-7.",
]


async def call_model(state: MessagesState) -> dict[str, Any]:
    """The model node (an activity): the next turn of ``TURNS`` (no network)."""
    made = sum(1 for m in convert_to_messages(state["messages"]) if isinstance(m, ToolMessage))
    turn = TURNS[made]
    if isinstance(turn, str):
        return {"messages": [AIMessage(turn)]}
    call = {"name": turn[0], "args": turn[1], "id": f"call-{made}", "type": "tool_call"}
    return {"messages": [AIMessage("", tool_calls=[call])]}


async def route(state: MessagesState) -> str:
    """``tools_condition``, async: edges run in the workflow, which has no executor threads."""
    return tools_condition(state)


@activity.defn
async def refund_payment(order_id: str, amount: float) -> str:
    """The payment provider's call (worker side)."""
    return json.dumps({"order_id": order_id, "refunded": amount})


@tool
async def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return json.dumps({"order_id": order_id, "amount": 250.0, "status": "delivered"})


@tool
async def refund_card(order_id: str, amount: float) -> str:
    """Refund an order to the card it was paid with."""
    return str(
        await workflow.execute_activity(
            refund_payment, args=[order_id, amount], start_to_close_timeout=STEP
        )
    )


@tool
async def add_note(order_id: str, text: str) -> str:
    """Add a note to an order."""
    return f"noted on {order_id}: {text}"


def build() -> StateGraph[Any, Any, Any, Any]:
    tools = GuardedToolNode(
        [lookup_order, refund_card, add_note],
        guardrails=GUARDRAILS,
        agent="refunds",
        interrupt_on={"refund_card": True},
    )
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    builder.add_node(
        "agent", call_model, metadata={"execute_in": "activity", "start_to_close_timeout": STEP}
    )
    builder.add_node("tools", tools, metadata={"execute_in": "workflow"})
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route)
    builder.add_edge("tools", "agent")
    return builder


class Outcome(BaseModel):
    stop_reason: str
    output: str | None
    tool_outputs: list[str]
    verdicts: list[AuditRow]


@workflow.defn
class RefundAgent:
    @workflow.run
    async def run(self, request: str) -> Outcome:
        ran = await run(graph("refunds").compile(), {"messages": [("user", request)]})
        messages = (ran.result or {}).get("messages", [])
        return Outcome(
            stop_reason=ran.stop_reason,
            output=ran.output,
            tool_outputs=[str(m.content) for m in messages if isinstance(m, ToolMessage)],
            verdicts=list(ran.verdicts),
        )


async def parked_call(handle: WorkflowHandle[Any, Any]) -> PendingAsk:
    for _ in range(300):
        pending = await handle.query(duraguard.PENDING_QUERY, result_type=list[PendingAsk])
        if pending:
            return pending[0]
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no call of {handle.id} was waiting for a person after 30 s")


async def main() -> int:
    private_pem, public_pem = generate_keypair()  # alice's, as `duraguard keygen` makes them
    approvers = ApproverKeys.from_mapping({"alice": {"public_key": public_pem.decode()}})
    async with contextlib.AsyncExitStack() as stack:
        address = os.environ.get("TEMPORAL_ADDRESS")
        if not address:
            address = (await stack.enter_async_context(DevServer(ui=False))).address
        client = await Client.connect(
            address,
            namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"),
            plugins=[
                LangGraphPlugin(graphs={"refunds": build()}),
                duraguard.DuraguardPlugin(guardrails=[LOOKED_UP], approvers=approvers),
            ],
        )
        task_queue = f"langgraph-{uuid.uuid4().hex[:8]}"
        async with Worker(
            client, task_queue=task_queue, workflows=[RefundAgent], activities=[refund_payment]
        ):
            handle = await client.start_workflow(
                RefundAgent.run,
                "Refund order A-7 in full.",
                id=f"refund-{uuid.uuid4().hex[:8]}",
                task_queue=task_queue,
                result_type=Outcome,
            )
            ask = await parked_call(handle)
            print(f"parked:  {ask.call_id} {ask.tool} {ask.args} asked by {ask.asked_by}")
            decision = decision_for(ask, approver="alice", private_key=private_pem)
            check = await handle.execute_update(
                duraguard.DECIDE, decision, result_type=ApprovalCheck
            )
            print(f"yes:     ok={check.ok} approver={check.approver}")
            out = await handle.result()
    for shown in out.tool_outputs:
        print(f"tool:    {shown}")
    for v in out.verdicts:
        who = f", approved by {v.approver}" if v.approver else ""
        print(f"verdict: {v.action:7} {v.call_id} {v.tool} by {v.by}{who}")
    print(f"stop reason: {out.stop_reason}")
    print(f"answer:      {out.output}")
    return 0 if out.stop_reason == "done" else 1


if __name__ == "__main__":
    # Temporal's plugin names a node's activity by its function's module, so the graph must come
    # from an importable module, not __main__: run this file's main() as that module's.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sample = importlib.import_module("langgraph_refund_agent")
    code = asyncio.run(sample.main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not interpreter shutdown: the SDK can abort there (sdk-python issue 300)
