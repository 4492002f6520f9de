"""Pydantic AI's agents, read for :mod:`duraguard.pydantic_ai`: the delegations and event
streams a guard refuses before a run's first model request, the prompt's parts judged, and an
output function's input as a call's arguments.

* :func:`refuse_unjudged_delegation` refuses a tool that runs another agent where its calls
  cannot be judged: inside the tool's activity (the default under ``TemporalDurability``), or
  an agent that is not guarded (found through the tool function's globals and closure,
  :func:`duraguard._delegation.agents_reached`);
* :func:`refuse_unjudged_streams` refuses an ``event_stream_topic`` or ``event_stream_handler``
  whose model events would run ahead of a guardrail at the final answer or tool arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import UserPromptPart

from ._adapter import AgentGuard, as_type
from ._delegation import agents_reached, streaming_refusal
from .errors import ConfigurationError

IN_WORKFLOW = (
    "declare the tool that runs it with metadata={'temporal': False} (an async function) so it "
    "runs in workflow code, and list the agent in the workflow's __pydantic_ai_agents__"
)


def is_guarded(agent: Any, kind: type) -> bool:
    """Whether ``agent`` has a capability of ``kind`` (the adapter's ``Guarded``)."""
    found: list[Any] = []
    root = getattr(agent, "root_capability", None)
    if root is not None:
        root.apply(lambda c: found.append(c) if isinstance(c, kind) else None)
    return bool(found)


def _function_tools(agent: Any) -> list[Any]:
    """The agent's function tools (registered on it, or in a function toolset it was given)."""
    found: list[Any] = list(
        getattr(getattr(agent, "_function_toolset", None), "tools", {}).values()
    )
    for ts in getattr(agent, "toolsets", ()):
        while ts is not None and not hasattr(ts, "tools") and hasattr(ts, "wrapped"):
            ts = ts.wrapped
        for t in getattr(ts, "tools", {}).values() if ts is not None else ():
            if all(t is not f for f in found):
                found.append(t)
    return found


def refuse_unjudged_delegation(agent: Any, guarded: type) -> None:
    """A tool that runs another agent where duraguard cannot judge its calls: inside an activity
    (a tool's default), or an agent that is not guarded."""
    for t in _function_tools(agent):
        fn = getattr(t, "function", None)
        inner = [a for a in agents_reached(fn, lambda v: isinstance(v, Agent)) if a is not agent]
        if not inner:
            continue
        temporal = (getattr(t, "metadata", None) or {}).get("temporal")
        for a in inner:
            name = getattr(a, "name", None) or "an agent"
            if temporal is not False and not isinstance(temporal, Mapping):
                raise ConfigurationError(
                    f"the tool {t.name!r} of agent {agent.name!r} runs {name!r} inside its "
                    f"activity, where no verdict on its calls can be recorded; {IN_WORKFLOW}, "
                    "and give it Guarded(...)"
                )
            if not is_guarded(a, guarded):
                raise ConfigurationError(
                    f"the tool {t.name!r} of agent {agent.name!r} runs {name!r}, which is not "
                    "guarded: its calls would run with no verdict; give it "
                    "capabilities=[TemporalDurability(), Guarded(guardrails=[...])]"
                )


def refuse_unjudged_streams(g: AgentGuard, agent: Any) -> None:
    found: list[Any] = []
    agent.root_capability.apply(
        lambda c: found.append(c) if hasattr(c, "_event_stream_topic") else None
    )
    for durability in found:
        streams = getattr(durability, "_event_stream_topic", None) is not None or (
            getattr(durability, "_event_stream_handler", None) is not None
        )
        why = (
            streaming_refusal(g.specs, f"agent {agent.name!r}'s event stream") if streams else None
        )
        if why is not None:
            raise ConfigurationError(
                f"{why}; run it without event_stream_topic / event_stream_handler, or judge "
                "only the prompt and the tools' results"
            )


async def judged_prompt(g: AgentGuard, part: UserPromptPart) -> UserPromptPart:
    """The prompt part as the model may read it. Text is judged; of multimodal content, the
    text items are (images and files go as they are)."""
    if isinstance(part.content, str):
        used = await g.prompt(part.content)
        return part if used == part.content else replace(part, content=used)
    items = list(part.content)
    texts = [i for i, c in enumerate(items) if isinstance(c, str)]
    if not texts:
        return part
    used = await g.prompt_texts([c for c in items if isinstance(c, str)])
    for i, text in zip(texts, used, strict=True):
        items[i] = text
    return replace(part, content=items)


def as_arguments(output: Any) -> dict[str, Any]:
    """An output function's input as the arguments of a call: a dict, a model's fields, or the
    single value under ``value``."""
    if isinstance(output, dict):
        return dict(output)
    dump = getattr(output, "model_dump", None)
    if callable(dump):
        return dict(dump(mode="json"))
    return {"value": output}


def from_arguments(output: Any, allowed: dict[str, Any]) -> Any:
    """The arguments a guardrail allowed (maybe masked), back in ``output``'s own shape."""
    if isinstance(output, dict):
        return allowed
    if callable(getattr(output, "model_dump", None)):
        return as_type(type(output), allowed)
    return as_type(type(output), allowed.get("value"))
