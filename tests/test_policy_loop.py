"""The tool-call policy (duraguard.checks.policy) inside the agent loop: asks park on a person, refusals reach the model,
the registry is read live, outside content is tracked through the session."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from duraguard import schema
from duraguard._wire import DECIDE, PENDING_QUERY, PendingAsk
from duraguard.approvals import ApprovalCheck
from duraguard.checks import policy
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow, approver_decision

from ._harness import TOOL_LOG, Harness, make_harness
from .test_approvals import KEYS, PRIVATE

RULES = """
rules:
  - name: refunds over 100 need a manager
    tool: refund
    when:
      - arg: amount
        gt: 100
    then: ask
    role: manager
  - name: small refunds are fine
    tool: refund
    when:
      - arg: amount
        lte: 100
    then: allow
"""


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(temporal_env, approvers=KEYS, rules=RULES)


def _agent(
    h: Harness, *turns: Any, prompt: str = "refund order A1", **policy_kw: Any
) -> AgentInput:
    return AgentInput(
        prompt=prompt,
        model=h.script(*turns),
        tools=["lookup", "refund", "fetch", "send_email"],
        guardrails=[schema(), policy(**policy_kw)],
    )


async def test_small_refund_after_lookup_is_allowed_by_the_rule_sheet(h: Harness) -> None:
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        _agent(
            h,
            calls(("lookup", {"order_id": "A1"})),
            calls(("refund", {"order_id": "A1", "amount": 20})),
            answer("refunded 20 on A1"),
            prompt="refund 20 on order A1",
        ),
    )
    assert run.result.stop_reason == "done"
    assert TOOL_LOG == [
        ("lookup", {"order_id": "A1"}),
        ("refund", {"order_id": "A1", "amount": 20}),
    ]


async def test_refund_over_the_limit_waits_for_a_managers_signed_yes(h: Harness) -> None:
    TOOL_LOG.clear()
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    inp = _agent(
        h,
        calls(("refund", {"order_id": "A2", "amount": 500})),
        answer("done"),
        prompt="refund 500 on order A2",
    )
    async with h.worker(tq):
        handle = await h.start(AgentWorkflow.run, inp, task_queue=tq)
        ask: PendingAsk | None = None
        for _ in range(200):
            pending = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
            if pending:
                ask = pending[0]
                break
            await asyncio.sleep(0.05)
        assert ask is not None
        assert (ask.role, ask.asked_by, ask.check) == ("manager", "policy", "policy.your_rules")
        assert TOOL_LOG == []
        got = await handle.execute_update(
            DECIDE,
            approver_decision(ask, approver="alice", private_key=PRIVATE["alice"]),
            result_type=ApprovalCheck,
        )
        assert got.ok
        result = await handle.result()
    await h.replay(await handle.fetch_history())
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]


async def test_withdrawing_a_tool_takes_effect_without_a_redeploy(h: Harness) -> None:
    TOOL_LOG.clear()
    h.plugin.policy.withdraw("lookup")
    try:
        run = await h.run(
            AgentWorkflow.run, _agent(h, calls(("lookup", {"order_id": "A1"})), answer("ok"))
        )
    finally:
        h.plugin.policy.restore("lookup") if hasattr(h.plugin.policy, "restore") else None
    assert TOOL_LOG == []
    denied = [v for v in run.result.verdicts if v.action == "deny"]
    assert denied and denied[0].check == "policy.withdrawn"


async def test_a_write_after_outside_content_is_refused_under_taint_policy_refuse(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        _agent(
            h,
            calls(("fetch", {"url": "https://example.org/a"})),
            calls(("refund", {"order_id": "A9", "amount": 20})),
            answer("done"),
            prompt="read https://example.org/a",
            taint_policy="refuse",
        ),
    )
    assert ("refund", {"order_id": "A9", "amount": 20}) not in TOOL_LOG
    denied = [v for v in run.result.verdicts if v.action == "deny" and v.tool == "refund"]
    assert denied, run.result.verdicts
    assert denied[0].check in ("policy.outside_content", "policy.labels", "policy.grounded")


async def test_a_tool_the_model_made_up_is_refused(h: Harness) -> None:
    run = await h.run(AgentWorkflow.run, _agent(h, calls(("delete_everything", {})), answer("ok")))
    tool_msg = next(m.content for m in run.result.messages if m.role == "tool")
    assert '"valid":false' in tool_msg
