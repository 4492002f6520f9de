"""Continue-as-new: the session carried to the next run, sealed by a worker.

The snapshot (ledger compacted to its last entries, counters, recent audit rows and tool
records, used nonces) is sealed with the plugin's session key (HMAC-SHA256) in a recorded step,
and opened, verified, in the next run: a session altered after it was sealed, carried from
another workflow, or whose record breaks, fails the run.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

from ._session import GuardSession
from ._session import session as current
from ._wire import OPEN_ACTIVITY, SEAL_ACTIVITY, OpenedSession, OpenRequest, SealedSession
from .errors import ConfigurationError, GuardrailViolation


async def carry_over(*, keep: int = 64, session: GuardSession | None = None) -> SealedSession:
    """Seal this run's session for the next run (call it right before continue-as-new).

    The ledger keeps its last ``keep`` entries (the chain still verifies from the hash of the
    last dropped one; counts of what ran are kept), the call counter, the used nonces and the
    recent audit rows. Pass the result in the next run's input and call :func:`resume` first
    thing there.
    """
    s = session or current()
    if s.asks.waiting():
        raise ConfigurationError(
            "a call is still waiting for a person; carry the session over once it is decided"
        )
    sealed: SealedSession = await workflow.execute_local_activity(
        SEAL_ACTIVITY,
        s.snapshot(keep),
        result_type=SealedSession,
        start_to_close_timeout=timedelta(seconds=30),
        summary="duraguard: seal the session for the next run",
    )
    return sealed


async def resume(sealed: SealedSession | None, *, session: GuardSession | None = None) -> None:
    """Take over the session a previous run sealed with :func:`carry_over` (``None``: a new one).

    A session that does not verify (altered after it was sealed, carried from another workflow,
    or a record whose chain breaks) fails the run: nothing more runs on a record someone changed.
    """
    s = session or current()
    if sealed is None:
        return
    opened: OpenedSession = await workflow.execute_local_activity(
        OPEN_ACTIVITY,
        OpenRequest(sealed=sealed, workflow_id=s.workflow_id),
        result_type=OpenedSession,
        start_to_close_timeout=timedelta(seconds=30),
        summary="duraguard: open the carried session",
    )
    if not opened.ok:
        raise GuardrailViolation(
            f"the session carried into this run was refused: {opened.reason}", by="session_record"
        )
    s.restore(sealed.snapshot)
