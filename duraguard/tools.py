"""Tools the agents may call: an ordinary function plus what the guardrails need to know of it.

A :class:`Tool` is worker-side: the plugin registers each as an activity named after the tool,
and workflow code refers to it by name only. Its input schema comes from the function's
signature unless given.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, overload

from .checks.schema import check_schema
from .errors import ConfigurationError

ToolKind = Literal["read", "write", "send"]

_KEY: ContextVar[str | None] = ContextVar("duraguard_idempotency_key", default=None)


def idempotency_key() -> str:
    """The idempotency key of the tool call running now: stable across its retries and across
    replays, unique per call of a session, and different for a new run started under the same
    workflow id (``{workflow_id}/{first run id}/{call id}``).

    A tool runs at least once, not exactly once: a worker can die after the tool's effect and
    before its result is recorded, and the tool then runs again. Give this key to whatever the
    tool changes (a payment API's idempotency key, a UNIQUE column) so the second run finds the
    first instead of doing it twice.

    Raises:
        LookupError: called outside a tool that duraguard runs.
    """
    key = _KEY.get()
    if key is None:
        raise LookupError(
            "duraguard.idempotency_key() is only known inside a tool duraguard runs (an activity "
            "of a @duraguard.tool); elsewhere, make your own key from the workflow and call ids"
        )
    return key


@dataclass(frozen=True)
class Undo:
    """How a tool's undo relates to the step it reverses.

    ``tool`` is the tool that undoes this one; ``mapping`` maps the undo's argument names to the
    names of the values in the original step's arguments or result (``result.refund_id``).
    """

    tool: str
    mapping: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    """A tool: the function, its name, description, input schema and policy marks."""

    fn: Callable[..., Any]
    name: str
    description: str = ""
    input_schema: dict[str, Any] | None = None
    kind: ToolKind | None = None
    """``read``, ``write`` or ``send``; ``None`` means nobody marked it (it counts as a write)."""
    agents: frozenset[str] | None = None
    """Agents allowed to call it; ``None`` means any."""
    labels: tuple[str, ...] = ()
    """Labels its results carry, e.g. ``web`` or ``email`` for outside content."""
    undo: Undo | None = None
    tier: int = 0
    payment_field: str | None = None
    """The argument holding an amount of money, for tools that pay."""
    destinations: tuple[str, ...] = ()
    """Arguments that say where the call goes, beyond those duraguard reads from their names
    (``to``, ``url``, ``recipient_iban``, ``file_path``...) and their schema's ``format``: no
    guardrail may mask or rewrite them, and the policy judges them as destinations."""
    approval_required: bool = False
    start_to_close_timeout: timedelta = timedelta(seconds=60)
    max_attempts: int = 3
    meta: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """What a model is told of the tool."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.input_schema or {"type": "object"},
        }


def _destinations(tool: str, names: Iterable[str], schema: dict[str, Any]) -> tuple[str, ...]:
    """``destinations=`` checked against the tool's arguments, so a typo fails at declaration."""
    if isinstance(names, str):
        names = [names]
    out = tuple(dict.fromkeys(names))
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(props, dict) and props:
        unknown = [n for n in out if n not in props]
        if unknown:
            raise ConfigurationError(
                f"tool {tool!r}: destinations names {unknown[0]!r}, which is not one of its "
                f"arguments; its arguments: {', '.join(props)}"
            )
    return out


def schema_from_signature(fn: Callable[..., Any]) -> dict[str, Any]:
    """A JSON Schema for ``fn``'s keyword arguments, from its annotations (via pydantic)."""
    from pydantic import create_model

    sig = inspect.signature(fn)
    fields: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = Any if p.annotation is inspect.Parameter.empty else p.annotation
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (ann, default)
    model = create_model(f"{fn.__name__}_args", **fields)
    schema: dict[str, Any] = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema["additionalProperties"] = False
    return schema


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    kind: ToolKind | None = None,
    agents: Iterable[str] | None = None,
    labels: Iterable[str] = (),
    undo: Undo | str | None = None,
    tier: int = 0,
    payment_field: str | None = None,
    destinations: Iterable[str] = (),
    approval_required: bool = False,
    start_to_close_timeout: timedelta = timedelta(seconds=60),
    max_attempts: int = 3,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    kind: ToolKind | None = None,
    agents: Iterable[str] | None = None,
    labels: Iterable[str] = (),
    undo: Undo | str | None = None,
    tier: int = 0,
    payment_field: str | None = None,
    destinations: Iterable[str] = (),
    approval_required: bool = False,
    start_to_close_timeout: timedelta = timedelta(seconds=60),
    max_attempts: int = 3,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    kind: ToolKind | None = None,
    agents: Iterable[str] | None = None,
    labels: Iterable[str] = (),
    undo: Undo | str | None = None,
    tier: int = 0,
    payment_field: str | None = None,
    destinations: Iterable[str] = (),
    approval_required: bool = False,
    start_to_close_timeout: timedelta = timedelta(seconds=60),
    max_attempts: int = 3,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declare a tool (usable as ``@tool`` or ``@tool(kind="read")``).

    ``destinations`` names the arguments that say where a call goes where their names do not
    (``@tool(kind="send", destinations=["box"])``): see :attr:`Tool.destinations`.
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        schema = input_schema if input_schema is not None else schema_from_signature(f)
        check_schema(schema)
        tool_name = name or f.__name__
        if not tool_name or any(c.isspace() for c in tool_name):
            raise ConfigurationError(f"tool name {tool_name!r} must be non-empty with no spaces")
        if kind not in (None, "read", "write", "send"):
            raise ConfigurationError(
                f"tool {tool_name!r}: unknown kind {kind!r}; known: read, write, send"
            )
        named = _destinations(tool_name, destinations, schema)
        return Tool(
            fn=f,
            name=tool_name,
            description=description if description is not None else inspect.getdoc(f) or "",
            input_schema=schema,
            kind=kind,
            agents=frozenset(agents) if agents is not None else None,
            labels=tuple(labels),
            undo=Undo(undo) if isinstance(undo, str) else undo,
            tier=tier,
            payment_field=payment_field,
            destinations=named,
            approval_required=approval_required,
            start_to_close_timeout=start_to_close_timeout,
            max_attempts=max_attempts,
        )

    return wrap(fn) if fn is not None else wrap
