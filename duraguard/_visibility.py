"""What the Temporal UI and a search show of a run's guard: current details, search attributes.

Tool, action and guardrail only, never a value or a reason (those stay in payloads, which a
codec can encrypt). Current details are served by a query (no history); each search attribute
upsert is a history event, so it happens only when something a search would find changed.
The session hands this module what to show (:class:`Shown`) each time it publishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributeUpdate

from ._wire import SA_DENIALS, SA_HALTED_BY, SA_PENDING, AuditRow

_KEY_PENDING = SearchAttributeKey.for_int(SA_PENDING)
_KEY_HALTED = SearchAttributeKey.for_keyword(SA_HALTED_BY)
_KEY_DENIALS = SearchAttributeKey.for_int(SA_DENIALS)
_SHOWN = 50
_HEADER = ("turn", "call", "tool", "where", "action", "decided by", "approver")


@dataclass(frozen=True)
class Shown:
    """What a run's guard shows: its latest audit rows and its counts."""

    rows: Sequence[AuditRow]
    waiting: int
    """Calls waiting for a person."""
    refused_messages: int
    denials: int
    halted_by: str | None
    search_attributes: bool
    """Whether the run upserts duraguard's search attributes (as it started)."""


class Visibility:
    """Publishes one session's state to the UI and to visibility search."""

    def __init__(self) -> None:
        self._published: tuple[int, int, str | None] = (0, 0, None)

    def publish(self, s: Shown) -> None:
        """Current details always; search attributes where a count changed."""
        workflow.set_current_details(_details(s))
        state = (s.waiting, s.denials, s.halted_by)
        if s.search_attributes and state != self._published:
            self._published = state
            pairs: list[SearchAttributeUpdate[Any]] = [
                _KEY_PENDING.value_set(s.waiting),
                _KEY_DENIALS.value_set(s.denials),
            ]
            if s.halted_by:
                pairs.append(_KEY_HALTED.value_set(s.halted_by))
            workflow.upsert_search_attributes(pairs)


def _details(s: Shown) -> str:
    rows = list(s.rows)[-_SHOWN:]
    body = [
        (
            str(r.turn),
            r.call_id or "-",
            r.tool or "-",
            r.placement,
            r.action,
            r.decided_by,
            r.approver or "-",
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in [_HEADER, *body]) for i in range(len(_HEADER))]
    # A fenced block keeps the columns aligned: the UI's markdown tables run cells together.
    lines = ["**duraguard verdicts**", "", "```"]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [_HEADER, *body]
    ]
    lines.append("```")
    if s.waiting:
        lines += ["", f"**{s.waiting} call(s) waiting for a person** (`duraguard pending`)"]
    if s.refused_messages:
        lines += ["", f"{s.refused_messages} decision message(s) refused"]
    if s.halted_by:
        lines += ["", f"**halted by {s.halted_by}**"]
    return "\n".join(lines)
