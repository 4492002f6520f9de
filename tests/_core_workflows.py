"""Workflows that use the guard core's seams directly: a plan a person approves, an undo that
finds the step it reverses, a check() that waits for a person."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.guardrail import GuardrailSpec


class Calls(BaseModel):
    calls: list[tuple[str, dict[str, Any]]]
    guardrails: list[GuardrailSpec]
    wait_for_plan: bool = False


@workflow.defn(name="core.PlannedCalls")
class PlannedCalls:
    """Waits for an approved plan (if asked to), then makes each call with guarded_call."""

    @workflow.init
    def __init__(self, spec: Calls) -> None:
        # The handlers exist before a plan sent the moment the run starts can reach it.
        self.guard = duraguard.session()

    @workflow.run
    async def run(self, spec: Calls) -> list[dict[str, Any]]:
        guard = self.guard
        if spec.wait_for_plan and not await guard.wait_for_plan(timedelta(minutes=5)):
            return [{"error": "no plan came"}]
        out = []
        for tool, args in spec.calls:
            o = await duraguard.guarded_call(tool, args, guardrails=spec.guardrails, session=guard)
            out.append(
                {
                    "call_id": o.call_id,
                    "tool": o.tool,
                    "ran": o.ran,
                    "check": o.verdict.check,
                    "reason": o.verdict.reason,
                    "result": o.result,
                }
            )
        return out


class Checked(BaseModel):
    text: str
    guardrails: list[GuardrailSpec]
    approval_timeout_seconds: float = 3600


@workflow.defn(name="core.CheckedAnswer")
class CheckedAnswer:
    """check() over a draft answer: an approve waits for a person, then the value goes on."""

    @workflow.run
    async def run(self, spec: Checked) -> dict[str, Any]:
        r = await duraguard.check(
            "publish",
            guardrails=spec.guardrails,
            input={"placement": "post-model", "value": spec.text},
            approval_timeout=timedelta(seconds=spec.approval_timeout_seconds),
        )
        return {
            "tripped": r.tripped,
            "value": r.value,
            "approver": r.approver,
            "action": r.verdict.action,
        }


if __name__ == "__main__":
    raise SystemExit("test workflows; run them with pytest")
