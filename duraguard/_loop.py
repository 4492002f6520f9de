"""``agent_loop``: model turns and tool calls until the model answers, every call checked first.

The loop is one user of the guard core's seams (:mod:`duraguard._call`, :mod:`duraguard._check`):
it judges the prompt, each model answer, each turn's tool calls (one recorded pass per turn,
parking on a person where asked) and the final answer (validation corrections, bounded).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

from ._call import (
    DEFAULT_APPROVAL_TIMEOUT,
    CallGate,
    CallOptions,
    CallOutcome,
    before_calls,
    refuse_early,
    run_tool,
)
from ._check import judge
from ._pass import recorded_pass
from ._session import GuardSession
from ._session import session as current
from ._types import Subject, canonical_json
from ._wire import MODEL_ACTIVITY, AgentResult, Message, ModelRequest, ModelResponse, ToolCall
from .errors import ConfigurationError
from .guardrail import GuardrailLike, GuardrailSpec, to_specs


class _Run:
    """One loop's state: its session, options, guardrails and conversation."""

    def __init__(
        self, session: GuardSession, name: str, specs: tuple[GuardrailSpec, ...], opts: CallOptions
    ) -> None:
        self.s = session
        self.name = name
        self.specs = specs
        self.opts = opts
        self.messages: list[Message] = []

    def done(self, stop: str, *, answer: Any = None, note: str | None = None) -> AgentResult:
        self.s.visibility.publish()
        return AgentResult(
            stop_reason=stop,  # type: ignore[arg-type]
            answer=answer,
            halted_by=self.s.halted_by,
            iterations=self.s.counts.turn,
            messages=tuple(self.messages),
            verdicts=tuple(self.s.rows),
            note=note,
        )

    def subject(self, placement: Any, value: Any, **kw: Any) -> Subject:
        return Subject(placement=placement, value=value, context=self.s.context(self.name), **kw)

    def say(self, role: Any, content: str | None, **kw: Any) -> None:
        self.messages.append(Message(role=role, content=content, **kw))


async def agent_loop(
    name: str,
    *,
    prompt: str,
    model: str,
    tools: Sequence[str] = (),
    guardrails: Sequence[GuardrailLike] = (),
    max_iterations: int = 10,
    system: str | None = None,
    approval_timeout: timedelta = DEFAULT_APPROVAL_TIMEOUT,
    approval_budget: int | None = None,
    max_corrections: int = 2,
    tool_timeout: timedelta = timedelta(seconds=60),
    tool_attempts: int = 3,
    model_timeout: timedelta = timedelta(seconds=120),
    check_mode: str | None = None,
    session: GuardSession | None = None,
) -> AgentResult:
    """Run model turns and tool calls until the model answers, every call checked first.

    Args:
        name: The agent's name: admission guardrails and audit rows know it by this.
        prompt: The person's request (the first turn).
        model: ``provider:model``; the provider is registered on the worker.
        tools: Names of the tools offered to the model.
        guardrails: Specs to apply at every placement they declare.
        max_iterations: Model turns at most; past it the loop stops with ``max-iterations``.
        approval_timeout: How long a parked call waits for a person before it expires.
        approval_budget: How many asks this run may make; one more ends it (``approval-budget``).
        max_corrections: How many times a refused final answer goes back to the model.
        check_mode: ``local`` / ``activity`` / ``auto`` for the guardrail passes.
        session: The run's guard session (default: :func:`duraguard.session`).

    Returns:
        An :class:`AgentResult`: ``stop_reason`` (``done``, ``max-iterations``, ``guardrail``,
        ``approval-budget``, ``bail``, ``no-answer``), ``halted_by``, the messages, every verdict.
    """
    if max_iterations < 1:
        raise ConfigurationError(f"max_iterations must be at least 1; got {max_iterations}")
    if not isinstance(prompt, str) or not prompt:
        raise ConfigurationError("agent_loop needs a non-empty prompt")
    opts = CallOptions(
        tool_timeout=tool_timeout,
        tool_attempts=tool_attempts,
        approval_timeout=approval_timeout,
        approval_budget=approval_budget,
        agent=name,
        mode=check_mode,
    )
    run = _Run(session or current(), name, to_specs(guardrails), opts)
    if system:
        run.say("system", system)
    pre, _ = await judge(
        run.s, run.specs, run.subject("pre-prompt", prompt), purpose="pre-prompt",
        approval_timeout=approval_timeout, mode=check_mode,
    )  # fmt: skip
    if pre.tripped:
        # No model may read a refused prompt, and there is no one in the loop to correct it.
        run.s.halt(pre.verdict.by)
        why = f"the prompt was refused ({pre.verdict.action}) by {pre.verdict.by}"
        return run.done("guardrail", note=why)
    used = pre.use(prompt)
    run.s.ledger.add_turn(prompt)
    run.say("user", used if isinstance(used, str) else prompt)
    offered = await _offer(run, tuple(tools))
    corrections = 0
    while run.s.counts.turn < max_iterations:
        run.s.counts.turn += 1
        response: ModelResponse = await workflow.execute_activity(
            MODEL_ACTIVITY,
            ModelRequest(model=model, messages=tuple(run.messages), tools=offered, agent=name),
            result_type=ModelResponse,
            start_to_close_timeout=model_timeout,
            retry_policy=RetryPolicy(maximum_attempts=5),
            summary=f"model turn {run.s.counts.turn}",
        )
        content, stop = await _answer_text(run, response.content)
        if stop is not None:
            return stop
        if content is _WITHHELD:
            continue
        if not response.tool_calls:
            result, corrections = await _final(run, content, corrections, max_corrections)
            if result is not None:
                return result
            continue
        calls = response.tool_calls
        run.say("assistant", content, tool_calls=calls)
        outcomes, gates = await _dispatch(run, calls, offered)
        for call, o in zip(calls, outcomes, strict=True):
            run.say("tool", canonical_json(o.result), tool_call_id=call.id, name=call.name)
        halt = next((o for o in outcomes if o.halted), None)
        if halt is not None:
            run.s.halt(halt.verdict.by)
            return run.done("guardrail", note=halt.verdict.reason)
        if any(g.refusal is not None and g.refusal.kind == "budget" for g in gates):
            why = "the run asked for more approvals than its budget allows"
            return run.done("approval-budget", note=why)
        bailed = next((o for o in outcomes if o.bail), None)
        if bailed is not None:
            answer = bailed.result.get("answer") if isinstance(bailed.result, dict) else None
            return run.done("bail", answer=answer)
    return run.done("max-iterations")


_WITHHELD: Any = object()


async def _answer_text(run: _Run, content: str | None) -> tuple[Any, AgentResult | None]:
    """The model's answer text, judged before anything is done with it."""
    if not content:
        return content, None
    r, _ = await judge(
        run.s, run.specs, run.subject("post-model", content), purpose="post-model",
        approval_timeout=run.opts.approval_timeout, mode=run.opts.mode,
    )  # fmt: skip
    if r.verdict.action == "halt":
        run.s.halt(r.verdict.by)
        run.say("assistant", None)
        return content, run.done("guardrail", note=r.verdict.reason)
    if r.tripped:
        run.say("assistant", "[withheld by guardrail]")
        run.say(
            "user",
            f"Your previous answer was refused: {r.verdict.reason}. Answer again without it.",
        )
        return _WITHHELD, None
    used = r.use(content)
    return (used if isinstance(used, str) else content), None


async def _final(
    run: _Run, content: str | None, corrections: int, max_corrections: int
) -> tuple[AgentResult | None, int]:
    """A final answer: validation guardrails may send it back as a correction."""
    subject = run.subject("final-answer", content, session=run.s.answer_view())
    (r,) = await recorded_pass(
        run.s, run.specs, [subject], purpose="final-answer", mode=run.opts.mode
    )
    run.s.note_pass(r)
    v = r.verdict
    if v.action == "halt":
        run.s.halt(v.by)
        return run.done("guardrail", note=v.reason), corrections
    if r.tripped:
        run.say("assistant", content)
        if corrections >= max_corrections:
            why = f"every answer was refused by {v.by}: {v.reason}"
            return run.done("no-answer", note=why), corrections
        run.say(
            "user",
            f"Your answer was not accepted ({v.by}): {v.reason}. Correct it and answer again.",
        )
        return None, corrections + 1
    final = r.value if r.verdict.replaces else content
    run.say("assistant", final)
    return run.done("done", answer=final), corrections


async def _dispatch(
    run: _Run, calls: Sequence[ToolCall], offered: Sequence[str]
) -> tuple[list[CallOutcome], list[CallGate]]:
    """All calls of one model turn: one batched pass, then each run concurrently."""
    s = run.s
    ids = [s.next_call_id() for _ in calls]
    gates: dict[int, CallGate] = {}
    checkable: list[int] = []
    for i, (cid, call) in enumerate(zip(ids, calls, strict=True)):
        if call.name not in offered:
            listed = ", ".join(offered) or "none"
            why = f"there is no tool named {call.name!r}; the tools are: {listed}"
            gates[i] = refuse_early(
                s, cid, call.name, call.arguments, why, run.opts, check="duraguard.unknown-tool"
            )
        else:
            checkable.append(i)
    judged = await before_calls(
        s, [(calls[i].name, calls[i].arguments, ids[i]) for i in checkable], run.specs, run.opts
    )
    gates.update(zip(checkable, judged, strict=True))
    ordered = [gates[i] for i in range(len(calls))]

    async def settle(g: CallGate) -> CallOutcome:
        return await run_tool(s, g, run.specs, run.opts) if g.runs else g.outcome()

    outcomes = await asyncio.gather(*(settle(g) for g in ordered))
    return list(outcomes), ordered


async def _offer(run: _Run, tools: tuple[str, ...]) -> tuple[str, ...]:
    """Admission at offer time: a tool this agent may not reach is never offered; the model is
    told why."""
    s = run.s
    if not tools or not (s.config.admission or any(g.applies_to("admission") for g in run.specs)):
        return tools
    subjects = [run.subject("admission", {"tool": t}, tool=t, call_id=f"offer-{t}") for t in tools]
    results = await recorded_pass(s, run.specs, subjects, purpose="admission", mode=run.opts.mode)
    kept: list[str] = []
    refused: list[str] = []
    for t, r in zip(tools, results, strict=True):
        if r.tripped:
            s.note_pass(r)
            refused.append(f"- {t}: {r.verdict.reason or 'not admitted'}")
        else:
            kept.append(t)
    if refused:
        run.say("system", "These tools are not available to you:\n" + "\n".join(refused))
    return tuple(kept)
