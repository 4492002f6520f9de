"""Workflow side of a budget: after the tool, commit or release what a pass's verdicts hold.

Re-exported from :mod:`duraguard.budget`, where the guardrail that reserves lives.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta

import temporalio.workflow

from ._budget_wire import SettleRequest, SettleResult
from ._types import Reservation, Verdict


def reservations_of(verdicts: Iterable[Verdict]) -> list[Reservation]:
    """Every reservation a pass's verdicts set aside (``PassResult.verdicts``), in order."""
    return [r for v in verdicts for r in v.reservations]


async def settle(
    reservations: Sequence[Reservation],
    *,
    ok: bool,
    timeout: timedelta = timedelta(seconds=30),
) -> None:
    """Workflow code: commit (``ok``) or release every reservation, one recorded step each.

    Call it with ``ok=True`` after the tool succeeded, ``ok=False`` when the tool failed or the
    call did not run after its reservations were taken (refused later in the pass, a person
    said no, an ask expired, the loop halted). The activity is ``duraguard.{resource}-commit``
    or ``-release``.
    """
    verb = "commit" if ok else "release"
    for r in reservations:
        await temporalio.workflow.execute_activity(
            f"duraguard.{r.resource}-{verb}",
            SettleRequest(reservation=r),
            start_to_close_timeout=timeout,
            schedule_to_close_timeout=timeout * 10,
            result_type=SettleResult,
            summary=f"{r.resource} {verb}",
        )
