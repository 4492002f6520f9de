"""What the framework adapters share: the guard of one agent, and how a guarded run ends.

An adapter (:mod:`duraguard.openai_agents`, :mod:`duraguard.pydantic_ai`) maps a framework's
hooks onto the guard core's seams through one :class:`AgentGuard`: the prompt, each tool call,
the final answer. Each verdict is a recorded step of the workflow; a hook never decides.

A guardrail that ends the run (a ``halt``, a refused prompt, a refused final answer) raises
:class:`RunStopped` from inside the framework's loop, so the framework unwinds; the adapter's
``run()`` turns it into a :class:`GuardedRun` value. It is a registered workflow failure type
(non-retryable): should it escape, the workflow fails with it, and never retries its task.

A ``halt`` on a tool call does not raise there: sibling calls of the same model turn complete
and are recorded first; the run stops before the model would read their results.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from pydantic_core import to_jsonable_python

from ._session import session
from ._types import PassResult, StopReason
from ._wire import AuditRow
from .errors import RunStopped as RunStopped
from .guardrail import GuardrailLike, GuardrailSpec, to_specs
from .workflow import CallOptions, CallOutcome

R = TypeVar("R")


def stopped_in(err: BaseException) -> RunStopped | None:
    """The :class:`RunStopped` behind ``err``: itself, or a cause the framework wrapped it in."""
    seen: set[int] = set()
    found: BaseException | None = err
    while found is not None and id(found) not in seen:
        if isinstance(found, RunStopped):
            return found
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return None


@dataclass(frozen=True)
class GuardedRun(Generic[R]):
    """How a guarded agent run ended, whatever framework drove it."""

    stop_reason: StopReason
    """``done``; ``guardrail`` (a halt, or a refused prompt); ``no-answer`` (the final answer
    was refused); ``max-iterations`` (the framework's turn limit)."""
    output: Any = None
    """The final output, as the guardrails left it (masked where one masked it)."""
    halted_by: str | None = None
    """The guardrail that ended the run, where one did."""
    note: str | None = None
    """Why the run ended, when that is not plain."""
    verdicts: tuple[AuditRow, ...] = ()
    """The session's audit rows (the last 200; ``duraguard audit`` reads them all)."""
    result: R | None = None
    """The framework's own result when its run finished; when a guardrail (or a limit) stopped
    it, what the framework had made by then where it says (the OpenAI Agents SDK's
    ``RunErrorDetails``), else ``None``."""


@dataclass(frozen=True)
class AgentGuard:
    """Guardrails given once for an agent, and the moves every adapter makes with them."""

    specs: tuple[GuardrailSpec, ...]
    options: CallOptions = field(default_factory=CallOptions)

    @classmethod
    def of(
        cls, guardrails: Sequence[GuardrailLike], options: CallOptions | None, agent: str | None
    ) -> AgentGuard:
        opts = options or CallOptions()
        return cls(to_specs(guardrails), replace(opts, agent=opts.agent or agent))

    @property
    def agent(self) -> str | None:
        return self.options.agent

    def stop_if_halted(self) -> None:
        """Before the model reads anything more: a halted session ends the run here."""
        s = session()
        if s.halted_by is not None:
            raise RunStopped(
                f"halted by guardrail {s.halted_by!r}", stop_reason="guardrail", by=s.halted_by
            )

    async def prompt(self, text: Any) -> Any:
        """Judge what the person asked; returns what the model may read (masked, rewritten)."""
        s = session()
        pr = await s.judge(
            "pre-prompt", text, guardrails=self.specs, agent=self.agent,
            approval_timeout=self.options.approval_timeout, mode=self.options.mode,
        )  # fmt: skip
        if pr.tripped:
            # No model may read a refused prompt, and nobody is in the loop to correct it.
            v = pr.verdict
            s.halt(v.by)
            raise RunStopped(
                f"the prompt was refused ({v.action}) by {v.by}", stop_reason="guardrail", by=v.by
            )
        return pr.use(text)

    async def call(
        self, tool: str, args: Any, invoke: Callable[[Any], Awaitable[Any]]
    ) -> tuple[CallOutcome, Any]:
        """One tool call through the seams: judged (parking on a person where asked), run with
        the arguments that may run, its result judged, recorded once. Returns the outcome and
        what the tool returned (``None`` when it did not run). A tool's own exception is
        recorded and raised again: the framework handles it as it would unguarded."""
        s = session()
        gate = await s.before_call(tool, args, guardrails=self.specs, options=self.options)
        if not gate.runs:
            if gate.halted:
                s.halt(gate.halted_by)
            return gate.outcome(), None
        try:
            raw = await invoke(gate.args)
        except Exception as err:
            await s.after_call(
                gate, None, guardrails=self.specs, ok=False, error=str(err), options=self.options
            )
            raise
        out = await s.after_call(gate, raw, guardrails=self.specs, options=self.options)
        if out.halted:
            s.halt(out.verdict.by)
        return out, raw

    async def answer(self, value: Any) -> PassResult:
        """Judge the final answer (parking on a person where asked; validation guardrails see
        the last tool results). A halt or a refusal ends the run; returns the pass (``use()``
        it: a mask or rewrite replaces the answer)."""
        self.stop_if_halted()
        s = session()
        pr = await s.judge(
            "final-answer", to_jsonable_python(value), guardrails=self.specs, agent=self.agent,
            approval_timeout=self.options.approval_timeout, mode=self.options.mode,
        )  # fmt: skip
        v = pr.verdict
        if v.action == "halt":
            s.halt(v.by)
            raise RunStopped(f"halted by guardrail {v.by!r}", stop_reason="guardrail", by=v.by)
        if pr.tripped:
            raise RunStopped(
                f"the final answer was refused by {v.by}: {v.reason}",
                stop_reason="no-answer",
                by=v.by,
            )
        return pr

    def ended(self, stop: RunStopped, result: Any = None) -> GuardedRun[Any]:
        s = session()
        halted_by = stop.by if stop.stop_reason == "guardrail" else None
        return GuardedRun(
            stop_reason=stop.stop_reason,
            halted_by=halted_by,
            note=stop.note,
            verdicts=tuple(s.rows),
            result=result,
        )

    def finished(self, output: Any, result: Any) -> GuardedRun[Any]:
        return GuardedRun(
            stop_reason="done", output=output, verdicts=tuple(session().rows), result=result
        )


def changed(outcome: CallOutcome, raw: Any) -> bool:
    """Whether the model must read something other than what the tool returned: a refusal, a
    masked or rewritten result, or an error the result could not be recorded for."""
    if not outcome.ran or outcome.refusal is not None or outcome.error is not None:
        return True
    try:
        return bool(outcome.result != to_jsonable_python(raw))
    except (ValueError, TypeError):
        return True
