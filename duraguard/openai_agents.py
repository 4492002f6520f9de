"""Guard an OpenAI Agents SDK agent running on Temporal: its tool calls, prompt and final output.

Under Temporal's OpenAI agents plugin each model turn is an activity and everything else, the
SDK's loop and its hooks, runs in workflow code. :func:`guard` returns a copy of an agent whose
hooks call the guard core's seams, so each verdict is a recorded step that replay reads back::

    agent = duraguard.openai_agents.guard(agent, guardrails=[pii(), policy()])
    run = await duraguard.openai_agents.run(agent, "Refund order A-7")   # in the workflow

* every function tool (``activity_as_tool`` tools and plain ``@function_tool`` ones) is judged
  before it runs: ``deny`` gives the model the refusal as the tool's result, ``mask`` and
  ``rewrite`` change the arguments the tool receives, ``approve`` parks durably for a signed
  yes; its result is judged before the model reads it;
* the prompt is judged before the first model turn (by :func:`run`, which can mask it, or by
  an input guardrail of the agent when you call ``Runner.run`` yourself);
* the final output is judged by an output guardrail of the agent;
* a ``halt`` ends the run: :func:`run` returns stop reason ``guardrail`` naming the guardrail.

Nothing the adapter does raises an exception the SDK leaves to retry the workflow task: what
ends a run is :class:`RunStopped` (a registered, non-retryable failure type), turned
into a :class:`GuardedRun` by :func:`run`.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

try:
    from agents import (
        Agent,
        AgentHooks,
        AgentsException,
        FunctionTool,
        GuardrailFunctionOutput,
        Handoff,
        InputGuardrail,
        InputGuardrailTripwireTriggered,
        ItemHelpers,
        MaxTurnsExceeded,
        OutputGuardrail,
        OutputGuardrailTripwireTriggered,
        RunContextWrapper,
        Runner,
        ToolInputGuardrailTripwireTriggered,
        ToolOutputGuardrailTripwireTriggered,
    )
    from agents.tool_context import ToolContext
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "duraguard.openai_agents needs the OpenAI Agents SDK: pip install 'duraguard[openai-agents]'"
    ) from err

from ._adapter import AgentGuard, GuardedRun, RunStopped, changed, stopped_in
from .errors import ConfigurationError
from .guardrail import GuardrailLike
from .workflow import CallOptions

__all__ = ["GuardedRun", "RunStopped", "guard", "run"]

_JUDGED: contextvars.ContextVar[Any] = contextvars.ContextVar("duraguard_judged_input")
"""The input :func:`run` already judged, so the agent's own input guardrail does not again."""
_OUTSIDE_RUN = object()
"""What :data:`_JUDGED` reads outside :func:`run` (a bare ``Runner.run``)."""


class _Stopped(RunStopped, AgentsException):
    """:class:`RunStopped` as the SDK knows its own errors: it attaches what the run made."""

    def __init__(self, stop: RunStopped) -> None:
        RunStopped.__init__(self, stop.note, stop_reason=stop.stop_reason, by=stop.by)
        self.run_data = None


def _stopping(stop: RunStopped) -> _Stopped:
    return stop if isinstance(stop, _Stopped) else _Stopped(stop)


class _Replaced:
    """What the output guardrail hands :func:`run` when a guardrail replaced the final output."""

    def __init__(self, value: Any) -> None:
        self.value = value


class _Hooks(AgentHooks[Any]):
    """The agent's own hooks, with one more move: a halted session ends the run before the model
    reads anything more (so sibling calls of a halting turn complete and are recorded first)."""

    def __init__(self, guard: AgentGuard, inner: Any) -> None:
        self.guard = guard
        self.inner = inner

    async def on_llm_start(self, context: Any, agent: Any, *args: Any) -> None:
        try:
            self.guard.stop_if_halted()
        except RunStopped as stop:
            raise _stopping(stop) from None
        _stop_if_unguarded(agent)  # before the model can propose a call to such a tool
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, *args)

    async def on_start(self, *args: Any) -> None:
        if self.inner is not None:
            await self.inner.on_start(*args)

    async def on_end(self, *args: Any) -> None:
        if self.inner is not None:
            await self.inner.on_end(*args)

    async def on_handoff(self, *args: Any) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(*args)

    async def on_tool_start(self, *args: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_start(*args)

    async def on_tool_end(self, *args: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(*args)

    async def on_llm_end(self, *args: Any) -> None:
        if self.inner is not None:
            await self.inner.on_llm_end(*args)


class _InputCheck(InputGuardrail[Any]):
    """The prompt's check, for runs started with ``Runner.run`` (see :func:`run`)."""

    guard: AgentGuard


class _OutputCheck(OutputGuardrail[Any]):
    """The final output's check."""


def _tool(guard: AgentGuard, tool: FunctionTool) -> FunctionTool:
    original = tool.on_invoke_tool
    name = tool.name
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

        try:
            outcome, result = await guard.call(name, args, call)
        except Exception as err:
            if bare is None or not failed or err is not failed[0]:
                raise
            return await _failure_text(guarded, handled, err, raw, ctx)
        if not changed(outcome, result):
            return result
        shown = outcome.result
        return shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False)

    invoke._duraguard_guarded = True  # type: ignore[attr-defined]
    guarded = copy.copy(tool)  # the SDK's own copy: its failure handler stays bound right
    guarded.on_invoke_tool = invoke
    return guarded


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


def _unguarded(agent: Any) -> str | None:
    """Why ``agent``, as it is about to call the model, has a tool duraguard does not judge (one
    added after :func:`guard`, by a clone, or by the SDK at run time), or ``None``."""
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


def _stop_if_unguarded(agent: Any) -> None:
    """End the run (stop reason ``guardrail``) where :func:`_unguarded` finds a tool."""
    problem = _unguarded(agent)
    if problem is not None:
        raise _stopping(RunStopped(problem, stop_reason="guardrail", by="duraguard"))


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


def _prompt_of(given: Any) -> tuple[Any, Any] | None:
    """(the text to judge, a function that puts the judged text back), or None (no prompt)."""
    if isinstance(given, str):
        return given, lambda used: used
    if isinstance(given, list):
        for i in range(len(given) - 1, -1, -1):
            item = given[i]
            if isinstance(item, dict) and item.get("role") == "user" and "content" in item:

                def put(used: Any, i: int = i, item: dict[str, Any] = item) -> list[Any]:
                    return [*given[:i], {**item, "content": used}, *given[i + 1 :]]

                return item["content"], put
    return None


def guard(
    agent: Agent[Any],
    *,
    guardrails: Sequence[GuardrailLike],
    options: CallOptions | None = None,
) -> Agent[Any]:
    """A copy of ``agent`` whose tool calls, prompt and final output are guarded.

    Args:
        agent: The agent (its handoff agents are guarded too, with the same guardrails).
        guardrails: The guardrails, in order, at every placement each declares.
        options: Approval timeout and budget, check mode (:class:`duraguard.CallOptions`);
            ``agent`` defaults to the agent's name (admission rules know it by that).

    Raises:
        ConfigurationError: a tool duraguard cannot see into (a hosted tool, an MCP server of
            the agent's): its calls would bypass every guardrail.
    """
    if _is_guarded(agent):
        raise ConfigurationError(f"agent {agent.name!r} is already guarded; guard it once")
    return _guarded(agent, tuple(guardrails), options, {})


def _is_guarded(agent: Agent[Any]) -> bool:
    return any(isinstance(x, _InputCheck) for x in agent.input_guardrails)


def _guarded(
    agent: Agent[Any],
    guardrails: tuple[GuardrailLike, ...],
    options: CallOptions | None,
    seen: dict[int, Agent[Any]],
) -> Agent[Any]:
    """``agent`` guarded, and the agents it hands off to (each under its own name)."""
    if id(agent) in seen or _is_guarded(agent):
        return seen.get(id(agent), agent)
    if agent.mcp_servers:
        raise ConfigurationError(
            f"agent {agent.name!r} has MCP servers, whose tools would bypass duraguard; give the "
            "agent duraguard tools built from the server instead (duraguard.mcp.mcp_tools, "
            "called through duraguard.guarded_call), or a function tool that calls it"
        )
    if type(agent).__name__ == "SandboxAgent":
        raise ConfigurationError(
            f"agent {agent.name!r} is a SandboxAgent: the SDK gives it shell and file tools at run "
            "time, which duraguard cannot judge before they run; use an Agent with function "
            "tools that do that work through duraguard"
        )
    g = AgentGuard.of(guardrails, options, agent.name)
    tools = []
    for t in agent.tools:
        inner = getattr(t, "_agent_instance", None) if getattr(t, "_is_agent_tool", False) else None
        if inner is not None and not _is_guarded(inner):
            raise ConfigurationError(
                f"agent {agent.name!r} has the tool {t.name!r}, made by Agent.as_tool from agent "
                f"{inner.name!r}, whose own tools duraguard would not judge; guard that agent "
                "first: guard(inner, guardrails=[...]).as_tool(...)"
            )
        if not isinstance(t, FunctionTool):
            raise ConfigurationError(
                f"agent {agent.name!r} has the tool {getattr(t, 'name', t)!r} "
                f"({type(t).__name__}), which duraguard cannot judge before it runs; use "
                "function tools (activity_as_tool(...) or @function_tool)"
            )
        tools.append(_tool(g, t))
    checks = _checks(g)
    out = agent.clone(
        tools=tools,
        mcp_servers=[],  # its own list: a server added to the original later is not added here
        input_guardrails=[checks[0], *agent.input_guardrails],
        output_guardrails=[*agent.output_guardrails, checks[1]],
        hooks=_Hooks(g, agent.hooks),
    )
    seen[id(agent)] = out
    out.handoffs = [_handoff(h, guardrails, options, seen) for h in agent.handoffs]
    return out


def _handoff(
    h: Any,
    guardrails: tuple[GuardrailLike, ...],
    options: CallOptions | None,
    seen: dict[int, Agent[Any]],
) -> Any:
    if isinstance(h, Agent):
        return _guarded(h, guardrails, options, seen)
    if isinstance(h, Handoff):
        original = h.on_invoke_handoff

        async def on_invoke(ctx: RunContextWrapper[Any], args: str) -> Agent[Any]:
            return _guarded(await original(ctx, args), guardrails, options, seen)

        return dataclasses.replace(h, on_invoke_handoff=on_invoke)
    return h


def _checks(g: AgentGuard) -> tuple[_InputCheck, _OutputCheck]:
    async def check_input(
        _ctx: RunContextWrapper[Any], agent: Agent[Any], given: Any
    ) -> GuardrailFunctionOutput:
        _stop_if_unguarded(agent)
        found = _prompt_of(given)
        if found is None or _JUDGED.get(None) == given:
            return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)
        try:
            used = await g.prompt(found[0])
        except RunStopped as stop:
            raise _stopping(stop) from None
        if used != found[0]:
            raise ConfigurationError(
                "a guardrail changed the prompt (mask or rewrite), which an input guardrail of "
                "the OpenAI Agents SDK cannot pass on; start the run with "
                "duraguard.openai_agents.run(agent, input) so the model reads the changed prompt"
            )
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    async def check_output(
        _ctx: RunContextWrapper[Any], _agent: Agent[Any], output: Any
    ) -> GuardrailFunctionOutput:
        try:
            pr = await g.answer(output)
        except RunStopped as stop:
            raise _stopping(stop) from None
        if pr.replaced and _JUDGED.get(_OUTSIDE_RUN) is _OUTSIDE_RUN:
            raise ConfigurationError(
                "a guardrail changed the final output (mask or rewrite), which Runner.run cannot "
                "pass on (it would return the unchanged output); start the run with "
                "duraguard.openai_agents.run(agent, input), which returns the changed output"
            )
        info = _Replaced(pr.value) if pr.replaced else None
        return GuardrailFunctionOutput(output_info=info, tripwire_triggered=False)

    inp = _InputCheck(check_input, name="duraguard", run_in_parallel=False)
    inp.guard = g
    return inp, _OutputCheck(check_output, name="duraguard")


def _guard_of(agent: Agent[Any]) -> AgentGuard:
    for x in agent.input_guardrails:
        if isinstance(x, _InputCheck):
            return x.guard
    raise ConfigurationError(
        f"agent {agent.name!r} is not guarded; pass duraguard.openai_agents.guard(agent, "
        "guardrails=[...]) to run()"
    )


_TRIPWIRES = (
    InputGuardrailTripwireTriggered,
    OutputGuardrailTripwireTriggered,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailTripwireTriggered,
)


async def run(
    agent: Agent[Any], input: Any, *, max_corrections: int = 1, **kwargs: Any
) -> GuardedRun[Any]:
    """Run a guarded agent (workflow code): ``Runner.run`` with the prompt judged first.

    Args:
        agent: An agent from :func:`guard`.
        input: What ``Runner.run`` takes: a string, or input items (the last user item's
            content is the prompt judged).
        max_corrections: How often a refused final output goes back to the model, with the
            refusal, for another answer (as ``agent_loop`` does).
        **kwargs: For ``Runner.run`` (``max_turns``, ``context``, ``run_config``, ...).

    Returns:
        A :class:`GuardedRun`: ``stop_reason`` ``done`` with the final ``output`` (masked
        where a guardrail masked it) and the SDK's ``result``; ``guardrail`` with
        ``halted_by`` (a halt, a refused prompt, or a tripwire of the agent's own guardrails,
        which under Temporal would otherwise retry the workflow task forever); ``no-answer``
        (every final output was refused); ``max-iterations`` (``max_turns`` was reached). When
        the run stopped, ``result`` is what the SDK had made by then (``RunErrorDetails``).
    """
    g = _guard_of(agent)
    try:
        g.stop_if_halted()
        found = _prompt_of(input)
        if found is not None:
            used = await g.prompt(found[0])
            input = found[1](used) if used != found[0] else input
    except RunStopped as stop:
        return g.ended(stop)
    for attempt in range(max_corrections + 1):
        ended = await _run_once(g, agent, input, kwargs)
        if not isinstance(ended, _Stopped):
            return ended
        data = ended.run_data
        if ended.stop_reason != "no-answer" or attempt == max_corrections or data is None:
            return g.ended(ended, data)
        agent, input = data.last_agent, _corrected(data, ended.note)
    raise AssertionError("unreachable")  # pragma: no cover


async def _run_once(
    g: AgentGuard, agent: Agent[Any], input: Any, kwargs: dict[str, Any]
) -> GuardedRun[Any] | _Stopped:
    """One ``Runner.run``: how it ended, or the refusal of its final output to correct."""
    token = _JUDGED.set(input)
    try:
        result = await Runner.run(agent, input, **kwargs)
    except MaxTurnsExceeded as err:
        stop = RunStopped(str(err), stop_reason="max-iterations", by=None)
        return g.ended(stop, err.run_data)
    except _TRIPWIRES as err:
        own: Any = getattr(err, "guardrail_result", err)
        name = own.guardrail.get_name()
        why = f"a guardrail of the agent's own ({name}) tripped"
        stop = RunStopped(why, stop_reason="guardrail", by=f"openai-agents:{name}")
        return g.ended(stop, err.run_data)
    except Exception as err:
        # Ours, raised in the SDK's hooks, or wrapped by the SDK or Temporal's runner.
        found = stopped_in(err)
        if found is None:
            raise
        return found if isinstance(found, _Stopped) else g.ended(found)
    finally:
        _JUDGED.reset(token)
    output = result.final_output
    for r in result.output_guardrail_results:
        if isinstance(r.guardrail, _OutputCheck) and isinstance(r.output.output_info, _Replaced):
            output = r.output.output_info.value
    return g.finished(output, result)


def _corrected(data: Any, note: str) -> list[Any]:
    """The conversation so far, and the refusal of the last answer, for another answer."""
    return [
        *ItemHelpers.input_to_new_input_list(data.input),
        *(item.to_input_item() for item in data.new_items),
        {"role": "user", "content": f"Your answer was not accepted ({note}). Answer again."},
    ]
