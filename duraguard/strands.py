"""Guard a Strands agent running on Temporal: its tool calls, prompt and final answer.

Temporal's integration (``temporalio-strands-agents``) runs a ``TemporalAgent`` in workflow
code: each model call is an activity (``invoke_model``), a ``@tool`` function runs in workflow
code, ``activity_as_tool(fn)`` runs as an activity; hooks run in workflow code. :class:`Guarded`
is a Strands hook provider whose callbacks call the guard core's seams
(:mod:`duraguard._adapter`), so each verdict is a recorded step that replay reads back::

    agent = TemporalAgent(model="claude", tools=[...], hooks=[Guarded(guardrails=[policy()])])
    ran = await duraguard.strands.run(agent, "Refund order A-7")   # in the workflow

* ``BeforeToolCallEvent``: each call is judged before it runs. ``deny`` sets ``cancel_tool``
  to the refusal (Strands' own refusal: an error tool result the model reads); ``mask`` and
  ``rewrite`` replace ``tool_use``'s input, so the tool (and an activity tool's input in
  history) never sees the original; ``approve`` parks durably in the hook for a signed yes
  bound to the call. The policy knows each tool from its ``tool_spec`` (name, description,
  input schema; marks in ``Guarded(tools={...})``), as :mod:`duraguard._describe` says;
* ``AfterToolCallEvent``: its result is judged and recorded (with its tool's labels) before the
  model reads it; a mask or refusal replaces ``result``;
* ``BeforeInvocationEvent``: the person's prompt (the text of the invocation's user messages)
  is judged; a mask replaces ``messages``, so no model reads the original; a refusal ends the
  run before any model call;
* ``BeforeModelCallEvent``: a halted session ends the run before the model reads anything;
  :func:`run` returns stop reason ``guardrail`` naming the guardrail (sibling calls of the
  halted call's turn complete and are recorded first);
* the final answer is judged by :func:`run` after ``invoke_async``: ``mask`` replaces it,
  ``deny`` asks the model again (``max_corrections`` times), then stop reason ``no-answer``;
* an agent used as a tool (agents-as-tools) must carry a ``Guarded`` of its own: its calls are
  judged by it, in the same session; an unguarded one is refused before any model call;
* Strands' own human-in-the-loop: an interrupt a hook of the agent raises on a call
  (``event.interrupt(...)``, the ``HumanInTheLoop`` intervention's ``Confirm``) parks the call
  for duraguard's signed, call-bound yes (``asked_by`` ``strands:<interrupt name>``, with the
  guardrails' own verdict in the same pass); :func:`run` resumes the agent itself with the
  answer (``True`` for a yes, ``False`` for a no or an expiry), so the run never ends waiting on
  an unsigned response. ``Guarded``'s tool hook runs last (after every hook, whatever its order) to see it; a
  ``cancel_tool`` set by the agent's own hook is recorded as a refusal by
  ``strands:cancel_tool``. An interrupt on no tool call ends the run with stop reason
  ``guardrail`` by ``duraguard``, never ``done`` with no answer;
* the verdict is on the call as it runs: a hook of the agent's own that changes ``tool_use``
  (or, after the call, ``result``) runs before ``Guarded``'s; ``ExecuteToolStage`` middleware of the agent's own (between the
  verdict and the tool, out of every hook's sight) is refused before any model call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

try:
    from strands.hooks import (
        AfterToolCallEvent,
        BeforeInvocationEvent,
        BeforeModelCallEvent,
        BeforeToolCallEvent,
        HookProvider,
        HookRegistry,
    )
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "duraguard.strands needs Strands Agents: pip install 'duraguard[strands]'"
    ) from err

from ._adapter import (
    AgentGuard,
    GuardedRun,
    RunStopped,
    as_type,
    call_key,
    changed,
    corrected,
    for_model,
)
from ._delegation import agents_reached
from ._describe import describe, marks_of
from .errors import ConfigurationError
from .guardrail import GuardrailLike
from .workflow import CallGate, CallOptions

__all__ = ["Guarded", "GuardedRun", "RunStopped", "run"]

FRAMEWORK = "strands"
LAST = float("inf")
"""After every hook of the agent's own, whatever its order."""
IN_WORKFLOW = "run the agent in workflow code (a TemporalAgent in the workflow's run method)"


@dataclass(init=False)
class Guarded(HookProvider):  # type: ignore[misc]
    """Guardrails for every tool call, the prompt and the final answer of a Strands agent.

    Args:
        guardrails: The guardrails, in order, at every placement each declares.
        options: Approval timeout and budget, check mode (:class:`duraguard.CallOptions`);
            ``agent`` defaults to the agent's name (admission rules know it by that).
        tools: What the policy should know of a tool that its spec does not say, by name:
            ``kind``, ``labels`` (``[]``: trusted), ``destinations``, ``roles``,
            ``description``. The worker's tool kinds file and catalogue still win.
    """

    guard: AgentGuard
    marks: dict[str, Any] = field(default_factory=dict)
    _gates: dict[tuple[str, str, str], CallGate] = field(default_factory=dict, repr=False)
    """Calls let through by ``BeforeToolCallEvent``, for ``AfterToolCallEvent`` to record."""
    _asked: dict[tuple[str, str, str], CallGate] = field(default_factory=dict, repr=False)
    """Calls a hook of the agent's own interrupted for a person, as duraguard's signed yes (or
    no) answered them, for the resumed ``BeforeToolCallEvent`` to use."""
    _answers: dict[str, bool] = field(default_factory=dict, repr=False)
    """Those interrupts' responses, by interrupt id, for :func:`run` to resume with."""
    _judging_prompts: bool = True

    def __init__(
        self,
        *,
        guardrails: Sequence[GuardrailLike],
        options: CallOptions | None = None,
        tools: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.marks = marks_of(tools, "Guarded")
        # Built now, so a bad guardrail is refused when the agent is built, not mid-run.
        self.guard = AgentGuard.of(guardrails, options, None, FRAMEWORK)
        self._gates, self._asked, self._answers = {}, {}, {}
        self._judging_prompts = True

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self.before_invocation)
        registry.add_callback(BeforeModelCallEvent, self.before_model_call)
        # Last, after the agent's own hooks and interventions (even one ordered after
        # SDK_LAST): what they decided about a call (an interrupt for a person, a cancel_tool,
        # other arguments) is there to see, and the verdict is on the call as it will run.
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call, order=LAST)
        # And last again once the tool ran: what the model reads of its result is what is judged.
        registry.add_callback(AfterToolCallEvent, self.after_tool_call, order=LAST)

    def _bound(self, agent: Any) -> AgentGuard:
        """The guard under the agent's name, told its tools (workflow code only)."""
        g = self.guard
        if g.agent is None and getattr(agent, "name", None):
            g = self.guard = g.named(agent.name)
        g.require_workflow(IN_WORKFLOW)
        _refuse_tool_middleware(agent, g.agent)
        registry = getattr(agent, "tool_registry", None)
        for tool in getattr(registry, "registry", {}).values():
            if tool.tool_name not in g.tools:
                inner = getattr(tool, "agent", None) if tool.tool_type == "agent" else None
                if inner is None:  # an agent a tool's function runs (its closure, globals)
                    fn = getattr(tool, "_tool_func", None)
                    reached = agents_reached(fn, _is_agent) if fn is not None else []
                    inner = next((a for a in reached if not _is_guarded(a)), None)
                if inner is not None and not _is_guarded(inner):
                    raise ConfigurationError(
                        f"the tool {tool.tool_name!r} of agent {g.agent!r} runs agent "
                        f"{getattr(inner, 'name', None)!r}, which is not guarded: its calls "
                        "would run with no verdict; give it hooks=[Guarded(guardrails=[...])]"
                    )
                g.describe(_described(tool, self.marks))
        return g

    # -- the prompt ------------------------------------------------------------------------
    async def before_invocation(self, event: BeforeInvocationEvent) -> None:
        g = self._bound(event.agent)
        g.stop_if_halted()
        if getattr(getattr(event.agent, "model", None), "_streaming_topic", None) is not None:
            g.refuse_stream(
                f"agent {g.agent!r}'s streaming_topic",
                "build the TemporalAgent without streaming_topic, or judge only the prompt and "
                "the tools' results",
            )
        if not self._judging_prompts or not event.messages:
            return
        messages = [dict(m) for m in event.messages]
        replaced = False
        for m in messages:
            if m.get("role") != "user":
                continue
            blocks = list(m.get("content") or [])
            texts = [i for i, b in enumerate(blocks) if isinstance(b.get("text"), str)]
            if not texts:
                continue
            used = await g.prompt_texts([blocks[i]["text"] for i in texts])
            for i, text in zip(texts, used, strict=True):
                if text != blocks[i]["text"]:
                    blocks[i] = {**blocks[i], "text": text}
                    replaced = True
            m["content"] = blocks
        if replaced:
            event.messages = messages

    # -- a halted session, before each model call ------------------------------------------
    async def before_model_call(self, event: BeforeModelCallEvent) -> None:
        self._bound(event.agent).stop_if_halted()

    # -- each tool call -------------------------------------------------------------------
    async def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        g = self._bound(event.agent)
        use = event.tool_use
        if event.selected_tool is not None:
            g.describe(_described(event.selected_tool, self.marks))
        asked = dict(use.get("input") or {})
        key = call_key(use["toolUseId"], use["name"], asked)
        gate = self._asked.pop(key, None)  # resumed after a person's signed answer
        if gate is None:
            waiting = _interrupts_on(event)
            if waiting:
                # A hook of the agent's own stops the run for a person (Strands' interrupt):
                # duraguard's signed, call-bound yes answers it, durably, in this run.
                name = waiting[0].name
                gate = await g.gate(use["name"], asked, ask=_native(name))
                for i in waiting:
                    self._answers[i.id] = gate.runs
                self._asked[key] = gate
                return
            if event.cancel_tool:  # refused by the agent's own hook: on the record too
                why = event.cancel_tool if isinstance(event.cancel_tool, str) else "cancelled"
                await g.note(
                    "tool-args", f"{FRAMEWORK}:cancel_tool", "deny", why, value=asked,
                    tool=use["name"],
                )  # fmt: skip
                return
            gate = await g.gate(use["name"], asked)
        if not gate.runs:
            event.cancel_tool = for_model(gate.outcome())
            return
        if gate.args != asked:
            event.tool_use = {**use, "input": gate.args}
        self._gates[call_key(use["toolUseId"], use["name"], gate.args)] = gate

    async def after_tool_call(self, event: AfterToolCallEvent) -> None:
        use = event.tool_use
        gate = self._gates.pop(
            call_key(use["toolUseId"], use["name"], dict(use.get("input") or {})), None
        )
        if gate is None:  # refused in before_tool_call (cancel_tool), or not this guard's
            return
        result = event.result
        raw = _value(result)
        if event.exception is not None or result.get("status") == "error":
            error = str(event.exception) if event.exception is not None else str(raw)
            await self.guard.record(gate, error=error or "the tool failed")
            # What the model reads of the error is judged as its result would be.
            text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
            shown = await self.guard.shown_error(gate, text)
            if shown != text:
                event.result = {**result, "content": [{"text": shown}]}
            return
        outcome = await self.guard.record(gate, raw)
        if changed(outcome, raw):
            status = "success" if outcome.ran and outcome.refusal is None else "error"
            event.result = {
                **result,
                "status": status,
                "content": [{"text": for_model(outcome)}],
            }


def _refuse_tool_middleware(agent: Any, name: str | None) -> None:
    """Refuse ``ExecuteToolStage`` middleware of the agent's own: it runs between the verdict
    (``BeforeToolCallEvent``) and the tool, and can run a call with other arguments, or another
    tool, than judged, out of any hook's sight (the SDK's own, agent delegation's, is kept)."""
    from strands.middleware import ExecuteToolStage

    handlers = getattr(getattr(agent, "_middleware_registry", None), "_handlers", {})
    for tagged in handlers.get(ExecuteToolStage, ()):
        h = tagged.handler
        owner = getattr(h, "__self__", h)
        if type(owner).__module__.startswith("strands.agent."):
            continue
        raise ConfigurationError(
            f"agent {name!r} has ExecuteToolStage middleware ({tagged.phase}), which runs after "
            "duraguard's verdict and can run the call with other arguments than judged; change "
            "a call in a BeforeToolCallEvent hook instead (duraguard judges after every hook)"
        )


def _interrupts_on(event: BeforeToolCallEvent) -> list[Any]:
    """The interrupts the agent's own hooks raised on this call that nobody answered yet."""
    state = getattr(event.agent, "_interrupt_state", None)
    mine = f"v1:before_tool_call:{event.tool_use['toolUseId']}:"
    found = getattr(state, "interrupts", {}).values()
    return [i for i in found if i.id.startswith(mine) and i.response is None]


def _native(name: str) -> str:
    return name if name.startswith(f"{FRAMEWORK}:") else f"{FRAMEWORK}:{name}"


def _value(result: Any) -> Any:
    """A ``ToolResult``'s content as the policy reads it: one text or JSON block's value, else
    the blocks."""
    blocks = list(result.get("content") or [])
    if len(blocks) == 1 and "text" in blocks[0]:
        return blocks[0]["text"]
    if len(blocks) == 1 and "json" in blocks[0]:
        return blocks[0]["json"]
    return blocks


def _described(tool: Any, marks: Mapping[str, Any]) -> Any:
    spec = tool.tool_spec
    schema = (spec.get("inputSchema") or {}).get("json")
    return describe(
        tool.tool_name, spec.get("description") or "", schema,
        marks=marks.get(tool.tool_name) or {}, where=f"tool {tool.tool_name!r}",
    )  # fmt: skip


def _guarded_in(agent: Any) -> Guarded | None:
    for callbacks in getattr(agent.hooks, "_registered_callbacks", {}).values():
        for entry in callbacks:
            owner = getattr(getattr(entry, "callback", entry), "__self__", None)
            if isinstance(owner, Guarded):
                return owner
    return None


def _is_agent(value: Any) -> bool:
    from strands import Agent

    return isinstance(value, Agent)


def _is_guarded(agent: Any) -> bool:
    return _guarded_in(agent) is not None


def _guarded_of(agent: Any) -> Guarded:
    found = _guarded_in(agent)
    if found is not None:
        return found
    raise ConfigurationError(
        f"agent {getattr(agent, 'name', agent)!r} has no Guarded hooks; build it with "
        "TemporalAgent(..., hooks=[duraguard.strands.Guarded(guardrails=[...])])"
    )


def _answer(result: Any) -> Any:
    structured = getattr(result, "structured_output", None)
    if structured is not None:
        return structured
    return str(result).strip()


async def run(
    agent: Any, prompt: Any = None, *, max_corrections: int = 1, **kwargs: Any
) -> GuardedRun[Any]:
    """Run a guarded agent (workflow code): ``agent.invoke_async`` with how it ended as a value.

    Keyword arguments go to ``invoke_async`` (``invocation_state``,
    ``structured_output_model``...).

    Returns:
        A :class:`GuardedRun`: ``stop_reason`` ``done`` with the final ``output`` (masked where
        a guardrail masked it; a structured output stays its model) and Strands' ``result``
        (``AgentResult``); ``guardrail`` with ``halted_by`` (a halt, a refused prompt, an
        interrupt duraguard does not answer); ``no-answer`` (every answer was refused).
    """
    guarded = _guarded_of(agent)
    guarded._bound(agent)

    async def attempt(correction: str | None) -> GuardedRun[Any]:
        guarded._judging_prompts = correction is None  # a correction is duraguard's words
        result = await agent.invoke_async(prompt if correction is None else correction, **kwargs)
        g = guarded.guard
        g.stop_if_halted()  # a halt on the run's last tool calls: no model call came after it
        if result.stop_reason == "interrupt":
            waiting = list(result.interrupts or ())
            if not waiting or any(i.id not in guarded._answers for i in waiting):
                names = ", ".join(i.name for i in waiting)
                raise RunStopped(
                    f"the run stopped for an interrupt ({names}) on no tool call, which "
                    "duraguard does not answer; ask a person with a guardrail's approve (a "
                    "durable, signed yes) instead",
                    stop_reason="guardrail",
                    by="duraguard",
                )
            # Each answered by a signed yes or no: resume with the answers.
            return await attempt_resumed(waiting)
        answer = _answer(result)
        pr = await g.answer(answer)
        output = as_type(type(answer), pr.value) if pr.replaced else answer
        return g.finished(output, result)

    async def attempt_resumed(waiting: list[Any]) -> GuardedRun[Any]:
        nonlocal prompt
        prompt = [
            {"interruptResponse": {"interruptId": i.id, "response": guarded._answers.pop(i.id)}}
            for i in waiting
        ]
        return await attempt(None)

    try:
        return await corrected(attempt, lambda stop: guarded.guard.ended(stop), max_corrections)
    finally:
        guarded._judging_prompts = True
