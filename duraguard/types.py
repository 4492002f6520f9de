"""The vocabulary a guardrail, an agent loop and an operator's tool read and write.

What a check is given and says (:class:`Subject`, :class:`Verdict`, :class:`SessionView`,
:class:`Context`, :class:`PassResult`), what a model step and an agent run carry
(:class:`Message`, :class:`ToolCall`, :class:`ModelRequest`, :class:`ModelResponse`,
:class:`AgentResult`, :class:`Bail`, :class:`SealedSession`), what an operator reads from a run
(:class:`PendingAsk`, :class:`AuditRow`) and the names of the run's handlers
(:data:`DECIDE` the decide signal and update, :data:`PENDING_QUERY`, :data:`VERDICTS_QUERY`).

The most used of these are also at the top level (``duraguard.Subject``, ``duraguard.Verdict``,
``duraguard.AgentResult``, ``duraguard.PendingAsk``); the rest are here.
"""

from __future__ import annotations

from ._types import (
    Action,
    ApprovalAsk,
    Context,
    Detection,
    Grant,
    NotJSON,
    Outcome,
    PassResult,
    Placement,
    Reservation,
    SessionView,
    StopReason,
    Subject,
    ToolRecord,
    Verdict,
)
from ._wire import (
    DECIDE,
    PENDING_QUERY,
    VERDICTS_QUERY,
    AgentResult,
    AuditRow,
    Bail,
    Message,
    ModelRequest,
    ModelResponse,
    PendingAsk,
    SealedSession,
    ToolCall,
)

__all__ = [
    "DECIDE",
    "PENDING_QUERY",
    "VERDICTS_QUERY",
    "Action",
    "AgentResult",
    "ApprovalAsk",
    "AuditRow",
    "Bail",
    "Context",
    "Detection",
    "Grant",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "NotJSON",
    "Outcome",
    "PassResult",
    "PendingAsk",
    "Placement",
    "Reservation",
    "SealedSession",
    "SessionView",
    "StopReason",
    "Subject",
    "ToolCall",
    "ToolRecord",
    "Verdict",
]
