"""Model providers, worker side: the port, a scripted model, and an OpenAI-compatible client.

Workflow code names a model as ``provider:model`` (``"openai:gpt-4.1"``, ``"scripted:refund"``).
The plugin looks the provider up by name among the ``models`` it was given and passes it the
whole :class:`~duraguard._wire.ModelRequest`, so the provider reads the part after the colon
itself (:func:`model_name`). Providers run inside the ``duraguard.model`` activity, which Temporal
may retry: a provider raises on a transient failure and lets Temporal own the retry.

This module imports nothing from Temporal's workflow side; the only Temporal import is
``ApplicationError``, which marks a failure retrying cannot fix.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import os
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeAlias

from temporalio.exceptions import ApplicationError

from ._wire import Message, ModelRequest, ModelResponse, ToolCall
from .errors import ConfigurationError, ModelRequestRefused, ModelUnavailable
from .tools import Tool

MODEL_UNAVAILABLE = ModelUnavailable.type_name
"""Error type of a transient provider failure (Temporal retries it)."""
MODEL_REQUEST_REFUSED = ModelRequestRefused.type_name
"""Error type of a failure retrying cannot fix: a bad key, a bad request, an unknown script."""


def split_model(model: str) -> tuple[str, str]:
    """Split ``"provider:model"`` into its provider and model name (the name may hold colons).

    A string without a colon is a provider with an empty model name.
    """
    provider, _, name = model.partition(":")
    return provider, name


def model_name(request: ModelRequest) -> str:
    """The part of ``request.model`` after the provider, e.g. ``gpt-4.1`` for ``openai:gpt-4.1``."""
    return split_model(request.model)[1]


def refused(message: str) -> ApplicationError:
    """A model failure Temporal must not retry: the message says what to fix."""
    return ModelRequestRefused(message)


class Model(ABC):
    """A model provider: reads the conversation and answers, proposes tool calls, or both."""

    @abstractmethod
    async def complete(self, request: ModelRequest, tools: Sequence[Tool]) -> ModelResponse:
        """Answer ``request``.

        Args:
            request: The whole request; ``request.model`` is ``provider:model`` and the provider
                reads its own model name from it with :func:`model_name`.
            tools: The worker's :class:`Tool` objects for the names in ``request.tools``, in the
                same order, so the provider can describe them to the model.

        Raises:
            ApplicationError: ``non_retryable=True`` when retrying cannot help (a bad key, a
                request the provider refuses); anything else is treated as transient.
        """


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


def turn_index(request: ModelRequest) -> int:
    """Which turn this is: the number of assistant messages already in the conversation."""
    return sum(1 for m in request.messages if m.role == "assistant")


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


# --- OpenAI-compatible chat completions -------------------------------------------------------

_RETRYABLE_STATUS = frozenset({408, 409, 429})


class OpenAIChat(Model):
    """An OpenAI-compatible ``/chat/completions`` provider with tool calling (stdlib HTTP only).

    The model name comes from the request (``openai:gpt-4.1`` asks for ``gpt-4.1``), else from
    ``model``. The API key is read from the environment variable ``api_key_env`` at call time,
    on the worker; it is never logged nor put in an error. ``api_key_env=None`` sends no key
    (for local servers that need none).

    Failures: HTTP 408, 409, 429, 5xx, timeouts and connection errors raise a retryable
    ``ApplicationError`` (type ``duraguard.ModelUnavailable``; a ``Retry-After`` header sets the
    next retry delay). Any other 4xx, a missing key or a reply that is not a chat completion
    raises a non-retryable one (type ``duraguard.ModelRequestRefused``).

    Arguments the model wrote that are not valid JSON come back as the raw string in
    ``ToolCall.arguments``, so the guardrails refuse the call and the model reads why.
    """

    def __init__(
        self,
        *,
        base_url: str = "https://api.openai.com/v1",
        model: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"OpenAIChat base_url {base_url!r} must start with http:// or https://, "
                "e.g. https://api.openai.com/v1"
            )
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
            raise ConfigurationError(
                f"OpenAIChat timeout must be a positive number of seconds, got {timeout!r}"
            )
        if api_key_env is not None and not api_key_env:
            raise ConfigurationError(
                "OpenAIChat api_key_env must name an environment variable, or be None"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self.headers = dict(headers or {})

    def __repr__(self) -> str:
        return (
            f"OpenAIChat(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r})"
        )

    async def complete(self, request: ModelRequest, tools: Sequence[Tool]) -> ModelResponse:
        body = self.build_body(request, tools)
        key = self._api_key()
        reply = await asyncio.to_thread(self._post, body, key)
        return parse_completion(reply, turn=turn_index(request))

    def build_body(self, request: ModelRequest, tools: Sequence[Tool]) -> dict[str, Any]:
        """The JSON body of the chat-completions request for ``request``."""
        name = model_name(request) or self.model
        if not name:
            raise refused(
                f"model {request.model!r} names no model and OpenAIChat has no default; "
                "write 'provider:model' (e.g. 'openai:gpt-4.1') or pass OpenAIChat(model=...)"
            )
        body: dict[str, Any] = {
            "model": name,
            "messages": [to_openai_message(m) for m in request.messages],
        }
        if tools:
            body["tools"] = [to_openai_tool(t) for t in tools]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.extra_body)
        return body

    def _api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise refused(
                f"OpenAIChat: the environment variable {self.api_key_env} is not set on this "
                f"worker; export {self.api_key_env}=<your key> before starting the worker, or pass "
                "OpenAIChat(api_key_env=None) for a server that needs no key"
            )
        return key

    def _post(self, body: dict[str, Any], key: str | None) -> Any:
        url = f"{self.base_url}/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "application/json", **self.headers}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(
            url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise self._http_error(e, key) from None
        except (OSError, http.client.HTTPException) as e:  # refused, reset, timeout, DNS, cut short
            reason = getattr(e, "reason", e)
            raise ModelUnavailable(
                f"model provider at {self.base_url} unreachable: {_redact(str(reason), key)}",
            ) from None
        try:
            return json.loads(raw)
        except ValueError:
            raise refused(
                f"model provider at {url} replied with something that is not JSON "
                f"({_snippet(raw, key)!r}); check base_url points at an OpenAI-compatible API "
                "(it usually ends in /v1)"
            ) from None

    def _http_error(self, e: urllib.error.HTTPError, key: str | None) -> ApplicationError:
        status = e.code
        try:
            detail = _error_detail(e.read(), key)
        except OSError:
            detail = ""
        where = f"model provider at {self.base_url} answered HTTP {status}"
        if status in _RETRYABLE_STATUS or status >= 500:
            return ModelUnavailable(
                f"{where} (transient, will retry): {detail}",
                next_retry_delay=_retry_after(e.headers.get("Retry-After") if e.headers else None),
            )
        if status in (401, 403):
            fix = f"check the key in ${self.api_key_env} and that it may use this model"
        elif status == 404:
            fix = "check base_url and the model name"
        else:
            fix = "the provider refused this request; fix the request (model, messages or tools)"
        return refused(f"{where}: {detail}; {fix}")


def to_openai_message(message: Message) -> dict[str, Any]:
    """One of our messages as an OpenAI chat message."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments_json(call.arguments)},
            }
            for call in message.tool_calls
        ]
    elif message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        out["content"] = message.content if message.content is not None else ""
    elif message.role in ("system", "user"):
        if message.content is None:
            out["content"] = ""
        if message.name:
            out["name"] = message.name
    return out


def to_openai_tool(tool: Tool) -> dict[str, Any]:
    """A tool as OpenAI's ``{"type": "function", "function": {...}}`` entry."""
    return {"type": "function", "function": tool.describe()}


def parse_arguments(raw: Any) -> Any:
    """The model's arguments: parsed JSON, ``{}`` for an empty string, else the raw string."""
    if not isinstance(raw, str):
        return raw if raw is not None else {}
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # left for the guardrails to refuse, so the model reads why


def parse_completion(reply: Any, *, turn: int = 0) -> ModelResponse:
    """Our :class:`ModelResponse` from an OpenAI chat-completions reply.

    A tool call without an id (some compatible servers omit it) gets ``call-{turn}-{i}``.

    Raises:
        ApplicationError: non-retryable, when the reply has no ``choices[0].message``.
    """
    try:
        message = reply["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError
    except (KeyError, IndexError, TypeError):
        raise refused(
            f"model reply is not a chat completion (no choices[0].message): {str(reply)[:200]!r}"
        ) from None
    tool_calls: list[ToolCall] = []
    for i, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") or {}
        tool_calls.append(
            ToolCall(
                id=str(call.get("id") or f"call-{turn}-{i}"),
                name=str(function.get("name") or ""),
                arguments=parse_arguments(function.get("arguments")),
            )
        )
    usage = reply.get("usage") if isinstance(reply, dict) else None
    return ModelResponse(
        content=message.get("content") if isinstance(message.get("content"), str) else None,
        tool_calls=tuple(tool_calls),
        usage={
            k: v for k, v in (usage or {}).items() if isinstance(v, int) and not isinstance(v, bool)
        },
    )


def _arguments_json(arguments: Any) -> str:
    # A malformed string the model wrote goes back as it was, so the model sees its own words.
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _redact(text: str, key: str | None) -> str:
    return text.replace(key, "[redacted]") if key else text


def _snippet(raw: bytes, key: str | None, limit: int = 300) -> str:
    return _redact(raw[:limit].decode("utf-8", "replace"), key)


def _error_detail(raw: bytes, key: str | None) -> str:
    """The provider's own error message when it sent one (``{"error": {"message": ...}}``)."""
    try:
        error = json.loads(raw).get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message:
            return _redact(message[:500], key)
    except (ValueError, AttributeError):
        pass
    return _snippet(raw, key) or "(no body)"


def _retry_after(value: str | None) -> timedelta | None:
    """``Retry-After`` in seconds, when it is a number (the date form is left to Temporal)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return (
        timedelta(seconds=min(seconds, 300.0)) if math.isfinite(seconds) and seconds > 0 else None
    )


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
