"""What crosses to and from a budget entity: its names (workflow, updates, query, activities),
a principal's entity id and periods, and the models of its state and its updates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ._types import Reservation

Period = Literal["hour", "day", "week", "month", "total"]
PERIODS: tuple[Period, ...] = ("hour", "day", "week", "month", "total")

RESOURCE = "budget"
BUDGET_WORKFLOW = "duraguard.budget"
RESERVE_UPDATE = "duraguard.budget.reserve"
COMMIT_UPDATE = "duraguard.budget.commit"
RELEASE_UPDATE = "duraguard.budget.release"
STATE_QUERY = "duraguard.budget.state"
COMMIT_ACTIVITY = "duraguard.budget-commit"
RELEASE_ACTIVITY = "duraguard.budget-release"
OWNERS_ACTIVITY = "duraguard.budget-owners"
CLIENT_RESOURCE = "temporal_client"
"""``Resources.extra`` key of the Temporal client the guardrail reserves through."""
QUEUE_RESOURCE = "budget_task_queue"
"""``Resources.extra`` key of the task queue the entity workflows run on."""


def entity_id(principal: str) -> str:
    """The id of ``principal``'s budget workflow."""
    return f"duraguard-budget-{principal}"


def period_key(period: Period, when: datetime) -> str:
    """Which period ``when`` (UTC) falls in, e.g. ``2026-11-30`` for ``day``."""
    when = when.astimezone(UTC)
    if period == "hour":
        return when.strftime("%Y-%m-%dT%H")
    if period == "day":
        return when.strftime("%Y-%m-%d")
    if period == "week":
        year, week, _ = when.isocalendar()
        return f"{year}-W{week:02d}"
    if period == "month":
        return when.strftime("%Y-%m")
    return "total"


def period_end(period: Period, when: datetime) -> datetime | None:
    """When the period holding ``when`` ends (the next one starts); ``None`` for ``total``."""
    when = when.astimezone(UTC)
    if period == "hour":
        return when.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    day = when.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        return day + timedelta(days=1)
    if period == "week":
        return day + timedelta(days=7 - day.weekday())
    if period == "month":
        return (day.replace(day=1) + timedelta(days=32)).replace(day=1)
    return None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Hold(_Model):
    """An amount set aside for one call that has not been committed or released."""

    id: str
    amount: float
    period_key: str
    expires_at: float
    """Workflow time, seconds since the epoch: when the entity next asks whether the run that
    took the hold is still running (an unowned hold is released then)."""
    tool: str | None = None
    owner: str | None = None
    """The workflow id of the run that took the hold."""
    owner_run: str | None = None
    hold_seconds: float = 600.0
    claim: int = 0
    """Which run of the check last asked for this hold: only that run may withdraw it."""


class Account(BaseModel):
    """One named budget of a principal, in its current period."""

    model_config = ConfigDict(extra="forbid")

    period: Period = "day"
    period_key: str = ""
    spent: float = 0.0
    holds: dict[str, Hold] = Field(default_factory=dict)

    @property
    def held(self) -> float:
        return sum(h.amount for h in self.holds.values())


class BudgetState(BaseModel):
    """The entity's whole state; its input, and what it carries across continue-as-new."""

    model_config = ConfigDict(extra="forbid")

    principal: str
    accounts: dict[str, Account] = Field(default_factory=dict)
    settled: dict[str, str] = Field(default_factory=dict)
    """Recently settled reservation ids -> ``committed`` / ``released`` / ``expired``."""
    expired: int = 0
    """How many holds ran out (their tool neither committed nor released them)."""
    max_history: int = 0
    """Continue-as-new past this many events; 0 leaves it to the server's suggestion."""


class ReserveRequest(_Model):
    """Input of the reserve update: set ``amount`` aside under ``account`` if it fits."""

    id: str
    account: str
    amount: float
    limit: float
    period: Period = "day"
    hold_seconds: float = 600.0
    tool: str | None = None
    owner: str | None = None
    owner_run: str | None = None
    claim: int = 0
    """Which run of the check asks (a random number each run): a retry re-claims the hold an
    earlier run took, and a run that gave up withdraws only what it still claims."""


class ReserveResult(_Model):
    """What the entity decided about one reservation, with the figures the refusal names."""

    ok: bool
    id: str
    account: str
    amount: float
    spent: float
    held: float
    limit: float
    period: Period
    period_key: str
    resets_at: float | None = None


class OwnersRequest(_Model):
    """Input of ``duraguard.budget-owners``: (workflow id, run id) of each hold's run."""

    owners: tuple[tuple[str, str], ...]


class OwnersResult(_Model):
    running: tuple[tuple[str, str], ...] = ()


class SettleRequest(_Model):
    """Input of ``duraguard.budget-commit`` / ``-release`` (and the entity's updates)."""

    reservation: Reservation
    amount: float | None = None
    """What was really spent, when it differs from the amount reserved (commit only)."""
    claim: int | None = None
    """Release only: withdraw the hold only if this run of the check still claims it (the
    check that timed out while its reserve was under way); ``None`` releases it whoever asked."""


class SettleResult(_Model):
    id: str
    outcome: Literal["committed", "released", "late", "unknown", "already", "kept"]
    spent: float


__all__ = [
    "BUDGET_WORKFLOW",
    "CLIENT_RESOURCE",
    "COMMIT_ACTIVITY",
    "COMMIT_UPDATE",
    "OWNERS_ACTIVITY",
    "PERIODS",
    "QUEUE_RESOURCE",
    "RELEASE_ACTIVITY",
    "RELEASE_UPDATE",
    "RESERVE_UPDATE",
    "RESOURCE",
    "STATE_QUERY",
    "Account",
    "BudgetState",
    "Hold",
    "OwnersRequest",
    "OwnersResult",
    "Period",
    "ReserveRequest",
    "ReserveResult",
    "SettleRequest",
    "SettleResult",
    "entity_id",
    "period_end",
    "period_key",
]
