"""The OpenAI Agents SDK's loop, guarded: the part of :mod:`duraguard.openai_agents` that ends a
run (:class:`Stopped`), the hooks before each model call, and handoffs judged as calls.

* :class:`Hooks` wraps the agent's own hooks with the installed SDK's signatures (the SDK calls
  ``on_handoff(context, agent=..., source=...)`` by keyword); before each model call
  it ends the run where the session is halted, the agent has a tool duraguard did not wrap, or
  the run streams tokens no guardrail could judge first (``Runner.run_streamed``).
* :func:`guarded_handoff` judges a handoff as a call (``transfer_to_<agent>``, kind ``read``)
  before the SDK takes it, and hands over to the target guarded with the same guardrails; a
  refused handoff ends the run (the SDK has no refused handoff).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from typing import Any

from agents import Agent, AgentHooks, AgentsException, Handoff, RunContextWrapper, handoff

from . import _openai_tools as tools_
from ._adapter import AgentGuard, RunStopped
from ._delegation import streaming_refusal
from ._describe import describe


class Stopped(RunStopped, AgentsException):
    """:class:`RunStopped` as the SDK knows its own errors: it attaches what the run made."""

    def __init__(self, stop: RunStopped) -> None:
        RunStopped.__init__(self, stop.note, stop_reason=stop.stop_reason, by=stop.by)
        self.run_data = None


def stopping(stop: RunStopped) -> Stopped:
    return stop if isinstance(stop, Stopped) else Stopped(stop)


class Hooks(AgentHooks[Any]):
    """The agent's own hooks, with one more move: a halted session (or a tool duraguard does not
    judge, or a token stream it cannot judge) ends the run before the model reads anything more.
    Each hook has the installed SDK's signature, so the SDK may call it by keyword as it calls
    ``on_handoff(context, agent=..., source=...)``."""

    def __init__(self, guard: AgentGuard, inner: Any) -> None:
        self.guard = guard
        self.inner = inner

    async def on_llm_start(
        self, context: Any, agent: Any, system_prompt: Any = None, input_items: Any = None
    ) -> None:
        stop_if_unjudged(self.guard, agent)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    # The agent's own hooks are called as the SDK calls them: by keyword for on_handoff, in
    # order for the others (a hook of the user's own may name its parameters otherwise).
    async def on_start(self, context: Any, agent: Any) -> None:
        if self.inner is not None:
            await self.inner.on_start(context, agent)

    async def on_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_end(context, agent, output)

    async def on_handoff(self, context: Any, agent: Any, source: Any) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context, agent=agent, source=source)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)


def _streamed() -> bool:
    """Whether this code runs under ``Runner.run_streamed`` (its run loop is a task of the
    workflow's event loop: the SDK's ``run_streamed.<locals>.run_loop``)."""
    for task in asyncio.all_tasks():
        code = getattr(task.get_coro(), "cr_code", None)
        if code is not None and code.co_name == "run_loop" and "run_streamed" in code.co_qualname:
            return not task.done()
    return False


def stop_if_unjudged(g: AgentGuard, agent: Any) -> None:
    """End the run (stop reason ``guardrail``) where the session is halted, the agent has a
    tool duraguard did not wrap, or the run streams tokens no guardrail could judge first."""
    try:
        g.stop_if_halted()
    except RunStopped as stop:
        raise stopping(stop) from None
    problem = tools_.unguarded(agent)
    if problem is None and _streamed():
        why = streaming_refusal(g.specs, "Runner.run_streamed")
        if why is not None:
            problem = f"{why}; run the agent with duraguard.openai_agents.run(agent, input)"
    if problem is not None:
        raise stopping(RunStopped(problem, stop_reason="guardrail", by="duraguard"))


def guarded_handoff(
    g: AgentGuard, h: Any, marks: dict[str, Any], guarded: Callable[[Agent[Any]], Agent[Any]]
) -> Any:
    """A handoff judged as a call before it is taken, handing over to a guarded agent."""
    if isinstance(h, Agent):
        h = handoff(guarded(h))
    if not isinstance(h, Handoff):
        return h
    original = h.on_invoke_handoff
    name = h.tool_name
    own = {"kind": "read", "labels": [], **(marks.get(name) or {})}
    g.describe(describe(name, h.tool_description, h.input_json_schema, marks=own))

    async def on_invoke(ctx: RunContextWrapper[Any], raw: str) -> Agent[Any]:
        try:
            args: Any = json.loads(raw) if raw else {}
        except ValueError:
            args = {"_": raw}
        taken: list[Agent[Any]] = []

        async def take(allowed: Any) -> dict[str, str]:
            target = await original(ctx, raw if allowed == args else json.dumps(allowed))
            taken.append(guarded(target))
            return {"handed_to": target.name}

        if not isinstance(args, dict):
            args = {"_": args}
        outcome, _ = await g.call(name, args, take)
        if not taken:
            by = outcome.verdict.by or "duraguard"
            why = outcome.refusal.reason if outcome.refusal is not None else "it did not run"
            g.session().halt(by)
            note = f"the handoff {name!r} was refused by {by}: {why}"
            raise Stopped(RunStopped(note, stop_reason="guardrail", by=by))
        return taken[0]

    return dataclasses.replace(h, on_invoke_handoff=on_invoke)
