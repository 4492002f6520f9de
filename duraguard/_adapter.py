"""The shared core of the framework adapters: one agent's guard, and how a guarded run ends.

An adapter (:mod:`duraguard.openai_agents`, :mod:`duraguard.pydantic_ai`, and any later one) is
a thin translation of a framework's hooks onto one :class:`AgentGuard`. Every verdict is a
recorded step of the workflow, decided by the guard core (``duraguard.session()``); a hook never
decides. The seams, each a method of :class:`AgentGuard`:

* **tool definitions** -- :meth:`AgentGuard.describe` takes the framework's tools as
  :class:`~duraguard.ToolDescription` (:func:`duraguard._describe.describe`: name, description,
  schema, marks); each call's check then carries its kind and arguments to the policy, and its
  results carry its labels into the session's provenance, through the same seams as
  duraguard's own tools;
* **a tool call** -- :meth:`AgentGuard.call` (judge, park on a person where asked, run, judge
  the result, record once), or split in two where the framework runs the tool between two hooks:
  :meth:`AgentGuard.gate` then :meth:`AgentGuard.settle` (or :meth:`AgentGuard.record`, where
  the framework runs the tool and hands its result to a second hook; :func:`call_key` names the
  call between the two); :meth:`AgentGuard.shown_error` judges a failed call's error text
  before the model reads it. ``ask=`` routes a framework's own
  approval mark (``needs_approval``, ``requires_approval``) into duraguard's signed, call-bound,
  durable yes (a ``native`` verdict in the call's own pass);
* **the prompt and the final answer** -- :meth:`AgentGuard.prompt` (:meth:`AgentGuard.prompt_texts`
  for a message's text parts), :meth:`AgentGuard.answer`; :func:`as_type` puts a replaced answer
  back in the framework's output type; :func:`corrected` asks again after a refused answer
  where the framework's loop cannot;
* **refusing in the framework's shape** -- :func:`for_model` (the text a model reads) and
  :func:`changed` (whether it must read something other than the tool's result);
* **halt** -- :meth:`AgentGuard.stop_if_halted` before each model call raises
  :class:`RunStopped`; ``run()`` turns it into a :class:`GuardedRun` with :meth:`AgentGuard.ended`
  / :meth:`AgentGuard.finished`;
* **what the framework decided itself** -- :meth:`AgentGuard.note` records a native guardrail's
  refusal, rejection or tripwire as a verdict of its own (audit row, search attributes, halt);
* **where it runs** -- :meth:`AgentGuard.require_workflow` refuses, naming the framework's fix, a
  guarded agent run inside an activity (a tool's body), whose verdicts could not be recorded;
  :func:`duraguard._delegation.agents_reached` finds agents a tool's function runs, and
  :func:`duraguard._delegation.streaming_refusal` says why a token stream cannot be judged.

A guardrail that ends the run (a ``halt``, a refused prompt, a refused final answer) raises
:class:`RunStopped` from inside the framework's loop, so the framework unwinds. It is a
registered workflow failure type (non-retryable): should it escape, the workflow fails with it
and never retries its task. A ``halt`` on a tool call does not raise there: sibling calls of
the same model turn complete and are recorded first; the run stops before the model reads them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_core import to_jsonable_python
from temporalio import activity, workflow

from ._adapter_end import GuardedRun as GuardedRun
from ._adapter_end import corrected as corrected
from ._adapter_end import found_in as found_in
from ._adapter_end import refused_in as refused_in
from ._adapter_end import stopped_in as stopped_in
from ._adapter_shape import as_type as as_type
from ._adapter_shape import call_key as call_key
from ._adapter_shape import changed as changed
from ._adapter_shape import for_model as for_model
from ._delegation import streaming_refusal
from ._outcome import Refusal
from ._session import GuardSession, session
from ._types import PassResult, Placement, ToolDescription
from .checks.native import NativeAction, native
from .errors import ConfigurationError
from .errors import RunStopped as RunStopped
from .guardrail import GuardrailLike, GuardrailSpec, to_specs
from .workflow import CallGate, CallOptions, CallOutcome


@dataclass(frozen=True)
class AgentGuard:
    """Guardrails given once for an agent, and the moves every adapter makes with them."""

    specs: tuple[GuardrailSpec, ...]
    options: CallOptions = field(default_factory=CallOptions)
    framework: str = "framework"
    """How the framework's own decisions are named (``openai-agents:<name>``)."""
    tools: dict[str, ToolDescription] = field(default_factory=dict)
    """The agent's tools as the policy reads them (:meth:`describe`)."""

    @classmethod
    def of(
        cls,
        guardrails: Sequence[GuardrailLike],
        options: CallOptions | None,
        agent: str | None,
        framework: str = "framework",
    ) -> AgentGuard:
        opts = options or CallOptions()
        return cls(to_specs(guardrails), replace(opts, agent=opts.agent or agent), framework)

    @property
    def agent(self) -> str | None:
        return self.options.agent

    def named(self, agent: str | None) -> AgentGuard:
        """This guard for another agent (a handoff's target) with the same guardrails."""
        return replace(self, options=replace(self.options, agent=agent), tools={})

    def describe(self, *tools: ToolDescription) -> None:
        """Tools of the agent, as the policy reads them; told to the session on each use."""
        for t in tools:
            self.tools[t.name] = t

    def session(self) -> GuardSession:
        """The run's session, told this agent's tool descriptions (workflow code only)."""
        s = session()
        for name, t in self.tools.items():
            if s.described.get(name) is not t:
                s.describe(t)
        return s

    def require_workflow(self, fix: str) -> None:
        """Refuse to judge outside workflow code (inside an activity: a tool's body), where no
        verdict could be recorded; ``fix`` says how, in the framework's words."""
        if activity.in_activity():
            raise ConfigurationError(
                f"agent {self.agent!r} is guarded but runs inside an activity (a tool's body), "
                f"where duraguard cannot record a verdict; {fix}"
            )
        if not workflow.in_workflow():
            raise ConfigurationError(
                f"agent {self.agent!r} is guarded, and a guarded agent is for workflow code "
                "(every verdict is a step of the workflow): run it in a workflow"
            )

    def refuse_stream(self, what: str, fix: str) -> None:
        """Stop the run before its first model call where a token stream of ``what`` would run
        ahead of a guardrail (:func:`duraguard._delegation.streaming_refusal`): stop reason
        ``guardrail`` by ``duraguard``; ``fix`` names the framework's way out."""
        why = streaming_refusal(self.specs, what)
        if why is not None:
            raise RunStopped(f"{why}; {fix}", stop_reason="guardrail", by="duraguard")

    def stop_if_halted(self) -> None:
        """Before the model reads anything more: a halted session ends the run here."""
        s = session()
        if s.halted_by is not None:
            raise RunStopped(
                f"halted by guardrail {s.halted_by!r}", stop_reason="guardrail", by=s.halted_by
            )

    async def prompt(self, text: Any) -> Any:
        """Judge what the person asked; returns what the model may read (masked, rewritten)."""
        s = self.session()
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
        # The person's words, as agent_loop notes them: the policy reads where a call's values
        # came from (theirs, a trusted tool's result, outside content).
        said = text if isinstance(text, str) else " ".join(t for t in text if isinstance(t, str))
        s.ledger.add_turn(said)
        return pr.use(text)

    async def prompt_texts(self, texts: list[str]) -> list[str]:
        """Judge a prompt made of text parts (a message's text blocks; one part is judged as a
        string): the parts the model may read, in the same number."""
        used = await self.prompt(texts[0] if len(texts) == 1 else texts)
        used = [used] if len(texts) == 1 else used
        if not isinstance(used, list) or len(used) != len(texts):
            raise ConfigurationError(
                "a guardrail replaced the prompt's text parts with something of another shape; "
                "a mask or rewrite of a list must give back a list of the same length"
            )
        return used

    async def gate(self, tool: str, args: Any, *, ask: str | None = None) -> CallGate:
        """Judge one call before it runs (parking on a person where asked): the first half of
        :meth:`call`, for a framework that runs the tool itself between two hooks. ``ask``
        names the framework's own approval mark (``pydantic-ai:requires_approval``): the call
        then needs a person's yes whatever the guardrails say, unless one refuses it."""
        s = self.session()
        specs = self.specs
        if ask is not None:
            why = f"{ask} marks this call as needing a person's yes"
            specs = (*specs, native(ask, "approve", why, placements=("tool-args",)))
        gate = await s.before_call(tool, args, guardrails=specs, options=self.options)
        if gate.halted:
            s.halt(gate.halted_by)
        return gate

    async def settle(
        self, gate: CallGate, invoke: Callable[[Any], Awaitable[Any]]
    ) -> tuple[CallOutcome, Any]:
        """Run a call :meth:`gate` let through with the arguments that may run, judge its
        result and record it once (its tool's labels on its result). Returns the outcome and
        what the tool returned. A tool's own exception is recorded and raised again: the
        framework handles it as it would unguarded."""
        try:
            raw = await invoke(gate.args)
        except Exception as err:
            await self.record(gate, error=str(err) or type(err).__name__)
            raise
        return await self.record(gate, raw), raw

    async def record(
        self, gate: CallGate, raw: Any = None, *, error: str | None = None
    ) -> CallOutcome:
        """Judge and record the result of a call :meth:`gate` let through that the framework
        ran itself, between two hooks (its tool's labels on its result); ``error`` says why
        the tool failed instead (recorded as failed; no result pass). A halt on the result
        halts the session."""
        s = self.session()
        described = self.tools.get(gate.tool) or s.described.get(gate.tool)
        labels = described.labels if described is not None else ()
        if error is not None:
            return await s.after_call(
                gate, None, guardrails=self.specs, ok=False, error=error, labels=labels,
                options=self.options,
            )  # fmt: skip
        out = await s.after_call(
            gate, raw, guardrails=self.specs, labels=labels, options=self.options
        )
        if out.halted:
            s.halt(out.verdict.by)
        return out

    async def shown_error(self, gate: CallGate, text: str) -> str:
        """What the model may read of a failed call's error (recorded by :meth:`record` with
        ``error=``): judged at the tool-result placement, as its result would be, since a
        tool's error can carry what its result would (a mask, a refusal, a halt apply)."""
        if not any(g.applies_to("tool-result") for g in self.specs):
            return text
        s = self.session()
        pr = await s.judge(
            "tool-result", text, guardrails=self.specs, tool=gate.tool, agent=self.agent,
            approval_timeout=self.options.approval_timeout, mode=self.options.mode,
        )  # fmt: skip
        v = pr.verdict
        if v.action == "halt":
            s.halt(v.by)
        if pr.tripped:
            return json.dumps(Refusal.of(v, gate.tool).for_model(), ensure_ascii=False)
        used = pr.use(text)
        return used if isinstance(used, str) else json.dumps(used, ensure_ascii=False)

    async def call(
        self,
        tool: str,
        args: Any,
        invoke: Callable[[Any], Awaitable[Any]],
        *,
        ask: str | None = None,
    ) -> tuple[CallOutcome, Any]:
        """One tool call through the seams: :meth:`gate`, then :meth:`settle` where it may
        run. Returns the outcome and what the tool returned (``None`` when it did not run)."""
        gate = await self.gate(tool, args, ask=ask)
        if not gate.runs:
            return gate.outcome(), None
        return await self.settle(gate, invoke)

    async def note(
        self,
        placement: Placement,
        by: str,
        action: NativeAction,
        reason: str,
        *,
        value: Any = None,
        tool: str | None = None,
    ) -> PassResult | CallGate:
        """Record what the framework decided itself (a guardrail of its own that rejected a
        call or tripped) as a verdict named ``by``, in a recorded pass: an audit row, the
        denials count and, for a ``halt``, the session halted (``DuraguardHaltedBy``). A
        refused call is recorded as a call that did not run."""
        s = self.session()
        spec = native(by, action, reason, placements=(placement,))
        if placement == "tool-args" and tool is not None:
            gate = await s.before_call(tool, value, guardrails=[spec], options=self.options)
            if action == "halt":
                s.halt(by)
            return gate
        pr = await s.judge(
            placement, to_jsonable_python(value), guardrails=[spec], tool=tool, agent=self.agent,
            approval_timeout=self.options.approval_timeout, mode=self.options.mode,
        )  # fmt: skip
        if action == "halt":
            s.halt(by)
        return pr

    async def answer(self, value: Any) -> PassResult:
        """Judge the final answer (parking on a person where asked; validation guardrails see
        the last tool results). A halt or a refusal ends the run; returns the pass (``use()``
        it: a mask or rewrite replaces the answer)."""
        self.stop_if_halted()
        s = self.session()
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
