"""A tool result kept in the conversation store by its step, so the model step that follows is
sent its digest (duraguard._kept_results): in history once, read by the model whole, as the
guardrails left it; a store that does not hold it (keeps none, wiped, a row changed) costs the
step a resend with the result in full, never a result; a run with the patch held back sends
every result in full. Each run here replays with no check run again."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from temporalio.worker import Worker

import duraguard
from duraguard import pii, schema
from duraguard._byref import digest
from duraguard._kept_results import KEPT_FROM
from duraguard._types import canonical_json
from duraguard._wire import ModelRequest
from duraguard.conversations import MemoryConversations
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow

from ._harness import TOOLS, Harness, Run, make_harness, patch_markers

NOTE = "kb-note-7f3a"
"""In every page of results: counted in history, where a result recorded twice shows twice."""


def _page(query: str, n: int = 12) -> dict[str, Any]:
    return {
        "query": query,
        "hits": [
            {"id": f"KB-{k:05d}", "snippet": f"{NOTE} {query} answer {k}: see the refund policy"}
            for k in range(n)
        ],
    }


@duraguard.tool(kind="read")
def kb_search(query: str) -> dict[str, Any]:
    """Search the knowledge base."""
    return _page(query)


@duraguard.tool(kind="read")
def customer(order_id: str) -> dict[str, Any]:
    """A customer's record (with an email address in it)."""
    return {"order_id": order_id, "email": "maria.lopez@example.org", **_page("history", 8)}


SEEN: list[ModelRequest] = []


def _seen(request: ModelRequest) -> Any:
    SEEN.append(request)
    return answer("done")


def _input(h: Harness, *turns: Any, guardrails: list[Any] | None = None) -> AgentInput:
    SEEN.clear()
    model = h.script(*turns, _seen)
    return AgentInput(
        prompt="what do we say about refunds?",
        model=model,
        tools=["kb_search", "customer", "lookup"],
        guardrails=guardrails if guardrails is not None else [schema(), pii()],
    )


def _mentions(history: Any, text: str) -> int:
    """How often ``text`` is written in the run's steps (every activity's input and output;
    the run's own result repeats the latest messages, by design)."""
    found = 0
    for e in history.events:
        for field in (
            "activity_task_scheduled_event_attributes",
            "activity_task_completed_event_attributes",
        ):
            if e.HasField(field):
                found += str(getattr(e, field)).count(text)
    return found


def _tool_messages(request: ModelRequest) -> list[str | None]:
    return [m.content for m in request.messages if m.role == "tool"]


async def _harness(env: Any, **options: Any) -> Harness:
    return await make_harness(env, tools=[*TOOLS, kb_search, customer], **options)


async def test_a_kept_result_is_in_history_once_and_the_model_reads_it_whole(
    temporal_env: Any,
) -> None:
    h = await _harness(temporal_env)
    ran = await h.run(
        AgentWorkflow.run,
        _input(h, calls(("kb_search", {"query": "refunds"}), ("kb_search", {"query": "fees"}))),
    )
    assert ran.result.stop_reason == "done"
    texts = [canonical_json(_page("refunds")), canonical_json(_page("fees"))]
    assert all(len(t) >= KEPT_FROM for t in texts)
    # the model read each result whole, where the workflow would have put it
    assert _tool_messages(SEEN[-1])[-2:] == texts
    # the tool steps kept them and said so; the model step was sent their digests alone
    assert [i["keep"] for i in ran.scheduled_inputs("kb_search")] == [True, True]
    assert [o["kept"] for o in ran.activity_outputs("kb_search")] == [True, True]
    second = ran.scheduled_inputs("duraguard.model")[1]
    assert [m.get("content") for m in second["messages"] if m["role"] == "tool"] == [None, None]
    assert [d for _, _, d in second["kept"]] == [digest(t) for t in texts]
    # each page is in history once: as its tool step's output
    assert _mentions(ran.history, f"{NOTE} refunds answer 0") == 1
    assert _mentions(ran.history, f"{NOTE} fees answer 0") == 1


async def test_a_result_masked_in_its_step_is_kept_masked(temporal_env: Any) -> None:
    """pii masks the email inside the tool step: the store keeps what the model reads (the
    masked text), never the address, and the model step is sent its digest."""
    store = MemoryConversations()
    h = await _harness(temporal_env, conversations=store)
    ran = await h.run(AgentWorkflow.run, _input(h, calls(("customer", {"order_id": "A1"}))))
    assert ran.result.stop_reason == "done"
    (read,) = _tool_messages(SEEN[-1])[-1:]
    assert read is not None and "maria.lopez@example.org" not in read and NOTE in read
    (out,) = ran.activity_outputs("customer")
    assert out["kept"] is True and out["judged"]["replaced"] is True
    kept = [t for texts in store._results._texts.values() for t in texts]
    assert kept == [read]
    assert all(b"maria.lopez" not in raw for rows in store._kept.values() for raw in rows.values())
    second = ran.scheduled_inputs("duraguard.model")[1]
    assert [d for _, _, d in second["kept"]] == [digest(read)]
    assert _mentions(ran.history, "maria.lopez@example.org") == 0


class _Forgetful(MemoryConversations):
    """A store whose kept results are gone by the time the model step reads them (wiped,
    another host's file): every kept result misses."""

    async def kept_results(self, conversation: str, wanted: Any) -> dict[str, str]:
        return {}


class _Changed(MemoryConversations):
    """A store whose kept rows changed after the tool step wrote them: none has the digest."""

    async def keep_result(self, conversation: str, call_id: str, attempt: int, text: str) -> None:
        await super().keep_result(conversation, call_id, attempt, text.replace("refund", "REFUND"))


class _Unreachable(MemoryConversations):
    async def keep_result(self, conversation: str, call_id: str, attempt: int, text: str) -> None:
        raise OSError("connection refused")


@pytest.mark.parametrize(
    ("store", "kept", "resent"),
    [(_Forgetful(), True, True), (_Changed(), True, True), (_Unreachable(), False, False)],
    ids=["wiped", "changed", "unreachable"],
)
async def test_a_result_the_store_does_not_hold_reaches_the_model_in_full(
    temporal_env: Any, store: MemoryConversations, kept: bool, resent: bool
) -> None:
    h = await _harness(temporal_env, conversations=store)
    ran = await h.run(AgentWorkflow.run, _input(h, calls(("kb_search", {"query": "refunds"}))))
    assert ran.result.stop_reason == "done"
    text = canonical_json(_page("refunds"))
    assert _tool_messages(SEEN[-1])[-1] == text  # the model read it as the tool returned it
    assert [o.get("kept", False) for o in ran.activity_outputs("kb_search")] == [kept]
    models = ran.scheduled_inputs("duraguard.model")
    outputs = ran.activity_outputs("duraguard.model")
    if resent:
        # the step sent its digest, found nothing it could use, called no model, stored nothing;
        # the same step again, with the result in full
        assert len(models) == 3 and models[1]["kept"] and "kept" not in models[2]
        assert outputs[1] == {"results_missing": True, **_defaults(outputs[1])}
        assert _tool_messages(ModelRequest.model_validate(models[2]))[-1] == text
        assert models[1]["step"] == models[2]["step"]
    else:
        assert len(models) == 2 and "kept" not in models[1]
    assert _mentions(ran.history, f"{NOTE} refunds answer 0") == 2  # its output, and in full


def _defaults(output: dict[str, Any]) -> dict[str, Any]:
    """The fields a model step's output always carries (empty), beside ``results_missing``."""
    return {k: v for k, v in output.items() if k != "results_missing" and not v}


async def test_a_run_with_the_patch_held_back_sends_every_result_in_full(
    temporal_env: Any,
) -> None:
    """A rolling upgrade from the version before: its workers read neither a tool step asked to
    keep its result nor a model step sent a digest. With the patch held back, a new run asks for
    neither, and its history replays on the upgraded code."""
    from duraguard._patches import KEPT_RESULTS, RESULT_KEYS

    h = await _harness(temporal_env)

    def hold(info: Any) -> bool:
        return not info.patch_id.startswith("duraguard.kept-results")

    tq = f"tq-held-{uuid.uuid4().hex[:8]}"
    async with Worker(
        h.client, task_queue=tq, workflows=list(h.workflows), patch_activation_callback=hold
    ):
        handle = await h.start(
            AgentWorkflow.run, _input(h, calls(("kb_search", {"query": "refunds"}))), task_queue=tq
        )
        result = await handle.result()
    assert result.stop_reason == "done"
    history = await handle.fetch_history()
    (marker,) = patch_markers(history)
    assert RESULT_KEYS in marker and KEPT_RESULTS not in marker
    ran = Run(result=result, handle=handle, history=history, task_queue=tq)
    assert ["keep" in i for i in ran.scheduled_inputs("kb_search")] == [False]
    assert ["kept" in o for o in ran.activity_outputs("kb_search")] == [False]
    assert all("kept" not in m for m in ran.scheduled_inputs("duraguard.model"))
    assert _mentions(history, f"{NOTE} refunds answer 0") == 2
    await h.replay(history)


async def test_a_small_result_travels_in_full(temporal_env: Any) -> None:
    """Shorter than KEPT_FROM: its digest and a read would cost what the text does."""
    h = await _harness(temporal_env)
    ran = await h.run(AgentWorkflow.run, _input(h, calls(("lookup", {"order_id": "A1"}))))
    assert ran.result.stop_reason == "done"
    assert [o.get("kept", False) for o in ran.activity_outputs("lookup")] == [False]
    assert all("kept" not in m for m in ran.scheduled_inputs("duraguard.model"))
    (said,) = _tool_messages(SEEN[-1])[-1:]
    assert said is not None and json.loads(said)["order_id"] == "A1"
