"""A guarded call: judge it, act on the verdict, run it (or not), judge its result, record it.

The seams any agent loop uses (duraguard's own, or an adapter around another framework):

* :func:`before_calls` judges the calls of one model turn in one recorded pass and settles each
  verdict: a refusal comes back as a :class:`Refusal` (recorded at once: nothing will run), an
  ``approve`` parks the call on a person through the gate, and a yes is judged again with the
  person's grant (so a later guardrail, a budget, still gets its say and edits are checked);
* :func:`after_call` takes what the tool returned (judged inside the tool's own step where
  duraguard ran it), settles any budget hold and records the call once.

:func:`guarded_call` is the two around duraguard's own tool activity.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic_core import to_jsonable_python
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from ._pass import recorded_pass
from ._types import (
    REFUSING,
    Grant,
    NotJSON,
    PassResult,
    Reservation,
    Subject,
    Verdict,
    canonical_json,
)
from ._wire import ToolInvocation, ToolOutput
from .budget import reservations_of, settle
from .errors import (
    BadToolArguments,
    ConfigurationError,
    EditsRefused,
    GuardrailHalt,
    ResultNotRecorded,
)
from .guardrail import GuardrailSpec

if TYPE_CHECKING:
    from ._session import GuardSession

DEFAULT_APPROVAL_TIMEOUT = timedelta(hours=24)
MAX_ASKS_PER_CALL = 3
"""A call asked again after a yes (a rule needing another role) parks at most this often."""

RefusalKind = Literal["policy", "person", "expired", "budget", "halted"]


class Refusal(BaseModel):
    """Why a call did not run, in one shape per kind; :meth:`for_model` is what the model reads.

    A policy refusal never names a person, and a person's no never shares its shape.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: RefusalKind
    tool: str | None
    reason: str
    by: str | None = None
    """The guardrail that refused (``policy``, ``budget``, ``halted``, ``expired``)."""
    approver: str | None = None
    """The person who said no (``person`` only)."""

    def for_model(self) -> dict[str, Any]:
        if self.kind == "person":
            return {
                "approved": False,
                "tool": self.tool,
                "declined_by": self.approver,
                "reason": self.reason,
            }
        return {"valid": False, "tool": self.tool, "error": self.reason}

    @classmethod
    def of(cls, verdict: Verdict, tool: str | None) -> Refusal:
        """A guardrail's refusal (deny, or halt)."""
        return cls(
            kind="halted" if verdict.action == "halt" else "policy",
            tool=tool,
            reason=verdict.reason or f"refused by {verdict.by}",
            by=verdict.by,
        )


def refusal(tool: str, verdict: Verdict) -> dict[str, Any]:
    """The shape a policy refusal takes as the tool's result: no decider, a reason to act on."""
    return Refusal.of(verdict, tool).for_model()


@dataclass(frozen=True)
class CallOptions:
    """How tool calls are run and asked about."""

    tool_timeout: timedelta = timedelta(seconds=60)
    tool_attempts: int = 3
    approval_timeout: timedelta = DEFAULT_APPROVAL_TIMEOUT
    approval_budget: int | None = None
    """How many asks the run may make; one more is refused (``Refusal.kind == "budget"``)."""
    agent: str | None = None
    mode: str | None = None


@dataclass(frozen=True)
class CallOutcome:
    """What happened to one tool call."""

    call_id: str
    tool: str
    args: Any
    """The arguments the tool ran with (after mask/rewrite/edits), or was asked to."""
    ran: bool
    result: Any = None
    """The tool's result as the model will read it (the refusal's shape when refused)."""
    verdict: Verdict = field(default_factory=Verdict.allow)
    halted: bool = False
    approver: str | None = None
    error: str | None = None
    """Why the tool itself failed (it ran, or was attempted)."""
    bail: bool = False
    refusal: Refusal | None = None
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallGate:
    """A call after its checks: may it run, with which arguments, and if not, why not."""

    call_id: str
    tool: str
    asked: Any
    """What the model proposed."""
    args: Any
    """What may run: after mask/rewrite and a person's edits."""
    verdict: Verdict
    idempotency_key: str
    refusal: Refusal | None = None
    approver: str | None = None
    held: tuple[Reservation, ...] = ()
    agent: str | None = None
    compensation_of: int | None = None
    """The step this call reverses, where its tool is another tool's declared undo."""

    @property
    def runs(self) -> bool:
        return self.refusal is None

    @property
    def halted(self) -> bool:
        return self.refusal is not None and self.refusal.kind == "halted"

    @property
    def halted_by(self) -> str | None:
        return self.refusal.by if self.halted and self.refusal else None

    def outcome(self) -> CallOutcome:
        """The outcome of a call that does not run."""
        if self.refusal is None:
            raise ValueError(f"call {self.call_id} runs; its outcome comes from after_call")
        return CallOutcome(
            call_id=self.call_id,
            tool=self.tool,
            args=self.asked,
            ran=False,
            result=self.refusal.for_model(),
            verdict=self.verdict,
            halted=self.halted,
            approver=self.approver,
            refusal=self.refusal,
        )


def tool_subject(
    session: GuardSession,
    call_id: str,
    tool: str,
    args: Any,
    agent: str | None,
    *,
    grant: Grant | None = None,
    compensation_of: int | None = None,
) -> Subject:
    return Subject(
        placement="tool-args",
        value=args,
        tool=tool,
        call_id=call_id,
        context=session.context(agent),
        session=session.view(tool, args, compensation_of=compensation_of),
        grant=grant,
    )


def _early(
    session: GuardSession, call_id: str, tool: Any, args: Any, opts: CallOptions
) -> CallGate | None:
    """A call refused before any check: a tool that is no name, arguments that are no object."""
    why: str | None = None
    if not isinstance(tool, str) or not tool:
        why = f"a tool call needs a tool name; got {tool!r}"
    elif not isinstance(args, dict):
        why = f"arguments for tool {tool!r} must be a JSON object; got {type(args).__name__}"
    else:
        try:
            canonical_json(args)
        except NotJSON as err:
            why = f"arguments for tool {tool!r} are not plain JSON: {err}"
    if why is None:
        return None
    return refuse_early(session, call_id, str(tool), args, why, opts, check="duraguard.arguments")


def refuse_early(
    session: GuardSession,
    call_id: str,
    tool: str,
    args: Any,
    why: str,
    opts: CallOptions,
    *,
    check: str,
) -> CallGate:
    """Refuse a call in workflow code (no step: nothing runs) and record it."""
    v = Verdict.deny(why, by="duraguard", check=check)
    gate = CallGate(
        call_id=call_id,
        tool=tool,
        asked=args,
        args=args,
        verdict=v,
        idempotency_key=session.idempotency_key(call_id),
        refusal=Refusal.of(v, tool),
        agent=opts.agent,
    )
    session.note_pass(PassResult(verdict=v, verdicts=(v,), tool=tool, call_id=call_id))
    session.record(gate.outcome())
    return gate


async def before_calls(
    session: GuardSession,
    calls: Sequence[tuple[str, Any, str | None]],
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
) -> list[CallGate]:
    """Judge every call of one turn in one recorded pass, then settle each verdict (parking on
    a person where asked, concurrently). A call that will not run is recorded here."""
    gates: dict[int, CallGate] = {}
    todo: list[tuple[int, str, str, dict[str, Any]]] = []
    for i, (tool, args, given) in enumerate(calls):
        cid = given or session.next_call_id()
        early = _early(session, cid, tool, args, opts)
        if early is not None:
            gates[i] = early
        else:
            todo.append((i, cid, tool, args))
    if todo:
        judged = await _judge(session, [(c, t, a) for _, c, t, a in todo], guardrails, opts)
        halted = any(r.verdict.action == "halt" for r in judged)

        async def settle_one(k: int) -> None:
            i, cid, tool, args = todo[k]
            gates[i] = await _settle(session, cid, tool, args, judged[k], guardrails, opts, halted)

        await asyncio.gather(*(settle_one(k) for k in range(len(todo))))
    return [gates[i] for i in range(len(calls))]


async def _judge(
    session: GuardSession,
    calls: list[tuple[str, str, dict[str, Any]]],
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
) -> list[PassResult]:
    """One pass over the arguments of every call, and over what each would reach outside
    (``egress``: every URL or host in its arguments) for guardrails that declare egress without
    ``tool-args``. A call's egress refusal decides where its arguments did not."""
    subjects = [
        tool_subject(
            session, cid, tool, args, opts.agent, compensation_of=session.undoes(tool, args)
        )
        for cid, tool, args in calls
    ]
    outbound: list[tuple[int, Subject]] = []
    if any(s.applies_to("egress") and not s.applies_to("tool-args") for s in specs):
        from .checks.address import targets

        for k, (cid, tool, args) in enumerate(calls):
            found = [t for _, t in targets(args)]
            if found:
                subject = Subject(
                    placement="egress",
                    value=found,
                    tool=tool,
                    call_id=cid,
                    context=session.context(opts.agent),
                )
                outbound.append((k, subject))
    results = await recorded_pass(
        session, specs, [*subjects, *(s for _, s in outbound)], purpose="tool-args", mode=opts.mode
    )
    out = results[: len(subjects)]
    for (k, _), egress in zip(outbound, results[len(subjects) :], strict=True):
        pre = out[k]
        merged = pre.verdicts + egress.verdicts
        if egress.tripped and not pre.tripped:
            out[k] = pre.model_copy(update={"verdict": egress.verdict, "verdicts": merged})
        elif egress.verdicts:
            out[k] = pre.model_copy(update={"verdicts": merged})
    return out


async def _settle(
    session: GuardSession,
    cid: str,
    tool: str,
    asked: dict[str, Any],
    pr: PassResult,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    halted_sibling: bool,
) -> CallGate:
    """Act on one call's verdict: it runs, is refused, or waits for a person."""
    session.note_pass(pr)
    base = CallGate(
        call_id=cid,
        tool=tool,
        asked=asked,
        args=pr.use(asked),
        verdict=pr.verdict,
        idempotency_key=session.idempotency_key(cid),
        held=tuple(reservations_of(pr.verdicts)),
        agent=opts.agent,
        compensation_of=session.undoes(tool, asked),
    )
    if pr.verdict.action == "approve":
        return await _ask(session, base, specs, opts, halted_sibling)
    if pr.verdict.action in REFUSING:
        return await _refuse(session, base, Refusal.of(pr.verdict, tool))
    return base


async def _refuse(session: GuardSession, gate: CallGate, why: Refusal, **kw: Any) -> CallGate:
    """The call will not run: give back what it held and record it."""
    await settle(gate.held, ok=False)
    refused = replace(gate, refusal=why, held=(), **kw)
    session.record(refused.outcome(), compensation_of=gate.compensation_of)
    return refused


async def _ask(
    session: GuardSession,
    gate: CallGate,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    halted_sibling: bool,
) -> CallGate:
    """Park the call on a person; after a yes, judge it again with the person's grant."""
    tool = gate.tool
    if halted_sibling:
        # A sibling of a halting turn does not wait for a person: the run is ending.
        why = "the run was halted before a person decided"
        return await _refuse(session, gate, Refusal(kind="halted", tool=tool, reason=why))
    # A hold must not lapse under a parked call: give it back now, reserve again after the yes.
    await settle(gate.held, ok=False)
    gate = replace(gate, held=())
    for _ in range(MAX_ASKS_PER_CALL):
        budget = opts.approval_budget
        if budget is not None and session.counts.approvals_asked >= budget:
            why = "the approval budget of this run is spent"
            return await _refuse(session, gate, Refusal(kind="budget", tool=tool, reason=why))
        session.counts.approvals_asked += 1

        async def preview(edited: Any, cid: str = gate.call_id) -> PassResult:
            subject = tool_subject(session, cid, tool, edited, opts.agent).model_copy(
                update={"preview": True}
            )
            (judged,) = await recorded_pass(
                session, specs, [subject], purpose="edits-preview", mode=opts.mode
            )
            await settle(reservations_of(judged.verdicts), ok=False)  # a preview holds nothing
            return judged

        decided = await session.gate.park(
            call_id=gate.call_id,
            tool=tool,
            args=gate.args,
            verdict=gate.verdict,
            timeout=opts.approval_timeout,
            judge_edits=preview,
        )
        if decided.outcome == "no":
            said = Refusal(
                kind="person", tool=tool, reason=decided.reason or "", approver=decided.approver
            )
            return await _refuse(session, gate, said, approver=decided.approver)
        if decided.outcome == "expired":
            why = "the call needed a person's yes and the ask expired; it did not run"
            return await _refuse(session, gate, Refusal(kind="expired", tool=tool, reason=why))
        subject = tool_subject(
            session, gate.call_id, tool, decided.args, opts.agent, grant=decided.grant,
            compensation_of=gate.compensation_of,
        )  # fmt: skip
        (again,) = await recorded_pass(
            session, specs, [subject], purpose="approved", mode=opts.mode
        )
        session.note_pass(again)
        gate = replace(
            gate,
            args=again.use(decided.args),
            verdict=again.verdict,
            approver=decided.approver,
            held=tuple(reservations_of(again.verdicts)),
        )
        v = again.verdict
        if v.action in ("deny", "halt"):
            if decided.edited:
                await settle(gate.held, ok=False)
                raise EditsRefused(
                    f"the edits {decided.approver} made to call {gate.call_id} ({tool}) were "
                    f"refused by {v.by}: {v.reason}",
                    by=v.by,
                )
            return await _refuse(session, gate, Refusal.of(v, tool))
        if v.action != "approve":
            return gate
    why = f"the call was asked about {MAX_ASKS_PER_CALL} times and still needs another yes"
    return await _refuse(session, gate, Refusal(kind="policy", tool=tool, reason=why))


def _jsonable(result: Any) -> tuple[Any, str | None]:
    try:
        value = to_jsonable_python(result)
        canonical_json(value)
        return value, None
    except (NotJSON, ValueError, TypeError) as err:
        return None, f"the tool's result cannot be recorded as JSON ({err})"


async def after_call(
    session: GuardSession,
    gate: CallGate,
    result: Any,
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
    *,
    ok: bool = True,
    error: str | None = None,
    labels: tuple[str, ...] = (),
    judged: PassResult | None = None,
) -> CallOutcome:
    """The tool ran (or failed): settle what its checks held, judge its result (unless it was
    judged inside the tool's own step), and record the call once."""
    if not gate.runs:
        raise ConfigurationError(
            f"call {gate.call_id} ({gate.tool}) was refused; it has no after_call (its outcome is "
            "gate.outcome())"
        )
    await settle(gate.held, ok=ok)
    value, problem = _jsonable(result) if ok else (result, None)
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
    outcome = base
    if judged is not None:
        session.note_pass(judged)
        v = judged.verdict
        if judged.tripped:
            # It ran (its step stays on the record); what it returned does not reach the model.
            outcome = replace(
                base,
                result=Refusal.of(v, gate.tool).for_model(),
                verdict=v,
                halted=v.action == "halt",
                refusal=Refusal.of(v, gate.tool),
            )
        elif judged.replaced:
            outcome = replace(base, result=judged.value)
    bail = isinstance(outcome.result, dict) and outcome.result.get("bail") is True
    outcome = replace(outcome, bail=bail and not outcome.halted)
    session.record(outcome, compensation_of=gate.compensation_of)
    return outcome


async def run_tool(
    session: GuardSession,
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
                context=session.context(opts.agent),
                idempotency_key=gate.idempotency_key,
                result_guardrails=result_specs,
                agent=opts.agent,
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
        cause = err.cause
        error = str(cause.message if isinstance(cause, ApplicationError) else cause or err)
        return await after_call(session, gate, None, guardrails, opts, ok=False, error=error)
    return await after_call(
        session,
        gate,
        output.result,
        guardrails,
        opts,
        labels=output.labels,
        judged=output.judged,
    )


async def guarded_call(
    tool: str,
    args: dict[str, Any],
    *,
    guardrails: Sequence[Any] = (),
    call_id: str | None = None,
    options: CallOptions | None = None,
    session: GuardSession | None = None,
) -> CallOutcome:
    """Check one tool call, wait for a person if asked, run it, and check its result.

    A refusal comes back as an outcome with ``ran=False``, its :class:`Refusal` and the shape
    the model reads as ``result``; a ``halt`` raises :class:`GuardrailHalt` (there is no loop to
    end).
    """
    from ._session import session as current
    from .guardrail import to_specs

    if not isinstance(tool, str) or not tool:
        raise ConfigurationError(f"guarded_call needs a tool name; got {tool!r}")
    if not isinstance(args, dict):
        raise ConfigurationError(
            f"arguments for tool {tool!r} must be a JSON object (a dict); got {type(args).__name__}"
        )
    s = session or current()
    specs = to_specs(guardrails)
    opts = options or CallOptions()
    (gate,) = await before_calls(s, [(tool, args, call_id)], specs, opts)
    out = await run_tool(s, gate, specs, opts) if gate.runs else gate.outcome()
    if out.halted:
        s.halt(out.verdict.by)
        raise GuardrailHalt(f"halted by guardrail {out.verdict.by!r}", by=out.verdict.by)
    return out
