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
    from duraguard._wire import LoopState

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
    then: list[dict[str, Any]] = Field(default_factory=list)
    """Through ``agent_loop``: the calls of the turns after the first (``{"tool", "args"}``)."""
    continue_after: int | None = None
    """Through ``agent_loop``: continue-as-new past this many history events."""
    loop: LoopState | None = None
    """Set by the loop itself when it continues-as-new."""
    plan: bool = False
    """Wait for a person's signed plan (the ``duraguard.plan`` update) before the call."""


MODEL_TIMEOUT = timedelta(seconds=3)
"""A killed model step is retried this long after it started (plus the retry interval)."""


SESSION_KEY = "the fault suite's session key, 32+ bytes"


@workflow.defn(name="duraguard.faults.FaultRun")
class FaultRun:
    """Makes one guarded call and says what happened to it."""

    @workflow.init
    def __init__(self, spec: FaultInput) -> None:
        # The handlers (the plan's update) exist before an update sent at the start arrives.
        self.guard = duraguard.session()

    @workflow.run
    async def run(self, spec: FaultInput) -> dict[str, Any]:
        if spec.agent:
            return await self.agent(spec)
        if spec.plan and not await self.guard.wait_for_plan(timedelta(minutes=4)):
            return {"ran": False, "error": "no plan came"}
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
            prompt=json.dumps({"tool": spec.tool, "args": spec.args, "then": spec.then}),
            model="scripted:fault",
            tools=sorted({spec.tool, *(c["tool"] for c in spec.then)}),
            guardrails=spec.guardrails,
            tool_timeout=TOOL_TIMEOUT,
            tool_attempts=10,
            model_timeout=MODEL_TIMEOUT,
            check_mode=spec.check_mode,
            approval_timeout=timedelta(minutes=10),
            resume=spec.loop,
            continue_as_new=lambda state: spec.model_copy(update={"loop": state}),
            max_history_events=spec.continue_after,
        )
        done = result.stop_reason == "done"
        return {
            "ran": done,
            "result": result.answer,
            "action": "allow" if done else "deny",
            "by": result.halted_by,
            "error": None if done else result.note or result.stop_reason,
        }
