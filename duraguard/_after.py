"""After a call: what its tool returned, judged and recorded once.

* :func:`run_tool` runs duraguard's own tool activity for a call that may run (its result is
  judged inside the same step) and records what came of it: :func:`after_output` for a step
  that returned, :func:`after_failure` for one that failed;
* :func:`after_call` is the seam for any loop: it settles the budget holds of the call, judges
  a result nobody judged yet (an adapter's tool) and records the call once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from pydantic_core import to_jsonable_python
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as StepTimeout

from ._bounds import too_deep
from ._outcome import CallGate, CallOptions, CallOutcome, Refusal
from ._outside_keys import NOTED_ON_THE_WORKER, RestRead
from ._pass import recorded_pass
from ._patches import OUTSIDE_ON_WORKER, REST_BOUND
from ._provenance import clipped
from ._rest_flags import READ_REST_ACTIVITY, RestFlags, RestRequest, rest_basis
from ._result_keys import ResultKeys
from ._state import SessionState
from ._types import NotJSON, PassResult, Subject, canonical_json
from ._wire import ToolInvocation, ToolOutput
from ._workings import day_of
from .budget import settle
from .errors import BadToolArguments, ConfigurationError, ResultNotRecorded
from .guardrail import GuardrailSpec

REST_TIMEOUT = timedelta(seconds=60)
MAX_REST_READ_CHARS = 8 * 1024 * 1024
"""The largest adapter result (characters of its canonical JSON) whose unread rest is read for
its flags. A larger one is flagged unread (fails closed): reading it could outlast
:data:`REST_TIMEOUT`, whose attempts then pile up in threads nothing can stop, or take the
worker's memory, and a worker killed mid-reading starts the local activity's attempts again on
the next one, so "three attempts, then flagged" would never be reached. duraguard's own tool
steps refuse results past ``MAX_RESULT_BYTES`` (1 MB) before this."""
"""How long the worker may read one result's unread rest (about a second a megabyte)."""


def _jsonable(result: Any) -> tuple[Any, str | None]:
    deep = too_deep(result, "the tool's result")
    try:
        value = None if deep else to_jsonable_python(result)
        deep = deep or too_deep(value, "the tool's result")
        if deep is None:
            canonical_json(value)
            return value, None
    except (NotJSON, ValueError, TypeError, RecursionError) as err:
        return None, f"the tool's result cannot be recorded as JSON ({err})"
    return None, f"{deep}; it is not recorded"


async def after_call(
    session: SessionState,
    gate: CallGate,
    result: Any,
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
    *,
    ok: bool = True,
    error: str | None = None,
    labels: tuple[str, ...] = (),
    judged: PassResult | None = None,
    recorded: bool = False,
    took_effect: bool = False,
    keys: ResultKeys | None = None,
    kept: bool = False,
) -> CallOutcome:
    """The tool ran (or failed): settle what its checks held, judge its result (unless it was
    judged inside the tool's own step), and record the call once. ``recorded``: the result came
    out of duraguard's own tool step, which made it plain JSON already. ``took_effect``: the
    call failed after its effect happened (its result could not be recorded, or it timed out),
    so what it held is spent, not given back. ``keys``: the result's keys as duraguard's tool
    step worked them out (noted where they were worked out on what the model reads). ``kept``:
    the step kept what it returned in the conversation store (as the model reads it)."""
    if not gate.runs:
        raise ConfigurationError(
            f"call {gate.call_id} ({gate.tool}) was refused; it has no after_call (its outcome is "
            "gate.outcome())"
        )
    value, problem = _jsonable(result) if ok and not recorded else (result, None)
    # A result that is not JSON still came from a tool that ran: its effect counts.
    await settle(gate.held, ok=ok or took_effect)
    if problem is not None:
        ok, error, value = False, problem, None
    base = CallOutcome(
        call_id=gate.call_id,
        tool=gate.tool,
        args=gate.args,
        ran=True,
        result=value if ok else {"error": f"tool {gate.tool!r} failed: {error}"},
        verdict=gate.verdict,
        approver=gate.approver,
        error=None if ok else error,
        labels=labels,
    )
    if ok and judged is None and any(s.applies_to("tool-result") for s in guardrails):
        judged = await _judge_result(session, gate, value, guardrails, opts)
        kept = False  # judged here: what the model reads may not be what the step kept
    outcome = _shown(session, base, judged)
    if kept and ok and not outcome.refusal:
        outcome = replace(outcome, kept=True)
    bail = isinstance(outcome.result, dict) and outcome.result.get("bail") is True
    outcome = replace(outcome, bail=bail and not outcome.halted)
    if keys is not None and keys.rest is not None and session.features.level < 6:
        keys = keys.model_copy(update={"rest": None})  # read in workflow code, as the run did
    elif ok and outcome.ran:
        keys = await _rest_read(session, outcome, keys)
    session.record(outcome, compensation_of=gate.compensation_of, keys=keys if ok else None)
    return outcome


async def _judge_result(
    session: SessionState,
    gate: CallGate,
    value: Any,
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
) -> PassResult:
    """The tool-result pass, for a tool duraguard did not run itself (an adapter's)."""
    subject = Subject(
        placement="tool-result",
        value=value,
        tool=gate.tool,
        call_id=gate.call_id,
        context=session.context(opts.agent),
    )
    (judged,) = await recorded_pass(
        session, guardrails, [subject], purpose="tool-result", mode=opts.mode
    )
    return judged


def _shown(session: SessionState, base: CallOutcome, judged: PassResult | None) -> CallOutcome:
    """What the model reads of a result its checks judged: refused, replaced, or as it was."""
    if judged is None:
        return base
    session.note_pass(judged)
    v = judged.verdict
    if judged.tripped:
        # It ran (its step stays on the record); what it returned does not reach the model.
        why = Refusal.of(v, base.tool)
        return replace(
            base, result=why.for_model(), verdict=v, halted=v.action == "halt", refusal=why
        )
    if judged.replaced:
        return replace(base, result=judged.value)
    return base


async def run_tool(
    session: SessionState,
    gate: CallGate,
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
) -> CallOutcome:
    """Run duraguard's own tool activity for a call that may run; its result is judged inside
    the same step (a masked value never reaches history)."""
    result_specs = tuple(s for s in guardrails if s.applies_to("tool-result"))
    try:
        output: ToolOutput = await workflow.execute_activity(
            gate.tool,
            ToolInvocation(
                call_id=gate.call_id,
                args=gate.args,
                context=session.tool_context(opts.agent),
                idempotency_key=session.tool_key(gate.call_id, gate.idempotency_key),
                result_guardrails=result_specs,
                agent=opts.agent,
                result_keys=session.result_keys(),
                rest=session.rest(),
                keep=opts.keep,
            ),
            start_to_close_timeout=opts.tool_timeout,
            retry_policy=RetryPolicy(
                maximum_attempts=opts.tool_attempts,
                non_retryable_error_types=[BadToolArguments.type_name, ResultNotRecorded.type_name],
            ),
            activity_id=gate.call_id,
            summary=f"tool {gate.tool}",
            result_type=ToolOutput,
        )
    except ActivityError as err:
        return await after_failure(session, gate, guardrails, opts, err)
    return await after_output(session, gate, output, guardrails, opts)


async def _rest_read(
    session: SessionState, outcome: CallOutcome, keys: ResultKeys | None
) -> ResultKeys | None:
    """``keys`` with the flags of the result's unread rest, read on the worker by a local
    activity (:mod:`duraguard._rest_reader`) where no step read them, the result is too large
    to note whole and may be noted as outside content (labelled, or outside content has entered
    the session), in a run that started with :data:`~duraguard._patches.REST_IN_STEPS`: the
    workflow would otherwise read about a second a megabyte itself. The notes as outside
    content of a labelled result, or of one whose call was given values from outside content,
    are worked out there too (:mod:`duraguard._outside_keys`); for such a result noted whole but
    large, in a run that asks :data:`~duraguard._patches.OUTSIDE_ON_WORKER`, the local activity
    runs for them alone. A step that fails flags the content (fails closed)."""
    if session.features.level < 6 or (keys is not None and keys.rest is not None):
        return keys
    result = outcome.result
    if keys is not None and keys.outside is not None:
        return keys  # noted by its step
    sources = session.ledger.sources
    if not (outcome.labels or sources.outside_seen()):
        return keys
    try:
        written = canonical_json(result)
    except (TypeError, ValueError):
        return keys  # not JSON: the workflow reads it (and records it as not JSON)
    whole = clipped(result)[1]
    if whole and len(written) < NOTED_ON_THE_WORKER:
        return keys  # small: noted in workflow code, whatever it is
    args = outcome.args if isinstance(outcome.args, dict) else {"_": outcome.args}
    outside = bool(outcome.labels) or sources.tainted(args)  # read as outside content
    if whole and not (outside and workflow.patched(OUTSIDE_ON_WORKER)):
        return keys  # trusted, or a run from before the patch: noted in workflow code
    unread = RestFlags(
        flags=("instructs", "to-agent"), of=rest_basis(hashlib.sha256(written.encode()).hexdigest())
    )
    if not whole and len(written) > MAX_REST_READ_CHARS and workflow.patched(REST_BOUND):
        return _with_rest(keys, unread)
    request = RestRequest(value=result)
    if outside:  # noted as outside content there too, with its call's arguments
        request = RestRequest(value=result, args=args, day=day_of(session.now()))
    try:
        read: RestFlags = await workflow.execute_local_activity(
            READ_REST_ACTIVITY,
            request,
            result_type=RestRead,
            start_to_close_timeout=REST_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=3),
            summary=f"duraguard: read the rest of {outcome.tool}'s result",
        )
    except (ActivityError, ApplicationError, StepTimeout):  # a local activity's failure
        if whole:
            return keys  # nothing unread: the workflow notes it itself
        read = unread
    return _with_rest(keys, read)


def _with_rest(keys: ResultKeys | None, read: RestFlags) -> ResultKeys:
    outside = read.outside if isinstance(read, RestRead) else None
    rest = RestFlags(flags=read.flags, of=read.of) if read.of else None  # None: read whole
    if keys is not None:
        return keys.model_copy(update={"rest": rest, "outside": outside or keys.outside})
    return ResultKeys(basis="", rest=rest, outside=outside)


async def after_failure(
    session: SessionState,
    gate: CallGate,
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
    err: ActivityError,
) -> CallOutcome:
    """Record a call whose tool step failed."""
    cause = err.cause
    error = str(cause.message if isinstance(cause, ApplicationError) else cause or err)
    # The tool raised: it says it failed, and what it held goes back. Its result could not be
    # recorded, or it timed out: its effect happened or may have, and what it held is spent (a
    # budget is never overspent on a guess).
    raised = isinstance(cause, ApplicationError) and cause.type != ResultNotRecorded.type_name
    return await after_call(
        session, gate, None, guardrails, opts, ok=False, error=error, took_effect=not raised
    )


async def after_output(
    session: SessionState,
    gate: CallGate,
    output: ToolOutput,
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
) -> CallOutcome:
    """Record a call from what duraguard's own tool step returned (its result judged in it)."""
    return await after_call(
        session,
        gate,
        output.result,
        guardrails,
        opts,
        labels=output.labels,
        judged=output.judged,
        recorded=True,
        keys=output.noted,
        kept=output.kept,
    )
