"""The fleet suite's session: an agent that makes a list of refunds, one per model turn, through
``agent_loop`` on a conversation store every worker shares. Imported by the tests (to start it)
and by the worker processes (to run it).

Its model, :class:`FleetModel`, reads what it has done from the conversation the store gives
back (never from memory of its own): a step read from a store that lost or doubled a message
would propose a refund again, or skip one, and the desk's count would show it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard._wire import ModelRequest, ModelResponse, ToolCall
    from duraguard.models import Model
    from duraguard.tools import Tool

RECEIPT = " ".join(
    f"Refunds reach the card in 5 to 10 working days (clause {n})." for n in range(12)
)
"""In every refund's result: long enough (about 700 characters) that its tool step keeps it in
the conversation store and the model step after it is sent its digest (duraguard._kept_results)."""

STEP_TIMEOUT = timedelta(seconds=3)
"""A killed step is retried this long after it started (plus the retry interval)."""
CAP = 40.0
"""The largest refund the ``cap`` guardrail allows."""
AMOUNTS = (10.0, 25.0, 60.0, 15.0)
"""A session's four refunds: the third is over the cap (refused), the others made."""


class FleetInput(BaseModel):
    """One session: the refunds to ask for, and the guardrails on them."""

    model_config = ConfigDict(extra="forbid")

    refunds: list[dict[str, Any]]
    guardrails: list[duraguard.GuardrailSpec] = Field(default_factory=list)
    check_mode: str | None = None


@workflow.defn(name="duraguard.faults.FleetRun")
class FleetRun:
    """Runs one session and says how it ended."""

    @workflow.run
    async def run(self, spec: FleetInput) -> dict[str, Any]:
        result = await duraguard.agent_loop(
            "fleet",
            prompt=json.dumps({"refunds": spec.refunds}),
            model="fleet:refunds",
            tools=["refund_card"],
            guardrails=spec.guardrails,
            tool_timeout=STEP_TIMEOUT,
            tool_attempts=10,
            model_timeout=STEP_TIMEOUT,
            check_mode=spec.check_mode,
        )
        return {"stop_reason": result.stop_reason, "answer": result.answer, "by": result.halted_by}


class FleetModel(Model):
    """Proposes the prompt's refunds one a turn, counted from the conversation it is given,
    then answers; ``slow`` seconds a turn (a worker made slower than the others)."""

    def __init__(self, slow: float = 0.0) -> None:
        self.slow = slow

    async def complete(self, request: ModelRequest, tools: Sequence[Tool]) -> ModelResponse:
        if self.slow:
            await asyncio.sleep(self.slow)
        said = next(m.content for m in request.messages if m.role == "user")
        refunds = json.loads(said or "{}")["refunds"]
        done = [m for m in request.messages if m.role == "assistant" and m.tool_calls]
        if len(done) >= len(refunds):
            results = [m.content for m in request.messages if m.role == "tool"]
            # A result kept in the store, put back by the model step, reads as the tool wrote it.
            receipts = sum(1 for r in results if r and json.loads(r).get("receipt") == RECEIPT)
            return ModelResponse(
                content=f"done: {len(results)} calls answered, {receipts} receipts read"
            )
        n = len(done)
        call = ToolCall(id=f"r{n}", name="refund_card", arguments=refunds[n])
        return ModelResponse(tool_calls=(call,))


def _cap(subject: duraguard.Subject) -> bool:
    """Refunds up to :data:`CAP`; reads the session (as a custom guardrail does by default),
    so the session's entries travel by reference to the tool steps that judge it."""
    return float(subject.value.get("amount", 0)) <= CAP and subject.session is not None


CAP_GUARD = duraguard.guardrail(_cap, name="cap", placements=("tool-args",), replaces=False)
