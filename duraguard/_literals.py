"""The vocabularies every layer shares, as named ``Literal`` aliases: placements, actions,
outcomes, why a loop stopped, what an error in a guardrail does."""

from __future__ import annotations

from typing import Literal

Placement = Literal[
    "pre-prompt", "post-model", "tool-args", "tool-result", "egress", "final-answer", "admission"
]
"""Where a guardrail runs: before a prompt reaches a provider, on a model's answer, on a tool's
arguments, on a tool's result, on what leaves the worker, on the agent's final answer, and
``admission``: who may reach a tool at all, before any call exists (value ``{"tool": name}``)."""

PLACEMENTS: tuple[Placement, ...] = (
    "pre-prompt",
    "post-model",
    "tool-args",
    "tool-result",
    "egress",
    "final-answer",
    "admission",
)

Action = Literal["allow", "observe", "mask", "rewrite", "deny", "approve", "halt"]
"""What a verdict asks for. ``deny``, ``approve`` and ``halt`` refuse; ``mask`` and ``rewrite``
hand back a replacement; ``observe`` records a detection without enforcing it."""

ACTIONS: tuple[Action, ...] = ("allow", "observe", "mask", "rewrite", "deny", "approve", "halt")

REFUSING: frozenset[str] = frozenset({"deny", "approve", "halt"})
REPLACING: frozenset[str] = frozenset({"mask", "rewrite"})

Outcome = Literal["complete", "partial", "failed"]
"""Whether every guardrail could run: ``partial`` and ``failed`` are never a clean bill of health."""

StopReason = Literal["done", "max-iterations", "guardrail", "approval-budget", "bail", "no-answer"]
"""Why an agent loop ended. ``no-answer`` means validation refused every answer within its bound."""

OnError = Literal["deny", "fail"]
"""What an unexpected error inside a guardrail does: refuse the call (``deny``, outcome
``partial``) or fail the gated call with the error itself (``fail``)."""


__all__ = [
    "ACTIONS",
    "PLACEMENTS",
    "REFUSING",
    "REPLACING",
    "Action",
    "OnError",
    "Outcome",
    "Placement",
    "StopReason",
]
