"""``agent_loop``: model turns and tool calls until the model answers, every call checked first.

The loop is one user of the guard core's seams (:mod:`duraguard._call`, :mod:`duraguard._ask`):
it judges the prompt, each model answer, each turn's tool calls (one recorded pass per turn,
parking on a person where asked) and the final answer (validation corrections, bounded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio import workflow

from ._answering import WITHHELD, answer_and_final, answer_text, final_answer, too_long
from ._ask import judge
from ._bounds import MAX_CALLS_PER_TURN
from ._call import (
    DEFAULT_APPROVAL_TIMEOUT,
    CallGate,
    CallOptions,
    CallOutcome,
    Prejudged,
    ProposedCall,
    refuse_early,
    run_calls,
)
from ._carry import carry_over
from ._carry import resume as resume_session
from ._model_turn import (
    answer_check,
    answered,
    fits,
    model_step,
    one_answer_step,
    prompt_taken,
    refused_prompt,
    step_check,
)
from ._pass import recorded_pass
from ._run import MAX_CARRIED_PENDING_BYTES, Prompt, Run, size
from ._session import GuardSession
from ._session import session as current
from ._types import PassResult, canonical_json, subject_digest
from ._wire import (
    AgentResult,
    AnswerCheck,
    LoopState,
    ModelResponse,
    ToolCall,
)
from .errors import ConfigurationError, GuardrailFailed
from .guardrail import GuardrailLike, to_specs


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
    resume: LoopState | None = None,
    continue_as_new: Callable[[LoopState], Any] | None = None,
    max_history_events: int | None = None,
) -> AgentResult:
    """Run model turns and tool calls until the model answers, every call checked first.

    Args:
        name: The agent's name: admission guardrails and audit rows know it by this.
        prompt: The person's request (the first turn).
        model: ``provider:model``; the provider is registered on the worker.
        tools: Names of the tools offered to the model.
        guardrails: Specs to apply at every placement they declare.
        max_iterations: Model turns at most (over every run of a continued loop).
        approval_timeout: How long a parked call waits for a person before it expires.
        approval_budget: How many asks this run may make; one more ends it (``approval-budget``).
        max_corrections: How many times a refused final answer goes back to the model.
        check_mode: ``local`` / ``activity`` / ``auto`` for the guardrail passes.
        session: The run's guard session (default: :func:`duraguard.session`).
        resume: The state a previous run handed on (your workflow's input carries it).
        continue_as_new: Given, the loop continues-as-new between turns when the server
            suggests it (or past ``max_history_events``): it seals the session, keeps the
            conversation where it is, and continues with ``continue_as_new(state)`` as the
            workflow's new input, e.g. ``lambda s: ticket.model_copy(update={"loop": s})``.
            Needs a conversation store and a session key on the workers.

    Returns:
        An :class:`AgentResult`: ``stop_reason`` (``done``, ``max-iterations``, ``guardrail``,
        ``approval-budget``, ``bail``, ``no-answer``), ``halted_by``, the latest messages,
        every verdict of this run.
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
    run = Run(session or current(), name, to_specs(guardrails), opts)
    if resume is not None:
        await resume_session(resume.sealed, session=run.s)
        run.resume(resume)
    else:
        refused = await _start(run, prompt, system, tuple(tools))
        if refused is not None:
            return refused
    if run.s.keeps_results():
        run.opts = replace(run.opts, keep=True)
    while run.s.counts.turn < max_iterations:
        if continue_as_new is not None and _continue_due(run, max_history_events):
            sealed = await carry_over(session=run.s)
            workflow.continue_as_new(continue_as_new(run.state(sealed)))
        run.s.counts.turn += 1
        ended = await _turn(run, model, model_timeout, max_corrections)
        if ended is not None:
            return ended
    return run.done("max-iterations")


async def _start(
    run: Run, prompt: str, system: str | None, tools: tuple[str, ...]
) -> AgentResult | None:
    """The prompt judged before any model reads it (by the first model step itself, where it
    can); the tools an agent may be offered."""
    if system:
        run.say("system", system)
    # (The prompt is in the run's own input, written by whoever started the run: the first
    # model step is sent it as given, and the model reads it as judged.)
    check = step_check(run, run.prompt_specs)
    if check is not None and fits(run, prompt):
        run.say("user", prompt)
        run.prompt = Prompt(prompt, run.messages[-1], check)
        run.offered = await _offer(run, tools)
        return None
    pre, _ = await judge(
        run.s, run.specs, run.subject("pre-prompt", prompt), purpose="pre-prompt",
        approval_timeout=run.opts.approval_timeout, mode=run.opts.mode,
    )  # fmt: skip
    if pre.tripped:
        return refused_prompt(run, pre)
    used = pre.use(prompt)
    run.s.ledger.add_turn(prompt)
    run.say("user", used if isinstance(used, str) else prompt)
    run.offered = await _offer(run, tools)
    return None


def _continue_due(run: Run, max_events: int | None) -> bool:
    """Whether to continue-as-new before the next turn (never with a call still waiting)."""
    info = workflow.info()
    due = info.is_continue_as_new_suggested() or (
        max_events is not None and info.get_current_history_length() >= max_events
    )
    if not due or run.s.asks.waiting() or run.prompt is not None:
        return False
    if run.s.config.conversations and size(run.pending) > MAX_CARRIED_PENDING_BYTES:
        return False  # the next model step stores them; the loop continues after it
    config = run.s.config
    if not (config.conversations and config.can_seal):
        if not run.warned:
            run.warned = True
            workflow.logger.warning(
                "duraguard: the agent loop would continue-as-new but the workers have no "
                "%s; it goes on in this run",
                "conversation store" if not config.conversations else "session key",
            )
        return False
    return True


async def _turn(
    run: Run, model: str, model_timeout: timedelta, max_corrections: int
) -> AgentResult | None:
    """One model turn and what follows from it; an AgentResult when the loop ends."""
    check = answer_check(run)
    response = await _respond(run, model, model_timeout, check)
    if isinstance(response, AgentResult):
        return response
    said: PassResult | None = None
    final: PassResult | None = None
    judged = answered(run, check, response)
    if response.content and not response.tool_calls and one_answer_step(run):
        said, final = judged or await answer_and_final(run, response.content)
    elif judged is not None:
        said, final = judged
    if response.content_dropped and not response.tool_calls:
        too_long(run, response.content_dropped)
        return None
    content, stop = await answer_text(run, response.content, said)
    if stop is not None or content is WITHHELD:
        return stop
    if not response.tool_calls:
        if said is None or said.verdict.action != "allow" or content != response.content:
            final = None  # the answer's own verdict changed it, or a person did: judge it anew
        result, run.corrections = await final_answer(
            run, content, run.corrections, max_corrections, final
        )
        return result
    calls = response.tool_calls
    run.say("assistant", content, tool_calls=calls)
    outcomes, gates = await _dispatch(run, calls, run.offered, _called(run, response))
    for call, o in zip(calls, outcomes, strict=True):
        text, by = canonical_json(o.result), o.call_id if o.kept else ""
        run.say("tool", text, tool_call_id=call.id, name=call.name, kept=by)
    if response.calls_dropped:
        n, kept = response.calls_dropped, len(calls)
        run.say(
            "user",
            f"Your last turn proposed {n + kept} tool calls; only the first {kept} were "
            f"considered, and the other {n} were not run. Propose at most {MAX_CALLS_PER_TURN} "
            "calls in one turn.",
        )
    return _ended_by(run, outcomes, gates)


async def _respond(
    run: Run, model: str, model_timeout: timedelta, check: AnswerCheck | None
) -> ModelResponse | AgentResult:
    """The turn's model step, the person's prompt judged in it where one waits (an
    AgentResult where the prompt ends the run)."""
    prompt, run.prompt = run.prompt, None
    response = await model_step(run, model, model_timeout, check, prompt)
    if prompt is None:
        return response
    taken = await prompt_taken(run, prompt, response)
    if isinstance(taken, AgentResult):
        return taken
    if taken is not None:
        # The model was not called (the prompt waited for a person, who said yes): now it
        # reads the prompt as judged, at the same step of the conversation (nothing of the
        # step that asked was stored).
        run.step -= 1
        run.pending = [taken if m is prompt.message else m for m in prompt.sent]
        response = await model_step(run, model, model_timeout, check, None)
    return response


def _ended_by(
    run: Run, outcomes: Sequence[CallOutcome], gates: Sequence[CallGate]
) -> AgentResult | None:
    """How a turn's calls end the loop: a halt, an approval budget spent, a tool that bails."""
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
    return None


def _called(run: Run, response: ModelResponse) -> list[PassResult | None]:
    """The model step's verdicts on its calls (:attr:`ModelResponse.called`), each bound to
    its call (a replacement is the call's arguments as recorded); ``None`` for a call it did
    not judge. A verdict that is not on its call (another version, a bug) stops the run."""
    called = response.called
    if not called:
        return [None] * len(response.tool_calls)
    if len(called) != len(response.tool_calls):
        raise GuardrailFailed(
            f"the model step of turn {run.s.counts.turn} judged {len(called)} calls of the "
            f"{len(response.tool_calls)} it proposed; the run stops here"
        )
    out: list[PassResult | None] = []
    for call, r in zip(response.tool_calls, called, strict=True):
        if r is None:
            out.append(None)
            continue
        bound = subject_digest("tool-args", call.name, canonical_json(call.arguments))
        if not r.replaced and r.subject_digest != bound:
            raise GuardrailFailed(
                f"the model step of turn {run.s.counts.turn} judged other arguments than those "
                f"of call {call.id!r} it recorded; the run stops here"
            )
        named: dict[str, Any] = {"placement": "tool-args", "tool": call.name, "call_id": call.id}
        if r.replaced:
            named["value"] = call.arguments  # recorded as judged: the replacement is them
        out.append(r.model_copy(update=named))
    return out


async def _dispatch(
    run: Run,
    calls: Sequence[ToolCall],
    offered: Sequence[str],
    called: Sequence[PassResult | None] = (),
) -> tuple[list[CallOutcome], list[CallGate]]:
    """All calls of one model turn: one batched pass, then each run concurrently (``called``:
    what the model step's guardrails made of each, where they judged it)."""
    s = run.s
    ids = [s.next_call_id() for _ in calls]
    gates: dict[int, CallGate] = {}
    checkable: list[int] = []
    for i, (cid, call) in enumerate(zip(ids, calls, strict=True)):
        if call.refused:
            # The model step left its arguments out (too deep or too large to carry).
            gates[i] = refuse_early(
                s, cid, call.name, call.arguments, call.refused, run.opts, check="duraguard.bounds"
            )
        elif call.name not in offered:
            listed = ", ".join(offered) or "none"
            why = f"there is no tool named {call.name!r}; the tools are: {listed}"
            gates[i] = refuse_early(
                s, cid, call.name, call.arguments, why, run.opts, check="duraguard.unknown-tool"
            )
        else:
            checkable.append(i)
    pre = None
    if any(r is not None for r in called):
        names = tuple(g.name for g in run.call_specs)
        pre = Prejudged(names, tuple(called[i] for i in checkable))
    done = await run_calls(
        s,
        [ProposedCall(calls[i].name, calls[i].arguments, ids[i]) for i in checkable],
        run.specs,
        run.opts,
        pre,
    )
    outcomes = {i: g.outcome() for i, g in gates.items()}
    for i, (gate, outcome) in zip(checkable, done, strict=True):
        gates[i], outcomes[i] = gate, outcome
    order = range(len(calls))
    return [outcomes[i] for i in order], [gates[i] for i in order]


async def _offer(run: Run, tools: tuple[str, ...]) -> tuple[str, ...]:
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
