"""One recorded guardrail pass: the step that judges subjects, and whose verdict replay reads.

Nothing here decides a verdict. The ``duraguard.check`` activity (local, or regular where a
guardrail calls out) judges; this module builds its input, binds it to what it judges, and
keeps it schedulable:

* the step's activity id carries a digest of the guardrails and subjects, so replay of changed
  code that judges something else fails loudly instead of reusing a verdict;
* a value larger than the configured limit is refused here, in workflow code, before any step
  is scheduled (a step's input is at most 2 MiB; a step that cannot be scheduled would wedge
  the run), and a batch too large for one step is split into several;
* a subject carries a session view only where a guardrail of the pass reads one; while
  replaying, the view is withheld (a step's input is not sent again, and building it would
  work out the session's provenance index call after call). A local step whose record was lost
  does run after replay with what it was given: it judges nothing, and is sent again (its id
  suffixed ``.v``) with the views built then.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from ._bounds import too_deep
from ._byref import specs_json
from ._byref import specs_ref as specs_ref
from ._state import SessionState
from ._types import (
    Detection,
    NotJSON,
    PassResult,
    Subject,
    Verdict,
    canonical_json,
    subject_digest,
)
from ._wire import CHECK_ACTIVITY, CheckRequest, CheckResponse
from .errors import GuardrailFailed
from .guardrail import GuardrailSpec

STEP_BUDGET = 1_572_864
"""Bytes of judged values one step may carry (1.5 MiB of the 2 MiB payload limit)."""
NOT_RETRIED = [GuardrailFailed.type_name]


def _allow(s: Subject) -> PassResult:
    return PassResult(
        verdict=Verdict.allow(), placement=s.placement, tool=s.tool, call_id=s.call_id
    )


def _refused(s: Subject, reason: str, check: str) -> PassResult:
    v = Verdict(
        action="deny",
        outcome="partial",
        by="duraguard",
        check=check,
        reason=reason,
        detections=(Detection(rule=check),),
    )
    return PassResult(
        verdict=v, verdicts=(v,), placement=s.placement, tool=s.tool, call_id=s.call_id
    )


def _measure(session: SessionState, s: Subject) -> tuple[int, str, PassResult | None]:
    """The subject's size and digest, from one canonical JSON of its value; or the refusal it
    gets before any step."""
    what = f"the arguments of {s.tool!r}" if s.tool else f"the {s.placement} value"
    deep = too_deep(s.value, what)
    if deep is not None:
        return 0, "", _refused(s, deep, "duraguard.depth")
    try:
        text = canonical_json(s.value)
    except NotJSON as err:
        return (
            0,
            "",
            _refused(s, f"the {s.placement} value is not plain JSON: {err}", "duraguard.not-json"),
        )
    size = len(text.encode())
    limit = session.config.max_subject_bytes
    if size > limit:
        return (
            size,
            "",
            _refused(
                s,
                f"{what} are {size:,} bytes, over the {limit:,}-byte limit of one check "
                "(DuraguardPlugin(max_subject_bytes=...)); send less, or pass a reference to it",
                "duraguard.size-limit",
            ),
        )
    return size, subject_digest(s.placement, s.tool, text), None


@dataclass(frozen=True)
class PlannedStep:
    """One step of a pass, ready to schedule: which subjects it judges and how."""

    indices: tuple[int, ...]
    request: CheckRequest
    activity_id: str
    bound: str
    """A digest of the guardrails and the subjects' values: what the step's verdicts are for."""
    summary: str
    timeout: timedelta
    remote: bool
    viewed: Callable[[], CheckRequest] | None = None
    """The request with the session views withheld from it (made while replaying) built."""


@dataclass
class PlannedPass:
    """A pass worked out in workflow code: refusals made before any step, and the steps."""

    out: list[PassResult | None]
    steps: list[PlannedStep] = field(default_factory=list)


def plan_pass(
    session: SessionState,
    guardrails: Sequence[GuardrailSpec],
    subjects: Sequence[Subject],
    *,
    purpose: str,
    mode: str | None = None,
) -> PlannedPass:
    """The steps that judge ``subjects`` (none where no guardrail applies and no admission is
    due: every subject is then allowed), and the refusals due before any step."""
    placements = {s.placement for s in subjects}
    gated = bool(placements & {"admission", "tool-args"}) and (
        session.config.admission or any(g.applies_to("admission") for g in guardrails)
    )
    if gated:
        # Admission runs inside the same step: the worker adds the tool's own rules and the
        # registry's guardrails, and needs the admission specs too.
        placements.add("admission")
    specs = tuple(g for g in guardrails if any(g.applies_to(p) for p in placements))
    if all(_judged_before(g, subjects) for g in specs):
        # Every guardrail judged these values already (where the model step recorded them).
        # Otherwise they stay in the list (the step skips them), so that a tool's step can
        # name its result's guardrails by their positions in it.
        specs = ()
    if not specs and not gated:
        return PlannedPass(out=[_allow(s) for s in subjects])
    planned = PlannedPass(out=[None] * len(subjects))
    batch: list[tuple[int, Subject, str]] = []
    used = 0
    batches: list[list[tuple[int, Subject, str]]] = []
    for i, s in enumerate(subjects):
        size, bound, refused = _measure(session, s)
        if refused is not None:
            planned.out[i] = refused
            continue
        if batch and used + size > STEP_BUDGET:
            batches.append(batch)
            batch, used = [], 0
        batch.append((i, s, bound))
        used += size
    if batch:
        batches.append(batch)
    for n, step in enumerate(batches):
        part = f"{purpose}.{n}" if len(batches) > 1 else purpose
        planned.steps.append(
            _plan_step(
                session,
                specs,
                [s for _, s, _ in step],
                [d for _, _, d in step],
                purpose=part,
                mode=mode,
                indices=tuple(i for i, _, _ in step),
            )
        )
    return planned


async def run_planned(planned: PlannedPass) -> list[PassResult]:
    """Schedule the planned steps; one result per subject, in order."""
    out = list(planned.out)
    for step in planned.steps:
        results = await _execute(step)
        for i, r in zip(step.indices, results, strict=True):
            out[i] = r
    return [r for r in out if r is not None]


async def recorded_pass(
    session: SessionState,
    guardrails: Sequence[GuardrailSpec],
    subjects: Sequence[Subject],
    *,
    purpose: str,
    mode: str | None = None,
) -> list[PassResult]:
    """Judge each subject with ``guardrails`` in as few recorded steps as fit (one, usually).

    Returns one :class:`PassResult` per subject, in order. No step is written where no
    guardrail applies (and no admission is due).
    """
    if not subjects:
        return []
    planned = plan_pass(session, guardrails, subjects, purpose=purpose, mode=mode)
    return await run_planned(planned)


def _judged_before(g: GuardrailSpec, subjects: Sequence[Subject]) -> bool:
    """Whether ``g`` judged every subject it applies to already (:attr:`Subject.prejudged`)."""
    mine = [s for s in subjects if g.applies_to(s.placement)]
    return bool(mine) and all(g.name in s.prejudged for s in mine)


def judging_names(specs: Sequence[GuardrailSpec], subjects: Sequence[Subject]) -> str:
    """How a step's summary names what it judges: its guardrails, but those that judged the
    values already (they are skipped); ``admission`` for a step with none."""
    return ", ".join(g.name for g in specs if not _judged_before(g, subjects)) or "admission"


def replacing(specs: Sequence[GuardrailSpec], subjects: Sequence[Subject]) -> bool:
    """Whether a guardrail of ``specs`` may mask or rewrite a subject it has not judged yet
    (:attr:`Subject.prejudged`): the value it would hide must then not reach history, so the
    step judging it is one whose input is not recorded (a local activity)."""
    return any(
        g.may_replace and g.applies_to(s.placement) and g.name not in s.prejudged
        for g in specs
        for s in subjects
    )


def masking_prefix(specs: Sequence[GuardrailSpec], placement: str) -> tuple[GuardrailSpec, ...]:
    """The guardrails of ``specs`` that judge ``placement``, from the first through the last
    that may mask or rewrite (none where none may): what judges a value before it is recorded
    where it is first written (a model step), the rest judging it as they left it."""
    judging = [g for g in specs if g.applies_to(placement)]  # type: ignore[arg-type]
    last = max((i for i, g in enumerate(judging) if g.may_replace), default=-1)
    return tuple(judging[: last + 1])


def _plan_step(
    session: SessionState,
    specs: tuple[GuardrailSpec, ...],
    subjects: list[Subject],
    digests: list[str],
    *,
    purpose: str,
    mode: str | None,
    indices: tuple[int, ...],
) -> PlannedStep:
    mode = mode or session.config.check_mode
    remote = mode == "activity" or (mode != "local" and any(s.remote for s in specs))
    if remote and session.mask_before_history() and replacing(specs, subjects):
        remote = False  # a regular step's input is in history: what a mask hides would be too
    # canonical_json({"g": specs, "s": digests}), the specs' part worked out once per list
    both = f'{{"g":{specs_json(specs)},"s":{canonical_json(digests)}}}'
    bound = hashlib.sha256(both.encode()).hexdigest()[:12]
    first = subjects[0].call_id or f"{subjects[0].placement}-{session.counts.turn}"
    if not any(s.reads_session for s in specs) and any(s.session is not None for s in subjects):
        # The history grows with the call, not with the session: no view where none is read.
        subjects = [s.model_copy(update={"session": None}) for s in subjects]
    request = CheckRequest(
        guardrails=specs, subjects=tuple(subjects), purpose=purpose, turn=session.counts.turn
    )

    def viewed() -> CheckRequest:
        return request.model_copy(
            update={"subjects": tuple(session.viewed(s) for s in request.subjects)}
        )

    tools = sorted({s.tool for s in subjects if s.tool})
    names = judging_names(specs, subjects)
    # The guardrails' own timeouts bound the work; a few seconds more for the step itself, so a
    # step lost with its worker is retried soon, not after a long margin.
    return PlannedStep(
        indices=indices,
        request=request,
        activity_id=f"dg-{first}-{purpose}-{bound}",
        bound=bound,
        summary=f"duraguard {purpose}: {', '.join(tools) or subjects[0].placement} [{names}]",
        timeout=timedelta(seconds=sum(s.timeout for s in specs) * len(subjects) + 5),
        remote=remote,
        viewed=viewed if request.views_withheld else None,
    )


async def _execute(step: PlannedStep) -> tuple[PassResult, ...]:
    response = await _schedule(step, step.request, step.activity_id)
    if response.withheld:
        # A step made while replaying, whose record was lost (a local step that had not
        # finished when its worker went): it judged nothing, and is sent again with the views.
        if step.viewed is None:
            raise GuardrailFailed(
                f"step {step.activity_id} judged nothing: a session view was withheld from it"
            )
        response = await _schedule(step, step.viewed(), f"{step.activity_id}.v")
        if response.withheld:
            raise GuardrailFailed(
                f"step {step.activity_id} judged nothing twice: the session views were withheld"
            )
    return response.results


async def _schedule(step: PlannedStep, request: CheckRequest, activity_id: str) -> CheckResponse:
    retry = RetryPolicy(maximum_attempts=5, non_retryable_error_types=NOT_RETRIED)
    response: CheckResponse
    if step.remote:
        response = await workflow.execute_activity(
            CHECK_ACTIVITY,
            request,
            result_type=CheckResponse,
            start_to_close_timeout=step.timeout,
            retry_policy=retry,
            activity_id=activity_id,
            summary=step.summary,
        )
    else:
        response = await workflow.execute_local_activity(
            CHECK_ACTIVITY,
            request,
            result_type=CheckResponse,
            start_to_close_timeout=step.timeout,
            retry_policy=retry,
            activity_id=activity_id,
            summary=step.summary,
        )
    return response
