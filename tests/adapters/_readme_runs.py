"""What the README snippet tests share (``test_readme_adapters.py``, ``test_readme_strands.py``,
each importing only its own frameworks): a snippet's module written and imported, and a run whose
refund parks until alice's signed yes, then replays with no check run again."""

from __future__ import annotations

import importlib
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.worker import Worker

import duraguard
from duraguard import ApproverKeys
from duraguard.approvals import ApprovalCheck, decision_for, generate_keypair
from duraguard.audit import audit_rows
from tests._harness import parked
from tests._servers import Replayer

PRIVATE, PUBLIC = generate_keypair()
APPROVERS = ApproverKeys.from_mapping({"alice": {"public_key": PUBLIC.decode()}})


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Any:
    name = f"readme_adapter_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


async def _approve_the_refund(
    client: Client, workflow: Any, queue: str, plugins: list[Any], *args: Any
) -> Any:
    """Run the workflow; the refund parks; alice says yes; the run ends; replay it."""
    async with Worker(client, task_queue=queue, workflows=[workflow]):
        handle = await client.start_workflow(
            workflow.run, args=list(args), id=f"readme-{uuid.uuid4().hex[:8]}", task_queue=queue,
            execution_timeout=timedelta(seconds=60),
        )  # fmt: skip
        (ask,) = await parked(handle)
        assert (ask.tool, ask.asked_by) == ("refund_order", "policy")
        decision = decision_for(ask, approver="alice", private_key=PRIVATE)
        check = await handle.execute_update(duraguard.DECIDE, decision, result_type=ApprovalCheck)
        assert check.ok, check.reason
        out = await handle.result()
    guard = next(p for p in plugins if isinstance(p, duraguard.DuraguardPlugin))
    before = guard.checks_run
    await Replayer(workflows=[workflow], plugins=plugins).replay_workflow(
        await handle.fetch_history(), raise_on_replay_failure=True
    )
    assert guard.checks_run == before, "replay ran a check again"
    rows = await audit_rows(handle, client.data_converter)
    return out, [
        (r.tool, r.action, r.by, r.check) for r in rows if r.action != "allow" or r.by == "person"
    ]


def _asked_then_allowed(verdicts: list[Any]) -> None:
    """The refund asked by the policy, then allowed by alice; nothing else did anything."""
    assert [tuple(v[:3]) for v in verdicts] == [
        ("refund_order", "approve", "policy"), ("refund_order", "allow", "person"),
    ]  # fmt: skip
