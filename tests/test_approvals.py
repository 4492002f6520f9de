"""Parked calls: a person's signed yes or no, by update or signal, bound to the exact call."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from duraguard import ApproverKeys, Guardrail, Subject, Verdict, schema
from duraguard._wire import DECIDE, PENDING_QUERY, PendingAsk
from duraguard.approvals import (
    ApprovalCheck,
    Approver,
    generate_keypair,
    load_private_key,
    load_public_key,
    sign,
)
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow, approver_decision

from ._harness import TOOL_LOG, Harness, make_harness


class NeedsManager(Guardrail):
    """Refunds over 100 need a manager's yes."""

    name = "needs-manager"
    placements = frozenset({"tool-args"})

    async def check(self, subject: Subject) -> Verdict:
        if subject.tool == "refund" and float(subject.value.get("amount", 0)) > 100:
            return Verdict.approve("refunds over 100 need a manager", role="manager")
        return Verdict.allow()


def _keys() -> tuple[ApproverKeys, dict[str, Any]]:
    private: dict[str, Any] = {}
    approvers = []
    for name, roles in (("alice", {"manager"}), ("bob", set())):
        priv, pub = generate_keypair()
        private[name] = load_private_key(priv)
        approvers.append(Approver(name, load_public_key(pub), frozenset(roles)))
    return ApproverKeys(approvers), private


KEYS, PRIVATE = _keys()
NEEDS = NeedsManager().spec()


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(
        temporal_env, guardrails=[NeedsManager()], approvers=KEYS, search_attributes=True
    )


async def _refused(coro: Any, text: str) -> None:
    """The update was refused by the validator, with ``text`` in its message."""
    with pytest.raises(WorkflowUpdateFailedError) as err:
        await coro
    assert text in str(err.value.cause)


async def _parked(handle: Any) -> PendingAsk:
    for _ in range(200):
        pending = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        if pending:
            return pending[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no call was parked")


def _input(h: Harness, amount: float = 500, **kw: Any) -> AgentInput:
    model = h.script(calls(("refund", {"order_id": "A2", "amount": amount})), answer("done"))
    return AgentInput(
        prompt="refund A2", model=model, tools=["refund"], guardrails=[schema(), NEEDS], **kw
    )


async def _run_with(h: Harness, inp: AgentInput, decide) -> tuple[Any, Any]:
    import uuid

    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(AgentWorkflow.run, inp, task_queue=tq)
        await decide(handle)
        try:
            result = await handle.result()
        except Exception as err:
            result = err
    history = await handle.fetch_history()
    await h.replay(history)
    return result, history


async def test_signed_yes_by_update_runs_the_call_and_answers_the_approver(h: Harness) -> None:
    TOOL_LOG.clear()
    answers: list[ApprovalCheck] = []

    async def decide(handle: Any) -> None:
        ask = await _parked(handle)
        assert (ask.tool, ask.role, ask.asked_by) == ("refund", "manager", "needs-manager")
        d = approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
        answers.append(await handle.execute_update(DECIDE, d, result_type=ApprovalCheck))

    result, _ = await _run_with(h, _input(h), decide)
    assert answers[0].ok and answers[0].approver == "alice"
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]
    assert any(v.approver == "alice" for v in result.verdicts)


async def test_signed_yes_by_signal_runs_the_call(h: Harness) -> None:
    TOOL_LOG.clear()

    async def decide(handle: Any) -> None:
        ask = await _parked(handle)
        await handle.signal(
            DECIDE, approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
        )

    result, _ = await _run_with(h, _input(h), decide)
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]


async def test_person_says_no_and_the_refusal_names_them(h: Harness) -> None:
    TOOL_LOG.clear()

    async def decide(handle: Any) -> None:
        ask = await _parked(handle)
        d = approver_decision(ask, approver="alice", decision="deny", private_key=PRIVATE["alice"])
        await handle.execute_update(DECIDE, d, result_type=ApprovalCheck)

    result, _ = await _run_with(h, _input(h), decide)
    assert TOOL_LOG == []
    tool_msg = next(m.content for m in result.messages if m.role == "tool")
    assert '"declined_by":"alice"' in tool_msg and '"valid"' not in tool_msg


async def test_update_validator_refuses_bad_decisions_synchronously_and_records_nothing(
    h: Harness,
) -> None:
    async def decide(handle: Any) -> None:
        ask = await _parked(handle)
        before = len((await handle.fetch_history()).events)
        wrong_call = ask.model_copy(update={"call_id": "c99"})
        await _refused(
            handle.execute_update(
                DECIDE,
                approver_decision(wrong_call, approver="alice", private_key=PRIVATE["alice"]),
            ),
            "no call 'c99' is waiting",
        )
        altered = ask.model_copy(update={"args": {"order_id": "A2", "amount": 5000}})
        await _refused(
            handle.execute_update(
                DECIDE, approver_decision(altered, approver="alice", private_key=PRIVATE["alice"])
            ),
            "other arguments",
        )
        assert len((await handle.fetch_history()).events) == before
        ok = await handle.execute_update(
            DECIDE,
            approver_decision(ask, approver="alice", private_key=PRIVATE["alice"]),
            result_type=ApprovalCheck,
        )
        assert ok.ok
        await _refused(
            handle.execute_update(
                DECIDE, approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
            ),
            "already decided",
        )

    result, _ = await _run_with(h, _input(h), decide)
    assert result.stop_reason == "done"


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("unsigned", "unsigned decision"),
        ("unknown-key", "'mallory' is not someone whose yes counts"),
        ("wrong-signature", "does not verify"),
        ("expired", "expired"),
        ("wrong-role", "'bob' is not someone whose yes counts"),
    ],
)
async def test_refused_decisions_leave_the_ask_standing_and_write_nothing(
    h: Harness, case: str, why: str
) -> None:
    """Refused against the keys the ask recorded: by the update's validator, in no step."""
    TOOL_LOG.clear()

    async def decide(handle: Any) -> None:
        ask = await _parked(handle)
        if case == "unsigned":
            d = approver_decision(ask, approver="alice")
        elif case == "unknown-key":
            d = approver_decision(ask, approver="mallory", private_key=PRIVATE["alice"])
        elif case == "wrong-signature":
            d = approver_decision(ask, approver="alice", private_key=PRIVATE["bob"])
        elif case == "expired":
            d = approver_decision(
                ask, approver="alice", private_key=PRIVATE["alice"], now=time.time() - 7200
            )
        else:
            d = approver_decision(ask, approver="bob", private_key=PRIVATE["bob"])
        before = len((await handle.fetch_history()).events)
        await _refused(handle.execute_update(DECIDE, d, result_type=ApprovalCheck), why)
        assert len((await handle.fetch_history()).events) == before
        assert TOOL_LOG == []
        # the ask still stands: a proper yes runs the call
        good = await handle.execute_update(
            DECIDE,
            approver_decision(ask, approver="alice", private_key=PRIVATE["alice"]),
            result_type=ApprovalCheck,
        )
        assert good.ok

    result, _ = await _run_with(h, _input(h), decide)
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]
    assert [v.approver for v in result.verdicts if v.by == "person"] == ["alice"]


async def test_a_refused_decision_burns_nothing_and_an_accepted_one_cannot_be_replayed(
    h: Harness,
) -> None:
    async def decide(handle: Any) -> None:
        ask = await _parked(handle)
        bad = approver_decision(ask, approver="bob", private_key=PRIVATE["bob"])  # refused: role
        await _refused(handle.execute_update(DECIDE, bad), "not someone whose yes counts")
        # Its nonce is not used up: a forged copy of someone's decision must not be able to
        # burn the nonce of the real one. Alice's own yes under that nonce is a yes.
        again = sign(
            bad.model_copy(update={"approver": "alice", "signature": None}), PRIVATE["alice"]
        )
        assert (await handle.execute_update(DECIDE, again, result_type=ApprovalCheck)).ok
        await _refused(handle.execute_update(DECIDE, again), "already decided")

    result, _ = await _run_with(h, _input(h), decide)
    assert result.stop_reason == "done"


async def test_edits_are_checked_again_and_used(h: Harness) -> None:
    TOOL_LOG.clear()

    async def decide(handle: Any) -> None:
        ask = await _parked(handle)
        d = approver_decision(
            ask, approver="alice", private_key=PRIVATE["alice"], edits={"amount": 150}
        )
        assert (await handle.execute_update(DECIDE, d, result_type=ApprovalCheck)).ok

    result, _history = await _run_with(h, _input(h), decide)
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 150})]


async def test_refused_edits_fail_the_run(h: Harness) -> None:
    TOOL_LOG.clear()

    async def decide(handle: Any) -> None:
        ask = await _parked(handle)
        d = approver_decision(
            ask, approver="alice", private_key=PRIVATE["alice"], edits={"amount": "lots"}
        )
        await handle.execute_update(DECIDE, d, result_type=ApprovalCheck)

    result, _ = await _run_with(h, _input(h), decide)
    assert TOOL_LOG == []
    cause = result.cause
    assert isinstance(cause, ApplicationError) and cause.type == "duraguard.EditsRefused"
    assert "refused by schema" in cause.message


async def test_approval_budget_ends_the_loop(h: Harness) -> None:
    TOOL_LOG.clear()
    model = h.script(calls(("refund", {"order_id": "A2", "amount": 500})), answer("done"))
    inp = AgentInput(
        prompt="refund", model=model, tools=["refund"], guardrails=[NEEDS], approval_budget=0
    )
    run = await h.run(AgentWorkflow.run, inp)
    assert run.result.stop_reason == "approval-budget"
    assert TOOL_LOG == []


async def test_pending_call_is_findable_by_search_attribute(h: Harness) -> None:
    async def decide(handle: Any) -> None:
        ask = await _parked(handle)
        found: list[str] = []
        for _ in range(100):
            found = [
                w.id
                async for w in h.client.list_workflows(
                    f"DuraguardPending > 0 AND WorkflowId = '{handle.id}'"
                )
            ]
            if found:
                break
            await asyncio.sleep(0.1)
        assert found == [handle.id]
        desc = await handle.describe()
        await handle.execute_update(
            DECIDE, approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
        )
        assert desc.id == handle.id

    result, _ = await _run_with(h, _input(h), decide)
    assert result.stop_reason == "done"


async def test_a_malformed_decision_is_refused_synchronously_and_records_nothing(
    h: Harness,
) -> None:
    async def decide(handle: Any) -> None:
        ask = await _parked(handle)
        before = len((await handle.fetch_history()).events)
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(DECIDE, {"call_id": ask.call_id, "decision": "maybe"})
        assert len((await handle.fetch_history()).events) == before
        await handle.execute_update(
            DECIDE, approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
        )

    result, _ = await _run_with(h, _input(h), decide)
    assert result.stop_reason == "done"


async def test_halted_runs_and_runs_with_denials_are_findable_by_search_attribute(
    h: Harness,
) -> None:
    from duraguard import moderation

    model = h.script(
        calls(
            ("issue_credit", {"reason": "x"}),
            ("send_email", {"to": "a@example.com", "body": "attack"}),
        )
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="go",
            model=model,
            tools=["issue_credit", "send_email"],
            guardrails=[schema(), moderation(classifier="toy", placements=["tool-args"])],
        ),
    )
    assert run.result.stop_reason == "guardrail"
    wid = run.handle.id
    for query in (
        f"DuraguardHaltedBy = 'moderation' AND WorkflowId = '{wid}'",
        f"DuraguardDenials > 0 AND WorkflowId = '{wid}'",
    ):
        found: list[str] = []
        for _ in range(100):
            found = [w.id async for w in h.client.list_workflows(query)]
            if found:
                break
            await asyncio.sleep(0.1)
        assert found == [wid], query
