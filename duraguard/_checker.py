"""The worker's guardrail passes: ``duraguard.check``, and the passes inside a tool's own step.

Admission first (who may reach the tool at all), then the engine's pass; a tool step's
arguments (``_inline``) and result are judged here too, with what this worker was sent before
(:class:`~duraguard._byref.Seen`: sent once, then by reference).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from temporalio import activity

from . import _telemetry
from ._admit import admit
from ._byref import Seen
from ._findings import recordable
from ._types import PassResult, Subject
from ._wire import CHECK_ACTIVITY, CheckRequest, CheckResponse, ToolInvocation
from .engine import GuardrailError, run_pass
from .errors import GuardrailFailed
from .guardrail import Resources
from .tools import Tool


class Checker:
    """The worker's guardrail passes, counted (replay evaluates none)."""

    def __init__(self, *, resources: Resources, admission: Any = None, seen: Seen) -> None:
        self.resources = resources
        self.admission = admission
        self.seen = seen
        """What this worker's checks were sent (sent once, then by reference)."""
        self.checks_run = 0
        """How many guardrail passes this worker evaluated (replay evaluates none)."""

    async def _admit(self, request: CheckRequest, subject: Subject) -> PassResult | None:
        """Who may reach the tool at all: the tool's own agents, admission guardrails, the registry."""
        if subject.placement not in ("admission", "tool-args") or not subject.tool:
            return None
        ctx = subject.context
        v = await admit(
            request.guardrails,
            ctx.principal,
            ctx.agent,
            subject.tool,
            self.resources,
            registry=self.admission,
            context=ctx,
        )
        if subject.placement == "tool-args" and v.action not in ("deny", "approve", "halt"):
            # Admitted: the call's own pass judges it (admission decides who may reach the tool;
            # it never replaces the arguments every other guardrail must judge).
            return None
        return PassResult(
            verdict=v,
            verdicts=(v,),
            subject_digest=subject.digest(),
            placement=subject.placement,
            tool=subject.tool,
            call_id=subject.call_id,
        )

    @activity.defn(name=CHECK_ACTIVITY)
    async def check(self, request: CheckRequest) -> CheckResponse:
        """One guardrail pass over the request's subjects (``duraguard.check``)."""
        if request.views_withheld:
            # Made while replaying, where the step's input is not sent again; this one was (its
            # record was lost): nothing is judged, and the workflow sends it with the views.
            return CheckResponse(
                results=(), purpose=request.purpose, turn=request.turn, withheld=True
            )
        results: list[PassResult] = []
        for subject in request.subjects:
            self.checks_run += 1
            try:
                admitted = await self._admit(request, subject)
                if admitted is not None:
                    results.append(admitted)
                    continue
                results.append(
                    recordable(await run_pass(request.guardrails, subject, self.resources))
                )
            except GuardrailError as err:
                raise GuardrailFailed(str(err)) from err.error
        _telemetry.record_pass(request.purpose, results)
        return CheckResponse(results=tuple(results), purpose=request.purpose, turn=request.turn)

    def with_guardrails(self, invocation: ToolInvocation) -> ToolInvocation | None:
        """``invocation`` with its check's guardrails, put back where it names them by reference
        (``None`` where this worker was never sent them: another worker, or a restart); guardrails
        sent in full are remembered for the run's later steps."""
        check = invocation.check
        assert check is not None
        specs = self.seen.specs_of(check.guardrails, invocation.guardrails_ref)
        if specs is None:
            return None
        if not invocation.guardrails_ref:
            return invocation
        try:
            return invocation.with_guardrails(specs)
        except ValidationError as err:
            raise GuardrailFailed(
                f"the inline check of call {invocation.call_id} cannot be judged: {err}"
            ) from None

    async def check_inline(self, invocation: ToolInvocation) -> tuple[PassResult, ...] | None:
        """The pass over a call's arguments inside its own tool step (``_inline``), the
        arguments judged being the ones the tool is given; ``None`` where an entry of the
        session view it was to take from those this worker has seen is not among them."""
        request = invocation.check
        assert request is not None
        first, *rest = request.subjects
        if first.placement != "tool-args" or first.call_id != invocation.call_id:
            raise GuardrailFailed(
                f"the inline check of call {invocation.call_id} judges {first.placement} of call "
                f"{first.call_id}; it must judge the call's own arguments"
            )
        # The step's own arguments and context: the subject carries neither (sent once).
        own = first.model_copy(update={"value": invocation.args, "context": invocation.context})
        found, view = self.seen.view_of(
            own.session,
            at=invocation.shown_at,
            bound=invocation.shown_digest,
            hashes=invocation.shown_entries,
            turns=invocation.shown_turns,
        )
        if not found:
            return None
        if view is not own.session:
            own = own.model_copy(update={"session": view})
        response = await self.check(request.model_copy(update={"subjects": (own, *rest)}))
        return None if response.withheld else response.results

    async def judge_result(self, invocation: ToolInvocation, tool: Tool, value: Any) -> PassResult:
        """The tool-result pass, inside the tool's own step (the raw value is never recorded)."""
        subject = Subject(
            placement="tool-result",
            value=value,
            tool=tool.name,
            call_id=invocation.call_id,
            context=invocation.context,
        )
        self.checks_run += 1
        try:
            judged = await run_pass(invocation.result_specs, subject, self.resources)
        except GuardrailError as err:
            raise GuardrailFailed(
                f"tool {tool.name!r} ran, but a guardrail on its result failed: {err}"
            ) from err.error
        _telemetry.record_pass("tool-result", [judged])
        return recordable(judged)


__all__ = ["Checker"]
