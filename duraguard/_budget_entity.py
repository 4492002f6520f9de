"""The budget entity: one workflow per principal that holds, commits and releases amounts.

Its update handlers never await, so reservations are decided one at a time; a hold lives as
long as the run that took it may still spend it (``duraguard.budget-owners``). See
:mod:`duraguard.budget` for the guardrail that reserves through it.
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timedelta
from typing import Literal

import temporalio.workflow

from ._budget_wire import BUDGET_WORKFLOW as BUDGET_WORKFLOW
from ._budget_wire import CLIENT_RESOURCE as CLIENT_RESOURCE
from ._budget_wire import COMMIT_ACTIVITY as COMMIT_ACTIVITY
from ._budget_wire import COMMIT_UPDATE as COMMIT_UPDATE
from ._budget_wire import OWNERS_ACTIVITY as OWNERS_ACTIVITY
from ._budget_wire import PERIODS as PERIODS
from ._budget_wire import QUEUE_RESOURCE as QUEUE_RESOURCE
from ._budget_wire import RELEASE_ACTIVITY as RELEASE_ACTIVITY
from ._budget_wire import RELEASE_UPDATE as RELEASE_UPDATE
from ._budget_wire import RESERVE_UPDATE as RESERVE_UPDATE
from ._budget_wire import RESOURCE as RESOURCE
from ._budget_wire import STATE_QUERY as STATE_QUERY
from ._budget_wire import Account as Account
from ._budget_wire import BudgetState as BudgetState
from ._budget_wire import Hold as Hold
from ._budget_wire import OwnersRequest as OwnersRequest
from ._budget_wire import OwnersResult as OwnersResult
from ._budget_wire import Period as Period
from ._budget_wire import ReserveRequest as ReserveRequest
from ._budget_wire import ReserveResult as ReserveResult
from ._budget_wire import SettleRequest as SettleRequest
from ._budget_wire import SettleResult as SettleResult
from ._budget_wire import entity_id as entity_id
from ._budget_wire import period_end as period_end
from ._budget_wire import period_key as period_key

_SETTLED_KEPT = 2000

TIMERS_KEPT = "duraguard.budget-timers-kept"
"""Patch: the entity's loop never cancels an expiry timer (:meth:`BudgetWorkflow._arm`); a run
started before it replays with the timeout it waited with then."""


def _withdrawn(claim: int) -> str:
    return f"withdrawn/{claim}"


ABANDONED = "withdrawn/*"
"""Settled as given up by every run of the check (the call's recorded verdict says so)."""


def _roll(account: Account, period: Period, now: datetime) -> None:
    key = period_key(period, now)
    if account.period != period or account.period_key != key:
        # A new period starts from nothing; holds of the old one no longer count against it.
        account.period, account.period_key, account.spent = period, key, 0.0
        account.holds = {k: h for k, h in account.holds.items() if h.period_key == key}


@temporalio.workflow.defn(name=BUDGET_WORKFLOW)
class BudgetWorkflow:
    """The budget of one principal: reserve, commit and release by update; holds expire."""

    @temporalio.workflow.init
    def __init__(self, state: BudgetState) -> None:
        # Set from the input before any handler runs: an update may arrive with the start.
        self._state = state
        self._changed = False
        self._rang = False
        self._alarms: dict[float, asyncio.Task[None]] = {}  # expiry timers running, by when

    @temporalio.workflow.run
    async def run(self, state: BudgetState) -> None:
        keeps_timers = temporalio.workflow.patched(TIMERS_KEPT)
        while True:
            self._sweep()
            await self._ask_owners()
            wait = self._next_expiry()
            if keeps_timers:
                self._arm(wait)
                await temporalio.workflow.wait_condition(
                    lambda: self._changed or self._rang or self._should_continue()
                )
            else:  # a run started before TIMERS_KEPT: its replay gives the commands it gave
                try:
                    await temporalio.workflow.wait_condition(
                        lambda: self._changed or self._should_continue(),
                        timeout=wait,
                        timeout_summary="budget hold expiry" if wait is not None else None,
                    )
                except TimeoutError:
                    pass
            self._changed = self._rang = False
            if self._should_continue():
                await temporalio.workflow.wait_condition(temporalio.workflow.all_handlers_finished)
                self._sweep()
                temporalio.workflow.continue_as_new(self._state)

    def _arm(self, wait: float | None) -> None:
        """Have a timer wake the loop when the first hold is due, and never cancel one.

        A timer cancelled as it fires makes the server refuse the workflow task
        (``BadCancelTimerAttributes``), and every update that task held is aborted: under load,
        with an update waking the loop every few milliseconds, that race is common. A timer
        that would fire later than needed is left running and an earlier one started beside it;
        one that fires early wakes a sweep that finds nothing due, and the next is armed."""
        if wait is None:
            return
        at = self._now().timestamp() + wait
        if any(pending <= at for pending in self._alarms):
            return
        self._alarms[at] = asyncio.create_task(self._ring(wait, at))

    async def _ring(self, wait: float, at: float) -> None:
        await temporalio.workflow.sleep(wait, summary="budget hold expiry")
        self._rang = True
        del self._alarms[at]

    def _now(self) -> datetime:
        return temporalio.workflow.now()

    def _should_continue(self) -> bool:
        info = temporalio.workflow.info()
        limit = self._state.max_history
        return info.is_continue_as_new_suggested() or (
            limit > 0 and info.get_current_history_length() >= limit
        )

    def _next_expiry(self) -> float | None:
        ends = [h.expires_at for a in self._state.accounts.values() for h in a.holds.values()]
        if not ends:
            return None
        return max(min(ends) - self._now().timestamp(), 0.001)

    def _remember(self, rid: str, outcome: str) -> None:
        settled = self._state.settled
        settled.pop(rid, None)
        settled[rid] = outcome
        while len(settled) > _SETTLED_KEPT:
            settled.pop(next(iter(settled)))

    def _due(self) -> list[tuple[Account, Hold]]:
        now = self._now().timestamp()
        return [
            (account, hold)
            for account in self._state.accounts.values()
            for hold in account.holds.values()
            if hold.expires_at <= now
        ]

    def _expire(self, account: Account, hold: Hold) -> None:
        del account.holds[hold.id]
        self._state.expired += 1
        self._remember(hold.id, "expired")

    def _sweep(self) -> None:
        """Release due holds that name no run (taken from plain code): nothing can ask after them."""
        for account, hold in self._due():
            if hold.owner is None:
                self._expire(account, hold)

    async def _ask_owners(self) -> None:
        """Due holds whose run still runs are kept (it may still spend them); the others go."""
        due = [(a, h) for a, h in self._due() if h.owner is not None]
        if not due:
            return
        owners = sorted({(h.owner or "", h.owner_run or "") for _, h in due})
        answer: OwnersResult = await temporalio.workflow.execute_activity(
            OWNERS_ACTIVITY,
            OwnersRequest(owners=tuple(owners)),
            result_type=OwnersResult,
            start_to_close_timeout=timedelta(seconds=30),
            summary=f"budget: are the runs of {len(due)} hold(s) still running?",
        )
        running = {(o[0], o[1]) for o in answer.running}
        now = self._now().timestamp()
        for account, hold in due:
            if hold.id not in account.holds:
                continue  # settled while we asked
            if (hold.owner or "", hold.owner_run or "") in running:
                account.holds[hold.id] = hold.model_copy(
                    update={"expires_at": now + hold.hold_seconds}
                )
            else:
                self._expire(account, hold)

    @temporalio.workflow.update(name=RESERVE_UPDATE)
    def reserve(self, req: ReserveRequest) -> ReserveResult:
        now = self._now()
        self._sweep()
        account = self._state.accounts.setdefault(req.account, Account(period=req.period))
        _roll(account, req.period, now)
        held = account.held
        ok = True
        before = self._state.settled.get(req.id)
        if req.id in account.holds:
            # The same reservation asked again (a retried check): same answer, no new hold; the
            # asking attempt now claims it, so the attempt that gave up cannot withdraw it.
            hold = account.holds[req.id]
            if hold.claim != req.claim:
                account.holds[req.id] = hold.model_copy(update={"claim": req.claim})
        elif before == "committed":
            pass  # already spent under this id: same answer
        elif before in (_withdrawn(req.claim), ABANDONED):
            ok = False  # given up on before it arrived: nobody would settle it
        elif account.spent + held + req.amount > req.limit + 1e-9:
            ok = False
        else:
            account.holds[req.id] = Hold(
                id=req.id,
                amount=req.amount,
                period_key=account.period_key,
                expires_at=now.timestamp() + req.hold_seconds,
                tool=req.tool,
                owner=req.owner,
                owner_run=req.owner_run,
                hold_seconds=req.hold_seconds,
                claim=req.claim,
            )
            held += req.amount
            self._changed = True
        end = period_end(req.period, now)
        return ReserveResult(
            ok=ok,
            id=req.id,
            account=req.account,
            amount=req.amount,
            spent=account.spent,
            held=held,
            limit=req.limit,
            period=req.period,
            period_key=account.period_key,
            resets_at=end.timestamp() if end else None,
        )

    @reserve.validator
    def _check_reserve(self, req: ReserveRequest) -> None:
        if not (math.isfinite(req.amount) and req.amount >= 0):
            raise ValueError(f"amount must be a finite number >= 0; got {req.amount}")
        if not (math.isfinite(req.limit) and req.limit > 0):
            raise ValueError(f"limit must be a finite number > 0; got {req.limit}")
        if req.hold_seconds <= 0:
            raise ValueError(f"hold_seconds must be > 0; got {req.hold_seconds}")

    @temporalio.workflow.update(name=COMMIT_UPDATE)
    def commit(self, req: SettleRequest) -> SettleResult:
        return self._settle(req, commit=True)

    @temporalio.workflow.update(name=RELEASE_UPDATE)
    def release(self, req: SettleRequest) -> SettleResult:
        return self._settle(req, commit=False)

    def _settle(self, req: SettleRequest, *, commit: bool) -> SettleResult:
        r = req.reservation
        name = str(r.data.get("account", RESOURCE))
        period: Period = r.data.get("period", "day")
        account = self._state.accounts.setdefault(name, Account(period=period))
        _roll(account, period, self._now())
        self._sweep()
        before = self._state.settled.get(r.id)
        hold = account.holds.get(r.id)
        if not commit and r.data.get("abandoned"):
            return self._abandon(account, r.id)
        if not commit and req.claim is not None:
            return self._withdraw(account, r.id, req.claim)
        account.holds.pop(r.id, None)
        self._changed = True
        if hold is None and (before == "committed" or (before == "released" and not commit)):
            return SettleResult(id=r.id, outcome="already", spent=account.spent)
        if not commit:
            self._remember(r.id, "released")
            outcome: Literal["released", "unknown"] = "released" if hold else "unknown"
            return SettleResult(id=r.id, outcome=outcome, spent=account.spent)
        amount = req.amount if req.amount is not None else float(r.data.get("amount", 0.0))
        # The tool ran: its spend counts in the period it was reserved in, hold or no hold.
        if r.data.get("period_key", account.period_key) == account.period_key:
            account.spent += amount
        self._remember(r.id, "committed")
        return SettleResult(id=r.id, outcome="committed" if hold else "late", spent=account.spent)

    def _abandon(self, account: Account, rid: str) -> SettleResult:
        """The recorded verdict on the call is a check that gave up: no run of that check can
        carry the hold any more, so it goes whoever claims it, and a reserve of the id arriving
        later takes nothing."""
        hold = account.holds.pop(rid, None)
        self._changed = True
        if self._state.settled.get(rid) != "committed":
            self._remember(rid, ABANDONED)
        outcome: Literal["released", "unknown"] = "released" if hold else "unknown"
        return SettleResult(id=rid, outcome=outcome, spent=account.spent)

    def _withdraw(self, account: Account, rid: str, claim: int) -> SettleResult:
        """A check attempt that gave up (timed out, failed) with its reserve perhaps taken."""
        hold = account.holds.get(rid)
        if hold is not None and hold.claim != claim:
            # A later attempt of the same check claimed it: its verdict may carry the hold.
            return SettleResult(id=rid, outcome="kept", spent=account.spent)
        if hold is not None:
            del account.holds[rid]
            self._changed = True
        if self._state.settled.get(rid) not in ("committed", "released"):
            # Remembered, so a reserve of that attempt arriving after this takes nothing.
            self._remember(rid, _withdrawn(claim))
        outcome: Literal["released", "unknown"] = "released" if hold else "unknown"
        return SettleResult(id=rid, outcome=outcome, spent=account.spent)

    @temporalio.workflow.query(name=STATE_QUERY)
    def state(self) -> BudgetState:
        return self._state


BUDGET_WORKFLOWS: list[type] = [BudgetWorkflow]
