"""An OpenAI Agents SDK agent on Temporal, unguarded: the workflows the adapter's tests will guard.

Two tools, one of each kind the SDK offers under Temporal: ``lookup_order`` is an activity made a
tool by the plugin's ``activity_as_tool`` (it runs on the worker, one activity per call), and
``quote_refund`` is a plain ``@function_tool`` (it runs in workflow code). The model is scripted
(:class:`ScriptedAgentModel`): a pure function of the conversation it is shown, so no network and
no shared iterator between runs.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from agents import (
    Agent,
    Model,
    ModelResponse,
    Runner,
    Usage,
    function_tool,
)
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.openai_agents import workflow as agents_workflow

with workflow.unsafe.imports_passed_through():
    import duraguard

TOOLS = ("lookup_order", "quote_refund")


@activity.defn
async def lookup_order(order_id: str) -> str:
    """Look up an order by id."""
    return json.dumps({"order_id": order_id, "amount": 20.0, "status": "delivered"})


@function_tool
async def quote_refund(order_id: str) -> str:
    """Quote the refund an order would get (computed in workflow code)."""
    # async on purpose: the SDK runs a sync function tool in a thread, which workflow code
    # refuses, and the model would read "An error occurred while running the tool" instead.
    return json.dumps({"order_id": order_id, "refund": 20.0})


class ScriptedAgentModel(Model):
    """Calls the tools in turn, one call per model turn, ``calls=N`` times, then answers.

    ``N`` is read from the prompt (``"... calls=N"``); each call's arguments name the order
    ``A{k}``. What it does next depends only on how many tool results the input already holds.
    """

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [input] if isinstance(input, str) else list(input)
        prompt = next(
            (
                i if isinstance(i, str) else str(i.get("content", ""))
                for i in items
                if isinstance(i, str) or i.get("role") == "user"
            ),
            "",
        )
        wanted = int(m.group(1)) if (m := re.search(r"calls=(\d+)", prompt)) else 2
        done = sum(
            1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
        )
        if done < wanted:
            item: Any = ResponseFunctionToolCall(
                arguments=json.dumps({"order_id": f"A{done}"}),
                call_id=f"call-{done}",
                name=TOOLS[done % 2],
                type="function_call",
                id=f"fc-{done}",
                status="completed",
            )
        else:
            item = ResponseOutputMessage(
                id="msg",
                content=[
                    ResponseOutputText(
                        text=f"done after {done} calls", annotations=[], type="output_text"
                    )
                ],
                role="assistant",
                status="completed",
                type="message",
            )
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model does not stream")


def support_agent() -> Agent[Any]:
    """The agent: built in workflow code, its model resolved by the plugin's model provider."""
    return Agent(
        name="support",
        instructions="Resolve the ticket with the tools.",
        model="scripted",
        tools=[
            agents_workflow.activity_as_tool(
                lookup_order, start_to_close_timeout=timedelta(seconds=30)
            ),
            quote_refund,
        ],
    )


class AgentRun(BaseModel):
    """What a run of the agent returned, and what each tool call gave back to the model."""

    final_output: str
    tool_outputs: list[str]


def _outputs(result: Any) -> list[str]:
    return [
        str(item.output)
        for item in result.new_items
        if getattr(item, "type", "") == "tool_call_output_item"
    ]


@workflow.defn
class OpenAIAgentWorkflow:
    """The agent alone: ``calls`` tool calls, then the answer."""

    @workflow.run
    async def run(self, calls: int) -> AgentRun:
        result = await Runner.run(
            support_agent(), f"Resolve ticket T1. calls={calls}", max_turns=calls + 2
        )
        return AgentRun(final_output=str(result.final_output), tool_outputs=_outputs(result))


@workflow.defn
class OpenAIAgentBesideGuardedCall:
    """A duraguard ``guarded_call`` and the agent in one workflow (both plugins on the worker)."""

    @workflow.run
    async def run(self, guardrails: list[duraguard.GuardrailSpec]) -> AgentRun:
        out = await duraguard.guarded_call("lookup", {"order_id": "A1"}, guardrails=guardrails)
        result = await Runner.run(support_agent(), "Resolve ticket T1. calls=2")
        return AgentRun(
            final_output=str(result.final_output),
            tool_outputs=[json.dumps(out.result), *_outputs(result)],
        )


if __name__ == "__main__":  # the sandbox re-imports this module; nothing runs on import
    pass
