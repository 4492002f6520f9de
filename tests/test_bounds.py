"""Issue 24, class 1: a value nested deeper than a step carries never wedges a run.

The SDK's pydantic payload reader refuses a document nested 201 deep, its writer goes to 254:
a model step that wrote tool arguments 210 deep completed, and every workflow task after it
failed reading its result, for ever. Every step duraguard writes bounds what it writes first
(:data:`duraguard._bounds.MAX_DEPTH`): the model's arguments, a tool's result, a guardrail's
replacement, an approver's edits, a plan, a check()'s value, a guarded_call's arguments, and
how many calls a turn may propose. Each run here ends, says why to the model or the caller,
fails no workflow task, and replays with no check run again.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError

import duraguard
from duraguard import Subject, Verdict, pii, schema
from duraguard._bounds import MAX_DEPTH, READER_DEPTH, depth_of
from duraguard._wire import APPROVE_PLAN, DECIDE, PREVIEW_EDITS, PlanCheck
from duraguard.approvals import ApprovalCheck
from duraguard.checks.policy import make_plan, policy
from duraguard.models import ScriptedTurn, answer, calls, last_tool_results
from duraguard.testing import AgentInput, AgentWorkflow, GuardedCallWorkflow, approver_decision
from duraguard.types import ModelRequest

from ._bounds_workflows import Deep, DeepAnswer, DeepCall, nested
from ._core_workflows import Calls, PlannedCalls
from ._harness import TOOL_LOG, TOOLS, Harness, Run, failed_tasks, make_harness, parked
from .test_approvals import KEYS, NEEDS, PRIVATE, NeedsManager

pytestmark = pytest.mark.timeout(180)

RESULTS: list[int] = []


@duraguard.tool(kind="read")
def deep_export(depth: int, shape: str) -> Any:
    """Export a report (nested as deep as asked)."""
    RESULTS.append(depth)
    return {"report": nested(depth, shape)}


class Deepens(duraguard.Guardrail):
    """Rewrites a call's arguments into a value nested 150 deep (a buggy rewrite)."""

    name = "deepens"
    placements = frozenset({"tool-args"})

    async def check(self, subject: Subject) -> Verdict:
        return Verdict(action="rewrite", payload={"order_id": nested(150, "lists")})


@pytest.fixture(scope="module")
async def h(temporal_env: Any) -> Harness:
    return await make_harness(
        temporal_env,
        tools=[*TOOLS, deep_export],
        guardrails=[NeedsManager(), Deepens()],
        approvers=KEYS,
        workflows=[AgentWorkflow, GuardedCallWorkflow, DeepCall, DeepAnswer, PlannedCalls],
    )


def _report(request: ModelRequest) -> ScriptedTurn:
    """The model's next turn: it says what the tool's result told it."""
    return answer(" | ".join(m.content or "" for m in last_tool_results(request)))


async def _ends(h: Harness, workflow: Any, arg: Any) -> Run:
    """Run to its end within a minute (a wedged run times out instead), then replay it with no
    check run again; no workflow task may have failed on the way."""
    tq = f"tq-{uuid.uuid4().hex[:10]}"
    async with h.worker(tq):
        handle = await h.client.start_workflow(
            workflow,
            arg,
            id=f"wf-{uuid.uuid4().hex[:10]}",
            task_queue=tq,
            execution_timeout=timedelta(seconds=60),
        )
        result = await handle.result()
    history = await handle.fetch_history()
    await h.replay(history)
    run = Run(result=result, handle=handle, history=history, task_queue=tq)
    assert failed_tasks(run.history) == []
    return run


def test_the_bound_sits_well_below_what_the_payload_reader_takes() -> None:
    from pydantic_core import from_json

    at_limit = json.dumps(nested(READER_DEPTH - 1, "lists"))
    from_json(at_limit)
    with pytest.raises(ValueError, match="recursion limit"):
        from_json(json.dumps(nested(READER_DEPTH, "lists")))
    # The deepest a step wraps a value: an entry's arguments in a view, in a subject, in a
    # check, in a tool's step; and a carried session in a loop's continue-as-new.
    assert MAX_DEPTH + 12 < READER_DEPTH - 1
    assert depth_of(nested(5000, "mixed")) == MAX_DEPTH + 1  # it stops early, no recursion


@pytest.mark.parametrize(
    ("depth", "shape"),
    [(210, "lists"), (210, "dicts"), (210, "mixed"), (300, "dicts"), (70, "mixed")],
)
async def test_model_arguments_nested_past_the_bound_are_refused_and_the_run_ends(
    h: Harness, depth: int, shape: str
) -> None:
    """210 deep: written by the model step, unreadable by the workflow (the run never ended).
    300 deep: the step could not even write it (the model was called five times, the run
    failed). 70: readable, but past the bound every step keeps."""
    TOOL_LOG.clear()
    model = h.script(calls(("lookup", {"order_id": nested(depth, shape)})), _report)
    run = await _ends(
        h,
        AgentWorkflow.run,
        AgentInput(prompt="look it up", model=model, tools=["lookup"], guardrails=[schema()]),
    )
    assert run.result.stop_reason == "done"
    assert f"nested more than {MAX_DEPTH} levels deep" in run.result.answer
    assert "'lookup'" in run.result.answer
    assert TOOL_LOG == []
    assert [r.check for r in run.result.verdicts] == ["duraguard.bounds"]


@pytest.mark.parametrize(("depth", "shape"), [(210, "lists"), (199, "dicts"), (80, "mixed")])
async def test_a_tool_result_nested_past_the_bound_is_not_recorded_and_the_model_is_told(
    h: Harness, depth: int, shape: str
) -> None:
    """The tool ran (once); its result cannot cross back to the workflow, so it is not
    recorded and not run again, and the model reads why."""
    RESULTS.clear()
    args = {"depth": depth, "shape": shape}
    model = h.script(calls(("deep_export", args)), _report)
    run = await _ends(
        h,
        AgentWorkflow.run,
        AgentInput(
            prompt="export it", model=model, tools=["deep_export"], guardrails=[pii()],
        ),
    )  # fmt: skip
    assert RESULTS == [depth]
    assert run.result.stop_reason == "done"
    assert "its effect happened and it is not run again" in run.result.answer
    assert f"nested more than {MAX_DEPTH} levels deep" in run.result.answer


@pytest.mark.parametrize("mode", ["inline", "local", "activity"])
async def test_a_guardrail_that_rewrites_into_a_value_too_deep_refuses_the_call(
    h: Harness, mode: str
) -> None:
    TOOL_LOG.clear()
    model = h.script(calls(("lookup", {"order_id": "A1"})), _report)
    run = await _ends(
        h,
        AgentWorkflow.run,
        AgentInput(
            prompt="look it up", model=model, tools=["lookup"],
            guardrails=[Deepens().spec()], check_mode=mode,
        ),
    )  # fmt: skip
    assert TOOL_LOG == []
    assert "the value deepens replaced it with: nested more than" in run.result.answer


@pytest.mark.parametrize(("depth", "shape"), [(1500, "lists"), (150, "dicts"), (65, "mixed")])
async def test_guarded_call_arguments_nested_too_deep_are_refused_in_workflow_code(
    h: Harness, depth: int, shape: str
) -> None:
    """1,500 deep, a walk of the arguments (their digest, their provenance) would fail the
    workflow task on every attempt; 150 deep, a later step that shows them in a session view
    could not be read back. Refused with no step; the next call runs."""
    TOOL_LOG.clear()
    run = await _ends(h, DeepCall.run, Deep(depth=depth, shape=shape, guardrails=[schema()]))
    first, second = run.result
    assert (first["ran"], first["check"]) == (False, "duraguard.depth")
    assert f"nested more than {MAX_DEPTH} levels deep" in first["reason"]
    assert second["ran"] and TOOL_LOG == [("lookup", {"order_id": "A1"})]


@pytest.mark.parametrize(("depth", "shape"), [(1500, "dicts"), (100, "lists")])
async def test_a_final_answer_nested_too_deep_trips_its_check_and_the_caller_reads_why(
    h: Harness, depth: int, shape: str
) -> None:
    run = await _ends(h, DeepAnswer.run, Deep(depth=depth, shape=shape, guardrails=[pii()]))
    assert run.result["tripped"] and run.result["check"] == "duraguard.depth"
    assert "the final-answer value: nested more than" in run.result["reason"]


async def test_an_approvers_edits_nested_too_deep_are_refused_and_the_real_yes_counts(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    model = h.script(calls(("refund", {"order_id": "A2", "amount": 500})), answer("done"))
    spec = AgentInput(prompt="refund A2", model=model, tools=["refund"], guardrails=[NEEDS])
    tq = f"tq-{uuid.uuid4().hex[:10]}"
    async with h.worker(tq):
        handle = await h.start(AgentWorkflow.run, spec, task_queue=tq)
        (ask,) = await parked(handle)
        for edits in ({"order_id": nested(80, "dicts")}, {"note": nested(MAX_DEPTH, "lists")}):
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(PREVIEW_EDITS, {"call_id": ask.call_id, "edits": edits})
            assert f"nested more than {MAX_DEPTH} levels deep" in str(refused.value.cause)
            with pytest.raises(ValueError, match=f"nested more than {MAX_DEPTH}"):
                approver_decision(ask, approver="alice", private_key=PRIVATE["alice"], edits=edits)
            raw = approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
            forged = {**raw.model_dump(mode="json"), "edits": edits}
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(DECIDE, forged, result_type=ApprovalCheck)
            assert "nested more than" in str(refused.value.cause)
        good = approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
        assert (await handle.execute_update(DECIDE, good, result_type=ApprovalCheck)).ok
        result = await handle.result()
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]
    await h.replay(await handle.fetch_history())


async def test_a_plan_nested_too_deep_is_refused_and_a_plain_one_is_followed(h: Harness) -> None:
    TOOL_LOG.clear()
    steps = [{"tool": "lookup", "args": {"order_id": "A1"}}]
    spec = Calls(
        calls=[("lookup", {"order_id": "A1"})],
        guardrails=[policy(checks=["tool_kinds", "plan_step"])],
        wait_for_plan=True,
    )
    tq = f"tq-{uuid.uuid4().hex[:10]}"
    async with h.worker(tq):
        handle = await h.start(PlannedCalls.run, spec, task_queue=tq)
        run_id = (await handle.describe()).run_id
        for deep in (nested(70, "dicts"), nested(150, "lists")):
            token = make_plan(
                workflow_id=handle.id, run_id=run_id, approver="alice",
                private_key=PRIVATE["alice"],
                steps=[{"tool": "lookup", "args": {"order_id": deep}}],
            )  # fmt: skip
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(APPROVE_PLAN, token, result_type=PlanCheck)
            assert f"nested more than {MAX_DEPTH} levels deep" in str(refused.value.cause)
        token = make_plan(
            workflow_id=handle.id, run_id=run_id, approver="alice",
            private_key=PRIVATE["alice"], steps=steps,
        )  # fmt: skip
        assert (await handle.execute_update(APPROVE_PLAN, token, result_type=PlanCheck)).ok
        out = await handle.result()
    assert [o["ran"] for o in out] == [True]
    await h.replay(await handle.fetch_history())


async def test_an_answer_too_long_for_a_step_is_left_out_and_the_model_answers_again(
    h: Harness,
) -> None:
    """2.5 MB of answer: over what one payload may be (the step's completion was refused and
    retried, the model called five times, the run failed). The step leaves it out; the model
    is told and answers again."""
    model = h.script(answer("x" * 2_500_000), answer("short"))
    run = await _ends(
        h, AgentWorkflow.run, AgentInput(prompt="say it", model=model, guardrails=[pii()])
    )
    assert (run.result.stop_reason, run.result.answer) == ("done", "short")
    told = [m.content for m in run.result.messages if m.role == "user"]
    assert any("over the 1,048,576 bytes one step carries" in (t or "") for t in told)


@pytest.mark.parametrize("where", ["answer", "arguments", "argument name", "tool name"])
async def test_a_model_reply_with_a_lone_surrogate_is_written_with_the_replacement_character(
    h: Harness, where: str
) -> None:
    """A model's JSON may escape half of a UTF-16 pair (``"\\ud800"``): Python reads it as a
    lone surrogate, which cannot be written to history, so every attempt of the model step
    failed and the run with it. The step writes U+FFFD in its place (a pair, escaped too,
    stays the character it makes)."""
    TOOL_LOG.clear()
    lone, pair = "\ud800", "\ud83d\ude00"  # half a pair; the two halves of U+1F600
    if where == "answer":
        turns = [answer(f"done {lone} {pair}")]
    elif where == "arguments":
        turns = [calls(("lookup", {"order_id": f"A1{lone}{pair}"})), answer("done")]
    elif where == "argument name":
        turns = [calls(("lookup", {"order_id": "A1", f"x{lone}": 1})), answer("done")]
    else:
        turns = [calls((f"lookup{lone}", {"order_id": "A1"})), answer("done")]
    run = await _ends(
        h,
        AgentWorkflow.run,
        AgentInput(
            prompt="look it up", model=h.script(*turns), tools=["lookup"], guardrails=[schema()]
        ),
    )
    assert run.result.stop_reason == "done", run.result
    if where == "answer":
        assert run.result.answer == "done \ufffd \U0001f600"
    elif where == "arguments":
        assert TOOL_LOG == [("lookup", {"order_id": "A1\ufffd\U0001f600"})]
    else:
        # refused (an argument the tool does not take; a tool the agent was not given), and
        # the model told why: the run goes on
        assert TOOL_LOG == []


def test_a_tool_result_with_a_lone_surrogate_is_kept_with_the_replacement_character() -> None:
    # A file name read with surrogateescape, a page decoded so: the result could not be written
    # and was lost ("cannot be recorded as JSON"), though the tool's effect had happened.
    from duraguard._tool_step import _recordable

    @duraguard.tool(kind="read")
    def listing() -> dict[str, Any]:
        """A listing."""
        return {}

    value, written = _recordable(
        listing, {"files": ["r\udcc3sum\u00e9.txt", "ok \ud83d\ude00"], "n\ud800": 1}
    )
    assert value == {"files": ["r\ufffdsum\u00e9.txt", "ok \U0001f600"], "n\ufffd": 1}
    assert written == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
