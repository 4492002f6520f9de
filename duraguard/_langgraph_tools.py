"""A LangGraph tool node's tools run on the worker (``GuardedToolNode(tools_in="activity")``):
one activity per node, one step per allowed call, its input the arguments that may run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage
from temporalio import activity, workflow
from temporalio.exceptions import ActivityError, ApplicationError


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
