"""A run's guard state: what duraguard keeps for one workflow run, as one explicit object.

:class:`SessionState` holds the ledger, the counters, the audit rows, the tool records for
validation, the asks waiting for a person (:class:`~duraguard._asks.Asks`, answered by
:mod:`duraguard._gate`) and what the run's workers were sent in full (:mod:`duraguard._byref`).
A call's outcome is recorded once (:meth:`SessionState.record`): the ledger entry and the tool
record are both derived from it. Every module of the workflow side takes it; the seams an agent
loop uses (``before_call``, ``after_call``, ``judge``) are on its public face,
:class:`duraguard.GuardSession` (:mod:`duraguard._session`), which is made once per run.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow

from . import _config, _patches
from ._asks import DECISION_CHECKER as DECISION_CHECKER
from ._asks import Asks as Asks
from ._asks import Parked as Parked
from ._bounds import too_deep
from ._byref import Sent
from ._ledger import Ledger
from ._outcome import CallOutcome
from ._result_keys import ResultKeys
from ._types import (
    Context,
    NotJSON,
    PassResult,
    SessionView,
    Subject,
    ToolDescription,
    ToolRecord,
    Verdict,
    canonical_json,
)
from ._visibility import Shown, Visibility
from ._wire import AuditRow, SessionSnapshot
from .principal import current_principal

RECORDS_KEPT = 32
"""Tool results kept for validation guardrails (the last few; never the whole session)."""
MAX_RECORD_BYTES = 128 * 1024
"""The most the tool results a validation guardrail reads (and the carried session keeps) take
(JSON): the latest that fit; a result larger than this alone is not kept."""
ROWS_KEPT = 200
"""Audit rows kept in memory for the ``duraguard.verdicts`` query and the UI; the durable audit
is the run's history (``duraguard audit``), which keeps every one."""
ROWS_CARRIED = 50
"""Audit rows carried across continue-as-new, each reason cut to :data:`MAX_CARRIED_REASON`."""
MAX_CARRIED_REASON = 500


@dataclass
class Counters:
    """What a session counts; carried across continue-as-new."""

    calls: int = 0
    turn: int = 0
    denials: int = 0
    approvals_asked: int = 0


@dataclass
class SessionState:
    """One run's guard state; its public face is :class:`duraguard.GuardSession`."""

    workflow_id: str
    run_id: str
    chain_id: str
    """The run id the continue-as-new chain started with: part of every idempotency key."""
    ledger: Ledger
    counts: Counters = field(default_factory=Counters)
    rows: deque[AuditRow] = field(default_factory=lambda: deque(maxlen=ROWS_KEPT))
    results: deque[ToolRecord] = field(default_factory=lambda: deque(maxlen=RECORDS_KEPT))
    halted_by: str | None = None
    asks: Asks = field(init=False, default_factory=Asks)
    visibility: Visibility = field(init=False)
    _contexts: dict[Any, Context] = field(init=False, default_factory=dict, repr=False)
    sent: Sent = field(init=False, default_factory=Sent, repr=False)
    """What this run's workers were sent in full (:mod:`duraguard._byref`)."""
    _features: _patches.Features | None = field(init=False, default=None, repr=False)
    described: dict[str, ToolDescription] = field(init=False, default_factory=dict, repr=False)
    """Tools an agent framework defines, as the policy reads them (:meth:`describe`)."""

    @property
    def config(self) -> _config.WorkflowConfig:
        """What the plugin tells workflow code (read each time: a session made in the
        workflow's ``__init__`` exists before the plugin's interceptor has run)."""
        return _config.current()

    def __post_init__(self) -> None:
        self.visibility = Visibility()

    def publish(self) -> None:
        """Show this run's guard as it stands (:mod:`duraguard._visibility`)."""
        self.visibility.publish(self.shown())

    def shown(self) -> Shown:
        """What the UI shows of this run (:mod:`duraguard._visibility`)."""
        return Shown(
            rows=self.rows,
            waiting=self.asks.waiting(),
            refused_messages=self.asks.refused_messages,
            denials=self.counts.denials,
            halted_by=self.halted_by,
            search_attributes=self.search_attributes(),
        )

    @property
    def features(self) -> _patches.Features:
        """What this run does, as it started (:mod:`duraguard._patches`): asked when the
        session is made, the run's first use of duraguard (before any of its steps), so that a
        replay reaches the same answer in the same workflow task."""
        if self._features is None:
            self._features = _patches.ask(self.config)
        return self._features

    def inline_by_default(self) -> bool:
        """Whether check mode ``auto`` judges this run's lone calls inside their tool steps:
        under the plugin's ``auto``, in a run that started with
        :data:`~duraguard._patches.INLINE_BY_DEFAULT` or a newer patch."""
        f = self.features
        return self.config.check_mode == "auto" and f.in_steps and f.level >= 1

    def answer_in_model_step(self) -> bool:
        """Whether ``agent_loop`` may judge a final answer inside the model step that gave it:
        in a run judged in its steps, started with ``ANSWER_IN_MODEL_STEP`` (level 2) or
        newer (:mod:`duraguard._patches`; a run started before replays its answer's pass)."""
        f = self.features
        return self.config.check_mode in ("auto", "inline") and f.in_steps and f.level >= 2

    def mask_before_history(self) -> bool:
        """Whether maskable values are judged before a step records them (level 3)."""
        return self.features.level >= 3

    def result_keys(self) -> bool:
        """Whether tool steps send back their results' keys (level 4, every worker reads them)."""
        return self.features.level >= 4

    def rest(self) -> bool:
        """:attr:`ToolInvocation.rest <duraguard._wire.ToolInvocation.rest>` of this run."""
        return self.features.level >= 6 and self.ledger.sources.outside_seen()

    def keeps_results(self) -> bool:
        """Whether this run's tool steps keep their results for the model step (a run that
        started with :data:`~duraguard._patches.KEPT_RESULTS`, on workers with a store)."""
        return self.features.level >= 5 and self.config.conversations

    def search_attributes(self) -> bool:
        """Whether this run upserts duraguard's search attributes (as it started)."""
        return self.features.search_attributes

    # -- identity ------------------------------------------------------------------------
    def next_call_id(self) -> str:
        self.counts.calls += 1
        return f"c{self.counts.calls}"

    def idempotency_key(self, call_id: str) -> str:
        """Stable for one call of this session: the same on every retry and every replay, and
        different for a new run started under the same workflow id."""
        return f"{self.workflow_id}/{self.chain_id}/{call_id}"

    def tool_context(self, agent: str | None) -> Context:
        """:meth:`context` as a tool step is sent it: without the run's ids, which the worker
        takes from the step's own activity info (about 170 bytes of history a call)."""
        found = self._contexts.get((agent, "tool"))
        if found is None:
            found = self._contexts[(agent, "tool")] = self.context(agent).model_copy(
                update={"workflow_id": None, "run_id": None, "workflow_type": None}
            )
        return found

    def tool_key(self, call_id: str, key: str) -> str:
        """``key`` as a tool step whose activity id is the call id is sent it: left out where it
        is the one the worker makes from the step's activity info, ``workflow id/run id/call
        id`` (in a run that began its chain; a worker of an earlier version makes it from the
        activity id, the same here)."""
        return "" if key == f"{self.workflow_id}/{self.run_id}/{call_id}" else key

    def context(self, agent: str | None) -> Context:
        """Who and where, for ``agent``: the same all run long (the principal comes from the
        run's start header), so it is made once per agent."""
        found = self._contexts.get(agent)
        if found is None:
            found = self._contexts[agent] = Context(
                principal=current_principal(),
                agent=agent,
                workflow_id=self.workflow_id,
                run_id=self.run_id,
                workflow_type=workflow.info().workflow_type,
            )
        return found

    @staticmethod
    def now() -> float:
        return workflow.now().timestamp()

    # -- reading -------------------------------------------------------------------------
    def view(self, tool: str, args: Any, *, compensation_of: int | None = None) -> SessionView:
        """The bounded slice a check of ``tool(args)`` reads (withheld while replaying)."""
        if _replaying():
            return SessionView(withheld=True, compensation_of=compensation_of)
        if too_deep(args, "") is not None:
            args = {}  # its pass refuses it before any step; nothing walks it meanwhile
        return self.ledger.view(
            tool=tool, args=args, now=self.now(), compensation_of=compensation_of
        )

    def answer_view(self) -> SessionView:
        """What a validation guardrail reads: the last few tool results besides the usual view
        (withheld while replaying)."""
        if _replaying():
            return SessionView(withheld=True)
        return self.ledger.view(tool="", args={}, now=self.now(), results=self.latest_results())

    def viewed(self, subject: Subject) -> Subject:
        """``subject`` with the session view that was withheld from it built (the view as the
        session stands now, the step being sent now)."""
        held = subject.session
        if held is None or not held.withheld:
            return subject
        if subject.placement == "final-answer":
            view = self.answer_view()
        else:
            view = self.view(
                subject.tool or "", subject.value, compensation_of=held.compensation_of
            )
        return subject.model_copy(update={"session": view})

    def latest_results(self) -> tuple[ToolRecord, ...]:
        """The latest tool records that fit in :data:`MAX_RECORD_BYTES`, oldest first."""
        kept: list[ToolRecord] = []
        used = 0
        for r in reversed(self.results):
            used += len(r.model_dump_json())
            if used > MAX_RECORD_BYTES:
                break
            kept.append(r)
        return tuple(reversed(kept))

    # -- writing -------------------------------------------------------------------------
    def note(self, row: AuditRow, *, counts: bool = True) -> None:
        """One verdict in the audit (every pass is in history regardless). ``counts=False``
        for what is not a verdict on a call (a refused message): it leaves the denials count,
        and so the search attributes, alone."""
        self.rows.append(row)
        if counts and row.action == "deny":
            self.counts.denials += 1
        self.publish()

    def note_pass(self, result: PassResult) -> None:
        """Audit rows for a pass that did not simply allow: every verdict that did something
        (:meth:`PassResult.audited`, as ``duraguard audit`` reads it from history)."""
        for v in result.audited():
            self.note(self.row(result, v))

    def row(self, result: PassResult, verdict: Verdict, *, approver: str | None = None) -> AuditRow:
        return AuditRow(
            turn=self.counts.turn,
            call_id=result.call_id,
            tool=result.tool,
            placement=result.placement or "tool-args",
            action=verdict.action,
            by=verdict.by,
            check=verdict.check,
            outcome=verdict.outcome,
            approver=approver,
            reason=verdict.reason,
        )

    def record(
        self,
        outcome: CallOutcome,
        *,
        compensation_of: int | None = None,
        keys: ResultKeys | None = None,
    ) -> None:
        """The one write of a call: its ledger entry and, where it ran, its tool record.
        ``keys``: its result's keys as duraguard's tool step worked them out."""
        args = outcome.args if isinstance(outcome.args, dict) else {"_": outcome.args}
        try:
            canonical_json(args)
        except NotJSON:
            args = {"_": "(arguments that are not JSON)"}
        action = outcome.verdict.action
        ok = outcome.error is None
        self.ledger.record(
            call_id=outcome.call_id,
            tool=outcome.tool,
            args=args,
            action=action,
            ran=outcome.ran,
            ok=ok,
            at=self.now(),
            result=outcome.result if outcome.ran else None,
            labels=outcome.labels,
            compensation_of=compensation_of,
            keys=keys,
        )
        if outcome.ran:
            self.results.append(
                ToolRecord(
                    tool=outcome.tool,
                    args=args,
                    result=outcome.result,
                    call_id=outcome.call_id,
                    ok=ok,
                )
            )

    def halt(self, by: str | None) -> None:
        self.halted_by = by
        self.publish()

    # -- what the run knows of its tools and plan ----------------------------------------------
    def describe(self, *tools: ToolDescription) -> None:
        """Tools an agent framework defines (not registered with the plugin), as the policy
        reads them (:func:`duraguard._describe.describe`): from now on a check of a call of
        one carries its description, and its results carry its labels. Workflow code, called
        with the same descriptions on replay (they come from the agent's definitions)."""
        for t in tools:
            self.described[t.name] = t

    async def wait_for_plan(self, timeout: timedelta | None = None) -> bool:
        """Wait, durably, until a person's signed plan is accepted (the ``duraguard.plan``
        update); from then on the policy's ``plan_step`` check holds every call to it.
        Returns False when ``timeout`` passed first."""
        try:
            await workflow.wait_condition(
                lambda: self.ledger.state.plan is not None,
                timeout=timeout,
                timeout_summary="duraguard: waiting for an approved plan",
            )
        except TimeoutError:
            return False
        return True

    def undoes(self, tool: str, args: Any) -> int | None:
        """The step a call of ``tool(args)`` reverses: the latest step of a tool whose declared
        undo is ``tool`` and whose values match the undo's mapping (``Tool(undo=...)``)."""
        if not isinstance(args, dict):
            return None
        for original, undo_tool, mapping in self.config.undo:
            if undo_tool != tool or not mapping:
                continue
            for e in reversed(self.ledger.state.entries):
                if e.tool != original or not e.ran or not e.ok:
                    continue
                if all(_source(e, src) == (True, args.get(arg)) for arg, src in mapping):
                    return e.index
        return None

    # -- continue-as-new -------------------------------------------------------------------
    def snapshot(self, keep: int) -> SessionSnapshot:
        """What the next run takes over, bounded in size whatever the tools returned: the ledger
        compacted (entries by count and bytes; provenance is bounded by its index), the latest
        tool records that fit, the latest audit rows with their reasons cut."""
        self.ledger.compact(keep)
        self.ledger.sources.carry_records()  # what the provenance index keeps in memory
        rows = [
            r if len(r.reason or "") <= MAX_CARRIED_REASON
            else r.model_copy(update={"reason": (r.reason or "")[:MAX_CARRIED_REASON] + "…"})
            for r in list(self.rows)[-ROWS_CARRIED:]
        ]  # fmt: skip
        return SessionSnapshot(
            ledger=self.ledger.state,
            calls=self.counts.calls,
            denials=self.counts.denials,
            approvals_asked=self.counts.approvals_asked,
            rows=tuple(rows),
            results=self.latest_results(),
        )

    def restore(self, snap: SessionSnapshot) -> None:
        self.ledger = Ledger(snap.ledger.model_copy(deep=True))
        self.counts.calls = snap.calls
        self.counts.denials = snap.denials
        self.counts.approvals_asked = snap.approvals_asked
        self.rows.extend(snap.rows)
        self.results.extend(snap.results)
        self.publish()


def _source(entry: Any, source: str) -> tuple[bool, Any]:
    """A value of an earlier step: ``result.NAME`` from its result, ``args.NAME``/``NAME``
    from its arguments; ``(found, value)``."""
    where, _, name = source.partition(".") if "." in source else ("args", "", source)
    bag = entry.result_fields if where == "result" else entry.args
    return (name in bag, bag.get(name))


def _replaying() -> bool:
    """Whether this is workflow code replaying history (a session can be used outside one)."""
    return workflow.in_workflow() and workflow.unsafe.is_replaying()
