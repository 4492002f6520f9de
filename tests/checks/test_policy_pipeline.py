"""How the stages combine: switching checks, modes, stricter-only, confirmation, fail closed."""

from __future__ import annotations

import time
from typing import Any

import pytest
from _policy_support import ALLOW_SMALL_REFUNDS, People, confirm, registry, run, said

from duraguard.approvals import make_decision
from duraguard.checks.policy import CHECKS, Session, make_plan, policy
from duraguard.errors import ConfigurationError

MANAGER = registry(rules=ALLOW_SMALL_REFUNDS)


def test_policy_names_an_unknown_check_and_lists_the_known_ones() -> None:
    with pytest.raises(
        ConfigurationError, match="unknown policy check 'grounding'; known: tool_kinds"
    ):
        policy(checks=["grounding"])


def test_checks_run_in_the_specified_order() -> None:
    assert CHECKS[:2] == ("tool_kinds", "withdrawn") and CHECKS[-4:] == (
        "grounded",
        "asked_to_send",
        "asked_destination",
        "confirm_read",
    )


async def test_checks_that_cannot_be_switched_off_run_when_not_listed() -> None:
    v = await run("old_refund", {}, reg=registry(withdrawn=["old_refund"]), checks=["arguments"])
    assert v.check == "policy.withdrawn"
    assert (
        await run("refund_card", {"order_id": "A1", "amount": 20}, checks=[])
    ).action == "approve"


async def test_switching_a_check_off_withholds_its_input_and_the_tool_check_still_decides() -> None:
    v = await run(
        "get_order", {"order_id": "A1"}, checks=["arguments"]
    )  # tool kinds off: every tool a write
    assert (v.action, v.check) == ("approve", "policy.tool_kinds")


async def test_a_switched_off_check_does_not_stop_a_call() -> None:
    v = await run(
        "fetch_page", {"url": "http://169.254.169.254/"}, checks=["tool_kinds", "arguments"]
    )
    assert v.action == "allow"


async def test_turn_checks_only_read_when_turns_are_given() -> None:
    assert (await run("save_note", {"text": "hi"}, reg=MANAGER)).action == "allow"


@pytest.mark.parametrize(
    ("mode", "action"), [("off", "allow"), ("confirm", "approve"), ("refuse", "deny")]
)
async def test_turn_check_modes(mode: str, action: str) -> None:
    v = await run(
        "save_note",
        {"text": "hi"},
        session=said("post hi to the team channel"),
        reg=MANAGER,
        asked_to_send=mode,
        asked_destination="off",
    )
    assert v.action == action


async def test_the_last_stage_never_turns_an_ask_into_an_allow_and_shows_its_reading() -> None:
    v = await run(
        "refund_card",
        {"order_id": "A2", "amount": 500},
        session=said("refund 20 on order A1"),
        reg=MANAGER,
    )
    assert (v.action, v.check) == ("approve", "policy.your_rules")
    assert v.ask is not None and "Also:" in (v.ask.prompt or "")


async def test_a_strict_turn_check_makes_an_ask_a_refusal() -> None:
    v = await run(
        "save_note",
        {"text": "hi"},
        session=said("post hi to the team channel"),
        asked_to_send="refuse",
    )
    assert (v.action, v.check) == ("deny", "policy.asked_to_send")


async def test_a_refusal_earlier_stands_whatever_the_turn_says() -> None:
    v = await run(
        "refund_card", {"order_id": "A1"}, session=said("refund 20 on order A1"), reg=MANAGER
    )
    assert (v.action, v.check) == ("deny", "policy.arguments")


def _decision(people: People, args: dict[str, Any], signer: str, kind: str = "approve") -> Any:
    return make_decision(
        workflow_id="wf-1",
        call_id="call-9",
        tool="refund_card",
        args=args,
        decision=kind,  # type: ignore[arg-type]
        approver=signer,
        private_key=people.private[signer],
    )


async def test_a_yes_from_someone_without_the_role_is_refused() -> None:
    people = People()
    args = {"order_id": "A1", "amount": 500}
    check = confirm(
        _decision(people, args, "bob"),
        "refund_card",
        args,
        people.keys,
        now=time.time(),
        role="manager",
    )
    assert not check.ok and "manager" in check.reason
    # Had bob's yes got through as a grant anyway, the policy still asks for a manager.
    grant = confirm(
        _decision(people, args, "bob"), "refund_card", args, people.keys, now=time.time()
    ).grant("refund_card", args)
    v = await run("refund_card", args, reg=MANAGER, keys=people.keys, grant=grant)
    assert v.action == "approve" and v.ask is not None and v.ask.role == "manager"


async def test_a_managers_signed_yes_lets_the_large_refund_run() -> None:
    people = People()
    args = {"order_id": "A1", "amount": 500}
    check = confirm(
        _decision(people, args, "alice"),
        "refund_card",
        args,
        people.keys,
        now=time.time(),
        role="manager",
    )
    v = await run(
        "refund_card", args, reg=MANAGER, keys=people.keys, grant=check.grant("refund_card", args)
    )
    assert v.action == "allow"


async def test_a_replayed_yes_is_refused() -> None:
    people = People()
    args = {"order_id": "A1", "amount": 20}
    yes = _decision(people, args, "alice")
    check = confirm(
        yes, "refund_card", args, people.keys, now=time.time(), used_nonces=(yes.nonce,)
    )
    assert not check.ok and "replayed" in check.reason
    assert check.grant("refund_card", args) is None


async def test_a_person_saying_no_gives_no_grant_and_the_policy_still_asks() -> None:
    people = People()
    args = {"order_id": "A1", "amount": 20}
    check = confirm(
        _decision(people, args, "alice", "deny"), "refund_card", args, people.keys, now=time.time()
    )
    assert check.ok and check.decision == "deny"
    assert check.grant("refund_card", args) is None
    v = await run("refund_card", args, keys=people.keys)
    assert v.action == "approve"


async def test_a_plan_altered_after_signing_is_refused() -> None:
    people = People()
    token = make_plan(
        workflow_id="wf-1",
        approver="alice",
        private_key=people.private["alice"],
        steps=[{"tool": "get_order", "args": {"order_id": "A1"}}],
    )
    forged = token.model_copy(
        update={"steps": (token.steps[0].model_copy(update={"args": {"order_id": "A2"}}),)}
    )
    s = Session("wf-1", start=time.time()).plan(forged)
    v = await run("get_order", {"order_id": "A2"}, session=s, keys=people.keys)
    assert (v.action, v.check) == ("deny", "policy.plan_step") and "altered" in (v.reason or "")


async def test_a_plan_advances_step_by_step_and_ends() -> None:
    people = People()
    steps = [
        {"tool": "get_order", "args": {"order_id": "A1"}},
        {"tool": "refund_card", "args": {"order_id": "A1", "amount": 20}},
    ]
    s = Session("wf-1", start=time.time()).plan(
        make_plan(
            workflow_id="wf-1", approver="alice", private_key=people.private["alice"], steps=steps
        )
    )
    assert (
        await run("refund_card", {"order_id": "A1", "amount": 20}, session=s, keys=people.keys)
    ).check == "policy.plan_step"
    s.call("get_order", {"order_id": "A1"})
    assert (
        await run("refund_card", {"order_id": "A1", "amount": 20}, session=s, keys=people.keys)
    ).action == "allow"
    s.call("refund_card", {"order_id": "A1", "amount": 20})
    v = await run("get_order", {"order_id": "A1"}, session=s, keys=people.keys)
    assert v.check == "policy.plan_step" and "every step" in (v.reason or "")


async def test_a_plans_tier_ceiling_applies() -> None:
    people = People()
    token = make_plan(
        workflow_id="wf-1",
        approver="alice",
        private_key=people.private["alice"],
        max_tier=2,
        steps=[{"tool": "wire_funds", "args": {"amount": 5}}],
    )
    v = await run(
        "wire_funds",
        {"amount": 5},
        session=Session("wf-1", start=time.time()).plan(token),
        keys=people.keys,
    )
    assert v.check == "policy.tier"


async def test_a_missing_registry_of_the_wrong_type_fails_closed() -> None:
    from duraguard._types import Context, Subject
    from duraguard.engine import run_pass
    from duraguard.guardrail import Resources

    subject = Subject(
        placement="tool-args", tool="get_order", value={"order_id": "A1"}, context=Context()
    )
    result = await run_pass([policy()], subject, Resources(extra={"policy": "not a registry"}))
    assert (result.verdict.action, result.verdict.outcome) == ("deny", "partial")


async def test_code_tools_are_part_of_the_catalogue() -> None:
    from duraguard.checks.policy import PolicyRegistry
    from duraguard.tools import tool

    @tool(kind="read")
    def lookup_stock(sku: str) -> int:
        """How many are in stock."""
        return 1

    v = await run(
        "lookup_stock", {"sku": "X1"}, reg=PolicyRegistry(), tools={"lookup_stock": lookup_stock}
    )
    assert v.action == "allow"
    assert (
        await run(
            "lookup_stock", {"sku": 5}, reg=PolicyRegistry(), tools={"lookup_stock": lookup_stock}
        )
    ).check == "policy.arguments"
