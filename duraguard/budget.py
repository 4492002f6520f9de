"""Per-principal budgets, kept by one entity workflow per principal.

Two agents working for the same person at the same moment must not overspend. So the money is
not counted in any agent's own history: a guardrail of kind ``budget`` *reserves* the call's
amount, by update, in the entity workflow ``duraguard-budget-{principal}`` before the tool runs.
The entity decides reservations one at a time (an update handler that never awaits), so of five
concurrent asks against a limit that admits two, exactly two are held. After the tool:

* it succeeded: the loop runs ``duraguard.budget-commit`` and the amount is spent;
* it failed, or the call never ran (a later guardrail refused it, a person said no): the loop
  runs ``duraguard.budget-release`` and the amount comes back;
* nothing came yet (the worker died in between, the call waits for a person): the hold stays
  for as long as the run that took it may still spend it. Every ``hold_seconds`` the entity
  asks whether that run is still running (``duraguard.budget-owners``, a recorded step): if it
  is, the hold is kept; if it closed without settling (terminated, timed out), the hold is
  released. So a hold never lapses under a call that can still run: no overspend.
* a call parked on a person gives its hold back when it parks and reserves again after the
  yes (duraguard's gate does this), so a slow approver holds nothing.
* a check whose reserve does not come back in time (a loaded entity, a lost connection) is
  refused, and the refusal carries the reservation marked abandoned: the loop releases what a
  refused call holds, as a step retried until it lands, and a reserve of that id reaching the
  entity later takes nothing. A check cancelled from outside withdraws its own hold before it
  stops; each run of a check claims its hold and a retry re-claims it, so a withdrawal by the
  run that gave up never takes a hold a later run's verdict carries.

Periods (``hour``, ``day``, ``week``, ``month``, UTC, or ``total``) reset by workflow time. The
entity continues-as-new when its history grows, carrying its state.

Worker side: register :data:`BUDGET_WORKFLOWS` and :data:`BUDGET_ACTIVITIES` (the plugin does).
Workflow side: ``guardrails=[budget(limit=200, tools=["refund_card"])]`` and, after the tool,
``await settle(reservations, ok=...)``.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import temporalio.activity
import temporalio.client
import temporalio.common
import temporalio.exceptions
import temporalio.service
import temporalio.workflow
from pydantic import Field

from ._budget_activities import (
    BUDGET_ACTIVITIES,
    _reserve,
    _withdraw,
    budget_commit,
    budget_owners,
    budget_release,
)
from ._budget_entity import (
    BUDGET_WORKFLOWS,
    CLIENT_RESOURCE,
    PERIODS,
    QUEUE_RESOURCE,
    RESOURCE,
    STATE_QUERY,
    BudgetState,
    BudgetWorkflow,
    Period,
    ReserveRequest,
    ReserveResult,
    SettleRequest,
    SettleResult,
    entity_id,
)
from ._budget_settle import reservations_of, settle
from ._deadline import taking
from ._types import Action, Detection, Reservation, Subject, Verdict
from .checks.principals import tool_matches
from .errors import ConfigurationError
from .guardrail import (
    DEFAULT_TIMEOUT,
    Guardrail,
    GuardrailSpec,
    Kind,
    Resources,
    Settings,
    register_kind,
)


class BudgetSettings(Settings):
    limit: float = Field(gt=0)
    period: Period = "day"
    amount_field: str = "amount"
    """The argument holding the amount; dots reach into objects (``payment.amount``)."""
    tools: tuple[str, ...] | None = None
    account: str | None = None
    """The budget's name within the principal's entity; defaults to the guardrail's name."""
    hold_seconds: float = Field(default=600.0, gt=0)
    """How often the entity asks whether the run holding a reservation still runs (a hold
    taken from plain code, with no run, is released after this long)."""
    task_queue: str | None = None
    """Where the entity workflows run; default: ``Resources.extra["budget_task_queue"]``, else
    the task queue of the activity running the check."""
    max_history: int = Field(default=0, ge=0)
    action: Action = "deny"


def _amount(value: Any, path: str) -> float | None:
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None  # an integer past the largest float: not an amount it can hold
    return number if math.isfinite(number) and number >= 0 else None


def reservation_id(subject: Subject) -> str:
    """Stable per call and pass, so a retried check finds (and re-claims) its own hold instead
    of taking a second one. The pass after a person's yes and an edits preview reserve afresh:
    their ids name the yes and the previewed value."""
    ctx = subject.context
    if not (ctx.workflow_id and subject.call_id):
        return f"adhoc/{uuid.uuid4()}"
    rid = f"{ctx.workflow_id}/{ctx.run_id or ''}/{subject.call_id}"
    if subject.grant is not None:
        rid += f"/yes-{subject.grant.nonce[:24]}"
    if subject.preview:
        rid += f"/preview-{subject.digest()[:16]}"
    return rid


def _reserve_within(timeout: float) -> float:
    """How long the check waits for the entity: most of the guardrail's timeout, leaving time
    to answer before the engine's own deadline. Past that deadline the engine cancels the check
    (which then withdraws its hold) or, when the answer came but the verdict is late, refuses
    with the verdict's reservation carried, for the loop to release."""
    return max(timeout - 2.0, timeout * 0.7)


def _abandoned(req: ReserveRequest, data: dict[str, Any]) -> Reservation:
    """The hold ``req`` may have taken, marked abandoned: the loop gives it back (releases it),
    and the entity refuses that reserve if it arrives after."""
    return Reservation(resource=RESOURCE, id=req.id, data={**data, "abandoned": True})


def _fmt(x: float) -> str:
    return f"{x:,.2f}".rstrip("0").rstrip(".")


class BudgetGuardrail(Guardrail):
    """Reserves the call's amount in the principal's budget entity; refuses what would overspend."""

    remote = True

    def __init__(self, settings: BudgetSettings, resources: Resources) -> None:
        self.settings = settings
        self.resources = resources

    def _client(self) -> temporalio.client.Client:
        found = self.resources.extra.get(CLIENT_RESOURCE)
        if found is not None:
            return found  # type: ignore[no-any-return]
        if temporalio.activity.in_activity():
            return temporalio.activity.client()
        raise ConfigurationError(
            f"budget guardrail {self.name!r} needs a Temporal client: run it in duraguard's check "
            f'activity, or lend one as Resources(extra={{"{CLIENT_RESOURCE}": client}})'
        )

    def _queue(self) -> str:
        queue = self.settings.task_queue or self.resources.extra.get(QUEUE_RESOURCE)
        if queue:
            return str(queue)
        if temporalio.activity.in_activity():
            return temporalio.activity.info().task_queue
        raise ConfigurationError(
            f"budget guardrail {self.name!r} does not know where its entity workflows run: set "
            f'budget(task_queue=...) or Resources(extra={{"{QUEUE_RESOURCE}": "..."}})'
        )

    async def check(self, subject: Subject) -> Verdict:
        s = self.settings
        if not tool_matches(subject.tool, s.tools):
            return Verdict.allow()
        tool = subject.tool or "(no tool)"
        principal = subject.context.principal
        if principal is None:
            return self._refuse(
                f"tool {tool!r} spends from a per-person budget and this run has no principal; "
                "start the workflow under `with duraguard.principal(...)`",
                "budget.principal",
            )
        amount = _amount(subject.value, s.amount_field)
        if amount is None:
            return self._refuse(
                f"tool {tool!r} spends from budget {self.name!r} but its argument "
                f"{s.amount_field!r} is not a number >= 0; give the amount as a number",
                "budget.amount",
            )
        account = s.account or self.name
        queue = self._queue()
        req = self._request(subject, account, amount)
        client = self._client()
        data: dict[str, Any] = {
            "workflow_id": entity_id(principal),
            "task_queue": queue,
            "principal": principal,
            "account": account,
            "amount": amount,
            "period": s.period,
            "limit": s.limit,
        }
        # Past the engine's deadline (a loop held up past this check's own bound), the
        # engine's refusal carries the hold the entity may have taken, for the loop to give
        # back, as this check's own refusal does (_gave_up).
        taking(_abandoned(req, data))
        try:
            # Bounded inside the guardrail's own timeout, so a reserve that does not come back
            # ends in a verdict of ours: one that carries the hold the entity may have taken.
            async with asyncio.timeout(_reserve_within(self.timeout)):
                result = await _reserve(client, principal, queue, req, s.max_history)
        except asyncio.CancelledError:
            # Cancelled from outside (the guardrail's deadline, the worker): withdraw the hold
            # now too (a retry that re-claimed it keeps it); the worker's cancel has no refusal.
            await _withdraw(client, principal, queue, req)
            raise
        except Exception as err:
            if self.on_error == "fail":
                await _withdraw(client, principal, queue, req)
                raise
            return self._gave_up(req, data, err)
        if not result.ok:
            return self._overspend(result, principal, tool, amount)
        data["period_key"] = result.period_key
        return Verdict.allow(
            check="budget",
            reservations=(Reservation(resource=RESOURCE, id=req.id, data=data),),
        )

    def _request(self, subject: Subject, account: str, amount: float) -> ReserveRequest:
        s = self.settings
        return ReserveRequest(
            id=reservation_id(subject),
            account=account,
            amount=amount,
            limit=s.limit,
            period=s.period,
            hold_seconds=s.hold_seconds,
            tool=subject.tool,
            owner=subject.context.workflow_id if subject.call_id else None,
            owner_run=subject.context.run_id if subject.call_id else None,
            claim=secrets.randbits(31),  # this run of the check (a retry is another)
        )

    def _gave_up(self, req: ReserveRequest, data: dict[str, Any], err: Exception) -> Verdict:
        """Refused, and carrying the reservation marked abandoned: the entity may have taken
        the hold, and the loop releases what a refused call holds, as a recorded step that is
        retried until it lands (the entity then refuses that reserve if it arrives later)."""
        why = "no answer in time" if isinstance(err, TimeoutError) else type(err).__name__
        return Verdict(
            action="deny",
            outcome="partial",
            reason=(
                f"guardrail {self.name!r} could not decide (the budget entity: {why}); the call "
                "is refused until it can"
            ),
            detections=(Detection(rule="budget.unreachable", detected=True),),
            check="budget",
            reservations=(_abandoned(req, data),),
        )

    def _overspend(
        self, result: ReserveResult, principal: str, tool: str, amount: float
    ) -> Verdict:
        """The verdict on a reservation the entity refused: what was spent, held and left."""
        s = self.settings
        account = s.account or self.name
        left = max(result.limit - result.spent - result.held, 0.0)
        when = (
            f"; the {s.period} resets at "
            f"{datetime.fromtimestamp(result.resets_at, UTC):%Y-%m-%dT%H:%MZ}"
            if result.resets_at is not None
            else ""
        )
        return Verdict(
            action=s.action,
            reason=(
                f"budget {account!r} of {principal!r}: spent {_fmt(result.spent)} and "
                f"{_fmt(result.held)} held of {_fmt(result.limit)} per {s.period}; "
                f"{tool!r} asks {_fmt(amount)}, which would overspend. "
                f"At most {_fmt(left)} is left{when}"
            ),
            detections=(Detection(rule="budget.limit", detail=result.period_key),),
            check="budget",
        )

    def _refuse(self, reason: str, rule: str) -> Verdict:
        return Verdict(
            action="deny",
            outcome="partial",
            reason=reason,
            detections=(Detection(rule=rule),),
            check="budget",
        )


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    return BudgetGuardrail(BudgetSettings(**spec.settings), resources)


KIND = register_kind(
    Kind(
        "budget",
        BudgetSettings,
        _build,
        placements=("tool-args",),
        remote=True,
        reads_session=False,
    )
)


def budget(
    *,
    limit: float,
    period: Period = "day",
    amount_field: str = "amount",
    tools: Iterable[str] | None = None,
    account: str | None = None,
    hold_seconds: float = 600.0,
    task_queue: str | None = None,
    max_history: int = 0,
    name: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> GuardrailSpec:
    """A per-principal spending limit, shared by every agent working for the same person.

    Args:
        limit: The most the principal may spend per ``period``.
        period: ``hour``, ``day``, ``week``, ``month`` (UTC, by workflow time) or ``total``.
        amount_field: The argument holding the amount (dots reach into objects).
        tools: fnmatch patterns of the tools that spend from it; ``None``: every tool it sees.
        account: The budget's name within the principal's entity (default: the guardrail name),
            so two budgets of one person (refunds, travel) are kept apart.
        hold_seconds: How often the entity asks whether the run holding a reservation still
            runs; a hold is kept while it does (so it never lapses under a call that may still
            spend it) and released once the run has ended without settling.
        task_queue: Where the entity workflows run (see :class:`BudgetSettings`).
        max_history: Continue-as-new past this many events (0: the server's suggestion).
    """
    if period not in PERIODS:
        raise ConfigurationError(f"unknown budget period {period!r}; known: {', '.join(PERIODS)}")
    return KIND.spec(
        name=name,
        timeout=timeout,
        limit=limit,
        period=period,
        amount_field=amount_field,
        tools=None if tools is None else tuple(tools),
        account=account,
        hold_seconds=hold_seconds,
        task_queue=task_queue,
        max_history=max_history,
    )


__all__ = [
    "BUDGET_ACTIVITIES",
    "BUDGET_WORKFLOWS",
    "PERIODS",
    "STATE_QUERY",
    "BudgetGuardrail",
    "BudgetState",
    "BudgetWorkflow",
    "Period",
    "SettleRequest",
    "SettleResult",
    "budget",
    "budget_commit",
    "budget_owners",
    "budget_release",
    "entity_id",
    "reservations_of",
    "settle",
]
