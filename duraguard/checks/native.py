"""``native``: what an agent framework decided itself, put on the record as a guardrail's verdict.

An agent framework has guardrails and approval marks of its own (the OpenAI Agents SDK's tool
guardrails, tripwires and ``needs_approval``, Pydantic AI's ``requires_approval``). Their
outcomes are decided in workflow code, where nothing records them. A framework adapter turns
each one into a spec of this kind, named for what decided (``openai-agents:no_refunds``), and
runs it in the same recorded pass as the call's own guardrails: the verdict is then a recorded
step like any other, so the audit (``duraguard audit``, the ``duraguard.verdicts`` query), the
search attributes (``DuraguardDenials``, ``DuraguardHaltedBy``), ``duraguard pending`` and the
inbox all read it, and replay reads it back.

Nobody chooses this kind in ``guardrails=[...]``: it judges nothing, it says what it is told.
An ``approve`` parks the call for the same signed, call-bound yes as any other ask (a person's
yes answers it); a refusal from a guardrail listed before it still wins.
"""

from __future__ import annotations

from typing import Literal

from .._types import PLACEMENTS, ApprovalAsk, Placement, Subject, Verdict
from ..guardrail import Guardrail, GuardrailSpec, Kind, Resources, Settings, register_kind

NativeAction = Literal["observe", "deny", "approve", "halt"]
JUDGED: tuple[Placement, ...] = tuple(p for p in PLACEMENTS if p != "admission")
"""Where a framework's decision is recorded: anywhere a value is judged (admission, who may
reach a tool at all, is duraguard's own)."""


class NativeSettings(Settings):
    """A framework's own verdict, as a guardrail: its action, reason and check name."""

    action: NativeAction
    reason: str = ""
    check: str | None = None


class NativeVerdict(Guardrail):
    """Gives the verdict it was built with (a framework decided it)."""

    reads_session = False

    def __init__(self, settings: NativeSettings) -> None:
        self.settings = settings

    async def check(self, subject: Subject) -> Verdict:
        s = self.settings
        ask = ApprovalAsk(prompt=s.reason) if s.action == "approve" else None
        return Verdict(action=s.action, reason=s.reason or None, check=s.check, ask=ask)


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    return NativeVerdict(NativeSettings(**spec.settings))


KIND = register_kind(Kind("native", NativeSettings, _build, placements=JUDGED, reads_session=False))


def native(
    by: str,
    action: NativeAction,
    reason: str,
    *,
    check: str | None = None,
    placements: tuple[Placement, ...] = JUDGED,
) -> GuardrailSpec:
    """The spec that records ``by``'s decision (``action``, ``reason``) as its verdict."""
    return KIND.spec(
        name=by, placements=placements, action=action, reason=reason, check=check or by
    )
