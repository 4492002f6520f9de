"""What crosses when a session is carried across continue-as-new: its snapshot, sealed by a
worker, and opened again by the next run."""

from __future__ import annotations

from ._ledger import LedgerState
from ._types import ToolRecord
from ._wire_base import Wire as _Wire
from ._wire_people import AuditRow


class SessionSnapshot(_Wire):
    """What one run of a session hands the next across continue-as-new."""

    ledger: LedgerState
    calls: int = 0
    denials: int = 0
    approvals_asked: int = 0
    rows: tuple[AuditRow, ...] = ()
    results: tuple[ToolRecord, ...] = ()


class SealedSession(_Wire):
    """A :class:`SessionSnapshot` sealed by a worker (HMAC-SHA256 under the plugin's session key):
    pass it to the next run's input and :func:`duraguard.resume` it there."""

    snapshot: SessionSnapshot
    key_id: str
    mac: str


class OpenRequest(_Wire):
    """Input of ``duraguard.open-session``."""

    sealed: SealedSession
    workflow_id: str


class OpenedSession(_Wire):
    """Whether a sealed session may be resumed, and why not."""

    ok: bool
    reason: str = ""


__all__ = ["OpenRequest", "OpenedSession", "SealedSession", "SessionSnapshot"]
