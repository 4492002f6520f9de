"""``agent_loop``: model turns and tool calls until the model answers, every call checked first.

The loop is one user of the guard core's seams (:mod:`duraguard._call`, :mod:`duraguard._ask`):
it judges the prompt, each model answer, each turn's tool calls (one recorded pass per turn,
parking on a person where asked) and the final answer (validation corrections, bounded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

from . import _inline
from ._ask import judge
from ._bounds import MAX_ANSWER_BYTES, MAX_CALLS_PER_TURN
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
from ._pass import masking_prefix, recorded_pass
from ._session import GuardSession
from ._session import session as current
from ._types import PassResult, Subject, canonical_json, subject_digest
from ._wire import (
    MODEL_ACTIVITY,
    AgentResult,
    AnswerCheck,
    LoopState,
    Message,
    ModelRequest,
    ModelResponse,
    PromptCheck,
    SealedSession,
    ToolCall,
)
from .errors import ConfigurationError, GuardrailFailed
from .guardrail import GuardrailLike, GuardrailSpec, to_specs

MESSAGES_KEPT = 1000
"""Messages an AgentResult carries (the latest); the whole conversation is in the store."""
MAX_RESULT_MESSAGE_BYTES = 384 * 1024
"""... and at most this many bytes of them (JSON): the result is one payload, kept with its audit
rows under the SDK's 512 KiB warning size (2 MiB is the server's limit)."""
MAX_CARRIED_PENDING_BYTES = 512 * 1024
"""Messages not yet sent to the model that may ride along a continue-as-new; with more (a turn
of very large tool results), the loop continues-as-new after the next model step instead."""


@dataclass
class _Prompt:
    """The person's prompt, judged by the first model step before the model reads it."""

    text: str
    message: Message
    """The prompt as said in the conversation (replaced where a guardrail masked it)."""
    check: AnswerCheck
    sent: list[Message] = field(default_factory=list)
    """What was new in the conversation when its step was sent: sent again with the step that
    follows a person's yes (the step that asked stored nothing)."""


class _Run:
    """One loop's state: its session, options, guardrails and conversation.

    With a conversation store on the workers, each model step carries only :attr:`pending`
    (what is new since the last step) and the conversation's reference; without one, the whole
    conversation (:attr:`messages`, which then holds all of it).
    """

    def __init__(
        self, session: GuardSession, name: str, specs: tuple[GuardrailSpec, ...], opts: CallOptions
    ) -> None:
        self.s = session
        self.name = name
        self.specs = specs
        self.opts = opts
        self.messages: list[Message] = []
        self.pending: list[Message] = []
        self.conversation = f"{session.workflow_id}/{session.chain_id}"
        self.step = 0
        self.offered: tuple[str, ...] = ()
        self.corrections = 0
        self.runs = 1
        self.warned = False
        self.answer_specs = tuple(
            g for g in specs if g.applies_to("post-model") or g.applies_to("final-answer")
        )
        """The guardrails an answer's pass takes (as the model's text and the final answer)."""
        self.prompt_specs = tuple(g for g in specs if g.applies_to("pre-prompt"))
        self.call_specs = masking_prefix(specs, "tool-args")
        """What the model step judges the calls it proposes with (those that may mask, and
        those before them), where it can: :func:`_call_check`."""
        self.prompt: _Prompt | None = None
        """The prompt, where the first model step judges it before the model reads it."""

    def done(self, stop: str, *, answer: Any = None, note: str | None = None) -> AgentResult:
        self.s.visibility.publish()
        return AgentResult(
            stop_reason=stop,  # type: ignore[arg-type]
            answer=answer,
            halted_by=self.s.halted_by,
            iterations=self.s.counts.turn,
            messages=_latest(self.messages, MAX_RESULT_MESSAGE_BYTES),
            verdicts=tuple(self.s.rows),
            note=note,
        )

    def subject(self, placement: Any, value: Any, **kw: Any) -> Subject:
        return Subject(placement=placement, value=value, context=self.s.context(self.name), **kw)

    def say(self, role: Any, content: str | None, **kw: Any) -> None:
        message = Message(role=role, content=content, **kw)
        self.messages.append(message)
        self.pending.append(message)
        if self.s.config.conversations and len(self.messages) > MESSAGES_KEPT:
            del self.messages[: len(self.messages) - MESSAGES_KEPT]

    def request(
        self,
        model: str,
        answer_check: AnswerCheck | None = None,
        prompt: _Prompt | None = None,
        call_check: AnswerCheck | None = None,
    ) -> ModelRequest:
        """The next model step's input: what is new (with a store), else everything."""
        stored = self.s.config.conversations
        messages = tuple(self.pending if stored else self.messages)
        prompt_check = None
        if prompt is not None:
            at = next(i for i, m in enumerate(messages) if m is prompt.message)
            prompt.sent = list(self.pending)
            c = prompt.check
            prompt_check = PromptCheck(
                guardrails=c.guardrails, guardrails_ref=c.guardrails_ref, context=c.context, at=at
            )
        request = ModelRequest(
            model=model,
            messages=messages,
            tools=self.offered,
            agent=self.name,
            conversation=self.conversation if stored else None,
            step=self.step,
            turn=self.s.counts.turn - 1,
            answer_check=answer_check,
            prompt_check=prompt_check,
            call_check=call_check,
        )
        self.step += 1
        self.pending = []
        return request

    def state(self, sealed: SealedSession) -> LoopState:
        return LoopState(
            sealed=sealed,
            conversation=self.conversation,
            step=self.step,
            turn=self.s.counts.turn,
            offered=self.offered,
            corrections=self.corrections,
            pending=tuple(self.pending),
            runs=self.runs,
        )

    def resume(self, state: LoopState) -> None:
        self.conversation, self.step = state.conversation, state.step
        self.s.counts.turn = state.turn
        self.offered, self.corrections = state.offered, state.corrections
        self.pending, self.runs = list(state.pending), state.runs + 1


def _latest(messages: Sequence[Message], budget: int) -> tuple[Message, ...]:
    """The latest messages whose JSON fits in ``budget`` bytes, in order."""
    kept: list[Message] = []
    used = 0
    for m in reversed(messages):
        used += len(m.model_dump_json())
        if used > budget:
            break
        kept.append(m)
    return tuple(reversed(kept))


def _size(messages: Sequence[Message]) -> int:
    return sum(len(m.model_dump_json()) for m in messages)


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
    run = _Run(session or current(), name, to_specs(guardrails), opts)
    if resume is not None:
        await resume_session(resume.sealed, session=run.s)
        run.resume(resume)
    else:
        refused = await _start(run, prompt, system, tuple(tools))
        if refused is not None:
            return refused
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
    run: _Run, prompt: str, system: str | None, tools: tuple[str, ...]
) -> AgentResult | None:
    """The prompt judged before any model reads it (by the first model step itself, where it
    can); the tools an agent may be offered."""
    if system:
        run.say("system", system)
    # (The prompt is in the run's own input, written by whoever started the run: the first
    # model step is sent it as given, and the model reads it as judged.)
    check = _step_check(run, run.prompt_specs)
    if check is not None and _fits(run, prompt):
        run.say("user", prompt)
        run.prompt = _Prompt(prompt, run.messages[-1], check)
        run.offered = await _offer(run, tools)
        return None
    pre, _ = await judge(
        run.s, run.specs, run.subject("pre-prompt", prompt), purpose="pre-prompt",
        approval_timeout=run.opts.approval_timeout, mode=run.opts.mode,
    )  # fmt: skip
    if pre.tripped:
        return _refused_prompt(run, pre)
    used = pre.use(prompt)
    run.s.ledger.add_turn(prompt)
    run.say("user", used if isinstance(used, str) else prompt)
    run.offered = await _offer(run, tools)
    return None


def _refused_prompt(run: _Run, pre: PassResult) -> AgentResult:
    # No model may read a refused prompt, and there is no one in the loop to correct it.
    run.s.halt(pre.verdict.by)
    why = f"the prompt was refused ({pre.verdict.action}) by {pre.verdict.by}"
    return run.done("guardrail", note=why)


MAX_PROMPT_IN_MODEL_STEP = 64 * 1024
"""The longest prompt (bytes) the first model step judges itself; a longer one gets its pass
(refused before any step past the plugin's ``max_subject_bytes``)."""


def _fits(run: _Run, value: str) -> bool:
    """Whether the first model step may judge ``value`` itself: within the size a check judges
    and small enough that whatever is found in it keeps the step's output small."""
    size = len(canonical_json(value).encode())
    return size <= min(run.s.config.max_subject_bytes, MAX_PROMPT_IN_MODEL_STEP)


def _continue_due(run: _Run, max_events: int | None) -> bool:
    """Whether to continue-as-new before the next turn (never with a call still waiting)."""
    info = workflow.info()
    due = info.is_continue_as_new_suggested() or (
        max_events is not None and info.get_current_history_length() >= max_events
    )
    if not due or run.s.asks.waiting() or run.prompt is not None:
        return False
    if run.s.config.conversations and _size(run.pending) > MAX_CARRIED_PENDING_BYTES:
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
    run: _Run, model: str, model_timeout: timedelta, max_corrections: int
) -> AgentResult | None:
    """One model turn and what follows from it; an AgentResult when the loop ends."""
    check = _answer_check(run)
    prompt, run.prompt = run.prompt, None
    response = await _model_step(run, model, model_timeout, check, prompt)
    if prompt is not None:
        taken = await _prompt_taken(run, prompt, response)
        if isinstance(taken, AgentResult):
            return taken
        if taken is not None:
            # The model was not called (the prompt waited for a person, who said yes): now it
            # reads the prompt as judged, at the same step of the conversation (nothing of the
            # step that asked was stored).
            run.step -= 1
            run.pending = [taken if m is prompt.message else m for m in prompt.sent]
            response = await _model_step(run, model, model_timeout, check, None)
    said: PassResult | None = None
    final: PassResult | None = None
    judged = _answered(run, check, response)
    if response.content and not response.tool_calls and _one_answer_step(run):
        said, final = judged or await _answer_and_final(run, response.content)
    elif judged is not None:
        said, final = judged
    if response.content_dropped and not response.tool_calls:
        _too_long(run, response.content_dropped)
        return None
    content, stop = await _answer_text(run, response.content, said)
    if stop is not None or content is _WITHHELD:
        return stop
    if not response.tool_calls:
        if said is None or said.verdict.action != "allow" or content != response.content:
            final = None  # the answer's own verdict changed it, or a person did: judge it anew
        result, run.corrections = await _final(
            run, content, run.corrections, max_corrections, final
        )
        return result
    calls = response.tool_calls
    run.say("assistant", content, tool_calls=calls)
    outcomes, gates = await _dispatch(run, calls, run.offered, _called(run, response))
    for call, o in zip(calls, outcomes, strict=True):
        run.say("tool", canonical_json(o.result), tool_call_id=call.id, name=call.name)
    if response.calls_dropped:
        n, kept = response.calls_dropped, len(calls)
        run.say(
            "user",
            f"Your last turn proposed {n + kept} tool calls; only the first {kept} were "
            f"considered, and the other {n} were not run. Propose at most {MAX_CALLS_PER_TURN} "
            "calls in one turn.",
        )
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


_WITHHELD: Any = object()


def _too_long(run: _Run, length: int) -> None:
    """An answer the model step could not carry (:data:`MAX_ANSWER_BYTES`): the model is told
    to answer in less (the turn counts)."""
    run.say("assistant", "[withheld: too long to carry]")
    run.say(
        "user",
        f"Your answer was {length:,} characters, over the {MAX_ANSWER_BYTES:,} bytes one step "
        "carries. Answer again, in fewer words.",
    )


async def _model_step(
    run: _Run,
    model: str,
    timeout: timedelta,
    check: AnswerCheck | None,
    prompt: _Prompt | None,
) -> ModelResponse:
    calls = _call_check(run)
    request = run.request(model, check, prompt, calls)
    summary = f"model turn {run.s.counts.turn}" + _judging(run, check, prompt, calls)
    response = await _execute_model(request, timeout, summary)
    if response.calls_missing and calls is not None:
        # This worker was never sent the guardrails the step named by reference (another
        # worker, a restart): the model was not called, nothing stored. Again, in full.
        run.s.sent.forget(specs_only=True)
        calls = AnswerCheck(
            guardrails=run.call_specs, context=calls.context, first_call=calls.first_call
        )
        request = request.model_copy(update={"call_check": calls})
        response = await _execute_model(request, timeout, summary)
    if calls is not None and calls.guardrails and not response.calls_missing:
        run.s.sent.took(specs=calls.guardrails)
    return response


async def _execute_model(request: ModelRequest, timeout: timedelta, summary: str) -> ModelResponse:
    response: ModelResponse = await workflow.execute_activity(
        MODEL_ACTIVITY,
        request,
        result_type=ModelResponse,
        start_to_close_timeout=timeout,
        retry_policy=RetryPolicy(maximum_attempts=5),
        summary=summary,
    )
    return response


def _call_check(run: _Run) -> AnswerCheck | None:
    """What the model step judges the calls it proposes with, before it records them (a run
    that started with :data:`~duraguard._patches.MASK_BEFORE_HISTORY`): the guardrails of the
    list through the last that may mask a call's arguments, where they all run in the worker,
    read no session view and fail no run (and no admission check must come first)."""
    specs = run.call_specs
    if not specs or not run.s.mask_before_history():
        return None
    if any(g.remote or g.reads_session or g.on_error == "fail" for g in specs):
        return None
    if run.s.config.admission or any(g.applies_to("admission") for g in run.specs):
        return None
    ref, by_ref = run.s.sent.by_ref(specs)
    context = run.s.tool_context(run.name)
    first = run.s.counts.calls + 1  # _dispatch names the turn's calls from here, in order
    if by_ref:
        return AnswerCheck(guardrails_ref=ref, context=context, first_call=first)
    return AnswerCheck(guardrails=specs, context=context, first_call=first)


async def _prompt_taken(
    run: _Run, prompt: _Prompt, response: ModelResponse
) -> Message | AgentResult | None:
    """The prompt's verdict from the first model step: ``None`` where the model read it (as
    judged); where the model was not called (the prompt waited for a person, or the step could
    not judge it and a pass did), the prompt as it is to be read now; the loop's end where it
    was refused."""
    pre = _prompted(run, prompt, response)
    r, _ = await judge(
        run.s, run.specs, run.subject("pre-prompt", prompt.text), purpose="pre-prompt",
        approval_timeout=run.opts.approval_timeout, mode=run.opts.mode, judged=pre,
    )  # fmt: skip
    at = run.messages.index(prompt.message)
    if r.tripped:
        del run.messages[at]
        run.s.counts.turn -= 1  # no model turn was taken
        return _refused_prompt(run, r)
    used = r.use(prompt.text)
    said = prompt.message
    if isinstance(used, str) and used != prompt.text:
        said = run.messages[at] = said.model_copy(update={"content": used})
    run.s.ledger.add_turn(prompt.text)
    called = pre is not None and not pre.tripped
    return None if called else said


def _prompted(run: _Run, prompt: _Prompt, response: ModelResponse) -> PassResult | None:
    """The prompt's one verdict from the step that judged it; ``None`` where the step judged
    nothing (the model was then not called, and a pass judges the prompt)."""
    if response.prompt_missing:
        run.s.sent.forget(specs_only=True)
        return None
    if prompt.check.guardrails:
        run.s.sent.took(specs=prompt.check.guardrails)
    digest = subject_digest("pre-prompt", None, canonical_json(prompt.text))
    pre = response.prompted[0] if len(response.prompted) == 1 else None
    if pre is None or pre.placement != "pre-prompt" or pre.subject_digest != digest:
        # The model may have read a prompt nobody judged: the run fails rather than go on.
        raise GuardrailFailed(
            f"the model step of turn {run.s.counts.turn} did not judge the prompt it was sent "
            "(a worker of another version of duraguard?); the run stops here"
        )
    return pre


def _one_answer_step(run: _Run) -> bool:
    """Calls judged in their tool steps (``_inline.asked_for``), and the final answer's
    guardrails all run in the worker (none of them may be sent text the model's own check would
    have masked first)."""
    final = [g for g in run.specs if g.applies_to("final-answer")]
    return _inline.asked_for(run.s, run.opts) and not any(g.remote for g in final)


def _answer_check(run: _Run) -> AnswerCheck | None:
    """What the model step judges a final answer with itself (no step of its own for it)."""
    return _step_check(run, run.answer_specs)


def _step_check(run: _Run, specs: tuple[GuardrailSpec, ...]) -> AnswerCheck | None:
    """What a model step judges the prompt or its answer with (``specs``, those of the pass it
    stands for): in a run that may (:meth:`GuardSession.answer_in_model_step`) and judges its
    lone calls in their steps, where every guardrail runs in the worker and reads the value
    alone (no session view). The guardrails travel in full once per run, then by reference."""
    if not specs or not (run.s.answer_in_model_step() and _one_answer_step(run)):
        return None
    if any(g.remote or g.reads_session for g in specs):
        return None
    ref, by_ref = run.s.sent.by_ref(specs)
    context = run.s.tool_context(run.name)
    if by_ref:
        return AnswerCheck(guardrails_ref=ref, context=context)
    return AnswerCheck(guardrails=specs, context=context)


def _judging(
    run: _Run, check: AnswerCheck | None, prompt: _Prompt | None, calls: AnswerCheck | None = None
) -> str:
    """How the Timeline says what a model step is sent to judge (said when it is scheduled: a
    step whose model calls tools judges no answer, and its output says so)."""
    said = []
    if prompt is not None:
        said.append(f"judges the prompt [{', '.join(g.name for g in run.prompt_specs)}]")
    if calls is not None:
        said.append(f"judges the calls it proposes [{', '.join(g.name for g in run.call_specs)}]")
    if check is not None:
        said.append(
            f"judges a final answer if it gives one [{', '.join(g.name for g in run.answer_specs)}]"
        )
    return "".join(f", {x}" for x in said)


def _answered(
    run: _Run, check: AnswerCheck | None, response: ModelResponse
) -> tuple[PassResult, PassResult | None] | None:
    """The answer's verdicts from the model step that judged it: as the model's text, and as
    the final answer where the response is one (``None`` beside calls); ``None`` where it judged
    nothing (its worker was never sent the guardrails) or judged something else than the answer
    it returned: the answer then gets its pass. Where the text was masked there, the step
    recorded it masked: the verdict is on the text the model gave, which history never holds,
    and the final answer is judged again as it now reads."""
    if check is None:
        return None
    if response.answer_missing:
        run.s.sent.forget(specs_only=True)
        return None
    if check.guardrails:
        # The worker keeps what it was sent in full, whatever the model said: later steps name
        # them by reference.
        run.s.sent.took(specs=check.guardrails)
    expected = 1 if response.tool_calls else 2
    if not response.content or len(response.answered) != expected:
        return None
    text = canonical_json(response.content)
    if len(text.encode()) > run.s.config.max_subject_bytes:
        return None  # the pass refuses it before any step
    said, *rest = response.answered
    final = rest[0] if rest else None
    if said.placement != "post-model":
        return None
    if said.replaced:
        return said.model_copy(update={"value": response.content}), None
    for r, placement in ((said, "post-model"), (final, "final-answer")):
        if r is None:
            continue
        if r.placement != placement or r.subject_digest != subject_digest(placement, None, text):
            return None
    return said, final


async def _answer_and_final(run: _Run, content: str) -> tuple[PassResult, PassResult]:
    """Where calls are judged in their tool steps: a final answer judged as the model's text
    and as the final answer in one step. The second verdict is used only where the first let the text through as it
    was; otherwise the final answer is judged again, as it then reads (the audit shows both)."""
    subjects = [
        run.subject("post-model", content),
        run.subject("final-answer", content, session=run.s.answer_view()),
    ]
    said, final = await recorded_pass(
        run.s, run.specs, subjects, purpose="answer", mode=run.opts.mode
    )
    return said, final


async def _answer_text(
    run: _Run, content: str | None, said: PassResult | None = None
) -> tuple[Any, AgentResult | None]:
    """The model's answer text, judged before anything is done with it (``said``: already
    judged, in the step that judged it as the final answer too)."""
    if not content:
        return content, None
    r, _ = await judge(
        run.s, run.specs, run.subject("post-model", content), purpose="post-model",
        approval_timeout=run.opts.approval_timeout, mode=run.opts.mode, judged=said,
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
    run: _Run,
    content: str | None,
    corrections: int,
    max_corrections: int,
    judged: PassResult | None = None,
) -> tuple[AgentResult | None, int]:
    """A final answer: validation guardrails may send it back as a correction (``judged``:
    already judged, in the step that judged the model's text)."""
    if judged is None:
        subject = run.subject("final-answer", content, session=run.s.answer_view())
        (judged,) = await recorded_pass(
            run.s, run.specs, [subject], purpose="final-answer", mode=run.opts.mode
        )
    r = judged
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


def _called(run: _Run, response: ModelResponse) -> list[PassResult | None]:
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
    run: _Run,
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
