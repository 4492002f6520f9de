"""Workflow-side duraguard, the public front: the agent loop, guarded calls, checks, sessions.

Nothing here decides a verdict. Every decision that gates a side effect comes from a recorded
step (the ``duraguard.check`` activity, local or regular), so a replay reads it back. The
pieces, one concept a module (see ``docs/architecture.md``):

* :mod:`duraguard._session`: the run's :class:`GuardSession` (ledger, counters, audit rows);
* :mod:`duraguard._pass`: one recorded pass, bound to what it judged;
* :mod:`duraguard._gate`: calls parked on a person, the decide signal/update, expiry;
* :mod:`duraguard._visibility`: current details and search attributes;
* :mod:`duraguard._call`: a guarded call (before, the tool, after) and the :class:`Refusal`;
* :mod:`duraguard._check`: ``check()`` over any value;
* :mod:`duraguard._loop`: ``agent_loop``; :mod:`duraguard._carry`: continue-as-new.
"""

from __future__ import annotations

from ._call import (
    CallGate,
    CallOptions,
    CallOutcome,
    Refusal,
    RefusalKind,
    refusal,
)
from ._carry import carry_over, resume
from ._check import CheckResult, check
from ._loop import agent_loop
from ._pass import recorded_pass
from ._session import GuardSession, guarded_call, session

__all__ = [
    "CallGate",
    "CallOptions",
    "CallOutcome",
    "CheckResult",
    "GuardSession",
    "Refusal",
    "RefusalKind",
    "agent_loop",
    "carry_over",
    "check",
    "guarded_call",
    "recorded_pass",
    "refusal",
    "resume",
    "session",
]
