"""A per-principal budget guarding the agent loop: two agents for one person cannot overspend,
a tool that fails gives its reservation back, and one whose effect happened keeps it spent."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

import duraguard
from duraguard.budget import budget
from duraguard.models import answer, calls
from duraguard.principal import principal
from duraguard.testing import AgentInput, AgentWorkflow

from ._harness import TOOL_LOG, TOOLS, Harness, make_harness

FAIL_NEXT: list[bool] = []


@duraguard.tool(kind="write", max_attempts=1)
def flaky_refund(order_id: str, amount: float) -> dict[str, Any]:
    """A refund whose backend fails once."""
    if FAIL_NEXT and FAIL_NEXT.pop():
        raise RuntimeError("card network down")
    TOOL_LOG.append(("flaky_refund", {"order_id": order_id, "amount": amount}))
    return {"refunded": amount}


class Receipt:
    """What a payment provider's SDK returns: not JSON."""

    def __init__(self, amount: float) -> None:
        self.amount = amount


@duraguard.tool(kind="write")
def pay_receipt(invoice: str, amount: float) -> Any:
    """Pays, then returns the provider's receipt object (its result cannot be recorded)."""
    TOOL_LOG.append(("pay_receipt", {"invoice": invoice, "amount": amount}))
    return Receipt(amount)


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(temporal_env, tools=[*TOOLS, flaky_refund, pay_receipt])


def _agent(h: Harness, amount: float, limit: float, tool: str = "refund") -> AgentInput:
    model = h.script(calls((tool, {"order_id": "A1", "amount": amount})), answer("done"))
    return AgentInput(
        prompt="refund",
        model=model,
        tools=[tool],
        guardrails=[budget(limit=limit, tools=[tool], account=f"acct-{uuid.uuid4().hex[:6]}")],
    )


async def test_two_agents_for_one_person_at_once_cannot_overspend(h: Harness) -> None:
    TOOL_LOG.clear()
    who = f"ana-{uuid.uuid4().hex[:6]}"
    spec = _agent(h, 60, 100)
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        with principal(who):
            handles = [
                await h.start(
                    AgentWorkflow.run,
                    spec.model_copy(
                        update={
                            "model": h.script(
                                calls(("refund", {"order_id": f"A{i}", "amount": 60})),
                                answer("done"),
                            )
                        }
                    ),
                    task_queue=tq,
                )
                for i in range(3)
            ]
        results = await asyncio.gather(*(x.result() for x in handles))
        for x in handles:
            await h.replay(await x.fetch_history())
    ran = [t for t in TOOL_LOG if t[0] == "refund"]
    assert len(ran) == 1  # 60 fits in 100 once; the others would overspend
    refused = [
        m.content
        for r in results
        for m in r.messages
        if m.role == "tool" and '"valid":false' in (m.content or "")
    ]
    assert len(refused) == 2 and all("100" in c for c in refused)


async def test_a_failed_tool_releases_its_reservation(h: Harness) -> None:
    TOOL_LOG.clear()
    who = f"ben-{uuid.uuid4().hex[:6]}"
    acct = f"acct-{uuid.uuid4().hex[:6]}"
    guard = [budget(limit=100, tools=["flaky_refund"], account=acct)]

    tq = f"tq-{uuid.uuid4().hex[:8]}"  # one worker: the budget entity lives on this queue

    async def one(amount: float) -> Any:
        model = h.script(
            calls(("flaky_refund", {"order_id": "A1", "amount": amount})), answer("done")
        )
        with principal(who):
            handle = await h.start(
                AgentWorkflow.run,
                AgentInput(prompt="refund", model=model, tools=["flaky_refund"], guardrails=guard),
                task_queue=tq,
            )
        result = await handle.result()
        await h.replay(await handle.fetch_history())
        return result

    async with h.worker(tq):
        FAIL_NEXT.append(True)
        first = await one(80)
        assert "card network down" in next(m.content for m in first.messages if m.role == "tool")
        second = await one(80)  # fits only because the failed call gave its 80 back
    assert TOOL_LOG == [("flaky_refund", {"order_id": "A1", "amount": 80})]
    assert second.stop_reason == "done"


async def test_a_tool_that_paid_but_whose_result_is_not_json_keeps_its_budget_spent(
    h: Harness,
) -> None:
    """The payment happened; only its receipt could not be recorded. Giving the hold back would
    let the next payments overspend (60 + 60 + 60 against 100)."""
    TOOL_LOG.clear()
    who, acct = f"cy-{uuid.uuid4().hex[:6]}", f"acct-{uuid.uuid4().hex[:6]}"
    guard = [budget(limit=100, tools=["pay_receipt"], account=acct)]
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    results = []
    async with h.worker(tq):
        for i in range(3):
            model = h.script(
                calls(("pay_receipt", {"invoice": f"I{i}", "amount": 60})), answer("done")
            )
            with principal(who):
                handle = await h.start(
                    AgentWorkflow.run,
                    AgentInput(prompt="pay", model=model, tools=["pay_receipt"], guardrails=guard),
                    task_queue=tq,
                )
            results.append(await handle.result())
            await h.replay(await handle.fetch_history())
    assert TOOL_LOG == [("pay_receipt", {"invoice": "I0", "amount": 60})]
    first, *later = results
    told = next(m.content for m in first.messages if m.role == "tool")
    assert "cannot be recorded" in (told or "")
    for r in later:
        assert [(v.check or v.by, v.action) for v in r.verdicts if v.action == "deny"], r.verdicts


class AsksAboveFifty(duraguard.Guardrail):
    """Refunds above 50 wait for a person."""

    name = "asks-above-fifty"
    placements = frozenset({"tool-args"})

    async def check(self, subject: duraguard.Subject) -> duraguard.Verdict:
        if float(subject.value.get("amount", 0)) > 50:
            return duraguard.Verdict.approve("refunds above 50 need a yes")
        return duraguard.Verdict.allow()


@pytest.fixture(scope="module")
async def hp(temporal_env) -> Harness:
    return await make_harness(temporal_env, guardrails=[AsksAboveFifty()], accept_unsigned=True)


@pytest.mark.parametrize("budget_first", [True, False], ids=["budget-then-ask", "ask-then-budget"])
async def test_a_call_parked_on_a_person_holds_nothing_and_reserves_again_after_the_yes(
    hp: Harness, budget_first: bool
) -> None:
    """While the 80 waits for a person, another agent of the same person spends 50: after the
    yes the 80 no longer fits in 100 and is refused, whatever the order of the guardrails."""
    from duraguard._wire import DECIDE, PENDING_QUERY, PendingAsk
    from duraguard.approvals import ApprovalCheck, decision_for

    h = hp
    TOOL_LOG.clear()
    who = f"cy-{uuid.uuid4().hex[:6]}"
    acct = f"acct-{uuid.uuid4().hex[:6]}"
    money = budget(limit=100, tools=["refund"], account=acct)
    ask = AsksAboveFifty().spec()
    guard = [money, ask] if budget_first else [ask, money]
    tq = f"tq-{uuid.uuid4().hex[:8]}"

    def agent(amount: float) -> AgentInput:
        model = h.script(calls(("refund", {"order_id": "A1", "amount": amount})), answer("done"))
        return AgentInput(prompt="refund", model=model, tools=["refund"], guardrails=guard)

    async with h.worker(tq):
        with principal(who):
            parked = await h.start(AgentWorkflow.run, agent(80), task_queue=tq)
        pending: list[PendingAsk] = []
        for _ in range(200):
            pending = await parked.query(PENDING_QUERY, result_type=list[PendingAsk])
            if pending:
                break
            await asyncio.sleep(0.05)
        assert pending, "the 80 was never parked"
        with principal(who):
            spender = await h.start(AgentWorkflow.run, agent(50), task_queue=tq)
        assert (await spender.result()).stop_reason == "done"  # 50 fits: nothing is held
        yes = decision_for(pending[0], approver="alice")  # unsigned: accepted in this harness
        assert (await parked.execute_update(DECIDE, yes, result_type=ApprovalCheck)).ok
        result = await parked.result()
        for x in (parked, spender):
            await h.replay(await x.fetch_history())
    assert TOOL_LOG == [("refund", {"order_id": "A1", "amount": 50})]  # never 130 of 100
    refused = [m.content for m in result.messages if m.role == "tool"]
    assert refused and "overspend" in refused[0]
