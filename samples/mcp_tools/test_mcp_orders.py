"""The MCP sample: kinds from the server's hints, a read allowed, a private webhook refused, an
isError answer read as a failure, and a replay that asks no guardrail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_sample_guards_an_mcp_servers_tools_and_replays_without_asking() -> None:
    pytest.importorskip("mcp", reason="install the extra: pip install 'duraguard[mcp]'")
    env = {k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("mcp_orders.py"))],
        capture_output=True,
        text=True,
        timeout=90,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    tools = [line.split()[1:] for line in lines if line.startswith("tool:")]
    assert tools == [
        ["get_order", "read", "asks=False"],
        ["cancel_order", "write", "asks=True"],
        ["post_webhook", "send", "asks=False"],
        ["order_history", "read", "asks=False"],
    ]
    calls = [line.split()[1:4] for line in lines if line.startswith("call:")]
    assert calls == [
        ["get_order", "allow", "ran=True"],
        ["post_webhook", "deny", "ran=False"],
        ["order_history", "allow", "ran=True"],
    ]
    assert "order A9 is locked by an ongoing audit" in next(
        line for line in lines if line.startswith("call:     order_history")
    )
    before, after = (int(w) for w in lines[-1].split() if w.isdigit())
    # three judged inside their tool steps, and the failed read's arguments again in a pass
    assert before == 4 and after == before
