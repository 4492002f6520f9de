"""Where the inbox reads what waits: visibility, each run's pending query, and its history.

Runs with ``DuraguardPending > 0`` are found by a visibility query. Each is asked its
``duraguard.pending`` query; when no worker answers (it is down, or busy), the asks are read
from the run's history instead, which is enough: each ask is the result of a ``duraguard.ask``
local activity (a marker), and it is still open unless a later ``duraguard.verify-decision``
marker for that call says ok or its expiry timer fired. Payloads are decoded with the client's
data converter, a codec included.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHandle
from temporalio.converter import DataConverter

from .._wire import (
    ASK_ACTIVITY,
    EXPIRY_SUMMARY,
    PENDING_QUERY,
    SA_PENDING,
    VERIFY_ACTIVITY,
    PendingAsk,
)
from ..approvals import ApprovalCheck
from ..audit import LOCAL_ACTIVITY_MARKER

Outcome = Literal["approved", "denied", "expired", "ended", "gone"]

_CLOSED_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: "completed",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: "failed",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: "timed out",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: "cancelled",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: "terminated",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: "continued as new",
}

EXPIRED_WHY = "nobody decided before the ask expired; the call did not run"
MAX_REMEMBERED = 4096
"""Runs remembered as having no worker to answer (expired ones dropped first)."""


@dataclass(frozen=True)
class Ending:
    """How one ask stopped waiting, as history tells it."""

    outcome: Outcome
    at: float
    approver: str | None = None
    said: str | None = None
    """The person's own (signed) reason."""
    detail: str | None = None
    """How the run closed, for ``ended``."""


@dataclass
class RunHistory:
    """What one run's history says about its asks."""

    asked: dict[str, tuple[PendingAsk, float]] = field(default_factory=dict)
    """The latest ask of each call, with when it was recorded."""
    open: dict[str, PendingAsk] = field(default_factory=dict)
    endings: dict[str, Ending] = field(default_factory=dict)
    ended: str | None = None
    """How the run closed, if it did (``completed``, ``terminated``, ...)."""


def _marker_activity(e: HistoryEvent) -> tuple[str | None, Payload | None]:
    attrs = e.marker_recorded_event_attributes
    if attrs.marker_name != LOCAL_ACTIVITY_MARKER or attrs.HasField("failure"):
        return None, None
    data, result = attrs.details.get("data"), attrs.details.get("result")
    if data is None or result is None or not data.payloads or not result.payloads:
        return None, None
    try:  # the marker's own data is plain JSON written by the SDK core, never through a codec
        activity = json.loads(data.payloads[0].data).get("activity_type")
    except (ValueError, AttributeError):
        return None, None
    return (activity if isinstance(activity, str) else None), result.payloads[0]


async def _decode(converter: DataConverter, payload: Payload, hint: type) -> Any:
    values = await converter.decode([payload], [hint])
    return values[0] if values else None


async def read_history(events: Sequence[HistoryEvent], converter: DataConverter) -> RunHistory:
    """The asks of a run, open and ended, read from its events in order."""
    run = RunHistory()
    timers: dict[int, HistoryEvent] = {}
    for e in events:
        at = e.event_time.ToMicroseconds() / 1e6
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            activity, payload = _marker_activity(e)
            if activity == ASK_ACTIVITY and payload is not None:
                ask = await _decode(converter, payload, PendingAsk)
                if isinstance(ask, PendingAsk):
                    run.asked[ask.call_id] = (ask, at)
                    run.open[ask.call_id] = ask
                    run.endings.pop(ask.call_id, None)
            elif activity == VERIFY_ACTIVITY and payload is not None:
                check = await _decode(converter, payload, ApprovalCheck)
                if isinstance(check, ApprovalCheck) and check.ok and check.call_id in run.open:
                    run.open.pop(check.call_id)
                    outcome: Outcome = "approved" if check.decision == "approve" else "denied"
                    run.endings[check.call_id] = Ending(outcome, at, check.approver, check.said)
        elif e.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            timers[e.event_id] = e
        elif e.event_type == EventType.EVENT_TYPE_TIMER_FIRED:
            started = timers.get(e.timer_fired_event_attributes.started_event_id)
            call_id = await _expiring_call(started, converter) if started is not None else None
            if call_id is not None and run.open.pop(call_id, None) is not None:
                run.endings[call_id] = Ending("expired", at)
        elif e.event_type in _CLOSED_EVENTS:
            run.ended = _CLOSED_EVENTS[e.event_type]
            run.open.clear()
    return run


async def _expiring_call(started: HistoryEvent, converter: DataConverter) -> str | None:
    """The call id an expiry timer names in its summary, if it is one."""
    if not (started.HasField("user_metadata") and started.user_metadata.HasField("summary")):
        return None
    try:
        summary = await _decode(converter, started.user_metadata.summary, str)
    except Exception:
        return None
    if not isinstance(summary, str) or not summary.startswith(EXPIRY_SUMMARY):
        return None
    parts = summary[len(EXPIRY_SUMMARY) :].split()
    return parts[0] if parts else None


@dataclass(frozen=True)
class Waiting:
    """One ask waiting for a person, as the inbox lists it."""

    ask: PendingAsk
    asked_at: float
    source: Literal["query", "history"]

    @property
    def key(self) -> tuple[str, str, str, str]:
        a = self.ask
        return (a.workflow_id, a.run_id, a.call_id, a.challenge)


class Reader:
    """Reads the asks of every waiting run.

    Args:
        client: a client with the workers' data converter (pydantic, with the codec if any).
        query_timeout: seconds to wait for a worker to answer the pending query before reading
            the run's history instead.
        limit: the most runs listed at once.
    """

    def __init__(self, client: Client, *, query_timeout: float = 2.0, limit: int = 500) -> None:
        self.client = client
        self.query_timeout = query_timeout
        self.limit = limit
        self._asked_at: dict[tuple[str, str, str, str], float] = {}
        self._no_worker: dict[str, float] = {}
        """Runs whose worker did not answer, and until when to read their history instead."""
        self._gate = asyncio.Semaphore(8)

    async def waiting_runs(self) -> list[tuple[str, str]]:
        """(workflow id, run id) of every running workflow with an ask open."""
        query = f"{SA_PENDING} > 0 AND ExecutionStatus = 'Running'"
        found = []
        async for wf in self.client.list_workflows(query, limit=self.limit):
            found.append((wf.id, wf.run_id or ""))
        return found

    async def asks_of(self, workflow_id: str, run_id: str = "") -> list[Waiting]:
        """The open asks of one run: from its worker if one answers, else from history."""
        handle = self.client.get_workflow_handle(workflow_id, run_id=run_id or None)
        async with self._gate:
            if self._no_worker.get(run_id or workflow_id, 0.0) < time.monotonic():
                try:
                    asks = await handle.query(
                        PENDING_QUERY,
                        result_type=list[PendingAsk],
                        rpc_timeout=timedelta(seconds=self.query_timeout),
                    )
                except Exception:
                    self._remember_no_worker(run_id or workflow_id)
                else:
                    return [await self._dated(handle, a) for a in asks]
            run = await self.history(handle)
        now = time.time()
        return [
            Waiting(a, run.asked[a.call_id][1], "history")
            for a in run.open.values()
            if a.expires_at > now
        ]

    def _remember_no_worker(self, key: str) -> None:
        now = time.monotonic()
        if len(self._no_worker) >= MAX_REMEMBERED:  # bounded whatever ids readers ask about
            self._no_worker = {k: t for k, t in self._no_worker.items() if t > now}
            while len(self._no_worker) >= MAX_REMEMBERED:
                del self._no_worker[next(iter(self._no_worker))]
        self._no_worker[key] = now + 30.0

    async def history(self, handle: WorkflowHandle[Any, Any]) -> RunHistory:
        events = [e async for e in handle.fetch_history_events()]
        return await read_history(events, self.client.data_converter)

    async def _dated(self, handle: WorkflowHandle[Any, Any], ask: PendingAsk) -> Waiting:
        """The ask with the time it was recorded (read from history once per ask)."""
        w = Waiting(ask, 0.0, "query")
        when = self._asked_at.get(w.key)
        if when is None:
            try:
                run = await self.history(handle)
                when = run.asked[ask.call_id][1] if ask.call_id in run.asked else time.time()
            except Exception:
                when = time.time()
            self._asked_at[w.key] = when
            if len(self._asked_at) > 10_000:
                self._asked_at.pop(next(iter(self._asked_at)))
        return Waiting(ask, when, "query")

    async def scan(self) -> tuple[list[Waiting], dict[str, str]]:
        """Every open ask, newest first, and the runs that could not be read (workflow id:
        the problem, one line)."""
        runs = await self.waiting_runs()
        results = await asyncio.gather(
            *(self.asks_of(wid, rid) for wid, rid in runs), return_exceptions=True
        )
        asks: list[Waiting] = []
        problems: dict[str, str] = {}
        for (wid, _), r in zip(runs, results, strict=True):
            if isinstance(r, BaseException):
                problems[wid] = f"{type(r).__name__}: {str(r)[:200]}"
            else:
                asks.extend(r)
        asks.sort(key=lambda w: (w.asked_at, w.ask.workflow_id, w.ask.call_id), reverse=True)
        return asks, problems

    async def ending(self, w: Waiting) -> Ending:
        """Why an ask that was listed is listed no more."""
        handle = self.client.get_workflow_handle(w.ask.workflow_id, run_id=w.ask.run_id or None)
        now = time.time()
        try:
            run = await self.history(handle)
        except Exception:
            run = RunHistory()
        found = run.endings.get(w.ask.call_id)
        if found is not None:
            return found
        if w.ask.expires_at <= now:
            return Ending("expired", now)
        if run.ended is not None:
            return Ending("ended", now, detail=run.ended)
        return Ending("gone", now)
