"""What crosses between workflow code and the worker: activity inputs and outputs, handler
and search attribute names. Activity names are history: never rename one.

A model step's input and output are in :mod:`duraguard._wire_model`, a person's part (asks,
decisions and plans verified, edit previews, audit rows) in :mod:`duraguard._wire_people`, a
session carried across continue-as-new in
:mod:`duraguard._wire_carry`; all three are re-exported here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from ._byref import digest, entries_digest, specs_ref
from ._byref import turns_digest as turns_digest
from ._result_keys import ResultKeys
from ._types import (
    Context,
    PassResult,
    StopReason,
    Subject,
    Verdict,
)
from ._wire_base import Wire as _Wire
from ._wire_carry import OpenedSession as OpenedSession
from ._wire_carry import OpenRequest as OpenRequest
from ._wire_carry import SealedSession as SealedSession
from ._wire_carry import SessionSnapshot as SessionSnapshot
from ._wire_model import AnswerCheck as AnswerCheck
from ._wire_model import Message as Message
from ._wire_model import ModelRequest as ModelRequest
from ._wire_model import ModelResponse as ModelResponse
from ._wire_model import PromptCheck as PromptCheck
from ._wire_model import ToolCall as ToolCall
from ._wire_people import AuditRow as AuditRow
from ._wire_people import EditsPreview as EditsPreview
from ._wire_people import EditsPreviewRequest as EditsPreviewRequest
from ._wire_people import PendingAsk as PendingAsk
from ._wire_people import PlanCheck as PlanCheck
from ._wire_people import VerifyPlanRequest as VerifyPlanRequest
from ._wire_people import VerifyRequest as VerifyRequest
from ._wire_people import decided_by as decided_by
from .approvals import DECIDE as DECIDE
from .approvals import ApprovalCheck, Decision
from .guardrail import GuardrailSpec

# Activity names (stable, namespaced).
CHECK_ACTIVITY = "duraguard.check"
MODEL_ACTIVITY = "duraguard.model"
VERIFY_ACTIVITY = "duraguard.verify-decision"
SEAL_ACTIVITY = "duraguard.seal-session"
OPEN_ACTIVITY = "duraguard.open-session"
VERIFY_PLAN_ACTIVITY = "duraguard.verify-plan"
ASK_ACTIVITY = "duraguard.ask"
"""Records an ask in history (and draws its challenge): what ``approve --signal`` and the audit
read when no worker can answer a query."""

# The summary of the timer that expires an ask: the audit reads an expiry from it.
EXPIRY_SUMMARY = "duraguard ask expires:"

# Workflow handler names.
PREVIEW_EDITS = "duraguard.preview-edits"  # update, payload: EditsPreviewRequest -> EditsPreview
PREVIEW_PURPOSE = "edits-preview"
"""The purpose of the recorded pass that previews a person's edits: it decides nothing."""
APPROVE_PLAN = "duraguard.plan"  # update, payload: a signed PlanToken -> PlanCheck
PENDING_QUERY = "duraguard.pending"  # -> list[PendingAsk]
VERDICTS_QUERY = "duraguard.verdicts"  # -> list[AuditRow]

# Search attributes (registered by `duraguard server` and the test fixtures).
SA_PENDING = "DuraguardPending"  # Int: calls waiting for a person
SA_HALTED_BY = "DuraguardHaltedBy"  # Keyword: the guardrail that halted the run
SA_DENIALS = "DuraguardDenials"  # Int: calls refused so far
SEARCH_ATTRIBUTES: dict[str, str] = {SA_PENDING: "Int", SA_HALTED_BY: "Keyword", SA_DENIALS: "Int"}

# Header carrying the principal across client, workflow, activity, child and continue-as-new.
PRINCIPAL_HEADER = "duraguard-principal"


class CheckRequest(_Wire):
    """Input of ``duraguard.check``: one pass of the listed guardrails over each subject."""

    guardrails: tuple[GuardrailSpec, ...]
    subjects: tuple[Subject, ...]
    purpose: str = ""
    turn: int = 0
    """What the pass is for, e.g. ``tool-args``, ``edits``, ``tool-result``."""

    @property
    def views_withheld(self) -> bool:
        """Whether a subject's session view was withheld (made while replaying)."""
        return any(s.session is not None and s.session.withheld for s in self.subjects)


class CheckResponse(_Wire):
    """Output of ``duraguard.check``: one result per subject, in order."""

    results: tuple[PassResult, ...]
    purpose: str = ""
    turn: int = 0
    withheld: bool = Field(default=False, exclude_if=lambda v: not v)
    """Nothing was judged: a subject's session view was withheld (see
    :attr:`~duraguard._types.SessionView.withheld`); the step is sent again with the views."""


# The references of "sent once, then by reference" (:mod:`duraguard._byref`), by their old names.
shown_digest = entries_digest
specs_ref_of = digest
specs_ref_for = specs_ref


class ToolInvocation(_Wire):
    """Input of a tool activity (named after the tool)."""

    call_id: str
    args: dict[str, Any]
    context: Context = Field(default_factory=Context)
    idempotency_key: str = Field(default="", exclude_if=lambda v: not v)
    """Stable for this call across retries and replays: :func:`duraguard.idempotency_key`.
    Left out where it is ``workflow id/run id/call id`` of the step's own run (a run that began
    its chain): the worker makes it from the step's activity info (:meth:`completed`)."""
    result_guardrails: tuple[GuardrailSpec, ...] = ()
    """Guardrails to judge the result with inside this same step, before it is recorded: a
    masked value never reaches history, and the allow path needs no second step."""
    agent: str | None = None
    check: CheckRequest | None = None
    """Judged in the tool's step (``_inline``): the pass over this call's arguments, judged
    inside this same step before the tool runs (the tool runs only when it allows). Its first
    subject is the call's arguments and carries no value: the step judges :attr:`args`; a
    second subject, where there is one, is what the call would reach outside (``egress``)."""
    shown_at: tuple[int, ...] = Field(default=(), exclude_if=lambda v: not v)
    """Judged in the tool's step (``_inline``): entries of the session view (by index) left out
    of :attr:`check` because an earlier check step of this run showed them in full; the worker
    takes them from those it was shown, and judges nothing where one is missing or where their
    hashes do not make :attr:`shown_digest`."""
    shown_digest: str = Field(default="", exclude_if=lambda v: not v)
    """:func:`~duraguard._byref.entries_digest` of the hashes of the entries :attr:`shown_at` names, in order."""
    shown_turns: str = Field(default="", exclude_if=lambda v: not v)
    """Judged in the tool's step (``_inline``): the person's turns of the session view, left
    out of :attr:`check` because an earlier step of this run was shown them, by
    :func:`~duraguard._byref.turns_digest` (a prompt is sent once a run, however many calls it leads to)."""
    shown_entries: tuple[str, ...] = Field(default=(), exclude_if=lambda v: not v)
    """The same by hash, as steps scheduled before :attr:`shown_at` name them (about 67 bytes
    an entry where an index takes 3 to 6)."""
    results_by_check: tuple[int, ...] = Field(default=(), exclude_if=lambda v: not v)
    """Judged in the tool's step (``_inline``): the result guardrails as positions in
    :attr:`check`'s guardrails, where every one of them is there (sent once, not twice)."""
    guardrails_ref: str = Field(default="", exclude_if=lambda v: not v)
    """Judged in the tool's step (``_inline``): :attr:`check`'s guardrails by reference
    (:func:`~duraguard._byref.specs_ref`), left out of it because an earlier step of this run was sent them in
    full; the worker takes them from those it has been sent, and judges nothing where it has not."""
    result_keys: bool = Field(default=False, exclude_if=lambda v: not v)
    """Send the result's keys back (:attr:`ToolOutput.noted`): the run started with the patch
    that reads them (:data:`~duraguard._patches.RESULT_KEYS`)."""
    rest: bool = Field(default=False, exclude_if=lambda v: not v)
    """Where the result is too large to note whole, read its unread rest and send the flags it
    carries (:attr:`ResultKeys.rest <duraguard._result_keys.ResultKeys.rest>`, in
    :attr:`ToolOutput.noted`) even for a trusted tool's result: outside content has entered the
    session, and a result given values from it is read as outside content. (A labelled tool's
    result has its rest read wherever :attr:`result_keys` asks.) A run that started with
    :data:`~duraguard._patches.REST_IN_STEPS`; in an earlier one the workflow reads it."""
    keep: bool = Field(default=False, exclude_if=lambda v: not v)
    """Keep the result, as the model will read it, in the worker's conversation store for the
    model step that follows (:mod:`duraguard._kept_results`), and say so
    (:attr:`ToolOutput.kept`): an ``agent_loop`` run that started with
    :data:`~duraguard._patches.KEPT_RESULTS`."""

    @model_validator(mode="after")
    def _results_by_check_name_the_checks_specs(self) -> ToolInvocation:
        # Checked when the step reads its input, before the tool runs: a position that names
        # nothing would leave the result unjudged. (By reference: once the worker has put the
        # guardrails back, by :meth:`with_guardrails`.)
        if self.guardrails_ref:
            if self.check is None or self.check.guardrails:
                raise ValueError(
                    "guardrails_ref names the check's guardrails: the check must be there and "
                    "carry no guardrails of its own"
                )
            return self
        if self.results_by_check:
            n = len(self.check.guardrails) if self.check is not None else 0
            if self.result_guardrails or any(not 0 <= i < n for i in self.results_by_check):
                raise ValueError(
                    f"results_by_check {list(self.results_by_check)} must name positions among "
                    f"the check's {n} guardrails, with no result_guardrails beside them"
                )
        return self

    def completed(self, workflow_id: str, run_id: str, workflow_type: str) -> ToolInvocation:
        """This invocation with what the workflow left out for the worker to fill in from the
        step's activity info: the run's ids in :attr:`context`, and the idempotency key."""
        ctx = self.context
        if ctx.workflow_id is not None and self.idempotency_key:
            return self
        update: dict[str, Any] = {}
        if ctx.workflow_id is None:
            update["context"] = ctx.in_run(workflow_id, run_id, workflow_type)
        if not self.idempotency_key:
            update["idempotency_key"] = f"{workflow_id}/{run_id}/{self.call_id}"
        return self.model_copy(update=update)

    def with_guardrails(self, specs: tuple[GuardrailSpec, ...]) -> ToolInvocation:
        """This invocation with the guardrails its reference names put back (and checked as if
        they had been sent)."""
        assert self.check is not None
        check = self.check.model_copy(update={"guardrails": specs})
        return ToolInvocation.model_validate({**dict(self), "check": check, "guardrails_ref": ""})

    @property
    def result_specs(self) -> tuple[GuardrailSpec, ...]:
        """The guardrails that judge the tool's result."""
        if self.results_by_check and self.check is not None:
            return tuple(self.check.guardrails[i] for i in self.results_by_check)
        return self.result_guardrails


class ToolOutput(_Wire):
    """Output of a tool activity: the tool's result (as judged), and the labels it carries."""

    result: Any = None
    labels: tuple[str, ...] = ()
    """E.g. ``web`` or ``email``: outside content, which the policy tracks through the session."""
    judged: PassResult | None = None
    """The tool-result pass run inside the step; ``result`` is then what it let through (a
    refused result is replaced by ``None`` and never recorded)."""
    checked: tuple[PassResult, ...] = ()
    """Judged in the tool's step (``_inline``): the results of the pass over the arguments
    (:attr:`ToolInvocation.check`), in the order of its subjects; empty when the step judged
    nothing (a worker without duraguard's runtime: the tool did not run either)."""
    ran: bool = True
    """False when the tool did not run: its inline check refused or asked, or judged nothing."""
    missing: bool = False
    """The step judged nothing: a session entry or the guardrails it was to take from those it
    had been sent were not among them (another worker, or a restart). The workflow judges the
    call in a pass."""
    noted: ResultKeys | None = Field(default=None, exclude_if=lambda v: v is None)
    """The keys the result (as the model reads it) is noted under as a trusted result, worked
    out in the step (:mod:`duraguard._result_keys`) where :attr:`ToolInvocation.result_keys`
    asked for them: the workflow notes these instead of reading it again, and so does a replay.
    For a labelled tool's result, only the flags of its unread rest (see
    :attr:`ToolInvocation.rest`; taken in a run that started with
    :data:`~duraguard._patches.REST_IN_STEPS`). ``None`` (left out, as a worker of an earlier version writes
    the output) where not asked, for a labelled tool's result with none to send, a refused one,
    one whose keys could not be worked out, and where the output would be over
    :data:`~duraguard._tool_step.MAX_OUTPUT_BYTES` with them (the flags alone are kept there);
    the workflow then reads the result itself."""

    @field_validator("noted", mode="wrap")
    @classmethod
    def _noted_as_read(cls, value: Any, read: ValidatorFunctionWrapHandler) -> ResultKeys | None:
        # Keys this version cannot read (a field of another type, from a foreign or newer
        # worker) are not taken: the workflow reads the result itself, and the run goes on.
        try:
            noted: ResultKeys | None = read(value)
        except ValidationError:
            return None
        return noted

    kept: bool = Field(default=False, exclude_if=lambda v: not v)
    """The step kept the result as the model reads it (the tool's, or a guardrail's
    replacement) in the conversation store (:attr:`ToolInvocation.keep`)."""


class Bail(_Wire):
    """A tool result that ends the loop: the agent deciding it is done."""

    bail: Literal[True] = True
    answer: Any = None


class LoopState(_Wire):
    """What an ``agent_loop`` hands the next run when it continues-as-new."""

    sealed: SealedSession
    conversation: str
    step: int
    turn: int
    """Model turns already taken (they count against ``max_iterations``)."""
    offered: tuple[str, ...]
    corrections: int = 0
    pending: tuple[Message, ...] = ()
    """Messages not yet sent to the model (the last turn's tool results)."""
    runs: int = 1
    """How many runs the loop has taken so far."""


class AgentResult(_Wire):
    """What :func:`duraguard.agent_loop` returns."""

    stop_reason: StopReason
    answer: Any = None
    halted_by: str | None = None
    iterations: int = 0
    messages: tuple[Message, ...] = ()
    verdicts: tuple[AuditRow, ...] = ()
    note: str | None = None
    """Why the loop ended, when that is not plain (e.g. validation refused every answer)."""


__all__ = [
    "AgentResult",
    "ApprovalCheck",
    "AuditRow",
    "Bail",
    "CheckRequest",
    "CheckResponse",
    "Decision",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "PendingAsk",
    "ToolCall",
    "ToolInvocation",
    "ToolOutput",
    "Verdict",
    "VerifyRequest",
]
