"""A Pydantic AI agent on Temporal, guarded by duraguard with one capability.

The agent is Pydantic AI's own: an ``Agent`` made durable by the ``TemporalDurability``
capability (each model request and each tool call an activity). duraguard adds one capability
beside it::

    Agent(model, capabilities=[TemporalDurability(), Guarded(guardrails=GUARDRAILS)])

and the workflow runs it with ``duraguard.pydantic_ai.run(agent, request)``. Every tool call,
the prompt and the final output are then judged by recorded steps: a refund for an order that
was never looked up is refused (the model reads the refusal and corrects itself), the card
number the model wrote into a note is masked before ``add_note`` receives it, and the refund
over 100 waits, durably, for alice's signed yes. The model is a ``FunctionModel`` (no network).

Run it: ``python samples/pydantic_ai/pydantic_refund_agent.py`` (starts an embedded Temporal dev server
unless ``TEMPORAL_ADDRESS`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, TemporalDurability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard import ApproverKeys, PendingAsk, Subject, Verdict
    from duraguard.approvals import decision_for, generate_keypair, send_decision
    from duraguard.pydantic_ai import Guarded, run
    from duraguard.server import DevServer
    from duraguard.types import PENDING_QUERY, AuditRow


class ManagerForBigRefunds(duraguard.Guardrail):
    """Refunds over 100 wait for a manager's yes; everything else passes."""

    name = "manager-for-big-refunds"
    placements = frozenset({"tool-args"})

    async def check(self, subject: Subject) -> Verdict:
        if subject.tool == "refund_card" and float(subject.value.get("amount", 0)) > 100:
            return Verdict.approve("refunds over 100 need a manager", role="manager")
        return Verdict.allow()


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


MANAGER, LOOKED_UP = ManagerForBigRefunds(), LookedUpFirst()
GUARDRAILS = [duraguard.pii(rules=["credit-card"]), LOOKED_UP, MANAGER]

TURNS: list[tuple[str, dict[str, Any]] | str] = [
    ("refund_card", {"order_id": "A-7", "amount": 250.0}),
    ("lookup_order", {"order_id": "A-7"}),
    ("add_note", {"order_id": "A-7", "text": "paid with card 4111 1111 1111 1111"}),
    ("refund_card", {"order_id": "A-7", "amount": 250.0}),
    "Refunded 250.00 for order A-7.",
]


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Makes the calls of ``TURNS`` one per turn, then answers (no network)."""
    answered = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
    turn = TURNS[sum(1 for p in answered if isinstance(p, ToolReturnPart))]
    if isinstance(turn, str):
        return ModelResponse(parts=[TextPart(turn)])
    return ModelResponse(parts=[ToolCallPart(turn[0], turn[1])])


agent = Agent(
    FunctionModel(scripted, model_name="scripted"),
    name="refunds",
    instructions="Resolve refund requests with the tools.",
    capabilities=[TemporalDurability(), Guarded(guardrails=GUARDRAILS)],
)


@agent.tool_plain
async def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return json.dumps({"order_id": order_id, "amount": 250.0, "status": "delivered"})


@agent.tool_plain
async def refund_card(order_id: str, amount: float) -> str:
    """Refund an order to the card it was paid with."""
    return json.dumps({"order_id": order_id, "refunded": amount})


@agent.tool_plain
async def add_note(order_id: str, text: str) -> str:
    """Add a note to an order."""
    return f"noted on {order_id}: {text}"


class Outcome(BaseModel):
    stop_reason: str
    output: str | None
    tool_outputs: list[str]
    verdicts: list[AuditRow]


@workflow.defn
class RefundAgent:
    __pydantic_ai_agents__ = (agent,)

    @workflow.run
    async def run(self, request: str) -> Outcome:
        ran = await run(agent, request)
        messages = ran.result.all_messages() if ran.result is not None else []
        returns = [
            p.model_response_str()
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        return Outcome(
            stop_reason=ran.stop_reason,
            output=ran.output,
            tool_outputs=returns,
            verdicts=list(ran.verdicts),
        )


async def parked_call(handle: WorkflowHandle[Any, Any]) -> PendingAsk:
    for _ in range(300):
        pending = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        if pending:
            return pending[0]
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no call of {handle.id} was waiting for a person after 30 s")


async def main() -> int:
    private_pem, public_pem = generate_keypair()  # alice's, as `duraguard keygen` makes them
    approvers = ApproverKeys.from_mapping(
        {"alice": {"public_key": public_pem.decode(), "roles": ["manager"]}}
    )
    async with contextlib.AsyncExitStack() as stack:
        address = os.environ.get("TEMPORAL_ADDRESS")
        if not address:
            address = (await stack.enter_async_context(DevServer(ui=False))).address
        client = await Client.connect(
            address,
            namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"),
            plugins=[
                PydanticAIPlugin(),
                duraguard.DuraguardPlugin(guardrails=[MANAGER, LOOKED_UP], approvers=approvers),
            ],
        )
        task_queue = f"pydantic-ai-{uuid.uuid4().hex[:8]}"
        async with Worker(client, task_queue=task_queue, workflows=[RefundAgent]):
            handle = await client.start_workflow(
                RefundAgent.run,
                "Refund order A-7 in full.",
                id=f"refund-{uuid.uuid4().hex[:8]}",
                task_queue=task_queue,
                result_type=Outcome,
            )
            ask = await parked_call(handle)
            print(f"parked:  {ask.call_id} {ask.tool} {ask.args} asks role {ask.role}")
            decision = decision_for(ask, approver="alice", private_key=private_pem)
            check = await send_decision(client, decision)
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
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not interpreter shutdown: the SDK can abort there (sdk-python issue 300)
