"""Guard a Pydantic AI agent running on Temporal: its tool calls, approvals, prompt and output.

Pydantic AI makes an agent durable with the ``TemporalDurability`` capability: the agent graph
runs in workflow code, each model request and each tool call is an activity. :class:`Guarded`
is a capability beside it whose hooks run in workflow code and call the guard core's seams
(:mod:`duraguard._adapter`), so each verdict is a recorded step that replay reads back::

    agent = Agent(model, capabilities=[TemporalDurability(), Guarded(guardrails=[policy()])])
    run = await duraguard.pydantic_ai.run(agent, "Refund order A-7")   # in the workflow

* each tool call is judged before it runs: ``deny`` raises ``ModelRetry`` with the refusal,
  which the model reads and may correct (once the tool's retries are spent, the refusal is the
  tool's result instead, so a refusal never fails the run); ``mask`` and ``rewrite`` change
  the arguments the tool receives; ``approve`` parks durably for a signed yes bound to the call;
  its result is judged before the model reads it. The policy knows each tool from its
  definition (``ToolDefinition``: name, description, schema; marks in its ``metadata=
  {"duraguard": {...}}`` or ``Guarded(tools={...})``), as :mod:`duraguard._describe` says;
* a tool's ``requires_approval`` (or ``ApprovalRequired``) is answered by duraguard's signed,
  call-bound yes (``handle_deferred_tool_calls``): the call parks, ``pending``, the inbox and
  the audit see it, and a yes runs it (``ToolApproved``, answered by the approver), a no or an
  expiry is the refusal the model reads (``ToolDenied``). A call approved by anything else (a
  ``DeferredToolResults`` from an earlier run, another capability) still waits for a signed yes;
* the person's prompt is judged before the first model request (a mask replaces it in the
  conversation, so no model ever reads the original);
* the final output is judged after it is processed: ``deny`` asks the model for another answer
  (``ModelRetry``) while the output retries last, ``mask`` replaces it (in the output type);
* a ``halt`` ends the run: :func:`run` returns stop reason ``guardrail`` naming the guardrail.
  Should :class:`RunStopped` escape (``agent.run`` called directly), it fails the
  workflow (a registered, non-retryable failure type); it never retries the workflow task;
* an agent run inside a tool is judged where it can be and refused where it cannot: a guarded
  agent inside an activity, or a tool running an unguarded agent, fails the run before its
  first model request with a :class:`~duraguard.ConfigurationError` naming the fix (run the
  delegating tool in workflow code, ``metadata={"temporal": False}``, and guard the agent);
* an event stream (``event_stream_topic``, ``event_stream_handler``) is refused the same way
  where a guardrail judges the final answer or tool arguments: the model's tokens are streamed
  from inside its activity ahead of the verdict. Guardrails at the prompt and the tools'
  results only (judged before any event carries them) leave the stream as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

try:
    from pydantic_ai import ModelRetry, SkipToolExecution
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelRequest, UserPromptPart
    from pydantic_ai.tools import DeferredToolResults, ToolApproved, ToolDenied
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "duraguard.pydantic_ai needs Pydantic AI: pip install 'duraguard[pydantic-ai]'"
    ) from err

from . import _pydantic_parts as parts_
from ._adapter import (
    AgentGuard,
    GuardedRun,
    RunStopped,
    as_type,
    call_key,
    changed,
    for_model,
    stopped_in,
)
from ._delegation import streaming_refusal
from ._describe import described, marks_of
from .errors import ConfigurationError
from .guardrail import GuardrailLike
from .workflow import CallGate, CallOptions

__all__ = ["Guarded", "GuardedRun", "RunStopped", "run"]

FRAMEWORK = "pydantic-ai"
REQUIRES_APPROVAL = f"{FRAMEWORK}:requires_approval"


@dataclass(init=False)
class Guarded(AbstractCapability[Any]):
    """Guardrails for every tool call, approval, the prompt and the final output of an agent.

    Args:
        guardrails: The guardrails, in order, at every placement each declares.
        options: Approval timeout and budget, check mode (:class:`duraguard.CallOptions`);
            ``agent`` defaults to the agent's name (admission rules know it by that).
        tools: What the policy should know of a tool that its definition does not say, by
            name: ``kind``, ``labels`` (``[]``: trusted), ``destinations``, ``roles``,
            ``description`` (a tool's ``metadata={"duraguard": {...}}`` says the same, and
            wins). The worker's tool kinds file and catalogue still win over both.
    """

    guardrails: tuple[GuardrailLike, ...]
    options: CallOptions | None = None
    marks: dict[str, Any] = field(default_factory=dict)
    _guard: AgentGuard | None = field(default=None, repr=False)
    _from: int | None = field(default=None, repr=False)
    """Where the messages not yet judged start (per run: :meth:`for_run`)."""
    _approved: dict[tuple[str, str, str], CallGate] = field(default_factory=dict, repr=False)
    """Calls a person said yes to in :meth:`handle_deferred_tool_calls`, by call id, tool and
    the arguments they run with, for :meth:`wrap_tool_execute` to run (per run)."""

    def __init__(
        self,
        *,
        guardrails: Sequence[GuardrailLike],
        options: CallOptions | None = None,
        tools: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.guardrails = tuple(guardrails)
        self.options = options
        self.marks = marks_of(tools, "Guarded")
        # Built now, so a bad guardrail is refused when the agent is built, not in a workflow.
        self._guard = AgentGuard.of(self.guardrails, options, None, FRAMEWORK)
        self._from = None
        self._approved = {}

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built in code (its guardrails are specs), not from an agent spec file

    def _copy(self, guard: AgentGuard) -> Guarded:
        out = Guarded(guardrails=self.guardrails, options=self.options)
        out.marks = self.marks
        out._guard = guard
        return out

    def for_agent(self, agent: Any) -> Guarded:
        return self._copy(self.guard.named(getattr(agent, "name", None)))

    async def for_run(self, ctx: Any) -> Guarded:
        """A fresh instance per run (where the messages it has not judged yet start, the calls
        approved in it), after checking that the run can be judged at all."""
        g = self.guard
        g.require_workflow(parts_.IN_WORKFLOW)
        agent = getattr(ctx, "agent", None)
        if agent is not None:
            parts_.refuse_unjudged_streams(g, agent)
            parts_.refuse_unjudged_delegation(agent, Guarded)
        return self._copy(g)

    @property
    def guard(self) -> AgentGuard:
        if self._guard is None:  # pragma: no cover - set by __init__
            raise ConfigurationError("Guarded was not built")
        return self._guard

    # -- the tools, as the policy reads them ---------------------------------------------
    async def prepare_tools(self, ctx: Any, tool_defs: list[Any]) -> list[Any]:
        for d in tool_defs:
            self.guard.describe(_described(d, self.marks))
        return tool_defs

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
                    await parts_.judged_prompt(g, p) if isinstance(p, UserPromptPart) else p
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

    # -- a tool's own approval mark, answered by a person's signed yes ------------------------
    async def handle_deferred_tool_calls(self, ctx: Any, *, requests: Any) -> Any:
        """Each call that needs approval parks for duraguard's signed, call-bound yes; calls
        deferred for other reasons (external, questions) are not duraguard's to answer."""
        if not requests.approvals:
            return None
        out = DeferredToolResults()
        for call in requests.approvals:
            asked = call.args_as_dict()
            gate = await self.guard.gate(call.tool_name, asked, ask=REQUIRES_APPROVAL)
            cid = call.tool_call_id
            if gate.runs:
                self._approved[call_key(cid, call.tool_name, gate.args)] = gate
                changed_args = gate.args != asked
                out.approvals[cid] = ToolApproved(override_args=gate.args if changed_args else None)
            else:
                out.approvals[cid] = ToolDenied(for_model(gate.outcome()))
            if gate.approver:
                out.answered_by[cid] = gate.approver
        return out

    # -- each tool call -----------------------------------------------------------------
    async def wrap_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        g = self.guard
        g.describe(_described(tool_def, self.marks))
        name, given = call.tool_name, dict(args)
        gate = self._approved.pop(call_key(call.tool_call_id, name, given), None)
        if gate is not None:
            outcome, result = await g.settle(gate, handler)
        else:
            # Approved by anything but a person's signed yes here: it still needs one.
            ask = REQUIRES_APPROVAL if getattr(ctx, "tool_call_approved", False) else None
            outcome, result = await g.call(name, given, handler, ask=ask)
        if outcome.ran:  # what the model reads: the result, or its masked form or refusal
            return outcome.result if changed(outcome, result) else result
        if not outcome.halted:
            # A refusal the model reads and may correct, while the tool's retries last; after
            # that the refusal is the call's result (a spent retry would fail the whole run).
            if ctx.retries.get(name, 0) < (getattr(ctx, "max_retries", 0) or 0):
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
            return await handler(parts_.from_arguments(output, allowed))

        outcome, result = await self.guard.call(name, parts_.as_arguments(output), run)
        if outcome.ran:
            return result if not changed(outcome, result) else as_type(type(result), outcome.result)
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
        return as_type(type(output), pr.value)

    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        result = await handler()
        # A halt on the run's last tool calls: no model request came after it to stop at.
        self.guard.stop_if_halted()
        return result


def _described(d: Any, marks: Mapping[str, Any]) -> Any:
    """A ``ToolDefinition`` as the policy reads it: its metadata's marks win over ``tools=``."""
    return described(
        d.name, d.description or "", d.parameters_json_schema, getattr(d, "metadata", None), marks
    )


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

    Keyword arguments go to ``agent.run`` (``deps``, ``usage_limits``, ``message_history``...);
    an ``event_stream_handler`` is refused where a guardrail judges what it would see first.

    Returns:
        A :class:`GuardedRun`: ``stop_reason`` ``done`` with the final ``output`` (masked where
        a guardrail masked it) and Pydantic AI's ``result``; ``guardrail`` with ``halted_by`` (a
        halt, or a refused prompt); ``no-answer`` (every answer was refused).
    """
    g = _guard_of(agent)
    if kwargs.get("event_stream_handler") is not None:
        why = streaming_refusal(g.specs, "an event_stream_handler")
        if why is not None:
            raise ConfigurationError(f"{why}; run the agent without one")
    try:
        result = await agent.run(prompt, **kwargs)
    except Exception as err:
        stop = stopped_in(err)
        if stop is None:
            raise
        return g.ended(stop)
    return g.finished(result.output, result)
