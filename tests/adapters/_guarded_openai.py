"""OpenAI Agents SDK agents guarded by duraguard, on Temporal: the workflows the adapter tests run.

The agent has both kinds of tool the SDK offers under Temporal: ``lookup_order``, an activity
made a tool by ``activity_as_tool`` (one activity per call, on the worker), and ``quote_refund``,
a plain ``@function_tool`` (it runs in workflow code). The model (:class:`PlanModel`) follows
the plan written in the prompt (see ``_plan.py``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrail,
    Model,
    ModelResponse,
    Runner,
    Usage,
    function_tool,
)
from agents.tool_context import ToolContext
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)
from pydantic import BaseModel, Field
from temporalio import activity, workflow
from temporalio.openai_agents import workflow as agents_workflow

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard import openai_agents as guarded
    from duraguard.types import AuditRow

    from ._plan import next_turn, saw

LOOKUPS: list[dict[str, Any]] = []
"""What the activity tool was called with (on the worker)."""


@activity.defn
async def lookup_order(order_id: str) -> str:
    """Look up an order by id."""
    LOOKUPS.append({"order_id": order_id})
    note = " internal-note: fraud check pending" if order_id == "NOTE" else ""
    return json.dumps({"order_id": order_id, "amount": 20.0, "status": f"delivered{note}"})


@function_tool
async def quote_refund(order_id: str) -> str:
    """Quote the refund an order would get (computed in workflow code)."""
    if order_id == "GONE":
        raise ValueError(f"order {order_id} was deleted")
    return json.dumps({"order_id": order_id, "refund": 20.0})


class PlanModel(Model):
    """Follows the plan in the prompt; notes the tool outputs it was shown (``_plan.SEEN``)."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        prompt = next((str(i.get("content", "")) for i in items if i.get("role") == "user"), "")
        if "plan=" in str(system_instructions or ""):
            prompt = str(system_instructions)  # the plan out of the person's words (provenance)
        made = sum(1 for i in items if i.get("type") == "function_call")
        outputs = [str(i["output"]) for i in items if i.get("type") == "function_call_output"]
        saw(outputs)
        step = next_turn(prompt, made)
        if isinstance(step, str) and any(i.get("role") == "assistant" for i in items):
            # Asked for another answer: "once" answers are corrected, others repeated.
            step = step.replace("leak", "l-e-a-k") if "once" in step else f"again: {step}"
        if isinstance(step, str):
            text = ResponseOutputText(text=step, annotations=[], type="output_text")
            out: list[Any] = [
                ResponseOutputMessage(
                    id="msg", content=[text], role="assistant", status="completed", type="message"
                )
            ]
        else:
            out = [
                ResponseFunctionToolCall(
                    arguments=json.dumps(args), call_id=f"call-{made + k}", name=tool,
                    type="function_call", id=f"fc-{made + k}", status="completed",
                )
                for k, (tool, args) in enumerate(step)
            ]  # fmt: skip
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    async def stream_response(  # type: ignore[override]
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """The same turn as :meth:`get_response`, streamed as the Responses API streams it: the
        answer's text as deltas, then the completed response the SDK builds its turn from."""
        made = await self.get_response(system_instructions, input, *args, **kwargs)
        n = 0
        for item in made.output:
            if isinstance(item, ResponseOutputMessage):
                for part in item.content:
                    for word in getattr(part, "text", "").split(" "):
                        yield ResponseTextDeltaEvent(
                            content_index=0, delta=f"{word} ", item_id=item.id, logprobs=[],
                            output_index=0, sequence_number=n, type="response.output_text.delta",
                        )  # fmt: skip
                        n += 1
        response = Response(
            id="plan", created_at=0.0, model="plan", object="response", output=made.output,
            parallel_tool_calls=True, tool_choice="auto", tools=[],
        )  # fmt: skip
        yield ResponseCompletedEvent(
            response=response, sequence_number=n, type="response.completed"
        )


async def _no_own_trip(_ctx: Any, _agent: Any, given: Any) -> GuardrailFunctionOutput:
    """An input guardrail of the agent's own (the SDK's kind): trips on "own-trip"."""
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered="own-trip" in str(given))


def support_agent() -> Agent[Any]:
    return Agent(
        name="support",
        input_guardrails=[InputGuardrail(_no_own_trip, name="no-own-trip")],
        instructions="Resolve the ticket with the tools.",
        model="plan",
        tools=[
            agents_workflow.activity_as_tool(
                lookup_order, start_to_close_timeout=timedelta(seconds=30)
            ),
            quote_refund,
        ],
    )


class GuardedInput(BaseModel):
    prompt: str
    guardrails: list[duraguard.GuardrailSpec]
    approval_timeout_seconds: float = 3600.0
    runner: bool = False
    """Start the run with ``Runner.run`` rather than the adapter's ``run()``."""
    max_turns: int = 8
    card_tool: bool = False
    """Give the agent ``store_card`` (a tool reading its ToolContext) before it is guarded."""
    added_after_guard: bool = False
    """Give the guarded agent ``cancel_order``, unwrapped, after guard()."""


class GuardedOutcome(BaseModel):
    stop_reason: str
    output: Any = None
    halted_by: str | None = None
    note: str | None = None
    tool_outputs: list[str] = Field(default_factory=list)
    verdicts: list[AuditRow] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    """Tools whose call ran and failed, as the session recorded them."""


def _outputs(items: Any) -> list[str]:
    return [
        str(item.output)
        for item in items or ()
        if getattr(item, "type", "") == "tool_call_output_item"
    ]


@function_tool
async def store_card(ctx: ToolContext[Any], card: str) -> str:
    """Store a card on file; says what it was given, and what its context says it was given."""
    call = ctx.tool_call
    return json.dumps(
        {
            "card": card,
            "tool_arguments": ctx.tool_arguments,
            "tool_call": call.arguments if call is not None else None,
        }
    )


CANCELLED: list[str] = []


@function_tool
async def cancel_order(order_id: str) -> str:
    """Cancel an order (given to the agent after it was guarded: it must never run)."""
    CANCELLED.append(order_id)
    return f"cancelled {order_id}"


@workflow.defn
class GuardedOpenAIAgent:
    """The support agent, guarded; its prompt and guardrails come from the input."""

    @workflow.run
    async def run(self, spec: GuardedInput) -> GuardedOutcome:
        base = support_agent()
        if spec.card_tool:
            base = base.clone(tools=[*base.tools, store_card])
        agent = guarded.guard(
            base,
            guardrails=spec.guardrails,
            options=duraguard.CallOptions(
                approval_timeout=timedelta(seconds=spec.approval_timeout_seconds)
            ),
        )
        if spec.added_after_guard:
            agent = agent.clone(tools=[*agent.tools, cancel_order])
        if spec.runner:
            result = await Runner.run(agent, spec.prompt, max_turns=spec.max_turns)
            return GuardedOutcome(
                stop_reason="done",
                output=result.final_output,
                tool_outputs=_outputs(result.new_items),
            )
        ran = await guarded.run(agent, spec.prompt, max_turns=spec.max_turns)
        items = getattr(ran.result, "new_items", None)
        return GuardedOutcome(
            stop_reason=ran.stop_reason,
            output=ran.output,
            halted_by=ran.halted_by,
            note=ran.note,
            tool_outputs=_outputs(items),
            verdicts=list(ran.verdicts),
            failed=[e.tool for e in duraguard.session().ledger.state.entries if e.ran and not e.ok],
        )


if __name__ == "__main__":  # the sandbox re-imports this module; nothing runs on import
    pass
