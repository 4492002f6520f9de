"""Waiting for runs to end on a machine that may be busy: a run is stuck when nothing moves.

A fixed time to end makes a loaded machine look like a stuck run (50 sessions drawing on one
budget take three times as long beside other work). Here the runs are stuck only when none of
them, nor any workflow they wait on (a budget entity), has written a history event or started
another attempt of a pending step for :data:`QUIET` seconds: longer than the longest step
timeout the suites use, so a step lost with a killed worker has timed out and been retried in
that time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from temporalio.client import WorkflowHandle

QUIET = 60.0
"""Seconds with no new history event in any waited-on run before the rest count as stuck."""
POLL = 2.0


async def _length(handle: WorkflowHandle[Any, Any]) -> int | None:
    try:
        described = await handle.describe()
    except Exception:  # not started yet, or the server too busy to answer: not known this time
        return None
    raw = described.raw_description
    # A step retried after a timeout or a failure writes no event until it ends: its attempts
    # count as movement too (a budget reservation retried with backoff past QUIET is not stuck).
    attempts = sum(int(a.attempt) for a in raw.pending_activities)
    return int(raw.workflow_execution_info.history_length) + attempts


async def results(
    handles: Sequence[WorkflowHandle[Any, Any]],
    *,
    waits_on: Sequence[WorkflowHandle[Any, Any]] = (),
) -> list[dict[str, Any] | None]:
    """Each run's result, ``None`` for a run still going once nothing moved for :data:`QUIET`
    seconds; a run that ended in failure gives its failure as its stop reason."""
    ending = {i: asyncio.ensure_future(h.result()) for i, h in enumerate(handles)}
    out: list[dict[str, Any] | None] = [None] * len(handles)
    seen = -1
    moved = time.monotonic()
    while ending:
        done, _ = await asyncio.wait(ending.values(), timeout=POLL)
        for i, task in list(ending.items()):
            if task in done:
                del ending[i]
                err = task.exception()
                out[i] = (
                    task.result()
                    if err is None
                    else {"stop_reason": f"failed: {type(err).__name__}: {err}"}
                )
        if done:
            moved = time.monotonic()
            continue
        watched = [handles[i] for i in ending] + list(waits_on)
        lengths = await asyncio.gather(*(_length(h) for h in watched))
        if None in lengths:
            continue  # a poll that could not see every run proves nothing stood still
        total = sum(x for x in lengths if x is not None)
        if total != seen:
            seen, moved = total, time.monotonic()
        elif time.monotonic() - moved > QUIET:
            break
    for task in ending.values():
        task.cancel()
    return out
