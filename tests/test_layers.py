"""Dependencies point one way: workflow side -> recorded pass -> engine -> checks -> vocabulary.

Read from the source (every import, module level or not), so a new upward import fails here
with the module that made it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "duraguard"

VOCABULARY = {
    "duraguard._types", "duraguard._canonical", "duraguard._sandboxed", "duraguard._chain",
    "duraguard._reading", "duraguard._bounds",
    "duraguard._dates",
    "duraguard._provenance",
    "duraguard._sources", "duraguard._sourceindex", "duraguard._noting", "duraguard._tiny",
    "duraguard._derived", "duraguard._workings",
    "duraguard._bloom", "duraguard._destinations", "duraguard._addresses",
    "duraguard._ledger", "duraguard._approvers", "duraguard.approvals", "duraguard.errors",
    "duraguard._deadline", "duraguard._threads",
}  # fmt: skip
"""Pure modules everything may use: no Temporal, no checks, no workflow side."""
WORKFLOW_SIDE = {
    "duraguard._session", "duraguard._pass", "duraguard._gate", "duraguard._plan",
    "duraguard._preview",
    "duraguard._call", "duraguard._after", "duraguard._inline", "duraguard._ask", "duraguard._outcome", "duraguard._check",
    "duraguard._loop", "duraguard._carry", "duraguard._visibility", "duraguard.workflow",
}  # fmt: skip


def _imports() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("duraguard"):
                found.add(str(node.module))
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("duraguard")}
        out[name] = found
    return out


IMPORTS = _imports()


@pytest.mark.parametrize("module", sorted(m for m in IMPORTS if m.startswith("duraguard.checks")))
def test_checks_import_only_the_vocabulary_the_port_and_each_other(module: str) -> None:
    allowed = VOCABULARY | {"duraguard.guardrail"}
    upward = sorted(
        d for d in IMPORTS[module] if not d.startswith("duraguard.checks") and d not in allowed
    )
    assert not upward, f"{module} imports {upward}"


@pytest.mark.parametrize("module", sorted(VOCABULARY | {"duraguard.engine", "duraguard.guardrail"}))
def test_the_engine_and_the_vocabulary_know_nothing_above_them(module: str) -> None:
    above = sorted(
        d
        for d in IMPORTS[module]
        if d in WORKFLOW_SIDE or d.startswith(("duraguard.checks", "duraguard.cli"))
    )
    assert not above, f"{module} imports {above}"


def test_the_engine_imports_only_the_port_and_the_vocabulary() -> None:
    assert IMPORTS["duraguard.engine"] <= {"duraguard._types", "duraguard.guardrail"} | VOCABULARY
