"""The by-reference protocol, read from a run's history: how many steps named what they carry
by reference (the guardrails, the session's entries, the person's turns), how many of those a
worker answered "missing" (it had not seen them: the workflow then sends them in full), and the
bytes the run's history holds.

A step names things by reference where its input has ``guardrails_ref`` (a tool step judging its
arguments inline, or a model step judging the prompt, the answer or the calls it proposes),
``shown_at`` / ``shown_turns`` (session entries and turns a step of the run showed before) or
``kept`` (a model step sent the digests of tool results their steps kept in the store). A miss
is a tool step's ``missing`` or a model step's ``answer_missing`` / ``prompt_missing`` /
``calls_missing`` / ``results_missing`` on such a step.
Reads plain JSON payloads (no codec), as the benchmarks and the fleet suite write them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

MODEL = "duraguard.model"


@dataclass
class ByRef:
    """What the protocol did over one or more runs."""

    steps: int = 0
    """Activity steps scheduled (every kind)."""
    by_ref: int = 0
    """Steps that named something by reference."""
    misses: int = 0
    """Of those, the ones whose worker had not seen it."""
    history_bytes: int = 0
    missed_bytes: int = 0
    """Bytes of the missed steps' inputs and answers (spent for nothing: sent again in full)."""
    workers: set[str] = field(default_factory=set)

    @property
    def miss_rate(self) -> float:
        return self.misses / self.by_ref if self.by_ref else 0.0

    def __iadd__(self, other: ByRef) -> ByRef:
        self.steps += other.steps
        self.by_ref += other.by_ref
        self.misses += other.misses
        self.history_bytes += other.history_bytes
        self.missed_bytes += other.missed_bytes
        self.workers |= other.workers
        return self


def _json(payloads: Any) -> Any:
    if not payloads.payloads:
        return None
    try:
        return json.loads(payloads.payloads[0].data)
    except ValueError:
        return None


def _names_by_ref(kind: str, value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if kind == MODEL:
        checks = (value.get("answer_check"), value.get("prompt_check"), value.get("call_check"))
        return bool(value.get("kept")) or any(
            isinstance(c, dict) and c.get("guardrails_ref") for c in checks
        )
    return bool(value.get("guardrails_ref") or value.get("shown_at") or value.get("shown_turns"))


def _missed(kind: str, value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if kind == MODEL:
        flags = ("answer_missing", "prompt_missing", "calls_missing", "results_missing")
        return any(value.get(f) for f in flags)
    return bool(value.get("missing"))


def by_reference(events: Iterable[HistoryEvent]) -> ByRef:
    """The protocol's counts over one run's history events."""
    out = ByRef()
    scheduled: dict[int, tuple[str, bool, int]] = {}
    for e in events:
        out.history_bytes += e.ByteSize()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            a = e.activity_task_scheduled_event_attributes
            named = _names_by_ref(a.activity_type.name, _json(a.input))
            scheduled[e.event_id] = (a.activity_type.name, named, a.input.ByteSize())
            out.steps += 1
            out.by_ref += named
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            out.workers.add(e.activity_task_started_event_attributes.identity)
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            c = e.activity_task_completed_event_attributes
            kind, named, size = scheduled.get(c.scheduled_event_id, ("", False, 0))
            if named and _missed(kind, _json(c.result)):
                out.misses += 1
                out.missed_bytes += size + c.result.ByteSize()
    return out
