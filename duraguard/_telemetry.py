"""Verdicts on the tracing span of the step that judged them, where OpenTelemetry is configured.

With Temporal's tracing (``temporalio.contrib.opentelemetry``'s ``TracingInterceptor``) every
activity runs in a ``RunActivity:<name>`` span; with the ``OpenTelemetryPlugin`` that span
exists when ``add_temporal_spans=True``, and otherwise the verdict lands on whatever span is
current in the activity. A guardrail pass runs in the ``duraguard.check`` activity (local or
regular) or inside the tool's own activity (its arguments, where the call is judged inline, and
its result); this module puts the verdict on that span: its action, the guardrail that decided
and its check, the outcome. Never the value judged, never the reason: those stay in the step's payloads, which an encryption codec can
protect, while spans go to whatever collector the operator runs.

Without OpenTelemetry installed, or with no span recording, it does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from ._types import PassResult, Verdict

try:
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - the 'otel' extra is not installed
    _trace = None  # type: ignore[assignment]

SEVERITY = ("allow", "observe", "rewrite", "mask", "approve", "deny", "halt")
"""Which verdict of a pass over several subjects the span names: the most severe."""
OUTCOMES = ("complete", "partial", "failed")
EVENT = "duraguard.verdict"


def _attributes(v: Verdict) -> dict[str, Any]:
    """What a span may say of a verdict: no value, no reason."""
    found = {
        "duraguard.action": v.action,
        "duraguard.outcome": v.outcome,
        "duraguard.guardrail": v.by,
        "duraguard.check": v.check,
    }
    return {k: x for k, x in found.items() if x is not None}


_ON_SPAN: ContextVar[tuple[int, tuple[Verdict, ...], tuple[str, ...]] | None] = ContextVar(
    "duraguard_span_passes", default=None
)
"""The passes already put on the current step's span: a tool step judged inline records two
(its arguments, then its result), and the span names the most severe of both."""


def record_pass(purpose: str, results: Sequence[PassResult]) -> None:
    """Put the verdicts of one pass on the current span (the step's own)."""
    if _trace is None or not results:
        return
    span = _trace.get_current_span()
    if not span.is_recording():
        return
    verdicts = tuple(r.verdict for r in results)
    purposes: tuple[str, ...] = (purpose,)
    span_id = span.get_span_context().span_id
    before = _ON_SPAN.get()
    if before is not None and before[0] == span_id:
        verdicts, purposes = (*before[1], *verdicts), (*before[2], purpose)
    _ON_SPAN.set((span_id, verdicts, purposes))
    decided = max(verdicts, key=lambda v: SEVERITY.index(v.action))
    worst = max((v.outcome for v in verdicts), key=OUTCOMES.index)
    span.set_attributes(
        {
            **_attributes(decided),
            "duraguard.outcome": worst,
            "duraguard.purpose": ",".join(purposes),
            "duraguard.subjects": len(verdicts),
        }
    )
    for r in results:
        where = {"duraguard.placement": r.placement, "duraguard.tool": r.tool}
        where |= {"duraguard.call_id": r.call_id}
        span.add_event(
            EVENT,
            {**_attributes(r.verdict), **{k: x for k, x in where.items() if x is not None}},
        )
