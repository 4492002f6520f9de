"""The approval sample: a refund over 100 waits for alice's signed yes, then runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from manager_approval import ManagerForBigRefunds

from duraguard import Subject
from duraguard.server import free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("manager_approval.py")


async def test_guardrail_asks_a_manager_only_for_refunds_over_100() -> None:
    g = ManagerForBigRefunds()
    small = Subject(placement="tool-args", tool="refund_card", value={"amount": 100})
    big = Subject(placement="tool-args", tool="refund_card", value={"amount": 250})
    assert (await g.check(small)).action == "allow"
    verdict = await g.check(big)
    assert verdict.action == "approve" and verdict.ask is not None
    assert verdict.ask.role == "manager"


def _run(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _assert_approved_run(stdout: str, address: str | None = None) -> None:
    lines = stdout.splitlines()
    assert lines[0] == (
        "parked:   c1 refund_card {'order_id': 'A-7', 'amount': 250.0}, asks role manager"
    )
    command = re.search(
        r"TEMPORAL_ADDRESS=(\S+) duraguard approve (\S+) c1 --key \S+alice\.pem", stdout
    )
    assert command is not None, stdout
    if address is not None:
        assert command.group(1) == address
    assert "answer:   ok=True approver=alice roles=['manager']" in lines
    assert "stop reason: done" in lines
    assert lines[-2:] == [
        "verdict:     approve c1 refund_card by manager-for-big-refunds",
        "verdict:     allow   c1 refund_card by person, approved by alice",
    ]


def test_sample_parks_the_refund_and_runs_it_after_the_signed_yes() -> None:
    _assert_approved_run(_run({k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}))


@pytest.mark.timeout(60)
def test_sample_uses_the_server_named_by_temporal_address() -> None:
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "duraguard",
            "server",
            "--db-filename",
            "",
            "--headless",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        for line in server.stdout or ():
            if line.startswith("export TEMPORAL_ADDRESS="):
                address = line.split("=", 1)[1].strip()
                break
        else:
            pytest.fail("duraguard server did not start")
        _assert_approved_run(_run({**os.environ, "TEMPORAL_ADDRESS": address}), address)
    finally:
        server.terminate()
        server.wait(timeout=20)
