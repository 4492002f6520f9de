"""The validation sample: a final answer that disagrees with the tool results is corrected."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from refund_answer import SESSION, judge

from duraguard.checks.validation import ToolRecord


async def test_answer_agreeing_with_the_refund_made_is_accepted() -> None:
    action, reason = await judge({"order_id": "A-17", "refund_amount": 25.0, "refund_id": "R-1"})
    assert (action, reason) == ("allow", None)


async def test_answer_claiming_another_amount_is_refused_naming_claim_and_record() -> None:
    action, reason = await judge('{"order_id": "A-17", "refund_amount": 40.0}')
    assert action == "deny"
    assert reason == (
        "refund_amount is 40.0 but refund_card refunded 25.0 for order 'A-17'. "
        "Answer again with the values the tools returned."
    )


async def test_answer_claiming_a_refund_that_never_happened_is_refused() -> None:
    action, reason = await judge({"order_id": "B-2", "refund_amount": 25.0})
    assert action == "deny"
    assert "no refund_card call in this session refunded it (refunded: A-17)" in (reason or "")


async def test_every_wrong_field_is_named_in_one_correction() -> None:
    records = [
        *SESSION[:1],
        ToolRecord(
            tool="refund_card", result={"order_id": "A-17", "amount": 90.0, "refund_id": "R-9"}
        ),
    ]
    action, reason = await judge(
        {"order_id": "A-17", "refund_amount": 85.0, "refund_id": "R-1"}, records
    )
    assert action == "deny"
    assert "refund_amount is 85.0 but refund_card refunded 90.0" in (reason or "")
    assert "refund_id is 'R-1' but refund_card returned 'R-9'" in (reason or "")
    assert "exceeds the order total of 80.0" in (reason or "")


async def test_answer_that_is_not_a_record_is_asked_for_the_fields() -> None:
    action, reason = await judge("I refunded the customer.")
    assert action == "deny" and '"order_id"' in (reason or "")


def test_sample_runs_as_a_script() -> None:
    script = Path(__file__).with_name("refund_answer.py")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].startswith("deny")
    assert "correction: refund_amount is 40.0" in out.stdout
