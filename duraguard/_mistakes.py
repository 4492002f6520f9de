"""The first hour's mistakes, caught where they are made and told with their fix.

A tool name in ``agent_loop(tools=[...])`` that no worker registers, a model written without
its provider, a worker script that runs itself again inside the workflow sandbox: each would
otherwise surface late (worker tracebacks, a run that ends ``done`` having done nothing, an
error pointing into the SDK). Worker side; pure apart from reading the script's own source.
"""

from __future__ import annotations

import ast
import difflib
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from .errors import ConfigurationError, UnknownModel, UnknownTool


def _close(name: str, known: Iterable[str]) -> str:
    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean {found[0]!r}?" if found else ""


def unknown_tools(asked: Sequence[str], registered: Iterable[str]) -> UnknownTool | None:
    """The error for tool names a workflow offers its model that this worker does not have."""
    known = sorted(registered)
    missing = [t for t in dict.fromkeys(asked) if t not in known]
    if not missing:
        return None
    name = missing[0]
    others = f" (and {', '.join(repr(m) for m in missing[1:])})" if missing[1:] else ""
    return UnknownTool(
        f"agent_loop(tools=[...]) names {name!r}{others}, which is not a tool on this worker"
        f"{_close(name, known) or '.'} DuraguardPlugin(tools=[...]) registers: {', '.join(known) or 'none'}."
        " Fix the name in the workflow, or add the tool (declared with @duraguard.tool) to the "
        "plugin of every worker of this task queue",
    )


def unknown_model(model: str, registered: Iterable[str]) -> UnknownModel:
    """The error for a model string whose provider this worker does not have."""
    known = sorted(registered)
    listed = ", ".join(known) or "none"
    provider, colon, _ = model.partition(":")
    if not colon:
        example = f"'{known[0]}:{model}'" if known else f"'openai:{model}'"
        return UnknownModel(
            f"model={model!r} names no provider: write it as 'provider:model', e.g. {example} "
            f"(or 'openai:gpt-4.1'); the providers on this worker: {listed}, given as "
            "DuraguardPlugin(models={name: provider})"
        )
    return UnknownModel(
        f"model={model!r}: no model provider {provider!r} is registered on this worker"
        f"{_close(provider, known) or ';'} registered: {listed}. Fix the part before the colon, or "
        f"pass DuraguardPlugin(models={{{provider!r}: ...}})"
    )


_RUNNERS = frozenset({"run", "main", "run_until_complete", "run_forever", "start_soon"})


def _runs_something(node: ast.stmt) -> ast.AST | None:
    """The first call in a module-level statement that runs a program (``asyncio.run(...)``,
    ``main()``), or an ``await``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Await):
            return sub
        if isinstance(sub, ast.Call):
            f = sub.func
            called = (
                f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            )
            if called in _RUNNERS:
                return sub
    return None


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If):
        return False
    names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
    consts = {n.value for n in ast.walk(node.test) if isinstance(n, ast.Constant)}
    return "__name__" in names and "__main__" in consts


def unguarded_run(source: str) -> tuple[int, str] | None:
    """``(line, code)`` of the first module-level statement of ``source`` that runs the
    program outside an ``if __name__ == "__main__":`` guard, or ``None``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if _is_main_guard(node):
            continue
        found = _runs_something(node)
        if found is not None:
            text = ast.get_source_segment(source, node) or ""
            return node.lineno, " ".join(text.split())[:80]
    return None


def check_workflow_modules(workflows: Iterable[type]) -> None:
    """Refuse, when a worker is built, a workflow defined in the script being run whose
    module-level code starts the program outside ``if __name__ == "__main__":``.

    The workflow sandbox imports a workflow's module again to run it; for a workflow defined in
    ``__main__`` that is the script itself, and its unguarded ``asyncio.run(main())`` would run
    again inside the worker (failing far from the cause, in the SDK's validation).

    Raises:
        ConfigurationError: naming the workflow, the file, the line and the fix.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    defined = [w for w in workflows if getattr(w, "__module__", None) == "__main__"]
    if not defined or not path:
        return
    try:
        source = Path(path).read_text(encoding="utf-8")
    except OSError:
        return
    found = unguarded_run(source)
    if found is None:
        return
    line, code = found
    raise ConfigurationError(
        f"workflow {defined[0].__name__} is defined in the script being run ({path}), which runs "
        f'`{code}` at line {line} outside `if __name__ == "__main__":`. The workflow sandbox '
        "imports that file again to run the workflow, so that line would run again inside the "
        'worker. Put it under `if __name__ == "__main__":` (or define the workflow in a module '
        "of its own)"
    )
