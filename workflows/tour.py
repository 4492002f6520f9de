"""What ``duraguard demo --keep`` leaves for the README's tour: the dev server on Temporal's
usual ports (so ``duraguard ...`` needs no address), and ticket ``support-42`` parked on a
manager's yes, with the commands that act on it printed as the README prints them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from duraguard.models import Turn, calls
from duraguard.server import accepts_connections, free_port

WAITING_ID = "support-42"
"""The ticket the tour acts on: the README's commands name it."""
WAITING_CALL = "c3"
WAITING_TICKET = (
    "Order A4 (1200.00) arrived damaged: look it up, tell the customer, and refund it in full."
)
DEFAULT_PORT, DEFAULT_UI_PORT = 7233, 8233
"""Where ``temporal server start-dev`` listens, and where the CLI looks without an address."""


def waiting_script(report: Turn) -> list[Turn]:
    """Ticket 42, scripted: a lookup (c1), an email to the customer (c2), then the refund (c3),
    over 100, which the rule sheet asks a manager about."""
    return [
        calls(("lookup_order", {"order_id": "A4"})),
        calls(
            (
                "send_email",
                {
                    "to": "dev@example.com",
                    "subject": "Order A4",
                    "body": "Sorry about the damaged desk: a full refund is on its way.",
                },
            )
        ),
        calls(("refund_card", {"order_id": "A4", "amount": 1200.0})),
        report,
    ]


def pick_ports(port: int | None, *, fixed: bool) -> tuple[int, int]:
    """The server's and the Web UI's ports: ``port`` if given (0 picks one), else Temporal's
    usual 7233 and 8233 when ``fixed`` and both are free, else free ones."""
    if port is not None:
        return port or free_port(), free_port()
    if fixed and not any(accepts_connections("127.0.0.1", p) for p in (7233, 8233)):
        return DEFAULT_PORT, DEFAULT_UI_PORT
    return free_port(), free_port()


def shown_path(path: Path) -> str:
    """``path`` relative to the current folder where it lies inside it (as a person types it)."""
    try:
        return str(path.resolve().relative_to(Path(os.getcwd()).resolve()))
    except ValueError:
        return str(path)


def next_steps(
    *,
    address: str,
    ui_url: str | None,
    key: Path,
    ask: Any,
    codec_keys: str | None,
    venv: bool,
) -> list[str]:
    """The lines ``--keep`` prints: what waits, and the commands of the README's tour."""
    lines = [
        f"{WAITING_ID} waits for a manager's yes: {ask.tool} {ask.args} (call {ask.call_id}).",
        "In another terminal, in this folder:",
        "",
    ]
    if venv:
        lines.append("  source .venv/bin/activate       # puts `duraguard` on your PATH")
    if address != f"127.0.0.1:{DEFAULT_PORT}":
        lines.append(f"  export TEMPORAL_ADDRESS={address}   # the demo is not on 7233")
    if codec_keys:
        lines.append(f"  export DURAGUARD_CODEC_KEYS={codec_keys}   # the demo's key (--encrypt)")
    lines += [
        "  duraguard pending",
        f"  duraguard approve {WAITING_ID} {ask.call_id} --key {shown_path(key)}",
        f"  duraguard audit {WAITING_ID}",
    ]
    if ui_url:
        lines += [
            "",
            f"Web UI: {ui_url}/namespaces/default/workflows/{WAITING_ID} "
            "(its User Metadata tab holds the verdict table)",
        ]
    return lines


def in_venv_of(root: Path) -> bool:
    """Whether this Python is the checkout's ``.venv`` (then the tour says how to activate it)."""
    import sys

    return Path(sys.prefix).resolve() == (root / ".venv").resolve()
