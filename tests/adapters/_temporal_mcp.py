"""A workflow that calls an MCP server's tools through Temporal's MCP integration
(``temporalio-mcp``'s ``TemporalMCPClient``), guarded by :class:`duraguard.mcp.GuardedMCPClient`:
the calls the tests run, each one's answer as the workflow got it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field
from temporalio import workflow

from duraguard.types import AuditRow

with workflow.unsafe.imports_passed_through():
    from temporalio.mcp import TemporalMCPClient

    import duraguard
    from duraguard.guardrail import GuardrailSpec
    from duraguard.mcp import GuardedMCPClient


class McpCalls(BaseModel):
    server: str = "orders"
    calls: list[tuple[str, dict[str, Any]]]
    guardrails: list[GuardrailSpec] = Field(default_factory=list)
    approval_seconds: float = 30.0


class Answer(BaseModel):
    is_error: bool
    text: str
    structured: Any = None


class McpRun(BaseModel):
    answers: list[Answer]
    halted_by: str | None = None
    ledger: list[tuple[str, str, bool]] = Field(default_factory=list)
    verdicts: list[AuditRow] = Field(default_factory=list)


@workflow.defn
class GuardedMcpWorkflow:
    @workflow.run
    async def run(self, given: McpCalls) -> McpRun:
        options = duraguard.CallOptions(approval_timeout=timedelta(seconds=given.approval_seconds))
        client = GuardedMCPClient(
            TemporalMCPClient(given.server), guardrails=given.guardrails, options=options
        )
        answers: list[Answer] = []
        halted_by = None
        for name, args in given.calls:
            try:
                result = await client.call_tool(name, args)
            except duraguard.GuardrailHalt as halt:
                halted_by = halt.by
                break
            text = "\n".join(getattr(c, "text", "") for c in result.content)
            answers.append(
                Answer(is_error=result.is_error, text=text, structured=result.structured_content)
            )
        s = duraguard.session()
        return McpRun(
            answers=answers,
            halted_by=halted_by,
            ledger=[(e.tool, e.action, e.ran) for e in s.ledger.state.entries],
            verdicts=list(s.rows),
        )
