"""What the API shows of an ask, a closed ask and a verdict, by the reader's right.

The one place values are filtered: arguments, edits and every reason (a guardrail's, the
person's) go only to people with ``read``; names (workflow, tool, guardrail, role, approver)
go to everyone with ``see``, as they do in the Temporal UI.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from .._wire import AuditRow, decided_by
from ._access import Person
from ._inbox import Closed
from ._source import EXPIRED_WHY, Waiting


def run_link(ui_url: str | None, namespace: str, workflow_id: str, run_id: str) -> str | None:
    """The run's page in the Temporal Web UI."""
    if not ui_url:
        return None
    path = f"/namespaces/{quote(namespace, safe='')}/workflows/{quote(workflow_id, safe='')}"
    return (
        f"{ui_url.rstrip('/')}{path}/{quote(run_id, safe='')}/history" if run_id else ui_url + path
    )


def ask_view(
    w: Waiting, person: Person, *, now: float, ui_url: str | None, namespace: str
) -> dict[str, Any]:
    a = w.ask
    view: dict[str, Any] = {
        "workflow_id": a.workflow_id,
        "run_id": a.run_id,
        "call_id": a.call_id,
        "tool": a.tool,
        "label": a.label,
        "role": a.role,
        "asked_by": a.asked_by,
        "check": a.check,
        "decided_by": decided_by(a.asked_by, a.check),
        "turn": a.turn,
        "asked_at": w.asked_at,
        "expires_at": a.expires_at,
        "expires_in": max(0.0, a.expires_at - now),
        "source": w.source,
        "ui_link": run_link(ui_url, namespace, a.workflow_id, a.run_id),
        "values": person.may("read"),
    }
    if person.may("read"):
        view["args"] = a.args
        view["reason"] = a.reason
        view["editable"] = isinstance(a.args, dict)
    return view


def closed_view(c: Closed, person: Person) -> dict[str, Any]:
    a, e = c.waiting.ask, c.ending
    why = {
        "approved": f"approved by {e.approver or '-'}",
        "denied": f"denied by {e.approver or '-'}",
        "expired": f"expired: {EXPIRED_WHY}",
        "ended": f"the run ended ({e.detail or 'closed'}) before anyone decided",
        "gone": "no longer waiting",
    }[e.outcome]
    view: dict[str, Any] = {
        "workflow_id": a.workflow_id,
        "run_id": a.run_id,
        "call_id": a.call_id,
        "tool": a.tool,
        "outcome": e.outcome,
        "approver": e.approver,
        "why": why,
        "closed_at": e.at,
    }
    if person.may("read"):
        view["said"] = e.said
    return view


def row_view(row: AuditRow, person: Person) -> dict[str, Any]:
    view = row.model_dump(mode="json")
    view["decided_by"] = row.decided_by
    if not person.may("read"):
        view.pop("reason", None)
    return view
