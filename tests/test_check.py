"""check() on any value, with and without a guarded call; guarded_call() outside a loop."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from ._check_workflows import CheckHalt, CheckParallel, CheckValue, GuardedBadArgs, GuardedHalt
from ._harness import TOOL_LOG, Harness, make_harness

WORKFLOWS = [CheckValue, CheckParallel, CheckHalt, GuardedHalt, GuardedBadArgs]


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(temporal_env, workflows=WORKFLOWS)


async def test_check_hands_back_the_masked_value_without_tripping(h: Harness) -> None:
    run = await h.run(CheckValue.run, "write to ana@example.com")
    assert run.result == {"tripped": False, "value": "write to [EMAIL]", "action": "mask"}
    assert run.activity_names() == ["duraguard.check"]


async def test_check_with_clean_value_returns_it_unchanged(h: Harness) -> None:
    run = await h.run(CheckValue.run, "nothing personal")
    assert run.result == {"tripped": False, "value": "nothing personal", "action": "allow"}


async def test_parallel_check_cancels_the_call_when_it_trips_and_records_the_cancel(
    h: Harness,
) -> None:
    run = await h.run(CheckParallel.run, {"question": "how to attack", "action": "deny"})
    assert run.result == {"tripped": True, "cancelled": True, "ran": False, "action": "deny"}
    kinds = [e.WhichOneof("attributes") for e in run.history.events]
    assert "activity_task_cancel_requested_event_attributes" in kinds
    assert "activity_task_canceled_event_attributes" in kinds  # the call is recorded as cancelled
    assert sorted(run.activity_names()) == ["duraguard.check", "slow_send"]
    assert ("slow_send", {"to": "a@example.com", "body": "x"}) not in TOOL_LOG


async def test_parallel_check_that_clears_returns_the_call_result(h: Harness) -> None:
    run = await h.run(CheckParallel.run, {"question": "what time is it"})
    assert run.result == {"tripped": False, "cancelled": False, "ran": True, "action": "allow"}
    assert sorted(run.activity_names()) == ["duraguard.check", "duraguard.check", "slow_send"]


async def test_halt_in_check_fails_the_workflow_non_retryably(h: Harness) -> None:
    run = await h.run(CheckHalt.run, "attack at dawn", expect_failure=True)
    cause = run.result.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "duraguard.GuardrailHalt" and cause.non_retryable
    assert "moderation" in cause.message


async def test_halt_in_guarded_call_fails_the_workflow_and_the_tool_never_runs(h: Harness) -> None:
    run = await h.run(GuardedHalt.run, expect_failure=True)
    assert run.result.cause.type == "duraguard.GuardrailHalt"
    assert "send_email" not in run.activity_names()


async def test_guarded_call_with_non_object_arguments_fails_with_a_clear_error(h: Harness) -> None:
    run = await h.run(GuardedBadArgs.run, expect_failure=True)
    assert "must be a JSON object" in str(run.result.cause)
