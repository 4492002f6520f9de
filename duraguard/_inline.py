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
from dataclasses import dataclass
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from ._after import after_failure, after_output, run_tool
from ._judge import call_subjects, judge_calls
from ._outcome import CallGate, CallOptions, CallOutcome, Prejudged
from ._pass import judging_names, plan_pass, specs_ref
from ._settle import settle_call
from ._state import SessionState
from ._types import Context, SessionView, one_call
from ._wire import ToolInvocation, ToolOutput, shown_digest
from .errors import BadToolArguments, GuardrailFailed, ResultNotRecorded
from .guardrail import GuardrailSpec

MAX_SHOWN = 4096
"""Entry hashes a run remembers as shown (past it, it starts again: every entry in full)."""


@dataclass(frozen=True)
class _Unshown:
    """A session view as an inline step is sent it: without what a step of this run showed."""

    view: SessionView | None
    at: tuple[int, ...] = ()
    """The indices of the entries left out."""
    digest: str = ""
    """The digest of their hashes, which binds the worker to those very entries."""
    turns: str = ""
    """The digest of the person's turns, where they were left out too."""


def _unshown(session: SessionState, view: SessionView | None) -> _Unshown:
    """``view`` without the entries and the turn shown before."""
    if view is None:
        return _Unshown(None)
    update: dict[str, Any] = {}
    at: tuple[int, ...] = ()
    digest = turns = ""
    shown = session.shown_entries
    if shown:
        left = tuple(e for e in view.entries if e.entry_hash not in shown)
        if len(left) != len(view.entries):
            taken = [e for e in view.entries if e.entry_hash in shown]
            at, digest = tuple(e.index for e in taken), shown_digest([e.entry_hash for e in taken])
            update["entries"] = left
    if view.turns:
        said = session.turns_digest(view.turns)
        if said in session.shown_turns:
            turns = said
            update["turns"] = ()
    return _Unshown(view.model_copy(update=update) if update else view, at, digest, turns)


def _note_shown(session: SessionState, view: SessionView) -> None:
    shown = session.shown_entries
    if len(shown) > MAX_SHOWN:
        shown.clear()
    shown.update(e.entry_hash for e in view.entries)
    if view.turns:
        if len(session.shown_turns) >= MAX_SHOWN:
            session.shown_turns.clear()
        session.shown_turns.add(session.turns_digest(view.turns))


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
    cid: str,
    tool: str,
    args: dict[str, Any],
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
    subjects, _ = call_subjects(session, [(cid, tool, args)], specs, opts, ahead)
    planned = plan_pass(session, specs, subjects, purpose="tool-args", mode="inline")
    if (
        len(planned.steps) != 1
        or planned.steps[0].remote
        or any(r is not None for r in planned.out)
    ):
        return None
    step = planned.steps[0]
    own, *rest = step.request.subjects
    unshown = _unshown(session, own.session)
    view = unshown.view
    # The arguments and the context travel once, in the invocation; the worker fills them in.
    bare = own.model_copy(update={"value": None, "session": view, "context": Context()})
    # The guardrails travel in full once per run, and by reference after.
    ref = specs_ref(step.request.guardrails)
    by_ref = ref in session.shown_specs
    update: dict[str, Any] = {"subjects": (bare, *rest)}
    if by_ref:
        update["guardrails"] = ()
    request = step.request.model_copy(update=update)
    result_specs = tuple(s for s in specs if s.applies_to("tool-result"))
    judging = step.request.guardrails
    by_check = tuple(judging.index(s) for s in result_specs if s in judging)
    if len(by_check) != len(result_specs):
        by_check = ()
    names = judging_names(step.request.guardrails, subjects)
    try:
        output: ToolOutput = await workflow.execute_activity(
            tool,
            ToolInvocation(
                call_id=cid,
                args=args,
                context=session.tool_context(opts.agent),
                # Sent: this step's activity id is not the call id, and a worker of an earlier
                # version, taking the step mid-upgrade, would make the key from the activity id.
                idempotency_key=session.idempotency_key(cid),
                result_guardrails=() if by_check else result_specs,
                agent=opts.agent,
                check=request,
                shown_at=unshown.at,
                shown_digest=unshown.digest,
                shown_turns=unshown.turns,
                results_by_check=by_check,
                guardrails_ref=ref if by_ref else "",
            ),
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
            activity_id=f"{cid}.{step.bound}",
            summary=f"tool {tool} [{names}]",
            result_type=ToolOutput,
        )
    except ActivityError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.type == GuardrailFailed.type_name:
            raise  # a guardrail failed: as it would in a pass of its own
        return await _failed(session, cid, tool, args, specs, opts, err, pre)
    if not output.checked:
        # The worker could not judge: nothing this run sent is taken as seen now.
        session.shown_entries.clear()
        session.shown_specs.clear()
        session.shown_turns.clear()
        return None
    if len(session.shown_specs) >= MAX_SHOWN:
        session.shown_specs.clear()
    session.shown_specs.add(ref)
    if view is not None:
        _note_shown(session, view)
    judged = one_call(output.checked)
    if first is not None:
        judged = first.then(judged)
    gate = await settle_call(session, cid, tool, args, judged, specs, opts, False)
    if output.ran and gate.runs and not judged.tripped:
        return gate, await after_output(session, gate, output, specs, opts)
    if gate.runs:
        # A person said yes (and the pass with the grant let it): the tool runs now.
        return gate, await run_tool(session, gate, specs, opts)
    return gate, gate.outcome()


async def _failed(
    session: SessionState,
    cid: str,
    tool: str,
    args: dict[str, Any],
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    err: ActivityError,
    pre: Prejudged | None,
) -> tuple[CallGate, CallOutcome]:
    """The tool's step failed, and with it the verdicts it held: they are judged again in a pass
    of their own (the same guardrails, the same arguments), then the failure is recorded as
    :func:`duraguard._after.after_failure` records one."""
    (judged,) = await judge_calls(session, [(cid, tool, args)], specs, opts, pre)
    asked = judged.verdict.action == "approve"
    gate = await settle_call(session, cid, tool, args, judged, specs, opts, False)
    if not gate.runs:
        return gate, gate.outcome()
    if asked:
        # The step failed before its check could ask (a worker that could not read it): the
        # person said yes, and the tool runs now.
        return gate, await run_tool(session, gate, specs, opts)
    return gate, await after_failure(session, gate, specs, opts, err)
