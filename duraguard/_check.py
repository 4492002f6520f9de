"""``check()``: guardrails over any value (and optionally around one call), as recorded steps.

An input check and an output check are each one recorded pass; the call they guard is yours
(an activity, a child workflow). The subject carries the session view, so session-reading
rules see the run. An ``approve`` parks on a person exactly as a tool call does: after a yes
the value is judged again with the person's grant, and goes on; a no, or an expired ask, trips.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar

from temporalio.exceptions import ActivityError, CancelledError

from ._ask import judge
from ._outcome import DEFAULT_APPROVAL_TIMEOUT
from ._pass import recorded_pass
from ._session import GuardSession
from ._session import session as current
from ._state import SessionState
from ._types import PassResult, Placement, Subject, Verdict
from .errors import GuardrailHalt
from .guardrail import GuardrailLike, GuardrailSpec, to_specs

T = TypeVar("T")


@dataclass(frozen=True)
class CheckResult(Generic[T]):
    """What :func:`check` returns."""

    verdict: Verdict
    """The verdict that decided: the output check's when one ran and the input check cleared."""
    tripped: bool
    """deny, approve (unanswered) and halt trip; mask and rewrite do not (they hand back a
    replacement)."""
    value: Any = None
    """The replacement under mask/rewrite, else the value as given; None when tripped."""
    result: T | None = None
    """The guarded call's own return, when it ran and nothing refused it."""
    cancelled: bool = False
    """True when ``parallel`` cancelled the call because the input check tripped."""
    approver: str | None = None
    """Who said yes, where the check asked a person."""


def _subject(
    session: SessionState, placement: Placement, value: Any, check_id: str, agent: str | None
) -> Subject:
    if isinstance(value, dict) and "placement" in value and "value" in value:
        placement, tool = value["placement"], value.get("tool")
        schema, value = value.get("schema"), value["value"]
    else:
        tool, schema = None, None
    return Subject(
        placement=placement,
        value=value,
        tool=tool,
        schema=schema,
        call_id=check_id,
        context=session.context(agent),
        session=session.view(tool or "", value),
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
    approval_timeout: timedelta = DEFAULT_APPROVAL_TIMEOUT,
    agent: str | None = None,
    session: GuardSession | None = None,
) -> CheckResult[T]:
    """Run guardrails over any value (and optionally guard one call) as recorded steps.

    Args:
        name: Names the check in summaries, asks and audit rows.
        guardrails: The policies to ask, in order.
        input: What to check before the call: a value (judged at ``placement``) or a mapping
            ``{"placement": ..., "value": ..., "tool": ..., "schema": ...}``.
        output: Derives what to check from the call's result; omitted, nothing is checked after.
        call: The call the checks guard: a zero-argument function returning an awaitable
            (typically ``lambda: workflow.execute_activity(...)``).
        parallel: Start the input check and the call together; if the check trips, the call is
            cancelled (and recorded as cancelled) and its result never returned. A check that
            asks a person trips here: a call already running cannot wait for a yes.
        approval_timeout: How long an ``approve`` waits for a person before it trips.
        session: The run's guard session (default: :func:`duraguard.session`).

    A ``deny`` does not raise: the trip comes back as ``tripped`` for your code to act on. An
    ``approve`` waits, durably, for a person's signed yes (``duraguard pending``/``approve``);
    with it the value goes on, without it the check trips. A ``halt`` fails the workflow with
    :class:`GuardrailHalt` (non-retryable).
    """
    s = session or current()
    s.counts.calls += 1
    run = _CheckRun(s, to_specs(guardrails), name, f"{name}-{s.counts.calls}", agent)
    run.approval_timeout = approval_timeout
    if input is not None and call is not None and parallel:
        in_result, result, cancelled = await run.race(placement, input, call)
    else:
        in_result, cancelled = None, False
        if input is not None:
            in_result = await run.judged(placement, input, "input")
        if in_result is not None and in_result.tripped:
            result = None
        else:
            result = await call() if call is not None else None
    if in_result is not None and in_result.tripped:
        _raise_on_halt(s, in_result.verdict)
        return CheckResult(
            verdict=in_result.verdict, tripped=True, cancelled=cancelled, approver=run.approver
        )
    value = in_result.use(_plain(input)) if in_result is not None else input
    verdict = in_result.verdict if in_result is not None else Verdict.allow()
    if call is not None and output is not None:
        out = await run.judged(output_placement, output(result), "output")
        if out.tripped:
            _raise_on_halt(s, out.verdict)
            return CheckResult(
                verdict=out.verdict, tripped=True, cancelled=cancelled, approver=run.approver
            )
        verdict = out.verdict
        value = out.value if out.replaced else value
    return CheckResult(
        verdict=verdict,
        tripped=False,
        value=value,
        result=result,
        cancelled=cancelled,
        approver=run.approver,
    )


class _CheckRun:
    """One ``check()``: its guardrails, its id, and who said yes where a person was asked."""

    def __init__(
        self,
        session: SessionState,
        specs: tuple[GuardrailSpec, ...],
        name: str,
        check_id: str,
        agent: str | None,
    ) -> None:
        self.s, self.specs, self.name, self.check_id, self.agent = (
            session, specs, name, check_id, agent,
        )  # fmt: skip
        self.approver: str | None = None
        self.approval_timeout = DEFAULT_APPROVAL_TIMEOUT

    async def judged(self, placement: Placement, value: Any, side: str) -> PassResult:
        """The input or output judged; an ``approve`` waits for a person."""
        subject = _subject(self.s, placement, value, self.check_id, self.agent)
        r, who = await judge(
            self.s, self.specs, subject, purpose=f"check-{self.name}-{side}", label=self.name,
            approval_timeout=self.approval_timeout,
        )  # fmt: skip
        self.approver = self.approver or who
        return r

    async def race(
        self, placement: Placement, value: Any, call: Callable[[], Awaitable[Any]]
    ) -> tuple[PassResult, Any, bool]:
        """The input check and the call together: a trip cancels the call (a call already
        running cannot wait for a yes, so an ``approve`` trips here)."""
        task = asyncio.ensure_future(call())
        subject = _subject(self.s, placement, value, self.check_id, self.agent)
        (r,) = await recorded_pass(
            self.s, self.specs, [subject], purpose=f"check-{self.name}-input"
        )
        self.s.note_pass(r)
        if not r.tripped:
            return r, await task, False
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, CancelledError, ActivityError):
            pass
        return r, None, True


def _plain(given: Any) -> Any:
    if isinstance(given, dict) and "placement" in given and "value" in given:
        return given["value"]
    return given


def _raise_on_halt(session: SessionState, v: Verdict) -> None:
    if v.action == "halt":
        session.halt(v.by)
        raise GuardrailHalt(f"halted by guardrail {v.by!r}", by=v.by)
