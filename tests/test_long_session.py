"""A long agent session: the conversation lives in the store, each model step carries only what
is new, and the loop continues-as-new with its session and conversation carried over."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from duraguard import schema
from duraguard.conversations import MemoryConversations
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow

from ._harness import TOOL_LOG, Harness, make_harness

CALLS = 60
STORE = MemoryConversations()


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(
        temporal_env, conversations=STORE, session_key="a-test-session-key-of-32-bytes!!"
    )


def _model_inputs(history: Any) -> list[int]:
    sizes = []
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            a = e.activity_task_scheduled_event_attributes
            if a.activity_type.name == "duraguard.model":
                sizes.append(len(a.input.payloads[0].data))
    return sizes


async def test_a_long_session_continues_as_new_and_never_resends_the_conversation(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    turns = [calls(("lookup", {"order_id": f"A{i}"})) for i in range(CALLS)]
    model = h.script(*turns, answer(f"looked up {CALLS} orders"))
    wid = f"long-{uuid.uuid4().hex[:8]}"
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(
            AgentWorkflow.run,
            AgentInput(
                prompt="look up every order",
                model=model,
                tools=["lookup"],
                guardrails=[schema(), h.counting.spec()],
                max_iterations=CALLS + 5,
                continue_after_events=120,
            ),
            task_queue=tq,
            id=wid,
        )
        result = await handle.result()  # follows the chain to its last run
    assert result.stop_reason == "done" and result.answer == f"looked up {CALLS} orders"
    assert [t for t, _ in TOOL_LOG] == ["lookup"] * CALLS  # each ran once, none lost
    histories = await h.chain_histories(wid)
    assert len(histories) >= 3  # it continued-as-new, more than once
    for history in histories:
        await h.replay(history)  # no check runs again on replay, in any run of the chain
        # Each model step carries what is new (a call's result), not the conversation so far.
        sizes = _model_inputs(history)
        assert sizes and max(sizes) < 2_000, sizes
    first = histories[0].events[0].workflow_execution_started_event_attributes
    conversation = await STORE.read(f"{wid}/{first.original_execution_run_id}")
    roles = [m.role for m in conversation]
    # What the model was sent, in order, across every run: the task, then each turn's call and
    # result (the final answer is the loop's result, never sent back to the model).
    assert roles == ["user", *(["assistant", "tool"] * CALLS)]
    # Nothing lost or repeated at a run boundary: every result once, in order.
    ids = [json.loads(m.content or "{}").get("order_id") for m in conversation if m.role == "tool"]
    assert ids == [f"A{i}" for i in range(CALLS)]
