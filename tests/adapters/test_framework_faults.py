"""A guarded framework run survives its worker killed with SIGKILL: an OpenAI Agents SDK tool
marked ``needs_approval`` parks for duraguard's signed yes, its worker process is killed while it
waits, another worker takes the run over, the yes arrives there, and the refund activity runs
exactly once. Replayed with no check run again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="install the extra: pip install 'duraguard[openai-agents]'")

from temporalio.testing import WorkflowEnvironment

from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
from duraguard.types import DECIDE
from tests._harness import parked
from tests._servers import Replayer

from ._openai_scenarios import OpenAIScenarios, ScenarioInput
from ._plan import plan
from ._rules import Rules
from .test_openai_scenarios import Setup

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
PRIVATE, PUBLIC = generate_keypair()


async def _worker(env: WorkflowEnvironment, queue: str, tmp: Path) -> asyncio.subprocess.Process:
    """A worker process of its own (``framework_worker.py``), once it polls ``queue``."""
    ready = tmp / f"ready-{uuid.uuid4().hex[:6]}"
    ready.mkdir()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.adapters.framework_worker",
        "--address", env.client.service_client.config.target_host, "--task-queue", queue,
        "--approvers", str(tmp / "approvers.json"), "--ready", str(ready),
        cwd=ROOT, env={**os.environ, "DURAGUARD_TEST_EFFECTS": str(tmp / "effects.txt")},
    )  # fmt: skip
    for _ in range(600):
        if any(ready.iterdir()) or proc.returncode is not None:
            break
        await asyncio.sleep(0.1)
    assert proc.returncode is None and any(ready.iterdir()), "the worker did not start"
    return proc


async def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        os.kill(proc.pid, signal.SIGKILL)  # a process this test started, by its pid
        await proc.wait()


async def test_a_native_approval_parked_when_its_worker_is_killed_runs_once_after_the_yes(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    (tmp_path / "approvers.json").write_text(json.dumps({"alice": {"public_key": PUBLIC.decode()}}))
    s = Setup(temporal_env)  # the client (both plugins) and the replayer's plugins
    queue = f"ff-{uuid.uuid4().hex[:8]}"
    first = await _worker(temporal_env, queue, tmp_path)
    second: Any = None
    try:
        prompt = plan([("refund_card", {"order_id": "A7", "amount": 20.0})], answer="refunded")
        handle = await s.client.start_workflow(
            OpenAIScenarios.run,
            ScenarioInput(
                scenario="approvals_activity", prompt=prompt, guardrails=[Rules().spec()]
            ),
            id=f"ff-{uuid.uuid4().hex[:10]}",
            task_queue=queue,
            execution_timeout=timedelta(seconds=120),
        )
        (ask,) = await parked(handle)
        assert ask.asked_by == "openai-agents:needs_approval"
        await _kill(first)
        second = await _worker(temporal_env, queue, tmp_path)
        decision = decision_for(ask, approver="alice", private_key=PRIVATE)
        check = await handle.execute_update(DECIDE, decision, result_type=ApprovalCheck)
        assert check.ok, check.reason
        out = await handle.result()
    finally:
        await _kill(first)
        if second is not None:
            await _kill(second)
    assert (out.stop_reason, out.output) == ("done", "refunded")
    assert (tmp_path / "effects.txt").read_text().splitlines() == ["A7 20.0"]
    before = s.guard.checks_run
    await Replayer(workflows=[OpenAIScenarios], plugins=[s.agents, s.guard]).replay_workflow(
        await handle.fetch_history(), raise_on_replay_failure=True
    )
    assert s.guard.checks_run == before
