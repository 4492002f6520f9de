"""A call's arguments judged inside its own tool step (check mode ``auto``, the default, and
``inline``).

A recorded pass is a step of its own: on a 2-core worker a local activity costs about as much
worker CPU as the tool step beside it, whatever it judges. So a lone call whose guardrails all
run in the worker (none calls out: no budget, no classifier) is
judged by the tool's step itself, before the tool runs; the verdicts come back in the step's
output (:attr:`~duraguard._wire.ToolOutput.checked`) and replay reads them from there, as it
reads a pass's. The tool runs only on a verdict that lets it: a refusal or an ask comes back
with the tool not run, and is settled as a pass's would be (an ask parks on a person, and the
yes is judged again in a pass of its own before the tool runs).

What changes with it: the verdict is recorded with the tool's result, in one step, so a check is
judged again when the tool's step is retried (the guardrails it takes are the ones that decide
the same way every time); and it runs on the worker that runs the tool. Where the step fails
(the tool raised, timed out, or its result could not be recorded) its verdicts are read from a
pass of its own, the same guardrails over the same arguments, and the failure is recorded.
``check_mode="local"`` or ``"activity"`` gives every call a pass of its own instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from ._after import after_failure, after_output, run_tool
from ._byref import MAX_SENT
from ._judge import call_subjects, judge_calls
from ._outcome import CallGate, CallOptions, CallOutcome, Prejudged, ProposedCall
from ._pass import PlannedStep, judging_names, plan_pass
from ._settle import settle_call
from ._state import SessionState
from ._types import Context, SessionView, one_call
from ._wire import ToolInvocation, ToolOutput
from .errors import BadToolArguments, GuardrailFailed, ResultNotRecorded
from .guardrail import GuardrailSpec

MAX_SHOWN = MAX_SENT
"""(The old name of :data:`duraguard._byref.MAX_SENT`.)"""


def asked_for(session: SessionState, opts: CallOptions) -> bool:
    """Whether a lone call is judged in its tool's step: check mode ``inline``, or ``auto`` in a
    run that started with the patch :data:`duraguard._session.INLINE_BY_DEFAULT` (the call's
    options, else the plugin's)."""
    mode = opts.mode or session.config.check_mode
    return mode == "inline" or (mode == "auto" and session.inline_by_default())


def due(session: SessionState, opts: CallOptions, calls: int) -> bool:
    """Whether a turn of ``calls`` calls is judged inline (a turn of several calls is judged in
    one pass for all of them, and a halt in one stops the others)."""
    return calls == 1 and asked_for(session, opts)


async def inline_call(
    session: SessionState,
    call: ProposedCall,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    pre: Prejudged | None = None,
) -> tuple[CallGate, CallOutcome] | None:
    """Judge and run one call in its tool's step; ``None`` where it needs a pass of its own (a
    guardrail that calls out, arguments refused before any step, a worker that judged nothing).
    ``pre``: what the model step's guardrails made of its arguments (the step judges the rest)."""
    first = pre.results[0] if pre is not None else None
    ahead = pre.names if first is not None and pre is not None else ()
    if session.mask_before_history() and any(
        g.may_replace and g.applies_to("tool-args") and g.name not in ahead for g in specs
    ):
        # A guardrail that may mask the arguments judges them before any step records them:
        # a pass of its own, whose input is not in history, not the tool's step.
        return None
    step = _lone_step(session, call, specs, opts, ahead)
    if step is None:
        return None
    invocation, view = _invocation(session, call, specs, opts, step)
    try:
        output = await _execute(call.tool, invocation, opts, step)
    except ActivityError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.type == GuardrailFailed.type_name:
            raise  # a guardrail failed: as it would in a pass of its own
        return await _failed(session, call, specs, opts, err, pre)
    if not output.checked:
        # The worker lacked something the step named: a pass judges the call, all in full.
        session.sent.forget()
        return None
    session.sent.took(specs=step.request.guardrails, view=view)
    judged = one_call(output.checked)
    if first is not None:
        judged = first.then(judged)
    gate = await settle_call(session, call, judged, specs, opts, False)
    if output.ran and gate.runs and not judged.tripped:
        return gate, await after_output(session, gate, output, specs, opts)
    if gate.runs:
        # A person said yes (and the pass with the grant let it): the tool runs now.
        return gate, await run_tool(session, gate, specs, opts)
    return gate, gate.outcome()


def _lone_step(
    session: SessionState,
    call: ProposedCall,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    ahead: tuple[str, ...],
) -> PlannedStep | None:
    """The pass over the call planned as for a step of its own: one step, local, with no
    refusal before it; ``None`` otherwise (it then gets that step)."""
    subjects, _ = call_subjects(session, [call], specs, opts, ahead)
    planned = plan_pass(session, specs, subjects, purpose="tool-args", mode="inline")
    if (
        len(planned.steps) != 1
        or planned.steps[0].remote
        or any(r is not None for r in planned.out)
    ):
        return None
    return planned.steps[0]


def _invocation(
    session: SessionState,
    call: ProposedCall,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    step: PlannedStep,
) -> tuple[ToolInvocation, SessionView | None]:
    """The tool step's input with the check inside: the arguments and the context once (the
    worker fills them in), what the run's workers were sent before by reference; and the view
    as it was sent."""
    own, *rest = step.request.subjects
    unsent = session.sent.unsent(own.session)
    bare = own.model_copy(update={"value": None, "session": unsent.view, "context": Context()})
    ref, by_ref = session.sent.by_ref(step.request.guardrails)
    update: dict[str, Any] = {"subjects": (bare, *rest)}
    if by_ref:
        update["guardrails"] = ()
    result_specs = tuple(s for s in specs if s.applies_to("tool-result"))
    judging = step.request.guardrails
    by_check = tuple(judging.index(s) for s in result_specs if s in judging)
    if len(by_check) != len(result_specs):
        by_check = ()
    invocation = ToolInvocation(
        call_id=call.id,
        args=call.args,
        context=session.tool_context(opts.agent),
        # Sent: this step's activity id is not the call id, and a worker of an earlier version,
        # taking the step mid-upgrade, would make the key from the activity id.
        idempotency_key=session.idempotency_key(call.id),
        result_guardrails=() if by_check else result_specs,
        agent=opts.agent,
        check=step.request.model_copy(update=update),
        shown_at=unsent.at,
        shown_digest=unsent.digest,
        shown_turns=unsent.turns,
        results_by_check=by_check,
        guardrails_ref=ref if by_ref else "",
        result_keys=session.result_keys(),
        rest=session.rest(),
        keep=opts.keep,
    )
    return invocation, unsent.view


async def _execute(
    tool: str, invocation: ToolInvocation, opts: CallOptions, step: PlannedStep
) -> ToolOutput:
    output: ToolOutput = await workflow.execute_activity(
        tool,
        invocation,
        start_to_close_timeout=opts.tool_timeout + step.timeout,
        retry_policy=RetryPolicy(
            maximum_attempts=opts.tool_attempts,
            non_retryable_error_types=[
                BadToolArguments.type_name,
                ResultNotRecorded.type_name,
                GuardrailFailed.type_name,
            ],
        ),
        # The digest binds the recorded verdicts to what they judged, as a pass's id does.
        activity_id=f"{invocation.call_id}.{step.bound}",
        summary=f"tool {tool} [{judging_names(step.request.guardrails, step.request.subjects)}]",
        result_type=ToolOutput,
    )
    return output


async def _failed(
    session: SessionState,
    call: ProposedCall,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    err: ActivityError,
    pre: Prejudged | None,
) -> tuple[CallGate, CallOutcome]:
    """The tool's step failed, and with it the verdicts it held: they are judged again in a pass
    of their own (the same guardrails, the same arguments), then the failure is recorded as
    :func:`duraguard._after.after_failure` records one."""
    (judged,) = await judge_calls(session, [call], specs, opts, pre)
    asked = judged.verdict.action == "approve"
    gate = await settle_call(session, call, judged, specs, opts, False)
    if not gate.runs:
        return gate, gate.outcome()
    if asked:
        # The step failed before its check could ask (a worker that could not read it): the
        # person said yes, and the tool runs now.
        return gate, await run_tool(session, gate, specs, opts)
    return gate, await after_failure(session, gate, specs, opts, err)
