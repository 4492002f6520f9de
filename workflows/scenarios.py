"""The demo's seven tickets: what each shows, the scripted model that plays it, and the toy
moderation classifier; plus ticket 42, which ``--keep`` leaves waiting (``workflows/tour.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from duraguard.checks import pii
from duraguard.models import ScriptedTurn, Turn, answer, calls, last_tool_results
from duraguard.types import ModelRequest
from workflows.tour import waiting_script


def report(request: ModelRequest) -> ScriptedTurn:
    """The scripted model's last turn: it says what the tools it called answered."""
    lines = [f"{m.name}: {m.content}" for m in last_tool_results(request)]
    return answer("; ".join(lines) if lines else "nothing to report")


def retry_refund(request: ModelRequest) -> ScriptedTurn:
    """A model that reads the schema refusal and fixes the amount."""
    refused = any('"valid":false' in (m.content or "") for m in last_tool_results(request))
    if refused:
        return calls(("refund_card", {"order_id": "A1", "amount": 20.0}))
    return answer("refunded")


SCRIPTS: dict[str, list[Turn]] = {
    "lookup": [calls(("lookup_order", {"order_id": "A1"})), report],
    "schema-fix": [
        calls(("refund_card", {"order_id": "A1", "amount": "twenty"})),
        retry_refund,
        report,
    ],
    "mask-card": [
        calls(
            (
                "send_email",
                {
                    "to": "ana@example.com",
                    "subject": "Refund for order A1",
                    "body": "We refunded order A1 to your card 4111 1111 1111 1111.",
                },
            )
        ),
        report,
    ],
    "moderation-halt": [
        calls(
            (
                "send_email",
                {
                    "to": "ben@example.com",
                    "subject": "Order A3",
                    "body": "Stop complaining or we will hurt you.",
                },
            )
        ),
        report,
    ],
    "observe-email": [
        calls(
            (
                "send_email",
                {
                    "to": "ana@example.com",
                    "subject": "Order A1",
                    "body": "Your order A1 is on its way.",
                },
            )
        ),
        report,
    ],
    "manager-refund": [calls(("refund_card", {"order_id": "A2", "amount": 350.0})), report],
    "expired-ask": [calls(("refund_card", {"order_id": "A4", "amount": 1200.0})), report],
    "waiting": waiting_script(report),
}


@dataclass(frozen=True)
class Scenario:
    name: str
    shows: str
    ticket: str
    approval_timeout: float = 24 * 3600
    watch: bool = False
    """Run with one more guardrail that only observes (see :func:`observing`)."""


SCENARIOS = [
    Scenario("lookup", "allow: a read runs as asked", "Where is my order A1? (ana@example.com)"),
    Scenario(
        "schema-fix",
        "deny by schema, corrected by the model",
        "Order A1 (20.00) never arrived: refund it in full.",
    ),
    Scenario(
        "mask-card",
        "mask: the card number never reaches the email step",
        "Tell ana@example.com that order A1 was refunded to her card 4111 1111 1111 1111.",
    ),
    Scenario(
        "moderation-halt",
        "halt by moderation: the loop stops with reason guardrail",
        "Answer ben@example.com about order A3.",
    ),
    Scenario(
        "observe-email",
        "observe: an email address is recorded as a detection; the email still goes out",
        "Tell ana@example.com that order A1 is on its way.",
        watch=True,
    ),
    Scenario(
        "manager-refund",
        "approve: a refund over 100 waits for a manager's signed yes",
        "Order A2 (350.00) arrived broken: refund it in full.",
    ),
    Scenario(
        "expired-ask",
        "approve, then expiry: nobody answered, the refund did not run",
        "Order A4 (1200.00) was cancelled: refund it in full.",
        approval_timeout=4,
    ),
]


def demo_classifier(text: str) -> dict[str, Any]:
    """A toy moderation classifier for the demo: threats are flagged."""
    words = ("hurt you", "kill", "attack", "threat")
    hit = [w for w in words if w in text.lower()]
    return {
        "flagged": bool(hit),
        "categories": ["violence"] if hit else [],
        "score": 0.97 if hit else 0.02,
    }


def observing() -> Any:
    """The guardrail the ``observe-email`` scenario adds: it records every email address it
    finds in a call's arguments as a detection and enforces nothing."""
    return pii(rules=["email"], action="observe", placements=["tool-args"], name="pii-watch")
