"""Test doubles shipped with the library: a generic agent workflow driven by its input, and an
approver that signs decisions the way a person does with the CLI."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from temporalio import workflow

from ._wire import AgentResult, LoopState
from .guardrail import GuardrailSpec

with workflow.unsafe.imports_passed_through():
    from . import workflow as dg
    from .approvals import Decision, decision_for


class AgentInput(BaseModel):
    """Everything :class:`AgentWorkflow` needs, so tests can vary it per run."""

    model_config = ConfigDict(extra="forbid")

    name: str = "agent"
    prompt: str
    model: str
    tools: list[str] = Field(default_factory=list)
    guardrails: list[GuardrailSpec] = Field(default_factory=list)
    max_iterations: int = 6
    approval_timeout_seconds: float = 24 * 3600
    approval_budget: int | None = None
    max_corrections: int = 2
    check_mode: str | None = None
    loop: LoopState | None = None
    """Set by the loop itself when it continues-as-new."""
    continue_after_events: int | None = None
    """Continue-as-new past this many history events (default: when the server suggests)."""


@workflow.defn(name="duraguard.testing.AgentWorkflow")
class AgentWorkflow:
    """Runs :func:`duraguard.agent_loop` with what its input says."""

    @workflow.run
    async def run(self, spec: AgentInput) -> AgentResult:
        return await dg.agent_loop(
            spec.name,
            prompt=spec.prompt,
            model=spec.model,
            tools=spec.tools,
            guardrails=spec.guardrails,
            max_iterations=spec.max_iterations,
            approval_timeout=timedelta(seconds=spec.approval_timeout_seconds),
            approval_budget=spec.approval_budget,
            max_corrections=spec.max_corrections,
            check_mode=spec.check_mode,
            resume=spec.loop,
            continue_as_new=lambda state: spec.model_copy(update={"loop": state}),
            max_history_events=spec.continue_after_events,
        )


class CallInput(BaseModel):
    """Input of :class:`GuardedCallWorkflow`: a list of calls made one after another."""

    model_config = ConfigDict(extra="forbid")

    calls: list[tuple[str, dict[str, Any]]]
    guardrails: list[GuardrailSpec] = Field(default_factory=list)
    check_mode: str | None = None


@workflow.defn(name="duraguard.testing.GuardedCallWorkflow")
class GuardedCallWorkflow:
    """Makes each call with :func:`duraguard.guarded_call`; returns what happened to each."""

    @workflow.run
    async def run(self, spec: CallInput) -> list[dict[str, Any]]:
        out = []
        for tool, args in spec.calls:
            o = await dg.guarded_call(
                tool,
                args,
                guardrails=spec.guardrails,
                options=dg.CallOptions(mode=spec.check_mode),
            )
            out.append(
                {
                    "call_id": o.call_id,
                    "tool": o.tool,
                    "ran": o.ran,
                    "result": o.result,
                    "action": o.verdict.action,
                    "by": o.verdict.by,
                }
            )
        return out


def approver_decision(pending: Any, *, approver: str, **kw: Any) -> Decision:
    """:func:`duraguard.approvals.decision_for` under the name the tests use."""
    return decision_for(pending, approver=approver, **kw)
