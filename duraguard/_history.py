"""The asks a run left open, read from its history alone: no worker, no query.

Every ask is recorded by the local activity ``duraguard.ask`` whose result is the
:class:`~duraguard._wire.PendingAsk` (run id and challenge included), so a decision can be
built and sent by signal while no worker runs. An ask is closed, in history order, by:

* a decision that verified (the ``duraguard.verify-decision`` step, ``ok``) for its call;
* its expiry timer firing (the timer whose summary is ``duraguard ask expires: CALL TOOL``);
* a later ask of the same call (asked again after a yes), which replaces it;
* the run closing (completed, failed, timed out, terminated, cancelled, continued as new).

A decision that arrived by signal but that no worker has checked yet leaves the ask open: the
history does not yet say whether it verifies.

::

    history = await client.get_workflow_handle(workflow_id).fetch_history()
    asks = await asks_from_history(history, client.data_converter)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter

from ._wire import ASK_ACTIVITY, EXPIRY_SUMMARY, VERIFY_ACTIVITY, PendingAsk
from .approvals import ApprovalCheck

LOCAL_ACTIVITY_MARKER = "core_local_activity"

_CLOSED = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    }
)


async def asks_from_history(
    history: WorkflowHistory | Iterable[HistoryEvent], data_converter: DataConverter
) -> list[PendingAsk]:
    """The asks still open at the end of ``history``, in the order they were asked.

    Args:
        history: a fetched history (``await handle.fetch_history()``) or its events.
        data_converter: the converter the workers use (pydantic, with the codec if any): the
            recorded asks are payloads written through it.

    Raises:
        Exception: whatever the converter raises on a payload it cannot read (a codec key that
            is missing, for instance); the caller says which run could not be read.
    """
    events = history.events if isinstance(history, WorkflowHistory) else history
    open_asks: dict[str, PendingAsk] = {}
    scheduled: dict[int, str] = {}
    expiries: dict[int, str] = {}
    for e in events:
        kind = e.event_type
        if kind in _CLOSED:
            return []
        if kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            step = _local_step(e)
            if step is not None:
                await _apply(*step, open_asks, data_converter)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[e.event_id] = e.activity_task_scheduled_event_attributes.activity_type.name
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = e.activity_task_completed_event_attributes
            name = scheduled.get(attrs.scheduled_event_id)
            if name is not None:
                await _apply(name, _first(attrs.result), open_asks, data_converter)
        elif kind == EventType.EVENT_TYPE_TIMER_STARTED:
            call_id = await _expiry_call(e, data_converter)
            if call_id is not None:
                expiries[e.event_id] = call_id
        elif kind == EventType.EVENT_TYPE_TIMER_FIRED:
            call_id = expiries.get(e.timer_fired_event_attributes.started_event_id)
            if call_id is not None:
                open_asks.pop(call_id, None)
    return list(open_asks.values())


async def _apply(
    activity: str,
    result: Payload | None,
    open_asks: dict[str, PendingAsk],
    converter: DataConverter,
) -> None:
    if result is None:
        return
    if activity == ASK_ACTIVITY:
        ask = await _decode(result, PendingAsk, converter)
        if isinstance(ask, PendingAsk):
            open_asks.pop(ask.call_id, None)  # asked again: the newest ask is the one standing
            open_asks[ask.call_id] = ask
    elif activity == VERIFY_ACTIVITY:
        check = await _decode(result, ApprovalCheck, converter)
        if isinstance(check, ApprovalCheck) and check.ok and check.call_id:
            open_asks.pop(check.call_id, None)


def _local_step(e: HistoryEvent) -> tuple[str, Payload | None] | None:
    """(activity type, result) of a local activity marker that completed."""
    attrs = e.marker_recorded_event_attributes
    if attrs.marker_name != LOCAL_ACTIVITY_MARKER or attrs.HasField("failure"):
        return None
    data = attrs.details.get("data")
    if data is None or not data.payloads:
        return None
    # The marker's own data is written by the SDK core as plain JSON, never through a codec.
    try:
        activity = json.loads(data.payloads[0].data).get("activity_type")
    except (ValueError, AttributeError):
        return None
    if activity not in (ASK_ACTIVITY, VERIFY_ACTIVITY):
        return None
    result = attrs.details.get("result")
    return str(activity), _first(result) if result is not None else None


async def _expiry_call(e: HistoryEvent, converter: DataConverter) -> str | None:
    """The call id an ask's expiry timer names, from its summary."""
    if not (e.HasField("user_metadata") and e.user_metadata.HasField("summary")):
        return None
    summary = await _decode(e.user_metadata.summary, str, converter)
    if not isinstance(summary, str) or not summary.startswith(EXPIRY_SUMMARY):
        return None
    parts = summary[len(EXPIRY_SUMMARY) :].split()
    return parts[0] if parts else None


def _first(payloads: Payloads) -> Payload | None:
    return payloads.payloads[0] if payloads.payloads else None


async def _decode(payload: Payload, type_hint: Any, converter: DataConverter) -> Any:
    values = await converter.decode([payload], [type_hint])
    return values[0] if values else None


__all__ = ["asks_from_history"]
