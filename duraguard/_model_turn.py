"""The model step of one turn of ``agent_loop``: what it is sent to judge itself (the prompt,
the calls it proposes, a final answer), scheduling it, and what its verdicts say.

Where a step could not judge (its worker was never sent the guardrails it names), the loop
judges in a pass of its own (:mod:`duraguard._loop`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

from . import _inline
from ._ask import judge
from ._run import Prompt, Run
from ._types import PassResult, canonical_json, subject_digest
from ._wire import (
    MODEL_ACTIVITY,
    AgentResult,
    AnswerCheck,
    Message,
    ModelRequest,
    ModelResponse,
)
from .errors import GuardrailFailed
from .guardrail import GuardrailSpec


def refused_prompt(run: Run, pre: PassResult) -> AgentResult:
    # No model may read a refused prompt, and there is no one in the loop to correct it.
    run.s.halt(pre.verdict.by)
    why = f"the prompt was refused ({pre.verdict.action}) by {pre.verdict.by}"
    return run.done("guardrail", note=why)


MAX_PROMPT_IN_MODEL_STEP = 64 * 1024
"""The longest prompt (bytes) the first model step judges itself; a longer one gets its pass
(refused before any step past the plugin's ``max_subject_bytes``)."""


def fits(run: Run, value: str) -> bool:
    """Whether the first model step may judge ``value`` itself: within the size a check judges
    and small enough that whatever is found in it keeps the step's output small."""
    size = len(canonical_json(value).encode())
    return size <= min(run.s.config.max_subject_bytes, MAX_PROMPT_IN_MODEL_STEP)


async def model_step(
    run: Run,
    model: str,
    timeout: timedelta,
    check: AnswerCheck | None,
    prompt: Prompt | None,
) -> ModelResponse:
    calls = call_check(run)
    request = run.request(model, check, prompt, calls)
    summary = f"model turn {run.s.counts.turn}" + judging(run, check, prompt, calls)
    response = await execute_model(request, timeout, summary)
    resent_calls = False
    while True:
        # The model was not called and nothing stored where a step says something it was to
        # take from this worker was not there; it is sent again with that in full. Each is sent
        # in full once, so this ends (a step may say both, one after the other).
        update: dict[str, Any] = {}
        if response.results_missing and request.kept:
            # A result a tool step kept was not in this worker's store with its digest (a store
            # that keeps none, one wiped): again, with the results.
            update.update(messages=run.in_full, kept=())
        if response.calls_missing and calls is not None and not resent_calls:
            # This worker was never sent the guardrails the step named by reference (another
            # worker, a restart): again, in full.
            run.s.sent.forget(specs_only=True)
            calls = AnswerCheck(
                guardrails=run.call_specs, context=calls.context, first_call=calls.first_call
            )
            update["call_check"], resent_calls = calls, True
        if not update:
            break
        request = request.model_copy(update=update)
        response = await execute_model(request, timeout, summary)
    if calls is not None and calls.guardrails and not response.calls_missing:
        run.s.sent.took(specs=calls.guardrails)
    return response


async def execute_model(request: ModelRequest, timeout: timedelta, summary: str) -> ModelResponse:
    response: ModelResponse = await workflow.execute_activity(
        MODEL_ACTIVITY,
        request,
        result_type=ModelResponse,
        start_to_close_timeout=timeout,
        retry_policy=RetryPolicy(maximum_attempts=5),
        summary=summary,
    )
    return response


def call_check(run: Run) -> AnswerCheck | None:
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


async def prompt_taken(
    run: Run, prompt: Prompt, response: ModelResponse
) -> Message | AgentResult | None:
    """The prompt's verdict from the first model step: ``None`` where the model read it (as
    judged); where the model was not called (the prompt waited for a person, or the step could
    not judge it and a pass did), the prompt as it is to be read now; the loop's end where it
    was refused."""
    pre = prompted(run, prompt, response)
    r, _ = await judge(
        run.s, run.specs, run.subject("pre-prompt", prompt.text), purpose="pre-prompt",
        approval_timeout=run.opts.approval_timeout, mode=run.opts.mode, judged=pre,
    )  # fmt: skip
    at = run.messages.index(prompt.message)
    if r.tripped:
        del run.messages[at]
        run.s.counts.turn -= 1  # no model turn was taken
        return refused_prompt(run, r)
    used = r.use(prompt.text)
    said = prompt.message
    if isinstance(used, str) and used != prompt.text:
        said = run.messages[at] = said.model_copy(update={"content": used})
    run.s.ledger.add_turn(prompt.text)
    called = pre is not None and not pre.tripped
    return None if called else said


def prompted(run: Run, prompt: Prompt, response: ModelResponse) -> PassResult | None:
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


def one_answer_step(run: Run) -> bool:
    """Calls judged in their tool steps (``_inline.asked_for``), and the final answer's
    guardrails all run in the worker (none of them may be sent text the model's own check would
    have masked first)."""
    final = [g for g in run.specs if g.applies_to("final-answer")]
    return _inline.asked_for(run.s, run.opts) and not any(g.remote for g in final)


def answer_check(run: Run) -> AnswerCheck | None:
    """What the model step judges a final answer with itself (no step of its own for it)."""
    return step_check(run, run.answer_specs)


def step_check(run: Run, specs: tuple[GuardrailSpec, ...]) -> AnswerCheck | None:
    """What a model step judges the prompt or its answer with (``specs``, those of the pass it
    stands for): in a run that may (:meth:`GuardSession.answer_in_model_step`) and judges its
    lone calls in their steps, where every guardrail runs in the worker and reads the value
    alone (no session view). The guardrails travel in full once per run, then by reference."""
    if not specs or not (run.s.answer_in_model_step() and one_answer_step(run)):
        return None
    if any(g.remote or g.reads_session for g in specs):
        return None
    ref, by_ref = run.s.sent.by_ref(specs)
    context = run.s.tool_context(run.name)
    if by_ref:
        return AnswerCheck(guardrails_ref=ref, context=context)
    return AnswerCheck(guardrails=specs, context=context)


def judging(
    run: Run, check: AnswerCheck | None, prompt: Prompt | None, calls: AnswerCheck | None = None
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


def answered(
    run: Run, check: AnswerCheck | None, response: ModelResponse
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
