"""A LangGraph tool node's tools: run on the worker (``GuardedToolNode(tools_in="activity")``),
one activity per node, one step per allowed call, its input the arguments that may run; bound
to the call judged (:func:`bound`); and no tool node left unguarded (:func:`plain_tool_nodes`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage
from temporalio import activity, workflow
from temporalio.exceptions import ActivityError, ApplicationError

from ._adapter import call_key
from ._delegation import agents_reached
from .errors import ConfigurationError

Execute = Callable[[Any], Awaitable[Any]]


def bound(name: str, args: Any, runs: Execute) -> Execute:
    """``execute`` as a wrapper of the user's own (``awrap_tool_call``) is handed it: it may run
    the call judged (again), never another call in its name."""
    judged = call_key("", name, args)

    async def run_one(given: Any) -> Any:
        ran = given.tool_call
        if ran.get("name") != name or call_key("", name, ran.get("args")) != judged:
            raise ConfigurationError(
                f"a wrapper of your own (awrap_tool_call) ran tool {name!r} with other "
                "arguments than duraguard judged; change a call's arguments with a guardrail's "
                "rewrite, or before the GuardedToolNode, never in its wrapper"
            )
        return await runs(given)

    return run_one


def plain_tool_nodes(app: Any, guarded: type, where: str = "") -> list[str]:
    """LangGraph's own ``ToolNode``s (not ``guarded``) in a compiled graph and its subgraphs:
    each would run the calls routed to it with no verdict."""
    from langgraph.prebuilt import ToolNode

    found: list[str] = []
    for name, spec in (getattr(getattr(app, "builder", None), "nodes", None) or {}).items():
        node = getattr(spec, "runnable", None)
        if isinstance(node, ToolNode) and not isinstance(node, guarded):
            found.append(f"{where}{name}")
        elif getattr(node, "builder", None) is not None and node is not app:
            found += plain_tool_nodes(node, guarded, f"{where}{name}/")
    return found


@dataclass(frozen=True)
class ToolCallInput:
    """One allowed call, as the tool node's activity receives it."""

    tool: str
    args: dict[str, Any]
    call_id: str


@dataclass(frozen=True)
class ToolCallOutput:
    """What the tool made of it: the ``ToolMessage``'s content and status."""

    content: Any
    status: str = "success"


class ToolActivity:
    """A tool node's tools run on the worker, one activity per allowed call."""

    def __init__(self, name: str, tools: Mapping[str, Any], options: dict[str, Any]) -> None:
        self.name, self.tools, self.options = name, dict(tools), options

        async def run(given: ToolCallInput) -> ToolCallOutput:
            return await self._run(given)

        self.run = activity.defn(name=name)(run)

    async def _run(self, given: ToolCallInput) -> ToolCallOutput:
        tool = self.tools.get(given.tool)
        if tool is None:
            raise ApplicationError(
                f"no tool {given.tool!r} on this worker's {self.name!r}", non_retryable=True
            )
        call = {"type": "tool_call", "name": given.tool, "args": given.args, "id": given.call_id}
        out = await tool.ainvoke(call)
        content = out.content if isinstance(out, ToolMessage) else out
        status = out.status if isinstance(out, ToolMessage) else "success"
        return ToolCallOutput(content=content, status=status)

    async def execute(self, request: Any) -> ToolMessage:
        call = request.tool_call
        given = ToolCallInput(call["name"], dict(call.get("args") or {}), str(call.get("id")))
        try:
            out = await workflow.execute_activity(
                self.name, given, result_type=ToolCallOutput, **self.options
            )
        except ActivityError as err:  # its retries spent: the model reads it, as ToolNode says
            why = str(err.cause or err)
            out = ToolCallOutput(
                content=f"Error: {why}\n Please fix your mistakes.", status="error"
            )
        return ToolMessage(
            content=out.content, name=call["name"], tool_call_id=call["id"], status=out.status
        )


def graphs_in_tools(tools: Mapping[str, Any], guarded: type) -> list[tuple[str, Any]]:
    """Tools whose function runs a graph with LangGraph's own ``ToolNode`` (a compiled graph in
    its closure or globals: ``create_react_agent``'s, say): that node's calls would run with no
    verdict. Each as (tool name, graph)."""

    def unguarded(value: Any) -> bool:
        return getattr(value, "builder", None) is not None and bool(
            plain_tool_nodes(value, guarded)
        )

    found = []
    for name, tool in tools.items():
        fn = getattr(tool, "coroutine", None) or getattr(tool, "func", None)
        found += [(name, g) for g in agents_reached(fn, unguarded)] if fn is not None else []
    return found


def refuse_unguarded(app: Any, guarded: type) -> None:
    """Refuse a graph where a call could run with no verdict: LangGraph's own ``ToolNode``
    beside the guarded one (or in a subgraph), or a guarded node's tool running a graph with
    one."""
    plain = plain_tool_nodes(app, guarded)
    if plain:
        raise ConfigurationError(
            f"the graph's tool node {plain[0]!r} is LangGraph's own ToolNode: the calls routed "
            "to it would run with no verdict; make every tool node a GuardedToolNode (one "
            "GuardedToolNode can hold all the tools)"
        )
    for spec in (getattr(getattr(app, "builder", None), "nodes", None) or {}).values():
        node = getattr(spec, "runnable", None)
        if not isinstance(node, guarded):
            continue
        for tool, graph in graphs_in_tools(getattr(node, "tools_by_name", {}), guarded):
            raise ConfigurationError(
                f"the tool {tool!r} runs graph {getattr(graph, 'name', graph)!r}, whose tool "
                f"node {plain_tool_nodes(graph, guarded)[0]!r} is LangGraph's own ToolNode: "
                "its calls would run with no verdict; make it a GuardedToolNode"
            )
