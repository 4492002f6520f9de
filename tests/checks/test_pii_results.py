"""pii() on tool results, action="deny": one refusal naming every kind, logged without content."""

from __future__ import annotations

import logging

import pytest

from duraguard.checks import pii
from duraguard.engine import evaluate

RESULT = {
    "customer": "Ana Lopes",
    "email": "ana.lopes@example.com",
    "ssn": "123-45-6789",
    "notes": ["call +351 912 345 678", "card 4111 1111 1111 1111 on file"],
}


def _result_guard():  # type: ignore[no-untyped-def]
    return pii(placements=["tool-result"], action="deny", log_level="error")


async def test_pii_on_results_refuses_once_naming_every_kind_found() -> None:
    result = await evaluate(
        [_result_guard()], RESULT, placement="tool-result", tool="lookup_customer"
    )
    assert result.verdict.action == "deny"
    assert len(result.verdicts) == 1
    reason = result.verdict.reason or ""
    for kind in ("credit-card", "email", "phone", "ssn"):
        assert kind in reason
    assert "'lookup_customer'" in reason
    assert result.value is None  # a refused result is not handed on


async def test_pii_refusal_logs_kinds_and_tool_at_the_level_set_never_the_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="duraguard"):
        await evaluate([_result_guard()], RESULT, placement="tool-result", tool="lookup_customer")
    lines = [r for r in caplog.records if r.name == "duraguard" and "pii" in r.getMessage()]
    assert len(lines) == 1
    line = lines[0]
    assert line.levelno == logging.ERROR
    text = line.getMessage()
    assert "lookup_customer" in text
    assert "credit-card, email, phone, ssn" in text
    for secret in ("ana.lopes@example.com", "123-45-6789", "4111", "912 345 678", "Ana"):
        assert secret not in text


@pytest.mark.parametrize(
    ("log_level", "levels"),
    [
        (None, [logging.DEBUG]),
        ("info", [logging.INFO]),
        ("warning", [logging.WARNING]),
        ("off", []),
    ],
)
async def test_pii_logs_a_finding_at_the_level_the_user_sets(
    caplog: pytest.LogCaptureFixture, log_level: str | None, levels: list[int]
) -> None:
    guard = pii() if log_level is None else pii(log_level=log_level)  # type: ignore[arg-type]
    with caplog.at_level(logging.DEBUG, logger="duraguard"):
        await evaluate([guard], {"e": "bo@example.org"}, tool="t")
    assert [r.levelno for r in caplog.records if r.name == "duraguard"] == levels


async def test_pii_on_results_does_not_judge_tool_arguments() -> None:
    result = await evaluate([_result_guard()], RESULT, placement="tool-args", tool="t")
    assert not result.tripped
    assert result.skipped == ("pii",)


async def test_pii_on_results_lets_a_clean_result_through() -> None:
    clean = {"order": "A-17", "status": "shipped", "total": 42.5}
    result = await evaluate([_result_guard()], clean, placement="tool-result", tool="lookup_order")
    assert result.verdict.action == "allow"
    assert not result.replaced and result.use(clean) == clean
