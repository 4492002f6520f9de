"""What a step may write of a pass: a replacement the workflow can read back, findings bounded.

Shared by the worker's steps that carry a pass's verdicts beside a value (a tool's step, a model
step, an inline check): a guardrail's rewrite nested too deep refuses instead, and a verdict keeps
its first :data:`DETECTIONS_KEPT` findings and one more saying how many were left out.
"""

from __future__ import annotations

from ._bounds import too_deep
from ._types import Detection, PassResult, Verdict

DETECTIONS_KEPT = 100
"""Findings a verdict of a tool's step keeps when the step's output would be too large (the
first ones, and one more saying how many were left out)."""


def recordable(r: PassResult) -> PassResult:
    """``r`` as a step may write it: a replacement nested too deep for the workflow to read
    back (a guardrail's rewrite) refuses instead, and findings are bounded."""
    if r.replaced:
        deep = too_deep(r.value, f"the value {r.verdict.by or 'a guardrail'} replaced it with")
        if deep is not None:
            v = Verdict(
                action="deny",
                outcome="partial",
                by="duraguard",
                check="duraguard.depth",
                reason=deep,
                detections=(Detection(rule="duraguard.depth"),),
            )
            return r.model_copy(
                update={
                    "verdict": v,
                    "verdicts": (*r.verdicts, v),
                    "value": None,
                    "replaced": False,
                }
            )
    return fewer_findings(r)


def _over(v: Verdict) -> bool:
    n = len(v.detections)
    return n > DETECTIONS_KEPT and not (
        n == DETECTIONS_KEPT + 1 and v.detections[-1].rule == TRUNCATED
    )


def fewer_findings(r: PassResult) -> PassResult:
    """``r`` with at most :data:`DETECTIONS_KEPT` findings a verdict (and one more saying how
    many were left out), for a step whose output carries a value beside them."""
    if not any(_over(v) for v in r.verdicts):
        return r
    verdicts = tuple(_fewer(v) for v in r.verdicts)
    decided = next((v for v in verdicts if v.by == r.verdict.by), _fewer(r.verdict))
    return r.model_copy(update={"verdicts": verdicts, "verdict": decided})


TRUNCATED = "detections.truncated"


def _fewer(v: Verdict) -> Verdict:
    if not _over(v):
        return v
    left = len(v.detections) - DETECTIONS_KEPT
    note = Detection(rule=TRUNCATED, detail=f"{left} more findings not recorded")
    return v.model_copy(update={"detections": (*v.detections[:DETECTIONS_KEPT], note)})


__all__ = ["DETECTIONS_KEPT", "TRUNCATED", "fewer_findings", "recordable"]
