"""An ask that nobody answers expires on a durable timer (time-skipping server): the call never runs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow

from ._harness import TOOL_LOG, Harness, make_harness
from .test_approvals import NEEDS, NeedsManager


@pytest.fixture(scope="module")
async def h(time_env) -> Harness:
    h = await make_harness(time_env, guardrails=[NeedsManager()])
    h.execution_timeout = timedelta(days=30)
    return h


async def test_unanswered_ask_expires_after_hours_and_the_call_does_not_run(h: Harness) -> None:
    TOOL_LOG.clear()
    model = h.script(calls(("refund", {"order_id": "A2", "amount": 500})), answer("gave up"))
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="refund",
            model=model,
            tools=["refund"],
            guardrails=[NEEDS],
            approval_timeout_seconds=6 * 3600,
        ),
    )
    assert run.result.stop_reason == "done"
    assert TOOL_LOG == []
    tool_msg = next(m.content for m in run.result.messages if m.role == "tool")
    assert "expired" in tool_msg
    assert any(v.check == "approval.expired" for v in run.result.verdicts)
    from duraguard.audit import audit_rows

    rows = await audit_rows(run.history, h.client.data_converter)
    assert [(r.call_id, r.tool, r.action, r.check) for r in rows if r.by == "duraguard.expiry"] == [
        ("c1", "refund", "deny", "approval.expired")
    ]
    timers = [e for e in run.history.events if e.HasField("timer_started_event_attributes")]
    # The ask runs from when it was recorded: the timer is what is left of the six hours once
    # the ask step has run (workflow time, a fraction of a second).
    assert timers
    left = timers[0].timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
    assert 6 * 3600 - 5 < left.total_seconds() <= 6 * 3600
