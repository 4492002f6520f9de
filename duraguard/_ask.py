"""A verdict that asks a person: the call (or value) parked through the gate, then judged again
with their yes.

After a yes the call, as the person approved it (their edits included), is judged once more
with the person's grant: an ``approve`` the grant answers goes on, later guardrails (a budget)
still get their say, and a refusal of the person's own edits fails the run (the model did not
write those values). A hold a call took is given back while it waits and reserved afresh after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from ._gate import Decided, park
from ._judge import refuse, tool_subject
from ._outcome import DEFAULT_APPROVAL_TIMEOUT, CallGate, CallOptions, Refusal
from ._pass import recorded_pass
from ._state import SessionState
from ._types import PassResult, Subject, Verdict
from ._wire import PREVIEW_PURPOSE
from .budget import reservations_of, settle
from .errors import EditsRefused
from .guardrail import GuardrailSpec

MAX_ASKS_PER_CALL = 3
"""A call asked again after a yes (a rule needing another role) parks at most this often."""


async def ask(
    session: SessionState,
    gate: CallGate,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    halted_sibling: bool,
) -> CallGate:
    """Park the call on a person; after a yes, judge it again with the person's grant (a rule
    that still asks, for another role, parks it again, a few times at most)."""
    tool = gate.tool
    if halted_sibling:
        # A sibling of a halting turn does not wait for a person: the run is ending.
        why = "the run was halted before a person decided"
        return await refuse(session, gate, Refusal(kind="halted", tool=tool, reason=why))
    # A hold must not lapse under a parked call: give it back now, reserve again after the yes.
    await settle(gate.held, ok=False)
    gate = replace(gate, held=())
    for _ in range(MAX_ASKS_PER_CALL):
        budget = opts.approval_budget
        if budget is not None and session.counts.approvals_asked >= budget:
            why = "the approval budget of this run is spent"
            return await refuse(session, gate, Refusal(kind="budget", tool=tool, reason=why))
        session.counts.approvals_asked += 1

        async def preview(edited: Any, g: CallGate = gate) -> PassResult:
            return await _preview(session, g, edited, specs, opts)

        decided = await park(
            session,
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
            return await refuse(session, gate, said, approver=decided.approver)
        if decided.outcome == "expired":
            why = "the call needed a person's yes and the ask expired; it did not run"
            return await refuse(session, gate, Refusal(kind="expired", tool=tool, reason=why))
        gate = await _after_yes(session, gate, decided, specs, opts)
        if gate.refusal is not None or gate.verdict.action != "approve":
            return gate
    why = f"the call was asked about {MAX_ASKS_PER_CALL} times and still needs another yes"
    return await refuse(session, gate, Refusal(kind="policy", tool=tool, reason=why))


async def _preview(
    session: SessionState,
    gate: CallGate,
    edited: Any,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
) -> PassResult:
    """How the guardrails judge the call with a person's edits, before they sign: a recorded
    pass that holds nothing (an ``approve`` does not end it, so a later refusal shows)."""
    subject = tool_subject(session, gate.call_id, gate.tool, edited, opts.agent)
    subject = subject.model_copy(update={"preview": True})
    (judged,) = await recorded_pass(
        session, specs, [subject], purpose=PREVIEW_PURPOSE, mode=opts.mode
    )
    await settle(reservations_of(judged.verdicts), ok=False)
    return judged


async def _after_yes(
    session: SessionState,
    gate: CallGate,
    decided: Decided,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
) -> CallGate:
    """The call as the person approved it, judged again with their grant: later guardrails
    (a budget) still get their say; a refusal of the person's own edits fails the run."""
    subject = tool_subject(
        session, gate.call_id, gate.tool, decided.args, opts.agent, grant=decided.grant,
        compensation_of=gate.compensation_of, view=any(g.reads_session for g in specs),
    )  # fmt: skip
    (again,) = await recorded_pass(session, specs, [subject], purpose="approved", mode=opts.mode)
    session.note_pass(again)
    gate = replace(
        gate,
        args=again.use(decided.args),
        verdict=again.verdict,
        approver=decided.approver,
        held=tuple(reservations_of(again.verdicts)),
    )
    v = again.verdict
    if v.action not in ("deny", "halt"):
        return gate
    if decided.edited:
        await settle(gate.held, ok=False)
        raise EditsRefused(
            f"the edits {decided.approver} made to call {gate.call_id} ({gate.tool}) were "
            f"refused by {v.by}: {v.reason}",
            by=v.by,
        )
    return await refuse(session, gate, Refusal.of(v, gate.tool))


async def judge(
    session: SessionState,
    specs: Sequence[GuardrailSpec],
    subject: Subject,
    *,
    purpose: str,
    label: str | None = None,
    approval_timeout: timedelta = DEFAULT_APPROVAL_TIMEOUT,
    mode: str | None = None,
    judged: PassResult | None = None,
) -> tuple[PassResult, str | None]:
    """One recorded pass over ``subject`` (``judged``: its result, from a step that judged it
    with others); an ``approve`` waits for a person, then the value is judged again with their
    grant. Returns the deciding pass and who said yes."""
    if judged is None:
        (judged,) = await recorded_pass(session, specs, [subject], purpose=purpose, mode=mode)
    result = judged
    session.note_pass(result)
    if result.verdict.action != "approve":
        return result, None
    session.counts.approvals_asked += 1
    decided = await park(
        session,
        call_id=subject.call_id or purpose,
        tool=subject.tool,
        args=result.use(subject.value),
        verdict=result.verdict,
        timeout=approval_timeout,
        label=label,
    )
    if decided.outcome != "yes":
        reason = f"{decided.approver} said no" if decided.outcome == "no" else "the ask expired"
        refused = Verdict.deny(reason, by=result.verdict.by, check=f"approval.{decided.outcome}")
        return result.model_copy(update={"verdict": refused}), decided.approver
    again_subject = subject.model_copy(update={"value": decided.args, "grant": decided.grant})
    (again,) = await recorded_pass(
        session, specs, [again_subject], purpose=f"{purpose}-approved", mode=mode
    )
    session.note_pass(again)
    if again.verdict.action == "approve":
        refused = Verdict.deny("another yes is still needed", by=again.verdict.by)
        return again.model_copy(update={"verdict": refused}), decided.approver
    if not again.replaced and (decided.edited or result.replaced):
        # What the person said yes to goes on: their edit, or the value as the first pass
        # replaced it (a mask before the ask is not undone by the yes).
        again = again.model_copy(update={"value": decided.args, "replaced": True})
    return again, decided.approver
