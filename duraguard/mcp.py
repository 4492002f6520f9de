"""MCP tools as duraguard tools: kinds and labels read from each tool's annotations.

An MCP server describes its tools (``mcp.types.Tool``: name, description, input schema,
annotations). :func:`mcp_tool` turns one definition into a :class:`duraguard.Tool` whose function
calls the server through a client the user connects (worker side, like every live object), so an
MCP server's tools are guarded without hand-written kinds. The annotations are hints a server
gives about itself, read with the MCP specification's defaults for a hint not given
(``readOnlyHint`` false, ``destructiveHint`` true, ``idempotentHint`` false, ``openWorldHint``
true):

- read-only: kind ``read``, unless its name or description says it deletes, sends or changes
  something (a read-only hint does not hide that: it is then that kind, and asks);
- open-world (any kind): its results carry the label ``open-world`` (outside content: the
  policy asks about writes after it, and refuses a write or send that carries one of its
  values); ``outside_content=True`` labels a closed-world tool's results too, for a server
  whose data others write;
- otherwise open-world: kind ``send``; the policy's address stage (and ``address()`` at egress)
  judges every URL and host in its arguments, and any other write asks a person;
- otherwise: kind ``write``, asked by the policy unless a rule allows it; ``destructiveHint``
  also marks it ``approval_required``.

``idempotentHint`` is recorded in the tool's ``meta`` (with the others). The tool kinds file of
the plugin still wins over all of this, as for any tool.

Calls share one session per worker (:mod:`duraguard._mcp_sessions`: reused, reconnected
after a failure, ``tools/list_changed`` followed; a tool whose definition changed since the
worker listed it is refused); :func:`close_sessions` closes them when the worker stops.

A workflow that calls a server through Temporal's own MCP integration (``temporalio-mcp``:
``MCPPlugin`` on the worker, ``TemporalMCPClient`` in the workflow) wraps that client in a
:class:`GuardedMCPClient`: each call is judged from the same reading of its definition
(:class:`McpReading`) before Temporal's activity runs it, and its result before the workflow
reads it (``pip install 'duraguard[temporalio-mcp]'``).

Requires the ``mcp`` extra: ``pip install 'duraguard[mcp]'``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from ._adapter import AgentGuard, changed, for_model
from ._describe import MAX_DESCRIPTION_CHARS, _bounded
from ._mcp_sessions import close_sessions as close_sessions
from ._mcp_sessions import definition_digest, pool
from ._types import ToolDescription
from .checks.policy.inference import infer
from .errors import ConfigurationError, GuardrailHalt, McpToolError
from .guardrail import GuardrailLike
from .tools import Tool, ToolKind, tool
from .workflow import CallOptions

if TYPE_CHECKING:
    from mcp.types import CallToolResult
    from mcp.types import Tool as McpToolDefinition

OPEN_WORLD_LABEL = "open-world"
"""The label on results of a read-only tool that reaches the open world (outside content)."""

MCP_TOOL_ERROR = McpToolError.type_name
"""The failure type of a call the MCP server answered with ``isError``: not retried."""

MAX_RESULT_CHARS = 100_000
"""Text a call may return to the model before it is cut (a tool's output is hostile)."""

_MAX_ERROR_CHARS = 2_000


class ToolCaller(Protocol):
    """What a connected MCP client offers: ``mcp.Client`` and ``mcp.ClientSession`` both do."""

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any: ...


Connect = Callable[[], AbstractAsyncContextManager[ToolCaller]]
"""Opens a client to the MCP server: a function of no arguments returning an async context
manager (not yet entered) whose value has ``call_tool(name, arguments)`` (and
``list_tools(cursor=...)``, for :func:`list_mcp_tools`). ``mcp.Client`` is one, for every
transport::

    lambda: mcp.Client(StdioServerParameters(command="python", args=["server.py"]))   # stdio
    lambda: mcp.Client("http://127.0.0.1:8000/mcp")                                  # HTTP
    lambda: mcp.Client(server)                                      # in-process (tests)

It is called on the worker, once per session (:mod:`duraguard._mcp_sessions`: one per worker,
kept for every call), or once per call with ``reuse_session=False``; a function that returns a
new object each time, never one entered context manager."""


@dataclass(frozen=True)
class McpHints:
    """A tool's annotations with the MCP specification's defaults filled in."""

    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True

    @classmethod
    def of(cls, definition: McpToolDefinition) -> McpHints:
        """The hints of ``definition`` (a hint the server did not give takes its default)."""
        a = definition.annotations
        if a is None:
            return cls()

        def given(value: bool | None, default: bool) -> bool:
            return default if value is None else bool(value)

        return cls(
            read_only=given(a.read_only_hint, False),
            destructive=given(a.destructive_hint, True),
            idempotent=given(a.idempotent_hint, False),
            open_world=given(a.open_world_hint, True),
        )

    @property
    def kind(self) -> ToolKind:
        """``read`` if read-only, else ``send`` if it reaches the open world, else ``write``."""
        if self.read_only:
            return "read"
        return "send" if self.open_world else "write"

    @property
    def labels(self) -> tuple[str, ...]:
        """Labels its results carry: outside content when the tool reaches the open world
        (what a read fetched, or what a send's far end answered)."""
        return (OPEN_WORLD_LABEL,) if self.open_world else ()

    @property
    def asks(self) -> bool:
        """Whether a call should wait for a person by default (a destructive change)."""
        return not self.read_only and self.destructive

    def annotations(self) -> dict[str, bool]:
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


@dataclass(frozen=True)
class McpReading:
    """What duraguard reads of one MCP tool definition, wherever the call goes (a duraguard
    tool, :func:`mcp_tool`, or Temporal's MCP client, :class:`GuardedMCPClient`)."""

    hints: McpHints
    kind: ToolKind
    labels: tuple[str, ...]
    asks: bool
    description: str
    schema: dict[str, Any]

    @classmethod
    def of(cls, definition: McpToolDefinition, outside_content: bool = False) -> McpReading:
        hints = McpHints.of(definition)
        description = definition.description or definition.title or ""
        schema = dict(definition.input_schema or {"type": "object"})
        # The hints are the server's word about itself: a read-only hint does not hide a name
        # or a description that deletes, sends or changes something (then it is that, and asks).
        reading = infer(definition.name, description, schema, hints.annotations())
        kind = reading.kind if reading is not None else hints.kind
        contradicted = hints.read_only and kind != "read"
        labels = (OPEN_WORLD_LABEL,) if outside_content else hints.labels
        return cls(hints, kind, labels, hints.asks or contradicted, description, schema)

    def described(self, name: str) -> ToolDescription:
        """The tool as the policy reads a framework's tool (kind and labels given)."""
        return ToolDescription(
            name=name, description=self.description[:MAX_DESCRIPTION_CHARS],
            input_schema=_bounded(self.schema), kind=self.kind, labels=self.labels,
            annotations=self.hints.annotations(),
        )  # fmt: skip


def mcp_tool(
    definition: McpToolDefinition,
    connect: Connect,
    *,
    name: str | None = None,
    start_to_close_timeout: timedelta = timedelta(seconds=60),
    max_attempts: int = 3,
    max_result_chars: int = MAX_RESULT_CHARS,
    outside_content: bool = False,
    reuse_session: bool = True,
) -> Tool:
    """A duraguard tool that calls the MCP tool ``definition`` through ``connect``.

    Args:
        definition: The tool as the server lists it (``(await client.list_tools()).tools``).
        connect: Opens a client (:data:`Connect`, worker side).
        reuse_session: Keep one session per worker for every call (reconnected after a
            failure, its tool list followed: :mod:`duraguard._mcp_sessions`); ``False``: a
            connection per call, for a server whose per-session state must not be shared.
        name: The duraguard tool's name (and activity name); default: the MCP tool's name.
        start_to_close_timeout: How long one call may take.
        max_attempts: Attempts for a call that fails to reach the server (an ``isError``
            answer is never retried: the server said no).
        max_result_chars: Text returned to the model is cut at this length; a structured
            result longer than this (as JSON) fails the call, not retried.
        outside_content: Label this tool's results as outside content whatever its hints say:
            for a server whose closed-world data others write (tickets, emails, documents).
    """
    if not callable(connect):
        raise ConfigurationError(
            f"mcp_tool({definition.name!r}, connect=...) takes a function that opens a client, "
            f"e.g. lambda: mcp.Client(params); got {type(connect).__name__}"
        )
    if max_result_chars < 1:
        raise ConfigurationError(f"max_result_chars must be at least 1; got {max_result_chars}")
    read = McpReading.of(definition, outside_content)
    hints, server_name = read.hints, definition.name
    description, schema, kind, labels = read.description, read.schema, read.kind, read.labels

    digest = definition_digest(definition)

    async def call(**arguments: Any) -> Any:
        if reuse_session:
            answer = await pool().call(connect, server_name, arguments, digest)
        else:
            async with connect() as client:
                answer = await client.call_tool(server_name, arguments)
        return _result(server_name, answer, max_result_chars)

    call.__name__ = server_name
    built = tool(
        call,
        name=name or server_name,
        description=description,
        input_schema=schema,
        kind=kind,
        labels=labels,
        approval_required=read.asks,
        start_to_close_timeout=start_to_close_timeout,
        max_attempts=max_attempts,
    )
    return dataclasses.replace(
        built, meta={"mcp": {"tool": server_name, **dataclasses.asdict(hints)}}
    )


def mcp_tools(
    definitions: Iterable[McpToolDefinition],
    connect: Connect,
    *,
    prefix: str = "",
    **options: Any,
) -> list[Tool]:
    """:func:`mcp_tool` for each definition, named ``prefix + name``."""
    return [mcp_tool(d, connect, name=prefix + d.name, **options) for d in definitions]


async def list_mcp_tools(connect: Connect, *, prefix: str = "", **options: Any) -> list[Tool]:
    """Ask the server for its tools (every page) and build a duraguard tool for each.

    Call it on the worker before building the plugin:
    ``DuraguardPlugin(tools=await list_mcp_tools(lambda: mcp.Client(params)))``. It enters
    ``connect()`` once for the listing (:data:`Connect` says what it takes); the tools' calls
    then share one session per worker. ``options`` go to :func:`mcp_tool`.
    """
    definitions: list[McpToolDefinition] = []
    async with connect() as client:
        lister: Any = client
        page = await lister.list_tools()
        definitions.extend(page.tools)
        while page.next_cursor:
            page = await lister.list_tools(cursor=page.next_cursor)
            definitions.extend(page.tools)
    return mcp_tools(definitions, connect, prefix=prefix, **options)


def _result(name: str, answer: CallToolResult, limit: int) -> Any:
    """The structured result, else the text content; ``isError`` becomes a tool failure."""
    if answer.is_error:
        text = _text(answer)[:_MAX_ERROR_CHARS] or "the server gave no reason"
        raise McpToolError(f"MCP tool {name!r} answered with an error: {text}")
    if answer.structured_content is not None:
        size = len(json.dumps(answer.structured_content, default=str))
        if size > limit:
            raise McpToolError(
                f"MCP tool {name!r} returned {size:,} characters of structured content, over "
                f"the {limit:,} kept (max_result_chars); ask for less"
            )
        return answer.structured_content
    text = _text(answer)
    if len(text) > limit:
        return text[:limit] + f"\n[cut: the tool returned {len(text)} characters, {limit} kept]"
    return text


def _text(answer: CallToolResult) -> str:
    parts: list[str] = []
    for block in answer.content:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
    return "\n".join(parts)


class GuardedMCPClient:
    """Temporal's durable MCP client (``temporalio.mcp.TemporalMCPClient``) with every tool
    call judged, in workflow code, as a duraguard tool built from the same definition would be
    (:class:`McpReading`: kinds and labels from the hints, results judged before they are
    returned, the session's provenance fed by them).

    ``call_tool`` keeps the client's shape: a refusal comes back as the server's own refusal
    shape, a ``CallToolResult`` with ``is_error`` (the refusal as its text), a masked result
    as a ``CallToolResult`` holding the masked text; a ``halt`` raises
    :class:`~duraguard.GuardrailHalt` (no loop to end, as ``guarded_call``). Every other
    operation (prompts, resources) goes to the client as it is.

    Args:
        client: The workflow's ``TemporalMCPClient`` (its calls stay Temporal's activities).
        guardrails: The guardrails, in order, at every placement each declares.
        options: Approval timeout and budget, check mode (:class:`duraguard.CallOptions`).
        outside_content: Label every tool's results as outside content whatever its hints say.
        max_result_chars: What a call may hand back before it is cut (as :func:`mcp_tool`).
    """

    def __init__(
        self,
        client: Any,
        *,
        guardrails: list[GuardrailLike] | tuple[GuardrailLike, ...],
        options: CallOptions | None = None,
        outside_content: bool = False,
        max_result_chars: int = MAX_RESULT_CHARS,
    ) -> None:
        self.client = client
        name = getattr(client, "name", "mcp")
        self.guard = AgentGuard.of(guardrails, options, None, f"mcp:{name}")
        self.outside_content = outside_content
        self.max_result_chars = max_result_chars

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, meta: Any = None
    ) -> CallToolResult:
        from mcp.types import CallToolResult, TextContent

        g = self.guard
        g.require_workflow("call it from workflow code, where TemporalMCPClient runs")
        g.session()  # open now: pending, the inbox and the audit can see the run from here on
        listed = await self.client.list_tools()  # cached by the client: one activity per run
        found = next((t for t in listed.tools if t.name == name), None)
        if found is not None:
            g.describe(McpReading.of(found, self.outside_content).described(name))
        answers: list[CallToolResult] = []

        async def invoke(args: Any) -> Any:
            answer = await self.client.call_tool(name, args, meta=meta)
            answers.append(answer)
            return _result(name, answer, self.max_result_chars)  # raises on isError

        gate = await g.gate(name, dict(arguments or {}))
        if not gate.runs:
            outcome, raw = gate.outcome(), None
        else:
            try:
                outcome, raw = await g.settle(gate, invoke)
            except McpToolError:  # the server's own error answer, recorded as a failure,
                said = answers[-1]  # what it says judged as its result would be
                text = "\n".join(getattr(c, "text", "") for c in said.content)
                judged = await g.shown_error(gate, text)
                halted = g.session().halted_by
                if halted is not None:
                    raise GuardrailHalt(f"halted by guardrail {halted!r}", by=halted) from None
                if judged == text:
                    return said
                reads = TextContent(type="text", text=judged)
                return CallToolResult(content=[reads], is_error=True)
        if outcome.halted:
            raise GuardrailHalt(
                f"halted by guardrail {outcome.verdict.by!r}", by=outcome.verdict.by
            )
        if outcome.ran and not changed(outcome, raw):
            return answers[-1]
        shown = TextContent(type="text", text=for_model(outcome))
        structured = outcome.result if outcome.ran and isinstance(outcome.result, dict) else None
        return CallToolResult(
            content=[shown], structured_content=structured, is_error=not outcome.ran
        )
