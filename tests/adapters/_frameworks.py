"""Shared pieces for the framework tests: a client with plugins, run-then-replay, history sizes.

The framework workflows themselves live beside this module (``_openai_agents.py``,
``_pydantic_ai.py``), each importing its framework at the top, so a test that lacks one skips
before importing them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests._harness import steps
from tests._servers import Replayer


def connect(env: WorkflowEnvironment, plugins: Sequence[Any]) -> Client:
    """The environment's client, rebuilt with ``plugins`` in the order given."""
    config = env.client.config()
    config["plugins"] = list(plugins)
    return Client(**config)


@dataclass
class Ran:
    """A finished run: its result and its history."""

    result: Any
    history: WorkflowHistory

    def activity_names(self) -> list[str]:
        """Activity types in history order (regular ones when scheduled, local ones by marker)."""
        return [name for name, _ in steps(self.history)]

    def size(self) -> tuple[int, int]:
        """(events, bytes) of the whole history."""
        return len(self.history.events), sum(e.ByteSize() for e in self.history.events)


async def run(
    client: Client,
    workflow: Callable[..., Any],
    arg: Any,
    *,
    workflows: Sequence[type],
    activities: Sequence[Callable[..., Any]] = (),
    result_type: type | None = None,
) -> Ran:
    """Run ``workflow(arg)`` on a worker of its own task queue; return its result and history."""
    task_queue = f"adapters-{uuid.uuid4().hex[:10]}"
    async with Worker(
        client, task_queue=task_queue, workflows=list(workflows), activities=list(activities)
    ):
        handle = await client.start_workflow(
            workflow,
            arg,
            id=f"wf-{uuid.uuid4().hex[:10]}",
            task_queue=task_queue,
            execution_timeout=timedelta(seconds=100),
            result_type=result_type,
        )
        result = await handle.result()
    return Ran(result=result, history=await handle.fetch_history())


async def replay(
    history: WorkflowHistory, *, workflows: Sequence[type], plugins: Sequence[Any]
) -> None:
    """Replay ``history`` with ``plugins``; raises on any divergence."""
    replayer = Replayer(workflows=list(workflows), plugins=list(plugins))
    await replayer.replay_workflow(history, raise_on_replay_failure=True)


def per_call(small: Ran, large: Ran, calls: tuple[int, int]) -> str:
    """Events and bytes per tool call: overall at each size, and the marginal cost between them."""
    (e1, b1), (e2, b2) = small.size(), large.size()
    n1, n2 = calls
    marginal_e = (e2 - e1) / (n2 - n1)
    marginal_b = (b2 - b1) / (n2 - n1)
    return (
        f"{n1} calls: {e1} events, {b1} B ({e1 / n1:.1f} ev, {b1 / n1:.0f} B per call); "
        f"{n2} calls: {e2} events, {b2} B ({e2 / n2:.1f} ev, {b2 / n2:.0f} B per call); "
        f"marginal {marginal_e:.1f} ev, {marginal_b:.0f} B per call"
    )


class Scenario:
    """A guarded agent's workflow on the dev server, as the Strands and ADK tests run it: both
    plugins on one client (duraguard's after the framework's, or before), a worker per run,
    every run replayed with the same plugins and no check run again, a signed yes by alice."""

    def __init__(
        self,
        env: WorkflowEnvironment,
        framework: Any,
        workflow: Any,
        make_input: Callable[..., Any],
        *,
        activities: Sequence[Callable[..., Any]] = (),
        result_type: type | None = None,
        duraguard_first: bool = False,
    ) -> None:
        import duraguard
        from duraguard import ApproverKeys
        from duraguard.approvals import generate_keypair

        from ._rules import Rules

        self.private, public = generate_keypair()
        self.rules = Rules()
        self.guard = duraguard.DuraguardPlugin(
            guardrails=[self.rules],
            approvers=ApproverKeys.from_mapping({"alice": {"public_key": public.decode()}}),
        )
        self.plugins = [self.guard, framework] if duraguard_first else [framework, self.guard]
        self.client = connect(env, self.plugins)
        self.queue = f"sc-{uuid.uuid4().hex[:8]}"
        self.workflow, self.make_input = workflow, make_input
        self.activities, self.result_type = list(activities), result_type

    def worker(self) -> Worker:
        return Worker(
            self.client, task_queue=self.queue, workflows=[self.workflow],
            activities=self.activities,
        )  # fmt: skip

    async def start(self, prompt: str, **kw: Any) -> Any:
        return await self.client.start_workflow(
            self.workflow.run,
            self.make_input(prompt=prompt, **kw),
            id=f"sc-{uuid.uuid4().hex[:10]}",
            task_queue=self.queue,
            execution_timeout=timedelta(seconds=60),
            result_type=self.result_type,
        )

    async def run(self, prompt: str, **kw: Any) -> tuple[Any, Any]:
        async with self.worker():
            handle = await self.start(prompt, **kw)
            out = await handle.result()
        history = await handle.fetch_history()
        await self.replay(history)
        return out, history

    async def replay(self, history: Any) -> None:
        before = (self.guard.checks_run, self.rules.calls)
        await replay(history, workflows=[self.workflow], plugins=self.plugins)
        assert (self.guard.checks_run, self.rules.calls) == before, "replay ran a check again"

    async def approved(self, prompt: str, asked_by: str, **kw: Any) -> Any:
        """Run until a call parks (asked by ``asked_by``), say yes as alice, replay."""
        import duraguard
        from duraguard.approvals import ApprovalCheck, decision_for
        from tests._harness import parked

        async with self.worker():
            handle = await self.start(prompt, **kw)
            (ask,) = await parked(handle)
            assert ask.asked_by == asked_by
            decision = decision_for(ask, approver="alice", private_key=self.private)
            check = await handle.execute_update(
                duraguard.DECIDE, decision, result_type=ApprovalCheck
            )
            assert check.ok and check.approver == "alice"
            out = await handle.result()
        await self.replay(await handle.fetch_history())
        return out


def names(history: Any) -> list[str]:
    """The steps of a history by activity type (regular and local), in order."""
    return [n for n, _ in steps(history)]


def rows(out: Any) -> list[tuple[str | None, str, str, str | None]]:
    """(tool, placement, action, by) of each verdict a run reports."""
    return [(r.tool, r.placement, r.action, r.by) for r in out.verdicts]


def scheduled_inputs(history: Any, activity: str | None = None) -> list[bytes]:
    """The first input payload of each activity scheduled (of ``activity`` only, if named)."""
    return [
        e.activity_task_scheduled_event_attributes.input.payloads[0].data
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and activity in (None, e.activity_task_scheduled_event_attributes.activity_type.name)
    ]
