"""A Pydantic AI agent made durable with ``TemporalDurability``, unguarded: what the adapter guards.

Pydantic AI 2.x deprecates the ``TemporalAgent`` wrapper in favour of a plain ``Agent`` carrying
the ``TemporalDurability`` capability (``pydantic_ai/durable_exec/temporal/_durability.py``); the
workflow lists the agent in ``__pydantic_ai_agents__`` and ``PydanticAIPlugin`` registers its
activities. Two tools (an async one and a sync one), each run by the capability as an activity.
The model is a ``FunctionModel`` whose function reads only the messages it is shown, so it is
deterministic and needs no network; it runs inside the model-request activity on the worker.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel
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

TOOLS = ("lookup_order", "quote_refund")


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls the tools in turn, one per model turn, ``calls=N`` times (read from the prompt)."""
    parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
    prompt = next((str(p.content) for p in parts if isinstance(p, UserPromptPart)), "")
    wanted = int(m.group(1)) if (m := re.search(r"calls=(\d+)", prompt)) else 2
    done = sum(1 for p in parts if isinstance(p, ToolReturnPart))
    if done < wanted:
        call = ToolCallPart(TOOLS[done % 2], {"order_id": f"A{done}"}, tool_call_id=f"call-{done}")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(f"done after {done} calls")])


agent = Agent(
    FunctionModel(scripted, model_name="scripted"),
    name="support",
    instructions="Resolve the ticket with the tools.",
    capabilities=[TemporalDurability()],
)


@agent.tool_plain
async def lookup_order(order_id: str) -> str:
    """Look up an order by id."""
    return json.dumps({"order_id": order_id, "amount": 20.0, "status": "delivered"})


@agent.tool_plain
def quote_refund(order_id: str) -> str:
    """Quote the refund an order would get."""
    return json.dumps({"order_id": order_id, "refund": 20.0})


class AgentRun(BaseModel):
    """What a run of the agent returned, and what each tool call gave back to the model."""

    final_output: str
    tool_outputs: list[str]


def _outputs(messages: list[ModelMessage]) -> list[str]:
    return [
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


@workflow.defn
class PydanticAIAgentWorkflow:
    """The agent alone: ``calls`` tool calls, then the answer."""

    __pydantic_ai_agents__ = (agent,)

    @workflow.run
    async def run(self, calls: int) -> AgentRun:
        result = await agent.run(
            f"Resolve ticket T1. calls={calls}", usage_limits=UsageLimits(request_limit=calls + 2)
        )
        return AgentRun(final_output=result.output, tool_outputs=_outputs(result.all_messages()))


@workflow.defn
class PydanticAIAgentBesideGuardedCall:
    """A duraguard ``guarded_call`` and the agent in one workflow (both plugins on the worker)."""

    __pydantic_ai_agents__ = (agent,)

    @workflow.run
    async def run(self, guardrails: list[duraguard.GuardrailSpec]) -> AgentRun:
        out = await duraguard.guarded_call("lookup", {"order_id": "A1"}, guardrails=guardrails)
        result = await agent.run("Resolve ticket T1. calls=2")
        outputs = [json.dumps(out.result), *_outputs(result.all_messages())]
        return AgentRun(final_output=result.output, tool_outputs=outputs)


if __name__ == "__main__":  # the sandbox re-imports this module; nothing runs on import
    pass
