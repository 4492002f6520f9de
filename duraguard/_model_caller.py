"""The model step (``duraguard.model``): the provider called with the conversation as the
worker stores it, the prompt judged before the model reads it, the answer and the proposed
calls judged before the step records them."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from temporalio import activity

from ._byref import Seen, digest
from ._findings import fewer_findings
from ._mistakes import unknown_model, unknown_tools
from ._model_step import bounded, judged_calls
from ._types import Context, PassResult, Placement, Subject
from ._wire import (
    MODEL_ACTIVITY,
    AnswerCheck,
    CheckRequest,
    CheckResponse,
    Message,
    ModelRequest,
    ModelResponse,
    PromptCheck,
)
from .conversations import ContextPolicy, ConversationStore
from .errors import ConfigurationError, GuardrailFailed
from .guardrail import GuardrailSpec
from .tools import Tool

MAX_JUDGED_IN_MODEL_STEP = 64 * 1024
"""The longest answer (characters) a model step judges itself; a longer one gets the answer's
pass of its own, which keeps a step's output within bounds however much it finds."""


class ModelCaller:
    """Calls the worker's models, judging what goes in and what comes out with ``check``."""

    def __init__(
        self,
        *,
        models: Mapping[str, Any],
        tools: Mapping[str, Tool],
        seen: Seen,
        check: Callable[[CheckRequest], Awaitable[CheckResponse]],
        conversations: ConversationStore | None,
        context: ContextPolicy,
    ) -> None:
        self.models = models
        self.tools = tools
        self.seen = seen
        self.check = check
        self.conversations = conversations
        self.context = context

    @activity.defn(name=MODEL_ACTIVITY)
    async def model(self, request: ModelRequest) -> ModelResponse:
        """One model turn: the provider's response, bounded, with this step's own verdicts."""
        provider, offered = self._provider(request)
        if request.kept:
            found = await self._kept(request)
            if found is None:
                return ModelResponse(results_missing=True)  # nothing stored, no model called
            request = found
        check, prompt, on_calls = request.answer_check, request.prompt_check, request.call_check
        # Verdicts come from this step's own checks, never from the provider.
        update: dict[str, Any] = {
            "answered": (),
            "answer_missing": False,
            "prompted": (),
            "prompt_missing": False,
            "called": (),
            "calls_missing": False,
            "results_missing": False,
        }
        if check is not None or prompt is not None or on_calls is not None:
            request = request.model_copy(
                update={"answer_check": None, "prompt_check": None, "call_check": None}
            )
        if prompt is not None:
            judged = await self._prompt(prompt, request)
            if judged is None:
                return ModelResponse(prompt_missing=True)
            if judged.tripped:
                return ModelResponse(prompted=(judged,))  # no model reads a refused prompt
            update["prompted"] = (judged,)
            if judged.replaced and isinstance(judged.value, str):
                said = list(request.messages)
                said[prompt.at] = said[prompt.at].model_copy(update={"content": judged.value})
                request = request.model_copy(update={"messages": tuple(said)})
        call_specs = self._specs(on_calls) if on_calls is not None else None
        if on_calls is not None and call_specs is None:
            return ModelResponse(calls_missing=True)  # nothing stored, no model called
        if request.conversation is not None:
            decided = request.messages
            request = await self._conversation(request)
            if prompt is not None:
                _stored_as_judged(prompt, decided, request.messages)
        result = provider.complete(request, offered)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, ModelResponse):
            result = ModelResponse.model_validate(result)
        result = bounded(result)  # before anything reads it: the step writes only this
        if on_calls is not None and call_specs is not None and result.tool_calls:
            ctx = self._context(on_calls)
            update.update(
                await judged_calls(self.check, call_specs, ctx, result, (request.turn or 0) + 1)
            )
        if check is not None:
            update.update(await self._answer(check, request, result))
        return result.model_copy(update=update)

    def _provider(self, request: ModelRequest) -> tuple[Any, list[Tool]]:
        """The provider the step names, and the tools it offers."""
        provider = self.models.get(request.model.partition(":")[0])
        if provider is None:
            raise unknown_model(request.model, self.models)
        missing = unknown_tools(request.tools, self.tools)
        if missing is not None:
            raise missing
        return provider, [self.tools[name] for name in request.tools]

    def _specs(self, check: AnswerCheck) -> tuple[GuardrailSpec, ...] | None:
        """A model step's guardrails: sent in full (kept for the run's later steps), or named
        by a reference this worker worked out itself (``None`` where it never did)."""
        if not check.guardrails and not check.guardrails_ref:
            return None  # a check of nothing lets nothing through
        return self.seen.specs_of(check.guardrails, check.guardrails_ref)

    @staticmethod
    def _context(check: AnswerCheck) -> Context:
        info = activity.info()
        return check.context.in_run(
            info.workflow_id or "", info.workflow_run_id or "", info.workflow_type or ""
        )

    async def _prompt(self, check: PromptCheck, request: ModelRequest) -> PassResult | None:
        """The person's prompt judged before the model reads it; ``None`` where it cannot be
        here (the model is then not called, and the workflow judges it in a pass)."""
        specs = self._specs(check)
        said = request.messages[check.at] if 0 <= check.at < len(request.messages) else None
        if specs is None or said is None or said.role != "user" or not said.content:
            return None
        subject = Subject(placement="pre-prompt", value=said.content, context=self._context(check))
        asked = CheckRequest(
            guardrails=specs, subjects=(subject,), purpose="pre-prompt", turn=request.turn or 0
        )
        try:
            (judged,) = (await self.check(asked)).results
        except GuardrailFailed:
            return None  # a guardrail that fails the run fails it from the prompt's own pass
        return fewer_findings(judged)

    async def _answer(
        self, check: AnswerCheck, request: ModelRequest, result: ModelResponse
    ) -> dict[str, Any]:
        """A final answer judged in the step that gave it, as the model's text and as the final
        answer (one pass each, as ``agent_loop``'s answer pass judges them)."""
        specs = self._specs(check)
        content = result.content
        if not content:
            return {}
        long = len(content) > MAX_JUDGED_IN_MODEL_STEP
        if specs is None:
            return {} if result.tool_calls or long else {"answer_missing": True}
        # A guardrail that may mask the text judges it here, before the step records it.
        masking = any(g.may_replace and g.applies_to("post-model") for g in specs)
        if (result.tool_calls or long) and not masking:
            return {}  # the loop judges it in a pass of its own
        ctx = self._context(check)
        placements: tuple[Placement, ...] = (
            ("post-model",) if result.tool_calls else ("post-model", "final-answer")
        )
        subjects = tuple(Subject(placement=p, value=content, context=ctx) for p in placements)
        asked = CheckRequest(
            guardrails=specs, subjects=subjects, purpose="answer", turn=(request.turn or 0) + 1
        )
        try:
            response = await self.check(asked)
        except GuardrailFailed:
            # A guardrail that fails the run fails it from the answer's own pass.
            return {} if result.tool_calls else {"answer_missing": True}
        said, *rest = (fewer_findings(r) for r in response.results)
        out: dict[str, Any] = {}
        if said.replaced and isinstance(said.value, str):
            # Recorded as the guardrails left it; the verdict does not repeat it.
            out["content"], said = said.value, said.model_copy(update={"value": None})
        return {**out, "answered": (said, *rest)}

    async def _kept(self, request: ModelRequest) -> ModelRequest | None:
        """``request`` with the tool results its tool steps kept put back (:mod:`duraguard._kept_results`);
        ``None`` where one is not in this worker's store with the digest the workflow sent."""
        messages = list(request.messages)
        wanted = {call_id: d for _, call_id, d in request.kept}
        for at, _, _ in request.kept:
            said = messages[at] if 0 <= at < len(messages) else None
            if said is None or said.role != "tool" or said.content is not None:
                return None  # names no result left out: the workflow sends them in full
        if self.conversations is None or len(wanted) != len(request.kept):
            return None
        try:
            found = await self.conversations.kept_results(
                activity.info().workflow_run_id or "", wanted
            )
        except Exception as err:  # unreadable here: sent in full, the model reads the same
            activity.logger.warning(
                "duraguard: kept tool results not read (%s: %s); the step is sent them in full",
                type(err).__name__,
                err,
            )
            return None
        # Checked here too: a store of one's own may hand back another text than the one the
        # step kept (another attempt's, the latest, a changed row); only the digest says which.
        found = {
            c: t for c, t in found.items() if isinstance(t, str) and wanted.get(c) == digest(t)
        }
        if len(found) != len(wanted):
            _missed(len(wanted) - len(found))
            return None
        for at, call_id, _ in request.kept:
            messages[at] = messages[at].model_copy(update={"content": found[call_id]})
        return request.model_copy(update={"messages": tuple(messages), "kept": ()})

    async def _conversation(self, request: ModelRequest) -> ModelRequest:
        """Append what is new to the stored conversation and read back what the model sees."""
        if self.conversations is None:
            raise ConfigurationError(
                "this model step refers to a stored conversation but the worker has no "
                "ConversationStore: give every worker the same DuraguardPlugin(conversations=...)"
            )
        conversation = request.conversation or ""
        await self.conversations.append(conversation, request.step, request.messages)
        messages = await self.context.read(self.conversations, conversation)
        return request.model_copy(update={"messages": tuple(messages)})


MISSES_LOGGED_EVERY = 60.0
"""Seconds between two warnings that kept results were missed (one a minute at most)."""
_misses = {"count": 0, "logged": float("-inf")}


def _missed(n: int) -> None:
    """Count kept results this worker did not find, and warn now and then: a miss costs the
    model step a resend, and one on every turn (tool and model steps on workers with different
    stores) doubles the run's model steps without failing anything."""
    _misses["count"] += n
    now = time.monotonic()
    if now - _misses["logged"] >= MISSES_LOGGED_EVERY:
        _misses["logged"] = now
        activity.logger.warning(
            "duraguard: %d tool result(s) kept for model steps were not found in this worker's "
            "conversation store so far (each costs its model step a resend with the results in "
            "full): give every worker of the task queue the same store",
            _misses["count"],
        )


def _stored_as_judged(
    prompt: PromptCheck, decided: Sequence[Message], stored: Sequence[Message]
) -> None:
    """Refuse to call the model where the stored conversation holds another prompt than the one
    this step judged: an earlier attempt of the step stored its own (a step once stored is kept)
    and its guardrails decided otherwise then (one that timed out, or rules changed meanwhile).
    The recorded verdict would not be about what the model reads, so the run stops here."""
    at = prompt.at
    if at < len(stored) and stored[at].content == decided[at].content:
        return
    raise GuardrailFailed(
        "the stored conversation holds the prompt as an earlier attempt of this model step "
        "judged it, and this attempt judged it otherwise (a guardrail that does not decide the "
        "same way every time, or rules changed between attempts); the model is not called with "
        "a prompt other than the one its recorded verdict is about. Start the run again."
    )


__all__ = ["MAX_JUDGED_IN_MODEL_STEP", "ModelCaller"]
