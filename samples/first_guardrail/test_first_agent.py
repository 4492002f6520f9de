"""The first-guardrail sample: schema refuses, pii masks, the model answers, replay asks nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_sample_runs_the_agent_and_replays_it_without_asking_a_guardrail() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("first_agent.py"))],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "stop reason: done"
    assert lines[1] == "answer:      Order A-42 has shipped."
    assert [line.split()[1:] for line in lines if line.startswith("verdict:")] == [
        ["deny", "lookup_order", "(tool-args)", "by", "schema"],
        ["mask", "lookup_order", "(tool-result)", "by", "pii"],
    ]
    before, after = (int(w) for w in lines[-1].split() if w.isdigit())
    assert before > 0 and after == before
