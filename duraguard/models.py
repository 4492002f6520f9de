"""Model providers, worker side: the port (:mod:`duraguard._provider`), a scripted model, and an
OpenAI-compatible client (:mod:`duraguard._openai_chat`).

Workflow code names a model as ``provider:model`` (``"openai:gpt-4.1"``, ``"scripted:refund"``).
The plugin looks the provider up by name among the ``models`` it was given and passes it the
whole :class:`~duraguard._wire.ModelRequest`, so the provider reads the part after the colon
itself (:func:`model_name`). Providers run inside the ``duraguard.model`` activity, which Temporal
may retry: a provider raises on a transient failure and lets Temporal own the retry.

This module imports nothing from Temporal's workflow side; the only Temporal import is
``ApplicationError``, which marks a failure retrying cannot fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ._openai_chat import OpenAIChat, parse_completion
from ._provider import (
    MODEL_REQUEST_REFUSED,
    MODEL_UNAVAILABLE,
    Model,
    model_name,
    refused,
    split_model,
    turn_index,
)
from ._wire import Message, ModelRequest, ModelResponse, ToolCall
from .errors import ConfigurationError
from .tools import Tool

# --- the scripted model -----------------------------------------------------------------------


@dataclass(frozen=True)
class ScriptedTurn:
    """One scripted model turn: tool calls to propose, an answer, or both.

    Build it with :func:`calls` or :func:`answer` rather than by hand.
    """

    content: str | None = None
    tool_calls: tuple[tuple[str, Any], ...] = ()
    """``(tool name, arguments)`` pairs; the arguments may be anything, even a malformed string."""


TurnFn: TypeAlias = Callable[[ModelRequest], ScriptedTurn | ModelResponse]
"""A turn computed from the request, e.g. to react to a refusal the model just read."""
Turn: TypeAlias = ScriptedTurn | ModelResponse | TurnFn
"""What a script holds: a turn, a ready response, or a function of the request returning one."""


def calls(*pairs: tuple[str, Any], content: str | None = None) -> ScriptedTurn:
    """A turn that proposes tool calls, in order: ``calls(("lookup_order", {"order_id": "A1"}))``.

    Raises:
        ConfigurationError: no call given, or a pair that is not ``(name, arguments)``.
    """
    if not pairs:
        raise ConfigurationError("calls() needs at least one (tool name, arguments) pair")
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise ConfigurationError(
                f"calls() takes (tool name, arguments) pairs, got {pair!r}; "
                'write calls(("lookup_order", {"order_id": "A1"}))'
            )
    return ScriptedTurn(content=content, tool_calls=tuple(pairs))


def answer(text: str) -> ScriptedTurn:
    """A turn that answers with ``text`` and proposes no call (the loop ends on it)."""
    return ScriptedTurn(content=text)


def last_tool_results(request: ModelRequest) -> tuple[Message, ...]:
    """The tool messages after the last assistant message: what the model just read."""
    tail: list[Message] = []
    for message in reversed(request.messages):
        if message.role == "assistant":
            break
        if message.role == "tool":
            tail.append(message)
    return tuple(reversed(tail))


class ScriptedModel(Model):
    """A deterministic model for tests and demos: a list of turns played in order.

    The turn played is a pure function of the request (the number of assistant messages already
    in it), so a retried model activity gives the same answer. Call ids are
    ``f"{id_prefix}{turn}-{i}"`` (``call-0-0``, ``call-0-1``, ``call-1-0``, ...). Past the end
    of the script it answers ``final`` (``"(end of script)"`` unless given).

    Example::

        ScriptedModel([
            calls(("lookup_order", {"order_id": "A1"})),
            calls(("refund_card", {"order_id": "A1", "amount": 20.0})),
            answer("Refunded."),
        ])
    """

    def __init__(
        self,
        turns: Iterable[Turn],
        *,
        final: str = "(end of script)",
        id_prefix: str = "call-",
    ) -> None:
        self.turns: tuple[Turn, ...] = tuple(turns)
        for i, turn in enumerate(self.turns):
            if not (isinstance(turn, ScriptedTurn | ModelResponse) or callable(turn)):
                raise ConfigurationError(
                    f"turn {i} of the script is {turn!r}; a turn is calls(...), answer(...), "
                    "a ModelResponse, or a function of the request returning one"
                )
        self.final = final
        self.id_prefix = id_prefix

    async def complete(self, request: ModelRequest, tools: Sequence[Tool]) -> ModelResponse:
        index = turn_index(request)
        if index >= len(self.turns):
            return ModelResponse(content=self.final)
        turn = self.turns[index]
        played = turn if isinstance(turn, ScriptedTurn | ModelResponse) else turn(request)
        if isinstance(played, ModelResponse):
            return played
        if not isinstance(played, ScriptedTurn):
            raise refused(
                f"scripted turn {index} returned {type(played).__name__}; "
                "a turn function must return calls(...), answer(...) or a ModelResponse"
            )
        return ModelResponse(
            content=played.content,
            tool_calls=tuple(
                ToolCall(id=f"{self.id_prefix}{index}-{i}", name=name, arguments=arguments)
                for i, (name, arguments) in enumerate(played.tool_calls)
            ),
        )


class ScriptedModels(Model):
    """Many scripts under one provider: ``"scripted:refund-demo"`` plays the script named
    ``refund-demo``.

    Example::

        DuraguardPlugin(models={"scripted": ScriptedModels({"refund-demo": [answer("hi")]})})
    """

    def __init__(self, scripts: Mapping[str, ScriptedModel | Iterable[Turn]] | None = None) -> None:
        self.scripts: dict[str, ScriptedModel] = {}
        for name, script in (scripts or {}).items():
            self.register(name, script)

    def register(self, name: str, script: ScriptedModel | Iterable[Turn]) -> ScriptedModel:
        """Add (or replace) the script called ``name``; returns it as a :class:`ScriptedModel`."""
        if not name:
            raise ConfigurationError("a script needs a non-empty name (the part after 'scripted:')")
        model = script if isinstance(script, ScriptedModel) else ScriptedModel(script)
        self.scripts[name] = model
        return model

    async def complete(self, request: ModelRequest, tools: Sequence[Tool]) -> ModelResponse:
        name = model_name(request)
        script = self.scripts.get(name)
        if script is None:
            known = ", ".join(sorted(self.scripts)) or "none"
            raise refused(
                f"no script named {name!r} for model {request.model!r}; known: {known}. "
                "Register it with ScriptedModels.register(name, turns) on the worker"
            )
        return await script.complete(request, tools)


__all__ = [
    "MODEL_REQUEST_REFUSED",
    "MODEL_UNAVAILABLE",
    "Model",
    "OpenAIChat",
    "ScriptedModel",
    "ScriptedModels",
    "ScriptedTurn",
    "Turn",
    "answer",
    "calls",
    "last_tool_results",
    "model_name",
    "parse_completion",
    "split_model",
    "turn_index",
]
