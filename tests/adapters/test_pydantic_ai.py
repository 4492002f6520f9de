"""The Pydantic AI adapter on the real dev server, with Pydantic AI's own FunctionModel: each
verdict at each placement, approvals by a signed update, replay asking no check again."""

from __future__ import annotations

import asyncio
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
from duraguard import ApproverKeys, PendingAsk
from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
from duraguard.types import DECIDE, PENDING_QUERY, VERDICTS_QUERY, AuditRow
from tests._harness import steps
from tests._servers import Replayer

from ._frameworks import connect
from ._guarded_pydantic import LOOKUPS, GuardedOutcome, GuardedPydanticAgent
from ._plan import plan
from ._rules import CARD, Rules

pytestmark = pytest.mark.timeout(120)

PRIVATE, PUBLIC = generate_keypair()
TOOL_ACTIVITY = "agent__support__toolset__<agent>__call_tool"


class Setup:
    def __init__(self, env: WorkflowEnvironment) -> None:
        self.rules = Rules()
        self.guard = duraguard.DuraguardPlugin(
            guardrails=[self.rules],
            approvers=ApproverKeys.from_mapping({"alice": {"public_key": PUBLIC.decode()}}),
        )
        self.plugins = [PydanticAIPlugin(), self.guard]
        self.client: Client = connect(env, self.plugins)
        self.queue = f"pa-{uuid.uuid4().hex[:8]}"

    def worker(self) -> Worker:
        return Worker(self.client, task_queue=self.queue, workflows=[GuardedPydanticAgent])

    async def start(
        self,
        prompt: str,
        *,
        short_asks: bool = False,
        direct: bool = False,
        follow_up: str = "",
        output_function: bool = False,
    ) -> WorkflowHandle[Any, GuardedOutcome]:
        return await self.client.start_workflow(
            GuardedPydanticAgent.run,
            args=[prompt, short_asks, direct, follow_up, output_function],
            id=f"pa-{uuid.uuid4().hex[:10]}",
            task_queue=self.queue,
            execution_timeout=timedelta(seconds=60),
            result_type=GuardedOutcome,
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
        replayer = Replayer(workflows=[GuardedPydanticAgent], plugins=self.plugins)
        await replayer.replay_workflow(history, raise_on_replay_failure=True)
        assert (self.guard.checks_run, self.rules.calls) == before, "replay ran a check again"


def names(history: Any) -> list[str]:
    return [n for n, _ in steps(history)]


def rows(out: GuardedOutcome) -> list[tuple[str | None, str, str, str | None]]:
    return [(r.tool, r.placement, r.action, r.by) for r in out.verdicts]


async def test_allowed_calls_run_each_judged_by_a_recorded_step(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan([("lookup_order", {"order_id": "A1"})], [("quote_refund", {"order_id": "A1"})])
    out, history = await s.run(prompt)
    assert (out.stop_reason, out.output, out.halted_by) == ("done", "done", None)
    assert [json.loads(o)["order_id"] for o in out.tool_outputs] == ["A1", "A1"]
    assert LOOKUPS == [{"order_id": "A1"}]
    # The hooks are workflow code: each pass is a local activity of the workflow, recorded in
    # its history between the model request that proposed the call and the call's own step.
    request = "agent__support__model_request"
    assert names(history) == [
        "duraguard.check", request,
        "duraguard.check", TOOL_ACTIVITY, "duraguard.check", request,
        "duraguard.check", TOOL_ACTIVITY, "duraguard.check", request,
        "duraguard.check",
    ]  # fmt: skip
    assert out.verdicts == []
    assert s.rules.calls == 6


async def test_a_denied_call_never_runs_and_the_model_reads_a_retryable_refusal(
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
    first, second, third = out.tool_outputs
    # A retry prompt the model reads and may correct: the refusal, as ModelRetry carries it.
    assert json.loads(json.loads(first)["error"]) == {
        "valid": False, "tool": "lookup_order", "error": "tool-args carries DENY"
    }  # fmt: skip
    assert json.loads(json.loads(second)["error"])["tool"] == "quote_refund"
    assert json.loads(third)["order_id"] == "A2"
    assert out.retried == [True, True, False]
    assert LOOKUPS == [{"order_id": "A2"}]
    assert names(history).count(TOOL_ACTIVITY) == 1
    # The framework may run one turn's calls at once: rows come in the order they were decided.
    assert sorted(rows(out), key=str) == [
        ("lookup_order", "tool-args", "deny", "rules"),
        ("quote_refund", "tool-args", "deny", "rules"),
    ]


async def test_once_a_tools_retries_are_spent_a_refusal_is_its_result_and_the_run_goes_on(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    prompt = plan(
        [("lookup_order", {"order_id": "DENY-1"})],
        [("lookup_order", {"order_id": "DENY-2"})],
        [("lookup_order", {"order_id": "DENY-3"})],
    )
    out, _ = await s.run(prompt)
    assert out.stop_reason == "done" and out.output == "done"
    # The first refusal asks for a retry; with the tool's one retry spent, the next is the
    # call's result (which counts as the tool answering, so the retry after it is fresh).
    assert out.retried == [True, False, True]
    shown = [json.loads(o) for o in out.tool_outputs]
    refusals = [json.loads(o["error"]) if r else o for o, r in zip(shown, out.retried, strict=True)]
    assert [r["valid"] for r in refusals] == [False, False, False]


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
    tool_inputs = [
        e.activity_task_scheduled_event_attributes.input.payloads[0].data
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == TOOL_ACTIVITY
    ]
    assert len(tool_inputs) == 2 and all(b"4111" not in data for data in tool_inputs)
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
    out, history = await s.run(prompt)
    assert (out.stop_reason, out.halted_by) == ("guardrail", "rules")
    assert LOOKUPS == [{"order_id": "A3"}]
    assert names(history).count("agent__support__model_request") == 1
    assert rows(out) == [("quote_refund", "tool-args", "halt", "rules")]


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
        assert LOOKUPS == []
        decision = decision_for(ask, approver="alice", private_key=PRIVATE)
        check = await handle.execute_update(DECIDE, decision, result_type=ApprovalCheck)
        assert check.ok and check.approver == "alice"
        out = await handle.result()
        audit = await handle.query(VERDICTS_QUERY, result_type=list[AuditRow])
    await s.replay(await handle.fetch_history())
    assert out.stop_reason == "done"
    assert LOOKUPS == [{"order_id": "ASK-1"}]
    assert [(r.action, r.by, r.approver) for r in audit] == [
        ("approve", "rules", None),
        ("allow", "person", "alice"),
    ]


async def test_an_ask_nobody_answers_expires_and_the_call_does_not_run(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    out, history = await s.run(plan([("lookup_order", {"order_id": "ASK-2"})]), short_asks=True)
    assert out.stop_reason == "done"
    assert "the ask expired" in out.tool_outputs[0]
    assert LOOKUPS == []
    assert "agent__support_short__toolset__<agent>__call_tool" not in names(history)


async def test_the_prompt_is_masked_before_any_model_reads_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan(answer="my code is secret-123"))
    assert out.output == "my code is [secret]"
    assert rows(out) == [(None, "pre-prompt", "mask", "rules")]
    scheduled = [
        e.activity_task_scheduled_event_attributes.input.payloads[0].data
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled and all(b"secret-123" not in data for data in scheduled)


async def test_a_run_on_earlier_messages_judges_only_its_own_prompt(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan(answer="my code is secret-123"), follow_up="and the refund?")
    prompts = [aid for name, aid in steps(history) if aid.startswith("dg-pre-prompt-")]
    assert len(prompts) == 2  # the first run's prompt, then the follow-up; never the first again
    assert out.stop_reason == "done"


@pytest.mark.parametrize("marker", ["forbidden", "halt-now"])
async def test_a_refused_prompt_ends_the_run_before_any_model_request(
    temporal_env: WorkflowEnvironment, marker: str
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan(answer=f"this is {marker}"))
    assert (out.stop_reason, out.halted_by) == ("guardrail", "rules")
    assert "agent__support__model_request" not in names(history)


async def test_a_refused_final_answer_goes_back_to_the_model_while_the_retries_last(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    corrected, _ = await s.run(plan(answer="a leak once"))
    assert (corrected.stop_reason, corrected.output) == ("done", "a l-e-a-k once")
    assert rows(corrected) == [(None, "final-answer", "deny", "rules")]
    refused, _ = await s.run(plan(answer="a leak always"))
    assert (refused.stop_reason, refused.output, refused.halted_by) == ("no-answer", None, None)
    masked, _ = await s.run(plan(answer=f"paid with {CARD}"))
    assert (masked.stop_reason, masked.output) == ("done", "paid with [card]")
    halted, _ = await s.run(plan(answer="stop-here"))
    assert (halted.stop_reason, halted.halted_by) == ("guardrail", "rules")


async def test_an_output_function_is_judged_as_a_call_before_it_runs(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The model's last call, to an output function with an effect: Pydantic AI's tool hooks
    skip it, and it once ran with arguments no guardrail saw (twice, with a retry)."""
    s = Setup(temporal_env)
    allowed, history = await s.run("refund A7", output_function=True)
    assert (allowed.stop_reason, allowed.output) == ("done", "refunded A7")
    # the prompt, the output function's arguments (and its result), the final answer
    assert names(history).count("duraguard.check") >= 3
    refused, _ = await s.run("refund DENY-7", output_function=True)
    assert refused.stop_reason == "no-answer"
    assert "'issue_refund' was refused" in (refused.note or "")
    assert next(r for r in rows(refused) if r[2] == "deny")[:2] == ("issue_refund", "tool-args")
    assert (allowed.refunded, refused.refunded) == (["A7"], [])  # the refused one never ran


async def test_a_halt_under_agent_run_fails_the_workflow_instead_of_retrying_its_task(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    async with s.worker():
        handle = await s.start(plan([("quote_refund", {"order_id": "HALT-3"})]), direct=True)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    cause = info.value.cause
    assert getattr(cause, "type", None) == "duraguard.RunStopped"
    await s.replay(await handle.fetch_history())


async def test_the_hooks_are_workflow_code_and_refuse_to_run_outside_a_workflow() -> None:
    from ._guarded_pydantic import support

    with pytest.raises(duraguard.ConfigurationError, match="is for workflow code"):
        await support.run(plan([("lookup_order", {"order_id": "A1"})]))


def test_run_refuses_an_agent_without_the_capability() -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from duraguard import pydantic_ai

    with pytest.raises(duraguard.ConfigurationError, match="has no Guarded capability"):
        asyncio.run(pydantic_ai.run(Agent(TestModel(), name="bare"), "hi"))


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
