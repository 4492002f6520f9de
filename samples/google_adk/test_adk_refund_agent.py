"""The Google ADK sample: a refund refused until the order was looked up (the model corrects
itself), a card number masked before the tool gets it, the refund run after alice's yes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_sample_refuses_masks_and_runs_the_refund_after_the_signed_yes() -> None:
    pytest.importorskip(
        "google.adk", reason="install the extra: pip install 'duraguard[google-adk]'"
    )
    env = {k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("adk_refund_agent.py"))],
        capture_output=True,
        text=True,
        timeout=90,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == [
        "parked:  c5 refund_card {'order_id': 'A-7', 'amount': 250.0} asked by "
        "google-adk:require_confirmation",
        "yes:     ok=True approver=alice",
    ]
    tools = [line for line in lines if line.startswith("tool:")]
    assert "look order A-7 up before refunding it" in tools[0]
    assert tools[1:] == [
        'tool:    {"result": "{\\"order_id\\": \\"A-7\\", \\"amount\\": 250.0, \\"status\\": \\"delivered\\"}"}',
        'tool:    {"result": "noted on A-7: paid with card [CARD]"}',
        'tool:    {"result": "{\\"order_id\\": \\"A-7\\", \\"refunded\\": 250.0}"}',
    ]
    assert [line for line in lines if line.startswith("verdict:")] == [
        "verdict: deny    c2 refund_card by looked-up-first",
        "verdict: mask    c4 add_note by pii",
        "verdict: approve c5 refund_card by google-adk:require_confirmation",
        "verdict: allow   c5 refund_card by person, approved by alice",
    ]
    assert lines[-2:] == ["stop reason: done", "answer:      Refunded 250.00 for order A-7."]
    # The card in any spelling (a bare "4111" may be part of a run id).
    assert re.search(r"4111\D?1111", out.stdout) is None
