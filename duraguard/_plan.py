"""A plan a person approved: the ``duraguard.plan`` update, verified in a recorded step.

A person signs an ordered list of steps (:func:`duraguard.checks.policy.make_plan`); once the
worker has verified the signature, the approver, the expiry and the workflow, the session's
ledger follows it and the policy's ``plan_step`` check holds every call to it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import ValidationError
from temporalio import workflow

from ._bounds import too_deep
from ._state import DECISION_CHECKER, SessionState
from ._types import NotJSON, canonical_json
from ._wire import VERIFY_PLAN_ACTIVITY, AuditRow, PlanCheck, VerifyPlanRequest
from .checks.policy.plan import PlanToken

MAX_PLAN_STEPS = 200
MAX_PLAN_BYTES = 262_144


class PlanDesk:
    """Takes a session's plans: refuses a malformed or replayed one without history, verifies
    the rest in a recorded step."""

    def __init__(self, session: SessionState) -> None:
        self.session = session

    def problem(self, args: tuple[Any, ...]) -> tuple[PlanToken | None, str | None]:
        if len(args) != 1:
            return (
                None,
                "a plan is one object: a signed plan token (duraguard.checks.policy.make_plan)",
            )
        try:
            token = PlanToken.model_validate(args[0])
            data = token.model_dump(mode="json")
            deep = too_deep(data, "a plan")
            if deep is not None:
                return None, deep
            size = len(canonical_json(data).encode())
        except (ValidationError, NotJSON) as err:
            return None, f"malformed plan: {str(err)[:200]}"
        if size > MAX_PLAN_BYTES or len(token.steps) > MAX_PLAN_STEPS:
            return None, f"a plan has at most {MAX_PLAN_STEPS} steps and {MAX_PLAN_BYTES} bytes"
        if token.workflow_id != self.session.workflow_id:
            return None, "this plan was approved for another workflow"
        if token.run_id != self.session.run_id:
            return None, (
                f"this plan was approved for run {token.run_id or '(none named)'}, not this run "
                f"({self.session.run_id}); a plan names the run it is for (make_plan(run_id=...))"
            )
        if token.nonce in self.session.ledger.used_nonces:
            return None, "this plan's nonce was used before"
        return token, None

    def validate(self, *args: Any) -> None:
        _, problem = self.problem(args)
        if problem is not None:
            raise ValueError(problem)

    async def on_plan(self, *args: Any) -> PlanCheck:
        token, problem = self.problem(args)
        if token is None:
            return PlanCheck(ok=False, reason=problem or "unreadable plan")
        s = self.session
        data = token.model_dump(mode="json")
        checked: PlanCheck = await workflow.execute_local_activity(
            VERIFY_PLAN_ACTIVITY,
            VerifyPlanRequest(
                token=data,
                workflow_id=s.workflow_id,
                run_id=s.run_id,
                used_nonces=tuple(s.ledger.used_nonces),
            ),
            result_type=PlanCheck,
            start_to_close_timeout=timedelta(seconds=30),
            activity_id=f"dg-plan-{token.nonce[:16]}",
            summary=f"duraguard plan: {len(token.steps)} step(s) by {token.approver}"[:200],
        )
        if checked.ok:
            s.ledger.use_nonce(token.nonce)
            s.ledger.accept_plan(data)
        s.note(
            AuditRow(
                turn=s.counts.turn,
                call_id=None,
                tool=None,
                placement="tool-args",
                action="allow" if checked.ok else "deny",
                by="person" if checked.ok else DECISION_CHECKER,
                check="plan" if checked.ok else "plan.refused",
                approver=token.approver,
                reason=checked.reason or f"a plan of {len(token.steps)} step(s)",
            ),
            counts=False,
        )
        return checked
