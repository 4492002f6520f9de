"""The support desk's tools: orders, refunds, outbound email and a page fetcher, over SQLite.

Every tool is a plain sync function (the plugin runs it in a thread, so SQLite never blocks the
worker's event loop). A tool may run more than once for one call (Temporal runs activities at
least once: a worker can die after the effect and before its result is recorded), so tools
with a side effect apply it at most once per idempotency key. Run by duraguard, the key is
:func:`duraguard.idempotency_key` (``{workflow_id}/{first run id}/{call id}``: the same for
every retry and replay of the call, another for a new run under the same workflow id); in
tests and scripts, set it with :func:`idempotency_key`. The effect, the check and the first
result commit in one transaction under a UNIQUE key; a repeat returns the first result.

``fetch_page`` never reaches the network: it serves fixture pages from the ``pages`` table.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from contextvars import ContextVar
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

import duraguard
from duraguard.tools import Tool, Undo, tool

from .store import connect, from_cents, open_db, to_cents

REFUSED = "support.ToolRefused"
"""Error type of a call the desk refuses (unknown order, too much): retrying cannot help."""
CONFLICT = "support.IdempotencyConflict"
"""Error type of one idempotency key used for two different calls."""

_explicit_key: ContextVar[str | None] = ContextVar("support_idempotency_key", default=None)


class ToolRefused(ApplicationError):
    """The desk refused the call; non-retryable, and the message is written for the model."""

    def __init__(self, message: str, *, type: str = REFUSED) -> None:
        super().__init__(message, type=type, non_retryable=True)


@contextmanager
def idempotency_key(key: str) -> Iterator[str]:
    """Run tools outside an activity under ``key`` (tests, scripts).

    Example: ``with idempotency_key("wf-1/call-0-0"): refund(order_id="A1", amount=5.0)``.
    """
    if not key:
        raise ValueError("an idempotency key must be a non-empty string, e.g. 'wf-1/call-0-0'")
    token = _explicit_key.set(key)
    try:
        yield key
    finally:
        _explicit_key.reset(token)


def current_idempotency_key() -> str:
    """The key of the call running now.

    In order: a key set with :func:`idempotency_key`; inside a tool duraguard runs,
    :func:`duraguard.idempotency_key`; inside any other Temporal activity (a desk tool
    registered as a plain activity), ``{workflow_id}/{activity_id}``.

    Raises:
        ToolRefused: none of these is available, so at-most-once cannot be promised.
    """
    explicit = _explicit_key.get()
    if explicit:
        return explicit
    try:
        return duraguard.idempotency_key()
    except LookupError:
        pass
    try:
        info = activity.info()
    except RuntimeError:
        raise ToolRefused(
            "no idempotency key: run this tool as a duraguard tool (its key is "
            "duraguard.idempotency_key()), inside a Temporal activity (workflow id + activity "
            "id), or within `with idempotency_key(...)`; if an activity runs it in a thread, use "
            "asyncio.to_thread so the context is copied",
            type=CONFLICT,
        ) from None
    return f"{info.workflow_id or '-'}/{info.activity_id}"


def _args_digest(tool_name: str, args: Mapping[str, Any]) -> str:
    canonical = json.dumps({"tool": tool_name, "args": args}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def run_once(
    conn: sqlite3.Connection,
    tool_name: str,
    args: Mapping[str, Any],
    effect: Callable[[sqlite3.Connection], dict[str, Any]],
) -> dict[str, Any]:
    """Run ``effect`` at most once per idempotency key, atomically with its record.

    The check, the effect and the record commit in one ``BEGIN IMMEDIATE`` transaction, so two
    attempts racing on one key cannot both pay. A repeat returns the stored first result; the
    same key with another tool or other arguments is refused (call ids must be unique per run).
    """
    key = current_idempotency_key()
    digest = _args_digest(tool_name, args)
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(
            "SELECT tool, args_digest, result FROM tool_runs WHERE idem_key = ?", (key,)
        ).fetchone()
        if row is not None:
            if row["tool"] != tool_name or row["args_digest"] != digest:
                raise ToolRefused(
                    f"idempotency key {key!r} already ran {row['tool']} with other arguments; "
                    "each tool call needs its own call id within a workflow",
                    type=CONFLICT,
                )
            conn.execute("ROLLBACK")
            first: dict[str, Any] = json.loads(row["result"])
            return first
        result = effect(conn)
        conn.execute(
            "INSERT INTO tool_runs (idem_key, tool, args_digest, result) VALUES (?, ?, ?, ?)",
            (key, tool_name, digest, json.dumps(result, sort_keys=True)),
        )
        conn.execute("COMMIT")
        return result
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


# --- the desk ---------------------------------------------------------------------------------


def _order(conn: sqlite3.Connection, order_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT id, customer, item, cents, status FROM orders WHERE id = ?", (order_id,)
    ).fetchone()
    return row


def _refunded_cents(conn: sqlite3.Connection, order_id: str) -> int:
    total = conn.execute(
        "SELECT COALESCE(SUM(cents), 0) FROM refunds WHERE order_id = ? AND status = 'issued'",
        (order_id,),
    ).fetchone()[0]
    return int(total)


def _money(cents: int) -> str:
    return f"{cents / 100:.2f}"


def lookup_order(db: str | os.PathLike[str], order_id: str) -> dict[str, Any]:
    """The order, what was refunded and what can still be refunded; ``found: False`` if none."""
    with closing(connect(db)) as conn:
        row = _order(conn, order_id)
        if row is None:
            return {"order_id": order_id, "found": False, "error": f"no order {order_id!r}"}
        refunded = _refunded_cents(conn, order_id)
    return {
        "order_id": row["id"],
        "found": True,
        "customer": row["customer"],
        "item": row["item"],
        "amount": from_cents(row["cents"]),
        "refunded": from_cents(refunded),
        "refundable": from_cents(row["cents"] - refunded),
        "status": row["status"],
    }


def refund_card(db: str | os.PathLike[str], order_id: str, amount: float) -> dict[str, Any]:
    """Refund ``amount`` of ``order_id`` to its card, at most once per idempotency key.

    Raises:
        ToolRefused: unknown order, an amount that is not positive whole cents, or more than
            the order's amount less the refunds already issued.
    """
    try:
        cents = to_cents(amount)
    except (ValueError, TypeError) as err:
        raise ToolRefused(f"cannot refund: {err}") from None
    if cents <= 0:
        raise ToolRefused(f"cannot refund {amount!r}: a refund must be more than 0.00")

    def effect(conn: sqlite3.Connection) -> dict[str, Any]:
        order = _order(conn, order_id)
        if order is None:
            raise ToolRefused(
                f"cannot refund: no order {order_id!r}; check the id with lookup_order"
            )
        refunded = _refunded_cents(conn, order_id)
        left = order["cents"] - refunded
        if cents > left:
            raise ToolRefused(
                f"cannot refund {_money(cents)} on order {order_id}: it was paid "
                f"{_money(order['cents'])}, {_money(refunded)} is already refunded, so at most "
                f"{_money(left)} can be refunded"
            )
        seq = conn.execute(
            "INSERT INTO refunds (order_id, cents) VALUES (?, ?)", (order_id, cents)
        ).lastrowid
        return {
            "refund_id": f"R{seq}",
            "order_id": order_id,
            "amount": from_cents(cents),
            "status": "issued",
            "refundable_left": from_cents(left - cents),
        }

    with closing(connect(db)) as conn:
        return run_once(conn, "refund_card", {"order_id": order_id, "amount": amount}, effect)


def cancel_refund(db: str | os.PathLike[str], refund_id: str) -> dict[str, Any]:
    """Cancel a refund (the undo of ``refund_card``); cancelling a cancelled one changes nothing.

    Raises:
        ToolRefused: no refund has that id.
    """

    def effect(conn: sqlite3.Connection) -> dict[str, Any]:
        seq = refund_id[1:] if refund_id[:1] == "R" else ""
        row = (
            conn.execute(
                "SELECT seq, order_id, cents, status FROM refunds WHERE seq = ?", (int(seq),)
            ).fetchone()
            if seq.isdigit()
            else None
        )
        if row is None:
            raise ToolRefused(f"cannot cancel: no refund {refund_id!r} (ids look like R1)")
        if row["status"] == "issued":
            conn.execute(
                "UPDATE refunds SET status = 'cancelled', cancelled_at = datetime('now') "
                "WHERE seq = ?",
                (row["seq"],),
            )
        return {
            "refund_id": refund_id,
            "order_id": row["order_id"],
            "amount": from_cents(row["cents"]),
            "status": "cancelled",
        }

    with closing(connect(db)) as conn:
        return run_once(conn, "cancel_refund", {"refund_id": refund_id}, effect)


def send_email(db: str | os.PathLike[str], to: str, subject: str, body: str) -> dict[str, Any]:
    """Send an email by writing it to the outbox, at most once per idempotency key.

    Raises:
        ToolRefused: ``to`` is not one email address.
    """
    local, at, domain = to.strip().partition("@")
    if not (
        local and at and "." in domain and not any(c.isspace() or c in ",;" for c in to.strip())
    ):
        raise ToolRefused(f"cannot send: {to!r} is not one email address (e.g. ana@example.com)")

    def effect(conn: sqlite3.Connection) -> dict[str, Any]:
        seq = conn.execute(
            "INSERT INTO outbox (recipient, subject, body) VALUES (?, ?, ?)",
            (to.strip(), subject, body),
        ).lastrowid
        return {"email_id": f"E{seq}", "to": to.strip(), "subject": subject, "status": "sent"}

    with closing(connect(db)) as conn:
        return run_once(conn, "send_email", {"to": to, "subject": subject, "body": body}, effect)


def fetch_page(db: str | os.PathLike[str], url: str) -> str:
    """The text of the page at ``url`` from the fixture pages; an error text for any other URL."""
    with closing(connect(db)) as conn:
        row = conn.execute("SELECT body FROM pages WHERE url = ?", (url,)).fetchone()
        if row is not None:
            return str(row["body"])
        known = ", ".join(r["url"] for r in conn.execute("SELECT url FROM pages ORDER BY url"))
    return f"error: no page at {url!r}; this desk serves only its fixture pages: {known}"


# --- the tools --------------------------------------------------------------------------------


def support_tools(db_path: str | os.PathLike[str] | None = None) -> list[Tool]:
    """The desk's tools bound to one database file (created and seeded if missing).

    ``db_path`` defaults to ``$DURAGUARD_DB``, else ``support-desk.db``. The docstrings below
    are what the model is told of each tool.
    """
    db = open_db(db_path)

    def lookup_order_tool(order_id: str) -> dict[str, Any]:
        """Look an order up by id (e.g. A1): customer, item, amount paid, amount refundable."""
        return lookup_order(db, order_id)

    def refund_card_tool(order_id: str, amount: float) -> dict[str, Any]:
        """Refund an amount of an order to the card it was paid with; returns the refund id."""
        return refund_card(db, order_id, amount)

    def cancel_refund_tool(refund_id: str) -> dict[str, Any]:
        """Cancel a refund by its id (e.g. R1)."""
        return cancel_refund(db, refund_id)

    def send_email_tool(to: str, subject: str, body: str) -> dict[str, Any]:
        """Send an email to one address."""
        return send_email(db, to, subject, body)

    def fetch_page_tool(url: str) -> str:
        """Fetch the text of a web page by its URL."""
        return fetch_page(db, url)

    # `tool(fn, ...)` rather than `@tool(...)`: the decorator form is untyped for mypy.
    tools: list[Tool] = [
        tool(lookup_order_tool, name="lookup_order", kind="read"),
        tool(
            refund_card_tool,
            name="refund_card",
            kind="write",
            payment_field="amount",
            undo=Undo("cancel_refund", {"refund_id": "result.refund_id"}),
        ),
        tool(cancel_refund_tool, name="cancel_refund", kind="write"),
        tool(send_email_tool, name="send_email", kind="send"),
        tool(fetch_page_tool, name="fetch_page", kind="read", labels=("web",)),
    ]
    return tools
