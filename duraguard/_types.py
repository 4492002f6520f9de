"""The vocabulary every layer shares: placements, actions, verdicts and the subject of a check.

Everything here is a pydantic model or a ``Literal`` alias, imports nothing from Temporal,
and crosses the workflow/activity boundary unchanged. The ``Literal`` vocabularies are in
:mod:`duraguard._literals`, what a check reads of its session (``SessionView``) in
:mod:`duraguard._session_view`; both are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from ._canonical import NotJSON as NotJSON
from ._canonical import call_digest as call_digest
from ._canonical import canonical_json as canonical_json
from ._canonical import digest as digest
from ._canonical import subject_digest as subject_digest
from ._compact import _Compact, _Model
from ._literals import ACTIONS as ACTIONS
from ._literals import PLACEMENTS as PLACEMENTS
from ._literals import REFUSING as REFUSING
from ._literals import REPLACING as REPLACING
from ._literals import Action as Action
from ._literals import OnError as OnError
from ._literals import Outcome as Outcome
from ._literals import Placement as Placement
from ._literals import StopReason as StopReason
from ._session_view import LedgerEntry as LedgerEntry
from ._session_view import PlanState as PlanState
from ._session_view import Provenance as Provenance
from ._session_view import SessionView as SessionView
from ._session_view import ToolRecord as ToolRecord


class Detection(_Compact):
    """One thing a guardrail looked for, and whether it was there."""

    rule: str
    detected: bool = True
    path: str | None = None
    """JSON Pointer to where in the value it was found, when it was found in a structure."""
    score: float | None = None
    detail: str | None = None
    start: int | None = None
    """Where in the string at ``path`` it was found: the first character's offset."""
    end: int | None = None
    """One past the last character's offset."""


class ApprovalAsk(_Model):
    """What a verdict of ``approve`` asks a person for."""

    role: str | None = None
    """The role whose yes counts (e.g. ``manager``); ``None`` means any known approver."""
    prompt: str | None = None
    """What the person is shown: the rule that asked and, where one applies, what it read."""
    expires_in_seconds: float | None = None


class Reservation(_Model):
    """Something a guardrail set aside for a call (e.g. budget): released if the tool fails."""

    resource: str
    """Which kind of resource, e.g. ``budget``; names the release/commit activities."""
    id: str
    data: dict[str, Any] = Field(default_factory=dict)


class Verdict(_Compact):
    """What one guardrail decided about one subject."""

    action: Action = "allow"
    outcome: Outcome = "complete"
    by: str | None = None
    """The guardrail that decided (its name)."""
    check: str | None = None
    """The part of that guardrail that decided, e.g. ``policy.order``."""
    detections: tuple[Detection, ...] = ()
    reason: str | None = None
    """Why, written for the model (and for an auditor with the right to read it)."""
    payload: Any = None
    """The replacement under ``mask`` / ``rewrite``."""
    ask: ApprovalAsk | None = None
    """What a person is asked, under ``approve``."""
    reservations: tuple[Reservation, ...] = ()
    """What this verdict set aside; the loop releases them if the call does not complete."""

    @property
    def refuses(self) -> bool:
        return self.action in REFUSING

    @property
    def replaces(self) -> bool:
        return self.action in REPLACING

    @classmethod
    def allow(cls, **kw: Any) -> Verdict:
        return cls(action="allow", **kw)

    @classmethod
    def deny(cls, reason: str, **kw: Any) -> Verdict:
        return cls(action="deny", reason=reason, **kw)

    @classmethod
    def halt(cls, reason: str, **kw: Any) -> Verdict:
        return cls(action="halt", reason=reason, **kw)

    @classmethod
    def approve(cls, reason: str, *, role: str | None = None, **kw: Any) -> Verdict:
        ask = kw.pop("ask", None) or ApprovalAsk(role=role, prompt=reason)
        return cls(action="approve", reason=reason, ask=ask, **kw)


class Grant(_Model):
    """A person's yes, verified by the one verifier (:func:`duraguard.approvals.verify`), bound
    to the call as it will run: a check that asked for a yes reads it instead of asking again."""

    approver: str
    roles: tuple[str, ...] = ()
    call_id: str
    call_digest: str
    """``call_digest(tool, args)`` of the call as it will run (a person's edits included)."""
    nonce: str

    def covers(self, tool: str | None, args: Any, role: str | None = None) -> bool:
        """Whether this yes is for exactly ``tool(args)``, from someone with ``role``."""
        if role is not None and role not in self.roles:
            return False
        try:
            return self.call_digest == call_digest(tool, args)
        except NotJSON:
            return False


class Context(_Compact):
    """Who and where: the principal the work runs for, the agent calling, the run."""

    principal: str | None = None
    agent: str | None = None
    workflow_id: str | None = None
    run_id: str | None = None
    workflow_type: str | None = None

    def in_run(self, workflow_id: str, run_id: str, workflow_type: str) -> Context:
        """This context with the run's ids, which a step's input leaves out for the worker to
        fill in from the step's own activity info."""
        return self.model_copy(
            update={"workflow_id": workflow_id, "run_id": run_id, "workflow_type": workflow_type}
        )


ToolKind = Literal["read", "write", "send"]


class ToolDescription(_Compact):
    """A tool defined in an agent framework (not registered with the plugin), as the policy
    reads it: what a tool's catalogue entry would say, taken from the framework's definition in
    workflow code (:mod:`duraguard._describe`). A subject of a call carries its tool's
    description in full and the kinds of the session's other described tools; the worker puts
    them beside its own catalogue, which wins (a tool registered with the plugin, the catalogue
    file, the tool kinds file)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] | None = None
    kind: ToolKind | None = None
    """A kind its definition marks it with (``None``: inferred from the rest, as for any
    unmarked tool)."""
    labels: tuple[str, ...] = ()
    """Labels its results carry (``web``, ``email``: outside content)."""
    annotations: dict[str, bool] | None = None
    roles: dict[str, str] = Field(default_factory=dict)
    """Argument name -> ``destination``, ``text`` or ``value``, where the name does not say."""

    @property
    def meta(self) -> dict[str, Any]:
        """The roles and annotations where a tool registered in code keeps them (its
        ``meta``), so the worker's catalogue reads a description as it reads such a tool."""
        out: dict[str, Any] = {}
        if self.roles:
            out["roles"] = dict(self.roles)
        if self.annotations is not None:
            out["annotations"] = dict(self.annotations)
        return out


class Subject(_Compact):
    """What one guardrail pass judges."""

    placement: Placement
    value: Any = None
    tool: str | None = None
    call_id: str | None = None
    input_schema: dict[str, Any] | bool | None = Field(default=None, alias="schema")
    context: Context = Field(default_factory=Context)
    session: SessionView | None = None
    grant: Grant | None = None
    """A person's verified yes for this exact call, when the pass runs after one."""
    preview: bool = False
    """A preview of a person's edits: an ``approve`` does not end the pass, so every later
    guardrail says whether it would refuse. Nothing runs on a preview's verdict."""
    addresses: tuple[str, ...] = ()
    """At ``tool-args``: the JSON Pointers of the arguments that say where the call goes (its
    recipient, payee, URL, host, path, channel, account), set by the engine on the worker
    (:mod:`duraguard._addresses`). A guardrail never changes them: a ``mask`` or ``rewrite``
    that would refuses the call instead. A content check reads them to tell where a call goes
    from what it carries."""
    described: tuple[ToolDescription, ...] = ()
    """At ``tool-args``, a framework's tool: its description (first), then the session's other
    framework tools by name and kind (:class:`ToolDescription`)."""
    prejudged: tuple[str, ...] = ()
    """Guardrails that judged this value already, before it was first recorded (the model
    step that proposed the call): the first ones of the pass, which it does not run again.
    The value is then as they left it (masked, say)."""

    def digest(self) -> str:
        """A stable digest of what is judged (placement, tool, value), for binding a verdict."""
        return subject_digest(self.placement, self.tool, canonical_json(self.value))


class PassResult(_Compact):
    """The recorded outcome of one guardrail pass over one subject."""

    verdict: Verdict
    """The verdict that decided the pass (``allow`` when nothing objected)."""
    verdicts: tuple[Verdict, ...] = ()
    """Every verdict given, in order, for the audit."""
    value: Any = None
    """The replacement under mask/rewrite (``None`` unless :attr:`replaced`: the value offered
    is never echoed back into history)."""
    replaced: bool = False
    """True when a guardrail replaced the value: use :attr:`value` instead of what was offered."""
    subject_digest: str = ""
    skipped: tuple[str, ...] = ()
    placement: Placement | None = None
    tool: str | None = None
    call_id: str | None = None
    """Guardrails that do not declare this placement."""

    @property
    def tripped(self) -> bool:
        return self.verdict.refuses

    def audited(self, *, every: bool = False) -> tuple[Verdict, ...]:
        """The verdicts of this pass an audit shows, each once, in order: the deciding one (an
        ``allow`` only with ``every``, or when not every guardrail could run) and every other
        that did something: an ``observe``, a ``mask`` or ``rewrite`` a later guardrail went on
        from (a mask before an ask), an ``approve`` a preview went on past. The one list
        :attr:`AgentResult.verdicts` and ``duraguard audit`` are both made from."""
        decided = self.verdict
        acted = [v for v in self.verdicts if v.action != "allow"]
        if decided in acted:
            return tuple(acted)
        if every or decided.action != "allow" or decided.outcome != "complete":
            return (decided, *acted)
        return tuple(acted)

    @property
    def replaced_by(self) -> Verdict | None:
        """The verdict whose replacement the pass ran with (the last mask or rewrite), if any."""
        if not self.replaced:
            return None
        return next((v for v in reversed(self.verdicts) if v.action in REPLACING), None)

    def use(self, offered: Any) -> Any:
        """What to go on with: the replacement where one was made, else ``offered``."""
        return self.value if self.replaced else offered

    def with_egress(self, egress: PassResult) -> PassResult:
        """This call's result with the verdicts on what it would reach outside (``egress``):
        an egress refusal decides where the arguments' own verdicts did not."""
        merged = self.verdicts + egress.verdicts
        if egress.tripped and not self.tripped:
            return self.model_copy(update={"verdict": egress.verdict, "verdicts": merged})
        if egress.verdicts:
            return self.model_copy(update={"verdicts": merged})
        return self

    @property
    def outcome(self) -> Outcome:
        return self.verdict.outcome

    def then(self, later: PassResult) -> PassResult:
        """This pass over the first guardrails of a list (:attr:`Subject.prejudged`), followed by
        ``later``, the pass of the rest over the value as this one left it: one result, as one
        pass over the whole list gives (the first refusal or ask decides; a later replacement
        is the value; ``partial`` where any verdict is)."""
        if self.verdict.refuses:
            return self
        verdicts = self.verdicts + later.verdicts
        decided = later.verdict
        if not later.verdict.refuses and not later.replaced and self.replaced:
            decided = self.verdict
        if decided.outcome == "complete" and any(v.outcome != "complete" for v in verdicts):
            decided = decided.model_copy(update={"outcome": "partial"})
        replaced = later.replaced or (self.replaced and decided.action not in ("deny", "halt"))
        return later.model_copy(
            update={
                "verdict": decided,
                "verdicts": verdicts,
                "value": later.value if later.replaced else (self.value if replaced else None),
                "replaced": replaced,
                "skipped": tuple(dict.fromkeys(self.skipped + later.skipped)),
            }
        )


def merge_egress(
    results: Sequence[PassResult], calls: int, egress_of: Sequence[int]
) -> list[PassResult]:
    """One result per call: its arguments' result, with its egress result where it had one
    (``results`` holds the calls' results, then the egress results of calls ``egress_of``)."""
    out = list(results[:calls])
    for k, egress in zip(egress_of, results[calls:], strict=True):
        out[k] = out[k].with_egress(egress)
    return out


def one_call(results: Sequence[PassResult]) -> PassResult:
    """The verdict on one call from its pass: its arguments' result, then (if there is one) the
    result on what it would reach outside."""
    return merge_egress(results, 1, [0] * (len(results) - 1))[0]
