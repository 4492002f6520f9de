"""Who may reach a tool at all: the tool's own agents, admission guardrails, the registry.

Worker side, above the engine: it runs an admission pass (:func:`duraguard.engine.run_pass`)
over the admission guardrails of :mod:`duraguard.checks.admission` that apply to a tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ._types import Context, Detection, Verdict
from .checks.admission import (
    AdmissionRegistry,
    _declares_admission,
    _own_rules,
    admission_subject,
)
from .engine import run_pass
from .guardrail import GuardrailLike, Resources


async def admit(
    guardrails: Sequence[GuardrailLike],
    principal: str | None,
    agent: str | None,
    tool: str,
    resources: Resources | None = None,
    *,
    registry: AdmissionRegistry | None = None,
    context: Context | None = None,
) -> Verdict:
    """Whether ``agent``, working for ``principal``, may reach ``tool`` at all.

    Runs, in order: the tool's own rule (``Tool.agents`` of ``resources.tools[tool]``), the
    admission guardrails among ``guardrails`` (others are skipped, so the loop may pass its
    whole list), then those ``registry`` attaches to ``tool``. The first refusal decides; a
    guardrail that raises, times out or cannot be built refuses (outcome ``partial``).

    Returns:
        The deciding verdict: ``allow`` when every admission guardrail let the tool through.
    """
    resources = resources or Resources()
    chosen: list[GuardrailLike] = [*_own_rules(tool, resources)]
    chosen += [g for g in guardrails if _declares_admission(g)]
    if registry is not None:
        try:
            chosen += registry.for_tool(tool)
        except Exception as err:  # a predicate that raises cannot say "not mine": fail closed
            return Verdict(
                action="deny",
                outcome="partial",
                by="admission-registry",
                reason=f"admission for tool {tool!r} could not be decided "
                f"({type(err).__name__}: {err}); the tool is refused until it can",
                detections=(Detection(rule="guardrail.error"),),
            )
    if not chosen:
        return Verdict.allow()
    result = await run_pass(chosen, admission_subject(principal, agent, tool, context), resources)
    return result.verdict


async def admit_many(
    guardrails: Sequence[GuardrailLike],
    principal: str | None,
    agent: str | None,
    tools: Iterable[str],
    resources: Resources | None = None,
    *,
    registry: AdmissionRegistry | None = None,
    context: Context | None = None,
) -> Mapping[str, Verdict]:
    """:func:`admit` for each tool, in the order given (for building the palette offered)."""
    return {
        t: await admit(
            guardrails, principal, agent, t, resources, registry=registry, context=context
        )
        for t in tools
    }


__all__ = ["admit", "admit_many"]
