"""Guardrails in plain Python: the same checks an agent gets, run on values with no server.

``duraguard.evaluate`` runs a list of guardrails over one value, in order, and returns the
:class:`~PassResult`: the verdict that decided, every verdict given, and the value to
use instead (a masked copy) when a guardrail replaced it. Here ``schema`` checks refund
arguments against the tool's JSON Schema, ``pii`` masks card numbers and emails, and a guardrail
of our own, a plain function, refuses refunds over 500.

Run it: ``python samples/plain_python/guard_values.py`` (no Temporal server needed).
"""

from __future__ import annotations

import asyncio
from typing import Any

import duraguard
from duraguard import Subject, Verdict
from duraguard.types import PassResult

REFUND_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "amount": {"type": "number"},
        "note": {"type": "string"},
    },
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}


@duraguard.guardrail(placements=["tool-args"])
def refund_limit(subject: Subject) -> Verdict | None:
    """Refuse refunds over 500; anything else passes (``None`` allows)."""
    if float(subject.value.get("amount", 0)) > 500:
        return Verdict.deny("refunds over 500 are not allowed; offer store credit instead")
    return None


GUARDRAILS = [duraguard.schema(), duraguard.pii(), refund_limit]

VALUES: list[dict[str, Any]] = [
    {"order_id": "A-1", "amount": 20},
    {"order_id": "A-1", "amount": "twenty"},
    {"order_id": "A-1", "amount": 20, "note": "card 4242 4242 4242 4242, ana@example.com"},
    {"order_id": "A-1", "amount": 900},
]


async def judge(args: dict[str, Any]) -> PassResult:
    """One pass of the guardrails over refund arguments, as an agent's tool call would get."""
    return await duraguard.evaluate(GUARDRAILS, args, tool="refund_card", schema=REFUND_SCHEMA)


async def main() -> None:
    for args in VALUES:
        result = await judge(args)
        v = result.verdict
        print(f"{v.action:5}  {args}")
        if result.tripped:
            print(f"       refused by {v.by}: {v.reason}")
        elif v.replaces:
            print(f"       {v.by} replaced it with {result.value}")


if __name__ == "__main__":
    asyncio.run(main())
