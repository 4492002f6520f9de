"""Plan tokens: a person approves an ordered list of steps and signs it; calls must follow it.

A :class:`PlanToken` names the workflow, the steps (tool and exact arguments), an optional tier
ceiling, an expiry and a nonce, and is signed with the approver's Ed25519 key. The workflow
keeps it in its ledger (``Ledger.accept_plan``) and counts the steps that ran; the policy's plan
check verifies the signature and refuses any call that is not the next step with exactly its
values.
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..._types import canonical_json
from ...approvals import load_private_key


class PlanStep(BaseModel):
    """One approved step: a tool and its exact arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class PlanToken(BaseModel):
    """A plan a person approved, signed by them."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    workflow_id: str
    run_id: str | None = None
    """The run it was approved for: a workflow's ``duraguard.plan`` update takes only a plan
    bound to the run that receives it (a new run of the same workflow id cannot reuse it)."""
    steps: tuple[PlanStep, ...]
    approver: str
    max_tier: int | None = None
    """The highest tool tier any call may use while this plan is followed."""
    expires_at: float
    nonce: str = Field(default_factory=lambda: secrets.token_hex(12))
    signature: str | None = None

    def statement(self) -> bytes:
        """The exact bytes that are signed."""
        return canonical_json(
            {
                "v": 2,
                "kind": "plan",
                "workflow_id": self.workflow_id,
                "run_id": self.run_id,
                "steps": [s.model_dump(mode="json") for s in self.steps],
                "approver": self.approver,
                "max_tier": self.max_tier,
                "expires_at": self.expires_at,
                "nonce": self.nonce,
            }
        ).encode()


def make_plan(
    *,
    workflow_id: str,
    steps: Iterable[PlanStep | Mapping[str, Any]],
    approver: str,
    private_key: Any = None,
    run_id: str | None = None,
    max_tier: int | None = None,
    ttl_seconds: float = 3600.0,
    now: float | None = None,
) -> PlanToken:
    """Build (and, given the approver's private key, sign) a plan token.

    Example::

        run = (await client.get_workflow_handle("support-42").describe()).run_id
        token = make_plan(workflow_id="support-42", run_id=run, approver="alice",
                          private_key=alice_pem,
                          steps=[{"tool": "get_order", "args": {"order_id": "A1"}},
                                 {"tool": "refund_card", "args": {"order_id": "A1", "amount": 20}}])
    """
    parsed = tuple(s if isinstance(s, PlanStep) else PlanStep(**dict(s)) for s in steps)
    token = PlanToken(
        workflow_id=workflow_id,
        run_id=run_id,
        steps=parsed,
        approver=approver,
        max_tier=max_tier,
        expires_at=(time.time() if now is None else now) + ttl_seconds,
    )
    if private_key is None:
        return token
    key = load_private_key(private_key) if isinstance(private_key, bytes | str) else private_key
    sig = key.sign(token.statement())
    return token.model_copy(update={"signature": base64.b64encode(sig).decode()})


def verify_plan(
    token: PlanToken, *, workflow_id: str | None, keys: Any, now: float, run_id: str | None = None
) -> str | None:
    """Why ``token`` cannot be trusted for this workflow (and ``run_id``, where given), or
    ``None`` when it can."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if workflow_id is not None and token.workflow_id != workflow_id:
        return f"the plan was approved for workflow {token.workflow_id}, not {workflow_id}"
    if run_id is not None and token.run_id != run_id:
        return (
            f"the plan was approved for run {token.run_id or '(none named)'} of this workflow, "
            f"not run {run_id}; ask for a plan bound to this run (make_plan(run_id=...))"
        )
    if now > token.expires_at:
        return "the plan's approval expired; ask the person to approve the plan again"
    if token.signature is None:
        return "the plan is not signed; the approver signs it with their key (make_plan(private_key=...))"
    approver = keys.get(token.approver) if keys is not None else None
    if approver is None:
        return f"no public key is registered for the plan's approver {token.approver!r}"
    try:
        Ed25519PublicKey.from_public_bytes(approver.public_key).verify(
            base64.b64decode(token.signature), token.statement()
        )
    except (InvalidSignature, ValueError):
        return f"the plan's signature does not verify with {token.approver}'s key (the plan was altered)"
    return None
