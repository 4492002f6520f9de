"""The idempotent tool sample: a call that runs twice pays once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pay_invoice import open_payments, pay_once, payments

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("pay_invoice.py")


def test_one_key_pays_once_and_returns_the_first_payment(tmp_path: Path) -> None:
    db = open_payments(tmp_path / "payments.db")
    first = pay_once(db, "wf/run/c1", "INV-1", 120.0)
    again = pay_once(db, "wf/run/c1", "INV-1", 120.0)
    other = pay_once(db, "wf/run/c2", "INV-1", 120.0)
    assert first == again and other["payment_id"] != first["payment_id"]
    assert [k for k, _, _ in payments(db, "INV-1")] == ["wf/run/c1", "wf/run/c2"]


def test_the_tool_needs_a_call_to_key() -> None:
    import duraguard

    with pytest.raises(LookupError, match="only known inside a tool duraguard runs"):
        duraguard.idempotency_key()


def test_sample_runs_the_call_twice_and_pays_once() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}
    out = subprocess.run(
        [sys.executable, str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert re.fullmatch(
        r"invoice INV-\w+: the tool ran 2 times \(attempt 1 lost its result\)", lines[0]
    )
    assert re.fullmatch(
        r"payment  120\.00 under key pay-\w+/[0-9a-f-]{36}/c1, made on attempt 1", lines[1]
    ), lines[1]
    assert lines[2] == "payments made: 1"
    assert "'paid_on_attempt': 1" in lines[3]  # the second attempt returned the first payment
    assert "Traceback" not in out.stderr
