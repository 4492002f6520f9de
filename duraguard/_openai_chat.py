"""An OpenAI-compatible chat model provider (worker side), over the standard library's HTTP.

Transient failures (unreachable, 408/409/429/5xx) raise :class:`ModelUnavailable`, which
Temporal retries (honouring ``Retry-After``); others raise :class:`ModelRequestRefused`, which
it does not. The API key is read from the environment on the worker and never logged.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import os
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio.exceptions import ApplicationError

from ._provider import Model, model_name, refused, turn_index
from ._wire import Message, ModelRequest, ModelResponse, ToolCall
from .errors import ConfigurationError, ModelUnavailable
from .tools import Tool

_RETRYABLE_STATUS = frozenset({408, 409, 429})


class OpenAIChat(Model):
    """An OpenAI-compatible ``/chat/completions`` provider with tool calling (stdlib HTTP only).

    The model name comes from the request (``openai:gpt-4.1`` asks for ``gpt-4.1``), else from
    ``model``. ``base_url`` defaults to ``$OPENAI_BASE_URL`` (as the OpenAI SDK reads it), else
    ``https://api.openai.com/v1``: point it at any OpenAI-compatible server (a local one, a
    proxy) without changing code. The API key is read from the environment variable ``api_key_env`` at call time,
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
        base_url: str | None = None,
        model: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
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
