"""A Google ADK agent on Temporal, guarded by duraguard with one plugin.

The agent is ADK's own, made durable by Temporal's integration (``temporalio-google-adk``): an
``Agent`` whose model is a ``TemporalModel`` (each model call an activity), ``refund_card`` an
activity tool (``activity_as_tool``), the other tools plain functions running in workflow code,
run by an ``InMemoryRunner`` in the workflow. duraguard adds its plugin to the ADK app::

    App(name="refunds", root_agent=agent, plugins=[Guarded(guardrails=GUARDRAILS)])

and the workflow runs it with ``duraguard.google_adk.run(runner, request)``. Every tool call, the
prompt and the final answer are then judged by recorded steps: a refund for an order that was
never looked up is refused (the refusal answers the call; the model reads it and corrects
itself), the card number the model wrote into a note is masked before ``add_note`` receives it,
and the refund over 100, a tool marked ``require_confirmation=True``, waits, durably, for alice's
signed yes. The model is a scripted ``BaseLlm`` in the plugin's model activity (no network).

Run it: ``python samples/google_adk/adk_refund_agent.py`` (starts an embedded Temporal dev
server unless ``TEMPORAL_ADDRESS`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncGenerator
from datetime import timedelta
from typing import Any

from google.adk.agents import Agent
from google.adk.apps import App
from google.adk.models import BaseLlm, LLMRegistry
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools import FunctionTool
from google.genai import types
from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.google_adk import GoogleAdkPlugin, TemporalModel
from temporalio.google_adk.workflow import activity_as_tool
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard import ApproverKeys, PendingAsk, Subject, Verdict
    from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
    from duraguard.google_adk import Guarded, run
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

TURNS: list[tuple[str, dict[str, Any]] | str] = [
    ("refund_card", {"order_id": "A-7", "amount": 250.0}),
    ("lookup_order", {"order_id": "A-7"}),
    ("add_note", {"order_id": "A-7", "text": "paid with card 4111 1111 1111 1111"}),
    ("refund_card", {"order_id": "A-7", "amount": 250.0}),
    "Refunded 250.00 for order A-7.",
]


class Scripted(BaseLlm):
    """Makes the calls of ``TURNS`` one per turn, then answers (in the model activity)."""

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"scripted"]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = [p for c in llm_request.contents for p in c.parts or []]
        made = sum(1 for p in parts if p.function_response)
        turn = TURNS[made]
        if isinstance(turn, str):
            part = types.Part(text=turn)
        else:
            call = types.FunctionCall(name=turn[0], args=turn[1], id=f"t{made}")
            part = types.Part(function_call=call)
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=0, candidates_token_count=0, total_token_count=0
        )
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


LLMRegistry.register(Scripted)


async def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return json.dumps({"order_id": order_id, "amount": 250.0, "status": "delivered"})


@activity.defn
async def refund_card(order_id: str, amount: float) -> str:
    """Refund an order to the card it was paid with."""
    return json.dumps({"order_id": order_id, "refunded": amount})


async def add_note(order_id: str, text: str) -> str:
    """Add a note to an order."""
    return f"noted on {order_id}: {text}"


async def big_refund(order_id: str, amount: float, **_: Any) -> bool:
    """ADK's own confirmation mark: refunds over 100 need a person's yes."""
    return amount > 100


class Outcome(BaseModel):
    stop_reason: str
    output: str | None
    tool_outputs: list[str]
    verdicts: list[AuditRow]


@workflow.defn
class RefundAgent:
    @workflow.run
    async def run(self, request: str) -> Outcome:
        refund = activity_as_tool(refund_card, start_to_close_timeout=timedelta(seconds=30))
        agent = Agent(
            name="refunds",
            model=TemporalModel("scripted"),
            instruction="Resolve refund requests with the tools.",
            tools=[lookup_order, FunctionTool(refund, require_confirmation=big_refund), add_note],
        )
        app = App(name="refunds", root_agent=agent, plugins=[Guarded(guardrails=GUARDRAILS)])
        ran = await run(InMemoryRunner(app=app), request)
        returns = [
            json.dumps(p.function_response.response)
            for e in ran.result or []
            for p in (e.content.parts if e.content else None) or []
            if p.function_response
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
                GoogleAdkPlugin(),
                duraguard.DuraguardPlugin(guardrails=[LOOKED_UP], approvers=approvers),
            ],
        )
        task_queue = f"google-adk-{uuid.uuid4().hex[:8]}"
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
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not interpreter shutdown: the SDK can abort there (sdk-python issue 300)
