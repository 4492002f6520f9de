"""One ``agent_loop`` run's state: its session, options, guardrails and conversation (what
each model step is sent, what rides along a continue-as-new), and the person's prompt."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._byref import digest
from ._call import (
    CallOptions,
)
from ._pass import masking_prefix
from ._session import GuardSession
from ._types import Subject
from ._wire import (
    AgentResult,
    AnswerCheck,
    LoopState,
    Message,
    ModelRequest,
    PromptCheck,
    SealedSession,
)
from .guardrail import GuardrailSpec

MESSAGES_KEPT = 1000
"""Messages an AgentResult carries (the latest); the whole conversation is in the store."""

MAX_RESULT_MESSAGE_BYTES = 384 * 1024
"""... and at most this many bytes of them (JSON): the result is one payload, kept with its audit
rows under the SDK's 512 KiB warning size (2 MiB is the server's limit)."""

MAX_CARRIED_PENDING_BYTES = 512 * 1024
"""Messages not yet sent to the model that may ride along a continue-as-new; with more (a turn
of very large tool results), the loop continues-as-new after the next model step instead."""


@dataclass
class Prompt:
    """The person's prompt, judged by the first model step before the model reads it."""

    text: str
    message: Message
    """The prompt as said in the conversation (replaced where a guardrail masked it)."""
    check: AnswerCheck
    sent: list[Message] = field(default_factory=list)
    """What was new in the conversation when its step was sent: sent again with the step that
    follows a person's yes (the step that asked stored nothing)."""


class Run:
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
        self.kept: dict[int, tuple[str, str]] = {}
        """Tool results in :attr:`pending` their tool steps kept in the store, by position: the
        call's id and the text's digest, which the model step is sent instead of the text
        (:mod:`duraguard._kept_results`)."""
        self.in_full: tuple[Message, ...] = ()
        """The last model step's new messages, results and all: sent again where its worker
        did not find a kept result (:attr:`ModelResponse.results_missing`)."""
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
        those before them), where it can: :func:`call_check`."""
        self.prompt: Prompt | None = None
        """The prompt, where the first model step judges it before the model reads it."""

    def done(self, stop: str, *, answer: Any = None, note: str | None = None) -> AgentResult:
        self.s.publish()
        return AgentResult(
            stop_reason=stop,  # type: ignore[arg-type]
            answer=answer,
            halted_by=self.s.halted_by,
            iterations=self.s.counts.turn,
            messages=latest(self.messages, MAX_RESULT_MESSAGE_BYTES),
            verdicts=tuple(self.s.rows),
            note=note,
        )

    def subject(self, placement: Any, value: Any, **kw: Any) -> Subject:
        return Subject(placement=placement, value=value, context=self.s.context(self.name), **kw)

    def say(self, role: Any, content: str | None, *, kept: str = "", **kw: Any) -> None:
        """Add a message; ``kept``: the id of the call whose tool step kept ``content`` (its
        result, as the model reads it) in the store."""
        message = Message(role=role, content=content, **kw)
        self.messages.append(message)
        if kept and content is not None and self.s.keeps_results():
            self.kept[len(self.pending)] = (kept, digest(content))
        self.pending.append(message)
        if self.s.config.conversations and len(self.messages) > MESSAGES_KEPT:
            del self.messages[: len(self.messages) - MESSAGES_KEPT]

    def request(
        self,
        model: str,
        answer_check: AnswerCheck | None = None,
        prompt: Prompt | None = None,
        call_check: AnswerCheck | None = None,
    ) -> ModelRequest:
        """The next model step's input: what is new (with a store), else everything."""
        stored = self.s.config.conversations
        messages = tuple(self.pending if stored else self.messages)
        kept = tuple((at, *k) for at, k in self.kept.items()) if stored else ()
        self.in_full = messages
        if kept:
            left_out = [*messages]
            for at, _, _ in kept:
                left_out[at] = left_out[at].model_copy(update={"content": None})
            messages = tuple(left_out)
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
            kept=kept,
        )
        self.step += 1
        self.pending, self.kept = [], {}
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
        self.kept = {}  # the results a continued run carries go to the model step in full


def latest(messages: Sequence[Message], budget: int) -> tuple[Message, ...]:
    """The latest messages whose JSON fits in ``budget`` bytes, in order."""
    kept: list[Message] = []
    used = 0
    for m in reversed(messages):
        used += len(m.model_dump_json())
        if used > budget:
            break
        kept.append(m)
    return tuple(reversed(kept))


def size(messages: Sequence[Message]) -> int:
    return sum(len(m.model_dump_json()) for m in messages)
