"""An update sent again, under the same id, while a failed workflow task of its workflow aborts
it.

The server aborts an update whose workflow task failed (FAILED_PRECONDITION with a
``WorkflowNotReadyFailure``), or that it dropped in flight (UNAVAILABLE, "workflow update was
aborted"): never applied, and safe to send again. Under load a task fails for
reasons of the server's own (a timer cancelled as it fired, ``BadCancelTimerAttributes``; a task
that timed out), and a caller that took the abort for an answer would refuse a budget check, or
tell a person their decision failed when it was never read. Sent again under one id, an update
the workflow did take is answered from the first, never applied twice.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from typing import Any

import temporalio.service

ABORTED_TRIES = 8
"""How many times an update aborted by a failed workflow task is sent (about 6 s of waits)."""
_NOT_READY = "/temporal.api.errordetails.v1.WorkflowNotReadyFailure"
_clock = time.monotonic


def aborted(err: BaseException) -> bool:
    """Whether an update was aborted because the workflow task that held it failed
    (``WorkflowNotReadyFailure``: never applied), or because the server dropped the run's
    updates in flight (UNAVAILABLE, "workflow update was aborted": the run's cache entry was
    evicted or its workflow task lost; the server retries it itself, and says to send it again
    where that runs out). Either is safe to send again under its id: one the run had accepted
    is answered from it."""
    if not isinstance(err, temporalio.service.RPCError):
        return False
    if err.status == temporalio.service.RPCStatusCode.UNAVAILABLE:
        return "update was aborted" in (err.message or "").lower()
    if err.status != temporalio.service.RPCStatusCode.FAILED_PRECONDITION:
        return False
    try:
        details = err.grpc_status.details
    except Exception:  # unreadable details: not known to be an abort
        return False
    return any(d.type_url.endswith(_NOT_READY) for d in details)


async def send_update(
    handle: Any,
    update: Any,
    arg: Any,
    *,
    id: str | None = None,
    rpc_timeout: timedelta | None = None,
    **options: Any,
) -> Any:
    """``handle.execute_update(update, arg, id=id, **options)``, sent again under the same id
    while a failed workflow task aborts it, :data:`ABORTED_TRIES` times at most (``id``: a new
    one for this send when not given). ``rpc_timeout`` bounds the whole send, the waits between
    tries included. Any other error, and the last abort, is raised."""
    id = id or f"duraguard/{uuid.uuid4().hex}"
    deadline = None if rpc_timeout is None else _clock() + rpc_timeout.total_seconds()
    attempt = 0
    while True:
        if deadline is not None:
            options["rpc_timeout"] = timedelta(seconds=max(deadline - _clock(), 0.001))
        try:
            return await handle.execute_update(update, arg, id=id, **options)
        except temporalio.service.RPCError as err:
            attempt += 1
            wait = 0.05 * 2 ** (attempt - 1)
            if not aborted(err) or attempt >= ABORTED_TRIES:
                raise
            if deadline is not None and _clock() + wait >= deadline:
                raise
            await asyncio.sleep(wait)


def abort_message(what: str) -> str:
    """What to tell a person whose update was aborted every time it was sent."""
    return (
        f"{what} was not applied: the run's workflow task keeps failing (see its workers' logs "
        "and the run's history), and the server refused the update with it; sending it again "
        "is safe"
    )


__all__ = ["ABORTED_TRIES", "abort_message", "aborted", "send_update"]
