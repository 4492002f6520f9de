"""One call as the policy's checks read it, and what a check says when it stops the call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..._reading import Reading, read
from ..._types import SessionView, Subject
from .catalogue import Kind, KindReading, KindSource, ToolInfo, kind_of
from .plan import PlanToken
from .registry import Snapshot
from .settings import PolicySettings


@dataclass(frozen=True)
class Stop:
    """A check stopping a call: refused (``ask=False``) or asked (``ask=True``)."""

    check: str
    reason: str
    ask: bool = False
    role: str | None = None
    partial: bool = False
    """True where the check could not decide (refused because of that: fail closed)."""
    path: str | None = None


@dataclass
class Call:
    """Everything one evaluation reads, and what earlier checks found out for later ones."""

    subject: Subject
    settings: PolicySettings
    snap: Snapshot
    keys: Any
    """The approvers' public keys (:class:`duraguard.approvals.ApproverKeys`), or ``None``."""
    tool: str
    args: Mapping[str, Any]
    session: SessionView
    info: ToolInfo | None = None
    kind: Kind = "write"
    kind_source: KindSource = "default"
    kind_reading: KindReading | None = None
    plan: PlanToken | None = None
    plan_step_ok: bool = False
    """The call is the next step of a plan a person approved and signed."""
    rule_allowed: bool = False
    """An allow rule of the rule sheet speaks for this write."""
    confirmed: bool = False
    """A valid signed yes from a person covers this exact call."""
    asks: list[Stop] = field(default_factory=list)
    memo: dict[str, Any] = field(default_factory=dict)
    """Readings several checks share (computed once per call)."""

    @property
    def agent(self) -> str | None:
        return self.subject.context.agent

    @cached_property
    def turn(self) -> Reading | None:
        """The person's latest turn, read; ``None`` where no turns were given."""
        turns = self.session.turns
        return read(turns[-1]) if turns else None

    def kind_of(self, tool: str) -> Kind:
        """The kind of another tool (for calls already in the session)."""
        withheld = not self.settings.on("tool_kinds")
        if withheld:
            return "write"
        return kind_of(
            self.snap.catalogue.get(tool), tool, self.snap.kinds, infer_kinds=self.settings.infer
        ).kind

    def since_turn(self) -> list[Any]:
        """Calls already made since the person's latest turn."""
        turn = self.session.turn_index
        if turn < 0:
            return []
        return [e for e in self.session.entries if e.turn == turn]
