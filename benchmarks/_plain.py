"""An agent loop on Temporal with no framework at all: the baseline the issue's "cost per call at
scale" targets compare with. The workflow keeps the conversation and sends it whole to a model
activity each turn (what a loop written from Temporal's samples does); each call is a tool
activity (activity id ``c<N>``, as duraguard's tool steps are, so the same history reader
counts both). The model is the benchmark's scripted one (:class:`~benchmarks._workflows.
BenchModel`'s rule: N order lookups, one a turn, then an answer), the tool its ``lookup``.
Nothing here imports duraguard; the worker that runs it has no plugin."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow

MODEL = "plain.model"
LOOKUP = "plain.lookup"


@activity.defn(name=MODEL)
async def plain_model(turn: dict[str, Any]) -> dict[str, Any]:
    """``bench:lookup-N``'s answer to the conversation so far: a lookup, or the answer."""
    total = int(str(turn["model"]).rpartition("-")[2])
    done = sum(1 for m in turn["messages"] if m["role"] == "assistant")
    if done >= total:
        return {"content": f"went through {total} calls"}
    call = {"id": f"t{done}", "name": "lookup", "arguments": {"order_id": f"A{done}"}}
    return {"tool_calls": [call]}


@activity.defn(name=LOOKUP)
async def plain_lookup(args: dict[str, Any]) -> dict[str, Any]:
    """The benchmark's ``lookup``: a fixed, small answer."""
    return {"order_id": args["order_id"], "status": "shipped", "amount": 20.0}


ACTIVITIES = [plain_model, plain_lookup]


@workflow.defn(name="duraguard.bench.PlainLoop")
class PlainLoopWorkflow:
    """Model step, tool steps, until the model answers; returns the number of calls."""

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> int:
        messages: list[dict[str, Any]] = [{"role": "user", "content": spec["prompt"]}]
        calls = 0
        while True:
            answer = await workflow.execute_activity(
                MODEL,
                {"model": spec["model"], "messages": messages},
                start_to_close_timeout=timedelta(seconds=60),
            )
            if not answer.get("tool_calls"):
                return calls
            messages.append({"role": "assistant", "tool_calls": answer["tool_calls"]})
            for call in answer["tool_calls"]:
                calls += 1
                result = await workflow.execute_activity(
                    LOOKUP,
                    call["arguments"],
                    start_to_close_timeout=timedelta(seconds=60),
                    activity_id=f"c{calls}",
                )
                content = json.dumps(result, sort_keys=True, separators=(",", ":"))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
