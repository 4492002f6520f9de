"""Workflows and trivial tools for the overhead benchmark (workflow side is sandbox-safe).

The tools are worker-side and do nothing but echo, so what the benchmark measures is the cost
of Temporal steps and of duraguard's guardrail passes, not of any tool.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from temporalio import workflow

import duraguard
from duraguard.guardrail import GuardrailSpec


@duraguard.tool(kind="read")
async def ping(n: int) -> dict[str, Any]:
    """Echo a number back (a trivial read)."""
    return {"n": n}


@duraguard.tool(kind="read")
async def lookup(order_id: str) -> dict[str, Any]:
    """Look up an order (a trivial read with a fixed answer)."""
    return {"order_id": order_id, "status": "shipped", "amount": 20.0}


TOOLS = [ping, lookup]


class CallsInput(BaseModel):
    """Input of :class:`GuardedCallsWorkflow`."""

    model_config = ConfigDict(extra="forbid")

    calls: int
    guardrails: list[GuardrailSpec] = Field(default_factory=list)
    check_mode: str | None = None


@workflow.defn(name="duraguard.bench.GuardedCalls")
class GuardedCallsWorkflow:
    """``calls`` guarded calls of ``ping``, one after another, in one session."""

    @workflow.run
    async def run(self, spec: CallsInput) -> int:
        ran = 0
        options = duraguard.CallOptions(mode=spec.check_mode)
        for i in range(spec.calls):
            outcome = await duraguard.guarded_call(
                "ping", {"n": i}, guardrails=spec.guardrails, options=options
            )
            ran += int(outcome.ran)
        return ran
