"""The README's "Already have an agent?" snippets run as written (issue 27): each marked block's
own text, on the real dev server, with scripted models, replayed with no check run again.

The names a snippet takes as the reader's own are given by the test and nothing else: for the
OpenAI Agents SDK, ``agent`` (an agent with a read tool and a refund tool; the block's lines run
as the body of a workflow's run method); for Pydantic AI, ``Agent``, ``TemporalDurability``,
``workflow`` and ``model`` (the block is the workflow's module, its tools added after it); for
MCP, ``DuraguardPlugin`` (the block runs where ``orders_server.py`` is, with ``python`` on the
path). With ``policy()`` and no catalogue each framework's tools are known from their
definitions: the lookup runs, the refund is asked of a person, and runs after her signed yes.
"""

from __future__ import annotations

import os
import sys
import textwrap
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("agents", reason="install the extra: pip install 'duraguard[openai-agents]'")
pytest.importorskip("pydantic_ai", reason="install the extra: pip install 'duraguard[pydantic-ai]'")
pytest.importorskip("mcp", reason="install the extra: pip install 'duraguard[mcp]'")

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import duraguard
from duraguard.checks import policy
from duraguard.testing import CallInput, GuardedCallWorkflow
from tests._readme import ROOT, block, run_python

from ._frameworks import connect
from ._readme_runs import APPROVERS, _approve_the_refund, _asked_then_allowed, _module

pytestmark = pytest.mark.timeout(180)


OPENAI_MODULE = '''
"""The README's OpenAI Agents SDK snippet as a workflow's body (written by the test)."""
import json
from typing import Any

from agents import Agent, Model, ModelResponse, Usage, function_tool
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from temporalio import workflow

TURNS = [("lookup_order", {{"order_id": "A-7"}}), ("refund_order", {{"order_id": "A-7", "amount": 20.0}})]


class Scripted(Model):
    async def get_response(self, system_instructions: Any, input: Any, *a: Any, **kw: Any) -> ModelResponse:
        made = sum(1 for i in input if isinstance(i, dict) and i.get("type") == "function_call")
        if made < len(TURNS):
            name, args = TURNS[made]
            out: Any = [ResponseFunctionToolCall(arguments=json.dumps(args), call_id=f"c{{made}}",
                        name=name, type="function_call", id=f"f{{made}}", status="completed")]
        else:
            text = ResponseOutputText(text="Refunded order A-7.", annotations=[], type="output_text")
            out = [ResponseOutputMessage(id="m", content=[text], role="assistant",
                   status="completed", type="message")]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *a: Any, **kw: Any) -> Any:
        raise NotImplementedError


@function_tool
async def lookup_order(order_id: str) -> str:
    """Look up an order by id."""
    return json.dumps({{"order_id": order_id, "amount": 20.0, "status": "delivered"}})


@function_tool
async def refund_order(order_id: str, amount: float) -> str:
    """Refund an order to the card it was paid with."""
    return json.dumps({{"refunded": amount, "order_id": order_id}})


@workflow.defn
class ReadmeOpenAI:
    @workflow.run
    async def run(self) -> dict[str, Any]:
        agent = Agent(name="support", model="scripted", tools=[lookup_order, refund_order])
{body}
        return {{
            "stop_reason": ran.stop_reason,
            "output": ran.output,
            "verdicts": [(r.tool, r.action, r.by, r.check) for r in ran.verdicts],
        }}
'''

PYDANTIC_PREFIX = '''
"""The README's Pydantic AI snippet as a workflow's module (written by the test)."""
import json

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel
from temporalio import workflow

TURNS = [("lookup_order", {"order_id": "A-7"}), ("refund_order", {"order_id": "A-7", "amount": 20.0})]


def scripted(messages, info):
    made = sum(1 for m in messages if isinstance(m, ModelRequest) for p in m.parts
               if isinstance(p, ToolReturnPart))
    if made < len(TURNS):
        name, args = TURNS[made]
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"c{made}")])
    return ModelResponse(parts=[TextPart("Refunded order A-7.")])


model = FunctionModel(scripted, model_name="scripted")
'''

PYDANTIC_SUFFIX = '''

@agent.tool_plain
async def lookup_order(order_id: str) -> str:
    """Look up an order by id."""
    return json.dumps({"order_id": order_id, "amount": 20.0, "status": "delivered"})


@agent.tool_plain
async def refund_order(order_id: str, amount: float) -> str:
    """Refund an order to the card it was paid with."""
    return json.dumps({"refunded": amount, "order_id": order_id})
'''


async def test_the_openai_agents_snippet_runs_as_written(
    temporal_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
    from temporalio.openai_agents.testing import TestModelProvider

    body = textwrap.indent(block("adapter-openai").text, " " * 8)
    module = _module(tmp_path, monkeypatch, OPENAI_MODULE.format(body=body))
    plugins = [
        OpenAIAgentsPlugin(
            model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
            model_provider=TestModelProvider(module.Scripted()),
        ),
        duraguard.DuraguardPlugin(approvers=APPROVERS),
    ]
    out, audited = await _approve_the_refund(
        connect(temporal_env, plugins), module.ReadmeOpenAI, f"ro-{uuid.uuid4().hex[:6]}", plugins
    )
    assert (out["stop_reason"], out["output"]) == ("done", "Refunded order A-7.")
    _asked_then_allowed(out["verdicts"])
    _asked_then_allowed(audited)


async def test_the_pydantic_ai_snippet_runs_as_written(
    temporal_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin

    module = _module(
        tmp_path, monkeypatch, PYDANTIC_PREFIX + block("adapter-pydantic").text + PYDANTIC_SUFFIX
    )
    guard = duraguard.DuraguardPlugin(approvers=APPROVERS)
    plugins = [PydanticAIPlugin(), guard]
    out, audited = await _approve_the_refund(
        connect(temporal_env, plugins),
        module.Support,
        f"rp-{uuid.uuid4().hex[:6]}",
        plugins,
        "Refund order A-7",
    )
    assert out == "Refunded order A-7."
    _asked_then_allowed(audited)


async def test_the_mcp_snippet_runs_as_written(
    temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT / "samples" / "mcp_tools")  # where orders_server.py is
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    ns = await run_python(
        block("adapter-mcp").text,
        {"DuraguardPlugin": duraguard.DuraguardPlugin},
        "README.md (adapter-mcp)",
    )
    plugin = ns["plugin"]
    client = connect(temporal_env, [plugin])
    queue = f"rm-{uuid.uuid4().hex[:6]}"
    async with Worker(client, task_queue=queue, workflows=[GuardedCallWorkflow]):
        result = await client.execute_workflow(
            GuardedCallWorkflow.run,
            CallInput(
                calls=[("get_order", {"order_id": "A1"}), ("get_order", {"order_id": "A2"})],
                guardrails=[policy()],
            ),
            id=f"readme-mcp-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            execution_timeout=timedelta(seconds=60),
        )
    assert [(r["ran"], r["action"], r["result"]["order_id"]) for r in result] == [
        (True, "allow", "A1"), (True, "allow", "A2"),
    ]  # fmt: skip
    await duraguard.mcp.close_sessions()
