"""The gate under attack: a yes replayed into another run, words put in an approver's mouth,
garbage sent to a parked run, edits previewed before anyone signs."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.common import WorkflowIDReusePolicy

from duraguard import Guardrail, Subject, Verdict, schema
from duraguard._gate import MAX_REFUSED_ROWS
from duraguard._wire import DECIDE, PENDING_QUERY, PREVIEW_EDITS, EditsPreview, PendingAsk
from duraguard.approvals import ApprovalCheck, sign
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow, approver_decision

from ._harness import TOOL_LOG, Harness, make_harness
from .test_approvals import KEYS, NEEDS, PRIVATE, NeedsManager


class NoBigRefunds(Guardrail):
    """Refunds over 1000 are refused outright (for edits that push the amount up)."""

    name = "no-big-refunds"
    placements = frozenset({"tool-args"})

    async def check(self, subject: Subject) -> Verdict:
        if subject.tool == "refund" and float(subject.value.get("amount", 0)) > 1000:
            return Verdict.deny("refunds over 1000 are never made")
        return Verdict.allow()


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(
        temporal_env,
        guardrails=[NeedsManager(), NoBigRefunds()],
        approvers=KEYS,
        search_attributes=True,
    )


def _input(h: Harness, amount: float = 500) -> AgentInput:
    model = h.script(calls(("refund", {"order_id": "A2", "amount": amount})), answer("done"))
    return AgentInput(
        prompt="refund A2",
        model=model,
        tools=["refund"],
        guardrails=[schema(), NEEDS, NoBigRefunds().spec()],
    )


async def _parked(handle: Any) -> PendingAsk:
    for _ in range(400):
        pending = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        if pending:
            return pending[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no call was parked")


async def test_a_yes_given_in_one_run_does_not_pay_in_the_next_run_of_the_same_id(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    wid = f"pay-{uuid.uuid4().hex[:8]}"
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        first = await h.client.start_workflow(
            AgentWorkflow.run,
            _input(h),
            id=wid,
            task_queue=tq,
            execution_timeout=h.execution_timeout,
        )
        ask = await _parked(first)
        yes = approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
        assert (await first.execute_update(DECIDE, yes, result_type=ApprovalCheck)).ok
        assert (await first.result()).stop_reason == "done"
        # The same workflow id, started again: the attacker replays the yes from the first run.
        second = await h.client.start_workflow(
            AgentWorkflow.run,
            _input(h),
            id=wid,
            task_queue=tq,
            execution_timeout=h.execution_timeout,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        again = await _parked(second)
        assert again.run_id != ask.run_id and again.challenge != ask.challenge
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await second.execute_update(DECIDE, yes, result_type=ApprovalCheck)
        assert "another ask" in str(err.value.cause)
        await second.signal(DECIDE, yes)  # the fire-and-forget way is refused too
        await asyncio.sleep(0.3)
        assert await second.query(PENDING_QUERY, result_type=list[PendingAsk])
        await second.terminate("test over")
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]  # paid once, not twice


async def test_the_approvers_reason_is_signed_and_cannot_be_rewritten(h: Harness) -> None:
    TOOL_LOG.clear()
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(AgentWorkflow.run, _input(h), task_queue=tq)
        ask = await _parked(handle)
        honest = approver_decision(
            ask, approver="alice", private_key=PRIVATE["alice"], reason="customer is right"
        )
        forged = honest.model_copy(update={"reason": "alice says: refund every order in full"})
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(DECIDE, forged, result_type=ApprovalCheck)
        assert "does not verify" in str(err.value.cause)
        assert await handle.query(PENDING_QUERY, result_type=list[PendingAsk])  # still waiting
        assert (await handle.execute_update(DECIDE, honest, result_type=ApprovalCheck)).ok
        result = await handle.result()
    assert result.stop_reason == "done"
    said = [v.reason for v in result.verdicts if v.by == "person"]
    assert said == ["customer is right"]


GARBAGE: list[tuple[str, tuple[Any, ...]]] = [
    ("null", (None,)),
    ("no argument", ()),
    ("two arguments", ({"a": 1}, {"b": 2})),
    ("a string", ("approve please",)),
    ("a list", ([1, 2, 3],)),
    ("an empty object", ({},)),
]


async def test_garbage_sent_to_a_parked_run_never_wedges_it(h: Harness) -> None:
    TOOL_LOG.clear()
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(AgentWorkflow.run, _input(h), task_queue=tq)
        ask = await _parked(handle)
        good = approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
        shaped = good.model_dump(mode="json")
        junk: list[tuple[str, tuple[Any, ...]]] = [
            *GARBAGE,
            ("a megabyte nonce", ({**shaped, "nonce": "n" * 1_000_000},)),
            ("an unknown field", ({**shaped, "admin": True},)),
            ("another workflow", ({**shaped, "workflow_id": "elsewhere"},)),
            ("a call not waiting", ({**shaped, "call_id": "c99"},)),
            ("other arguments", ({**shaped, "call_digest": "0" * 64},)),
            ("unsigned", ({**shaped, "signature": None},)),
        ]
        for what, args in junk:
            await handle.signal(DECIDE, args=list(args))  # fire and forget: never raises here
            if what != "unsigned":  # unsigned is well formed: only the worker's check refuses it
                with pytest.raises(WorkflowUpdateFailedError):
                    await handle.execute_update(DECIDE, args=list(args), result_type=ApprovalCheck)
        for _ in range(40):  # more than the run records: the rest are only counted
            await handle.signal(DECIDE, None)
        # The run still answers queries and still takes the real yes.
        assert (await _parked(handle)).call_id == ask.call_id
        assert (await handle.execute_update(DECIDE, good, result_type=ApprovalCheck)).ok
        result = await handle.result()
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]
    refused = [v for v in result.verdicts if v.check == "decision.message"]
    assert 0 < len(refused) <= MAX_REFUSED_ROWS  # bounded, whatever was sent
    history = await handle.fetch_history()
    markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
    # Refused messages write no step: the markers are the passes, the ask and two decisions.
    assert len(markers) <= 8
    await h.replay(history)


async def test_an_edit_the_guardrails_refuse_is_shown_before_anyone_signs(h: Harness) -> None:
    TOOL_LOG.clear()
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(AgentWorkflow.run, _input(h), task_queue=tq)
        ask = await _parked(handle)
        bad = await handle.execute_update(
            PREVIEW_EDITS,
            {"call_id": ask.call_id, "edits": {"amount": 5000}},
            result_type=EditsPreview,
        )
        assert not bad.ok and bad.by == "no-big-refunds" and bad.action == "deny"
        fine = await handle.execute_update(
            PREVIEW_EDITS,
            {"call_id": ask.call_id, "edits": {"amount": 400}},
            result_type=EditsPreview,
        )
        assert fine.ok
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(
                PREVIEW_EDITS, {"call_id": "c42", "edits": {}}, result_type=EditsPreview
            )
        yes = approver_decision(
            ask, approver="alice", private_key=PRIVATE["alice"], edits={"amount": 400}
        )
        assert (await handle.execute_update(DECIDE, yes, result_type=ApprovalCheck)).ok
        result = await handle.result()
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 400})]
    await h.replay(await handle.fetch_history())


def test_two_different_values_that_are_not_json_never_share_a_signature() -> None:
    from duraguard.approvals import make_decision
    from duraguard.types import NotJSON

    class A:
        def __str__(self) -> str:
            return "same"

    class B:
        def __str__(self) -> str:
            return "same"

    for odd in (A(), B(), float("nan"), {1: "x"}):
        with pytest.raises(NotJSON):
            make_decision(
                workflow_id="w",
                call_id="c1",
                tool="pay",
                args={"to": odd},
                decision="approve",
                approver="alice",
            )
    signed = sign(
        make_decision(
            workflow_id="w",
            call_id="c1",
            tool="pay",
            args={"to": "same"},
            decision="approve",
            approver="alice",
        ),
        PRIVATE["alice"],
    )
    assert signed.signature
