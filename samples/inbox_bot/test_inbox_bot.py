"""The inbox bot sample: a refund parked by the support desk is listed in the bot's chat, a
mistaken command gets a helpful answer, and a yes signed by the bot with alice's key runs the
refund; the run's audit names alice."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from pathlib import Path

import httpx2 as httpx
import pytest
from temporalio.client import Client
from temporalio.worker import Worker

import duraguard
from activities import support_tools
from duraguard.audit import audit_rows
from duraguard.inbox import InboxServer, create_app
from duraguard.models import ScriptedModels
from duraguard.server import DevServer
from workflows.demo import SCENARIOS, SCRIPTS, _keys, _wait_pending, demo_classifier
from workflows.support import RULES, SupportAgent, Ticket

pytestmark = pytest.mark.timeout(90)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("inbox_bot.py")
CHAT = "list\nshow 1\napprove 7\ndeny 1\napprove 1 photos of the broken item received\nquit\n"


async def _listed(url: str, workflow_id: str) -> None:
    async with httpx.AsyncClient(base_url=url) as c:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if any(
                a["workflow_id"] == workflow_id for a in (await c.get("/api/asks")).json()["asks"]
            ):
                return
            await asyncio.sleep(0.2)
    raise AssertionError(f"{workflow_id} never appeared in the inbox")


async def test_the_bot_lists_the_parked_refund_and_approves_it_with_alices_key(
    tmp_path: Path,
) -> None:
    key, approvers = _keys(tmp_path)
    plugin = duraguard.DuraguardPlugin(
        tools=support_tools(tmp_path / "support.db"),
        models={"scripted": ScriptedModels(SCRIPTS)},
        classifiers={"demo": demo_classifier},
        approvers=approvers,
        rules=RULES,
        search_attributes=True,
    )
    async with DevServer(ui=False) as server:
        client = await Client.connect(server.address, plugins=[plugin])
        queue = f"bot-{uuid.uuid4().hex[:6]}"
        async with (
            Worker(client, task_queue=queue, workflows=[SupportAgent]),
            InboxServer(create_app(client, poll=0.2)) as inbox,
        ):
            ticket = next(s.ticket for s in SCENARIOS if s.name == "manager-refund")
            handle = await client.start_workflow(
                SupportAgent.run,
                Ticket(ticket=ticket, model="scripted:manager-refund"),
                id=f"support-bot-{uuid.uuid4().hex[:6]}",
                task_queue=queue,
            )
            await _wait_pending(handle)
            await _listed(inbox.url, handle.id)
            bot = await asyncio.create_subprocess_exec(
                sys.executable, str(SCRIPT),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": str(ROOT), "INBOX_URL": inbox.url,
                     "DURAGUARD_KEY": str(key)},
            )  # fmt: skip
            out, _ = await asyncio.wait_for(bot.communicate(CHAT.encode()), 60)
            chat = out.decode().splitlines()
            assert bot.returncode == 0, "\n".join(chat)
            result = await handle.result()
        rows = await audit_rows(handle, client.data_converter)
    assert chat[0] == "bot> Hi alice. 1 call(s) wait for a person. Type 'list' to see them."
    assert chat[2].startswith(
        f'bot>   1. refund_card {{"order_id": "A2", "amount": 350.0}} on {handle.id} (c1): '
        "the rule 'refunds over 100 need a manager' needs a person's yes from a manager"
    ), chat
    assert f"bot> refund_card on {handle.id}, run {handle.result_run_id}:" in chat
    assert "bot>   turn 1 c1 refund_card: approve by policy (policy.your_rules)" in chat
    assert "bot> Which one? Give a number from 'list' (1-1)." in chat
    assert "bot> Say why, so the agent and the audit know: deny N reason" in chat
    assert chat[-1] == f"bot> Done: refund_card on {handle.id} approved as alice."
    assert result.stop_reason == "done"
    assert [(r.action, r.approver) for r in rows if r.by == "person"] == [("allow", "alice")]
