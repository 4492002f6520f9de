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
from temporalio.worker import Replayer, Worker

from tests._harness import steps


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
