"""The three spending limits together: a payment cap per call, a spending rule per session and a
budget per principal across workflows (docs/limits.md). Each test runs on the real server and is
replayed with no check run again."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from duraguard._wire import DECIDE
from duraguard.approvals import ApprovalCheck, decision_for
from duraguard.budget import STATE_QUERY, BudgetState, budget, entity_id
from duraguard.checks import policy
from duraguard.principal import principal
from duraguard.testing import CallInput, GuardedCallWorkflow

from ._harness import TOOL_LOG, Harness, make_harness, parked

CATALOGUE = {"tools": {"refund": {"payment_field": "amount", "payment_cap": 100}}}
RULES = """
rules:
  - name: refunds are fine
    tool: refund
    when:
      - arg: amount
        exists: true
    then: allow
spending:
  - name: at most 150 in refunds a session
    tool: refund
    field: amount
    max: 150
    then: ask
"""
LIMITS = policy(checks=["tool_kinds", "payment_limit", "your_rules"])


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(temporal_env, catalogue=CATALOGUE, rules=RULES, accept_unsigned=True)


def _budget(limit: float) -> Any:
    return budget(limit=limit, tools=["refund"], account=f"acct-{uuid.uuid4().hex[:6]}")


TQ = f"tq-limits-{uuid.uuid4().hex[:8]}"
"""One task queue for every run here: the budget entities live on it too."""


async def _calls(
    h: Harness, who: str, amounts: list[float], guardrails: list[Any], decide: Any = None
) -> tuple[list[dict[str, Any]], BudgetState | None]:
    """The outcomes of the calls, and the principal's budget afterwards (if one was kept)."""
    tq = TQ
    spec = CallInput(
        calls=[("refund", {"order_id": f"A{i}", "amount": a}) for i, a in enumerate(amounts)],
        guardrails=guardrails,
    )
    async with h.worker(tq):
        with principal(who):
            handle = await h.start(GuardedCallWorkflow.run, spec, task_queue=tq)
        if decide is not None:
            await decide(handle)
        out = await handle.result()
        try:
            state: BudgetState | None = await h.client.get_workflow_handle(entity_id(who)).query(
                STATE_QUERY, result_type=BudgetState
            )
        except Exception:
            state = None  # no budget entity: nothing was ever reserved
    await h.replay(await handle.fetch_history())
    return out, state


async def test_the_payment_cap_refuses_one_call_before_the_budget_holds_anything(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    who = f"p-{uuid.uuid4().hex[:6]}"
    money = _budget(1000)
    out, state = await _calls(h, who, [120], [LIMITS, money])
    assert (out[0]["ran"], out[0]["by"]) == (False, "policy")
    assert "at most 100" in out[0]["result"]["error"]
    assert TOOL_LOG == []
    assert state is None  # the budget was never asked


async def test_a_budget_hold_is_given_back_when_a_later_limit_refuses_the_call(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    who = f"q-{uuid.uuid4().hex[:6]}"
    money = _budget(1000)
    out, state = await _calls(h, who, [120], [money, LIMITS])  # the budget reserves first
    assert (out[0]["ran"], out[0]["by"]) == (False, "policy")
    assert state is not None
    account = next(iter(state.accounts.values()))
    assert account.holds == {} and account.spent == 0  # nothing held, nothing spent


async def test_the_session_rule_asks_and_the_budget_still_refuses_after_the_yes(
    h: Harness,
) -> None:
    """80 + 60 fit the session's 150; the next 60 needs a person's yes; the person says yes,
    but the principal's budget of 180 has only 40 left, so the call does not run."""
    TOOL_LOG.clear()
    who = f"r-{uuid.uuid4().hex[:6]}"
    money = _budget(180)

    async def approve(handle: Any) -> None:
        pending = await parked(handle)
        assert pending and pending[0].asked_by == "policy"
        yes = decision_for(pending[0], approver="alice")  # unsigned: accepted in this harness
        assert (await handle.execute_update(DECIDE, yes, result_type=ApprovalCheck)).ok

    out, state = await _calls(h, who, [80, 60, 60], [LIMITS, money], approve)
    assert [o["ran"] for o in out] == [True, True, False]
    assert out[2]["by"] == money.name and "overspend" in out[2]["result"]["error"]
    assert [a for _, a in TOOL_LOG] == [
        {"order_id": "A0", "amount": 80},
        {"order_id": "A1", "amount": 60},
    ]
    assert state is not None
    account = next(iter(state.accounts.values()))
    assert account.spent == 140 and account.holds == {}


async def test_the_budget_holds_across_workflows_where_each_session_is_within_its_rule(
    h: Harness,
) -> None:
    """Two workflows for one person each spend within their session's rule; together they would
    pass the person's budget, so the second is refused."""
    TOOL_LOG.clear()
    who = f"s-{uuid.uuid4().hex[:6]}"
    money = _budget(120)
    first, _ = await _calls(h, who, [90], [LIMITS, money])
    second, _ = await _calls(h, who, [90], [LIMITS, money])
    assert first[0]["ran"] and not second[0]["ran"]
    assert second[0]["by"] == money.name
