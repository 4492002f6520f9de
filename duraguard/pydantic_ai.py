"""Guard a Pydantic AI agent running on Temporal: its tool calls, prompt and final output.

Pydantic AI makes an agent durable with the ``TemporalDurability`` capability: the agent graph
runs in workflow code, each model request and each tool call is an activity. :class:`Guarded`
is a capability beside it whose hooks run in workflow code and call the guard core's seams, so
each verdict is a recorded step that replay reads back::

    agent = Agent(model, capabilities=[TemporalDurability(), Guarded(guardrails=[policy()])])
    run = await duraguard.pydantic_ai.run(agent, "Refund order A-7")   # in the workflow

* each tool call is judged before it runs: ``deny`` raises ``ModelRetry`` with the refusal,
  which the model reads and may correct (once the tool's retries are spent, the refusal is the
  tool's result instead, so a refusal never fails the run); ``mask`` and ``rewrite`` change
  the arguments the tool receives; ``approve`` parks durably for a signed yes bound to the call;
  its result is judged before the model reads it;
* the person's prompt is judged before the first model request (a mask replaces it in the
  conversation, so no model ever reads the original);
* the final output is judged after it is processed: ``deny`` asks the model for another answer
  (``ModelRetry``) while the output retries last, ``mask`` replaces it;
* a ``halt`` ends the run: :func:`run` returns stop reason ``guardrail`` naming the guardrail.
  Should :class:`RunStopped` escape (``agent.run`` called directly), it fails the
  workflow (a registered, non-retryable failure type); it never retries the workflow task.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

try:
    from pydantic_ai import ModelRetry, SkipToolExecution
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelRequest, UserPromptPart
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "duraguard.pydantic_ai needs Pydantic AI: pip install 'duraguard[pydantic-ai]'"
    ) from err

from pydantic import TypeAdapter, ValidationError

from ._adapter import AgentGuard, GuardedRun, RunStopped, changed, stopped_in
from .errors import ConfigurationError
from .guardrail import GuardrailLike
from .workflow import CallOptions

__all__ = ["Guarded", "GuardedRun", "RunStopped", "run"]


@dataclass(init=False)
class Guarded(AbstractCapability[Any]):
    """Guardrails for every tool call, the prompt and the final output of a Pydantic AI agent.

    Args:
        guardrails: The guardrails, in order, at every placement each declares.
        options: Approval timeout and budget, check mode (:class:`duraguard.CallOptions`);
            ``agent`` defaults to the agent's name (admission rules know it by that).
    """

    guardrails: tuple[GuardrailLike, ...]
    options: CallOptions | None = None
    _guard: AgentGuard | None = field(default=None, repr=False)
    _from: int | None = field(default=None, repr=False)
    """Where the messages not yet judged start (per run: :meth:`for_run`)."""

    def __init__(
        self, *, guardrails: Sequence[GuardrailLike], options: CallOptions | None = None
    ) -> None:
        self.guardrails = tuple(guardrails)
        self.options = options
        # Built now, so a bad guardrail is refused when the agent is built, not in a workflow.
        self._guard = AgentGuard.of(self.guardrails, options, None)
        self._from = None

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built in code (its guardrails are specs), not from an agent spec file

    def for_agent(self, agent: Any) -> Guarded:
        bound = Guarded(guardrails=self.guardrails, options=self.options)
        bound._guard = AgentGuard.of(self.guardrails, self.options, getattr(agent, "name", None))
        return bound

    async def for_run(self, ctx: Any) -> Guarded:
        """A fresh instance per run: where the messages it has not judged yet start."""
        fresh = Guarded(guardrails=self.guardrails, options=self.options)
        fresh._guard = self._guard
        return fresh

    @property
    def guard(self) -> AgentGuard:
        if self._guard is None:  # pragma: no cover - set by __init__
            raise ConfigurationError("Guarded was not built")
        return self._guard

    # -- the prompt, and a halted session, before each model request ------------------------
    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        g = self.guard
        g.stop_if_halted()
        messages = ctx.messages
        if self._from is None:
            # This run's own messages start at its first request; what came before it (the
            # message history it was given) was judged, if at all, by the run that made it.
            starts = [i for i, m in enumerate(messages) if isinstance(m, ModelRequest)]
            self._from = starts[-1] if starts else len(messages)
        changes: dict[int, ModelRequest] = {}
        for i in range(self._from, len(messages)):
            message = messages[i]
            if isinstance(message, ModelRequest):
                parts = [
                    await _judged_prompt(g, p) if isinstance(p, UserPromptPart) else p
                    for p in message.parts
                ]
                if parts != list(message.parts):
                    changes[i] = replace(message, parts=parts)
        self._from = len(messages)
        if changes:
            # Persistent history and this request both: no model ever reads the original.
            swap = {id(ctx.messages[i]): m for i, m in changes.items()}
            ctx.messages[:] = [changes.get(i, m) for i, m in enumerate(ctx.messages)]
            request_context.messages = [swap.get(id(m), m) for m in request_context.messages]
        return request_context

    # -- each tool call -----------------------------------------------------------------
    async def wrap_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        outcome, result = await self.guard.call(call.tool_name, dict(args), handler)
        if outcome.ran:  # what the model reads: the result, or its masked form or refusal
            return outcome.result if changed(outcome, result) else result
        if not outcome.halted:
            # A refusal the model reads and may correct, while the tool's retries last; after
            # that the refusal is the call's result (a spent retry would fail the whole run).
            if ctx.retries.get(call.tool_name, 0) < (getattr(ctx, "max_retries", 0) or 0):
                raise ModelRetry(json.dumps(outcome.result, ensure_ascii=False))
        raise SkipToolExecution(outcome.result)

    # -- the final output -----------------------------------------------------------------
    async def wrap_output_process(
        self, ctx: Any, *, output_context: Any, output: Any, handler: Any
    ) -> Any:
        """An output function is a tool the model calls last, with arguments it chose: judged
        as a call before it runs (the SDK's tool hooks skip output tools), like any tool."""
        if getattr(ctx, "partial_output", False) or not getattr(
            output_context, "has_function", False
        ):
            return await handler(output)
        name = getattr(output_context, "function_name", None) or "output_function"

        async def run(allowed: dict[str, Any]) -> Any:
            return await handler(_from_arguments(output, allowed))

        outcome, result = await self.guard.call(name, _as_arguments(output), run)
        if outcome.ran:
            return result if not changed(outcome, result) else _as(type(result), outcome.result)
        self.guard.stop_if_halted()
        if ctx.retry < ctx.max_retries:
            raise ModelRetry(json.dumps(outcome.result, ensure_ascii=False))
        why = outcome.refusal.reason if outcome.refusal is not None else "refused"
        raise RunStopped(
            f"the output function {name!r} was refused: {why}", stop_reason="no-answer", by=None
        )

    async def after_output_process(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
        if getattr(ctx, "partial_output", False):
            return output
        try:
            pr = await self.guard.answer(output)
        except RunStopped as stop:
            if stop.stop_reason == "no-answer" and ctx.retry < ctx.max_retries:
                raise ModelRetry(f"Your answer was not accepted: {stop.note}") from None
            raise
        if not pr.replaced:
            return output
        return _as(type(output), pr.value)

    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        result = await handler()
        # A halt on the run's last tool calls: no model request came after it to stop at.
        self.guard.stop_if_halted()
        return result


async def _judged_prompt(g: AgentGuard, part: UserPromptPart) -> UserPromptPart:
    """The prompt part as the model may read it. Text is judged; of multimodal content, the
    text items are (images and files go as they are)."""
    if isinstance(part.content, str):
        used = await g.prompt(part.content)
        return part if used == part.content else replace(part, content=used)
    items = list(part.content)
    texts = [i for i, c in enumerate(items) if isinstance(c, str)]
    if not texts:
        return part
    used = await g.prompt([items[i] for i in texts])
    if not isinstance(used, list) or len(used) != len(texts):
        raise ConfigurationError(
            "a guardrail replaced the prompt's text items with something of another shape; a "
            "mask or rewrite of a list must give back a list of the same length"
        )
    for i, text in zip(texts, used, strict=True):
        items[i] = text
    return replace(part, content=items)


def _as_arguments(output: Any) -> dict[str, Any]:
    """An output function's input as the arguments of a call: a dict, a model's fields, or the
    single value under ``value``."""
    if isinstance(output, dict):
        return dict(output)
    dump = getattr(output, "model_dump", None)
    if callable(dump):
        return dict(dump(mode="json"))
    return {"value": output}


def _from_arguments(output: Any, allowed: dict[str, Any]) -> Any:
    """The arguments a guardrail allowed (maybe masked), back in ``output``'s own shape."""
    if isinstance(output, dict):
        return allowed
    if callable(getattr(output, "model_dump", None)):
        return _as(type(output), allowed)
    return _as(type(output), allowed.get("value"))


def _as(kind: type, value: Any) -> Any:
    """A replaced output back in the output's own type, where it fits; else as replaced."""
    if isinstance(value, kind):
        return value
    try:
        return TypeAdapter(kind).validate_python(value)
    except (ValidationError, TypeError):
        return value


def _guard_of(agent: Any) -> AgentGuard:
    found: list[Guarded] = []
    root = getattr(agent, "root_capability", None)
    if root is not None:
        root.apply(lambda c: found.append(c) if isinstance(c, Guarded) else None)
    if not found:
        raise ConfigurationError(
            f"agent {getattr(agent, 'name', agent)!r} has no Guarded capability; build it with "
            "capabilities=[TemporalDurability(), duraguard.pydantic_ai.Guarded(guardrails=[...])]"
        )
    return found[0].guard


async def run(agent: Any, prompt: Any = None, **kwargs: Any) -> GuardedRun[Any]:
    """Run a guarded agent (workflow code): ``agent.run`` with how it ended as a value.

    Keyword arguments go to ``agent.run`` (``deps``, ``usage_limits``, ``message_history``...).

    Returns:
        A :class:`GuardedRun`: ``stop_reason`` ``done`` with the final ``output`` (masked where
        a guardrail masked it) and Pydantic AI's ``result``; ``guardrail`` with ``halted_by`` (a
        halt, or a refused prompt); ``no-answer`` (every answer was refused).
    """
    g = _guard_of(agent)
    try:
        result = await agent.run(prompt, **kwargs)
    except Exception as err:
        stop = stopped_in(err)
        if stop is None:
            raise
        return g.ended(stop)
    return g.finished(result.output, result)
