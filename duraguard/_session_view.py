"""What a check may read of its session: the ledger's entries, where values came from, the
plan followed, the tool results, and the bounded view that holds them (``Ledger.view``)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from ._compact import _Compact, _Model
from ._literals import Action


class LedgerEntry(_Model):
    """One call already made in this session, as the policy reads it."""

    index: int
    call_id: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    action: Action = "allow"
    ran: bool = False
    ok: bool = True
    at: float = 0.0
    """Workflow time, seconds since the epoch."""
    result_digest: str | None = None
    labels: tuple[str, ...] = ()
    compensation_of: int | None = None
    result_fields: dict[str, Any] = Field(default_factory=dict)
    """Top-level scalar fields of the result (bounded), for rules and undo mappings."""
    turn: int = -1
    """The person's latest turn when the call was made (``-1``: before any turn)."""
    prev_hash: str = ""
    """The hash of the entry before (the chain link, so one entry can be checked on its own)."""
    entry_hash: str = ""


class Provenance(_Model):
    """Where one of the call's own values came from."""

    path: str
    """JSON Pointer of the value in the call's arguments (the value itself is not repeated)."""
    value: Any = None
    sources: tuple[str, ...] = ()
    """``turn:i`` (the person said it in turn i), ``result:j`` (call j returned it),
    ``prompt`` (in the task the agent was given), ``outside:<label>`` (came from outside content)."""


class PlanState(_Model):
    """A plan a person approved and signed, as the session follows it."""

    token: dict[str, Any]
    """The signed :class:`duraguard.checks.policy.PlanToken`, as a dict (the policy verifies it)."""
    step: int = 0
    """How many of its steps have run."""


class ToolRecord(_Model):
    """One tool result of the session, as a validation guardrail reads it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    tool: str
    result: Any = None
    args: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None
    ok: bool = True


class SessionView(_Compact):
    """The bounded slice of the session a check may read (never the whole transcript).

    Every field a check reads is declared here; the ledger fills them (``Ledger.view``).
    """

    session_id: str = ""
    calls: int = 0
    chain_head: str = ""
    tool_counts: dict[str, int] = Field(default_factory=dict)
    entries: tuple[LedgerEntry, ...] = ()
    """The entries a rule needs (same tool, its undo targets, the last few), not all."""
    labels_seen: tuple[str, ...] = ()
    addressed: tuple[int, ...] = ()
    """Calls whose outside content addressed an AI agent (the latest few; ``-1``: not known)."""
    pressed: tuple[int, ...] = ()
    """Calls whose outside content pressed an order or addressed an agent (the latest few)."""
    turns: tuple[str, ...] = ()
    """The person's turns; the turn-reading checks read only the last."""
    turn_index: int = -1
    """The index of the person's latest turn (``-1``: no turn yet)."""
    provenance: tuple[Provenance, ...] = ()
    now: float = 0.0
    sums: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Per tool, the running total of each numeric top-level argument of the calls that ran."""
    chain_break: int | None = None
    """The position of the first entry whose hash does not follow (the record was altered)."""
    plan: PlanState | None = None
    compensation_of: int | None = None
    """The index of the step this call undoes, for an undo."""
    undone_by: tuple[int, ...] = ()
    """Calls that already undid that step."""
    max_tier: int | None = None
    """A tool-tier ceiling set for this session (besides the policy's and the plan's)."""
    results: tuple[ToolRecord, ...] = ()
    """The last few tool results (for validation guardrails at ``final-answer``)."""
    withheld: bool = False
    """No view was built: the step's input was made while replaying history, where a step's
    input is not sent again. A check given one judges nothing (``CheckResponse.withheld``) and
    the workflow sends the view itself (a local step whose record was lost runs after replay)."""


__all__ = ["LedgerEntry", "PlanState", "Provenance", "SessionView", "ToolRecord"]
