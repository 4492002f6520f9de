"""Your rules: the rule sheet's conditions, limits, spending limits, load errors and live reload."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _policy_support import registry, run

from duraguard.checks.policy import RuleSheet, Session
from duraguard.errors import RuleSheetError

CLOSED = """
rules:
  - name: no refunds on closed orders
    tool: refund_card
    when:
      - result: {tool: get_order, field: status}
        eq: closed
    then: refuse
"""


@pytest.mark.parametrize(
    ("sheet", "line", "words"),
    [
        (
            "rules:\n  - name: r\n    tool: refund_card\n    when:\n      - arg: amount\n        greater: 100\n",
            6,
            "unknown key 'greater'",
        ),
        ("rules:\n  - tool: refund_card\n    then: refuse\n", 2, "needs a name"),
        ("rules:\n  - name: r\n    tool: x\n    then: maybe\n", 4, "not one of refuse, ask, allow"),
        (
            "rules:\n  - name: r\n    tool: x\n    when:\n      - arg: amount\n        gt: lots\n",
            6,
            "gt compares with a number",
        ),
        (
            "limits:\n  - name: l\n    tool: x\n    count: 3\n    per: soon\n",
            5,
            "write e.g. per: 1h",
        ),
        ("rules:\n  - name: r\n   tool: x\n", 3, "not valid YAML"),
        (
            "rules:\n  - name: r\n    tool: x\n    then: refuse\n    role: manager\n",
            5,
            "goes with then: ask",
        ),
    ],
)
def test_rule_sheet_refuses_a_bad_sheet_with_its_line_and_the_fix(
    sheet: str, line: int, words: str
) -> None:
    with pytest.raises(RuleSheetError) as err:
        RuleSheet.load(sheet)
    assert f"line {line}" in str(err.value) and words in str(err.value)


def test_rule_sheet_names_a_missing_file() -> None:
    with pytest.raises(RuleSheetError, match="does not exist"):
        RuleSheet.load("/nonexistent/rules.yaml")


async def test_rules_read_earlier_results() -> None:
    s = Session("wf-1")
    s.call("get_order", {"order_id": "A1"}, result={"status": "closed"})
    v = await run(
        "refund_card", {"order_id": "A1", "amount": 5}, session=s, reg=registry(rules=CLOSED)
    )
    assert (v.action, v.check) == ("deny", "policy.your_rules")
    assert "no refunds on closed orders" in (v.reason or "")


async def test_limit_per_period_counts_calls_in_the_window_of_workflow_time() -> None:
    sheet = "limits:\n  - {name: two an hour, tool: refund_card, count: 2, per: 1h}\n"
    s = Session("wf-1", start=0)
    s.call("refund_card", {"order_id": "A1", "amount": 1}, at=100)
    s.call("refund_card", {"order_id": "A2", "amount": 1}, at=4000)
    ok = await run(
        "refund_card",
        {"order_id": "A3", "amount": 1},
        session=s.view("refund_card", {}, now=3800 + 3600),
        reg=registry(rules=sheet),
    )
    assert ok.check != "policy.your_rules"
    s.call("refund_card", {"order_id": "A3", "amount": 1}, at=4100)
    v = await run(
        "refund_card",
        {"order_id": "A4", "amount": 1},
        session=s.view("refund_card", {}, now=4200),
        reg=registry(rules=sheet),
    )
    assert v.check == "policy.your_rules" and "at most 2 per 1h" in (v.reason or "")


async def test_spending_limit_sums_the_whole_session_and_asks_the_named_role() -> None:
    sheet = "spending:\n  - {name: refund budget, tool: [refund_card, pay], field: amount, max: 100, then: ask, role: manager}\n"
    s = Session("wf-1")
    for _ in range(
        40
    ):  # more calls than the view carries: the ledger's running sums count them all
        s.call("refund_card", {"order_id": "A1", "amount": 2})
    v = await run(
        "refund_card", {"order_id": "A1", "amount": 30}, session=s, reg=registry(rules=sheet)
    )
    assert (v.action, v.check) == ("approve", "policy.your_rules")
    assert v.ask is not None and v.ask.role == "manager"


async def test_a_windowed_limit_the_view_cannot_decide_refuses_as_partial() -> None:
    sheet = "limits:\n  - {name: many a day, tool: refund_card, count: 100, per: 1d}\n"
    s = Session("wf-1")
    for _ in range(40):
        s.call("refund_card", {"order_id": "A1", "amount": 1})
    v = await run(
        "refund_card", {"order_id": "A1", "amount": 1}, session=s, reg=registry(rules=sheet)
    )
    assert (v.action, v.outcome, v.check) == ("deny", "partial", "policy.your_rules")


async def test_a_rule_over_a_non_number_cannot_be_decided_and_refuses() -> None:
    sheet = (
        "rules:\n  - {name: big, tool: refund_card, when: [{arg: amount, gt: 100}], then: ask}\n"
    )
    v = await run(
        "refund_card",
        {"order_id": "A1", "amount": "lots"},
        reg=registry(rules=sheet),
        checks=["your_rules"],
    )
    assert (v.action, v.outcome) == ("deny", "partial")


async def test_a_changed_rule_sheet_takes_effect_on_the_next_check(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("rules: []\n")
    reg = registry(rules=path)
    assert (
        await run("refund_card", {"order_id": "A1", "amount": 5}, reg=reg)
    ).check == "policy.any_other_write"
    path.write_text("rules:\n  - {name: refunds are off today, tool: refund_card}\n")
    os.utime(path, ns=(1, 2_000_000_000_000_000_000))
    assert (
        await run("refund_card", {"order_id": "A1", "amount": 5}, reg=reg)
    ).check == "policy.your_rules"


async def test_a_rule_sheet_broken_after_load_refuses_as_partial(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("rules: []\n")
    reg = registry(rules=path)
    path.write_text("rules:\n  - nme: oops\n")
    os.utime(path, ns=(1, 3_000_000_000_000_000_000))
    v = await run("get_order", {"order_id": "A1"}, reg=reg)
    assert (v.action, v.outcome) == ("deny", "partial") and "line 2" in (v.reason or "")


async def test_withdrawing_a_tool_takes_effect_without_a_redeploy(tmp_path: Path) -> None:
    reg = registry()
    assert (await run("get_order", {"order_id": "A1"}, reg=reg)).action == "allow"
    reg.withdraw("get_order")
    assert (await run("get_order", {"order_id": "A1"}, reg=reg)).check == "policy.withdrawn"
    reg.restore("get_order")
    path = tmp_path / "withdrawn.yaml"
    path.write_text("withdrawn: []\n")
    live = registry(withdrawn=path)
    path.write_text("withdrawn: [get_order]\n")
    os.utime(path, ns=(1, 4_000_000_000_000_000_000))
    assert (await run("get_order", {"order_id": "A1"}, reg=live)).check == "policy.withdrawn"


async def test_a_spending_limit_whose_total_the_session_stopped_keeping_is_undecidable() -> None:
    """A model that invents argument names call after call fills the ledger's running totals
    (capped per tool); a limit on a field that never got a total refuses rather than read 0."""
    from duraguard._ledger import MAX_SUM_FIELDS
    from duraguard.checks.policy import Session

    s = Session("wf-1")
    for i in range(MAX_SUM_FIELDS):
        s.call("pay", {f"made_up_{i}": 1})
    s.call("pay", {"amount": 90})
    sheet = {
        "spending": [{"name": "pay at most 100", "tool": "pay", "field": "amount", "max": 100}]
    }
    v = await run("pay", {"amount": 50}, session=s, reg=registry(rules=sheet))
    assert (v.action, v.outcome, v.check) == ("deny", "partial", "policy.your_rules")
