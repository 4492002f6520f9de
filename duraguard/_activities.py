"""Worker-side activities: one guardrail pass, one decision check, one model turn, the tools.

Everything a check needs that must not cross into workflow inputs (classifiers, tool schemas,
rule sheets, keys, API clients) lives in the :class:`Runtime` the plugin builds.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import inspect
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic_core import to_jsonable_python
from temporalio import activity
from temporalio.exceptions import ApplicationError

from . import _telemetry
from ._chain import first_break
from ._types import (
    Detection,
    LedgerEntry,
    NotJSON,
    PassResult,
    SessionView,
    Subject,
    Verdict,
    canonical_json,
    merge_egress,
)
from ._wire import (
    ASK_ACTIVITY,
    CHECK_ACTIVITY,
    MODEL_ACTIVITY,
    OPEN_ACTIVITY,
    SEAL_ACTIVITY,
    VERIFY_ACTIVITY,
    VERIFY_PLAN_ACTIVITY,
    CheckRequest,
    CheckResponse,
    ModelRequest,
    ModelResponse,
    OpenedSession,
    OpenRequest,
    PendingAsk,
    PlanCheck,
    SealedSession,
    SessionSnapshot,
    ToolInvocation,
    ToolOutput,
    VerifyPlanRequest,
    VerifyRequest,
)
from .approvals import ApprovalCheck, ApproverKeys, verify
from .conversations import ContextPolicy, ConversationStore, Window
from .engine import GuardrailError, run_pass
from .errors import (
    BadToolArguments,
    ConfigurationError,
    GuardrailFailed,
    MissingSessionKey,
    ResultNotRecorded,
    UnknownModel,
)
from .guardrail import Resources
from .tools import _KEY, Tool

log = logging.getLogger("duraguard")

MAX_ASK_KEYS = 64
"""Approvers' keys recorded with one ask (more people than this: the worker's check decides)."""
MAX_SEEN_ENTRIES = 16_384
"""Session entries a worker keeps for inline checks (about 0.5 KB to a few KB each)."""
MAX_RESULT_BYTES = 1_048_576
"""The largest tool result a step records (canonical JSON); a larger one fails the call, not
retried: the tool ran, and running it again would repeat its effect."""


class SeenEntries:
    """Session entries this worker's checks were shown, by session and hash (most recent
    :data:`MAX_SEEN_ENTRIES`): an inline check is sent only the entries it has not seen."""

    def __init__(self) -> None:
        self._by_hash: OrderedDict[tuple[str, str], LedgerEntry] = OrderedDict()

    def remember(self, view: SessionView | None) -> None:
        if view is None:
            return
        for e in view.entries:
            key = (view.session_id, e.entry_hash)
            self._by_hash[key] = e
            self._by_hash.move_to_end(key)
        while len(self._by_hash) > MAX_SEEN_ENTRIES:
            self._by_hash.popitem(last=False)

    def restore(self, view: SessionView | None, hashes: Sequence[str]) -> SessionView | None:
        """``view`` with the entries ``hashes`` put back, in order; ``None`` if one is unknown.
        (Each is checked again by the guardrails that read it: its hash binds its content.)"""
        if view is None:
            return None
        found = [self._by_hash.get((view.session_id, h)) for h in hashes]
        if any(e is None for e in found):
            return None
        entries = sorted([*view.entries, *(e for e in found if e is not None)], key=_index)
        return view.model_copy(update={"entries": tuple(entries)})


def _index(e: LedgerEntry) -> int:
    return e.index


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
        self.entries = SeenEntries()

    # -- duraguard.check ---------------------------------------------------------------
    async def _admit(self, request: CheckRequest, subject: Subject) -> PassResult | None:
        """Who may reach the tool at all: the tool's own agents, admission guardrails, the registry."""
        from .admission import admit

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
        results: list[PassResult] = []
        for subject in request.subjects:
            self.checks_run += 1
            self.entries.remember(subject.session)
            try:
                admitted = await self._admit(request, subject)
                if admitted is not None:
                    results.append(admitted)
                    continue
                results.append(await run_pass(request.guardrails, subject, self.resources))
            except GuardrailError as err:
                raise GuardrailFailed(str(err)) from err.error
        _telemetry.record_pass(request.purpose, results)
        return CheckResponse(results=tuple(results), purpose=request.purpose, turn=request.turn)

    async def check_inline(self, invocation: ToolInvocation) -> tuple[PassResult, ...] | None:
        """Check mode ``inline``: the pass over a call's arguments inside its own tool step, the
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
        own = first.model_copy(update={"value": invocation.args})
        if invocation.shown_entries:
            view = self.entries.restore(own.session, invocation.shown_entries)
            if view is None:
                return None
            own = own.model_copy(update={"session": view})
        response = await self.check(request.model_copy(update={"subjects": (own, *rest)}))
        return response.results

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
            judged = await run_pass(invocation.result_guardrails, subject, self.resources)
        except GuardrailError as err:
            raise GuardrailFailed(
                f"tool {tool.name!r} ran, but a guardrail on its result failed: {err}"
            ) from err.error
        _telemetry.record_pass("tool-result", [judged])
        return judged

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
        from .checks.policy.plan import PlanToken, verify_plan

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
        keys = {
            a.name: base64.b64encode(a.public_key).decode()
            for a in (self.approvers or ())
            if asked.role is None or asked.role in a.roles
        }
        return asked.model_copy(
            update={
                "challenge": secrets.token_urlsafe(18),
                "keys": dict(sorted(keys.items())[:MAX_ASK_KEYS]),
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
            known = ", ".join(sorted(self.models)) or "none"
            raise UnknownModel(
                f"no model provider {provider_name!r} is registered on this worker (registered: "
                f"{known}); pass DuraguardPlugin(models={{{provider_name!r}: ...}})",
            )
        offered = [self.tools[name] for name in request.tools if name in self.tools]
        if request.conversation is not None:
            request = await self._conversation(request)
        result = provider.complete(request, offered)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, ModelResponse):
            result = ModelResponse.model_validate(result)
        return result

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


def _recordable(tool: Tool, result: Any) -> tuple[Any, int]:
    """The result as JSON, checked inside the tool's own step: a result that cannot be recorded
    fails the call once, never retried (the tool's effect happened; a retry would repeat it)."""
    try:
        value = to_jsonable_python(result)
        size = len(canonical_json(value).encode())
    except (NotJSON, ValueError, TypeError) as err:
        raise ResultNotRecorded(
            f"tool {tool.name!r} ran, but its result cannot be recorded as JSON ({err}); its "
            "effect happened and it is not run again. Return plain data (dicts, lists, str, "
            "numbers) or a pydantic model",
        ) from None
    if size > MAX_RESULT_BYTES:
        raise ResultNotRecorded(
            f"tool {tool.name!r} ran, but its result is {size:,} bytes, over the "
            f"{MAX_RESULT_BYTES:,} a step records; its effect happened and it is not run again. "
            "Return less (a reference to the data, a page of it)",
        )
    return value, size


DETECTIONS_KEPT = 100
"""Findings a verdict of a tool's step keeps when the step's output would be too large (the
first ones, and one more saying how many were left out)."""
MAX_OUTPUT_BYTES = MAX_RESULT_BYTES + 512 * 1024
"""The most a tool's step returns: its result (or the replacement) and the verdicts on it."""


def _bounded(tool: Tool, out: ToolOutput, size: int) -> ToolOutput:
    """``out`` within :data:`MAX_OUTPUT_BYTES`: a step whose output the SDK refused to upload
    would be retried, and the tool with it (its effect repeated)."""
    judged = out.judged
    if judged is None or (
        size < 64 * 1024 and all(len(v.detections) <= DETECTIONS_KEPT for v in judged.verdicts)
    ):
        return out  # small: measuring it would cost more than it could save
    if len(out.model_dump_json()) <= MAX_OUTPUT_BYTES:
        return out
    verdicts = tuple(_fewer(v) for v in judged.verdicts)
    decided = next((v for v in verdicts if v.by == judged.verdict.by), _fewer(judged.verdict))
    out = out.model_copy(
        update={"judged": judged.model_copy(update={"verdicts": verdicts, "verdict": decided})}
    )
    total = len(out.model_dump_json())
    if total > MAX_OUTPUT_BYTES:
        raise ResultNotRecorded(
            f"tool {tool.name!r} ran, but its result with its checks' findings is {total:,} "
            f"bytes, over the {MAX_OUTPUT_BYTES:,} a step returns; its effect happened and it is "
            "not run again. Return less (a reference to the data, a page of it)",
        )
    return out


def _fewer(v: Verdict) -> Verdict:
    if len(v.detections) <= DETECTIONS_KEPT:
        return v
    left = len(v.detections) - DETECTIONS_KEPT
    note = Detection(rule="detections.truncated", detail=f"{left} more findings not recorded")
    return v.model_copy(update={"detections": (*v.detections[:DETECTIONS_KEPT], note)})


def tool_activity(tool: Tool, runtime: Runtime | None = None) -> Callable[..., Any]:
    """The activity that runs ``tool``: named after it, one input model, sync tools in a thread,
    its result made recordable and judged (``result_guardrails``) before it leaves the step."""
    is_async = inspect.iscoroutinefunction(tool.fn)
    signature = inspect.signature(tool.fn)
    params = signature.parameters
    takes_context = "duraguard_context" in params

    @activity.defn(name=tool.name)
    async def run(invocation: ToolInvocation) -> ToolOutput:
        args = invocation.args
        checked: tuple[PassResult, ...] = ()
        if invocation.check is not None:
            if runtime is None:
                # Nothing here can judge the arguments: the tool does not run, and the workflow
                # judges them in a pass of its own.
                return ToolOutput(ran=False)
            judged_args = await runtime.check_inline(invocation)
            if judged_args is None:
                return ToolOutput(ran=False, missing=True)
            checked = judged_args
            decided = merge_egress(checked, 1, range(len(checked) - 1))[0]
            if decided.tripped:
                return ToolOutput(ran=False, checked=checked)
            args = decided.use(args)
        if not isinstance(args, dict):
            raise BadToolArguments(
                f"tool {tool.name!r} takes an object of arguments; got {type(args).__name__}",
            )
        kwargs = dict(args)
        if takes_context:
            kwargs["duraguard_context"] = invocation.context
        try:
            signature.bind(**kwargs)
        except TypeError as err:
            raise BadToolArguments(
                f"tool {tool.name!r} cannot take these arguments: {err}",
            ) from None
        info = activity.info()
        key = (
            invocation.idempotency_key
            or f"{info.workflow_id}/{info.workflow_run_id}/{info.activity_id}"
        )
        token = _KEY.set(key)
        try:
            if is_async:
                result = await tool.fn(**kwargs)
            else:
                result = await asyncio.to_thread(tool.fn, **kwargs)
        except ApplicationError:
            raise
        except Exception as err:
            # The tool's own attempt budget holds whatever retry policy the workflow asked for.
            if info.attempt >= tool.max_attempts:
                raise ApplicationError(
                    f"{type(err).__name__}: {err} (after {tool.max_attempts} attempt(s))",
                    type=type(err).__name__,
                    non_retryable=True,
                ) from err
            raise
        finally:
            _KEY.reset(token)
        value, size = _recordable(tool, result)
        if not invocation.result_guardrails or runtime is None:
            return ToolOutput(result=value, labels=tool.labels, checked=checked)
        judged = await runtime.judge_result(invocation, tool, value)
        # A replacement travels once (in ``judged``); a refused result not at all.
        shown = None if judged.tripped or judged.replaced else value
        out = ToolOutput(result=shown, labels=tool.labels, judged=judged, checked=checked)
        return _bounded(tool, out, size)

    return run


def tools_by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    out: dict[str, Tool] = {}
    for t in tools:
        if not isinstance(t, Tool):
            raise ConfigurationError(
                f"DuraguardPlugin(tools=[...]) takes tools declared with @duraguard.tool; got "
                f"{type(t).__name__}"
            )
        if t.name in out:
            raise ConfigurationError(f"two tools are named {t.name!r}; tool names must be unique")
        out[t.name] = t
    return out
