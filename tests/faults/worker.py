"""A duraguard worker as its own OS process, for the fault suite to kill with SIGKILL.

    python -m tests.faults.worker --address HOST:PORT --task-queue Q --desk DESK.db \
        --payments PAYMENTS.db --markers DIR --approvers FILE [--fault POINT]

It runs the reference desk's ``refund_card`` over its SQLite file and the idempotent-tool
sample's ``pay_invoice``, under the same plugin a real worker uses, and ``pay_naive``, a
payment that ignores its key (the suite's control: it must be seen paying twice). With ``--fault POINT`` it
stops at that point of every call it makes: it writes a marker file named after the point and
the call's idempotency key into ``DIR`` and waits there, until a file ``DIR/release`` appears
or the process is killed. Points:

* ``tool-before``: inside the tool, before its effect;
* ``tool-after``: inside the tool, after its effect committed, before the step completes;
* ``check``: inside the check step (the guardrail ``hold``; a local or a regular activity, as
  the run's input asks);
* ``check-long``: inside the check step, held past the workflow task's timeout (the guardrail
  ``hold-long``);
* ``model``: inside the model step, after the provider answered, before the step completes;
* ``plan``: inside ``duraguard.verify-plan``, the step of the ``duraguard.plan`` update;
* ``verify``: inside ``duraguard.verify-decision``, a person's decision being checked;
* ``seal``: inside ``duraguard.seal-session``, the step of a loop's continue-as-new.

It writes ``DIR/ready-PID`` once it polls its task queue.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "samples" / "idempotent_tool")]

from pay_invoice import open_payments, pay_once  # noqa: E402
from temporalio import activity  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.worker import (  # noqa: E402
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    Worker,
)

import duraguard  # noqa: E402
from activities.store import open_db  # noqa: E402
from activities.support import refund_card as desk_refund  # noqa: E402
from duraguard._wire import (  # noqa: E402
    SEAL_ACTIVITY,
    VERIFY_ACTIVITY,
    VERIFY_PLAN_ACTIVITY,
    ModelRequest,
    ModelResponse,
    ToolCall,
)
from duraguard.conversations import SqliteConversations  # noqa: E402
from duraguard.models import Model  # noqa: E402
from duraguard.tools import Tool  # noqa: E402
from tests.faults._fleet import RECEIPT  # noqa: E402
from tests.faults._guards import ASK, HOLD, HOLD_LONG, HOLD_PROMPT, Stops, hold  # noqa: E402
from tests.faults._workflows import SESSION_KEY, FaultRun  # noqa: E402


class FaultModel(Model):
    """The fault agent (``scripted:fault``): each turn, the call its prompt names for that turn
    (``{"tool": ..., "args": ..., "then": [{"tool": ..., "args": ...}, ...]}``), then an answer.
    A pure function of the request, so a retried step proposes the same."""

    async def complete(self, request: ModelRequest, tools: Sequence[Tool]) -> ModelResponse:
        said = next(m.content for m in request.messages if m.role == "user")
        asked = json.loads(said or "{}")
        turns = [asked, *asked.get("then", [])]
        n = request.turn or 0
        await asyncio.to_thread(hold, "model", f"{activity.info().workflow_id}-{n}")
        if n >= len(turns):
            return ModelResponse(content="done")
        call = turns[n]
        return ModelResponse(
            tool_calls=(ToolCall(id=f"t{n}", name=call["tool"], arguments=call["args"]),)
        )


HELD = {
    VERIFY_PLAN_ACTIVITY: "plan",
    VERIFY_ACTIVITY: "verify",
    SEAL_ACTIVITY: "seal",
}
"""duraguard's own steps the worker stops inside (when asked to), and the point each names."""


class _Held(Interceptor):
    """Stop inside duraguard's own steps (when asked to): the plan's, a decision's, the seal's,
    before the step's body runs (an activity interceptor: the steps are duraguard's, unpatched)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _HeldActivity(next)


class _HeldActivity(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        point = HELD.get(info.activity_type)
        if point is not None:
            await asyncio.to_thread(hold, point, info.workflow_id)
        return await self.next.execute_activity(input)


def desk_tools(desk: Path, payments: Path) -> list[duraguard.Tool]:
    def refund_card(order_id: str, amount: float) -> dict[str, Any]:
        """Refund an amount of an order to its card (the reference desk's refund)."""
        key = duraguard.idempotency_key()
        hold("tool-before", key)
        result = desk_refund(desk, order_id, amount)
        hold("tool-after", key)
        return {**result, "receipt": RECEIPT}

    def pay_invoice(invoice: str, amount: float) -> dict[str, Any]:
        """Pay an invoice (the idempotent-tool sample's payment)."""
        key = duraguard.idempotency_key()
        hold("tool-before", key)
        payment = pay_once(payments, key, invoice, amount)
        hold("tool-after", key)
        return payment

    def pay_naive(invoice: str, amount: float) -> dict[str, Any]:
        """Pay an invoice, ignoring the call's key (the suite's control: this one pays twice)."""
        key = duraguard.idempotency_key()
        hold("tool-before", key)
        payment = pay_once(payments, f"{key}/{uuid.uuid4()}", invoice, amount)
        hold("tool-after", key)
        return payment

    return [
        duraguard.tool(refund_card, kind="write", payment_field="amount", max_attempts=10),
        duraguard.tool(pay_invoice, kind="write", payment_field="amount", max_attempts=10),
        duraguard.tool(pay_naive, kind="write", payment_field="amount", max_attempts=10),
    ]


async def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--address", required=True)
    p.add_argument("--task-queue", required=True)
    p.add_argument("--desk", required=True)
    p.add_argument("--payments", required=True)
    p.add_argument("--markers", required=True)
    p.add_argument("--approvers", required=True)
    p.add_argument("--fault")
    args = p.parse_args(argv)
    Stops.point, Stops.markers = args.fault, Path(args.markers)
    desk = open_db(args.desk)
    payments = open_payments(args.payments)
    plugin = duraguard.DuraguardPlugin(
        tools=desk_tools(desk, payments),
        models={"scripted": FaultModel()},
        guardrails=[HOLD, HOLD_LONG, HOLD_PROMPT, ASK],
        approvers=args.approvers,
        search_attributes=True,
        session_key=SESSION_KEY,
        conversations=SqliteConversations(Path(args.markers).parent / "conversations.db"),
    )
    client = await Client.connect(args.address, plugins=[plugin])
    worker = Worker(
        client,
        task_queue=args.task_queue,
        workflows=[FaultRun],
        interceptors=[_Held()],
        # A dead worker's sticky queue is given up on quickly, so its runs move on.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
    )
    async with worker:
        (Stops.markers / f"ready-{os.getpid()}").write_text(args.task_queue)
        await asyncio.Event().wait()
    return 0


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1:]))
    except KeyboardInterrupt:
        pass
