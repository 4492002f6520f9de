"""Integers past the largest float (JSON puts no bound on one): in a model's call, a tool's
result or the person's words, they are noted and judged like any other value, and never wedge
a run (``float()`` raises on them; in workflow code that failed every workflow task)."""

from __future__ import annotations

from typing import Any

import pytest

import duraguard
from duraguard import pii, schema
from duraguard._ledger import Ledger, LedgerState
from duraguard._result_keys import result_keys
from duraguard._workings import day_of
from duraguard.checks.policy import policy
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow

from ._harness import TOOLS, Harness, make_harness

HUGE = (10**400, -(10**400), 2**1100, 10**309)


@duraguard.tool(kind="read")
def ledger_totals(account: str, page: int = 0) -> dict[str, Any]:
    """An account's totals, one of them too large for a float."""
    return {
        "account": account,
        "page": page,
        "total": 10**400,
        "rows": [2**1100, {"n": -(10**400)}],
    }


@pytest.mark.parametrize("huge", HUGE, ids=lambda n: f"{str(n)[:6]}..({len(str(n))} digits)")
def test_the_session_record_takes_them_anywhere(huge: int) -> None:
    ledger = Ledger(LedgerState(session_id="s"))
    ledger.sources.note(f"pay {huge} now", "prompt")
    result = {"n": huge, "rows": [huge, {"v": huge}], "text": f"total {huge}"}
    for j, labels in enumerate([(), ("web",)]):
        keys = result_keys(result, {"q": "x"}, "t", day_of(1.7e9)) if not labels else None
        ledger.record(
            call_id=f"c{j}", tool="t", args={"q": "x"}, action="allow", ran=True, at=1.7e9,
            result=result, labels=labels, keys=keys,
        )  # fmt: skip
    ledger.record(
        call_id="c2", tool="pay", args={"amount": huge}, action="allow", ran=True, at=1.7e9,
        result={"ok": True},
    )  # fmt: skip
    view = ledger.view(tool="pay", args={"amount": huge, "other": huge + 1}, now=1.7e9 + 5)
    where = {p.path: p.sources for p in view.provenance}
    # Its own digits are its key: found where it was seen, and one more than it is not.
    assert where["#/amount"] and "result:0" in where["#/amount"]
    assert "#/other" not in where
    # A running total past the largest float stays at it (a limit on it then refuses).
    assert ledger.state.sums["pay"]["amount"] in (1.7976931348623157e308, -1.7976931348623157e308)
    ledger.state.model_dump_json()


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(temporal_env, tools=[*TOOLS, ledger_totals])


async def test_a_run_given_them_by_its_model_and_its_tools_ends(h: Harness) -> None:
    model = h.script(
        calls(("ledger_totals", {"account": "ACME-1"})),
        calls(("ledger_totals", {"account": "ACME-1", "page": 10**400})),
        answer("done"),
    )
    run = await h.run(  # run() replays too, and asserts no check ran again
        AgentWorkflow.run,
        AgentInput(
            prompt="Credit ACME-1 its total",
            model=model,
            tools=["ledger_totals"],
            guardrails=[schema(), pii(), policy()],
        ),
    )
    assert run.result.stop_reason == "done", run.result
    first, second = run.activity_outputs("ledger_totals")
    assert first["result"]["total"] == 10**400 and second["result"]["page"] == 10**400


@pytest.mark.parametrize("huge", HUGE[:2], ids=["positive", "negative"])
def test_a_budget_refuses_an_amount_past_the_largest_float(huge: int) -> None:
    from duraguard.budget import _amount

    # Not an amount it can hold: the budget refuses the call ("not a number >= 0"), where
    # float() raised before (a guardrail error, refused too, but without saying why).
    assert _amount({"amount": huge}, "amount") is None
    assert _amount({"amount": 12}, "amount") == 12.0
