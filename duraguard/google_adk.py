"""Guard a Google ADK agent running on Temporal: its tool calls, confirmations, prompt and answer.

Temporal's integration (``temporalio-google-adk``) runs ADK's ``Runner`` in workflow code: the
agent's model is a ``TemporalModel`` (each model call an activity, ``invoke_model``), a function
tool runs in workflow code, ``activity_as_tool(fn)`` runs as an activity; callbacks and plugins
run in workflow code. :class:`Guarded` is an ADK plugin (``BasePlugin``: its callbacks apply to
every agent of the runner, sub-agents included) whose callbacks call the guard core's seams
(:mod:`duraguard._adapter`), so each verdict is a recorded step that replay reads back::

    app = App(name="support", root_agent=agent, plugins=[Guarded(guardrails=[policy()])])
    ran = await duraguard.google_adk.run(InMemoryRunner(app=app), "Refund order A-7")

* ``before_tool_callback``: each call is judged before it runs. ``deny`` returns the refusal
  as the call's response (ADK's own shape: a dict answering the call, the tool skipped);
  ``mask`` and ``rewrite`` change ``tool_args`` in place, so the tool (and an activity tool's
  input in history) never sees the original; ``approve`` parks durably in the callback for a
  signed yes bound to the call. A tool's ``require_confirmation`` is answered the same way, in
  the run: the call parks for duraguard's signed yes (``asked_by``
  ``google-adk:require_confirmation``) and its ``ToolConfirmation`` is set from the answer, so
  ADK's own gate lets it run (a yes) or refuses it (a no, an expiry) without pausing the run
  for an unsigned ``FunctionResponse``. The policy knows each tool from its declaration (name,
  description, parameters; marks in ``Guarded(tools={...})``);
* ``after_tool_callback``: its result is judged and recorded (with its tool's labels) before
  the model reads it; a mask or refusal replaces it;
* ``on_user_message_callback``: the person's message is judged; a mask replaces it before it
  reaches the session, so no model reads the original; a refusal ends the run;
* ``before_model_callback``: a halted session ends the run before the model reads anything, and
  so does an SSE stream (``RunConfig(streaming_mode=SSE)``, published from the model's activity)
  where a guardrail judges what it would run ahead of;
* ``after_model_callback``: a response with no function call (an answer) is judged as the final
  answer: a mask replaces it before it reaches the session; a refusal ends the run, and
  :func:`run` asks again (``max_corrections`` times), then stop reason ``no-answer``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

try:
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.tools.tool_confirmation import ToolConfirmation
    from google.genai import types
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "duraguard.google_adk needs Google ADK: pip install 'duraguard[google-adk]'"
    ) from err

from ._adapter import (
    AgentGuard,
    GuardedRun,
    RunStopped,
    call_key,
    changed,
    corrected,
    refused_in,
)
from ._delegation import agents_reached
from ._describe import describe, marks_of
from .errors import ConfigurationError
from .guardrail import GuardrailLike
from .workflow import CallGate, CallOptions

__all__ = ["Guarded", "GuardedRun", "RunStopped", "run"]

FRAMEWORK = "google-adk"
REQUIRE_CONFIRMATION = f"{FRAMEWORK}:require_confirmation"
IN_WORKFLOW = "run the Runner in workflow code (the workflow's run method)"


class Guarded(BasePlugin):
    """Guardrails for every tool call, confirmation, the prompt and the answers of a runner.

    Args:
        guardrails: The guardrails, in order, at every placement each declares.
        options: Approval timeout and budget, check mode (:class:`duraguard.CallOptions`);
            ``agent`` defaults to each ADK agent's name (admission rules know it by that).
        tools: What the policy should know of a tool that its declaration does not say, by
            name: ``kind``, ``labels`` (``[]``: trusted), ``destinations``, ``roles``,
            ``description``. The worker's tool kinds file and catalogue still win.
    """

    def __init__(
        self,
        *,
        guardrails: Sequence[GuardrailLike],
        options: CallOptions | None = None,
        tools: Mapping[str, Mapping[str, Any]] | None = None,
        name: str = "duraguard",
    ) -> None:
        super().__init__(name=name)
        self.marks = marks_of(tools, "Guarded")
        # Built now, so a bad guardrail is refused when the runner is built, not mid-run.
        self.guard = AgentGuard.of(guardrails, options, None, FRAMEWORK)
        self._agents: dict[str | None, AgentGuard] = {}
        self._gates: dict[tuple[str, str, str], CallGate] = {}
        self.judging_prompts = True

    def _for(self, agent: str | None) -> AgentGuard:
        """The guard under the ADK agent's name (workflow code only)."""
        g = self._agents.get(agent)
        if g is None:
            g = self._agents[agent] = self.guard.named(self.guard.agent or agent)
        g.require_workflow(IN_WORKFLOW)
        return g

    # -- the prompt ------------------------------------------------------------------------
    async def on_user_message_callback(self, *, invocation_context: Any, user_message: Any) -> Any:
        g = self._for(getattr(invocation_context.agent, "name", None))
        g.stop_if_halted()
        parts = list(user_message.parts or [])
        texts = [i for i, p in enumerate(parts) if isinstance(p.text, str)]
        if not texts or not self.judging_prompts:
            return None
        said = [parts[i].text for i in texts]
        used = await g.prompt_texts(said)
        if used == said:
            return None
        for i, text in zip(texts, used, strict=True):
            parts[i] = parts[i].model_copy(update={"text": text})
        return user_message.model_copy(update={"parts": parts})

    # -- a halted session before each model call; each answer after it ---------------------
    async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> Any:
        g = self._for(callback_context.agent_name)
        g.stop_if_halted()
        mode = getattr(getattr(callback_context, "run_config", None), "streaming_mode", None)
        if str(getattr(mode, "value", mode)).lower() == "sse":
            g.refuse_stream(
                f"agent {g.agent!r}'s SSE stream",
                "run it without streaming_mode=SSE, or judge only the prompt and the tools' "
                "results",
            )
        for t in (getattr(llm_request, "tools_dict", None) or {}).values():
            if getattr(t, "include_plugins", True) is False and hasattr(t, "agent"):
                raise ConfigurationError(
                    f"the tool {t.name!r} of agent {g.agent!r} runs agent "
                    f"{getattr(t.agent, 'name', None)!r} with include_plugins=False, in a "
                    "runner with no Guarded plugin: its calls would run with no verdict; build "
                    "it AgentTool(agent) (include_plugins=True, the default)"
                )
            reached = agents_reached(getattr(t, "func", None), _unguarded_agent)
            if reached:
                raise ConfigurationError(
                    f"the tool {t.name!r} of agent {g.agent!r} runs agent or runner "
                    f"{getattr(reached[0], 'name', None) or reached[0]!r} from its function, "
                    "outside this runner's plugins: its calls would run with no verdict; give "
                    "the agent as AgentTool(agent) (it shares the Guarded plugin)"
                )
            if t.name not in g.tools:
                g.describe(_described(t, self.marks))
        return None

    async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> Any:
        content = llm_response.content
        parts = list(content.parts or []) if content is not None else []
        if llm_response.partial or not parts or any(p.function_call for p in parts):
            return None
        texts = [i for i, p in enumerate(parts) if isinstance(p.text, str) and not p.thought]
        if not texts:
            return None
        g = self._for(callback_context.agent_name)
        answer = "".join(parts[i].text or "" for i in texts)
        pr = await g.answer(answer)  # a refusal or halt raises RunStopped: run() handles it
        if not pr.replaced:
            return None
        shown = pr.value if isinstance(pr.value, str) else str(pr.value)
        kept = [p for i, p in enumerate(parts) if i not in texts]
        new = content.model_copy(update={"parts": [types.Part(text=shown), *kept]})
        return LlmResponse(**{**llm_response.model_dump(exclude={"content"}), "content": new})

    # -- each tool call ---------------------------------------------------------------------
    async def before_tool_callback(self, *, tool: Any, tool_args: Any, tool_context: Any) -> Any:
        g = self._for(tool_context.agent_name)
        g.describe(_described(tool, self.marks))
        # ADK runs the agent's own before_tool_callbacks (and plugins after this one) after
        # this verdict, on the same arguments: the last of them checks what will run.
        _last_callback(getattr(tool_context, "_invocation_context", None), self.rejudge)
        return await self._judge(g, tool, tool_args, tool_context)

    async def rejudge(self, tool: Any, args: Any, tool_context: Any) -> Any:
        """The agent's last ``before_tool_callback`` (Guarded adds it): the call runs with the
        arguments judged, or, changed since (by the agent's own callback, a plugin after
        Guarded), it is judged again, as it is now; with no verdict at all it is refused."""
        cid = tool_context.function_call_id or ""
        if call_key(cid, tool.name, dict(args)) in self._gates:
            return None
        g = self._for(tool_context.agent_name)
        stale = next((k for k in self._gates if k[:2] == (cid, tool.name)), None)
        if stale is None:
            return _refusal(f"duraguard has no verdict on this call of {tool.name!r}")
        await g.record(self._gates.pop(stale), error="its arguments changed after the verdict")
        return await self._judge(g, tool, args, tool_context)

    async def _judge(self, g: AgentGuard, tool: Any, tool_args: Any, tool_context: Any) -> Any:
        asked = dict(tool_args)
        confirms = await tool.check_require_confirmation(tool_args, tool_context) is True
        gate = await g.gate(tool.name, asked, ask=REQUIRE_CONFIRMATION if confirms else None)
        if confirms:
            # ADK's own gate reads the answer: duraguard's signed yes or no, never unsigned.
            tool_context.tool_confirmation = ToolConfirmation(confirmed=gate.runs)
        if not gate.runs:
            return _refusal(gate.outcome().result)
        if gate.args != asked:
            tool_args.clear()
            tool_args.update(gate.args)
        self._gates[call_key(tool_context.function_call_id or "", tool.name, gate.args)] = gate
        return None

    async def after_tool_callback(
        self, *, tool: Any, tool_args: Any, tool_context: Any, result: Any
    ) -> Any:
        key = call_key(tool_context.function_call_id or "", tool.name, dict(tool_args))
        gate = self._gates.pop(key, None)
        if gate is None:
            return None
        g = self._for(tool_context.agent_name)
        # ADK would run the agent's own after_tool_callbacks after this one, on a result
        # already judged: they run here, first, and what they answer is what is judged.
        agent = getattr(getattr(tool_context, "_invocation_context", None), "agent", None)
        own = list(getattr(agent, "canonical_after_tool_callbacks", None) or ())
        for cb in own:
            answered = cb(
                tool=tool, args=tool_args, tool_context=tool_context, tool_response=result
            )
            answered = await answered if inspect.isawaitable(answered) else answered
            if answered is not None:
                result = answered
                break
        raw = _value(result)
        outcome = await g.record(gate, raw)
        if not changed(outcome, raw):
            return result if own else None  # an answer: ADK runs the agent's callbacks no more
        return _refusal(outcome.result) if outcome.refusal is not None else _shape(outcome.result)

    async def on_tool_error_callback(
        self, *, tool: Any, tool_args: Any, tool_context: Any, error: Exception
    ) -> Any:
        key = call_key(tool_context.function_call_id or "", tool.name, dict(tool_args))
        gate = self._gates.pop(key, None)
        if gate is not None:
            await self._for(tool_context.agent_name).record(
                gate, error=str(error) or type(error).__name__
            )
        return None


def _last_callback(context: Any, check: Any) -> None:
    """``check`` as the last of the running agent's ``before_tool_callback``s (once)."""
    agent = getattr(context, "agent", None)
    if agent is None or not hasattr(agent, "before_tool_callback"):
        return
    own = agent.before_tool_callback
    callbacks = list(own) if isinstance(own, list) else ([] if own is None else [own])
    if callbacks and callbacks[-1] == check:
        return
    agent.before_tool_callback = [*(c for c in callbacks if c != check), check]


def _unguarded_agent(value: Any) -> bool:
    """An ADK agent (run from a tool's function, it runs outside the runner's plugins), or a
    runner with no Guarded plugin."""
    from google.adk.agents import BaseAgent
    from google.adk.runners import Runner

    if isinstance(value, BaseAgent):
        return True
    if isinstance(value, Runner):
        plugins = getattr(getattr(value, "plugin_manager", None), "plugins", ())
        return not any(isinstance(p, Guarded) for p in plugins)
    return False


def _value(result: Any) -> Any:
    """What a tool returned, as ADK hands it over: a dict, or ``{"result": value}``."""
    if isinstance(result, dict) and set(result) == {"result"}:
        return result["result"]
    return result


def _shape(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"result": value}


def _refusal(refusal: Any) -> dict[str, Any]:
    """A refusal as ADK's answer to a call (a tool's error response, which the model reads)."""
    return refusal if isinstance(refusal, dict) else {"error": refusal}


def _described(tool: Any, marks: Mapping[str, Any]) -> Any:
    decl = tool._get_declaration() if hasattr(tool, "_get_declaration") else None
    schema: Any = None
    if decl is not None:
        schema = decl.parameters_json_schema
        if schema is None and decl.parameters is not None:
            schema = decl.parameters.model_dump(mode="json", exclude_none=True)
            schema = _lower_types(schema)
    return describe(
        tool.name, tool.description or "", schema, marks=marks.get(tool.name) or {},
        where=f"tool {tool.name!r}",
    )  # fmt: skip


def _lower_types(schema: Any) -> Any:
    """A ``google.genai`` ``Schema`` dump as JSON Schema (``"STRING"`` is ``"string"``)."""
    if isinstance(schema, dict):
        return {
            k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v))
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def _guarded_of(runner: Any) -> Guarded:
    manager = getattr(runner, "plugin_manager", None)
    for plugin in getattr(manager, "plugins", ()):
        if isinstance(plugin, Guarded):
            return plugin
    raise ConfigurationError(
        "the runner has no Guarded plugin; build it with "
        "App(..., plugins=[duraguard.google_adk.Guarded(guardrails=[...])])"
    )


async def run(
    runner: Any,
    prompt: str | Any,
    *,
    user_id: str = "user",
    session_id: str | None = None,
    max_corrections: int = 1,
    **kwargs: Any,
) -> GuardedRun[Any]:
    """Run a guarded ADK runner (workflow code): ``run_async`` with how it ended as a value.

    ``prompt`` is the person's text (or a ``types.Content``); a session is created for
    ``user_id`` unless ``session_id`` names one. Keyword arguments go to ``run_async``.

    Returns:
        A :class:`GuardedRun`: ``stop_reason`` ``done`` with the final answer's text as
        ``output`` (masked where a guardrail masked it) and ADK's events as ``result``;
        ``guardrail`` with ``halted_by`` (a halt, a refused prompt); ``no-answer`` (every
        answer was refused).
    """
    guarded = _guarded_of(runner)
    guarded._for(getattr(runner.agent, "name", None))
    if session_id is None:
        session = await runner.session_service.create_session(
            app_name=runner.app_name, user_id=user_id
        )
        session_id = session.id
    message = (
        prompt
        if isinstance(prompt, types.Content)
        else types.Content(role="user", parts=[types.Part(text=str(prompt))])
    )
    events: list[Any] = []

    async def attempt(correction: str | None) -> GuardedRun[Any]:
        guarded.judging_prompts = correction is None  # a correction is duraguard's words
        said = message if correction is None else types.Content(
            role="user", parts=[types.Part(text=correction)]
        )  # fmt: skip
        async for event in runner.run_async(
            user_id=user_id, session_id=session_id, new_message=said, **kwargs
        ):
            events.append(event)
        guarded.guard.stop_if_halted()  # a halt on the run's last tool calls
        answers = [e for e in events if e.is_final_response() and e.content is not None]
        last = answers[-1].content if answers else None
        output = "".join(p.text or "" for p in (last.parts or [])) if last else None
        return guarded.guard.finished(output, events)

    try:
        return await corrected(
            attempt, lambda stop: guarded.guard.ended(stop, events), max_corrections
        )
    except Exception as err:
        refused_in(err)  # a refusal from a callback, as the run's failure
        raise
    finally:
        guarded.judging_prompts = True
