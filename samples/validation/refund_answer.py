"""A validation guardrail: the agent's final answer must agree with what its tools returned.

A support agent finishes with a JSON answer such as
``{"order_id": "A-17", "refund_amount": 40.0, "refund_id": "R-1"}``. Before the caller sees it,
``refund_answer_matches_records`` compares every claim with the session's tool results: the
refund the ``refund_card`` tool really made for that order, and the order ``lookup_order`` saw.
A disagreement goes back to the model as a correction naming the field, the claim and the
record, so it can answer again with the facts it already holds.

Run it: ``python samples/validation/refund_answer.py`` (no server needed: the check is plain
Python; in an agent the plugin runs it at placement ``final-answer``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from duraguard.checks.validation import ValidationContext, validator
from duraguard.engine import evaluate
from duraguard.types import SessionView, ToolRecord


def _same_money(a: Any, b: Any) -> bool:
    try:
        return round(float(a), 2) == round(float(b), 2)
    except (TypeError, ValueError):
        return False


@validator(name="refund-answer-matches-records")
def refund_answer_matches_records(answer: Any, ctx: ValidationContext) -> str | None:
    """Accept the answer only if its order, amount and refund id match a refund that happened."""
    data = ctx.data
    if not isinstance(data, dict) or "order_id" not in data or "refund_amount" not in data:
        return (
            'answer with a JSON object holding "order_id" and "refund_amount" '
            '(and "refund_id" when a refund was made)'
        )
    order = data["order_id"]
    refunds = [r for r in ctx.results("refund_card") if r.result.get("order_id") == order]
    if not refunds:
        seen = sorted({str(r.result.get("order_id")) for r in ctx.results("refund_card")})
        return (
            f"the answer claims a refund for order {order!r}, but no refund_card call in this "
            f"session refunded it (refunded: {', '.join(seen) or 'none'}); answer only with "
            "refunds that were made"
        )
    made = refunds[-1].result
    problems = []
    if not _same_money(data["refund_amount"], made.get("amount")):
        problems.append(
            f"refund_amount is {data['refund_amount']} but refund_card refunded "
            f"{made.get('amount')} for order {order!r}"
        )
    if "refund_id" in data and data["refund_id"] != made.get("refund_id"):
        problems.append(
            f"refund_id is {data['refund_id']!r} but refund_card returned {made.get('refund_id')!r}"
        )
    for looked in ctx.results("lookup_order"):
        total = looked.result.get("total")
        if looked.result.get("order_id") == order and total is not None:
            if float(data["refund_amount"]) > float(total):
                problems.append(f"refund_amount exceeds the order total of {total}")
    if problems:
        return "; ".join(problems) + ". Answer again with the values the tools returned."
    return None


SESSION = [
    ToolRecord(
        tool="lookup_order",
        call_id="call-1",
        args={"order_id": "A-17"},
        result={"order_id": "A-17", "total": 80.0, "status": "delivered"},
    ),
    ToolRecord(
        tool="refund_card",
        call_id="call-2",
        args={"order_id": "A-17", "amount": 25.0},
        result={"order_id": "A-17", "amount": 25.0, "refund_id": "R-1"},
    ),
]


async def judge(answer: Any, records: list[ToolRecord] = SESSION) -> tuple[str, str | None]:
    """Run the validator on ``answer`` the way the loop does; return (action, reason)."""
    result = await evaluate(
        [refund_answer_matches_records],
        answer,
        placement="final-answer",
        session=SessionView(results=tuple(records)),
    )
    return result.verdict.action, result.verdict.reason


async def main() -> None:
    for answer in (
        '{"order_id": "A-17", "refund_amount": 40.0, "refund_id": "R-1"}',
        '{"order_id": "A-17", "refund_amount": 25.0, "refund_id": "R-1"}',
    ):
        action, reason = await judge(answer)
        print(f"{action:5}  {answer}")
        if reason:
            print(f"       correction: {reason}")


if __name__ == "__main__":
    asyncio.run(main())
