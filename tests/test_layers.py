"""Dependencies point one way, down the layer order that ``docs/architecture.md`` writes down.

Read from the source: every import of a duraguard module, at module level, inside a function or
under ``TYPE_CHECKING`` (a cycle hidden in a function or a type-checking block is a cycle), so
a new upward import fails here with the module that made it. The order itself is read from the
architecture doc (its "Layer order" block), so the doc and the code cannot drift apart.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "duraguard"
DOC = ROOT.parent / "docs" / "architecture.md"

LAZY = {
    # module -> {imported module: why it is imported inside a function}
    "duraguard.cli._inbox": {"duraguard.inbox": "the inbox extra (Starlette, uvicorn)"},
}
"""Function-level imports of duraguard modules that stay: each loads an optional extra."""


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        out[".".join(rel.parts).removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> set[str]:
    """The duraguard modules an import statement names (``from pkg import sub`` names ``sub``
    where it is a module, else ``pkg``)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in MODULES}
    if node.level:
        parts = package.split(".")
        base = ".".join([*parts[: len(parts) - (node.level - 1)], *filter(None, [node.module])])
    else:
        base = node.module or ""
    found = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        found.add(sub if sub in MODULES else base)
    return found & MODULES.keys()


def _read() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Every module's imports of duraguard modules, and those made inside functions."""
    imports: dict[str, set[str]] = {}
    lazy: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found: set[str] = set()
        inside: set[str] = set()

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                if isinstance(child, ast.Import | ast.ImportFrom):
                    targets = _targets(child, package) - {name}  # noqa: B023
                    found.update(targets)  # noqa: B023
                    if nested:
                        inside.update(targets)  # noqa: B023
                visit(child, nested)

        visit(ast.parse(path.read_text()), False)
        imports[name] = found
        lazy[name] = inside
    return imports, lazy


IMPORTS, LAZY_FOUND = _read()


def _layers() -> list[list[str]]:
    """The layer order in the architecture doc, top first: one line a layer (``name: modules``,
    a line starting with a space goes on with the one above), modules without ``duraguard.``
    (the package itself is ``duraguard``)."""
    text = DOC.read_text()
    found = re.search(r"## Layer order\n.*?```text\n(.*?)```", text, re.S)
    assert found, f"{DOC} has no '## Layer order' section with a ```text block"
    layers: list[list[str]] = []
    for line in found.group(1).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        words = line.split(":", 1)[1] if not line.startswith(" ") else line
        mods = [w if w == "duraguard" else f"duraguard.{w}" for w in words.split()]
        if line.startswith(" "):
            layers[-1].extend(mods)
        else:
            layers.append(mods)
    return layers


LAYERS = _layers()
LEVEL = {m: len(LAYERS) - i for i, layer in enumerate(LAYERS) for m in layer}
"""Each module's height: the bottom layer is 1."""


def _cycles() -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(IMPORTS[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(IMPORTS):
        if v not in index:
            strong(v)
    return sorted(out)


def test_there_is_no_import_cycle_anywhere_in_the_package() -> None:
    cycles = [" <-> ".join(m.removeprefix("duraguard.") for m in c) for c in _cycles()]
    assert cycles == []


def test_every_module_is_placed_once_in_the_layer_order() -> None:
    placed = [m for layer in LAYERS for m in layer]
    twice = sorted({m for m in placed if placed.count(m) > 1})
    assert twice == [], f"placed twice in {DOC.name}: {twice}"
    assert sorted(set(MODULES) - set(placed)) == [], f"add them to {DOC.name}'s layer order"
    assert sorted(set(placed) - set(MODULES)) == [], f"{DOC.name} names modules that do not exist"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_its_own_layer_and_those_below(module: str) -> None:
    upward = sorted(d for d in IMPORTS[module] if LEVEL.get(d, 0) > LEVEL.get(module, 0))
    assert upward == [], f"{module} imports modules above it ({DOC.name}'s layer order)"


def test_the_workflow_side_is_a_stack_one_module_a_layer() -> None:
    side = [layer for layer in LAYERS if any(m in WORKFLOW_SIDE for m in layer)]
    shared = [layer for layer in side if len(layer) > 1]
    assert shared == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_duraguard_inside_a_function_but_an_optional_extra(module: str) -> None:
    allowed = LAZY.get(module, {})
    assert sorted(LAZY_FOUND[module] - allowed.keys()) == []


def test_every_allowed_lazy_import_is_still_made() -> None:
    stale = [(m, d) for m, ds in LAZY.items() for d in ds if d not in LAZY_FOUND.get(m, set())]
    assert stale == []


def _imports_in_functions(path: Path) -> list[str]:
    """Every import statement inside a function of a module (any module, not only duraguard's)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    names = ", ".join(a.name for a in inner.names)
                    out.append(f"{node.name}:{inner.lineno} {inner.module or ''} {names}".strip())
    return out


IMPORTS_IN_FUNCTIONS = {
    # Worker-side loading in vocabulary modules: the approvers file (YAML), its keys and the
    # signatures of decisions (cryptography), a close match for a misspelt field (difflib).
    "duraguard._approvers", "duraguard.approvals",
}  # fmt: skip
"""Modules of the workflow side and its vocabulary whose functions may import."""


VOCABULARY = {
    "duraguard._types", "duraguard._canonical", "duraguard._sandboxed", "duraguard._chain",
    "duraguard._reading", "duraguard._bounds",
    "duraguard._dates",
    "duraguard._provenance", "duraguard._marks", "duraguard._drawn", "duraguard._encoded",
    "duraguard._noise", "duraguard._unescape", "duraguard._orders", "duraguard._orders_latin",
    "duraguard._markers",
    "duraguard._sources", "duraguard._sourceindex", "duraguard._noting", "duraguard._imperatives",
    "duraguard._reach",
    "duraguard._verbs_abroad", "duraguard._acted", "duraguard._near",
    "duraguard._tiny", "duraguard._rows", "duraguard._links", "duraguard._spelt",
    "duraguard._result_keys",
    "duraguard._derived", "duraguard._workings",
    "duraguard._bloom", "duraguard._destinations", "duraguard._addresses",
    "duraguard._ledger", "duraguard._approvers", "duraguard.approvals", "duraguard.errors",
    "duraguard._deadline", "duraguard._threads",
}  # fmt: skip
"""Pure modules everything may use: no Temporal, no checks, no workflow side."""
WORKFLOW_SIDE = {
    "duraguard._outcome", "duraguard._visibility", "duraguard._state", "duraguard._pass",
    "duraguard._plan", "duraguard._preview", "duraguard._gate", "duraguard._after",
    "duraguard._judge", "duraguard._ask", "duraguard._settle", "duraguard._inline",
    "duraguard._call", "duraguard._session", "duraguard._check", "duraguard._carry",
    "duraguard._run", "duraguard._model_turn", "duraguard._loop", "duraguard.workflow",
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(m for m in IMPORTS if m.startswith("duraguard.checks")))
def test_checks_import_only_the_vocabulary_the_port_and_each_other(module: str) -> None:
    allowed = VOCABULARY | {"duraguard.guardrail"}
    upward = sorted(
        d for d in IMPORTS[module] if not d.startswith("duraguard.checks") and d not in allowed
    )
    assert not upward, f"{module} imports {upward}"


@pytest.mark.parametrize("module", sorted((VOCABULARY | WORKFLOW_SIDE) - IMPORTS_IN_FUNCTIONS))
def test_code_run_in_the_workflow_sandbox_imports_nothing_inside_a_function(module: str) -> None:
    # In sandboxed workflow code an import statement goes through the sandbox's importer each
    # time it runs (it resolves the name and checks it against the restrictions), and hands
    # back the sandbox's restricted module where one is proxied: import at module level.
    assert _imports_in_functions(MODULES[module]) == []


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


MAX_CODE_LINES = 60
"""The most lines of code a function of duraguard/ has (its docstring, comments and blank lines
left out; a nested function counts in its own and in the one that holds it)."""


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> int:
    body = node.body
    start = body[0].lineno
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        if isinstance(first.value.value, str):
            start = (first.end_lineno or first.lineno) + 1
    end = node.end_lineno or node.lineno
    return sum(
        1 for line in lines[start - 1 : end] if line.strip() and not line.strip().startswith("#")
    )


def test_no_function_is_longer_than_sixty_lines_of_code() -> None:
    long = []
    for module, path in MODULES.items():
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _code_lines(node, lines)
                if n > MAX_CODE_LINES:
                    long.append(f"{module}.{node.name} (line {node.lineno}): {n} lines of code")
    assert not long, "split these into named steps:\n" + "\n".join(long)


def test_the_line_count_leaves_out_docstrings_comments_and_blank_lines() -> None:
    source = 'def f():\n    """Doc.\n\n    More."""\n    # a note\n\n    x = 1\n    return x\n'
    [node] = ast.parse(source).body
    assert isinstance(node, ast.FunctionDef)
    assert _code_lines(node, source.splitlines()) == 2


MAX_MODULE_LINES = 400


def test_no_module_is_longer_than_four_hundred_lines() -> None:
    long = {
        m: n
        for m, p in MODULES.items()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these by what each part knows (docs/architecture.md): {long}"
