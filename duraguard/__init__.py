"""duraguard: guardrails for AI agents on Temporal, every verdict a recorded step.

The top level is what a workflow author, a worker author and an operator each need; the rest is
in documented submodules:

* workflow code: :func:`agent_loop`, :func:`guarded_call`, :func:`check`, :func:`session`
  (:class:`GuardSession`), :func:`carry_over` / :func:`resume`, :class:`CallOptions`,
  :class:`AgentResult`; more in :mod:`duraguard.workflow` (``CallGate``, ``CallOutcome``,
  ``CheckResult``, ``Refusal``);
* the worker: :class:`DuraguardPlugin`, :func:`tool` / :class:`Tool` (:func:`idempotency_key`),
  :func:`guardrail` / :class:`Guardrail` / :class:`GuardrailSpec` with :class:`Subject` and
  :class:`Verdict`, the catalogue's :func:`pii`, :func:`schema`, :func:`moderation` (all of it in
  :mod:`duraguard.checks`), :func:`evaluate` to judge a value outside a workflow (more in
  :mod:`duraguard.engine`); tools in :mod:`duraguard.tools`, model providers in
  :mod:`duraguard.models`, conversation stores in :mod:`duraguard.conversations`;
* an operator: the run's handlers :data:`PENDING_QUERY` (what waits for a person, each a
  :class:`PendingAsk`) and :data:`DECIDE` (a signed answer, made by :func:`decision_for`),
  :class:`ApproverKeys` (whose yes counts); more in :mod:`duraguard.approvals`, the CLI
  (``duraguard --help``) and :mod:`duraguard.audit`;
* errors: :class:`ConfigurationError` (a setup mistake), :class:`GuardrailViolation` (a policy
  outcome that fails a run), :class:`GuardrailHalt`; every one, and their base
  ``DuraguardError``, in :mod:`duraguard.errors`;
* the vocabulary (``Context``, ``SessionView``, ``PassResult``, ``Message``, ``AuditRow``,
  ``VERDICTS_QUERY``, ...) is in :mod:`duraguard.types`.

A name that was at the top level before still resolves here, with a ``DeprecationWarning`` that
names its home.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from .approvals import ApproverKeys, decision_for
from .checks import moderation, pii, schema
from .engine import evaluate
from .errors import ConfigurationError, GuardrailHalt, GuardrailViolation
from .guardrail import Guardrail, GuardrailSpec, guardrail
from .plugin import DuraguardPlugin
from .tools import Tool, idempotency_key, tool
from .types import DECIDE, PENDING_QUERY, AgentResult, PendingAsk, Subject, Verdict
from .workflow import (
    CallOptions,
    GuardSession,
    agent_loop,
    carry_over,
    check,
    guarded_call,
    resume,
    session,
)

MOVED = {
    **dict.fromkeys(
        (
            "VERDICTS_QUERY", "Action", "ApprovalAsk", "AuditRow",
            "Bail", "Context", "Detection", "Grant", "Message", "ModelRequest", "ModelResponse",
            "NotJSON", "Outcome", "PassResult", "Placement", "Reservation", "SealedSession",
            "SessionView", "StopReason", "ToolCall", "ToolRecord",
        ),
        "duraguard.types",
    ),
    **dict.fromkeys(("CallGate", "CallOutcome", "CheckResult", "Refusal"), "duraguard.workflow"),
    **dict.fromkeys(
        ("ApprovalCheck", "Approver", "Decision", "make_decision", "sign"), "duraguard.approvals"
    ),
    **dict.fromkeys(
        ("DuraguardError", "EditsRefused", "GuardrailFailed", "RuleSheetError", "UnknownGuardrail"),
        "duraguard.errors",
    ),
    **dict.fromkeys(("evaluate_sync", "run_pass"), "duraguard.engine"),
    "Classification": "duraguard.checks",
    "Resources": "duraguard.guardrail",
    "Undo": "duraguard.tools",
}  # fmt: skip
"""Names that were at the top level, and the submodule each lives in now."""


def __getattr__(name: str) -> Any:
    home = MOVED.get(name)
    if home is None:
        raise AttributeError(f"module 'duraguard' has no attribute {name!r}")
    warnings.warn(
        f"duraguard.{name} moved to {home}.{name}; import it from there",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)


__all__ = [
    "DECIDE",
    "PENDING_QUERY",
    "AgentResult",
    "ApproverKeys",
    "CallOptions",
    "ConfigurationError",
    "DuraguardPlugin",
    "GuardSession",
    "Guardrail",
    "GuardrailHalt",
    "GuardrailSpec",
    "GuardrailViolation",
    "PendingAsk",
    "Subject",
    "Tool",
    "Verdict",
    "agent_loop",
    "carry_over",
    "check",
    "decision_for",
    "evaluate",
    "guarded_call",
    "guardrail",
    "idempotency_key",
    "moderation",
    "pii",
    "resume",
    "schema",
    "session",
    "tool",
]
