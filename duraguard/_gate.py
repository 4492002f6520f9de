"""The gate, where a call waits for a person: the decide signal/update, the queries, expiry.

A parked ask is recorded in history (the ``duraguard.ask`` step, which also draws the ask's
challenge), so it can be found and answered with nothing but the history. A decision arrives
by update (its validator refuses a bad one synchronously, leaving nothing in history) or by
signal (fire and forget). Everything that arrives is hostile until checked: the handlers never
raise, a malformed, oversized, misaddressed or replayed decision is refused in workflow code
without any step, and refusals recorded in the audit are bounded per run. A decision that
passes those checks is verified in a recorded step (the one verifier, on the worker: signature,
role, expiry, nonce, the run and the ask it answers); a bad one leaves the ask standing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, get_type_hints

from temporalio import workflow

from ._decisions import MAX_CHECKS_PER_ASK as MAX_CHECKS_PER_ASK
from ._decisions import read_decision
from ._plan import PlanDesk
from ._preview import PreviewDesk
from ._state import DECISION_CHECKER, Parked, SessionState
from ._types import (
    Action,
    ApprovalAsk,
    Grant,
    NotJSON,
    PassResult,
    Verdict,
    call_digest,
)
from ._wire import (
    APPROVE_PLAN,
    ASK_ACTIVITY,
    DECIDE,
    EXPIRY_SUMMARY,
    PENDING_QUERY,
    PREVIEW_EDITS,
    VERDICTS_QUERY,
    VERIFY_ACTIVITY,
    AuditRow,
    PendingAsk,
    VerifyRequest,
)
from .approvals import ApprovalCheck, Decision

MAX_REFUSED_ROWS = 16
"""Refused decision messages written to the audit per run; more are only counted."""


@dataclass(frozen=True)
class Decided:
    """How a parked call's wait ended."""

    outcome: Literal["yes", "no", "expired"]
    args: Any
    """What the person approved: the asked arguments with their edits merged in."""
    approver: str | None = None
    reason: str | None = None
    """The person's own (signed) words."""
    edited: bool = False
    grant: Grant | None = None


def install(session: SessionState) -> None:
    """Register duraguard's handlers on the run: the decide signal and update, the
    preview-edits and plan updates, the pending and verdicts queries."""
    AskDesk(session).install()


async def park(
    session: SessionState,
    *,
    call_id: str,
    tool: str | None,
    args: Any,
    verdict: Verdict,
    timeout: timedelta,
    label: str | None = None,
    judge_edits: Callable[[Any], Awaitable[PassResult]] | None = None,
) -> Decided:
    """Wait, durably, for a person's signed decision on this exact call, or for expiry."""
    return await AskDesk(session).park(
        call_id=call_id, tool=tool, args=args, verdict=verdict, timeout=timeout, label=label,
        judge_edits=judge_edits,
    )  # fmt: skip


class AskDesk:
    """The asks of one session (:class:`~duraguard._state.Asks`), and the handlers that answer
    them (beside the :class:`~duraguard._preview.PreviewDesk` and the
    :class:`~duraguard._plan.PlanDesk`). Not to be confused with a
    :class:`~duraguard.workflow.CallGate`, which is one call after its checks."""

    def __init__(self, session: SessionState) -> None:
        self.session = session
        self.asks = session.asks

    def install(self) -> None:
        workflow.set_signal_handler(DECIDE, self._on_signal)
        workflow.set_update_handler(DECIDE, self._on_update, validator=self._validate)
        preview = PreviewDesk(self.asks)
        workflow.set_update_handler(PREVIEW_EDITS, preview.on_preview, validator=preview.validate)
        desk = PlanDesk(self.session)
        workflow.set_update_handler(APPROVE_PLAN, desk.on_plan, validator=desk.validate)
        workflow.set_query_handler(PENDING_QUERY, self.pending)
        workflow.set_query_handler(VERDICTS_QUERY, self.verdicts)

    # -- queries (never raise) -------------------------------------------------------------
    def pending(self) -> list[PendingAsk]:
        return self.asks.pending()

    def verdicts(self) -> list[AuditRow]:
        return list(self.session.rows)

    # -- what arrives from outside (read by _decisions) --------------------------------------
    def _refused(self, decision: Decision | None, problem: str) -> None:
        """A message refused without any step: counted, and in the audit up to a bound."""
        self.asks.refused_messages += 1
        if self.asks.refused_messages <= MAX_REFUSED_ROWS:
            row = _row(
                self.session, decision.call_id if decision else None, None, "deny",
                DECISION_CHECKER, "decision.message", problem,
                approver=decision.approver if decision else None,
            )  # fmt: skip
            self.session.note(row, counts=False)
        else:
            self.session.publish()

    def _on_signal(self, *args: Any) -> None:
        decision, parked, problem = read_decision(self.session, args)
        if problem is not None or decision is None or parked is None:
            self._refused(decision, problem or "unreadable decision")
            return
        self.asks.messages += 1
        parked.inbox.append((self.asks.messages, decision))

    def _validate(self, *args: Any) -> None:
        _, _, problem = read_decision(self.session, args)
        if problem is not None:
            raise ValueError(problem)

    async def _on_update(self, *args: Any) -> ApprovalCheck:
        decision, parked, problem = read_decision(self.session, args)
        if problem is not None or decision is None or parked is None:
            # The validator passed it, but the ask changed since (another decision came first).
            return ApprovalCheck(ok=False, reason=problem or "unreadable decision")
        self.asks.messages += 1
        mine = self.asks.messages
        parked.inbox.append((mine, decision))
        await workflow.wait_condition(lambda: mine in parked.answers)
        return parked.answers.pop(mine)

    # -- parking a call --------------------------------------------------------------------
    async def park(
        self,
        *,
        call_id: str,
        tool: str | None,
        args: Any,
        verdict: Verdict,
        timeout: timedelta,
        label: str | None = None,
        judge_edits: Callable[[Any], Awaitable[PassResult]] | None = None,
    ) -> Decided:
        """Wait, durably, for a person's signed decision on this exact call, or for expiry."""
        s = self.session
        ask = verdict.ask or ApprovalAsk(prompt=verdict.reason)
        ttl = ask.expires_in_seconds or timeout.total_seconds()
        self.asks.asked += 1
        try:
            digest = call_digest(tool, args)
        except NotJSON:
            digest = ""
        asked = PendingAsk(
            workflow_id=s.workflow_id,
            run_id=s.run_id,
            call_id=call_id,
            tool=tool,
            args=args,
            label=label,
            call_digest=digest or "0" * 64,
            asked_by=verdict.by,
            check=verdict.check,
            reason=ask.prompt or verdict.reason,
            role=ask.role,
            expires_at=s.now() + ttl,
            turn=s.counts.turn,
        )
        recorded: PendingAsk = await workflow.execute_local_activity(
            ASK_ACTIVITY,
            asked,
            result_type=PendingAsk,
            start_to_close_timeout=timedelta(seconds=30),
            activity_id=f"dg-{call_id}-ask-{self.asks.asked}",
            summary=f"duraguard ask: {tool or label or '-'}"
            + (f" ({ask.role})" if ask.role else ""),
        )
        parked = Parked(ask=recorded, judge_edits=judge_edits)
        self.asks.parked[call_id] = parked
        s.publish()
        try:
            decided = await self._wait(parked)
        except BaseException:
            self._close(parked)  # the run is failing or being torn down: no workflow calls
            raise
        self._close(parked)
        s.publish()
        return decided

    @staticmethod
    def _close(parked: Parked) -> None:
        parked.decided = True
        for late, _ in parked.inbox:  # updates accepted while the last one was being checked
            parked.answers.setdefault(
                late, ApprovalCheck(ok=False, reason="the call was already decided")
            )
        parked.inbox.clear()

    async def _wait(self, parked: Parked) -> Decided:
        s = self.session
        ask = parked.ask
        while True:
            remaining = ask.expires_at - s.now()
            if remaining <= 0:
                break
            try:
                await workflow.wait_condition(
                    lambda: bool(parked.inbox),
                    timeout=timedelta(seconds=remaining),
                    timeout_summary=f"{EXPIRY_SUMMARY} {ask.call_id} {ask.tool or ask.label or '-'}",
                )
            except TimeoutError:
                break
            message, decision = parked.inbox.pop(0)
            checked = await self._verify(parked, decision)
            parked.answers[message] = checked
            if not checked.ok:
                continue  # a bad decision does not end the wait; the ask still stands
            if decision.decision == "deny":
                return Decided("no", ask.args, approver=decision.approver, reason=decision.reason)
            args = ask.args
            edited = bool(decision.edits) and isinstance(args, dict)
            if edited:
                args = {**ask.args, **(decision.edits or {})}
            return Decided(
                "yes",
                args,
                approver=decision.approver,
                reason=decision.reason,
                edited=edited,
                grant=checked.grant(ask.tool, args),
            )
        why = "nobody decided before the ask expired"
        s.note(_row(s, ask.call_id, ask.tool, "deny", "duraguard.expiry", "approval.expired", why))
        return Decided("expired", ask.args)

    async def _verify(self, parked: Parked, decision: Decision) -> ApprovalCheck:
        s = self.session
        ask = parked.ask
        parked.checks += 1
        checked: ApprovalCheck = await workflow.execute_local_activity(
            VERIFY_ACTIVITY,
            VerifyRequest(
                decision=decision,
                workflow_id=s.workflow_id,
                run_id=ask.run_id,
                call_id=ask.call_id,
                challenge=ask.challenge,
                tool=ask.tool,
                args=ask.args,
                role=ask.role,
                used_nonces=tuple(s.ledger.used_nonces),
            ),
            result_type=ApprovalCheck,
            start_to_close_timeout=timedelta(seconds=30),
            activity_id=f"dg-{ask.call_id}-decision-{decision.nonce[:16]}",
            summary=f"duraguard decision: {ask.tool or ask.label or '-'} by {decision.approver}"[
                :200
            ],
        )
        if checked.ok:
            # Only a decision that verified uses up its nonce: a forged copy of someone's
            # decision must not burn the nonce of the real one.
            s.ledger.use_nonce(decision.nonce)
        yes = checked.ok and decision.decision == "approve"
        row = _row(
            s, ask.call_id, ask.tool, "allow" if yes else "deny",
            "person" if checked.ok else DECISION_CHECKER,
            "decision" if checked.ok else "decision.refused",
            checked.reason or decision.reason, approver=decision.approver,
        )  # fmt: skip
        s.note(row, counts=checked.ok)
        return checked


def _row(
    s: SessionState,
    call_id: str | None,
    tool: str | None,
    action: Action,
    by: str,
    check: str,
    reason: str | None,
    *,
    approver: str | None = None,
) -> AuditRow:
    """An audit row the gate writes (a decision, a refused message, an expiry)."""
    return AuditRow(
        turn=s.counts.turn,
        call_id=call_id,
        tool=tool,
        placement="tool-args",
        action=action,
        by=by,
        check=check,
        approver=approver,
        reason=reason,
    )


def _hints_resolved(*handlers: Callable[..., Any]) -> None:
    """Give each handler its annotations as types, not strings. The SDK reads a handler's type
    hints every time one is set (``typing.get_type_hints``, which compiles each string afresh:
    80 µs a handler, nine handlers a run, more in the sandbox); resolved once here, at import, a
    run's handlers cost half as much to set."""
    for fn in handlers:
        fn.__annotations__ = get_type_hints(fn)


_hints_resolved(
    AskDesk._on_signal, AskDesk._on_update, AskDesk._validate, AskDesk.pending,
    AskDesk.verdicts, PreviewDesk.on_preview, PreviewDesk.validate, PlanDesk.on_plan,
    PlanDesk.validate,
)  # fmt: skip
