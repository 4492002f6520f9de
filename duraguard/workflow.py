"""Workflow-side duraguard, the public front: the agent loop, guarded calls, checks, sessions.

Nothing here decides a verdict. Every decision that gates a side effect comes from a recorded
step (the ``duraguard.check`` activity, local or regular), so a replay reads it back. What a
workflow author needs is at the top level too (``duraguard.agent_loop``, the same objects);
this module adds a call as proposed (:class:`ProposedCall`, what
``GuardSession.before_calls`` takes), what a guarded call comes to (:class:`CallGate`, :class:`CallOutcome`,
:class:`Refusal`, :data:`RefusalKind`), what ``check()`` returns (:class:`CheckResult`) and what
``carry_over()`` seals (:class:`SealedSession`). The modules behind it are a one-way stack
(``docs/architecture.md``, "Layer order"): ``_loop`` > ``_carry`` > ``_check`` > ``_session`` >
``_call`` > ``_inline`` > ``_settle`` > ``_ask`` > ``_judge`` > ``_after`` > ``_gate`` > ... >
``_pass`` > ``_state``.
"""

from __future__ import annotations

from ._call import CallGate, CallOptions, CallOutcome, ProposedCall, Refusal, RefusalKind
from ._call import refusal as refusal
from ._carry import carry_over, resume
from ._check import CheckResult, check
from ._loop import agent_loop
from ._pass import recorded_pass as recorded_pass
from ._session import GuardSession, guarded_call, session
from ._wire import AgentResult, SealedSession

__all__ = [
    "AgentResult",
    "CallGate",
    "CallOptions",
    "CallOutcome",
    "CheckResult",
    "GuardSession",
    "ProposedCall",
    "Refusal",
    "RefusalKind",
    "SealedSession",
    "agent_loop",
    "carry_over",
    "check",
    "guarded_call",
    "resume",
    "session",
]
