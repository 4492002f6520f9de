"""The budget entity's expiry timers are never cancelled.

A timer cancelled in the workflow task during which it fires makes the server refuse that task
(``BadCancelTimerAttributes``), and every update the task held is aborted. The entity used to wait
with a timeout that each update woke early, cancelling its timer every time: under load (an update
every few milliseconds, the machine busy) the race came often enough to fail a test's release
eight times running. Since the patch ``duraguard.budget-timers-kept`` an entity arms a timer only
when none running would wake it in time and lets each one fire; runs started before the patch
replay as they ran.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from duraguard._budget_entity import TIMERS_KEPT
    from duraguard._types import Context, PassResult, Subject
    from duraguard.budget import (
        BUDGET_ACTIVITIES,
        BUDGET_WORKFLOWS,
        STATE_QUERY,
        BudgetState,
        BudgetWorkflow,
        SettleRequest,
        budget,
        entity_id,
        reservations_of,
    )
    from duraguard.engine import run_pass
    from duraguard.guardrail import Resources
    from tests._servers import duraguard_client, replay, sandbox_runner, start_dev_server


async def _book(client: Client, queue: str, who: str, *, hold_seconds: float) -> dict[str, int]:
    """Twelve reservations in three waves, half released at once, the rest left to expire (their
    runs never existed); returns the entity's timer events once every hold is gone."""
    spec = budget(limit=10_000, task_queue=queue, hold_seconds=hold_seconds)
    resources = Resources(extra={"temporal_client": client})
    entity = client.get_workflow_handle(entity_id(who))

    async def one(i: int) -> PassResult:
        subject = Subject(
            placement="tool-args",
            tool="pay",
            value={"amount": 5},
            call_id=f"c{i}",
            context=Context(principal=who, workflow_id=f"gone-{uuid.uuid4().hex[:6]}"),
        )
        return await run_pass([spec], subject, resources)

    for wave in range(3):
        results = await asyncio.gather(*(one(4 * wave + i) for i in range(4)))
        assert not any(r.tripped for r in results)
        held = [r for res in results for r in reservations_of(res.verdicts)]
        for r in held[:2]:
            await entity.execute_update(BudgetWorkflow.release, SettleRequest(reservation=r))
        await asyncio.sleep(0.3)
    for _ in range(200):
        state = await entity.query(STATE_QUERY, result_type=BudgetState)
        if not state.accounts["budget"].holds:
            break
        await asyncio.sleep(0.1)
    assert state.accounts["budget"].holds == {}, "holds were never given back"
    assert state.expired == 6, state
    return await _timer_events(entity)


async def _timer_events(entity: WorkflowHandle[Any, Any]) -> dict[str, int]:
    counts = {"started": 0, "fired": 0, "canceled": 0}
    names = {
        EventType.EVENT_TYPE_TIMER_STARTED: "started",
        EventType.EVENT_TYPE_TIMER_FIRED: "fired",
        EventType.EVENT_TYPE_TIMER_CANCELED: "canceled",
    }
    async for event in entity.fetch_history_events():
        if event.event_type in names:
            counts[names[event.event_type]] += 1
    return counts


def _worker(client: Client, queue: str, **options: Any) -> Worker:
    return Worker(
        client,
        task_queue=queue,
        workflows=BUDGET_WORKFLOWS,
        activities=BUDGET_ACTIVITIES,
        workflow_runner=sandbox_runner("tests"),
        **options,
    )


async def test_the_entity_lets_each_expiry_timer_fire_and_holds_still_expire() -> None:
    env = await start_dev_server()
    try:
        client = duraguard_client(env)
        queue, who = f"budget-{uuid.uuid4()}", f"p-{uuid.uuid4().hex[:8]}"
        async with _worker(client, queue):
            timers = await _book(client, queue, who, hold_seconds=1.0)
        assert timers["started"] >= 1 and timers["fired"] >= 1, timers
        assert timers["canceled"] == 0, timers
        await replay(client.get_workflow_handle(entity_id(who)), BUDGET_WORKFLOWS, "tests")

        # An entity started before the patch (a worker holding it back) waited with a timeout
        # each update cut short: its history cancels timers, and it replays as it ran.
        asked: list[str] = []

        def hold(info: Any) -> bool:
            patch: str = info.patch_id
            asked.append(patch)
            return patch != TIMERS_KEPT

        queue, who = f"budget-{uuid.uuid4()}", f"p-{uuid.uuid4().hex[:8]}"
        async with _worker(client, queue, patch_activation_callback=hold):
            before = await _book(client, queue, who, hold_seconds=1.0)
        assert TIMERS_KEPT in asked
        assert before["canceled"] >= 1, before
        await replay(client.get_workflow_handle(entity_id(who)), BUDGET_WORKFLOWS, "tests")
    finally:
        await env.shutdown()
