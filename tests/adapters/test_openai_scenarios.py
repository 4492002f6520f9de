"""Issue 27 in the OpenAI Agents SDK, on the real dev server with a scripted model: a handoff
judged and both its sides guarded, ``needs_approval`` bridged to duraguard's signed yes, the SDK's
own guardrails recorded, a guarded sub-agent's calls judged, ``Runner.run_streamed`` judged where
no guardrail's verdict is run ahead of by its tokens and refused with the reason where one is, a masked structured output kept in its type. Each run is replayed with both plugins,
asserting that no check ran again."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("agents", reason="install the extra: pip install 'duraguard[openai-agents]'")

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import SearchAttributeKey
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import TestModelProvider
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import duraguard
from duraguard import ApproverKeys, Subject, Verdict
from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
from duraguard.audit import audit_rows
from duraguard.types import DECIDE
from tests._harness import parked, steps
from tests._servers import Replayer

from ._frameworks import connect
from ._guarded_openai import LOOKUPS, PlanModel, lookup_order
from ._openai_scenarios import OpenAIScenarios, ScenarioInput, ScenarioOutcome
from ._plan import plan
from ._rules import CARD, Rules

pytestmark = pytest.mark.timeout(120)

PRIVATE, PUBLIC = generate_keypair()


class Noting(Rules):
    """The test rules, noting which agent each tool call was judged for."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str | None, str | None]] = []

    async def check(self, subject: Subject) -> Verdict:
        if subject.placement == "tool-args":
            self.seen.append((subject.tool, subject.context.agent))
        return await super().check(subject)


class Setup:
    def __init__(self, env: WorkflowEnvironment, *, streaming: bool = False) -> None:
        self.rules = Noting()
        self.guard = duraguard.DuraguardPlugin(
            guardrails=[self.rules],
            approvers=ApproverKeys.from_mapping({"alice": {"public_key": PUBLIC.decode()}}),
            search_attributes=True,
        )
        params = ModelActivityParameters(
            start_to_close_timeout=timedelta(seconds=30),
            streaming_topic="events" if streaming else None,
        )
        self.agents = OpenAIAgentsPlugin(
            model_params=params, model_provider=TestModelProvider(PlanModel())
        )
        self.client: Client = connect(env, [self.agents, self.guard])
        self.queue = f"os-{uuid.uuid4().hex[:8]}"

    def worker(self) -> Worker:
        return Worker(
            self.client, task_queue=self.queue, workflows=[OpenAIScenarios],
            activities=[lookup_order],
        )  # fmt: skip

    async def start(
        self, scenario: str, prompt: str, guardrails: Any = None, **kw: Any
    ) -> WorkflowHandle[Any, ScenarioOutcome]:
        specs = guardrails if guardrails is not None else [self.rules.spec()]
        return await self.client.start_workflow(
            OpenAIScenarios.run,
            ScenarioInput(scenario=scenario, prompt=prompt, guardrails=specs, **kw),
            id=f"os-{uuid.uuid4().hex[:10]}",
            task_queue=self.queue,
            execution_timeout=timedelta(seconds=60),
        )

    async def run(self, scenario: str, prompt: str, **kw: Any) -> tuple[ScenarioOutcome, Any]:
        async with self.worker():
            handle = await self.start(scenario, prompt, **kw)
            out = await handle.result()
        history = await handle.fetch_history()
        await self.replay(history)
        return out, handle

    async def replay(self, history: Any) -> None:
        before = (self.guard.checks_run, self.rules.calls)
        replayer = Replayer(workflows=[OpenAIScenarios], plugins=[self.agents, self.guard])
        await replayer.replay_workflow(history, raise_on_replay_failure=True)
        assert (self.guard.checks_run, self.rules.calls) == before, "replay ran a check again"

    async def audit(self, handle: WorkflowHandle[Any, Any]) -> list[tuple[Any, ...]]:
        rows = await audit_rows(handle, self.client.data_converter)
        return [(r.tool, r.placement, r.action, r.by) for r in rows if r.action != "allow"]


def rows(out: ScenarioOutcome) -> list[tuple[Any, ...]]:
    return [(r.tool, r.placement, r.action, r.by) for r in out.verdicts]


async def halted_by(handle: WorkflowHandle[Any, Any]) -> str | None:
    described = await handle.describe()
    return described.typed_search_attributes.get(
        SearchAttributeKey.for_keyword(duraguard._wire.SA_HALTED_BY)
    )


async def test_a_handoff_is_judged_as_a_call_and_the_agent_handed_to_is_guarded(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The SDK calls the hooks' on_handoff by keyword (agent=, source=): the run completes
    instead of wedging its workflow task, and the billing agent's calls are judged as its own."""
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan(
        [("quote_refund", {"order_id": "A1"})],
        [("transfer_to_billing", {})],
        [("lookup_order", {"order_id": CARD})],
        answer="handled",
    )
    out, _ = await s.run("handoff", prompt)
    assert (out.stop_reason, out.output) == ("done", "handled")
    assert LOOKUPS == [{"order_id": "[card]"}]  # masked on billing's side of the handoff
    assert s.rules.seen == [
        ("quote_refund", "front"), ("transfer_to_billing", "front"), ("lookup_order", "billing"),
    ]  # fmt: skip
    assert ("transfer_to_billing", "tool-args", "allow", True) in [
        (t, "tool-args", a, r) for t, a, r in out.ledger
    ]
    assert rows(out) == [("lookup_order", "tool-args", "mask", "rules")]
    # The agents' own hooks still ran, as the SDK calls them (on the source agent's hooks).
    assert out.hooked == [
        "tool front.quote_refund", "handoff front->billing", "tool billing.lookup_order",
    ]  # fmt: skip


async def test_a_refused_handoff_ends_the_run_before_the_other_agent_reads_anything(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan(
        [("transfer_to_billing", {"why": "DENY"})], [("lookup_order", {"order_id": "A2"})]
    )
    out, handle = await s.run("handoff", prompt)
    assert (out.stop_reason, out.halted_by) == ("guardrail", "rules")
    assert "the handoff 'transfer_to_billing' was refused by rules" in (out.note or "")
    assert LOOKUPS == []
    assert await halted_by(handle) == "rules"
    assert await s.audit(handle) == [("transfer_to_billing", "tool-args", "deny", "rules")]


async def test_needs_approval_parks_for_a_signed_yes_that_pending_and_the_audit_see(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The SDK would end the run with interruptions (stop reason done, output None, no record);
    guarded, the call waits for duraguard's signed, call-bound yes, and runs after it."""
    s = Setup(temporal_env)
    prompt = plan([("refund_order", {"order_id": "A7", "amount": 20.0})], answer="refunded")
    async with s.worker():
        handle = await s.start("approvals", prompt)
        (ask,) = await parked(handle)
        assert (ask.tool, ask.args, ask.asked_by) == (
            "refund_order", {"order_id": "A7", "amount": 20.0}, "openai-agents:needs_approval",
        )  # fmt: skip
        decision = decision_for(ask, approver="alice", private_key=PRIVATE)
        check = await handle.execute_update(DECIDE, decision, result_type=ApprovalCheck)
        assert check.ok
        out = await handle.result()
    await s.replay(await handle.fetch_history())
    assert (out.stop_reason, out.output) == ("done", "refunded")
    assert json.loads(out.tool_outputs[0]) == {"refunded": 20.0, "order_id": "A7"}
    audited = [(r.tool, r.action, r.by, r.approver) for r in out.verdicts]
    assert audited == [
        ("refund_order", "approve", "openai-agents:needs_approval", None),
        ("refund_order", "allow", "person", "alice"),
    ]
    assert [a for a in await s.audit(handle)] == [
        ("refund_order", "tool-args", "approve", "openai-agents:needs_approval")
    ]


async def test_a_needs_approval_function_asks_only_where_it_says_and_a_no_is_read_by_the_model(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    prompt = plan(
        [("credit_order", {"order_id": "A1", "amount": 20.0})],
        [("credit_order", {"order_id": "A2", "amount": 500.0})],
        answer="credited",
    )
    async with s.worker():
        handle = await s.start("approvals", prompt)
        (ask,) = await parked(handle)
        assert ask.args == {"order_id": "A2", "amount": 500.0}  # the small one never asked
        decision = decision_for(
            ask, approver="alice", private_key=PRIVATE, decision="deny", reason="too much"
        )
        await handle.execute_update(DECIDE, decision, result_type=ApprovalCheck)
        out = await handle.result()
    await s.replay(await handle.fetch_history())
    assert json.loads(out.tool_outputs[0])["credited"] == 20.0
    refusal = json.loads(out.tool_outputs[1])
    assert (refusal["approved"], refusal["declined_by"], refusal["reason"]) == (
        False, "alice", "too much",
    )  # fmt: skip
    assert [(t, a, r) for t, a, r in out.ledger] == [
        ("credit_order", "allow", True), ("credit_order", "approve", False),
    ]  # fmt: skip


async def test_the_sdks_own_tool_guardrails_and_tripwires_are_rows_of_the_audit(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    prompt = plan(
        [("cancel_order", {"order_id": "A1"})],
        [("cancel_order", {"order_id": "S1"})],
        [("cancel_order", {"order_id": "A666"})],
    )
    out, handle = await s.run("native", prompt)
    assert (out.stop_reason, out.halted_by) == ("guardrail", "openai-agents:no_a1")
    expected = [
        ("cancel_order", "tool-args", "deny", "openai-agents:no_a1"),
        ("cancel_order", "tool-result", "deny", "openai-agents:no_secret"),
        ("cancel_order", "tool-args", "halt", "openai-agents:no_a1"),
    ]
    assert rows(out) == expected
    assert await s.audit(handle) == expected
    assert await halted_by(handle) == "openai-agents:no_a1"
    # The rejected call did not run; the one whose output was rejected did.
    assert [(t, a, r) for t, a, r in out.ledger] == [
        ("cancel_order", "deny", False), ("cancel_order", "allow", True),
        ("cancel_order", "halt", False),
    ]  # fmt: skip


async def test_an_input_guardrail_tripwire_of_the_agent_is_a_halt_on_the_record(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, handle = await s.run("native_trip", plan(answer="own-trip"))
    assert (out.stop_reason, out.halted_by) == ("guardrail", "openai-agents:no-own-trip")
    assert rows(out) == [(None, "pre-prompt", "halt", "openai-agents:no-own-trip")]
    assert await s.audit(handle) == rows(out)
    assert await halted_by(handle) == "openai-agents:no-own-trip"


async def test_a_guarded_sub_agent_called_as_a_tool_has_its_own_calls_judged(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    inner = plan([("lookup_order", {"order_id": "NOTE"})], answer="looked up")
    out, _ = await s.run("delegate", plan([("ask_billing", {"input": inner})], answer="ok"))
    assert out.stop_reason == "done"
    assert LOOKUPS == [{"order_id": "NOTE"}]
    assert s.rules.seen == [("ask_billing", "front"), ("lookup_order", "billing")]
    # The inner agent's tool result was judged as its own: what it read was masked.
    assert rows(out) == [("lookup_order", "tool-result", "mask", "rules")]
    assert [(t, r) for t, _, r in out.ledger] == [("lookup_order", True), ("ask_billing", True)]


async def test_runner_run_streamed_on_a_guarded_agent_stops_before_any_model_call_and_says_why(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env, streaming=True)
    async with s.worker():
        handle = await s.start("structured", plan(answer="x"), streamed=True)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    cause = info.value.cause
    assert getattr(cause, "type", None) == "duraguard.RunStopped"
    assert "streams the model's output token by token" in str(cause)
    assert "duraguard.openai_agents.run(agent, input)" in str(cause)
    history = await handle.fetch_history()
    assert not any("invoke_model" in n for n, _ in steps(history))
    await s.replay(history)


async def test_a_streamed_run_judged_at_its_prompt_and_tool_results_streams_what_the_model_read(
    temporal_env: WorkflowEnvironment,
) -> None:
    """``Runner.run_streamed`` with guardrails that no token runs ahead of (the prompt, the tools'
    results): the run streams, a masked result is what the model read and what the stream
    carries, the calls are recorded, and the replay judges nothing again."""
    s = Setup(temporal_env, streaming=True)
    reads = s.rules.spec().model_copy(update={"placements": ("pre-prompt", "tool-result")})
    prompt = plan([("lookup_order", {"order_id": "NOTE"})], answer="looked it up")
    async with s.worker():
        handle = await s.start("native_trip", prompt, guardrails=[reads], streamed=True)
        seen: list[str] = []
        stream = WorkflowStreamClient.create(s.client, handle.id)
        async for item in stream.subscribe("events"):
            seen.append(json.dumps(item.data) if not isinstance(item.data, str) else item.data)
            if "response.completed" in seen[-1] and "looked" in seen[-1]:
                break
        out = await handle.result()
        history = await handle.fetch_history()
    await s.replay(history)
    assert out.stop_reason == "done" and out.output == "looked it up"
    assert [(t, r) for t, _, r in out.ledger] == [("lookup_order", True)]
    (shown,) = out.tool_outputs
    assert "[note]" in shown and "internal-note" not in shown  # masked before the model read it
    assert {"RawResponsesStreamEvent", "RunItemStreamEvent"} <= set((out.note or "").split())
    published = "\n".join(seen)
    assert "looked" in published and "internal-note" not in published
    assert ("lookup_order", "tool-result", "mask", "rules") in await s.audit(handle)


async def test_a_streamed_run_whose_guardrail_judges_arguments_is_refused_with_the_fix(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env, streaming=True)
    args = s.rules.spec().model_copy(update={"placements": ("tool-args",)})
    async with s.worker():
        handle = await s.start(
            "handoff", plan([("quote_refund", {"order_id": "A1"})]), guardrails=[args],
            streamed=True,
        )  # fmt: skip
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "before any verdict at tool-args (guardrails rules)" in str(info.value.cause)
    history = await handle.fetch_history()
    assert not any("invoke_model" in n for n, _ in steps(history))
    await s.replay(history)


async def test_a_masked_structured_output_keeps_its_type(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    answer = json.dumps({"order_id": "A1", "card": CARD})
    out, _ = await s.run("structured", plan(answer=answer))
    assert (out.stop_reason, out.output_type) == ("done", "Refund")
    assert out.output == {"order_id": "A1", "card": "[card]"}


def test_a_tool_that_runs_an_unguarded_agent_is_refused_by_guard() -> None:
    from agents import Agent, Runner, function_tool

    from duraguard import openai_agents

    billing = Agent(name="billing", model="plan")

    @function_tool
    async def ask_billing(question: str) -> str:
        """Ask the billing agent."""
        return str((await Runner.run(billing, question)).final_output)

    front = Agent(name="front", model="plan", tools=[ask_billing])
    with pytest.raises(duraguard.ConfigurationError, match="runs agent 'billing'"):
        openai_agents.guard(front, guardrails=[])
    guarded_billing = openai_agents.guard(billing, guardrails=[])

    @function_tool
    async def ask_guarded(question: str) -> str:
        """Ask the billing agent, guarded."""
        return str((await openai_agents.run(guarded_billing, question)).output)

    openai_agents.guard(Agent(name="front", tools=[ask_guarded]), guardrails=[])


def test_marks_are_checked_when_the_agent_is_guarded() -> None:
    from agents import Agent

    from duraguard import openai_agents

    agent = Agent(name="a", model="plan")
    with pytest.raises(duraguard.ConfigurationError, match="unknown mark 'kinds'"):
        openai_agents.guard(agent, guardrails=[], tools={"x": {"kinds": "read"}})
    with pytest.raises(duraguard.ConfigurationError, match="is not one of read, write, send"):
        openai_agents.guard(agent, guardrails=[], tools={"x": {"kind": "delete"}})
