"""Guard an OpenAI Agents SDK agent running on Temporal: its tool calls, handoffs, prompt and output.

Under Temporal's OpenAI agents plugin each model turn is an activity and everything else, the
SDK's loop and its hooks, runs in workflow code. :func:`guard` returns a copy of an agent whose
tools, handoffs, guardrails and hooks call the guard core's seams (:mod:`duraguard._adapter`),
so each verdict is a recorded step that replay reads back::

    agent = duraguard.openai_agents.guard(agent, guardrails=[pii(), policy()])
    run = await duraguard.openai_agents.run(agent, "Refund order A-7")   # in the workflow

* every function tool (``activity_as_tool`` tools and plain ``@function_tool`` ones) is judged
  before it runs: ``deny`` gives the model the refusal as the tool's result, ``mask`` and
  ``rewrite`` change the arguments the tool receives, ``approve`` parks durably for a signed
  yes; its result is judged before the model reads it. The policy knows each tool from its
  definition (name, description, schema, and ``tools={name: marks}``), its kind inferred where
  nothing marks it, its results labelled as outside content where it reads content others
  write (:mod:`duraguard._describe`);
* a tool's ``needs_approval`` parks the call for duraguard's signed yes (no interruptions);
  the SDK's own tool guardrails and agent guardrails still decide as they do, and what they
  decide is recorded (a rejection as a refusal, a tripwire as a halt, by ``openai-agents:NAME``);
* a handoff is judged as a call (``transfer_to_<agent>``, kind ``read``) before it is taken;
  a refused one ends the run (the SDK has no refused handoff). The agent handed to is guarded
  with the same guardrails under its own name;
* the prompt is judged before the first model turn (by :func:`run`, which can mask it, or by
  an input guardrail of the agent when you call ``Runner.run`` yourself); the final output is
  judged by an output guardrail (:func:`run` returns a masked output in the agent's output
  type);
* a ``halt`` ends the run: :func:`run` returns stop reason ``guardrail`` naming the guardrail;
* ``Runner.run_streamed`` on a guarded agent whose guardrails judge the answer or the tool
  arguments stops before the first model call, saying why (the plugin streams model tokens from
  inside the model's activity, ahead of any verdict): use :func:`run`.

Nothing the adapter does raises an exception the SDK leaves to retry the workflow task: what
ends a run is :class:`RunStopped` (a registered, non-retryable failure type), turned into a
:class:`GuardedRun` by :func:`run`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from typing import Any

try:
    from agents import (
        Agent,
        FunctionTool,
        GuardrailFunctionOutput,
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
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "duraguard.openai_agents needs the OpenAI Agents SDK: pip install 'duraguard[openai-agents]'"
    ) from err

from . import _openai_hooks as hooks_
from . import _openai_tools as tools_
from ._adapter import AgentGuard, GuardedRun, RunStopped, as_type, stopped_in
from ._describe import marks_of
from .errors import ConfigurationError
from .guardrail import GuardrailLike
from .workflow import CallOptions

__all__ = ["GuardedRun", "RunStopped", "guard", "run"]

FRAMEWORK = tools_.FRAMEWORK
_JUDGED: contextvars.ContextVar[Any] = contextvars.ContextVar("duraguard_judged_input")
"""The input :func:`run` already judged, so the agent's own input guardrail does not again."""
_OUTSIDE_RUN = object()
"""What :data:`_JUDGED` reads outside :func:`run` (a bare ``Runner.run``)."""


class _Replaced:
    """What the output guardrail hands :func:`run` when a guardrail replaced the final output."""

    def __init__(self, value: Any) -> None:
        self.value = value


class _InputCheck(InputGuardrail[Any]):
    """The prompt's check, for runs started with ``Runner.run`` (see :func:`run`)."""

    guard: AgentGuard


class _OutputCheck(OutputGuardrail[Any]):
    """The final output's check."""


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
    tools: Mapping[str, Mapping[str, Any]] | None = None,
) -> Agent[Any]:
    """A copy of ``agent`` whose tool calls, handoffs, prompt and final output are guarded.

    Args:
        agent: The agent (its handoff agents are guarded too, with the same guardrails).
        guardrails: The guardrails, in order, at every placement each declares.
        options: Approval timeout and budget, check mode (:class:`duraguard.CallOptions`);
            ``agent`` defaults to the agent's name (admission rules know it by that).
        tools: What the policy should know of a tool that its definition does not say, by
            tool name (handoffs included, ``transfer_to_billing``): ``kind`` (read, write,
            send), ``labels`` (what its results carry: ``["email"]``; ``[]``: trusted),
            ``destinations`` (argument names that say where a call goes), ``roles``,
            ``description``. The worker's tool kinds file and catalogue still win.

    Raises:
        ConfigurationError: a tool duraguard cannot see into (a hosted tool, an MCP server of
            the agent's, an unguarded agent run by a tool), or a malformed mark: its calls
            would bypass every guardrail.
    """
    if _is_guarded(agent):
        raise ConfigurationError(f"agent {agent.name!r} is already guarded; guard it once")
    marks = marks_of(tools, f"guard({agent.name!r})")
    base = AgentGuard.of(guardrails, options, agent.name, FRAMEWORK)
    return _guarded(agent, base, marks, {})


def _is_guarded(agent: Agent[Any]) -> bool:
    return any(isinstance(x, _InputCheck) for x in agent.input_guardrails)


def _refuse_unreachable(agent: Agent[Any]) -> None:
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
        if inner is None:
            tools_.refuse_delegation(agent, t, _is_guarded, guard)


def _guarded(
    agent: Agent[Any], base: AgentGuard, marks: dict[str, Any], seen: dict[int, Agent[Any]]
) -> Agent[Any]:
    """``agent`` guarded, and the agents it hands off to (each under its own name)."""
    if id(agent) in seen or _is_guarded(agent):
        return seen.get(id(agent), agent)
    _refuse_unreachable(agent)
    g = base.named(agent.name)
    functions = [t for t in agent.tools if isinstance(t, FunctionTool)]  # (all: refused else)
    g.describe(*(tools_.described(t, marks.get(t.name)) for t in functions))
    checks = _checks(g)
    out = agent.clone(
        tools=[tools_.guarded_tool(g, t) for t in functions],
        mcp_servers=[],  # its own list: a server added to the original later is not added here
        input_guardrails=[
            checks[0],
            *(tools_.recorded_agent_guardrail(g, x, "pre-prompt") for x in agent.input_guardrails),
        ],
        output_guardrails=[
            *(
                tools_.recorded_agent_guardrail(g, x, "final-answer")
                for x in agent.output_guardrails
            ),
            checks[1],
        ],
        hooks=hooks_.Hooks(g, agent.hooks),
    )
    seen[id(agent)] = out
    out.handoffs = [
        hooks_.guarded_handoff(g, h, marks, lambda a: _guarded(a, base, marks, seen))
        for h in agent.handoffs
    ]
    return out


def _checks(g: AgentGuard) -> tuple[_InputCheck, _OutputCheck]:
    async def check_input(
        _ctx: RunContextWrapper[Any], agent: Agent[Any], given: Any
    ) -> GuardrailFunctionOutput:
        hooks_.stop_if_unjudged(g, agent)
        found = _prompt_of(given)
        if found is None or _JUDGED.get(None) == given:
            return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)
        try:
            used = await g.prompt(found[0])
        except RunStopped as stop:
            raise hooks_.stopping(stop) from None
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
            raise hooks_.stopping(stop) from None
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
        where a guardrail masked it, in the agent's ``output_type``) and the SDK's ``result``;
        ``guardrail`` with ``halted_by`` (a halt, a refused prompt or handoff, or a tripwire of
        the agent's own guardrails, which under Temporal would otherwise retry the workflow
        task forever); ``no-answer`` (every final output was refused); ``max-iterations``
        (``max_turns`` was reached). When the run stopped, ``result`` is what the SDK had made
        by then (``RunErrorDetails``).
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
        if not isinstance(ended, hooks_.Stopped):
            return ended
        data = ended.run_data
        if ended.stop_reason != "no-answer" or attempt == max_corrections or data is None:
            return g.ended(ended, data)
        agent, input = data.last_agent, _corrected(data, ended.note)
    raise AssertionError("unreachable")  # pragma: no cover


async def _run_once(
    g: AgentGuard, agent: Agent[Any], input: Any, kwargs: dict[str, Any]
) -> GuardedRun[Any] | hooks_.Stopped:
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
        stop = RunStopped(why, stop_reason="guardrail", by=f"{FRAMEWORK}:{name}")
        return g.ended(stop, err.run_data)
    except Exception as err:
        # Ours, raised in the SDK's hooks, or wrapped by the SDK or Temporal's runner.
        found = stopped_in(err)
        if found is None:
            raise
        return found if isinstance(found, hooks_.Stopped) else g.ended(found)
    finally:
        _JUDGED.reset(token)
    if result.interruptions:
        # Every guarded tool's approval mark is duraguard's (a signed ask); an interruption
        # can only come from what duraguard does not wrap: never a silent "done".
        names = ", ".join(
            sorted({getattr(i, "tool_name", "?") or "?" for i in result.interruptions})
        )
        why = (
            f"the run ended waiting for the SDK's own approval of {names}, which duraguard "
            "cannot sign; guard every agent that calls it"
        )
        return g.ended(RunStopped(why, stop_reason="guardrail", by="duraguard"), result)
    output = result.final_output
    for r in result.output_guardrail_results:
        if isinstance(r.guardrail, _OutputCheck) and isinstance(r.output.output_info, _Replaced):
            kind = getattr(result.last_agent, "output_type", None)
            output = as_type(kind, r.output.output_info.value)
    return g.finished(output, result)


def _corrected(data: Any, note: str) -> list[Any]:
    """The conversation so far, and the refusal of the last answer, for another answer."""
    return [
        *ItemHelpers.input_to_new_input_list(data.input),
        *(item.to_input_item() for item in data.new_items),
        {"role": "user", "content": f"Your answer was not accepted ({note}). Answer again."},
    ]
