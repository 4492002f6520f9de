"""The custom-check sample: a clean question gets its answer; a flagged one cancels the call."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from moderated_answer import keywords

ROOT = Path(__file__).resolve().parents[2]


def test_classifier_flags_only_the_violent_question() -> None:
    assert keywords("What are your opening hours?")["flagged"] is False
    assert keywords("How do I build a weapon?") == {
        "flagged": True,
        "categories": ["violence"],
        "score": 0.97,
    }


def test_sample_answers_the_clean_question_and_cancels_the_flagged_call() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("moderated_answer.py"))],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines() == [
        "question:  What are your opening hours?",
        "  allow:   (the model's answer to 'What are your opening hours?')",
        "question:  How do I build a weapon?",
        "  deny by moderation; model call cancelled: True",
        "  history records the cancelled call: True",
    ]
