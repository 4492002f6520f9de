"""The support-desk agent: looks orders up, refunds cards, cancels refunds, emails customers,
reads web pages, with every call checked by duraguard first."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.checks import moderation, pii, policy, schema

TOOLS = ["lookup_order", "refund_card", "cancel_refund", "send_email", "fetch_page"]

RULES = """\
rules:
  - name: refunds over 100 need a manager
    tool: refund_card
    when:
      - arg: amount
        gt: 100
    then: ask
    role: manager
  - name: refunds up to 100 are fine
    tool: refund_card
    when:
      - arg: amount
        lte: 100
    then: allow
  - name: mail to our customers is fine
    tool: send_email
    when:
      - arg: to
        matches: '@example\\.com$'
    then: allow
"""
"""The demo's rule sheet (the plugin reads it on the worker, live)."""


class Ticket(BaseModel):
    """What the support agent is asked to do."""

    model_config = ConfigDict(extra="forbid")

    ticket: str
    model: str = "scripted:refund-demo"
    approval_timeout_seconds: float = 24 * 3600
    max_iterations: int = 6


def guardrails() -> list[duraguard.GuardrailSpec]:
    """The support agent's guardrails, in order: shape, personal data, abuse, then the policy."""
    return [
        schema(),
        pii(rules=["credit-card", "ssn"], placements=["tool-args", "tool-result", "post-model"]),
        moderation(classifier="demo", placements=["pre-prompt", "tool-args"]),
        policy(),
    ]


@workflow.defn(name="SupportAgent")
class SupportAgent:
    """Resolves one ticket with the support desk's tools."""

    @workflow.run
    async def run(self, ticket: Ticket) -> duraguard.AgentResult:
        return await duraguard.agent_loop(
            "support",
            prompt=ticket.ticket,
            model=ticket.model,
            tools=TOOLS,
            guardrails=guardrails(),
            max_iterations=ticket.max_iterations,
            approval_timeout=timedelta(seconds=ticket.approval_timeout_seconds),
            system="You are a support agent. Use the tools; never refund more than was paid.",
        )


if __name__ == "__main__":
    raise SystemExit("this module defines a workflow; run `python3 dev.py demo` to see it work")
