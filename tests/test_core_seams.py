"""What the policy can judge is reachable from a workflow: a person approves a plan and the
calls follow it; an undo finds the step it reverses and the undo check judges it; a check()
waits for a person. Each run is replayed with no check run again."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError

import duraguard
from duraguard import Guardrail, Subject, Verdict
from duraguard._wire import APPROVE_PLAN, DECIDE, PENDING_QUERY, PendingAsk, PlanCheck
from duraguard.approvals import ApprovalCheck
from duraguard.checks import policy
from duraguard.checks.policy import make_plan
from duraguard.testing import approver_decision
from duraguard.tools import Undo

from ._core_workflows import Calls, Checked, CheckedAnswer, PlannedCalls
from ._harness import TOOL_LOG, TOOLS, Harness, make_harness
from .test_approvals import KEYS, PRIVATE

UNDONE: list[dict[str, Any]] = []


@duraguard.tool(kind="write", undo=Undo("cancel", {"refund_id": "result.refund_id"}))
def refund_once(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order; returns the refund's id."""
    TOOL_LOG.append(("refund_once", {"order_id": order_id, "amount": amount}))
    return {"refund_id": f"R-{order_id}", "amount": amount}


@duraguard.tool(kind="write")
def cancel(refund_id: str) -> dict[str, Any]:
    """Cancel a refund."""
    UNDONE.append({"refund_id": refund_id})
    return {"cancelled": refund_id}


class NeedsEditor(Guardrail):
    """Anything that says 'publish' needs an editor's yes."""

    name = "needs-editor"
    placements = frozenset({"post-model"})

    async def check(self, subject: Subject) -> Verdict:
        if "publish" in str(subject.value):
            return Verdict.approve("publishing needs an editor", role="manager")
        return Verdict.allow()


WRITES_ARE_FINE = """
rules:
  - name: refunds and their cancellations are fine here
    tool: [refund_once, cancel]
    when:
      - arg: order_id
        exists: true
    then: allow
  - name: cancellations are fine here
    tool: cancel
    when:
      - arg: refund_id
        exists: true
    then: allow
"""


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(
        temporal_env,
        tools=[*TOOLS, refund_once, cancel],
        guardrails=[NeedsEditor()],
        approvers=KEYS,
        rules=WRITES_ARE_FINE,
        workflows=[PlannedCalls, CheckedAnswer],
    )


async def _run(h: Harness, workflow: Any, arg: Any, act: Any = None) -> Any:
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(workflow, arg, task_queue=tq)
        if act is not None:
            await act(handle)
        result = await handle.result()
    await h.replay(await handle.fetch_history())
    return result


PLAN_POLICY = policy(checks=["tool_kinds", "plan_step"])


async def test_a_signed_plan_is_followed_call_by_call_and_nothing_else_runs(h: Harness) -> None:
    TOOL_LOG.clear()
    steps = [
        {"tool": "lookup", "args": {"order_id": "A1"}},
        {"tool": "refund", "args": {"order_id": "A1", "amount": 20}},
    ]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("lookup", {"order_id": "A1"}),
        ("refund", {"order_id": "A1", "amount": 900}),  # not the plan's values
        ("refund", {"order_id": "A1", "amount": 20}),
        ("refund", {"order_id": "A1", "amount": 20}),  # the plan has run out
    ]
    answers: list[PlanCheck] = []

    async def approve_plan(handle: Any) -> None:
        run = (await handle.describe()).run_id
        token = make_plan(
            workflow_id=handle.id,
            run_id=run,
            steps=steps,
            approver="alice",
            private_key=PRIVATE["alice"],
        )
        altered = token.model_copy(
            update={
                "steps": (
                    token.steps[0],
                    token.steps[1].model_copy(update={"args": {"order_id": "A1", "amount": 900}}),
                )
            }
        )
        answers.append(await handle.execute_update(APPROVE_PLAN, altered, result_type=PlanCheck))
        answers.append(await handle.execute_update(APPROVE_PLAN, token, result_type=PlanCheck))

    out = await _run(
        h,
        PlannedCalls.run,
        Calls(calls=calls, guardrails=[PLAN_POLICY], wait_for_plan=True),
        approve_plan,
    )
    assert [a.ok for a in answers] == [False, True]
    assert "altered" in answers[0].reason
    assert [(o["ran"], o["check"]) for o in out] == [
        (True, None),
        (False, "policy.plan_step"),
        (True, None),
        (False, "policy.plan_step"),
    ]
    assert TOOL_LOG == [
        ("lookup", {"order_id": "A1"}),
        ("refund", {"order_id": "A1", "amount": 20}),
    ]


async def test_a_plan_approved_for_one_run_is_refused_by_the_next_run_of_that_workflow(
    h: Harness,
) -> None:
    """A plan lets calls run without asking anyone: taken from run 1's history and sent to a new
    run of the same workflow id, it once paid again."""
    TOOL_LOG.clear()
    wid = f"planned-{uuid.uuid4().hex[:8]}"
    steps = [{"tool": "refund", "args": {"order_id": "A1", "amount": 20}}]
    spec = Calls(
        calls=[("refund", {"order_id": "A1", "amount": 20})],
        guardrails=[PLAN_POLICY],
        wait_for_plan=True,
    )
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        first = await h.start(PlannedCalls.run, spec, task_queue=tq, id=wid)
        run1 = (await first.describe()).run_id
        token = make_plan(
            workflow_id=wid,
            run_id=run1,
            steps=steps,
            approver="alice",
            private_key=PRIVATE["alice"],
        )
        unbound = make_plan(
            workflow_id=wid, steps=steps, approver="alice", private_key=PRIVATE["alice"]
        )
        with pytest.raises(WorkflowUpdateFailedError):  # a plan must name its run
            await first.execute_update(APPROVE_PLAN, unbound, result_type=PlanCheck)
        assert (await first.execute_update(APPROVE_PLAN, token, result_type=PlanCheck)).ok
        await first.result()
        second = await h.start(PlannedCalls.run, spec, task_queue=tq, id=wid)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await second.execute_update(APPROVE_PLAN, token, result_type=PlanCheck)
        assert "approved for run" in str(refused.value.cause)
        await second.terminate("test over")
    assert TOOL_LOG == [("refund", {"order_id": "A1", "amount": 20})]  # paid once
    await h.replay(await first.fetch_history())


async def test_an_undo_finds_the_step_it_reverses_and_a_step_is_undone_once(h: Harness) -> None:
    TOOL_LOG.clear()
    UNDONE.clear()
    undo_policy = policy(checks=["tool_kinds", "undo", "your_rules"])
    calls: list[tuple[str, dict[str, Any]]] = [
        ("refund_once", {"order_id": "A1", "amount": 20}),
        ("cancel", {"refund_id": "R-Z9"}),  # reverses no step
        ("cancel", {"refund_id": "R-A1"}),  # reverses the refund
        ("cancel", {"refund_id": "R-A1"}),  # a second undo of the same step
    ]
    # The rule sheet allows these writes, so only the undo check can stop them.
    out = await _run(
        h,
        PlannedCalls.run,
        Calls(calls=calls, guardrails=[undo_policy]),
    )
    checks = [(o["ran"], o["check"]) for o in out]
    assert checks[0][0] is True
    assert checks[1] == (False, "policy.undo") and "compensation_of" in out[1]["reason"]
    assert checks[2][0] is True
    assert checks[3] == (False, "policy.undo") and "only once" in out[3]["reason"]
    assert UNDONE == [{"refund_id": "R-A1"}]


async def test_check_waits_for_a_person_and_goes_on_with_their_yes(h: Harness) -> None:
    decided: list[ApprovalCheck] = []

    async def approve(handle: Any) -> None:
        pending: list[PendingAsk] = []
        for _ in range(200):
            pending = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
            if pending:
                break
            await asyncio.sleep(0.05)
        assert pending and pending[0].label == "publish" and pending[0].tool is None
        d = approver_decision(pending[0], approver="alice", private_key=PRIVATE["alice"])
        decided.append(await handle.execute_update(DECIDE, d, result_type=ApprovalCheck))

    out = await _run(
        h,
        CheckedAnswer.run,
        Checked(text="please publish the post", guardrails=[NeedsEditor().spec()]),
        approve,
    )
    assert decided[0].ok
    assert out == {
        "tripped": False,
        "value": "please publish the post",
        "approver": "alice",
        "action": "allow",
    }


async def test_check_trips_when_nobody_answers_in_time(h: Harness) -> None:
    out = await _run(
        h,
        CheckedAnswer.run,
        Checked(
            text="please publish the post",
            guardrails=[NeedsEditor().spec()],
            approval_timeout_seconds=0.5,
        ),
    )
    assert out == {"tripped": True, "value": None, "approver": None, "action": "deny"}
