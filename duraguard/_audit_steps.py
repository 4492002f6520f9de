"""The steps of a run's history the audit reads: local activity markers and completed
activities of duraguard's checks, its model and tool steps, and fired expiry timers, each with
its payloads still encoded (:mod:`duraguard.audit` decodes them)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle, WorkflowHistory

from ._wire import CHECK_ACTIVITY, MODEL_ACTIVITY, VERIFY_ACTIVITY

LOCAL_ACTIVITY_MARKER = "core_local_activity"
AUDITED = (CHECK_ACTIVITY, VERIFY_ACTIVITY)
EXPIRY_STEP = "duraguard.expiry"
"""How an expired ask appears among the audited steps (a fired timer, not an activity)."""
TOOL_STEP = "duraguard.tool-result"
"""How a tool step appears among the audited steps: its result was judged inside it."""
MODEL_STEP = MODEL_ACTIVITY
"""A model step appears among the audited steps where it judged the prompt or a final answer
itself."""


@dataclass
class Step:
    """An audited step found in history, before its payload is decoded."""

    event_id: int
    activity: str
    local: bool
    result: Payload | None
    summary: Payload | None
    input: Payload | None = None


async def events_of(
    source: WorkflowHandle[Any, Any] | WorkflowHistory | Iterable[HistoryEvent],
) -> list[HistoryEvent]:
    if isinstance(source, WorkflowHandle):
        source = await source.fetch_history()
    if isinstance(source, WorkflowHistory):
        return list(source.events)
    return list(source)


def audited_steps(events: Sequence[HistoryEvent]) -> list[Step]:
    """The audited steps: local activity markers and completed regular activities."""
    scheduled: dict[int, HistoryEvent] = {}
    timers: dict[int, HistoryEvent] = {}
    steps: list[Step] = []
    for e in events:
        if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            timers[e.event_id] = e
        elif e.event_type == EventType.EVENT_TYPE_TIMER_FIRED:
            started = timers.get(e.timer_fired_event_attributes.started_event_id)
            if started is not None and _summary(started) is not None:
                steps.append(Step(e.event_id, EXPIRY_STEP, False, None, _summary(started)))
        elif e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            step = _marker_step(e)
            if step is not None:
                steps.append(step)
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[e.event_id] = e
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = e.activity_task_completed_event_attributes
            sched = scheduled.get(attrs.scheduled_event_id)
            if sched is None:
                continue
            s = sched.activity_task_scheduled_event_attributes
            name = s.activity_type.name
            if name not in AUDITED and name != MODEL_STEP and name.startswith("duraguard."):
                continue  # duraguard's other steps (seal, budget) decide nothing
            steps.append(
                Step(
                    event_id=e.event_id,
                    activity=name if name in (*AUDITED, MODEL_STEP) else TOOL_STEP,
                    local=False,
                    result=_first(attrs.result),
                    summary=_summary(sched),
                    input=_first(s.input),
                )
            )
    return steps


def _marker_step(e: HistoryEvent) -> Step | None:
    attrs = e.marker_recorded_event_attributes
    if attrs.marker_name != LOCAL_ACTIVITY_MARKER or attrs.HasField("failure"):
        return None
    data = attrs.details.get("data")
    result = attrs.details.get("result")
    if data is None or result is None:
        return None
    # The marker's own data is written by the SDK core as plain JSON, never through a codec.
    meta = _first(data)
    try:
        activity = json.loads(meta.data).get("activity_type") if meta is not None else None
    except ValueError:
        return None
    if activity not in AUDITED:
        return None
    return Step(e.event_id, activity, True, _first(result), _summary(e))


def _first(payloads: Payloads) -> Payload | None:
    return payloads.payloads[0] if payloads.payloads else None


def _summary(e: HistoryEvent) -> Payload | None:
    if e.HasField("user_metadata") and e.user_metadata.HasField("summary"):
        return e.user_metadata.summary
    return None


__all__ = [
    "AUDITED",
    "EXPIRY_STEP",
    "LOCAL_ACTIVITY_MARKER",
    "MODEL_STEP",
    "TOOL_STEP",
    "Step",
    "audited_steps",
    "events_of",
]
