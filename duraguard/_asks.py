"""The asks of one session: each call parked on a person, the decisions that came for it, and
what the gate counts of the messages it refused (:mod:`duraguard._gate` parks and answers them)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ._types import PassResult
from ._wire import PendingAsk
from .approvals import ApprovalCheck, Decision

DECISION_CHECKER = "duraguard.decision"
"""Who refuses a decision message or a plan before any step (in the audit)."""


@dataclass
class Parked:
    """One ask waiting for a person."""

    ask: PendingAsk
    inbox: list[tuple[int, Decision]] = field(default_factory=list)
    """Decisions to check, each with the number of the message that brought it."""
    answers: dict[int, ApprovalCheck] = field(default_factory=dict)
    """Verification results by message number, for the update that is waiting on one."""
    decided: bool = False
    checks: int = 0
    judge_edits: Callable[[Any], Awaitable[PassResult]] | None = None
    """Judges the call with a person's edits (the same guardrails), for a preview."""
    previews: int = 0


@dataclass
class Asks:
    """The asks of one session (:mod:`duraguard._gate` parks and answers them)."""

    parked: dict[str, Parked] = field(default_factory=dict)
    refused_messages: int = 0
    """Decision messages refused without any step."""
    asked: int = 0
    """Asks recorded so far (each ``duraguard.ask`` step is numbered by it)."""
    messages: int = 0
    """Decision messages accepted so far (each numbered by it)."""

    def waiting(self) -> int:
        return sum(1 for p in self.parked.values() if not p.decided)

    def pending(self) -> list[PendingAsk]:
        return [p.ask for p in self.parked.values() if not p.decided]


__all__ = ["DECISION_CHECKER", "Asks", "Parked"]
