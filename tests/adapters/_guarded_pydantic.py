"""A Pydantic AI agent guarded by duraguard, on Temporal: the workflows the adapter tests run.

The agent is durable by ``TemporalDurability`` and guarded by ``Guarded`` beside it. Its two
tools (an async one and a sync one) each run as an activity. The model is a ``FunctionModel``
that follows the plan written in the prompt (see ``_plan.py``); it runs in the model-request
activity on the worker.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard import pydantic_ai as guarded
    from duraguard.types import AuditRow

    from ._plan import next_turn, saw
    from ._rules import Rules

LOOKUPS: list[dict[str, Any]] = []
"""What the lookup tool was called with (in its activity, on the worker)."""


def planned(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
    prompt = next((str(p.content) for p in parts if isinstance(p, UserPromptPart)), "")
    answered = [p for p in parts if isinstance(p, ToolReturnPart)]
    saw([str(p.content) for p in answered])
    step = next_turn(prompt, len(answered))
    if isinstance(step, str):
        answers = [p for m in messages if isinstance(m, ModelResponse) for p in m.parts]
        if any(
            isinstance(p, TextPart) for p in answers
        ):  # asked for another answer: "once" answers are corrected, others repeated
            step = step.replace("leak", "l-e-a-k") if "once" in step else f"again: {step}"
        return ModelResponse(parts=[TextPart(step)])
    made = len(answered)
    return ModelResponse(
        parts=[
            ToolCallPart(tool, args, tool_call_id=f"call-{made + k}")
            for k, (tool, args) in enumerate(step)
        ]
    )


RULES = Rules()


def build(name: str, options: duraguard.CallOptions | None = None) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        FunctionModel(planned, model_name="planned"),
        name=name,
        instructions="Resolve the ticket with the tools.",
        capabilities=[
            TemporalDurability(),
            guarded.Guarded(guardrails=[RULES], options=options),
        ],
    )

    @agent.tool_plain
    async def lookup_order(order_id: str) -> str:
        """Look up an order by id."""
        LOOKUPS.append({"order_id": order_id})
        note = " internal-note: fraud check pending" if order_id == "NOTE" else ""
        return json.dumps({"order_id": order_id, "amount": 20.0, "status": f"delivered{note}"})

    @agent.tool_plain
    def quote_refund(order_id: str) -> str:
        """Quote the refund an order would get."""
        return json.dumps({"order_id": order_id, "refund": 20.0})

    return agent


REFUNDS: list[str] = []
"""Orders the output function refunded in this run (it runs in workflow code, in the sandbox's
copy of this module: the run reports it in its outcome)."""


async def issue_refund(order_id: str) -> str:
    """Refund an order and say so: an output function, the model's last call (an effect)."""
    REFUNDS.append(order_id)
    return f"refunded {order_id}"


def refunding(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Answers through the output function, for the order named last in the prompt."""
    parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
    prompt = next((str(p.content) for p in parts if isinstance(p, UserPromptPart)), "")
    order = prompt.rsplit(" ", 1)[-1]
    made = sum(1 for m in messages if isinstance(m, ModelResponse))
    name = info.output_tools[0].name
    return ModelResponse(parts=[ToolCallPart(name, {"order_id": order}, tool_call_id=f"o{made}")])


refunds: Agent[None, str] = Agent(
    FunctionModel(refunding, model_name="refunding"),
    name="refunds",
    output_type=issue_refund,
    capabilities=[TemporalDurability(), guarded.Guarded(guardrails=[RULES])],
)
support = build("support")
support_short_asks = build(
    "support_short", duraguard.CallOptions(approval_timeout=timedelta(seconds=1))
)


class GuardedOutcome(BaseModel):
    stop_reason: str
    output: Any = None
    halted_by: str | None = None
    note: str | None = None
    tool_outputs: list[str] = Field(default_factory=list)
    retried: list[bool] = Field(default_factory=list)
    """Per tool output: whether it asked the model to retry the call (a ModelRetry)."""
    verdicts: list[AuditRow] = Field(default_factory=list)
    refunded: list[str] = Field(default_factory=list)


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


@workflow.defn
class GuardedPydanticAgent:
    __pydantic_ai_agents__ = (support, support_short_asks, refunds)

    @workflow.run
    async def run(
        self,
        prompt: str,
        short_asks: bool = False,
        direct: bool = False,
        follow_up: str = "",
        output_function: bool = False,
    ) -> GuardedOutcome:
        agent = support_short_asks if short_asks else support
        if output_function:
            agent = refunds
            REFUNDS.clear()
        many = re.search(r"calls=(\d+)", prompt)  # the history measurements make many calls
        limits = UsageLimits(request_limit=int(many.group(1)) + 2 if many else 10)
        if direct:
            result = await agent.run(prompt, usage_limits=limits)
            return GuardedOutcome(stop_reason="done", output=result.output)
        ran = await guarded.run(agent, prompt, usage_limits=limits)
        if follow_up and ran.result is not None:
            history = ran.result.all_messages()
            ran = await guarded.run(agent, follow_up, message_history=history, usage_limits=limits)
        returns = _returns(ran.result.all_messages() if ran.result is not None else [])
        return GuardedOutcome(
            stop_reason=ran.stop_reason,
            output=ran.output,
            halted_by=ran.halted_by,
            note=ran.note,
            tool_outputs=[p.model_response_str() for p in returns],
            retried=[p.outcome == "retried" for p in returns],
            verdicts=list(ran.verdicts),
            refunded=list(REFUNDS),
        )


if __name__ == "__main__":  # the sandbox re-imports this module; nothing runs on import
    pass
