"""The plain-Python sample: evaluate() gives each value the verdict an agent's call would get."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from guard_values import VALUES, judge

ROOT = Path(__file__).resolve().parents[2]


async def test_valid_refund_is_allowed_unchanged() -> None:
    result = await judge(VALUES[0])
    assert (result.verdict.action, result.tripped, result.replaced) == ("allow", False, False)


async def test_wrong_type_is_refused_by_schema_naming_the_field() -> None:
    result = await judge(VALUES[1])
    assert (result.verdict.action, result.verdict.by) == ("deny", "schema")
    assert "#/amount: 'twenty' is not of type 'number'" in (result.verdict.reason or "")


async def test_card_and_email_are_masked_and_the_pass_goes_on() -> None:
    result = await judge(VALUES[2])
    assert (result.verdict.action, result.verdict.by, result.tripped) == ("mask", "pii", False)
    assert result.value["note"] == "card [CARD], [EMAIL]"
    # Every guardrail judged it: the mask does not end the pass.
    assert [v.action for v in result.verdicts] == ["allow", "mask", "allow"]


async def test_custom_function_guardrail_refuses_a_large_refund() -> None:
    result = await judge(VALUES[3])
    assert (result.verdict.action, result.verdict.by) == ("deny", "refund-limit")
    assert result.value is None


def test_sample_prints_a_verdict_per_value() -> None:
    out = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("guard_values.py"))],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr
    actions = [line.split()[0] for line in out.stdout.splitlines() if not line.startswith(" ")]
    assert actions == ["allow", "deny", "mask", "deny"]
    assert "refused by refund-limit: refunds over 500" in out.stdout
