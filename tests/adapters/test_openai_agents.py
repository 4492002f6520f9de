"""The OpenAI Agents SDK adapter on the real dev server, with the SDK's own test model provider:
each verdict at each placement, approvals by a signed update, replay asking no check again."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("agents", reason="install the extra: pip install 'duraguard[openai-agents]'")

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import TestModelProvider
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import duraguard
from duraguard import ApproverKeys, PendingAsk
from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
from duraguard.types import DECIDE, PENDING_QUERY, VERDICTS_QUERY, AuditRow
from tests._harness import steps
from tests._servers import Replayer

from ._frameworks import connect
from ._guarded_openai import (
    CANCELLED,
    LOOKUPS,
    GuardedInput,
    GuardedOpenAIAgent,
    GuardedOutcome,
    PlanModel,
    lookup_order,
    support_agent,
)
from ._plan import SEEN, plan
from ._rules import CARD, Rules

pytestmark = pytest.mark.timeout(120)

PRIVATE, PUBLIC = generate_keypair()


class Setup:
    """Both plugins on one client (the OpenAI plugin first, as a Replayer needs it), a worker on
    a task queue of its own, run-then-replay asserting no check ran again."""

    def __init__(self, env: WorkflowEnvironment) -> None:
        self.rules = Rules()
        self.guard = duraguard.DuraguardPlugin(
            guardrails=[self.rules],
            approvers=ApproverKeys.from_mapping({"alice": {"public_key": PUBLIC.decode()}}),
        )
        self.agents = OpenAIAgentsPlugin(
            model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
            model_provider=TestModelProvider(PlanModel()),
        )
        self.client: Client = connect(env, [self.agents, self.guard])
        self.queue = f"oa-{uuid.uuid4().hex[:8]}"

    def worker(self) -> Worker:
        return Worker(
            self.client, task_queue=self.queue, workflows=[GuardedOpenAIAgent],
            activities=[lookup_order],
        )  # fmt: skip

    async def start(self, prompt: str, **kw: Any) -> WorkflowHandle[Any, GuardedOutcome]:
        return await self.client.start_workflow(
            GuardedOpenAIAgent.run,
            GuardedInput(prompt=prompt, guardrails=[self.rules.spec()], **kw),
            id=f"oa-{uuid.uuid4().hex[:10]}",
            task_queue=self.queue,
            execution_timeout=timedelta(seconds=60),
        )

    async def run(self, prompt: str, **kw: Any) -> tuple[GuardedOutcome, Any]:
        async with self.worker():
            handle = await self.start(prompt, **kw)
            out = await handle.result()
        history = await handle.fetch_history()
        await self.replay(history)
        return out, history

    async def replay(self, history: Any) -> None:
        before = (self.guard.checks_run, self.rules.calls)
        replayer = Replayer(workflows=[GuardedOpenAIAgent], plugins=[self.agents, self.guard])
        await replayer.replay_workflow(history, raise_on_replay_failure=True)
        assert (self.guard.checks_run, self.rules.calls) == before, "replay ran a check again"


async def test_a_function_tool_that_raises_is_recorded_as_failed_and_the_model_reads_the_sdk_text(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The SDK turns a @function_tool's exception into text for the model; the adapter runs the
    function inside the guarded call, so the session records a failure, not a result."""
    s = Setup(temporal_env)
    out, history = await s.run(plan([("quote_refund", {"order_id": "GONE"})]))
    assert out.stop_reason == "done"
    assert out.failed == ["quote_refund"]
    (shown,) = out.tool_outputs
    assert "order GONE was deleted" in shown  # the SDK's own failure text, as unguarded
    # The call's arguments were judged; a failed call has no result to judge.
    assert names(history) == [
        "duraguard.check", "invoke_model_activity", "duraguard.check",
        "invoke_model_activity", "duraguard.check",
    ]  # fmt: skip


def names(history: Any) -> list[str]:
    return [n for n, _ in steps(history)]


def rows(out: GuardedOutcome) -> list[tuple[str | None, str, str, str | None]]:
    """The audit rows that did not simply allow: (tool, placement, action, by)."""
    return [(r.tool, r.placement, r.action, r.by) for r in out.verdicts]


async def test_allowed_calls_of_both_tool_kinds_run_each_judged_by_a_recorded_step(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan([("lookup_order", {"order_id": "A1"})], [("quote_refund", {"order_id": "A1"})])
    out, history = await s.run(prompt)
    assert (out.stop_reason, out.output, out.halted_by) == ("done", "done", None)
    assert [json.loads(o)["order_id"] for o in out.tool_outputs] == ["A1", "A1"]
    assert LOOKUPS == [{"order_id": "A1"}]
    # The prompt, each call's arguments and result, and the final answer: each a recorded pass.
    assert names(history) == [
        "duraguard.check", "invoke_model_activity",
        "duraguard.check", "lookup_order", "duraguard.check", "invoke_model_activity",
        "duraguard.check", "duraguard.check", "invoke_model_activity",
        "duraguard.check",
    ]  # fmt: skip
    assert out.verdicts == []  # nothing but allows
    assert s.rules.calls == 6


async def test_a_denied_call_never_runs_and_the_model_reads_the_refusal_as_its_result(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan(
        [("lookup_order", {"order_id": "DENY-1"}), ("quote_refund", {"order_id": "DENY-2"})],
        [("lookup_order", {"order_id": "A2"})],
    )
    out, history = await s.run(prompt)
    assert out.stop_reason == "done"
    refused = [json.loads(o) for o in out.tool_outputs[:2]]
    assert refused == [
        {"valid": False, "tool": "lookup_order", "error": "tool-args carries DENY"},
        {"valid": False, "tool": "quote_refund", "error": "tool-args carries DENY"},
    ]
    assert LOOKUPS == [{"order_id": "A2"}]  # the refused activity was never scheduled
    assert names(history).count("lookup_order") == 1
    # The SDK runs one turn's calls at once: their rows come in the order they were decided.
    assert sorted(rows(out), key=str) == [
        ("lookup_order", "tool-args", "deny", "rules"),
        ("quote_refund", "tool-args", "deny", "rules"),
    ]


async def test_a_masked_call_runs_with_the_masked_arguments_only(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan([("lookup_order", {"order_id": CARD}), ("quote_refund", {"order_id": CARD})])
    out, history = await s.run(prompt)
    assert out.stop_reason == "done"
    assert LOOKUPS == [{"order_id": "[card]"}]
    assert [json.loads(o)["order_id"] for o in out.tool_outputs] == ["[card]", "[card]"]
    # The card number never reached the activity's input in history.
    scheduled = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "lookup_order"
    ]
    assert [json.loads(a.input.payloads[0].data) for a in scheduled] == ["[card]"]
    # one turn's two calls run at once: their rows come in the order they end
    assert sorted((t, a) for t, _, a, _ in rows(out)) == [
        ("lookup_order", "mask"),
        ("quote_refund", "mask"),
    ]


async def test_a_tool_result_is_masked_before_the_model_reads_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, _ = await s.run(plan([("lookup_order", {"order_id": "NOTE"})]))
    [shown] = out.tool_outputs
    assert "[note]" in shown and "internal-note" not in shown
    assert rows(out) == [("lookup_order", "tool-result", "mask", "rules")]


async def test_a_halt_ends_the_run_after_its_sibling_calls_complete(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan(
        [("quote_refund", {"order_id": "HALT-1"}), ("lookup_order", {"order_id": "A3"})],
        [("lookup_order", {"order_id": "A4"})],
    )
    async with s.worker():
        handle = await s.start(prompt)
        out = await handle.result()
        pending_rows = await handle.query(VERDICTS_QUERY, result_type=list[AuditRow])
    await s.replay(await handle.fetch_history())
    assert (out.stop_reason, out.halted_by) == ("guardrail", "rules")
    assert out.note == "halted by guardrail 'rules'"
    # The sibling ran and was recorded; no model turn came after the halting turn.
    assert LOOKUPS == [{"order_id": "A3"}]
    history = await handle.fetch_history()
    assert names(history).count("invoke_model_activity") == 1
    assert handle.id not in SEEN or all("A3" not in o for o in SEEN[handle.id])
    assert rows(out) == [("quote_refund", "tool-args", "halt", "rules")]
    assert [(r.tool, r.action) for r in pending_rows] == [("quote_refund", "halt")]


async def _parked(handle: WorkflowHandle[Any, Any]) -> PendingAsk:
    for _ in range(300):
        pending = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        if pending:
            return pending[0]
        await asyncio.sleep(0.05)
    raise TimeoutError(f"nothing of {handle.id} was waiting for a person")


async def test_an_asked_call_waits_for_a_signed_yes_then_runs(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    async with s.worker():
        handle = await s.start(plan([("lookup_order", {"order_id": "ASK-1"})]))
        ask = await _parked(handle)
        assert (ask.tool, ask.args, ask.asked_by) == (
            "lookup_order",
            {"order_id": "ASK-1"},
            "rules",
        )
        assert LOOKUPS == []  # parked: nothing ran
        # Sent through the client built with the OpenAI plugin (whose converter writes only the
        # fields that were set): the decision's nonce is set explicitly, so it survives.
        decision = decision_for(ask, approver="alice", private_key=PRIVATE)
        check = await handle.execute_update(DECIDE, decision, result_type=ApprovalCheck)
        assert check.ok and check.approver == "alice"
        out = await handle.result()
    await s.replay(await handle.fetch_history())
    assert out.stop_reason == "done"
    assert LOOKUPS == [{"order_id": "ASK-1"}]
    assert [(r.action, r.by, r.approver) for r in out.verdicts] == [
        ("approve", "rules", None),
        ("allow", "person", "alice"),
    ]


async def test_an_ask_nobody_answers_expires_and_the_model_reads_that_it_did_not_run(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    out, history = await s.run(
        plan([("lookup_order", {"order_id": "ASK-2"})]), approval_timeout_seconds=1.0
    )
    assert out.stop_reason == "done"
    [shown] = out.tool_outputs
    assert json.loads(shown)["error"].startswith(
        "the call needed a person's yes and the ask expired"
    )
    assert LOOKUPS == []
    assert "lookup_order" not in names(history)


async def test_the_prompt_is_masked_before_any_model_reads_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan(answer="my code is secret-123"))
    # The model answered with the text it was shown: the masked prompt.
    assert out.output == "my code is [secret]"
    assert rows(out) == [(None, "pre-prompt", "mask", "rules")]
    model_inputs = [
        e.activity_task_scheduled_event_attributes.input.payloads[0].data
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert all(b"secret-123" not in data for data in model_inputs)


@pytest.mark.parametrize("marker", ["forbidden", "halt-now"])
async def test_a_refused_prompt_ends_the_run_before_any_model_turn(
    temporal_env: WorkflowEnvironment, marker: str
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan(answer=f"this is {marker}"))
    assert (out.stop_reason, out.halted_by) == ("guardrail", "rules")
    assert "invoke_model_activity" not in names(history)


async def test_the_final_output_is_masked_corrected_refused_or_halted(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    masked, _ = await s.run(plan(answer=f"paid with {CARD}"))
    assert (masked.stop_reason, masked.output) == ("done", "paid with [card]")
    # A refused answer goes back to the model once, with the refusal, for another answer.
    corrected, history = await s.run(plan(answer="a leak once"))
    assert (corrected.stop_reason, corrected.output) == ("done", "a l-e-a-k once")
    assert rows(corrected) == [(None, "final-answer", "deny", "rules")]
    assert names(history).count("invoke_model_activity") == 2
    refused, _ = await s.run(plan(answer="a leak always"))
    assert (refused.stop_reason, refused.output, refused.halted_by) == ("no-answer", None, None)
    assert refused.note == "the final answer was refused by rules: final-answer carries leak"
    halted, _ = await s.run(plan(answer="stop-here"))
    assert (halted.stop_reason, halted.halted_by) == ("guardrail", "rules")


async def test_the_sdks_own_tripwire_and_turn_limit_end_the_run_as_values(
    temporal_env: WorkflowEnvironment,
) -> None:
    """Under Temporal either would retry the workflow task forever if raised from Runner.run."""
    s = Setup(temporal_env)
    tripped, _ = await s.run(plan(answer="own-trip"))
    assert (tripped.stop_reason, tripped.halted_by) == ("guardrail", "openai-agents:no-own-trip")
    limited, _ = await s.run(
        plan([("lookup_order", {"order_id": "A1"})], [("lookup_order", {"order_id": "A2"})]),
        max_turns=1,
    )
    assert limited.stop_reason == "max-iterations"


async def test_runner_run_on_a_guarded_agent_judges_the_prompt_once_through_the_agent(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan([("lookup_order", {"order_id": "A5"})]), runner=True)
    assert out.stop_reason == "done" and out.output == "done"
    assert names(history)[:2] == ["duraguard.check", "invoke_model_activity"]
    assert names(history).count("duraguard.check") == 4  # prompt, args, result, answer


async def test_a_halt_under_runner_run_fails_the_workflow_instead_of_retrying_its_task(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    async with s.worker():
        handle = await s.start(plan([("quote_refund", {"order_id": "HALT-3"})]), runner=True)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    cause = info.value.cause
    assert getattr(cause, "type", None) == "duraguard.RunStopped"
    assert "halted by guardrail 'rules'" in str(cause)
    await s.replay(await handle.fetch_history())


async def test_a_prompt_a_guardrail_masks_under_runner_run_fails_the_run_and_says_why(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The SDK's input guardrails cannot change the input: the masked prompt needs run()."""
    s = Setup(temporal_env)
    async with s.worker():
        handle = await s.start(plan(answer="my code is secret-123"), runner=True)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "start the run with duraguard.openai_agents.run(agent, input)" in str(info.value.cause)
    assert "invoke_model_activity" not in names(await handle.fetch_history())


async def test_a_final_output_a_guardrail_masks_under_runner_run_fails_the_run_and_says_why(
    temporal_env: WorkflowEnvironment,
) -> None:
    """Runner.run returns the output unchanged: the masked answer needs run(), never a leak."""
    s = Setup(temporal_env)
    async with s.worker():
        handle = await s.start(plan(answer=f"paid with {CARD}"), runner=True)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "start the run with duraguard.openai_agents.run(agent, input)" in str(info.value.cause)
    assert CARD not in str(info.value.cause)


async def test_a_tool_given_after_guard_stops_the_run_before_the_model_can_call_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    CANCELLED.clear()
    s = Setup(temporal_env)
    out, history = await s.run(plan([("cancel_order", {"order_id": "A1"})]), added_after_guard=True)
    assert (out.stop_reason, out.halted_by) == ("guardrail", "duraguard")
    assert "'cancel_order', which duraguard did not wrap" in (out.note or "")
    assert CANCELLED == []
    assert "invoke_model_activity" not in names(history)


async def test_a_masked_call_s_tool_context_shows_the_masked_arguments_too(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, _ = await s.run(plan([("store_card", {"card": CARD})]), card_tool=True)
    (shown,) = out.tool_outputs
    seen = json.loads(shown)
    assert seen["card"] == "[card]"
    assert CARD not in seen["tool_arguments"] and CARD not in seen["tool_call"]


def test_guard_refuses_agents_whose_tools_it_could_not_reach() -> None:
    from agents import Agent

    from duraguard import openai_agents

    inner = support_agent().clone(name="inner")
    outer = Agent(name="outer", tools=[inner.as_tool("delegate", "ask the inner agent")])
    with pytest.raises(duraguard.ConfigurationError, match=r"made by Agent\.as_tool"):
        openai_agents.guard(outer, guardrails=[])
    # The inner agent guarded first: its tools are judged when the outer agent delegates.
    inner_guarded = openai_agents.guard(inner, guardrails=[])
    outer = Agent(name="outer", tools=[inner_guarded.as_tool("delegate", "ask the inner agent")])
    assert openai_agents.guard(outer, guardrails=[]).tools[0].name == "delegate"

    sandbox = pytest.importorskip("agents.sandbox")
    with pytest.raises(duraguard.ConfigurationError, match="SandboxAgent"):
        openai_agents.guard(sandbox.SandboxAgent(name="box", model="plan"), guardrails=[])
    # The guarded copy has a list of MCP servers of its own.
    original = support_agent()
    guarded = openai_agents.guard(original, guardrails=[])
    assert guarded.mcp_servers is not original.mcp_servers


async def test_the_verdicts_are_in_the_audit_of_the_run(
    temporal_env: WorkflowEnvironment, capsys: pytest.CaptureFixture[str]
) -> None:
    from duraguard.cli import main

    s = Setup(temporal_env)
    async with s.worker():
        handle = await s.start(plan([("lookup_order", {"order_id": "DENY-9"})]))
        await handle.result()
    address = temporal_env.client.service_client.config.target_host
    code = await asyncio.to_thread(main, ["audit", handle.id, "--address", address, "--json"])
    assert code == 0
    audit = json.loads(capsys.readouterr().out)
    refused = [r for r in audit if r["action"] == "deny"]
    assert [(r["tool"], r["placement"], r["by"]) for r in refused] == [
        ("lookup_order", "tool-args", "rules")
    ]
    assert all("reason" not in r for r in audit)


def test_guard_refuses_a_tool_it_cannot_judge_and_run_refuses_an_unguarded_agent() -> None:
    from agents import WebSearchTool

    from duraguard import openai_agents

    agent = support_agent()
    with pytest.raises(duraguard.ConfigurationError, match="WebSearchTool"):
        openai_agents.guard(agent.clone(tools=[WebSearchTool()]), guardrails=[])
    guarded = openai_agents.guard(agent, guardrails=[])
    with pytest.raises(duraguard.ConfigurationError, match="already guarded"):
        openai_agents.guard(guarded, guardrails=[])
    with pytest.raises(duraguard.ConfigurationError, match="is not guarded"):
        asyncio.run(openai_agents.run(agent, "hello"))


def test_every_handoff_is_a_judged_handoff_object_naming_its_agent() -> None:
    """Agents given as handoffs become Handoff objects (one path: each judged as a call when
    taken, tests/adapters/test_openai_scenarios.py), their agents guarded as they are taken."""
    from agents import Agent, Handoff, handoff

    from duraguard import openai_agents

    billing = support_agent().clone(name="billing")
    refunds = support_agent().clone(name="refunds")
    front = Agent(name="front", handoffs=[billing, handoff(refunds)])
    guarded = openai_agents.guard(front, guardrails=[Rules().spec()])
    assert all(isinstance(h, Handoff) for h in guarded.handoffs)
    assert [h.agent_name for h in guarded.handoffs] == ["billing", "refunds"]
    assert [h.tool_name for h in guarded.handoffs] == ["transfer_to_billing", "transfer_to_refunds"]
