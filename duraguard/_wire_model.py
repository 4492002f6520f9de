"""What crosses between workflow code and a model step (``duraguard.model``): the conversation's
messages, the step's input and output, and what the step judges in itself."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._types import Context, PassResult
from ._wire_base import Wire as _Wire
from .guardrail import GuardrailSpec


class ToolCall(_Wire):
    """A call the model proposed."""

    id: str
    name: str
    arguments: Any = Field(default_factory=dict)
    """The model's arguments: usually an object; anything else is refused by the loop."""
    refused: str = Field(default="", exclude_if=lambda v: not v)
    """Set by the model step (never by a provider): why these arguments were left out of the
    step's output (nested too deep, too large to carry); the loop refuses the call with it."""


class Message(_Wire):
    """One entry of the conversation a model reads."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


class AnswerCheck(_Wire):
    """The guardrails a model step judges its final answer with, as the model's text and as the
    final answer, in the step that produced it (no step of its own). Only guardrails that run in
    the worker and read no session view: the answer is all they judge."""

    guardrails: tuple[GuardrailSpec, ...] = Field(default=(), exclude_if=lambda v: not v)
    guardrails_ref: str = Field(default="", exclude_if=lambda v: not v)
    """Where the guardrails were sent in full to an earlier step of the run: their reference
    (:func:`~duraguard._byref.specs_ref`), which the worker looks up among the lists it worked one out for."""
    context: Context = Field(default_factory=Context)
    """Who and where, without the run's ids (the worker takes them from the step's info)."""
    first_call: int = Field(default=0, exclude_if=lambda v: not v)
    """For :attr:`ModelRequest.call_check`: the number the run gives the first call the model
    proposes (``c<n>``, then ``c<n+1>``...): how the audit names the verdicts on them."""


class PromptCheck(AnswerCheck):
    """The guardrails a model step judges the person's prompt with before the model reads it
    (``agent_loop``'s first model step): the model is called only on a verdict that lets the
    prompt through, and reads it as judged (masked, say)."""

    at: int
    """The prompt's index in :attr:`ModelRequest.messages` (a ``user`` message)."""


class ModelRequest(_Wire):
    """Input of ``duraguard.model``."""

    model: str
    """``provider:model``, the provider registered on the worker by name."""
    messages: tuple[Message, ...]
    """The conversation; with ``conversation`` set, only what is new since the last step (the
    worker appends it to the store and hands the provider the conversation read back)."""
    tools: tuple[str, ...] = ()
    """Names of the tools offered; the worker adds their descriptions and schemas."""
    agent: str | None = None
    conversation: str | None = None
    """The reference of the conversation in the worker's ConversationStore."""
    step: int = 0
    """This request's step in that conversation (appends are idempotent per step)."""
    turn: int | None = None
    """How many model turns came before this one in the session."""
    answer_check: AnswerCheck | None = Field(default=None, exclude_if=lambda v: v is None)
    """How the step judges a final answer before returning it (``agent_loop`` in a run judged
    in its steps); the model provider is never shown it."""
    prompt_check: PromptCheck | None = Field(default=None, exclude_if=lambda v: v is None)
    """How the step judges the prompt before the model reads it (the run's first model step);
    the model provider is never shown it."""
    call_check: AnswerCheck | None = Field(default=None, exclude_if=lambda v: v is None)
    """The first guardrails of the loop's list for tool arguments, through the last that may
    mask or rewrite (:func:`duraguard._pass.masking_prefix`): the step judges each call the
    model proposes with them before its output is recorded, and records the arguments as they
    left them; the rest of the list judges them after. The model provider is never shown it."""
    kept: tuple[tuple[int, str, str], ...] = Field(default=(), exclude_if=lambda v: not v)
    """Tool results left out of :attr:`messages` (their content ``None``), kept in the store by
    the tool steps that returned them: (position in :attr:`messages`, the call's id in the run,
    the text's :func:`~duraguard._byref.digest`). The worker puts each back before anything
    reads the messages, or calls no model (:attr:`ModelResponse.results_missing`)."""


class ModelResponse(_Wire):
    """Output of ``duraguard.model``: an answer, tool calls, or both."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: dict[str, int] = Field(default_factory=dict)
    answered: tuple[PassResult, ...] = Field(default=(), exclude_if=lambda v: not v)
    """The answer judged in this step (:attr:`ModelRequest.answer_check`): as the model's text
    (``post-model``), then as the final answer. Set by the worker, never by a model provider."""
    answer_missing: bool = Field(default=False, exclude_if=lambda v: not v)
    """The answer was to be judged here, but this worker was never sent the guardrails the step
    names by reference (another worker, a restart): the workflow judges it in a pass."""
    prompted: tuple[PassResult, ...] = Field(default=(), exclude_if=lambda v: not v)
    """The prompt judged in this step (:attr:`ModelRequest.prompt_check`). Where it did not let
    the prompt through, the model was not called (no content, no calls)."""
    prompt_missing: bool = Field(default=False, exclude_if=lambda v: not v)
    """The prompt was to be judged here and could not be (guardrails never sent to this worker):
    the model was not called, nothing was stored, and the workflow judges it in a pass."""
    called: tuple[PassResult | None, ...] = Field(default=(), exclude_if=lambda v: not v)
    """The calls judged in this step (:attr:`ModelRequest.call_check`), one per call in order
    (``None`` for one it did not judge: arguments left out, or not an object). A replacement
    is not repeated here: the call's arguments are it. Set by the worker, never a provider."""
    calls_missing: bool = Field(default=False, exclude_if=lambda v: not v)
    """The calls were to be judged here, but this worker was never sent the guardrails the
    step names by reference: the model was not called; the step is sent again with them."""
    results_missing: bool = Field(default=False, exclude_if=lambda v: not v)
    """A result :attr:`ModelRequest.kept` names was not in this worker's store with that digest
    (a store that keeps none, wiped, or changed): the model was not called, nothing was stored;
    the step is sent again with the results in full."""
    calls_dropped: int = Field(default=0, exclude_if=lambda v: not v)
    """Calls the model proposed past :data:`~duraguard._bounds.MAX_CALLS_PER_TURN`, left out
    by the step (not judged, not run); the loop tells the model."""
    content_dropped: int = Field(default=0, exclude_if=lambda v: not v)
    """The length of an answer too long for the step to carry, left out; the loop tells the
    model to answer in less."""


__all__ = ["AnswerCheck", "Message", "ModelRequest", "ModelResponse", "PromptCheck", "ToolCall"]
