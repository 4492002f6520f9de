"""What a guarded call comes to: the gate before it, its outcome, and why it did not run.

Plain data (dataclasses and one pydantic model), shared by :mod:`duraguard._call`, the loop and
any adapter; nothing here talks to Temporal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ._types import PassResult, Reservation, Verdict

DEFAULT_APPROVAL_TIMEOUT = timedelta(hours=24)

RefusalKind = Literal["policy", "person", "expired", "budget", "halted"]


class Refusal(BaseModel):
    """Why a call did not run, in one shape per kind; :meth:`for_model` is what the model reads.

    A policy refusal never names a person, and a person's no never shares its shape.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: RefusalKind
    tool: str | None
    reason: str
    by: str | None = None
    """The guardrail that refused (``policy``, ``budget``, ``halted``, ``expired``)."""
    approver: str | None = None
    """The person who said no (``person`` only)."""

    def for_model(self) -> dict[str, Any]:
        if self.kind == "person":
            return {
                "approved": False,
                "tool": self.tool,
                "declined_by": self.approver,
                "reason": self.reason,
            }
        return {"valid": False, "tool": self.tool, "error": self.reason}

    @classmethod
    def of(cls, verdict: Verdict, tool: str | None) -> Refusal:
        """A guardrail's refusal (deny, or halt)."""
        return cls(
            kind="halted" if verdict.action == "halt" else "policy",
            tool=tool,
            reason=verdict.reason or f"refused by {verdict.by}",
            by=verdict.by,
        )


def refusal(tool: str, verdict: Verdict) -> dict[str, Any]:
    """The shape a policy refusal takes as the tool's result: no decider, a reason to act on."""
    return Refusal.of(verdict, tool).for_model()


@dataclass(frozen=True)
class ProposedCall:
    """One tool call proposed (by a model, an adapter, workflow code): the tool, its arguments
    and its call id (``None``: the session names it, ``c1``, ``c2``, ... in order)."""

    tool: str
    args: Any
    call_id: str | None = None

    @classmethod
    def of(cls, given: ProposedCall | tuple[str, Any, str | None]) -> ProposedCall:
        """``given``, or a call given as ``(tool, arguments, call id)`` (the shape before)."""
        if isinstance(given, ProposedCall):
            return given
        tool, args, call_id = given
        return cls(tool, args, call_id)

    @property
    def id(self) -> str:
        """The call id, once the session named the call."""
        if self.call_id is None:
            raise ValueError(f"the call of {self.tool!r} has no call id yet")
        return self.call_id


@dataclass(frozen=True)
class CallOptions:
    """How tool calls are run and asked about."""

    tool_timeout: timedelta = timedelta(seconds=60)
    tool_attempts: int = 3
    approval_timeout: timedelta = DEFAULT_APPROVAL_TIMEOUT
    approval_budget: int | None = None
    """How many asks the run may make; one more is refused (``Refusal.kind == "budget"``)."""
    agent: str | None = None
    mode: str | None = None
    keep: bool = False
    """Tool steps keep their results in the conversation store for the model step
    (``agent_loop``'s, in a run that :meth:`~duraguard._state.SessionState.keeps_results`)."""


@dataclass(frozen=True)
class CallOutcome:
    """What happened to one tool call."""

    call_id: str
    tool: str
    args: Any
    """The arguments the tool ran with (after mask/rewrite/edits), or was asked to."""
    ran: bool
    result: Any = None
    """The tool's result as the model will read it (the refusal's shape when refused)."""
    verdict: Verdict = field(default_factory=Verdict.allow)
    halted: bool = False
    approver: str | None = None
    error: str | None = None
    """Why the tool itself failed (it ran, or was attempted)."""
    bail: bool = False
    refusal: Refusal | None = None
    labels: tuple[str, ...] = ()
    kept: bool = False
    """:attr:`result` is what the tool step kept in the conversation store (as the model reads
    it): the model step may be sent its digest instead."""


@dataclass(frozen=True)
class CallGate:
    """A call after its checks: may it run, with which arguments, and if not, why not."""

    call_id: str
    tool: str
    asked: Any
    """What the model proposed."""
    args: Any
    """What may run: after mask/rewrite and a person's edits."""
    verdict: Verdict
    idempotency_key: str
    refusal: Refusal | None = None
    approver: str | None = None
    held: tuple[Reservation, ...] = ()
    agent: str | None = None
    compensation_of: int | None = None
    """The step this call reverses, where its tool is another tool's declared undo."""

    @property
    def runs(self) -> bool:
        return self.refusal is None

    @property
    def halted(self) -> bool:
        return self.refusal is not None and self.refusal.kind == "halted"

    @property
    def halted_by(self) -> str | None:
        return self.refusal.by if self.halted and self.refusal else None

    def outcome(self) -> CallOutcome:
        """The outcome of a call that does not run."""
        if self.refusal is None:
            raise ValueError(f"call {self.call_id} runs; its outcome comes from after_call")
        return CallOutcome(
            call_id=self.call_id,
            tool=self.tool,
            args=self.asked,
            ran=False,
            result=self.refusal.for_model(),
            verdict=self.verdict,
            halted=self.halted,
            approver=self.approver,
            refusal=self.refusal,
        )


@dataclass(frozen=True)
class Prejudged:
    """What the first guardrails of a turn's list made of its calls, in the model step that
    proposed them, before anything recorded their arguments (:mod:`duraguard._model_step`):
    their names, and one result per call (``None`` for a call they did not judge)."""

    names: tuple[str, ...]
    results: tuple[PassResult | None, ...]

    def only(self, positions: Sequence[int]) -> Prejudged:
        """The results of the calls at ``positions``, in that order."""
        return Prejudged(self.names, tuple(self.results[i] for i in positions))
