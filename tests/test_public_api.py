"""The public surface is pinned: adding or removing a name is a decision, made here on purpose."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

import duraguard
import duraguard.checks
import duraguard.types
import duraguard.workflow

ROOT = Path(__file__).resolve().parent.parent

PUBLIC = [
    # a workflow author
    "AgentResult",
    "CallOptions",
    "GuardSession",
    "agent_loop",
    "carry_over",
    "check",
    "guarded_call",
    "resume",
    "session",
    # a worker author
    "DuraguardPlugin",
    "Guardrail",
    "GuardrailSpec",
    "Subject",
    "Tool",
    "Verdict",
    "evaluate",
    "guardrail",
    "idempotency_key",
    "moderation",
    "pii",
    "schema",
    "tool",
    # an operator
    "DECIDE",
    "PENDING_QUERY",
    "ApproverKeys",
    "PendingAsk",
    "decision_for",
    # errors
    "ConfigurationError",
    "GuardrailHalt",
    "GuardrailViolation",
]
MAX_PUBLIC = 30
"""The most names the top level may have: what one sitting can learn."""
WORKFLOW_SIDE = ["AgentResult", "CallOptions", "GuardSession", "agent_loop", "carry_over",
                 "check", "guarded_call", "resume", "session"]  # fmt: skip
WORKFLOW = sorted([*WORKFLOW_SIDE, "CallGate", "CallOutcome", "CheckResult", "ProposedCall",
                   "Refusal", "RefusalKind", "SealedSession"])  # fmt: skip
TYPES = [
    "DECIDE", "PENDING_QUERY", "VERDICTS_QUERY", "Action", "AgentResult", "ApprovalAsk",
    "AuditRow", "Bail", "Context", "Detection", "Grant", "Message", "ModelRequest",
    "ModelResponse", "NotJSON", "Outcome", "PassResult", "PendingAsk", "Placement", "Reservation",
    "SealedSession", "SessionView", "StopReason", "Subject", "ToolCall", "ToolRecord", "Verdict",
]  # fmt: skip

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
    assert sorted(CHECKS) == CHECKS


def test_the_top_level_is_small_enough_to_learn_in_one_sitting() -> None:
    assert len(duraguard.__all__) <= MAX_PUBLIC


@pytest.mark.parametrize(
    "module",
    [duraguard, duraguard.checks, duraguard.types, duraguard.workflow],
    ids=lambda m: m.__name__,
)
def test_all_is_sorted(module: object) -> None:
    # isort style, as ruff keeps it: CONSTANTS, then Classes, then functions
    def key(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    names = list(module.__all__)  # type: ignore[attr-defined]
    assert names == sorted(names, key=key)


def test_duraguard_exports_exactly_the_pinned_names() -> None:
    assert sorted(duraguard.__all__) == sorted(PUBLIC)


def test_duraguard_workflow_exports_the_top_levels_workflow_names_as_the_same_objects() -> None:
    assert sorted(duraguard.workflow.__all__) == WORKFLOW
    assert set(WORKFLOW_SIDE) <= set(duraguard.__all__)
    for name in WORKFLOW_SIDE:
        assert getattr(duraguard, name) is getattr(duraguard.workflow, name), name


def test_duraguard_types_exports_exactly_the_pinned_names() -> None:
    assert sorted(duraguard.types.__all__) == sorted(TYPES)
    for name in set(TYPES) & set(duraguard.__all__):
        assert getattr(duraguard, name) is getattr(duraguard.types, name), name


@pytest.mark.parametrize("name", sorted(duraguard.MOVED))
def test_a_name_that_left_the_top_level_still_resolves_there_and_warns_where_it_went(
    name: str,
) -> None:
    home = duraguard.MOVED[name]
    with pytest.warns(DeprecationWarning, match=rf"duraguard\.{name} moved to {home}\.{name}"):
        found = getattr(duraguard, name)
    assert found is getattr(importlib.import_module(home), name)
    assert name not in duraguard.__all__


def test_an_unknown_top_level_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Mesage'"):
        duraguard.Mesage  # type: ignore[attr-defined]  # noqa: B018


def _imports(path: Path) -> list[tuple[str, str]]:
    """``(module, name)`` for every duraguard name a file imports or reads off ``duraguard``."""
    tree = ast.parse(path.read_text())
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("duraguard"):
            found += [(node.module or "", a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.startswith("duraguard")]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "duraguard"
        ):
            found.append(("duraguard", node.attr))
    return found


USER_CODE = sorted(
    p for d in ("samples", "workflows", "activities") for p in (ROOT / d).rglob("*.py")
)


@pytest.mark.parametrize("path", USER_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_samples_and_the_reference_app_use_public_names_only(path: Path) -> None:
    private = []
    for module, name in _imports(path):
        if any(part.startswith("_") for part in module.split(".")):
            private.append(f"{module}.{name}")
            continue
        if not name:
            continue
        try:
            imported = importlib.import_module(module)
        except ImportError:
            continue  # an optional extra not installed here (its module is public either way)
        if hasattr(imported, "__path__") and importlib.util.find_spec(f"{module}.{name}"):
            continue  # a submodule
        public = getattr(imported, "__all__", None)
        if public is not None and name not in public:
            private.append(f"{module}.{name}")
    assert private == []


def test_duraguard_checks_exports_exactly_the_pinned_names() -> None:
    assert sorted(duraguard.checks.__all__) == CHECKS


@pytest.mark.parametrize(
    "module", ["duraguard", "duraguard.checks", "duraguard.types", "duraguard.workflow"]
)
def test_every_exported_name_resolves(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [n for n in imported.__all__ if not hasattr(imported, n)]
    assert missing == []


def test_the_catalogue_checks_are_the_same_objects_from_both_modules() -> None:
    for name in ("moderation", "pii", "schema"):
        assert getattr(duraguard, name) is getattr(duraguard.checks, name)
