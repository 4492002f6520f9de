"""Worker-side activities: one guardrail pass, one decision check, one model turn, the tools.

Everything a check needs that must not cross into workflow inputs (classifiers, tool schemas,
rule sheets, keys, API clients) lives in the :class:`Runtime` the plugin builds.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import inspect
import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from temporalio import activity

from . import _telemetry
from ._admit import admit
from ._approvers import fingerprint
from ._byref import Seen
from ._chain import first_break
from ._mistakes import unknown_model, unknown_tools
from ._model_step import bounded, judged_calls
from ._tool_step import fewer_findings, recordable, tool_activity
from ._types import (
    Context,
    PassResult,
    Placement,
    Subject,
    canonical_json,
)
from ._wire import (
    ASK_ACTIVITY,
    CHECK_ACTIVITY,
    MODEL_ACTIVITY,
    OPEN_ACTIVITY,
    SEAL_ACTIVITY,
    VERIFY_ACTIVITY,
    VERIFY_PLAN_ACTIVITY,
    AnswerCheck,
    CheckRequest,
    CheckResponse,
    Message,
    ModelRequest,
    ModelResponse,
    OpenedSession,
    OpenRequest,
    PendingAsk,
    PlanCheck,
    PromptCheck,
    SealedSession,
    SessionSnapshot,
    ToolInvocation,
    VerifyPlanRequest,
    VerifyRequest,
)
from .approvals import ApprovalCheck, ApproverKeys, verify
from .checks.policy.plan import PlanToken, verify_plan
from .conversations import ContextPolicy, ConversationStore, Window
from .engine import GuardrailError, run_pass
from .errors import (
    ConfigurationError,
    GuardrailFailed,
    MissingSessionKey,
)
from .guardrail import GuardrailSpec, Resources
from .tools import Tool

log = logging.getLogger("duraguard")

MAX_ASK_KEYS = 64
"""Approvers' keys recorded with one ask; with more people whose yes counts, their fingerprints
are recorded instead (about 19 bytes each, :attr:`PendingAsk.prints`), ..."""
MAX_ASK_PRINTS = 16_384
"""... up to this many (about 300 KB); past it the ask records neither, and the worker's check
decides every decision (each one a step, at most ``MAX_CHECKS_PER_ASK`` an ask)."""
MAX_JUDGED_IN_MODEL_STEP = 64 * 1024
"""The longest answer (characters) a model step judges itself; a longer one gets the answer's
pass of its own, which keeps a step's output within bounds however much it finds."""


class Runtime:
    """What the plugin lends its activities."""

    def __init__(
        self,
        *,
        resources: Resources,
        tools: Mapping[str, Tool],
        models: Mapping[str, Any],
        approvers: ApproverKeys | None,
        accept_unsigned: bool,
        admission: Any = None,
        session_key: tuple[str, bytes] | None = None,
        conversations: ConversationStore | None = None,
        context: ContextPolicy | None = None,
    ) -> None:
        self.session_key = session_key
        self.conversations = conversations
        self.context = context or Window()
        self.resources = resources
        self.admission = admission
        self.tools = dict(tools)
        self.models = dict(models)
        self.approvers = approvers
        self.accept_unsigned = accept_unsigned
        self.checks_run = 0
        """How many guardrail passes this worker evaluated (replay evaluates none)."""
        self.seen = Seen()
        """What this worker's checks were sent (sent once, then by reference)."""

    # -- duraguard.check ---------------------------------------------------------------
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

    async def check(self, request: CheckRequest) -> CheckResponse:
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

    # -- duraguard.verify-decision -----------------------------------------------------
    async def verify_decision(self, request: VerifyRequest) -> ApprovalCheck:
        checked = verify(
            request.decision,
            workflow_id=request.workflow_id,
            run_id=request.run_id,
            challenge=request.challenge,
            call_id=request.call_id,
            tool=request.tool,
            args=request.args,
            keys=self.approvers,
            now=time.time(),
            used_nonces=request.used_nonces,
            role=request.role,
            accept_unsigned=self.accept_unsigned,
        )
        return checked.model_copy(update={"tool": request.tool, "said": request.decision.reason})

    # -- duraguard.verify-plan -----------------------------------------------------------
    async def verify_plan(self, request: VerifyPlanRequest) -> PlanCheck:
        try:
            token = PlanToken.model_validate(request.token)
        except ValueError as err:
            return PlanCheck(ok=False, reason=f"the plan cannot be read: {str(err)[:200]}")
        if token.nonce in request.used_nonces:
            return PlanCheck(ok=False, reason="this plan's nonce was used before (a replayed plan)")
        bad = verify_plan(
            token,
            workflow_id=request.workflow_id,
            run_id=request.run_id,
            keys=self.approvers,
            now=time.time(),
        )
        if bad is not None:
            return PlanCheck(ok=False, reason=bad, approver=token.approver)
        return PlanCheck(ok=True, approver=token.approver, steps=len(token.steps))

    # -- duraguard.ask -------------------------------------------------------------------
    async def ask(self, asked: PendingAsk) -> PendingAsk:
        """Record an ask, draw its challenge (a decision must sign it, so it answers this ask of
        this run and nothing else) and name the keys whose yes can count for it."""
        who = sorted(
            (a.name, a.public_key)
            for a in (self.approvers or ())
            if asked.role is None or asked.role in a.roles
        )
        keys: dict[str, str] = {}
        prints: tuple[str, ...] = ()
        if len(who) <= MAX_ASK_KEYS:
            keys = {name: base64.b64encode(key).decode() for name, key in who}
        elif len(who) <= MAX_ASK_PRINTS:
            prints = tuple(sorted(fingerprint(name, key) for name, key in who))
        return asked.model_copy(
            update={
                "challenge": secrets.token_urlsafe(18),
                "keys": keys,
                "prints": prints,
                "unsigned_ok": self.accept_unsigned,
            }
        )

    # -- duraguard.seal-session / open-session -----------------------------------------
    def _key(self) -> tuple[str, bytes]:
        if self.session_key is None:
            raise MissingSessionKey(
                "carrying a session across continue-as-new needs a session key on the worker: "
                "DuraguardPlugin(session_key=...) or the DURAGUARD_SESSION_KEY variable"
            )
        return self.session_key

    async def seal(self, snapshot: SessionSnapshot) -> SealedSession:
        key_id, key = self._key()
        body = canonical_json(snapshot.model_dump(mode="json")).encode()
        mac = hmac.new(key, body, hashlib.sha256).hexdigest()
        return SealedSession(snapshot=snapshot, key_id=key_id, mac=mac)

    async def open(self, request: OpenRequest) -> OpenedSession:
        key_id, key = self._key()
        sealed = request.sealed
        if sealed.key_id != key_id:
            return OpenedSession(
                ok=False, reason=f"sealed under key {sealed.key_id!r}, not {key_id!r}"
            )
        body = canonical_json(sealed.snapshot.model_dump(mode="json")).encode()
        if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).hexdigest(), sealed.mac):
            return OpenedSession(
                ok=False, reason="the carried session was altered after it was sealed"
            )
        ledger = sealed.snapshot.ledger
        if ledger.session_id != request.workflow_id:
            return OpenedSession(
                ok=False,
                reason=f"the carried session belongs to {ledger.session_id!r}, not {request.workflow_id!r}",
            )
        brk = first_break(ledger.session_id, ledger.entries, ledger.base_hash)
        if brk is not None:
            return OpenedSession(ok=False, reason=f"the session record breaks at entry {brk}")
        return OpenedSession(ok=True)

    # -- duraguard.model ---------------------------------------------------------------
    async def model(self, request: ModelRequest) -> ModelResponse:
        provider_name, _, _ = request.model.partition(":")
        provider = self.models.get(provider_name)
        if provider is None:
            raise unknown_model(request.model, self.models)
        missing = unknown_tools(request.tools, self.tools)
        if missing is not None:
            raise missing
        offered = [self.tools[name] for name in request.tools]
        check, prompt, on_calls = request.answer_check, request.prompt_check, request.call_check
        # Verdicts come from this step's own checks, never from the provider.
        update: dict[str, Any] = {
            "answered": (),
            "answer_missing": False,
            "prompted": (),
            "prompt_missing": False,
            "called": (),
            "calls_missing": False,
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

    # -- activities --------------------------------------------------------------------
    def activities(self) -> list[Callable[..., Any]]:
        @activity.defn(name=CHECK_ACTIVITY)
        async def check(request: CheckRequest) -> CheckResponse:
            return await self.check(request)

        @activity.defn(name=VERIFY_ACTIVITY)
        async def verify_decision(request: VerifyRequest) -> ApprovalCheck:
            return await self.verify_decision(request)

        @activity.defn(name=VERIFY_PLAN_ACTIVITY)
        async def verify_plan(request: VerifyPlanRequest) -> PlanCheck:
            return await self.verify_plan(request)

        @activity.defn(name=ASK_ACTIVITY)
        async def ask(asked: PendingAsk) -> PendingAsk:
            return await self.ask(asked)

        @activity.defn(name=SEAL_ACTIVITY)
        async def seal_session(snapshot: SessionSnapshot) -> SealedSession:
            return await self.seal(snapshot)

        @activity.defn(name=OPEN_ACTIVITY)
        async def open_session(request: OpenRequest) -> OpenedSession:
            return await self.open(request)

        @activity.defn(name=MODEL_ACTIVITY)
        async def model(request: ModelRequest) -> ModelResponse:
            return await self.model(request)

        return [
            check,
            verify_decision,
            verify_plan,
            ask,
            seal_session,
            open_session,
            model,
            *(tool_activity(t, self) for t in self.tools.values()),
        ]


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
