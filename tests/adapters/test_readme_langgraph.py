"""The README's LangGraph snippet (``adapter-langgraph``) runs as written, on the real dev server,
replayed with no check run again.

The names the snippet takes as the reader's own are given by the test and nothing else:
``workflow``, ``call_model`` (the model node: a scripted model that looks order A-7 up, then
refunds it), ``route`` (an async ``tools_condition``) and the tools ``lookup_order`` and
``refund_order``; the block is the rest of the workflow's module. With ``policy()`` and no
catalogue the tools are known from their definitions: the lookup runs, the refund is asked of
a person, and runs after her signed yes.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

pytest.importorskip("temporalio.langgraph", reason="pip install 'duraguard[langgraph]'")

from temporalio.langgraph import LangGraphPlugin
from temporalio.testing import WorkflowEnvironment

import duraguard
from tests._readme import block

from ._frameworks import connect
from .test_readme_adapters import APPROVERS, _approve_the_refund, _asked_then_allowed, _module

pytestmark = pytest.mark.timeout(180)

PREFIX = '''
"""The README's LangGraph snippet as a workflow's module (written by the test)."""
import json

from langchain_core.messages import AIMessage, ToolMessage, convert_to_messages
from langchain_core.tools import tool
from langgraph.prebuilt import tools_condition
from temporalio import workflow

TURNS = [("lookup_order", {"order_id": "A-7"}), ("refund_order", {"order_id": "A-7", "amount": 20.0})]


async def call_model(state):
    made = sum(1 for m in convert_to_messages(state["messages"]) if isinstance(m, ToolMessage))
    if made < len(TURNS):
        name, args = TURNS[made]
        return {"messages": [AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{made}"}])]}
    return {"messages": [AIMessage("Refunded order A-7.")]}


async def route(state):
    return tools_condition(state)


@tool
async def lookup_order(order_id: str) -> str:
    """Look up an order by id."""
    return json.dumps({"order_id": order_id, "amount": 20.0, "status": "delivered"})


@tool
async def refund_order(order_id: str, amount: float) -> str:
    """Refund an order to the card it was paid with."""
    return json.dumps({"refunded": amount, "order_id": order_id})
'''


async def test_the_langgraph_snippet_runs_as_written(
    temporal_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module(tmp_path, monkeypatch, PREFIX + block("adapter-langgraph").text)
    plugins = [
        LangGraphPlugin(graphs={"support": module.builder}),
        duraguard.DuraguardPlugin(approvers=APPROVERS),
    ]
    out, audited = await _approve_the_refund(
        connect(temporal_env, plugins),
        module.Support,
        f"rl-{uuid.uuid4().hex[:6]}",
        plugins,
        "Refund order A-7",
    )
    assert out == "Refunded order A-7."
    _asked_then_allowed(audited)
