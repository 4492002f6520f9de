"""Guard a LangGraph agent running on Temporal: its tool calls, approvals, prompt and answer.

Under Temporal's LangGraph plugin (``temporalio-langgraph``) the graph runs in workflow code and
each node runs where its ``metadata={"execute_in": ...}`` says: a model node in an activity, a
tool node in the workflow. :class:`GuardedToolNode` is LangGraph's own ``ToolNode`` whose
``awrap_tool_call`` calls the guard core's seams (:mod:`duraguard._adapter`), so each verdict
is a recorded step that replay reads back::

    tools = GuardedToolNode([lookup_order, refund_order], guardrails=[pii(), policy()])
    graph.add_node("tools", tools, metadata={"execute_in": "workflow"})
    ran = await duraguard.langgraph.run(app, {"messages": [("user", ticket)]})  # in the workflow

* each tool call is judged before it runs: ``deny`` is the refusal as the call's
  ``ToolMessage`` (``status="error"``, as LangGraph reports a tool error), which the model reads
  and may correct; ``mask`` and ``rewrite`` change the arguments the tool receives (the
  request's ``tool_call`` is overridden); ``approve`` parks durably for a signed yes bound to
  the call; its result is judged before the model reads it. The policy knows each tool from
  its definition (name, description, the arguments the model fills; marks in the tool's
  ``metadata={"duraguard": {...}}`` or ``tools={...}``), as :mod:`duraguard._describe` says;
* ``interrupt_on={"refund_order": True}``, LangGraph's human-in-the-loop mark (the name
  ``HumanInTheLoopMiddleware`` gives it), is answered by duraguard's signed, call-bound yes:
  no ``interrupt()``, checkpointer or ``Command(resume=...)`` to wire, and ``pending``, the
  inbox and the audit see it. A guarded tool that calls ``interrupt()`` itself fails the run
  with a :class:`~duraguard.ConfigurationError` saying so: resumed, the node would run every
  call of its turn again, judged twice;
* :func:`run` judges the person's messages in the input before the first model call (a mask
  replaces them, so no model reads the original) and the last ``AIMessage`` after the graph
  ends (a mask replaces it in the result; a refusal is asked again, ``max_corrections``
  times, then stop reason ``no-answer``);
* a ``halt`` ends the run once the node's other calls of that turn complete and are recorded,
  before the model reads them: :func:`run` returns stop reason ``guardrail`` naming the
  guardrail. Should :class:`RunStopped` escape (``app.ainvoke`` called directly) it fails the
  workflow (a registered, non-retryable failure type); it never retries the workflow task;
* the node runs in workflow code or not at all: placed with ``execute_in="activity"`` (where
  no verdict could be recorded) :func:`run` refuses it before anything runs, naming the fix.
  Its tools run in workflow code too (``async``, their I/O in activities of their own), or,
  with ``tools_in="activity"``, each allowed call in an activity of the node's (tools written
  for an ``execute_in="activity"`` tool node run as they were; :func:`activities` lists them
  for the worker).

Requires the ``langgraph`` extra: ``pip install 'duraguard[langgraph]'``.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

try:
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.errors import GraphInterrupt, GraphRecursionError
    from langgraph.prebuilt import ToolNode
    from langgraph.types import Command
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "duraguard.langgraph needs LangGraph: pip install 'duraguard[langgraph]'"
    ) from err

from ._adapter import AgentGuard, GuardedRun, RunStopped, changed, corrected, for_model
from ._describe import described, marks_of
from ._langgraph_messages import judged_answer, judged_input
from ._langgraph_tools import ToolActivity as _ToolActivity
from ._langgraph_tools import ToolCallInput as ToolCallInput
from ._langgraph_tools import ToolCallOutput as ToolCallOutput
from ._langgraph_tools import bound, refuse_unguarded
from ._outcome import CallOutcome
from ._types import ToolDescription
from .errors import ConfigurationError
from .guardrail import GuardrailLike
from .workflow import CallOptions

__all__ = [
    "GuardedRun",
    "GuardedToolNode",
    "RunStopped",
    "ToolCallInput",
    "ToolCallOutput",
    "activities",
    "run",
]

FRAMEWORK = "langgraph"
INTERRUPT_ON = f"{FRAMEWORK}:interrupt_on"
IN_WORKFLOW = (
    "add the tool node with metadata={'execute_in': 'workflow'} (its tools can still run in "
    "activities: GuardedToolNode(..., tools_in='activity'))"
)

Execute = Callable[[Any], Awaitable[Any]]
Wrapper = Callable[[Any, Execute], Awaitable[Any]]


class _ToolFailed(Exception):
    """The tool's error, as the tool node made it a ``ToolMessage`` (recorded as a failure)."""

    def __init__(self, message: Any) -> None:
        super().__init__(_content(message))
        self.message = message


class GuardedToolNode(ToolNode):
    """LangGraph's ``ToolNode`` with every call judged (add it with ``execute_in="workflow"``).

    Args:
        tools: The tools, as for ``ToolNode`` (``async`` functions or ``BaseTool``).
        guardrails: The guardrails, in order, at every placement each declares.
        options: Approval timeout and budget, check mode (:class:`duraguard.CallOptions`).
        agent: The agent's name as admission rules and the audit know it.
        tools_marks: What the policy should know of a tool that its definition does not say,
            by name (``kind``, ``labels``, ``destinations``, ``roles``, ``description``); a
            tool's ``metadata={"duraguard": {...}}`` says the same, and wins.
        interrupt_on: Tools a person must say yes to (``{name: True}``), whatever the
            guardrails say, unless one refuses the call.
        awrap_tool_call: A wrapper of your own, run inside duraguard's with the arguments that
            may run.
        tools_in: Where a tool's body runs once its call is allowed: ``"workflow"`` (an
            ``async`` tool, its I/O in activities of its own), or ``"activity"``: each call an
            activity of its own (``activity_name``), so a tool written for an
            ``execute_in="activity"`` tool node (sync, doing I/O) runs as it was; give the
            worker :func:`activities` of the graph.
        activity_name: The activity's name (history: keep it stable); default
            ``duraguard.langgraph.<node name>``.
        activity_options: ``workflow.execute_activity`` options for it (a
            ``start_to_close_timeout`` of 60 s unless given).
        **kwargs: ``ToolNode``'s own (``name``, ``handle_tool_errors``, ``messages_key``...).
    """

    def __init__(
        self,
        tools: Sequence[Any],
        *,
        guardrails: Sequence[GuardrailLike],
        options: CallOptions | None = None,
        agent: str | None = None,
        tools_marks: Mapping[str, Mapping[str, Any]] | None = None,
        interrupt_on: Mapping[str, Any] | None = None,
        awrap_tool_call: Wrapper | None = None,
        tools_in: str = "workflow",
        activity_name: str | None = None,
        activity_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if tools_in not in ("workflow", "activity"):
            raise ConfigurationError(f"tools_in is 'workflow' or 'activity'; got {tools_in!r}")
        if "wrap_tool_call" in kwargs:
            raise ConfigurationError(
                "GuardedToolNode runs its tools asynchronously (in workflow code); pass your "
                "wrapper as awrap_tool_call=, an async function"
            )
        super().__init__(tools, awrap_tool_call=self._guarded, **kwargs)
        # The sync path would run each call on a thread of an executor: never in a workflow.
        self.func = None
        self.afunc = _detached(self)
        # Built now, so a bad guardrail or mark is refused when the graph is built.
        self.guard = AgentGuard.of(guardrails, options, agent, FRAMEWORK)
        self.marks = marks_of(tools_marks, "GuardedToolNode")
        self.interrupt_on = {str(n) for n, on in (interrupt_on or {}).items() if on}
        self._inner = awrap_tool_call
        self.activities: list[Callable[..., Any]] = []
        self._remote: _ToolActivity | None = None
        if tools_in == "activity":
            injected = [
                n for n, i in self._injected_args.items() if i.state or i.store or i.runtime
            ]
            if injected:
                raise ConfigurationError(
                    f"tool {injected[0]!r} takes injected state, store or runtime, which cannot "
                    "cross to an activity; run it with tools_in='workflow'"
                )
            self._remote = _ToolActivity(
                activity_name or f"duraguard.langgraph.{self.name}", self.tools_by_name,
                {"start_to_close_timeout": timedelta(seconds=60), **(activity_options or {})},
            )  # fmt: skip
            self.activities.append(self._remote.run)

    async def _afunc(self, input: Any, config: Any, runtime: Any) -> Any:
        g = self.guard
        g.require_workflow(IN_WORKFLOW)
        g.stop_if_halted()
        out = await super()._afunc(input, config, runtime)
        # A halt on one of this turn's calls: its siblings completed and were recorded; the
        # model must not read them.
        g.stop_if_halted()
        return out

    async def _guarded(self, request: Any, execute: Execute) -> Any:
        g, call = self.guard, request.tool_call
        name, asked = call["name"], dict(call.get("args") or {})
        if request.tool is not None:
            g.describe(_described(request.tool, self.marks))
        gate = await g.gate(name, asked, ask=INTERRUPT_ON if name in self.interrupt_on else None)
        if not gate.runs:
            return _message(call, gate.outcome())
        made: list[Any] = []

        runs = self._remote.execute if self._remote is not None else execute

        async def invoke(args: Any) -> Any:
            allowed = request.override(tool_call={**call, "args": args})
            run_one = bound(name, args, runs)  # the call judged, never another in its name
            try:
                out = await (self._inner(allowed, run_one) if self._inner else run_one(allowed))
            except GraphInterrupt as err:
                # Resumed, the node would run (and judge) every call of its turn again.
                raise ConfigurationError(
                    f"tool {name!r} called interrupt(), which a GuardedToolNode cannot resume; "
                    f"mark it interrupt_on={{{name!r}: True}} for a person's signed yes instead"
                ) from err
            made.append(out)
            if isinstance(out, ToolMessage) and out.status == "error":
                raise _ToolFailed(out)
            return _content(out)

        try:
            outcome, raw = await g.settle(gate, invoke)
        except _ToolFailed as failed:  # the tool's own error, as LangGraph shows it, judged
            said = failed.message.content
            text = said if isinstance(said, str) else json.dumps(said, default=str)
            shown = await g.shown_error(gate, text)
            return failed.message if shown == text else _error(call, shown)
        return _message(call, outcome) if changed(outcome, raw) else made[-1]


def activities(*graphs: Any) -> list[Callable[..., Any]]:
    """The activities the tool nodes (:class:`GuardedToolNode`) of these graphs (``StateGraph``, or
    compiled) run their tools in (``tools_in="activity"``), for the worker."""
    found: dict[str, Callable[..., Any]] = {}
    for g in graphs:
        nodes = getattr(g, "nodes", None) or getattr(getattr(g, "builder", None), "nodes", {})
        for spec in nodes.values():
            node = getattr(spec, "runnable", spec)
            for a in getattr(node, "activities", ()) if isinstance(node, GuardedToolNode) else ():
                found.setdefault(a.__temporal_activity_definition.name, a)
    return list(found.values())


def _detached(node: GuardedToolNode) -> Callable[..., Awaitable[Any]]:
    """The node's function, holding the node by a weak reference. LangGraph's compile looks
    for subgraphs through every function's closure (``find_subgraph_pregel``, with no record of
    what it saw); Temporal's plugin wraps the node's function in a closure, so a bound method
    there leads back to the node, round and round: compiling never returns (a plain
    ``ToolNode`` under temporalio-langgraph 0.1.0 hangs so)."""
    ref = weakref.ref(node)

    async def afunc(input: Any, config: Any, runtime: Any) -> Any:
        found = ref()
        if found is None:  # pragma: no cover - the graph holds its nodes
            raise ConfigurationError("the GuardedToolNode of this graph is gone")
        return await found._afunc(input, config, runtime)

    # Named as the method it stands for (Temporal's plugin refuses a local function's name).
    afunc.__qualname__ = "GuardedToolNode._afunc"
    return afunc


def _content(out: Any) -> Any:
    """What the model reads of a tool's output: a message's content, a command's messages', and
    the other state keys a command writes (the graph holds them: judged too, a mask drops it)."""
    if isinstance(out, ToolMessage):
        return out.content
    update = out.update if isinstance(out, Command) else None
    if isinstance(update, list | tuple):
        update = dict(update)
    if isinstance(update, Mapping):
        shown = [m.content for m in update.get("messages") or () if isinstance(m, ToolMessage)]
        others = {str(k): v for k, v in update.items() if k != "messages"}
        return {"messages": shown, **others} if others else shown
    return None


def _message(call: Mapping[str, Any], outcome: CallOutcome) -> ToolMessage:
    """The call's ``ToolMessage`` when the model must read something other than the tool's
    output: the refusal (``status="error"``), or the masked result (its artifact dropped)."""
    refused = not outcome.ran or outcome.refusal is not None
    return ToolMessage(
        content=for_model(outcome), name=call["name"], tool_call_id=call["id"],
        status="error" if refused else "success",
    )  # fmt: skip


def _error(call: Mapping[str, Any], text: str) -> ToolMessage:
    return ToolMessage(content=text, name=call["name"], tool_call_id=call["id"], status="error")


def _described(tool: Any, marks: Mapping[str, Any]) -> ToolDescription:
    """A ``BaseTool`` as the policy reads it: the arguments the model fills (injected state and
    runtime left out), its metadata's marks over ``tools_marks=``."""
    try:
        schema = convert_to_openai_tool(tool)["function"].get("parameters")
    except Exception:
        schema = None
    return described(tool.name, tool.description, schema, tool.metadata, marks)


def _nodes(app: Any) -> list[tuple[str, GuardedToolNode, Any]]:
    """The guarded tool nodes of a compiled graph: name, node, and the function it runs as."""
    builder = getattr(app, "builder", None)
    found = []
    for name, spec in (getattr(builder, "nodes", None) or {}).items():
        node = getattr(spec, "runnable", None)
        if isinstance(node, GuardedToolNode):
            found.append((name, node, getattr(node, "afunc", None)))
    return found


def _guard_of(app: Any) -> AgentGuard:
    refuse_unguarded(app, GuardedToolNode)  # no call of the graph may run unjudged
    found = _nodes(app)
    if not found:
        raise ConfigurationError(
            f"graph {getattr(app, 'name', app)!r} has no GuardedToolNode; add the tools with "
            "graph.add_node('tools', GuardedToolNode(tools, guardrails=[...]), "
            "metadata={'execute_in': 'workflow'})"
        )
    for name, _, runs in found:
        # Temporal's LangGraph plugin swaps the node's function for its activity's stub.
        if "wrap_execute_activity" in getattr(runs, "__qualname__", ""):
            raise ConfigurationError(
                f"the tool node {name!r} runs in an activity (execute_in='activity'), where no "
                f"verdict on its calls can be recorded; {IN_WORKFLOW}"
            )
    return found[0][1].guard


async def run(
    app: Any,
    input: Any,
    config: Any = None,
    *,
    messages_key: str = "messages",
    max_corrections: int = 1,
    **kwargs: Any,
) -> GuardedRun[Any]:
    """Run a compiled graph with a :class:`GuardedToolNode` (workflow code): ``app.ainvoke``
    with how it ended as a value. ``config`` and keyword arguments go to ``ainvoke``.

    A refused final answer is asked again ``max_corrections`` times: the graph runs on from
    its final state with duraguard's words to the model (the graph has ended; LangGraph has no
    output retry of its own).

    Returns:
        A :class:`GuardedRun`: ``stop_reason`` ``done`` with the final answer as ``output``
        (masked where a guardrail masked it) and the graph's final state as ``result``;
        ``guardrail`` with ``halted_by`` (a halt, or a refused prompt); ``no-answer`` (every
        answer was refused); ``max-iterations`` (the graph's ``recursion_limit``).
    """
    g = _guard_of(app)
    g.require_workflow(IN_WORKFLOW)
    state: Any = None

    async def attempt(correction: str | None) -> GuardedRun[Any]:
        nonlocal state
        if correction is None:
            given = await judged_input(g, input, messages_key)
        else:  # duraguard's own words: not the person's, not judged as theirs
            given = {**state, messages_key: [*state[messages_key], HumanMessage(correction)]}
        state = await app.ainvoke(given, config, **kwargs)
        g.stop_if_halted()
        output, state = await judged_answer(g, state, messages_key)
        return g.finished(output, state)

    try:
        return await corrected(attempt, g.ended, max_corrections)
    except GraphRecursionError as err:
        return g.ended(RunStopped(str(err), stop_reason="max-iterations", by=None))
