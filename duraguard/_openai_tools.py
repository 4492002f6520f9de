"""The OpenAI Agents SDK's function tools, guarded: the part of :mod:`duraguard.openai_agents`
that wraps each tool (its invoker, its own approval mark, its own guardrails).

* The invoker (``FunctionTool.on_invoke_tool``) is wrapped so each call goes through
  :meth:`~duraguard._adapter.AgentGuard.call`: judged, run with the arguments that may run, its
  result judged, recorded once, its tool's labels on its result.
* ``needs_approval`` (a bool, or the SDK's ``(ctx, args, call_id) -> bool``) is taken over: the
  copy says ``False`` to the SDK, and the wrapped invoker, where the mark says yes, parks the
  call for duraguard's signed, call-bound yes (``ask="openai-agents:needs_approval"``). The run
  never ends with the SDK's interruptions for a guarded tool: ``pending``, ``duraguard approve``,
  the inbox and the audit see the ask; a no or an expiry is the refusal the model reads.
* The tool's own ``tool_input_guardrails`` / ``tool_output_guardrails`` still run, as the SDK
  runs them; what they decide is recorded (:meth:`~duraguard._adapter.AgentGuard.note`): a
  ``reject_content`` as a refusal by ``openai-agents:<name>``, a ``raise_exception`` as a halt.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
from collections.abc import Mapping
from typing import Any

from agents import Agent, FunctionTool, GuardrailFunctionOutput, RunContextWrapper
from agents.tool_context import ToolContext

from ._adapter import AgentGuard, changed, for_model
from ._delegation import agents_reached
from ._describe import describe
from .checks.native import NativeAction
from .errors import ConfigurationError

FRAMEWORK = "openai-agents"
NEEDS_APPROVAL = f"{FRAMEWORK}:needs_approval"


def described(t: FunctionTool, marks: Mapping[str, Any] | None) -> Any:
    """A function tool as the policy reads it (its name, description, schema and marks)."""
    return describe(
        t.name, t.description, t.params_json_schema, marks=marks, where=f"tool {t.name!r}"
    )


def guarded_tool(guard: AgentGuard, tool: FunctionTool) -> FunctionTool:
    """A copy of ``tool`` whose calls go through ``guard``, its own marks taken over."""
    original = tool.on_invoke_tool
    name = tool.name
    approval = tool.needs_approval
    # A @function_tool's invoker turns the function's exception into text for the model (its
    # failure handler). Run the function itself inside the guarded call instead, so a failure
    # is recorded as one, and apply the SDK's handler to it after (as unguarded).
    bare = getattr(original, "_invoke_tool_impl", None)
    handled = getattr(original, "_on_handled_error", None)
    if bare is None or handled is None:
        bare = None

    async def invoke(ctx: ToolContext[Any], raw: str) -> Any:
        try:
            args: Any = json.loads(raw) if raw else {}
        except ValueError:
            args = raw  # refused as arguments that are no object, and the model told so
        failed: list[Exception] = []

        async def call(allowed: Any) -> Any:
            given = json.dumps(allowed)
            try:
                return await (bare or original)(_with_arguments(ctx, allowed, args, given), given)
            except Exception as err:
                failed.append(err)
                raise

        ask = NEEDS_APPROVAL if await _needs_approval(approval, ctx, args) else None
        try:
            outcome, result = await guard.call(name, args, call, ask=ask)
        except Exception as err:
            if bare is None or not failed or err is not failed[0]:
                raise
            return await _failure_text(guarded, handled, err, raw, ctx)
        return for_model(outcome) if changed(outcome, result) else result

    invoke._duraguard_guarded = True  # type: ignore[attr-defined]
    guarded = copy.copy(tool)  # the SDK's own copy: its failure handler stays bound right
    guarded.on_invoke_tool = invoke
    guarded.needs_approval = False  # duraguard asks, for a signed yes (see the module docstring)
    guarded.tool_input_guardrails = [
        _recorded_tool_guardrail(guard, g, "tool-args") for g in tool.tool_input_guardrails or []
    ] or tool.tool_input_guardrails
    guarded.tool_output_guardrails = [
        _recorded_tool_guardrail(guard, g, "tool-result") for g in tool.tool_output_guardrails or []
    ] or tool.tool_output_guardrails
    return guarded


async def _needs_approval(mark: Any, ctx: Any, args: Any) -> bool:
    """What the tool's ``needs_approval`` says of this call (the SDK's own evaluation: a bool, or
    ``(ctx, args, call_id)``, awaited where it returns an awaitable). Arguments that are no
    object need a yes where the mark is a function (the SDK asks for those too), and so does a
    call the function raises on."""
    if not callable(mark):
        return bool(mark)
    if not isinstance(args, dict):
        return True
    try:
        said = mark(ctx, args, getattr(ctx, "tool_call_id", ""))
        return bool(await said if inspect.isawaitable(said) else said)
    except Exception:
        return True  # a mark that cannot say: the call waits for a person (fail closed)


def _recorded_tool_guardrail(guard: AgentGuard, g: Any, placement: Any) -> Any:
    """A tool guardrail of the SDK's whose ``reject_content`` / ``raise_exception`` is recorded
    as a verdict of its own (run as the SDK runs it, in workflow code)."""
    name = g.get_name()
    fn = g.guardrail_function
    by = f"{FRAMEWORK}:{name}"

    async def run(data: Any) -> Any:
        out = fn(data)
        out = await out if inspect.isawaitable(out) else out
        behavior = getattr(out, "behavior", None) or {}
        kind = behavior.get("type")
        if kind in ("reject_content", "raise_exception"):
            ctx = data.context
            tool = getattr(ctx, "tool_name", None)
            value: Any = (
                _arguments(getattr(ctx, "tool_arguments", ""))
                if placement == "tool-args"
                else str(data.output)
            )
            action: NativeAction = "deny" if kind == "reject_content" else "halt"
            why = behavior.get("message") or f"the SDK's tool guardrail {name} raised its tripwire"
            await guard.note(placement, by, action, str(why), value=value, tool=tool)
        return out

    return dataclasses.replace(g, guardrail_function=run, name=name)


def recorded_agent_guardrail(guard: AgentGuard, g: Any, placement: Any) -> Any:
    """An input or output guardrail of the agent's own whose tripwire is recorded as a halt by
    ``openai-agents:<name>`` (``DuraguardHaltedBy``, an audit row) before the SDK raises it."""
    name = g.get_name()
    fn = g.guardrail_function
    by = f"{FRAMEWORK}:{name}"

    async def run(ctx: RunContextWrapper[Any], agent: Any, given: Any) -> GuardrailFunctionOutput:
        out = fn(ctx, agent, given)
        out = await out if inspect.isawaitable(out) else out
        if getattr(out, "tripwire_triggered", False):
            why = f"the agent's own {placement} guardrail {name} tripped"
            value = given if isinstance(given, str) else json.dumps(given, default=str)[:4000]
            await guard.note(placement, by, "halt", why, value=value)
        return out  # type: ignore[no-any-return]

    return dataclasses.replace(g, guardrail_function=run, name=name)


def _arguments(raw: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        return {"_": raw}
    return parsed if isinstance(parsed, dict) else {"_": parsed}


def _with_arguments(ctx: Any, allowed: Any, asked: Any, given: str) -> Any:
    """``ctx`` as the tool sees it: where a guardrail changed the arguments, its record of them
    (``tool_arguments``, ``tool_call.arguments``) says what the tool was given, not the model."""
    if allowed == asked or not hasattr(ctx, "tool_arguments"):
        return ctx
    seen = copy.copy(ctx)
    seen.tool_arguments = given
    call = getattr(ctx, "tool_call", None)
    if call is not None and hasattr(call, "model_copy"):
        seen.tool_call = call.model_copy(update={"arguments": given})
    return seen


async def _failure_text(
    tool: FunctionTool, handled: Any, err: Exception, raw: str, ctx: ToolContext[Any]
) -> Any:
    """What the SDK's failure handler makes of a function tool's exception (raised again where
    the tool has none, as the SDK does)."""
    from agents.tool import maybe_invoke_function_tool_failure_error_function

    text = await maybe_invoke_function_tool_failure_error_function(
        function_tool=tool, context=ctx, error=err
    )
    if text is None:
        raise err
    handled(tool, err, raw, ctx)
    return text


def refuse_delegation(agent: Agent[Any], t: FunctionTool, is_guarded: Any, guard: Any) -> None:
    """Refuse a tool whose function runs an agent duraguard could not judge: any agent, where
    the tool runs in an activity; an agent not guarded, where it runs in workflow code (a tool
    that calls ``guard``, :func:`duraguard.openai_agents.guard`, guards the agent itself)."""
    impl = getattr(t.on_invoke_tool, "_invoke_tool_impl", t.on_invoke_tool)
    in_activity = "activity_as_tool" in getattr(impl, "__qualname__", "")
    reached = agents_reached(impl, lambda v: isinstance(v, Agent), depth=3)
    if not reached:
        return
    guarding = bool(agents_reached(impl, lambda v: v is guard, depth=3))
    for inner in reached:
        if in_activity:
            raise ConfigurationError(
                f"agent {agent.name!r} has the tool {t.name!r}, an activity that runs agent "
                f"{inner.name!r}: inside an activity no verdict can be recorded; run it from a "
                "function tool in workflow code (@function_tool calling "
                "duraguard.openai_agents.run(guard(inner, ...), ...)) or as "
                "guard(inner, ...).as_tool(...)"
            )
        if not is_guarded(inner) and not guarding:
            raise ConfigurationError(
                f"agent {agent.name!r} has the tool {t.name!r}, which runs agent "
                f"{inner.name!r}, whose own calls duraguard would not judge; guard it first: "
                f"{inner.name} = duraguard.openai_agents.guard({inner.name}, guardrails=[...])"
            )


def unguarded(agent: Any) -> str | None:
    """Why ``agent``, as it is about to call the model, has a tool duraguard does not judge (one
    added after ``guard()``, by a clone, or by the SDK at run time), or ``None``."""
    if getattr(agent, "mcp_servers", None):
        return f"agent {agent.name!r} has MCP servers, whose tools duraguard does not judge"
    for t in getattr(agent, "tools", ()):
        if not getattr(getattr(t, "on_invoke_tool", None), "_duraguard_guarded", False):
            return (
                f"agent {agent.name!r} has the tool {getattr(t, 'name', t)!r}, which duraguard "
                "did not wrap (added after guard(), by a clone, or by the SDK at run time); give "
                "the agent every tool before guard(agent, ...)"
            )
    return None
