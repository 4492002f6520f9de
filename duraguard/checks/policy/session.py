"""A session built in plain Python, for tests and for callers outside a workflow.

Wraps the workflow-side :class:`duraguard._ledger.Ledger` so a session made here has the same
hash chain, provenance and bounded view as one made in a workflow.
"""

from __future__ import annotations

from typing import Any

from ..._ledger import Ledger
from ..._types import LedgerEntry, SessionView, ToolRecord


class Session:
    """The calls and turns of one session, and the bounded view a check of a new call reads.

    Example::

        s = Session("support-42")
        s.turn("refund 20 on order A1")
        s.call("get_order", {"order_id": "A1"}, result={"status": "paid"})
        view = s.view("refund_card", {"order_id": "A1", "amount": 20})
    """

    def __init__(self, session_id: str = "session", *, start: float = 1_700_000_000.0) -> None:
        self.ledger = Ledger.new(session_id)
        self.clock = start
        self.results: list[ToolRecord] = []

    def turn(self, text: str) -> Session:
        """The person says ``text``."""
        self.ledger.add_turn(text)
        return self

    def call(
        self,
        tool: str,
        args: dict[str, Any] | None = None,
        *,
        result: Any = None,
        labels: tuple[str, ...] = (),
        ran: bool = True,
        ok: bool = True,
        action: str = "allow",
        compensation_of: int | None = None,
        at: float | None = None,
    ) -> LedgerEntry:
        """Record a call already made (and, where it ran, its result)."""
        self.clock = at if at is not None else self.clock + 1.0
        call_id = f"call-{len(self.ledger.state.entries)}"
        if ran:
            self.results.append(
                ToolRecord(tool=tool, args=dict(args or {}), result=result, call_id=call_id, ok=ok)
            )
        return self.ledger.record(
            call_id=call_id,
            tool=tool,
            args=dict(args or {}),
            action=action,
            ran=ran,
            ok=ok,
            at=self.clock,
            result=result,
            labels=labels,
            compensation_of=compensation_of,
        )

    def plan(self, token: Any) -> Session:
        """Follow a plan a person approved (a signed ``PlanToken``)."""
        self.ledger.accept_plan(token)
        return self

    def view(
        self, tool: str, args: dict[str, Any] | None = None, *, now: float | None = None, **kw: Any
    ) -> SessionView:
        """The bounded view a check of ``tool(args)`` reads (see ``Ledger.view`` for ``kw``).

        A person's yes is not part of the view: verify their decision with
        :func:`duraguard.approvals.verify` and pass ``check.grant(tool, args)`` as the subject's
        ``grant``, as the workflow does.
        """
        kw.setdefault("results", tuple(self.results[-32:]))
        return self.ledger.view(
            tool=tool, args=dict(args or {}), now=self.clock + 1.0 if now is None else now, **kw
        )
