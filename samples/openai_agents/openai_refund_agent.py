"""An OpenAI Agents SDK agent on Temporal, guarded by duraguard with two lines.

The agent is the SDK's own: an ``Agent`` with three tools, run by ``Runner`` under Temporal's
OpenAI agents plugin. ``lookup_order`` and ``refund_card`` are activities made tools by the
plugin's ``activity_as_tool``; ``add_note`` is a plain ``@function_tool`` (it runs in workflow
code). duraguard guards it with::

    agent = openai_agents.guard(agent, guardrails=[pii(rules=["credit-card"]), MANAGER])
    ran = await openai_agents.run(agent, request)

and then every tool call, the prompt and the final output are judged by recorded steps: the
card number the model wrote into a note is masked before ``add_note`` receives it, and the
refund over 100 waits, durably, for alice's signed yes. The model is scripted (the SDK's test
model provider), so the sample needs no network and no API key.

Run it: ``python samples/openai_agents/openai_refund_agent.py`` (starts an embedded Temporal dev
server unless ``TEMPORAL_ADDRESS`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from datetime import timedelta
from typing import Any

from agents import Agent, Model, ModelResponse, Usage, function_tool
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents import workflow as agents_workflow
from temporalio.openai_agents.testing import TestModelProvider
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard import ApproverKeys, PendingAsk, Subject, Verdict, openai_agents
    from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
    from duraguard.server import DevServer
    from duraguard.types import DECIDE, PENDING_QUERY, AuditRow


class ManagerForBigRefunds(duraguard.Guardrail):
    """Refunds over 100 wait for a manager's yes; everything else passes."""

    name = "manager-for-big-refunds"
    placements = frozenset({"tool-args"})

    async def check(self, subject: Subject) -> Verdict:
        if subject.tool == "refund_card" and float(subject.value.get("amount", 0)) > 100:
            return Verdict.approve("refunds over 100 need a manager", role="manager")
        return Verdict.allow()


MANAGER = ManagerForBigRefunds()
GUARDRAILS = [duraguard.pii(rules=["credit-card"]), MANAGER]


@activity.defn
async def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return json.dumps({"order_id": order_id, "amount": 250.0, "status": "delivered"})


@activity.defn
async def refund_card(order_id: str, amount: float) -> str:
    """Refund an order to the card it was paid with."""
    return json.dumps({"order_id": order_id, "refunded": amount})


@function_tool
async def add_note(order_id: str, text: str) -> str:
    """Add a note to an order (a function tool: it runs in workflow code)."""
    return f"noted on {order_id}: {text}"


def refund_agent() -> Agent[Any]:
    """The agent, as the OpenAI Agents SDK writes it."""
    return Agent(
        name="refunds",
        instructions="Resolve refund requests with the tools.",
        model="scripted",
        tools=[
            agents_workflow.activity_as_tool(
                lookup_order, start_to_close_timeout=timedelta(seconds=30)
            ),
            agents_workflow.activity_as_tool(
                refund_card, start_to_close_timeout=timedelta(seconds=30)
            ),
            add_note,
        ],
    )


class Outcome(BaseModel):
    stop_reason: str
    output: str | None
    tool_outputs: list[str]
    verdicts: list[AuditRow]


@workflow.defn
class RefundAgent:
    @workflow.run
    async def run(self, request: str) -> Outcome:
        agent = openai_agents.guard(refund_agent(), guardrails=GUARDRAILS)
        ran = await openai_agents.run(agent, request, max_turns=6)
        items = getattr(ran.result, "new_items", None) or []
        return Outcome(
            stop_reason=ran.stop_reason,
            output=ran.output,
            tool_outputs=[str(i.output) for i in items if i.type == "tool_call_output_item"],
            verdicts=list(ran.verdicts),
        )


TURNS: list[tuple[str, dict[str, Any]] | str] = [
    ("lookup_order", {"order_id": "A-7"}),
    ("add_note", {"order_id": "A-7", "text": "paid with card 4111 1111 1111 1111"}),
    ("refund_card", {"order_id": "A-7", "amount": 250.0}),
    "Refunded 250.00 for order A-7.",
]


class ScriptedModel(Model):
    """Makes the calls of ``TURNS`` one per turn, then answers (no network)."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        made = sum(1 for i in input if isinstance(i, dict) and i.get("type") == "function_call")
        turn = TURNS[made]
        if isinstance(turn, str):
            text = ResponseOutputText(text=turn, annotations=[], type="output_text")
            item: Any = ResponseOutputMessage(
                id="msg", content=[text], role="assistant", status="completed", type="message"
            )
        else:
            item = ResponseFunctionToolCall(
                arguments=json.dumps(turn[1]), call_id=f"call-{made}", name=turn[0],
                type="function_call", id=f"fc-{made}", status="completed",
            )  # fmt: skip
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def parked_call(handle: WorkflowHandle[Any, Any]) -> PendingAsk:
    for _ in range(300):
        pending = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        if pending:
            return pending[0]
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no call of {handle.id} was waiting for a person after 30 s")


async def main() -> int:
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # no OpenAI key: no export
    private_pem, public_pem = generate_keypair()  # alice's, as `duraguard keygen` makes them
    approvers = ApproverKeys.from_mapping(
        {"alice": {"public_key": public_pem.decode(), "roles": ["manager"]}}
    )
    async with contextlib.AsyncExitStack() as stack:
        address = os.environ.get("TEMPORAL_ADDRESS")
        if not address:
            address = (await stack.enter_async_context(DevServer(ui=False))).address
        namespace = os.environ.get("TEMPORAL_NAMESPACE", "default")
        # The worker's client: the OpenAI agents plugin, and duraguard's.
        client = await Client.connect(
            address,
            namespace=namespace,
            plugins=[
                OpenAIAgentsPlugin(
                    model_params=ModelActivityParameters(
                        start_to_close_timeout=timedelta(seconds=30)
                    ),
                    model_provider=TestModelProvider(ScriptedModel()),
                ),
                duraguard.DuraguardPlugin(guardrails=[MANAGER], approvers=approvers),
            ],
        )
        task_queue = f"openai-agents-{uuid.uuid4().hex[:8]}"
        worker = Worker(
            client, task_queue=task_queue, workflows=[RefundAgent],
            activities=[lookup_order, refund_card],
        )  # fmt: skip
        async with worker:
            handle = await client.start_workflow(
                RefundAgent.run,
                "Refund order A-7 in full.",
                id=f"refund-{uuid.uuid4().hex[:8]}",
                task_queue=task_queue,
                result_type=Outcome,
            )
            ask = await parked_call(handle)
            print(f"parked:  {ask.call_id} {ask.tool} {ask.args} asks role {ask.role}")
            # alice's side: her own client, her key, a yes bound to this exact call.
            alice = await Client.connect(
                address, namespace=namespace, data_converter=pydantic_data_converter
            )
            decision = decision_for(ask, approver="alice", private_key=private_pem)
            check = await alice.get_workflow_handle(handle.id).execute_update(
                DECIDE, decision, result_type=ApprovalCheck
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
