"""Validation guardrails: the agent's final answer against the session's tool results."""

from __future__ import annotations

from typing import Any

from duraguard._types import SessionView, ToolRecord, Verdict
from duraguard.checks import ValidationContext, ValidationGuardrail, validator
from duraguard.engine import evaluate

RECORDS = [
    ToolRecord(
        tool="lookup_order",
        call_id="c1",
        args={"order_id": "A-17"},
        result={"order_id": "A-17", "total": 80.0},
    ),
    ToolRecord(
        tool="refund_card",
        call_id="c2",
        args={"order_id": "A-17", "amount": 25.0},
        result={"order_id": "A-17", "amount": 25.0, "refund_id": "R-1"},
    ),
]


def _session(records: list[ToolRecord]) -> SessionView:
    return SessionView(results=tuple(records))


@validator(name="refund-amount")
def refund_amount(answer: Any, ctx: ValidationContext) -> str | None:
    for rec in ctx.results("refund_card"):
        if (
            rec.result["order_id"] == ctx.data["order_id"]
            and rec.result["amount"] != ctx.data["refund"]
        ):
            return (
                f"the answer says refund {ctx.data['refund']} for order {ctx.data['order_id']}, "
                f"but refund_card returned {rec.result['amount']}"
            )
    return None


async def test_validator_accepts_an_answer_that_agrees_with_the_records() -> None:
    answer = '{"order_id": "A-17", "refund": 25.0}'
    result = await evaluate(
        [refund_amount], answer, placement="final-answer", session=_session(RECORDS)
    )
    assert result.verdict.action == "allow"


async def test_validator_refuses_an_answer_that_disagrees_with_a_tool_result() -> None:
    answer = {"order_id": "A-17", "refund": 40.0}
    result = await evaluate(
        [refund_amount], answer, placement="final-answer", session=_session(RECORDS)
    )
    assert result.verdict.action == "deny"
    assert result.verdict.by == "refund-amount"
    assert result.verdict.reason == (
        "the answer says refund 40.0 for order A-17, but refund_card returned 25.0"
    )


async def test_validator_runs_only_on_the_final_answer() -> None:
    result = await evaluate([refund_amount], {"order_id": "A-17", "refund": 1}, tool="refund_card")
    assert not result.tripped and result.skipped == ("refund-amount",)


async def test_validator_that_raises_refuses_the_answer() -> None:
    # ctx.data["refund"] is missing: the validator cannot decide, so the answer is not accepted.
    result = await evaluate(
        [refund_amount], {"order_id": "A-17"}, placement="final-answer", session=_session(RECORDS)
    )
    assert result.verdict.action == "deny" and result.verdict.outcome == "partial"


async def test_failed_tool_results_are_not_records() -> None:
    failed = ToolRecord(tool="refund_card", result={"order_id": "A-17", "amount": 99.0}, ok=False)
    ctx = ValidationContext.of(
        evaluate_subject({"order_id": "A-17", "refund": 25.0}, _session([*RECORDS, failed]))
    )
    assert [r.call_id for r in ctx.results()] == ["c1", "c2"]


def evaluate_subject(answer: Any, session: SessionView) -> Any:
    from duraguard._types import Subject

    return Subject(placement="final-answer", value=answer, session=session)


async def test_subclass_validator_and_false_gives_a_generic_correction() -> None:
    class NonEmpty(ValidationGuardrail):
        name = "non-empty"

        async def validate(self, answer: Any, ctx: ValidationContext) -> bool:
            return bool(answer)

    result = await evaluate([NonEmpty()], "", placement="final-answer")
    assert result.verdict.action == "deny"
    assert "'non-empty'" in (result.verdict.reason or "")


async def test_async_validator_can_return_a_verdict() -> None:
    @validator
    async def halts_on_secret(answer: Any, ctx: ValidationContext) -> Verdict | None:
        return Verdict.halt("the answer leaks an internal id") if "INT-" in str(answer) else None

    assert halts_on_secret.name == "halts-on-secret"
    result = await evaluate([halts_on_secret], "see INT-42", placement="final-answer")
    assert result.verdict.action == "halt"


async def test_validator_with_no_session_sees_no_records() -> None:
    seen: list[int] = []

    @validator(name="count")
    def count(answer: Any, ctx: ValidationContext) -> bool:
        seen.append(len(ctx.records))
        return True

    await evaluate([count], "ok", placement="final-answer")
    assert seen == [0]
