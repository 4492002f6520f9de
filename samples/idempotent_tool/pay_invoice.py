"""A tool that pays once however often it runs: ``pay_invoice`` keyed by
``duraguard.idempotency_key()``.

Temporal runs a tool (an activity) at least once, not exactly once: a worker can die after the
tool's effect and before its result is recorded, and the call then runs again. duraguard gives
each call a key that stays the same for every retry and replay of that call (and differs for a
new run under the same workflow id): ``duraguard.idempotency_key()``. The tool hands it to
whatever it changes, here a payments table with the key as its primary key (with a real
payment API, its ``Idempotency-Key`` header), so a second run finds the first payment instead
of paying again.

The sample makes the first attempt lose its result right after paying, the way a killed worker
would, and shows Temporal running the call again and the payment made once. (The fault suite,
tests/faults/, does it with a real SIGKILL.)

Run it: ``python samples/idempotent_tool/pay_invoice.py`` (starts an embedded Temporal dev
server unless ``TEMPORAL_ADDRESS`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import sys
import tempfile
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.server import DevServer

SCHEMA = """
CREATE TABLE IF NOT EXISTS payments (
    idem_key  TEXT PRIMARY KEY,
    invoice   TEXT NOT NULL,
    cents     INTEGER NOT NULL,
    attempt   INTEGER NOT NULL
);
"""


def open_payments(path: str | os.PathLike[str]) -> Path:
    """Create the payments file if needed; return its path."""
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(SCHEMA)
    return Path(path)


def pay_once(db: Path, key: str, invoice: str, amount: float) -> dict[str, Any]:
    """Pay ``amount`` on ``invoice`` unless a payment under ``key`` exists; either way, return
    the payment. The check and the insert commit together, so two attempts racing on one key
    cannot both pay."""
    attempt = activity.info().attempt if activity.in_activity() else 0
    with closing(sqlite3.connect(db, timeout=30, isolation_level=None)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute(
            "SELECT rowid, invoice, cents, attempt FROM payments WHERE idem_key = ?", (key,)
        ).fetchone()
        if row is None:
            cur = conn.execute(
                "INSERT INTO payments (idem_key, invoice, cents, attempt) VALUES (?, ?, ?, ?)",
                (key, invoice, round(amount * 100), attempt),
            )
            row = (cur.lastrowid, invoice, round(amount * 100), attempt)
        conn.execute("COMMIT")
    return {
        "payment_id": f"P{row[0]}",
        "invoice": row[1],
        "amount": row[2] / 100,
        "paid_on_attempt": row[3],
    }


def payment_tools(db: Path, *, lose_first_result: bool = False) -> list[duraguard.Tool]:
    """The ``pay_invoice`` tool over the payments file ``db``.

    With ``lose_first_result`` its first attempt raises right after paying: to Temporal that
    looks like a worker that died after the effect (the result never arrives), and it runs the
    call again.
    """

    def pay_invoice(invoice: str, amount: float) -> dict[str, Any]:
        """Pay an invoice; at most once per call, however often the call runs."""
        payment = pay_once(db, duraguard.idempotency_key(), invoice, amount)
        if lose_first_result and activity.info().attempt == 1:
            raise ConnectionResetError("the worker was lost after paying (simulated)")
        return payment

    return [duraguard.tool(pay_invoice, kind="write", payment_field="amount")]


@workflow.defn
class PayInvoice:
    """Pays one invoice through duraguard's guarded call."""

    @workflow.run
    async def run(self, invoice: str) -> dict[str, Any]:
        outcome = await duraguard.guarded_call(
            "pay_invoice", {"invoice": invoice, "amount": 120.0}, guardrails=[duraguard.schema()]
        )
        return {"ran": outcome.ran, "result": outcome.result, "call_id": outcome.call_id}


def payments(db: Path, invoice: str) -> list[tuple[str, int, int]]:
    """(key, cents, attempt) of every payment made on ``invoice``."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT idem_key, cents, attempt FROM payments WHERE invoice = ? ORDER BY rowid",
            (invoice,),
        )
        return [(str(k), int(c), int(a)) for k, c, a in rows]


async def main() -> int:
    # The lost first attempt is the point of the sample: keep the SDK's warning about it quiet.
    logging.getLogger("temporalio.activity").setLevel(logging.ERROR)
    async with contextlib.AsyncExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="duraguard-")))
        db = open_payments(folder / "payments.db")
        plugin = duraguard.DuraguardPlugin(tools=payment_tools(db, lose_first_result=True))
        address = os.environ.get("TEMPORAL_ADDRESS")
        if not address:
            server = await stack.enter_async_context(DevServer(ui=False))
            address = server.address
        client = await Client.connect(
            address, namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"), plugins=[plugin]
        )
        task_queue = f"pay-{uuid.uuid4().hex[:8]}"
        invoice = f"INV-{uuid.uuid4().hex[:6]}"
        async with Worker(client, task_queue=task_queue, workflows=[PayInvoice]):
            handle = await client.start_workflow(
                PayInvoice.run, invoice, id=f"pay-{uuid.uuid4().hex[:8]}", task_queue=task_queue
            )
            result = await handle.result()
        history = await handle.fetch_history()
        attempts = [
            e.activity_task_started_event_attributes.attempt
            for e in history.events
            if e.HasField("activity_task_started_event_attributes")
        ]
        made = payments(db, invoice)
        print(f"invoice {invoice}: the tool ran {max(attempts)} times (attempt 1 lost its result)")
        for key, cents, attempt in made:
            print(f"payment  {cents / 100:.2f} under key {key}, made on attempt {attempt}")
        print(f"payments made: {len(made)}")
        print(f"the workflow read: {result['result']}")
        return 0 if len(made) == 1 and result["ran"] else 1


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not interpreter shutdown: the SDK can abort there (sdk-python issue 300)
