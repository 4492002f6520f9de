"""Agents inside agents, and streams, as every adapter judges them.

**Delegation.** An agent run inside a tool of another is guarded only where it runs in workflow
code with a guard of its own: its model calls are then steps of the same workflow and its
calls share the session. A tool's body that runs in an activity (Pydantic AI's default) or an
agent that is not guarded runs its calls where nothing records a verdict. :func:`agents_reached`
finds the agents a tool's function refers to (its globals, its closure, the functions it
calls, one level down), so an adapter can refuse such a tool when the agent is guarded, naming
the fix, before the model can call it. An agent reached another way (through the run's
dependencies, a registry, ``getattr``) is not found: its own guard then refuses to run outside
workflow code (:meth:`duraguard._adapter.AgentGuard.require_workflow`), and an unguarded one
stays outside the record (documented in docs/adapters.md).

**Streaming.** The frameworks stream a model's output token by token from inside the model's
activity, to subscribers of the workflow's stream, before the answer or the arguments it holds
reach any guardrail. A refused or masked answer would already be out. Where a guardrail judges
the final answer or tool arguments, :func:`streaming_refusal` says so, and the adapter refuses
that stream (a step stream of judged events is offered where the framework has one).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterable
from typing import Any

from .guardrail import GuardrailSpec

UNJUDGED_STREAM = ("final-answer", "tool-args", "post-model")
"""Placements whose verdicts a token stream would run ahead of."""


def agents_reached(fn: Any, is_agent: Callable[[Any], bool], *, depth: int = 2) -> list[Any]:
    """The agents ``fn`` refers to by name (its globals and closure) or through a function it
    calls (``depth`` levels down), in order found, each once."""
    found: list[Any] = []
    seen: set[int] = set()

    def visit(f: Any, level: int) -> None:
        f = inspect.unwrap(f) if callable(f) else f
        if isinstance(f, types.MethodType):
            f = f.__func__
        if not isinstance(f, types.FunctionType) or id(f) in seen:
            return
        seen.add(id(f))
        for value in _referenced(f):
            if is_agent(value):
                if all(value is not a for a in found):
                    found.append(value)
            elif level > 0 and isinstance(value, types.FunctionType | types.MethodType):
                visit(value, level - 1)

    visit(fn, depth)
    return found


def _referenced(f: types.FunctionType) -> Iterable[Any]:
    """What a function's code names: globals (and attributes of modules it names, one dot
    deep), closure cells, and the same for the functions defined inside it."""
    codes = [f.__code__]
    k = 0
    while k < len(codes):
        codes.extend(c for c in codes[k].co_consts if isinstance(c, types.CodeType))
        k += 1
    g = f.__globals__
    for code in codes:
        for name in code.co_names:
            if name in g:
                yield g[name]
    for cell in f.__closure__ or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell (a name not bound yet)
            continue


def streaming_refusal(specs: Iterable[GuardrailSpec], what: str) -> str | None:
    """Why a token stream of ``what`` cannot be judged with ``specs`` (``None``: it can, as no
    guardrail judges what it would run ahead of)."""
    ahead = sorted(
        {p for s in specs if s.kind != "native" for p in s.placements} & set(UNJUDGED_STREAM)
    )
    if not ahead:
        return None
    names = sorted({s.name for s in specs if set(s.placements) & set(ahead)})
    return (
        f"{what} streams the model's output token by token from inside its activity, before "
        f"any verdict at {', '.join(ahead)} (guardrails {', '.join(names)}): an answer or "
        "arguments a guardrail refuses or masks would already have been sent"
    )
