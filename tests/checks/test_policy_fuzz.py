"""The policy under arbitrary input: it always returns a verdict, never raises, and never allows
a call a check applies to."""

from __future__ import annotations

from typing import Any

import pytest
from _policy_support import CATALOGUE, registry, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duraguard.checks.policy import PolicyRegistry, Session, policy

# CPU-bound and covered elsewhere: not traced (coverage doubles its time; see dev.py).
pytestmark = pytest.mark.no_cover

FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
args_st = st.dictionaries(st.text(max_size=12), json_values, max_size=6)
tool_names = st.sampled_from(sorted(CATALOGUE["tools"])) | st.text(min_size=1, max_size=15)
turns_st = st.lists(
    st.text(max_size=80)
    | st.sampled_from(
        ["refund 20 on A1", "post it to #ops", "email ana@x.com", "refund twenty dollars"]
    ),
    max_size=3,
)


def _ok(v: Any) -> None:
    assert v.action in ("allow", "deny", "approve")
    assert v.check != "policy.registry", v.reason  # the policy itself never raised
    assert all(d.rule != "guardrail.error" for d in v.detections), v.reason


@FUZZ
@given(tool=tool_names, args=args_st, turns=turns_st)
async def test_policy_always_returns_a_verdict_for_arbitrary_calls(
    tool: str, args: dict[str, Any], turns: list[str]
) -> None:
    s = Session("wf-1")
    for t in turns:
        s.turn(t)
    v = await run(tool, args, session=s)
    _ok(v)
    if tool not in CATALOGUE["tools"]:
        # refused; by allowed tools, unless the admission chain (an address it cannot
        # parse, e.g. {"href": "0"}) refused first, as the stages' order says
        assert v.action == "deny" and v.check in ("policy.allowed_tools", "policy.address")


@FUZZ
@given(value=json_values)
async def test_policy_refuses_arguments_that_are_not_an_object(value: Any) -> None:
    v = await run("get_order", value)
    _ok(v)
    if not isinstance(value, dict):
        assert v.action == "deny"


@FUZZ
@given(
    tool=st.sampled_from(
        ["refund_card", "save_note", "send_email", "cancel_refund", "pay", "orders"]
    ),
    args=args_st,
    turns=turns_st,
)
async def test_policy_never_allows_a_write_no_rule_or_person_allowed(
    tool: str, args: dict[str, Any], turns: list[str]
) -> None:
    s = Session("wf-1")
    for t in turns:
        s.turn(t)
    v = await run(tool, args, session=s)
    _ok(v)
    assert v.action != "allow"


@FUZZ
@given(tool=tool_names, args=args_st)
async def test_policy_never_allows_a_withdrawn_tool(tool: str, args: dict[str, Any]) -> None:
    v = await run(tool, args, reg=registry(withdrawn=[tool]))
    assert (v.action, v.check) == ("deny", "policy.withdrawn")


@FUZZ
@given(args=args_st, label=st.sampled_from(["web", "email"]))
async def test_policy_never_allows_a_write_after_outside_content(
    args: dict[str, Any], label: str
) -> None:
    s = Session("wf-1")
    s.call("fetch_page", {"url": "https://example.org"}, result={"t": "x"}, labels=(label,))
    reg = registry(
        rules="rules:\n  - {name: all, tool: '*', when: [{arg: __none__, exists: false}], then: allow}\n"
    )
    v = await run("save_note", {**args, "text": "x"}, session=s, reg=reg)
    _ok(v)
    assert v.action != "allow"


kinds = st.sampled_from(["read", "write", "send", None])
catalogue_entry = st.fixed_dictionaries(
    {},
    optional={
        "kind": kinds,
        "agents": st.lists(st.sampled_from(["a", "b"]), max_size=2),
        "labels": st.lists(st.sampled_from(["web", "email"]), max_size=2),
        "tier": st.integers(0, 5),
        "order": st.fixed_dictionaries(
            {},
            optional={
                "after": st.lists(st.sampled_from(["t0", "t1"]), max_size=2),
                "max_calls": st.integers(0, 3),
            },
        ),
        "payment_field": st.just("amount"),
        "payment_cap": st.integers(0, 100),
    },
)
catalogues = st.dictionaries(
    st.sampled_from(["t0", "t1", "t2", "t3"]), catalogue_entry, min_size=1, max_size=4
)
ops = st.sampled_from(["eq", "ne", "gt", "gte", "lt", "lte", "in", "exists", "contains"])


@st.composite
def rule_sheets(draw: st.DrawFn) -> dict[str, Any]:
    rules = []
    for i in range(draw(st.integers(0, 3))):
        op = draw(ops)
        value: Any = {"in": draw(st.lists(scalars, max_size=3)), "exists": draw(st.booleans())}.get(
            op, draw(st.integers(-5, 200))
        )
        subject = draw(
            st.sampled_from(
                [{"arg": "amount"}, {"usage": "t0"}, {"result": {"tool": "t1", "field": "status"}}]
            )
        )
        then = draw(st.sampled_from(["refuse", "ask", "allow"]))
        rule: dict[str, Any] = {
            "name": f"r{i}",
            "tool": draw(st.sampled_from(["t0", "t1", "*"])),
            "when": [{**subject, op: value}],
            "then": then,
        }
        if then == "ask" and draw(st.booleans()):
            rule["role"] = "manager"
        rules.append(rule)
    limits = [
        {
            "name": "l",
            "tool": "*",
            "count": draw(st.integers(0, 3)),
            "per": draw(st.sampled_from(["1h", "10m", 60])),
        }
    ]
    spending = [{"name": "s", "tool": "*", "field": "amount", "max": draw(st.integers(0, 100))}]
    return {"rules": rules, "limits": limits, "spending": spending}


@FUZZ
@given(
    cat=catalogues,
    sheet=rule_sheets(),
    tool=st.sampled_from(["t0", "t1", "t2", "t3"]),
    args=args_st,
    history=st.lists(st.tuples(st.sampled_from(["t0", "t1"]), args_st), max_size=5),
)
async def test_policy_decides_under_arbitrary_catalogues_and_rule_sheets(
    cat: dict[str, Any],
    sheet: dict[str, Any],
    tool: str,
    args: dict[str, Any],
    history: list[tuple[str, dict[str, Any]]],
) -> None:
    s = Session("wf-1")
    for t, a in history:
        s.call(t, a, result={"status": "closed"})
    reg = PolicyRegistry(catalogue={"tools": cat}, rules=sheet)
    v = await run(tool, args, session=s, reg=reg, payment_cap=50, max_tier=3, agent="a")
    assert v.action in ("allow", "deny", "approve")
    if v.action == "deny" and v.outcome == "partial":
        assert v.check in ("policy.your_rules", "policy.undo", "policy.session_record")
    if tool not in cat:
        assert v.action == "deny"
    entry = cat.get(tool, {})
    if v.action == "allow" and entry.get("kind") in ("write", "send"):
        assert any(r["then"] == "allow" for r in sheet["rules"])  # only a rule lets a write run


@FUZZ
@given(
    bad=st.sampled_from([float("nan"), float("inf"), -float("inf"), object(), b"bytes", {1: "x"}])
)
async def test_a_value_that_is_not_json_is_refused_before_any_check(bad: Any) -> None:
    from duraguard.engine import evaluate

    result = await evaluate([policy()], {"amount": bad}, tool="refund_card")
    assert (result.verdict.action, result.verdict.outcome) == ("deny", "partial")
    assert result.verdict.check == "duraguard.not-json"
