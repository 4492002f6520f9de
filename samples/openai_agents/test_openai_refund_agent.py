"""The OpenAI Agents SDK sample: a card number masked before a function tool gets it, a refund
parked until alice's signed yes, then run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_sample_masks_the_note_and_runs_the_refund_after_the_signed_yes() -> None:
    pytest.importorskip(
        "agents", reason="install the extra: pip install 'duraguard[openai-agents]'"
    )
    env = {k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("openai_refund_agent.py"))],
        capture_output=True,
        text=True,
        timeout=90,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == [
        "parked:  c4 refund_card {'order_id': 'A-7', 'amount': 250.0} asks role manager",
        "yes:     ok=True approver=alice",
    ]
    assert "tool:    noted on A-7: paid with card [CARD]" in lines
    assert 'tool:    {"order_id": "A-7", "refunded": 250.0}' in lines
    assert [line for line in lines if line.startswith("verdict:")] == [
        "verdict: mask    c3 add_note by pii",
        "verdict: approve c4 refund_card by manager-for-big-refunds",
        "verdict: allow   c4 refund_card by person, approved by alice",
    ]
    assert lines[-2:] == ["stop reason: done", "answer:      Refunded 250.00 for order A-7."]
    # The card in any spelling (a bare "4111" may be part of a run id).
    assert re.search(r"4111\D?1111", out.stdout) is None
