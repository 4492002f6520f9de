"""Every verdict of a run, read back from its history: the durable audit.

The check activity (``duraguard.check``) and the decision check
(``duraguard.verify-decision``) are recorded steps; their results are in the run's history,
as local activity markers or as regular activity completions. This module reads them, decodes
the payloads with the client's data converter (a codec included) and returns one
:class:`~duraguard._wire.AuditRow` per verdict, in history order. Nothing here needs a worker:
a finished run, or one whose worker is gone, audits the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle, WorkflowHistory
from temporalio.converter import DataConverter

from ._audit_steps import AUDITED as AUDITED
from ._audit_steps import EXPIRY_STEP as EXPIRY_STEP
from ._audit_steps import LOCAL_ACTIVITY_MARKER as LOCAL_ACTIVITY_MARKER
from ._audit_steps import MODEL_STEP as MODEL_STEP
from ._audit_steps import TOOL_STEP as TOOL_STEP
from ._audit_steps import Step as _Step
from ._audit_steps import audited_steps, events_of
from ._types import PLACEMENTS, REPLACING, Action, PassResult, Placement, Verdict
from ._wire import (
    CHECK_ACTIVITY,
    EXPIRY_SUMMARY,
    PREVIEW_PURPOSE,
    AuditRow,
    CheckResponse,
    VerifyRequest,
)
from .approvals import ApprovalCheck

PERSON = "person"
"""What :attr:`AuditRow.by` says for a valid decision of a person."""
DECISION_CHECKER = "duraguard.decision"
"""What :attr:`AuditRow.by` says for a decision that was refused (bad signature, expired, ...)."""


@dataclass(frozen=True)
class AuditRecord:
    """One audit row with where it came from, and what only ``--reveal`` shows.

    Attributes:
        row: the verdict as :class:`AuditRow`.
        event_id: the history event that recorded it (marker or activity completion).
        activity: ``duraguard.check`` or ``duraguard.verify-decision``.
        local: whether the step was a local activity.
        summary: the step's summary as the UI shows it.
        value: the replacement under mask / rewrite (sensitive: shown only with ``--reveal``).
        preview: a verdict of a preview of a person's edits (``approve --edit``, the inbox):
            it decided nothing and nothing ran on it.
    """

    row: AuditRow
    event_id: int
    activity: str
    local: bool
    summary: str | None = None
    value: Any = None
    preview: bool = False


async def audit_records(
    source: WorkflowHandle[Any, Any] | WorkflowHistory | Iterable[HistoryEvent],
    data_converter: DataConverter,
) -> list[AuditRecord]:
    """Every verdict of a run, with provenance, in history order.

    Args:
        source: a workflow handle (its history is fetched), a fetched history, or its events.
        data_converter: the converter the workers use (pydantic, with the codec if any).
    """
    events = await events_of(source)
    records: list[AuditRecord] = []
    for step in audited_steps(events):
        records.extend(await _decode_step(step, data_converter, records))
    return records


async def audit_rows(
    source: WorkflowHandle[Any, Any] | WorkflowHistory | Iterable[HistoryEvent],
    data_converter: DataConverter,
) -> list[AuditRow]:
    """Every verdict of a run as :class:`AuditRow`, read from its history (previews of a
    person's edits, which decide nothing, are left out: :func:`audit_records` marks them)."""
    return [r.row for r in await audit_records(source, data_converter) if not r.preview]


async def _decode(payload: Payload | None, type_hint: type, converter: DataConverter) -> Any:
    if payload is None:
        return None
    values = await converter.decode([payload], [type_hint])
    return values[0] if values else None


async def _decode_step(
    step: _Step, converter: DataConverter, earlier: Sequence[AuditRecord]
) -> list[AuditRecord]:
    summary = await _decode(step.summary, str, converter)
    if step.activity == EXPIRY_STEP:
        return _expiry(step, summary, earlier)
    if step.activity == CHECK_ACTIVITY:
        resp = await _decode(step.result, CheckResponse, converter)
        if resp is None:
            return []
        return [
            x for r in resp.results for x in _records(step, summary, r, resp.turn, resp.purpose)
        ]
    if step.activity == TOOL_STEP:
        return await _tool_step(step, summary, converter, earlier)
    if step.activity == MODEL_STEP:
        return await _model_step(step, summary, converter)
    check = await _decode(step.result, ApprovalCheck, converter)
    if check is None:
        return []
    request = await _decode(step.input, VerifyRequest, converter)
    row = _decision_row(check, request, earlier)
    return [AuditRecord(row, step.event_id, step.activity, step.local, summary)]


def _expiry(step: _Step, summary: Any, earlier: Sequence[AuditRecord]) -> list[AuditRecord]:
    """An ask that nobody answered: its expiry timer fired (the call did not run)."""
    if not isinstance(summary, str) or not summary.startswith(EXPIRY_SUMMARY):
        return []
    parts = summary[len(EXPIRY_SUMMARY) :].split()
    call_id, tool = ([*parts, "", ""])[:2]
    parked = next((r.row for r in reversed(earlier) if r.row.call_id == call_id), None)
    row = AuditRow(
        turn=parked.turn if parked else 0,
        call_id=call_id or None,
        tool=tool or None,
        placement="tool-args",
        action="deny",
        by="duraguard.expiry",
        check="approval.expired",
        reason="nobody decided before the ask expired; the call did not run",
    )
    return [AuditRecord(row, step.event_id, EXPIRY_STEP, False, summary)]


def _pass_rows(
    r: PassResult, turn: int, purpose: str, *, every: bool
) -> list[tuple[AuditRow, Verdict]]:
    """The rows of one pass, each with its verdict: every verdict that did something, once
    (:meth:`PassResult.audited`: the deciding one, every observation, a mask a later guardrail
    went on from), and with ``every`` (a check step's pass) an allow too."""

    def row(v: Verdict) -> AuditRow:
        return AuditRow(
            turn=turn,
            call_id=r.call_id,
            tool=r.tool,
            placement=r.placement or _placement(purpose),
            action=v.action,
            by=v.by,
            check=v.check,
            outcome=v.outcome,
            reason=v.reason,
        )

    return [(row(v), v) for v in r.audited(every=every)]


async def _tool_step(
    step: _Step, summary: Any, converter: DataConverter, earlier: Sequence[AuditRecord]
) -> list[AuditRecord]:
    """The verdicts judged inside a tool's own step: on its arguments (check mode ``inline``)
    and on its result."""
    output = await _any(step.result, converter)
    if not isinstance(output, dict):
        return []
    checked = [r for r in (_result(x) for x in output.get("checked") or ()) if r is not None]
    judged = _result(output.get("judged"))
    if not checked and judged is None:
        return []
    call_id = judged.call_id if judged is not None else checked[0].call_id
    invocation = await _any(step.input, converter) if checked else None
    asked = invocation.get("check") if isinstance(invocation, dict) else None
    turn = asked.get("turn") if isinstance(asked, dict) else None
    if not isinstance(turn, int):
        parked = next((x.row for x in reversed(earlier) if x.row.call_id == call_id), None)
        turn = parked.turn if parked else 0
    rows = [(r, x) for r in checked for x in _pass_rows(r, turn, "tool-args", every=True)]
    if judged is not None:
        rows += [(judged, x) for x in _pass_rows(judged, turn, "tool-result", every=False)]
    return [
        AuditRecord(row, step.event_id, step.activity, False, summary, _value(r, v))
        for r, (row, v) in rows
    ]


async def _model_step(step: _Step, summary: Any, converter: DataConverter) -> list[AuditRecord]:
    """The verdicts judged inside a model step: on the prompt, before the model read it, on the
    calls it proposed, before it recorded them (named by the model's own call ids), and on a
    final answer, as the model's text and as the final answer (nothing for a model step that
    judged nothing)."""
    output = await _any(step.result, converter)
    keys = ("prompted", "called", "answered")
    if not isinstance(output, dict) or not any(output.get(k) for k in keys):
        return []
    request = await _any(step.input, converter)
    before = request.get("turn") if isinstance(request, dict) else None
    turn = before if isinstance(before, int) else 0
    out = [
        x
        for key, at, purpose in (("prompted", turn, "pre-prompt"), ("answered", turn + 1, "answer"))
        for r in (_result(raw) for raw in output.get(key) or ())
        if r is not None
        for x in _records(step, summary, r, at, purpose)
    ]
    # The calls' verdicts, in the order of the calls, name neither: each is its call's, named
    # as the run names it (c<first>, ...); a plain allow is left to the call's own step.
    calls = output.get("tool_calls") or []
    asked = request.get("call_check") if isinstance(request, dict) else None
    first = asked.get("first_call") if isinstance(asked, dict) else None
    for i, (call, raw) in enumerate(zip(calls, output.get("called") or (), strict=False)):
        r = _result(raw)
        if r is None or not isinstance(call, dict):
            continue
        cid = f"c{first + i}" if isinstance(first, int) and first > 0 else call.get("id")
        named = {"placement": "tool-args", "tool": call.get("name"), "call_id": cid}
        out += _records(step, summary, r.model_copy(update=named), turn + 1, "tool-args", False)
    return out


def _records(
    step: _Step, summary: Any, r: PassResult, turn: int, purpose: str, every: bool = True
) -> list[AuditRecord]:
    """The records of one pass a step judged (every verdict that did something, once), the
    replacement kept for ``--reveal`` on the row that made it; a preview of a person's edits
    (purpose ``edits-preview``) is marked as one: nothing ran on its verdicts."""
    return [
        AuditRecord(
            row=row,
            event_id=step.event_id,
            activity=step.activity,
            local=step.local,
            summary=summary,
            value=_value(r, v),
            preview=purpose == PREVIEW_PURPOSE,
        )
        for row, v in _pass_rows(r, turn, purpose, every=every)
    ]


def _value(r: PassResult, v: Verdict) -> Any:
    """The replacement the pass ran with, on the row of the verdict that made it."""
    if v.action not in REPLACING or r.value is None:
        return None
    return r.value if v == (r.replaced_by or r.verdict) else None


async def _any(payload: Payload | None, converter: DataConverter) -> Any:
    """A payload of any activity, decoded with no type to expect (``None`` where it cannot be)."""
    if payload is None:
        return None
    try:
        (value,) = await converter.decode([payload])
    except Exception:
        return None  # not ours, or not readable with this converter: nothing judged in it
    return value


def _result(raw: Any) -> PassResult | None:
    if not raw:
        return None
    try:
        return PassResult.model_validate(raw)
    except ValueError:
        return None


def _placement(purpose: str) -> Placement:
    for p in PLACEMENTS:
        if p == purpose:
            return p
    return "tool-args"


def _decision_row(
    check: ApprovalCheck, request: VerifyRequest | None, earlier: Sequence[AuditRecord]
) -> AuditRow:
    """A person's decision as a row, in the words the workflow's own rows use: a valid
    decision allows or denies ``by person``; a refused one is ``deny`` by
    ``duraguard.decision`` (check ``decision.refused``) and the call stays parked."""
    call_id = check.call_id or (request.call_id if request else None)
    parked = next(
        (r.row for r in reversed(earlier) if call_id and r.row.call_id == call_id),
        None,
    )
    tool = check.tool or (request.tool if request else (parked.tool if parked else None))
    said = check.said or (request.decision.reason if request else None)
    action: Action = "allow" if check.ok and check.decision == "approve" else "deny"
    return AuditRow(
        turn=parked.turn if parked else 0,
        call_id=call_id,
        tool=tool,
        placement=parked.placement if parked else "tool-args",
        action=action,
        by=PERSON if check.ok else DECISION_CHECKER,
        check="decision" if check.ok else "decision.refused",
        outcome="complete",
        approver=check.approver,
        reason=check.reason or said or None,
    )
