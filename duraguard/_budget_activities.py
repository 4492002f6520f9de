"""The budget entity's worker side: start-or-find a principal's entity, reserve through it, and
the activities that commit, release and ask which holders still run.

See :mod:`duraguard._budget_entity` for the entity itself and :mod:`duraguard.budget` for the
guardrail.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import temporalio.activity
import temporalio.client
import temporalio.common
import temporalio.exceptions
import temporalio.service

from ._budget_entity import (
    COMMIT_ACTIVITY,
    OWNERS_ACTIVITY,
    RELEASE_ACTIVITY,
    RESOURCE,
    BudgetState,
    BudgetWorkflow,
    OwnersRequest,
    OwnersResult,
    ReserveRequest,
    ReserveResult,
    SettleRequest,
    SettleResult,
    entity_id,
)
from ._types import Reservation
from ._updates import send_update

log = logging.getLogger("duraguard.budget")


async def _entity(
    client: temporalio.client.Client, principal: str, queue: str, max_history: int
) -> temporalio.client.WorkflowHandle[Any, Any]:
    """The principal's running entity, started if none runs (start + update, portable to
    every server, the time-skipping one included)."""
    try:
        return await client.start_workflow(
            BudgetWorkflow.run,
            BudgetState(principal=principal, max_history=max_history),
            id=entity_id(principal),
            task_queue=queue,
            id_conflict_policy=temporalio.common.WorkflowIDConflictPolicy.USE_EXISTING,
        )
    except temporalio.exceptions.WorkflowAlreadyStartedError:
        return client.get_workflow_handle(entity_id(principal))


async def _reserve(
    client: temporalio.client.Client,
    principal: str,
    queue: str,
    req: ReserveRequest,
    max_history: int,
) -> ReserveResult:
    handle = await _entity(client, principal, queue, max_history)
    # One update id per attempt: a retry of the check reaches the handler (which re-claims the
    # hold an earlier attempt took) instead of reading back that attempt's answer.
    update_id = f"reserve/{req.id}/{req.claim}"
    return await send_update(handle, BudgetWorkflow.reserve, req, id=update_id)  # type: ignore[no-any-return]


async def _withdraw(
    client: temporalio.client.Client, principal: str, queue: str, req: ReserveRequest
) -> None:
    """Give back the hold a check attempt that gave up may have taken (best effort, bounded:
    what it misses, the entity's owner sweep gives back after ``hold_seconds``)."""
    reservation = Reservation(
        resource=RESOURCE,
        id=req.id,
        data={"principal": principal, "account": req.account, "period": req.period},
    )
    settle = SettleRequest(reservation=reservation, claim=req.claim)
    try:
        async with asyncio.timeout(5.0):
            handle = await _entity(client, principal, queue, 0)
            await send_update(
                handle, BudgetWorkflow.release, settle, id=f"withdraw/{req.id}/{req.claim}"
            )
    except (Exception, TimeoutError):
        log.warning("duraguard: budget hold %s not withdrawn; it lapses after its hold", req.id)


async def _settle(req: SettleRequest, *, commit: bool) -> SettleResult:
    r = req.reservation
    client = temporalio.activity.client()
    principal = str(r.data["principal"])
    queue = str(r.data.get("task_queue") or temporalio.activity.info().task_queue)
    handle = await _entity(client, principal, queue, 0)
    update = BudgetWorkflow.commit if commit else BudgetWorkflow.release
    verb = "commit" if commit else "release"
    return await send_update(handle, update, req, id=f"{verb}/{r.id}")  # type: ignore[no-any-return]


@temporalio.activity.defn(name=OWNERS_ACTIVITY)
async def budget_owners(req: OwnersRequest) -> OwnersResult:
    """Which of these runs are still running (and so may still spend what they hold)."""
    client = temporalio.activity.client()
    running = []
    for wid, rid in req.owners:
        try:
            desc = await client.get_workflow_handle(wid, run_id=rid or None).describe()
        except temporalio.service.RPCError as err:
            if err.status == temporalio.service.RPCStatusCode.NOT_FOUND:
                continue  # gone: it can spend nothing more
            raise  # the server is unsure: retried, and the hold stays meanwhile
        if desc.status == temporalio.client.WorkflowExecutionStatus.RUNNING:
            running.append((wid, rid))
    return OwnersResult(running=tuple(running))


@temporalio.activity.defn(name=COMMIT_ACTIVITY)
async def budget_commit(req: SettleRequest) -> SettleResult:
    """The tool succeeded: what was reserved is spent."""
    return await _settle(req, commit=True)


@temporalio.activity.defn(name=RELEASE_ACTIVITY)
async def budget_release(req: SettleRequest) -> SettleResult:
    """The call did not complete: what was reserved comes back."""
    return await _settle(req, commit=False)


BUDGET_ACTIVITIES: list[Any] = [budget_commit, budget_release, budget_owners]
