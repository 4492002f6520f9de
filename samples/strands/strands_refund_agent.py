"""A Strands agent on Temporal, guarded by duraguard with one hook provider.

The agent is Strands' own, made durable by Temporal's integration (``temporalio-strands-agents``):
a ``TemporalAgent`` in the workflow, each model call an activity, ``refund_card`` an activity
tool (``activity_as_tool``), the other tools ``@tool`` functions in workflow code. duraguard adds
its hooks beside it::

    TemporalAgent(model="scripted", tools=[...], hooks=[Guarded(guardrails=GUARDRAILS)])

and the workflow runs it with ``duraguard.strands.run(agent, request)``. Every tool call, the
prompt and the final answer are then judged by recorded steps: a refund for an order that was
never looked up is refused (``cancel_tool``: the model reads the refusal and corrects itself),
the card number the model wrote into a note is masked before ``add_note`` receives it, and the
refund over 100 waits, durably, for alice's signed yes. The model is a scripted
``strands.models.Model`` in the plugin's model activity (no network).

Run it: ``python samples/strands/strands_refund_agent.py`` (starts an embedded Temporal dev
server unless ``TEMPORAL_ADDRESS`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncIterable
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from strands import tool
from strands.models import Model
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.strands_agents import StrandsPlugin, TemporalAgent
from temporalio.strands_agents.workflow import activity_as_tool
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard import ApproverKeys, PendingAsk, Subject, Verdict
    from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
    from duraguard.server import DevServer
    from duraguard.strands import Guarded, run
    from duraguard.types import AuditRow


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


class Scripted(Model):
    """Makes the calls of ``TURNS`` one per turn, then answers (in the model activity)."""

    def update_config(self, **model_config: Any) -> None:
        return None

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterable[Any]:
        made = sum(1 for m in messages for b in m["content"] if "toolResult" in b)
        turn = TURNS[made]
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(turn, str):
            yield {"contentBlockDelta": {"delta": {"text": turn}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        yield {
            "contentBlockStart": {"start": {"toolUse": {"toolUseId": f"t{made}", "name": turn[0]}}}
        }
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(turn[1])}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


@tool
async def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return json.dumps({"order_id": order_id, "amount": 250.0, "status": "delivered"})


@activity.defn
async def refund_card(order_id: str, amount: float) -> str:
    """Refund an order to the card it was paid with."""
    return json.dumps({"order_id": order_id, "refunded": amount})


@tool
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
    @workflow.run
    async def run(self, request: str) -> Outcome:
        agent = TemporalAgent(
            model="scripted",
            name="refunds",
            system_prompt="Resolve refund requests with the tools.",
            start_to_close_timeout=timedelta(seconds=30),
            tools=[
                lookup_order,
                activity_as_tool(refund_card, start_to_close_timeout=timedelta(seconds=30)),
                add_note,
            ],
            hooks=[Guarded(guardrails=GUARDRAILS)],
            callback_handler=None,
        )
        ran = await run(agent, request)
        returns = [
            b["toolResult"]["content"][0]["text"]
            for m in agent.messages
            for b in m["content"]
            if "toolResult" in b
        ]
        return Outcome(
            stop_reason=ran.stop_reason,
            output=ran.output,
            tool_outputs=returns,
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
                StrandsPlugin(models={"scripted": Scripted}),
                duraguard.DuraguardPlugin(guardrails=[MANAGER, LOOKED_UP], approvers=approvers),
            ],
        )
        task_queue = f"strands-{uuid.uuid4().hex[:8]}"
        async with Worker(
            client, task_queue=task_queue, workflows=[RefundAgent], activities=[refund_card]
        ):
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
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not interpreter shutdown: the SDK can abort there (sdk-python issue 300)
