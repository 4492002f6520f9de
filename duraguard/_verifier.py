"""The worker's one verifier: a person's decision (``duraguard.verify-decision``) and a signed
plan (``duraguard.verify-plan``), checked against the approvers' keys the worker holds."""

from __future__ import annotations

import time

from temporalio import activity

from ._wire import (
    VERIFY_ACTIVITY,
    VERIFY_PLAN_ACTIVITY,
    PlanCheck,
    VerifyPlanRequest,
    VerifyRequest,
)
from .approvals import ApprovalCheck, ApproverKeys, verify
from .checks.policy.plan import PlanToken, verify_plan


class Verifier:
    """Checks what people sent (decisions, plans) with the keys whose word counts."""

    def __init__(self, *, approvers: ApproverKeys | None, accept_unsigned: bool) -> None:
        self.approvers = approvers
        self.accept_unsigned = accept_unsigned

    @activity.defn(name=VERIFY_ACTIVITY)
    async def verify_decision(self, request: VerifyRequest) -> ApprovalCheck:
        """Whether a decision answers this ask of this run, signed by a key that counts."""
        checked = verify(
            request.decision,
            workflow_id=request.workflow_id,
            run_id=request.run_id,
            challenge=request.challenge,
            call_id=request.call_id,
            tool=request.tool,
            args=request.args,
            keys=self.approvers,
            now=time.time(),
            used_nonces=request.used_nonces,
            role=request.role,
            accept_unsigned=self.accept_unsigned,
        )
        return checked.model_copy(update={"tool": request.tool, "said": request.decision.reason})

    @activity.defn(name=VERIFY_PLAN_ACTIVITY)
    async def verify_plan(self, request: VerifyPlanRequest) -> PlanCheck:
        """Whether a signed plan is for this run, unused, in date and signed by an approver."""
        try:
            token = PlanToken.model_validate(request.token)
        except ValueError as err:
            return PlanCheck(ok=False, reason=f"the plan cannot be read: {str(err)[:200]}")
        if token.nonce in request.used_nonces:
            return PlanCheck(ok=False, reason="this plan's nonce was used before (a replayed plan)")
        bad = verify_plan(
            token,
            workflow_id=request.workflow_id,
            run_id=request.run_id,
            keys=self.approvers,
            now=time.time(),
        )
        if bad is not None:
            return PlanCheck(ok=False, reason=bad, approver=token.approver)
        return PlanCheck(ok=True, approver=token.approver, steps=len(token.steps))


__all__ = ["Verifier"]
