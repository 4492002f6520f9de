"""The public surface is pinned: adding or removing a name is a decision, made here on purpose."""

from __future__ import annotations

import importlib

import pytest

import duraguard
import duraguard.checks

PUBLIC = [
    "Action",
    "AgentResult",
    "ApprovalAsk",
    "ApprovalCheck",
    "Approver",
    "ApproverKeys",
    "AuditRow",
    "Bail",
    "CallGate",
    "CallOptions",
    "CallOutcome",
    "CheckResult",
    "Classification",
    "ConfigurationError",
    "Context",
    "DECIDE",
    "Decision",
    "Detection",
    "DuraguardError",
    "DuraguardPlugin",
    "EditsRefused",
    "Grant",
    "GuardSession",
    "Guardrail",
    "GuardrailFailed",
    "GuardrailHalt",
    "GuardrailSpec",
    "GuardrailViolation",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "NotJSON",
    "Outcome",
    "PENDING_QUERY",
    "PassResult",
    "PendingAsk",
    "Placement",
    "Refusal",
    "Reservation",
    "Resources",
    "RuleSheetError",
    "SealedSession",
    "SessionView",
    "StopReason",
    "Subject",
    "Tool",
    "ToolCall",
    "ToolRecord",
    "Undo",
    "UnknownGuardrail",
    "VERDICTS_QUERY",
    "Verdict",
    "agent_loop",
    "carry_over",
    "check",
    "decision_for",
    "evaluate",
    "evaluate_sync",
    "guarded_call",
    "guardrail",
    "idempotency_key",
    "make_decision",
    "moderation",
    "pii",
    "resume",
    "run_pass",
    "schema",
    "session",
    "sign",
    "tool",
]

CHECKS = [
    "AdmissionRegistry",
    "AuthGuardrail",
    "Classification",
    "ValidationContext",
    "ValidationGuardrail",
    "address",
    "agents",
    "moderation",
    "pii",
    "policy",
    "principals",
    "schema",
    "size_cap",
    "validator",
]


def test_the_pins_themselves_are_sorted() -> None:
    assert sorted(PUBLIC) == PUBLIC
    assert sorted(CHECKS) == CHECKS


@pytest.mark.parametrize("module", [duraguard, duraguard.checks], ids=lambda m: m.__name__)
def test_all_is_sorted(module: object) -> None:
    # isort style, as ruff keeps it: CONSTANTS, then Classes, then functions
    def key(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    names = list(module.__all__)  # type: ignore[attr-defined]
    assert names == sorted(names, key=key)


def test_duraguard_exports_exactly_the_pinned_names() -> None:
    assert sorted(duraguard.__all__) == PUBLIC


def test_duraguard_checks_exports_exactly_the_pinned_names() -> None:
    assert sorted(duraguard.checks.__all__) == CHECKS


@pytest.mark.parametrize("module", ["duraguard", "duraguard.checks"])
def test_every_exported_name_resolves(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [n for n in imported.__all__ if not hasattr(imported, n)]
    assert missing == []


def test_the_catalogue_checks_are_the_same_objects_from_both_modules() -> None:
    for name in ("Classification", "moderation", "pii", "schema"):
        assert getattr(duraguard, name) is getattr(duraguard.checks, name)
