"""What crosses for a person's part in a run: an ask recorded, a decision or a plan verified,
edits previewed, and the audit's rows."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ._types import Action, Placement
from ._wire_base import Wire as _Wire
from .approvals import Decision


class VerifyRequest(_Wire):
    """Input of ``duraguard.verify-decision``."""

    decision: Decision
    workflow_id: str
    call_id: str
    tool: str | None
    args: Any
    role: str | None = None
    used_nonces: tuple[str, ...] = ()
    run_id: str = ""
    challenge: str = ""


class VerifyPlanRequest(_Wire):
    """Input of ``duraguard.verify-plan``: a plan a person signed, for this workflow."""

    token: dict[str, Any]
    workflow_id: str
    used_nonces: tuple[str, ...] = ()
    run_id: str | None = None


class PlanCheck(_Wire):
    """Whether a plan was accepted (its signature, approver, expiry and workflow checked)."""

    ok: bool
    reason: str = ""
    approver: str | None = None
    steps: int = 0


class EditsPreviewRequest(_Wire):
    """Input of the ``duraguard.preview-edits`` update: edits a person is about to sign."""

    call_id: str = Field(min_length=1, max_length=128)
    edits: dict[str, Any]


class EditsPreview(_Wire):
    """How the guardrails judge a parked call with a person's edits, before they sign a yes.

    Judged in a recorded step (it is in the audit); nothing is decided and nothing held.
    """

    ok: bool
    """False where the edited call would be refused (and a yes with these edits would fail
    the run)."""
    action: Action
    by: str | None = None
    check: str | None = None
    reason: str | None = None


class PendingAsk(_Wire):
    """A call parked on a person, as ``duraguard pending`` and the query show it."""

    workflow_id: str
    run_id: str = ""
    """The run that asked; a decision binds to it."""
    call_id: str
    challenge: str = ""
    """Drawn when the call was parked; a decision signs it, so it answers this ask only."""
    tool: str | None
    args: Any
    """The tool's arguments (for a ``check()``, the value judged)."""
    label: str | None = None
    """What asked, where it is not a tool call (the name of a ``check()``)."""
    call_digest: str
    asked_by: str | None
    """The guardrail that asked."""
    check: str | None = None
    reason: str | None = None
    role: str | None = None
    expires_at: float
    turn: int = 0
    keys: dict[str, str] = Field(default_factory=dict)
    """The public keys (base64) of the people whose yes can count for this ask, as the worker
    knew them when it asked: recorded in history, so the run can refuse a decision that is not
    signed by one of them without any step (a flood of forged decisions writes nothing)."""
    prints: tuple[str, ...] = Field(default=(), exclude_if=lambda v: not v)
    """Where more people may say yes than :attr:`keys` holds (see
    :data:`~duraguard._asker.MAX_ASK_KEYS`): the fingerprint
    (:func:`~duraguard._approvers.fingerprint`) of each of them instead, and :attr:`keys` is
    empty. A decision then carries its signer's key, and the run checks the signature against
    it and the fingerprint against these, still with no step."""
    unsigned_ok: bool = False
    """Whether the workers accepted unsigned decisions when this ask was made (development)."""


def decided_by(by: str | None, check: str | None) -> str:
    """How tables name who decided: the guardrail, and its check where that says more."""
    if check and check != by:
        return f"{by or '-'} ({check})"
    return by or "-"


class AuditRow(_Wire):
    """One verdict in the run's audit: safe-to-show fields, and the rest for ``--reveal``."""

    turn: int
    call_id: str | None
    tool: str | None
    placement: Placement
    action: Action
    by: str | None
    check: str | None = None
    outcome: str = "complete"
    approver: str | None = None
    reason: str | None = None

    @property
    def decided_by(self) -> str:
        return decided_by(self.by, self.check)


__all__ = [
    "AuditRow",
    "EditsPreview",
    "EditsPreviewRequest",
    "PendingAsk",
    "PlanCheck",
    "VerifyPlanRequest",
    "VerifyRequest",
    "decided_by",
]
