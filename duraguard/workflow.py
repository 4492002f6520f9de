"""Workflow-side duraguard: the agent loop, guarded calls and checks (sandbox-safe).

Nothing here decides a verdict. Every decision that gates a side effect comes from a recorded
step (the ``duraguard.check`` activity, local or regular), so a replay reads it back. A verdict
is bound to what it judged by a digest of the subject in the step's activity id: changed workflow
code that asks about different arguments fails replay loudly instead of reusing a verdict.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Generic, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey, SearchAttributeUpdate
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

from . import _config
from ._ledger import Ledger
from ._types import (
    REFUSING,
    ApprovalAsk,
    Context,
    PassResult,
    Placement,
    Reservation,
    SessionView,
    Subject,
    Verdict,
    canonical_json,
)
from ._wire import (
    CHECK_ACTIVITY,
    DECIDE,
    EXPIRY_SUMMARY,
    MODEL_ACTIVITY,
    OPEN_ACTIVITY,
    PENDING_QUERY,
    SA_DENIALS,
    SA_HALTED_BY,
    SA_PENDING,
    SEAL_ACTIVITY,
    VERDICTS_QUERY,
    VERIFY_ACTIVITY,
    AgentResult,
    AuditRow,
    CheckRequest,
    CheckResponse,
    Message,
    ModelRequest,
    ModelResponse,
    OpenedSession,
    OpenRequest,
    PendingAsk,
    SealedSession,
    SessionSnapshot,
    ToolCall,
    ToolInvocation,
    ToolOutput,
    VerifyRequest,
)
from .approvals import ApprovalCheck, Decision, call_digest
from .budget import reservations_of, settle
from .errors import ConfigurationError, EditsRefused, GuardrailHalt, GuardrailViolation
from .guardrail import GuardrailLike, GuardrailSpec, to_specs

T = TypeVar("T")

SESSION_ATTR = "__duraguard_session__"
DEFAULT_APPROVAL_TIMEOUT = timedelta(hours=24)
RECORDS_KEPT = 32
"""Tool results kept for validation guardrails (the last few; never the whole session)."""

_KEY_PENDING = SearchAttributeKey.for_int(SA_PENDING)
_KEY_HALTED = SearchAttributeKey.for_keyword(SA_HALTED_BY)
_KEY_DENIALS = SearchAttributeKey.for_int(SA_DENIALS)


# --------------------------------------------------------------------------------------------
# Per-run state
# --------------------------------------------------------------------------------------------


@dataclass
class _Parked:
    ask: PendingAsk
    inbox: list[Decision] = field(default_factory=list)
    answers: dict[str, ApprovalCheck] = field(default_factory=dict)
    """Verification results by decision nonce, for the update that is waiting on one."""
    decided: bool = False


class _Session:
    """What duraguard keeps for one workflow run (on the workflow instance)."""

    def __init__(self) -> None:
        info = workflow.info()
        self.workflow_id = info.workflow_id
        self.ledger = Ledger.new(info.workflow_id)
        self.parked: dict[str, _Parked] = {}
        self.used_nonces: list[str] = []
        self.rows: list[AuditRow] = []
        self.denials = 0
        self.halted_by: str | None = None
        self.calls = 0
        self.turn = 0
        self.approvals_asked = 0
        self.records: list[dict[str, Any]] = []
        self._published: tuple[int, int, str | None] = (0, 0, None)
        self.config = _config.current()
        self._install_handlers()

    def next_call_id(self) -> str:
        self.calls += 1
        return f"c{self.calls}"

    # -- handlers ------------------------------------------------------------------------
    def _install_handlers(self) -> None:
        workflow.set_signal_handler(DECIDE, self._on_signal)
        workflow.set_update_handler(DECIDE, self._on_update, validator=self._validate)
        workflow.set_query_handler(PENDING_QUERY, self._pending)
        workflow.set_query_handler(VERDICTS_QUERY, self._verdicts)

    def _pending(self) -> list[PendingAsk]:
        return [p.ask for p in self.parked.values() if not p.decided]

    def _verdicts(self) -> list[AuditRow]:
        return list(self.rows)

    def _problem(self, decision: Decision) -> str | None:
        if decision.workflow_id != self.workflow_id:
            return (
                f"this decision is for workflow {decision.workflow_id!r}, not {self.workflow_id!r}"
            )
        parked = self.parked.get(decision.call_id)
        if parked is None:
            waiting = ", ".join(k for k, p in self.parked.items() if not p.decided) or "none"
            return f"no call {decision.call_id!r} is waiting for a person here (waiting: {waiting})"
        if parked.decided:
            return f"call {decision.call_id!r} was already decided"
        if decision.nonce in self.used_nonces or any(
            d.nonce == decision.nonce for d in parked.inbox
        ):
            return "this decision's nonce was used before"
        if decision.call_digest != parked.ask.call_digest:
            return "this decision was made for other arguments than the call now parked"
        return None

    def _on_signal(self, decision: Decision) -> None:
        # Signals cannot answer; a bad one is dropped here and also refused by the recorded check.
        if self._problem(decision) is None:
            self.parked[decision.call_id].inbox.append(decision)

    def _validate(self, decision: Decision) -> None:
        problem = self._problem(decision)
        if problem is not None:
            raise ValueError(problem)

    async def _on_update(self, decision: Decision) -> ApprovalCheck:
        parked = self.parked[decision.call_id]
        parked.inbox.append(decision)
        await workflow.wait_condition(lambda: decision.nonce in parked.answers)
        return parked.answers[decision.nonce]

    # -- visibility ----------------------------------------------------------------------
    def note(self, row: AuditRow) -> None:
        self.rows.append(row)
        if row.action in ("deny",):
            self.denials += 1
        self.publish()

    def publish(self) -> None:
        """Current details (a verdict table, for the UI) and, when they changed, the search
        attributes. Shows tool, action and guardrail only: never a value or a reason."""
        waiting = sum(1 for p in self.parked.values() if not p.decided)
        header = ("turn", "call", "tool", "where", "action", "decided by", "approver")
        body = []
        for r in self.rows[-50:]:
            body.append(
                (
                    str(r.turn),
                    r.call_id or "-",
                    r.tool or "-",
                    r.placement,
                    r.action,
                    r.decided_by,
                    r.approver or "-",
                )
            )
        widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
        # A fenced block keeps the columns aligned: the UI's markdown tables run cells together.
        lines = ["**duraguard verdicts**", "", "```"]
        lines += [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in [header, *body]
        ]
        lines.append("```")
        if waiting:
            lines += ["", f"**{waiting} call(s) waiting for a person** (`duraguard pending`)"]
        if self.halted_by:
            lines += ["", f"**halted by {self.halted_by}**"]
        workflow.set_current_details("\n".join(lines))
        state = (waiting, self.denials, self.halted_by)
        if self.config.search_attributes and state != self._published:
            # Each upsert is a history event: only when something a search would find changed.
            self._published = state
            pairs: list[SearchAttributeUpdate[Any]] = [
                _KEY_PENDING.value_set(waiting),
                _KEY_DENIALS.value_set(self.denials),
            ]
            if self.halted_by:
                pairs.append(_KEY_HALTED.value_set(self.halted_by))
            workflow.upsert_search_attributes(pairs)


def _session() -> _Session:
    inst = workflow.instance()
    s = getattr(inst, SESSION_ATTR, None)
    if s is None:
        s = _Session()
        try:
            object.__setattr__(inst, SESSION_ATTR, s)
        except AttributeError as err:
            raise ConfigurationError(
                "duraguard keeps its session on the workflow object; a workflow class with "
                "__slots__ must add '__duraguard_session__' and '__duraguard_config__' to them"
            ) from err
    return s


def _context(agent: str | None) -> Context:
    info = workflow.info()
    principal: str | None = None
    try:
        from .principal import current_principal

        principal = current_principal()
    except ImportError:
        principal = None
    return Context(
        principal=principal,
        agent=agent,
        workflow_id=info.workflow_id,
        run_id=info.run_id,
        workflow_type=info.workflow_type,
    )


def _now() -> float:
    return workflow.now().timestamp()


# --------------------------------------------------------------------------------------------
# One recorded guardrail pass
# --------------------------------------------------------------------------------------------


def _allow_all(subjects: Sequence[Subject]) -> CheckResponse:
    return CheckResponse(
        results=tuple(
            PassResult(
                verdict=Verdict.allow(),
                placement=s.placement,
                tool=s.tool,
                call_id=s.call_id,
            )
            for s in subjects
        )
    )


async def run_checks(
    guardrails: Sequence[GuardrailSpec],
    subjects: Sequence[Subject],
    *,
    purpose: str,
    mode: str | None = None,
) -> CheckResponse:
    """Evaluate ``guardrails`` over each subject in ONE recorded step (or none if none apply).

    The step's activity id carries a digest of the guardrails and subjects, so replay of changed
    code that judges something else fails with a nondeterminism error instead of reusing a
    verdict recorded for other values.
    """
    if not subjects:
        return CheckResponse(results=())
    placement = subjects[0].placement
    placements = {s.placement for s in subjects}
    session = _session()
    gated = bool(placements & {"admission", "tool-args"}) and (
        session.config.admission or any(s.applies_to("admission") for s in guardrails)
    )
    if gated:
        # Admission runs inside the same step: the worker adds the tool's own rules and the
        # registry's guardrails, and needs the admission specs too.
        placements.add("admission")
    specs = tuple(s for s in guardrails if any(s.applies_to(p) for p in placements))
    if not specs and not gated:
        return _allow_all(subjects)
    mode = mode or session.config.check_mode
    remote = mode == "activity" or (mode == "auto" and any(s.remote for s in specs))
    bound = hashlib.sha256(
        canonical_json(
            {
                "g": [s.model_dump(mode="json") for s in specs],
                "s": [s.digest() for s in subjects],
            }
        ).encode()
    ).hexdigest()[:12]
    first = subjects[0].call_id or f"{placement}-{session.turn}"
    activity_id = f"dg-{first}-{purpose}-{bound}"
    if not any(s.reads_session for s in specs):
        # The history grows with the call, not with the session: no view where none is read.
        subjects = [s.model_copy(update={"session": None}) for s in subjects]
    request = CheckRequest(
        guardrails=specs, subjects=tuple(subjects), purpose=purpose, turn=session.turn
    )
    tools = sorted({s.tool for s in subjects if s.tool})
    names = ", ".join(s.name for s in specs) or "admission"
    summary = f"duraguard {purpose}: {', '.join(tools) or placement} [{names}]"
    budget = sum(s.timeout for s in specs) * len(subjects) + 30
    timeout = timedelta(seconds=budget)
    retry = RetryPolicy(maximum_attempts=5, non_retryable_error_types=["duraguard.GuardrailFailed"])
    response: CheckResponse
    if remote:
        response = await workflow.execute_activity(
            CHECK_ACTIVITY,
            request,
            result_type=CheckResponse,
            start_to_close_timeout=timeout,
            retry_policy=retry,
            activity_id=activity_id,
            summary=summary,
        )
        return response
    response = await workflow.execute_local_activity(
        CHECK_ACTIVITY,
        request,
        result_type=CheckResponse,
        start_to_close_timeout=timeout,
        retry_policy=retry,
        activity_id=activity_id,
        summary=summary,
    )
    return response


def _row(result: PassResult, *, approver: str | None = None) -> AuditRow:
    v = result.verdict
    return AuditRow(
        turn=_session().turn,
        call_id=result.call_id,
        tool=result.tool,
        placement=result.placement or "tool-args",
        action=v.action,
        by=v.by,
        check=v.check,
        outcome=v.outcome,
        approver=approver,
        reason=v.reason,
    )


def _record(result: PassResult) -> None:
    """Audit rows for what did not simply allow (every pass is in history regardless)."""
    session = _session()
    v = result.verdict
    if v.action != "allow" or v.outcome != "complete":
        session.note(_row(result))
    for other in result.verdicts:
        if other.action == "observe":
            session.note(_row(result.model_copy(update={"verdict": other})))


# --------------------------------------------------------------------------------------------
# check(): any value, optionally guarding a call
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult(Generic[T]):
    """What :func:`check` returns."""

    verdict: Verdict
    """The verdict that decided: the output check's when one ran and the input check cleared."""
    tripped: bool
    """deny, approve and halt trip; mask and rewrite do not (they hand back a replacement)."""
    value: Any = None
    """The replacement under mask/rewrite, else the value as given; None when tripped."""
    result: T | None = None
    """The guarded call's own return, when it ran and nothing refused it."""
    cancelled: bool = False
    """True when ``parallel`` cancelled the call because the input check tripped."""


def _subject(
    placement: Any,
    value: Any,
    *,
    tool: str | None = None,
    agent: str | None = None,
    call_id: str | None = None,
) -> Subject:
    if isinstance(value, Subject):
        return value
    if isinstance(value, dict) and "placement" in value and "value" in value:
        return Subject(
            placement=value["placement"],
            value=value["value"],
            tool=value.get("tool", tool),
            schema=value.get("schema"),
            call_id=call_id,
            context=_context(agent),
        )
    return Subject(
        placement=placement, value=value, tool=tool, call_id=call_id, context=_context(agent)
    )


async def check(
    name: str,
    *,
    guardrails: Sequence[GuardrailLike],
    input: Any = None,
    output: Callable[[Any], Any] | None = None,
    call: Callable[[], Awaitable[T]] | None = None,
    parallel: bool = False,
    placement: Placement = "pre-prompt",
    output_placement: Placement = "post-model",
) -> CheckResult[T]:
    """Run guardrails over any value (and optionally guard one call) as recorded steps.

    Args:
        name: Names the check in summaries and audit rows.
        guardrails: The policies to ask, in order.
        input: What to check before the call: a value (judged at ``placement``) or a mapping
            ``{"placement": ..., "value": ..., "tool": ..., "schema": ...}``.
        output: Derives what to check from the call's result; omitted, nothing is checked after.
        call: The call the checks guard: a zero-argument function returning an awaitable
            (typically ``lambda: workflow.execute_activity(...)``).
        parallel: Start the input check and the call together; if the check trips, the call is
            cancelled (and recorded as cancelled) and its result never returned.

    A ``deny`` does not raise: the trip comes back as ``tripped`` for your code to act on. A
    ``halt`` fails the workflow with :class:`GuardrailHalt` (non-retryable).
    """
    specs = to_specs(guardrails)
    session = _session()
    session.calls += 1
    check_id = f"{name}-{session.calls}"
    in_result: PassResult | None = None

    async def _input() -> PassResult:
        subj = _subject(placement, input, call_id=check_id)
        resp = await run_checks(specs, [subj], purpose=f"check-{name}-input")
        return resp.results[0]

    result: Any = None
    cancelled = False
    if input is not None and call is not None and parallel:
        call_task = asyncio.ensure_future(call())
        in_result = await _input()
        _record(in_result)
        if in_result.tripped:
            call_task.cancel()
            try:
                await call_task
            except (asyncio.CancelledError, CancelledError, ActivityError):
                pass
            cancelled = True
            _raise_on_halt(in_result.verdict)
            return CheckResult(verdict=in_result.verdict, tripped=True, cancelled=True)
        result = await call_task
    else:
        if input is not None:
            in_result = await _input()
            _record(in_result)
            if in_result.tripped:
                _raise_on_halt(in_result.verdict)
                return CheckResult(verdict=in_result.verdict, tripped=True)
        if call is not None:
            result = await call()
    value = in_result.use(input) if in_result is not None else input
    verdict = in_result.verdict if in_result is not None else Verdict.allow()
    if call is not None and output is not None:
        subj = _subject(output_placement, output(result), call_id=check_id)
        resp = await run_checks(specs, [subj], purpose=f"check-{name}-output")
        out = resp.results[0]
        _record(out)
        if out.tripped:
            _raise_on_halt(out.verdict)
            return CheckResult(verdict=out.verdict, tripped=True, cancelled=cancelled)
        verdict = out.verdict
        if out.verdict.replaces:
            value = out.value
    return CheckResult(
        verdict=verdict, tripped=False, value=value, result=result, cancelled=cancelled
    )


def _raise_on_halt(v: Verdict) -> None:
    if v.action == "halt":
        session = _session()
        session.halted_by = v.by
        session.publish()
        raise GuardrailHalt(f"halted by guardrail {v.by!r}", by=v.by)


# --------------------------------------------------------------------------------------------
# guarded_call(): one tool call, checked, parked, run, its result checked
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallOutcome:
    """What happened to one tool call."""

    call_id: str
    tool: str
    args: Any
    """The arguments the tool ran with (after mask/rewrite/edits), or was asked to."""
    ran: bool
    result: Any = None
    """The tool's result as the model will read it (a refusal's shape when refused)."""
    verdict: Verdict = field(default_factory=Verdict.allow)
    halted: bool = False
    approver: str | None = None
    error: str | None = None
    bail: bool = False


@dataclass(frozen=True)
class CallOptions:
    """How tool activities are run."""

    tool_timeout: timedelta = timedelta(seconds=60)
    tool_attempts: int = 3
    approval_timeout: timedelta = DEFAULT_APPROVAL_TIMEOUT
    approval_budget: int | None = None
    agent: str | None = None
    mode: str | None = None


def refusal(tool: str, verdict: Verdict) -> dict[str, Any]:
    """The shape a policy refusal takes as the tool's result: no decider, a reason to act on."""
    return {"valid": False, "tool": tool, "error": verdict.reason or f"refused by {verdict.by}"}


def _declined(tool: str, approver: str, reason: str | None) -> dict[str, Any]:
    """A person's no: it names the person, and never shares a shape with a policy refusal."""
    return {"approved": False, "tool": tool, "declined_by": approver, "reason": reason or ""}


class _ApprovalBudgetSpent(Exception):
    pass


def _validate_args(tool: str, args: Any) -> None:
    if not isinstance(tool, str) or not tool:
        raise ConfigurationError(f"guarded_call needs a tool name; got {tool!r}")
    if not isinstance(args, dict):
        raise ConfigurationError(
            f"arguments for tool {tool!r} must be a JSON object (a dict); got {type(args).__name__}"
        )


async def guarded_call(
    tool: str,
    args: dict[str, Any],
    *,
    guardrails: Sequence[GuardrailLike] = (),
    call_id: str | None = None,
    options: CallOptions | None = None,
) -> CallOutcome:
    """Check one tool call, wait for a person if asked, run it, and check its result.

    A ``deny`` comes back as an outcome with ``ran=False`` and the refusal as ``result``; a
    ``halt`` raises :class:`GuardrailHalt` (there is no loop to end).
    """
    _validate_args(tool, args)
    specs = to_specs(guardrails)
    opts = options or CallOptions()
    session = _session()
    cid = call_id or session.next_call_id()
    checked = await _check_calls([(cid, tool, args)], specs, opts)
    try:
        out = await _settle(checked[0], specs, opts, asked=args, halted=False)
    except _ApprovalBudgetSpent:
        out = CallOutcome(
            call_id=cid,
            tool=tool,
            args=args,
            ran=False,
            result={
                "valid": False,
                "tool": tool,
                "error": "the approval budget of this run is spent",
            },
        )
    if out.halted:
        _raise_on_halt(out.verdict)
    return out


async def _check_calls(
    calls: Sequence[tuple[str, str, dict[str, Any]]],
    specs: tuple[GuardrailSpec, ...],
    opts: CallOptions,
) -> list[PassResult]:
    """One recorded pass over the arguments of every call of a turn, and over what each would
    reach outside (``egress``: every URL or host in its arguments), for guardrails that declare
    egress without ``tool-args``. A call's egress refusal decides where its arguments did not."""
    subjects = [_tool_subject(cid, tool, args, opts.agent) for cid, tool, args in calls]
    egress_only = any(s.applies_to("egress") and not s.applies_to("tool-args") for s in specs)
    outbound: dict[str, Subject] = {}
    if egress_only:
        from .checks.address import targets

        for cid, tool, args in calls:
            found = [t for _, t in targets(args)]
            if found:
                outbound[cid] = Subject(
                    placement="egress",
                    value=found,
                    tool=tool,
                    call_id=cid,
                    context=_context(opts.agent),
                )
    resp = await run_checks(
        specs, [*subjects, *outbound.values()], purpose="tool-args", mode=opts.mode
    )
    results = list(resp.results[: len(subjects)])
    for r_out in resp.results[len(subjects) :]:
        i = next(k for k, (cid, _, _) in enumerate(calls) if cid == r_out.call_id)
        pre = results[i]
        if r_out.tripped and not pre.tripped:
            results[i] = pre.model_copy(
                update={"verdict": r_out.verdict, "verdicts": pre.verdicts + r_out.verdicts}
            )
        elif r_out.verdicts:
            results[i] = pre.model_copy(update={"verdicts": pre.verdicts + r_out.verdicts})
    return results


def _tool_subject(call_id: str, tool: str, args: Any, agent: str | None) -> Subject:
    return Subject(
        placement="tool-args",
        value=args,
        tool=tool,
        call_id=call_id,
        context=_context(agent),
        session=_session().ledger.view(tool=tool, args=args, now=_now()),
    )


async def _settle(
    pre: PassResult,
    specs: tuple[GuardrailSpec, ...],
    opts: CallOptions,
    *,
    asked: dict[str, Any],
    halted: bool,
) -> CallOutcome:
    """Act on one call's tool-args verdict: run, refuse, park or halt; then check the result.

    ``asked`` is what the model proposed; ``pre.use(asked)`` is what would run (after mask/rewrite).
    Whatever a guardrail set aside for the call (a budget hold) is released on every path on
    which the tool does not run.
    """
    session = _session()
    cid = pre.call_id or session.next_call_id()
    tool = pre.tool or ""
    v = pre.verdict
    held = reservations_of(pre.verdicts)
    _record(pre)

    async def not_run(
        action: str, result: Any, *, halt: bool = False, approver: str | None = None
    ) -> CallOutcome:
        session.ledger.record(
            call_id=cid, tool=tool, args=asked, action=action, ran=False, at=_now()
        )
        await settle(held, ok=False)
        return CallOutcome(
            call_id=cid,
            tool=tool,
            args=asked,
            ran=False,
            verdict=v,
            halted=halt,
            result=result,
            approver=approver,
        )

    if v.action == "halt":
        return await not_run("halt", refusal(tool, v), halt=True)
    if v.action == "deny":
        return await not_run("deny", refusal(tool, v))
    used = pre.use(asked)
    args: dict[str, Any] = used if isinstance(used, dict) else asked
    approver: str | None = None
    if v.action == "approve":
        if halted:
            # A sibling of a halting turn does not wait for a person: the run is ending.
            return await not_run(
                "approve",
                {
                    "valid": False,
                    "tool": tool,
                    "error": "the run was halted before a person decided",
                },
            )
        try:
            decided = await _park(cid, tool, args, v, specs, opts)
        except BaseException:
            await settle(held, ok=False)
            raise
        if isinstance(decided, CallOutcome):
            await settle(held, ok=False)
            return decided
        args, approver = decided
    return await _run_tool(cid, tool, args, v, specs, opts, approver=approver, held=held)


def _safe_args(args: Any) -> dict[str, Any]:
    return args if isinstance(args, dict) else {"_": args}


async def _run_tool(
    cid: str,
    tool: str,
    args: dict[str, Any],
    v: Verdict,
    specs: tuple[GuardrailSpec, ...],
    opts: CallOptions,
    *,
    approver: str | None,
    held: list[Reservation],
) -> CallOutcome:
    session = _session()
    ok = True
    error: str | None = None
    result: Any
    labels: tuple[str, ...] = ()
    try:
        output: ToolOutput = await workflow.execute_activity(
            tool,
            ToolInvocation(call_id=cid, args=args, context=_context(opts.agent)),
            start_to_close_timeout=opts.tool_timeout,
            retry_policy=RetryPolicy(
                maximum_attempts=opts.tool_attempts,
                non_retryable_error_types=["duraguard.BadToolArguments"],
            ),
            activity_id=cid,
            summary=f"tool {tool}",
            result_type=ToolOutput,
        )
    except ActivityError as err:
        ok = False
        cause = err.cause
        error = str(cause.message if isinstance(cause, ApplicationError) else cause or err)
        result = {"error": f"tool {tool!r} failed: {error}"}
        await settle(held, ok=False)
    else:
        result, labels = output.result, output.labels
        await settle(held, ok=True)
    session.records.append({"tool": tool, "args": args, "result": result, "call_id": cid, "ok": ok})
    del session.records[:-RECORDS_KEPT]
    # The result is checked on its way back: it decides what leaves, it cannot undo the tool.
    if ok and any(s.applies_to("tool-result") for s in specs):
        post = await run_checks(
            specs,
            [
                Subject(
                    placement="tool-result",
                    value=result,
                    tool=tool,
                    call_id=cid,
                    context=_context(opts.agent),
                )
            ],
            purpose="tool-result",
            mode=opts.mode,
        )
        pr = post.results[0]
        _record(pr)
        if pr.tripped:
            # It ran (its step stays on the record); what it returned does not reach the model.
            session.ledger.record(
                call_id=cid,
                tool=tool,
                args=args,
                action=pr.verdict.action,
                ran=True,
                at=_now(),
                result=result,
                labels=labels,
            )
            return CallOutcome(
                call_id=cid,
                tool=tool,
                args=args,
                ran=True,
                verdict=pr.verdict,
                halted=pr.verdict.action == "halt",
                result=refusal(tool, pr.verdict),
                approver=approver,
            )
        if pr.verdict.replaces:
            result = pr.value
    session.ledger.record(
        call_id=cid,
        tool=tool,
        args=args,
        action=v.action,
        ran=True,
        ok=ok,
        at=_now(),
        result=result,
        labels=labels,
    )
    bail = isinstance(result, dict) and result.get("bail") is True
    return CallOutcome(
        call_id=cid,
        tool=tool,
        args=args,
        ran=True,
        result=result,
        verdict=v,
        approver=approver,
        error=error,
        bail=bail,
    )


# --------------------------------------------------------------------------------------------
# Parking a call on a person
# --------------------------------------------------------------------------------------------


async def _park(
    cid: str,
    tool: str,
    args: dict[str, Any],
    v: Verdict,
    specs: tuple[GuardrailSpec, ...],
    opts: CallOptions,
) -> CallOutcome | tuple[dict[str, Any], str]:
    """Wait, durably, for a person's signed decision on this exact call, or for the ask to expire."""
    session = _session()
    if opts.approval_budget is not None and session.approvals_asked >= opts.approval_budget:
        session.ledger.record(
            call_id=cid, tool=tool, args=args, action="approve", ran=False, at=_now()
        )
        raise _ApprovalBudgetSpent
    session.approvals_asked += 1
    ask = v.ask or ApprovalAsk(prompt=v.reason)
    ttl = ask.expires_in_seconds or opts.approval_timeout.total_seconds()
    expires_at = _now() + ttl
    parked = _Parked(
        ask=PendingAsk(
            workflow_id=session.workflow_id,
            call_id=cid,
            tool=tool,
            args=args,
            call_digest=call_digest(tool, args),
            asked_by=v.by,
            check=v.check,
            reason=v.reason,
            role=ask.role,
            expires_at=expires_at,
            turn=session.turn,
        ),
    )
    session.parked[cid] = parked
    session.publish()
    outcome = await _await_decision(parked, cid, tool, args, v, specs, opts, expires_at)
    session.publish()
    return outcome


async def _await_decision(
    parked: _Parked,
    cid: str,
    tool: str,
    args: dict[str, Any],
    v: Verdict,
    specs: tuple[GuardrailSpec, ...],
    opts: CallOptions,
    expires_at: float,
) -> CallOutcome | tuple[dict[str, Any], str]:
    session = _session()
    ask = parked.ask
    while True:
        remaining = expires_at - _now()
        if remaining <= 0:
            break
        try:
            await workflow.wait_condition(
                lambda: bool(parked.inbox),
                timeout=timedelta(seconds=remaining),
                timeout_summary=f"{EXPIRY_SUMMARY} {cid} {tool}",
            )
        except TimeoutError:
            break
        decision = parked.inbox.pop(0)
        checked: ApprovalCheck = await workflow.execute_local_activity(
            VERIFY_ACTIVITY,
            VerifyRequest(
                decision=decision,
                workflow_id=session.workflow_id,
                call_id=cid,
                tool=tool,
                args=args,
                role=ask.role,
                used_nonces=tuple(session.used_nonces),
            ),
            result_type=ApprovalCheck,
            start_to_close_timeout=timedelta(seconds=30),
            activity_id=f"dg-{cid}-decision-{decision.nonce[:12]}",
            summary=f"duraguard decision: {tool} by {decision.approver}",
        )
        session.used_nonces.append(decision.nonce)
        session.ledger.use_nonce(decision.nonce)
        parked.answers[decision.nonce] = checked
        session.note(
            AuditRow(
                turn=session.turn,
                call_id=cid,
                tool=tool,
                placement="tool-args",
                action="allow" if checked.ok and decision.decision == "approve" else "deny",
                by="person" if checked.ok else "duraguard.decision",
                check="decision" if checked.ok else "decision.refused",
                approver=decision.approver,
                reason=checked.reason or decision.reason,
            )
        )
        if not checked.ok:
            continue  # a bad decision does not end the wait; the ask still stands
        parked.decided = True
        if decision.decision == "deny":
            session.ledger.record(
                call_id=cid, tool=tool, args=args, action="deny", ran=False, at=_now()
            )
            return CallOutcome(
                call_id=cid,
                tool=tool,
                args=args,
                ran=False,
                verdict=v,
                result=_declined(tool, decision.approver, decision.reason),
                approver=decision.approver,
            )
        if decision.edits:
            edited = {**args, **decision.edits}
            return await _recheck_edits(
                cid, tool, edited, specs, opts, decision.approver, checked
            ), decision.approver
        return args, decision.approver
    parked.decided = True
    session.note(
        AuditRow(
            turn=session.turn,
            call_id=cid,
            tool=tool,
            placement="tool-args",
            action="deny",
            by="duraguard.expiry",
            check="approval.expired",
            reason="nobody decided before the ask expired",
        )
    )
    session.ledger.record(call_id=cid, tool=tool, args=args, action="approve", ran=False, at=_now())
    return CallOutcome(
        call_id=cid,
        tool=tool,
        args=args,
        ran=False,
        verdict=v,
        result={
            "valid": False,
            "tool": tool,
            "error": "the call needed a person's yes and the ask expired; it did not run",
        },
    )


async def _recheck_edits(
    cid: str,
    tool: str,
    edited: dict[str, Any],
    specs: tuple[GuardrailSpec, ...],
    opts: CallOptions,
    approver: str,
    checked: ApprovalCheck,
) -> dict[str, Any]:
    """A person's edits are checked again under their own step; a refusal fails the run."""
    subj = _tool_subject(cid, tool, edited, opts.agent)
    resp = await run_checks(specs, [subj], purpose="edits", mode=opts.mode)
    r = resp.results[0]
    _record(r)
    v = r.verdict
    if v.action == "approve" and (
        v.ask is None or v.ask.role is None or v.ask.role in checked.roles
    ):
        return edited  # the person who edited holds the yes the edited call needs
    if v.action in REFUSING:
        raise EditsRefused(
            f"the edits {approver} made to call {cid} ({tool}) were refused by {v.by}: {v.reason}",
            by=v.by,
        )
    used = r.use(edited)
    return used if isinstance(used, dict) else edited


# --------------------------------------------------------------------------------------------
# Continue-as-new: the session carried to the next run, sealed
# --------------------------------------------------------------------------------------------


async def carry_over(*, keep: int = 64) -> SealedSession:
    """Seal this run's session for the next run (call it right before continue-as-new).

    The ledger keeps its last ``keep`` entries (the chain still verifies from the hash of the
    last dropped one; counts of what ran are kept), the call counter, the used nonces and the
    recent audit rows. A worker seals it with the plugin's session key, in a recorded step.
    Pass the result in the next run's input and call :func:`resume` first thing there.
    """
    session = _session()
    if any(not p.decided for p in session.parked.values()):
        raise ConfigurationError(
            "a call is still waiting for a person; carry the session over once it is decided"
        )
    session.ledger.compact(keep)
    snapshot = SessionSnapshot(
        ledger=session.ledger.state,
        calls=session.calls,
        denials=session.denials,
        approvals_asked=session.approvals_asked,
        rows=tuple(session.rows[-50:]),
        records=tuple(session.records[-RECORDS_KEPT:]),
    )
    sealed: SealedSession = await workflow.execute_local_activity(
        SEAL_ACTIVITY,
        snapshot,
        result_type=SealedSession,
        start_to_close_timeout=timedelta(seconds=30),
        summary="duraguard: seal the session for the next run",
    )
    return sealed


async def resume(sealed: SealedSession | None) -> None:
    """Take over the session a previous run sealed with :func:`carry_over` (``None``: a new one).

    A session that does not verify (altered after it was sealed, carried from another workflow,
    or a record whose chain breaks) fails the run: nothing more runs on a record someone changed.
    """
    if sealed is None:
        _session()
        return
    session = _session()
    opened: OpenedSession = await workflow.execute_local_activity(
        OPEN_ACTIVITY,
        OpenRequest(sealed=sealed, workflow_id=session.workflow_id),
        result_type=OpenedSession,
        start_to_close_timeout=timedelta(seconds=30),
        summary="duraguard: open the carried session",
    )
    if not opened.ok:
        raise GuardrailViolation(
            f"the session carried into this run was refused: {opened.reason}", by="session_record"
        )
    snap = sealed.snapshot
    session.ledger = Ledger(snap.ledger.model_copy(deep=True))
    session.calls = snap.calls
    session.denials = snap.denials
    session.approvals_asked = snap.approvals_asked
    session.rows = list(snap.rows)
    session.records = [dict(r) for r in snap.records]
    session.used_nonces = list(snap.ledger.used_nonces)
    session.publish()


# --------------------------------------------------------------------------------------------
# The agent loop
# --------------------------------------------------------------------------------------------


async def agent_loop(
    name: str,
    *,
    prompt: str,
    model: str,
    tools: Sequence[str] = (),
    guardrails: Sequence[GuardrailLike] = (),
    max_iterations: int = 10,
    system: str | None = None,
    approval_timeout: timedelta = DEFAULT_APPROVAL_TIMEOUT,
    approval_budget: int | None = None,
    max_corrections: int = 2,
    tool_timeout: timedelta = timedelta(seconds=60),
    tool_attempts: int = 3,
    model_timeout: timedelta = timedelta(seconds=120),
    check_mode: str | None = None,
) -> AgentResult:
    """Run model turns and tool calls until the model answers, every call checked first.

    Args:
        name: The agent's name: admission guardrails and audit rows know it by this.
        prompt: The person's request (the first turn).
        model: ``provider:model``; the provider is registered on the worker.
        tools: Names of the tools offered to the model.
        guardrails: Specs to apply at every placement they declare.
        max_iterations: Model turns at most; past it the loop stops with ``max-iterations``.
        approval_timeout: How long a parked call waits for a person before it expires.
        approval_budget: How many asks this run may make; one more ends it (``approval-budget``).
        max_corrections: How many times a refused final answer goes back to the model.
        check_mode: ``local`` / ``activity`` / ``auto`` for the guardrail passes.

    Returns:
        An :class:`AgentResult`: ``stop_reason`` (``done``, ``max-iterations``, ``guardrail``,
        ``approval-budget``, ``bail``, ``no-answer``), ``halted_by``, the messages, every verdict.
    """
    if max_iterations < 1:
        raise ConfigurationError(f"max_iterations must be at least 1; got {max_iterations}")
    if not isinstance(prompt, str) or not prompt:
        raise ConfigurationError("agent_loop needs a non-empty prompt")
    specs = to_specs(guardrails)
    session = _session()
    opts = CallOptions(
        tool_timeout=tool_timeout,
        tool_attempts=tool_attempts,
        approval_timeout=approval_timeout,
        approval_budget=approval_budget,
        agent=name,
        mode=check_mode,
    )
    messages: list[Message] = []
    if system:
        messages.append(Message(role="system", content=system))

    def done(stop: str, *, answer: Any = None, note: str | None = None) -> AgentResult:
        session.publish()
        return AgentResult(
            stop_reason=stop,  # type: ignore[arg-type]
            answer=answer,
            halted_by=session.halted_by,
            iterations=session.turn,
            messages=tuple(messages),
            verdicts=tuple(session.rows),
            note=note,
        )

    # The prompt, before it reaches a provider.
    pre = await run_checks(
        specs,
        [Subject(placement="pre-prompt", value=prompt, context=_context(name))],
        purpose="pre-prompt",
        mode=check_mode,
    )
    first = pre.results[0]
    _record(first)
    if first.tripped:
        # No model may read a refused prompt, and there is no one in the loop to correct it.
        session.halted_by = first.verdict.by
        return done(
            "guardrail",
            note=f"the prompt was refused ({first.verdict.action}) by {first.verdict.by}",
        )
    used_prompt = first.use(prompt)
    prompt_text = used_prompt if isinstance(used_prompt, str) else prompt
    session.ledger.add_turn(prompt)
    messages.append(Message(role="user", content=prompt_text))

    corrections = 0
    offered = await _offer(tuple(tools), specs, name, check_mode, messages)
    while session.turn < max_iterations:
        session.turn += 1
        response: ModelResponse = await workflow.execute_activity(
            MODEL_ACTIVITY,
            ModelRequest(model=model, messages=tuple(messages), tools=offered, agent=name),
            result_type=ModelResponse,
            start_to_close_timeout=model_timeout,
            retry_policy=RetryPolicy(maximum_attempts=5),
            summary=f"model turn {session.turn}",
        )
        content = response.content
        # The model's answer text, before anything is done with it.
        if content:
            pm = await run_checks(
                specs,
                [Subject(placement="post-model", value=content, context=_context(name))],
                purpose="post-model",
                mode=check_mode,
            )
            r = pm.results[0]
            _record(r)
            if r.verdict.action == "halt":
                session.halted_by = r.verdict.by
                messages.append(Message(role="assistant", content=None, tool_calls=()))
                return done("guardrail", note=r.verdict.reason)
            if r.tripped:
                messages.append(Message(role="assistant", content="[withheld by guardrail]"))
                messages.append(
                    Message(
                        role="user",
                        content=f"Your previous answer was refused: {r.verdict.reason}. Answer again without it.",
                    )
                )
                continue
            used = r.use(content)
            content = used if isinstance(used, str) else content

        if not response.tool_calls:
            # A final answer: validation guardrails may send it back as a correction.
            fa = await run_checks(
                specs,
                [
                    Subject(
                        placement="final-answer",
                        value=content,
                        context=_context(name),
                        session=_answer_view(),
                    )
                ],
                purpose="final-answer",
                mode=check_mode,
            )
            r = fa.results[0]
            _record(r)
            if r.verdict.action == "halt":
                session.halted_by = r.verdict.by
                return done("guardrail", note=r.verdict.reason)
            if r.tripped:
                messages.append(Message(role="assistant", content=content))
                if corrections >= max_corrections:
                    return done(
                        "no-answer",
                        note=f"every answer was refused by {r.verdict.by}: {r.verdict.reason}",
                    )
                corrections += 1
                messages.append(
                    Message(
                        role="user",
                        content=f"Your answer was not accepted ({r.verdict.by}): {r.verdict.reason}. Correct it and answer again.",
                    )
                )
                continue
            final = r.value if r.verdict.replaces else content
            messages.append(Message(role="assistant", content=final))
            return done("done", answer=final)

        calls = response.tool_calls
        messages.append(Message(role="assistant", content=content, tool_calls=calls))
        outcomes = await _dispatch_turn(calls, offered, specs, opts)
        halt = next((o for o in outcomes if o.halted), None)
        spent = any(o.error == "approval-budget" for o in outcomes)
        for call, o in zip(calls, outcomes, strict=True):
            messages.append(
                Message(
                    role="tool",
                    tool_call_id=call.id,
                    name=call.name,
                    content=canonical_json(o.result),
                )
            )
        if halt is not None:
            session.halted_by = halt.verdict.by
            return done("guardrail", note=halt.verdict.reason)
        if spent:
            return done(
                "approval-budget", note="the run asked for more approvals than its budget allows"
            )
        bailed = next((o for o in outcomes if o.bail), None)
        if bailed is not None:
            answer = bailed.result.get("answer") if isinstance(bailed.result, dict) else None
            return done("bail", answer=answer)
    return done("max-iterations")


def _answer_view() -> SessionView:
    """What a validation guardrail reads: the last few tool results of the session."""
    from ._types import ToolRecord

    session = _session()
    results = tuple(ToolRecord.model_validate(r) for r in session.records)
    return session.ledger.view(tool="", args={}, now=_now(), results=results)


async def _offer(
    tools: tuple[str, ...],
    specs: tuple[GuardrailSpec, ...],
    agent: str,
    mode: str | None,
    messages: list[Message],
) -> tuple[str, ...]:
    """Admission at offer time: a tool this agent may not reach is never offered; the model is told why."""
    session = _session()
    if not tools or not (session.config.admission or any(s.applies_to("admission") for s in specs)):
        return tools
    subjects = [
        Subject(
            placement="admission",
            value={"tool": t},
            tool=t,
            call_id=f"offer-{t}",
            context=_context(agent),
        )
        for t in tools
    ]
    resp = await run_checks(specs, subjects, purpose="admission", mode=mode)
    kept: list[str] = []
    refused: list[str] = []
    for t, r in zip(tools, resp.results, strict=True):
        if r.tripped:
            _record(r)
            refused.append(f"- {t}: {r.verdict.reason or 'not admitted'}")
        else:
            kept.append(t)
    if refused:
        messages.append(
            Message(
                role="system",
                content="These tools are not available to you:\n" + "\n".join(refused),
            )
        )
    return tuple(kept)


async def _dispatch_turn(
    calls: Sequence[ToolCall],
    offered: Sequence[str],
    specs: tuple[GuardrailSpec, ...],
    opts: CallOptions,
) -> list[CallOutcome]:
    """All calls of one model turn: one batched pass, then each settled concurrently."""
    session = _session()
    ids = [session.next_call_id() for _ in calls]
    outcomes: dict[int, CallOutcome] = {}
    checkable: list[tuple[int, tuple[str, str, dict[str, Any]]]] = []
    for i, (cid, call) in enumerate(zip(ids, calls, strict=True)):
        if call.name not in offered:
            v = Verdict.deny(
                f"there is no tool named {call.name!r}; the tools are: {', '.join(offered) or 'none'}",
                by="duraguard",
                check="duraguard.unknown-tool",
            )
            outcomes[i] = _refused_early(cid, call, v)
        elif not isinstance(call.arguments, dict):
            v = Verdict.deny(
                f"arguments for tool {call.name!r} must be a JSON object; got {type(call.arguments).__name__}",
                by="duraguard",
                check="duraguard.arguments",
            )
            outcomes[i] = _refused_early(cid, call, v)
        else:
            checkable.append((i, (cid, call.name, call.arguments)))
    if checkable:
        results = await _check_calls([c for _, c in checkable], specs, opts)
        verdicts = dict(zip([i for i, _ in checkable], results, strict=True))
        halted = any(r.verdict.action == "halt" for r in results)

        async def one(i: int) -> None:
            try:
                outcomes[i] = await _settle(
                    verdicts[i], specs, opts, asked=calls[i].arguments, halted=halted
                )
            except _ApprovalBudgetSpent:
                pr = verdicts[i]
                outcomes[i] = CallOutcome(
                    call_id=pr.call_id or "",
                    tool=pr.tool or "",
                    args=pr.use(calls[i].arguments),
                    ran=False,
                    verdict=pr.verdict,
                    error="approval-budget",
                    result={
                        "valid": False,
                        "tool": pr.tool,
                        "error": "the approval budget of this run is spent",
                    },
                )

        await asyncio.gather(*(one(i) for i in verdicts))
    return [outcomes[i] for i in range(len(calls))]


def _refused_early(cid: str, call: ToolCall, v: Verdict) -> CallOutcome:
    session = _session()
    result = refusal(call.name, v)
    row = AuditRow(
        turn=session.turn,
        call_id=cid,
        tool=call.name,
        placement="tool-args",
        action="deny",
        by=v.by,
        check=v.check,
        reason=v.reason,
    )
    session.note(row)
    session.ledger.record(
        call_id=cid,
        tool=call.name,
        args=_safe_args(call.arguments),
        action="deny",
        ran=False,
        at=_now(),
    )
    return CallOutcome(
        call_id=cid, tool=call.name, args=call.arguments, ran=False, verdict=v, result=result
    )


__all__ = [
    "CallOptions",
    "CallOutcome",
    "CheckResult",
    "agent_loop",
    "carry_over",
    "check",
    "guarded_call",
    "refusal",
    "resume",
    "run_checks",
]
