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

from temporalio.client import Client, WorkflowHandle
from temporalio.langgraph import LangGraphPlugin
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

import duraguard
from duraguard import ApproverKeys
from duraguard.approvals import generate_keypair
from tests._harness import steps

from ._frameworks import connect
from ._langgraph import ACTIVITIES, LOOKUPS, RULES, LangGraphAgent, Outcome, graphs
from ._plan import plan

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
        self.graphs = LangGraphPlugin(graphs=graphs())
        self.plugins: list[Any] = (
            [self.guard, self.graphs] if duraguard_first else [self.graphs, self.guard]
        )
        self.client: Client = connect(env, self.plugins)
        self.queue = f"lg-{uuid.uuid4().hex[:8]}"

    def worker(self) -> Worker:
        return Worker(
            self.client, task_queue=self.queue, workflows=[LangGraphAgent], activities=ACTIVITIES
        )

    async def start(
        self, prompt: str, graph: str = "support", script: str = ""
    ) -> WorkflowHandle[Any, Outcome]:
        return await self.client.start_workflow(
            LangGraphAgent.run,
            args=[graph, prompt, script],
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
