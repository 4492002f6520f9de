"""The workflow the fault suite runs: one guarded call with short timeouts, so that a call
whose worker was killed is retried within seconds. Imported by the tests (to start it) and by
the worker process (to run it)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import duraguard

TOOL_TIMEOUT = timedelta(seconds=3)
"""A killed tool attempt is retried this long after it started (plus the retry interval)."""


class FaultInput(BaseModel):
    """One call: the tool, its arguments, its guardrails and where they run."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, Any]
    guardrails: list[duraguard.GuardrailSpec] = Field(default_factory=list)
    check_mode: str | None = None
    beside: float | None = None
    """Seconds of a timer started beside the call (a workflow task that completes with a
    command while the call's check step runs)."""
    agent: bool = False
    """Make the call through ``agent_loop`` (its scripted model, ``scripted:fault``, proposes
    the call the prompt names, then answers), the prompt judged in the first model step."""


MODEL_TIMEOUT = timedelta(seconds=3)
"""A killed model step is retried this long after it started (plus the retry interval)."""


@workflow.defn(name="duraguard.faults.FaultRun")
class FaultRun:
    """Makes one guarded call and says what happened to it."""

    @workflow.run
    async def run(self, spec: FaultInput) -> dict[str, Any]:
        if spec.agent:
            return await self.agent(spec)
        if spec.beside is not None:
            timer = asyncio.ensure_future(workflow.sleep(spec.beside))
        out = await duraguard.guarded_call(
            spec.tool,
            spec.args,
            guardrails=spec.guardrails,
            options=duraguard.CallOptions(
                tool_timeout=TOOL_TIMEOUT,
                tool_attempts=10,
                mode=spec.check_mode,
                approval_timeout=timedelta(minutes=10),
            ),
        )
        if spec.beside is not None:
            await timer
        return {
            "ran": out.ran,
            "result": out.result,
            "action": out.verdict.action,
            "by": out.verdict.by,
            "error": out.error,
        }

    async def agent(self, spec: FaultInput) -> dict[str, Any]:
        result = await duraguard.agent_loop(
            "fault",
            prompt=json.dumps({"tool": spec.tool, "args": spec.args}),
            model="scripted:fault",
            tools=[spec.tool],
            guardrails=spec.guardrails,
            tool_timeout=TOOL_TIMEOUT,
            tool_attempts=10,
            model_timeout=MODEL_TIMEOUT,
            check_mode=spec.check_mode,
        )
        done = result.stop_reason == "done"
        return {
            "ran": done,
            "result": result.answer,
            "action": "allow" if done else "deny",
            "by": result.halted_by,
            "error": None if done else result.note or result.stop_reason,
        }
