"""The README's examples run as printed (issue 25): the headline example on a real dev server,
its model scripted behind an OpenAI-compatible endpoint, and the person's commands against that
run; the scripted-model and plain-Python snippets; and no marked example is left untested (the
marker convention: ``tests/_readme.py``). The tour's commands: ``tests/test_tour.py``."""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import duraguard
from activities import support_tools
from activities.store import list_outbox, list_refunds
from duraguard.audit import audit_rows
from duraguard.testing import AgentInput, AgentWorkflow
from tests._servers import Replayer

from ._harness import parked
from ._readme import ROOT, bash, block, blocks, run_python, scripted_openai

pytestmark = pytest.mark.timeout(180)

BIN = Path(sys.executable).parent
CARD = "4111 1111 1111 1111"


def test_every_runnable_block_of_the_readme_is_run_by_a_test() -> None:
    used: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        used |= set(re.findall(r'block\("([a-z0-9-]+)"\)', path.read_text(encoding="utf-8")))
    names = set(blocks())
    assert names - used == set(), "marked in README.md, run by no test"
    assert {"headline-workflow", "headline-worker", "headline-person", "tour-approve"} <= names


TICKET = "Order A2 (350.00) arrived broken: refund it in full and tell ben@example.com."
TURNS: list[Any] = [
    ("lookup_order", {"order_id": "A2"}),
    (
        "send_email",
        {
            "to": "ben@example.com",
            "subject": "Order A2",
            "body": f"We are refunding your card {CARD}; questions to help@example.com.",
        },
    ),
    ("refund_card", {"order_id": "A2", "amount": 350.0}),
    "Refunded order A2 and told the customer.",
]


async def test_the_headline_example_runs_and_a_person_approves_its_refund(
    temporal_env: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workflow block, as a module of its own (the sandbox imports it again to run it).
    module_name = f"readme_headline_{os.getpid()}"
    (tmp_path / f"{module_name}.py").write_text(block("headline-workflow").text)
    monkeypatch.syspath_prepend(str(tmp_path))
    agent = importlib.import_module(module_name).SupportAgent
    address = temporal_env.client.service_client.config.target_host
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # as `source .venv/bin/activate`
        "TEMPORAL_ADDRESS": address,
    }
    # What a person sets up once: alice's key (the tour's command), her entry, the rule sheet.
    code, out = await bash("duraguard keygen alice --roles manager", tmp_path, env)
    assert code == 0, out
    (tmp_path / "approvers.yaml").write_text(out.split("approvers file:\n\n", 1)[1])
    (tmp_path / "rules.yaml").write_text(block("headline-rules").text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TEMPORAL_ADDRESS", address)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-readme")
    db = tmp_path / "support.db"
    tools = {t.name: t for t in support_tools(db)}
    with scripted_openai(TURNS) as chat:
        monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
        ns = await run_python(
            block("headline-worker").text,
            {"duraguard": duraguard, "SupportAgent": agent, **tools},
            "README.md (headline-worker)",
        )
        client, plugin = ns["client"], ns["plugin"]
        async with ns["worker"]:
            handle = await client.start_workflow(
                agent.run, TICKET, id="support-42", task_queue="support"
            )
            (ask,) = await parked(handle)
            assert (ask.call_id, ask.tool, ask.role) == ("c3", "refund_card", "manager"), (
                ask.asked_by,
                ask.check,
                ask.reason,
                ask.args,
            )
            said = []
            for command in block("headline-person").commands():
                code, out = await bash(command, tmp_path, env)
                assert code == 0, f"{command}:\n{out}"
                said.append(out)
            result = await handle.result()
    assert chat.received[0]["model"] == "gpt-4.1"
    pending, approved, audited = said
    assert re.search(r"support-42\s+c3\s+refund_card", pending), pending
    assert "approve for c3 on support-42: accepted" in approved
    assert re.search(r"2\s+c2\s+send_email\s+tool-args\s+mask\s+pii", audited), audited
    assert re.search(r"c3\s+refund_card\s+tool-args\s+allow\s+person.*alice", audited), audited
    assert result.stop_reason == "done"
    # The email went to the customer, as the model addressed it: pii masked what it carried.
    (email,) = list_outbox(db)
    assert email["to"] == "ben@example.com"
    assert email["body"] == "We are refunding your card [CARD]; questions to [EMAIL]."
    assert [(r["order_id"], r["amount"]) for r in list_refunds(db)] == [("A2", 350.0)]
    # Every verdict is a recorded step: a replay decides nothing again.
    before = plugin.checks_run
    history = await handle.fetch_history()
    await Replayer(workflows=[agent], plugins=[plugin]).replay_workflow(history)
    assert plugin.checks_run == before
    rows = await audit_rows(history, client.data_converter)
    assert ("mask", "pii", "c2") in [(r.action, r.by, r.call_id) for r in rows]


async def test_the_scripted_model_snippet_runs_an_agent_without_a_key(
    temporal_env: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    tools = {t.name: t for t in support_tools(tmp_path / "support.db")}
    ns = await run_python(
        block("scripted-model").text,
        {"duraguard": duraguard, "refund_card": tools["refund_card"]},
        "README.md (scripted-model)",
    )
    config = temporal_env.client.config()
    config["plugins"] = [ns["plugin"]]
    client = type(temporal_env.client)(**config)
    from temporalio.worker import Worker

    from duraguard.checks import schema

    async with Worker(client, task_queue="readme-scripted", workflows=[AgentWorkflow]):
        spec = AgentInput(
            prompt="Refund order A1 (20.00)",
            model="scripted:refund-a1",
            tools=["refund_card"],
            guardrails=[schema()],
        )
        result = await client.execute_workflow(
            AgentWorkflow.run,
            spec,
            id=f"readme-scripted-{os.getpid()}",
            task_queue="readme-scripted",
        )
    assert (result.stop_reason, result.answer) == ("done", "Refunded order A1.")
    assert [(r["order_id"], r["amount"]) for r in list_refunds(tmp_path / "support.db")] == [
        ("A1", 20.0)
    ]


async def test_the_plain_python_snippet_judges_a_value_outside_any_workflow() -> None:
    from duraguard.checks import pii, schema

    ns = await run_python(
        block("plain-python").text.replace("if result.tripped: ...", "tripped = result.tripped"),
        {"duraguard": duraguard, "schema": schema, "pii": pii},
        "README.md (plain-python)",
    )
    assert ns["tripped"] is False and ns["result"].verdict.action == "allow"


SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.M | re.S)
RUNS = re.compile(r"^(?:[A-Z_]+=\S+ )*(python|duraguard)\b")


@pytest.mark.parametrize(
    "readme", sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("samples/*/README.md"))
)
def test_a_samples_commands_run_as_typed_from_an_active_venv(readme: str) -> None:
    """Every `python ...` and `duraguard ...` line of a sample's README comes after
    `source .venv/bin/activate` in its block: typed as printed, it finds duraguard."""
    text = (ROOT / readme).read_text(encoding="utf-8")
    assert ".venv/bin/" not in text.replace("source .venv/bin/activate", "")
    for body in SH_BLOCK.findall(text):
        active = False
        for line in body.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command == "source .venv/bin/activate":
                active = True
            elif RUNS.match(command):
                assert active, f"{readme}: `{command}` before `source .venv/bin/activate`"
