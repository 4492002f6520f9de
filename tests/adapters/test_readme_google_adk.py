"""The README's Google ADK snippet runs as written (issue 28): the marked block's own text as the
body of a workflow's run method, on the real dev server with a scripted model, replayed with no
check run again, both plugins in either order. The names the snippet takes as the reader's own
are given by the test: ``agent`` (an ADK ``Agent`` whose model is a ``TemporalModel``, with a
lookup tool and a refund tool), ``App`` and ``InMemoryRunner``. With ``policy()`` and no
catalogue the tools are known from their declarations: the lookup runs, the refund is asked of a
person, and runs after her signed yes."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest

pytest.importorskip("google.adk", reason="install the extra: pip install 'duraguard[google-adk]'")
pytest.importorskip("temporalio.google_adk")

from temporalio.google_adk import GoogleAdkPlugin
from temporalio.testing import WorkflowEnvironment

import duraguard
from tests._readme import block

from ._frameworks import connect
from ._readme_runs import APPROVERS, _approve_the_refund, _asked_then_allowed, _module

ADK_MODULE = '''
"""The README's Google ADK snippet as a workflow's body (written by the test)."""
import json
from typing import Any

from google.adk.agents import Agent
from google.adk.apps import App
from google.adk.models import BaseLlm, LLMRegistry
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from temporalio import workflow
from temporalio.google_adk import TemporalModel

TURNS = [("lookup_order", {{"order_id": "A-7"}}), ("refund_order", {{"order_id": "A-7", "amount": 20.0}})]


class Scripted(BaseLlm):
    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"readme-scripted"]

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
        made = sum(1 for c in llm_request.contents for p in c.parts or [] if p.function_response)
        if made < len(TURNS):
            name, args = TURNS[made]
            part = types.Part(function_call=types.FunctionCall(name=name, args=args, id=f"c{{made}}"))
        else:
            part = types.Part(text="Refunded order A-7.")
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=0, candidates_token_count=0, total_token_count=0
        )
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


LLMRegistry.register(Scripted)


async def lookup_order(order_id: str) -> str:
    """Look up an order by id."""
    return json.dumps({{"order_id": order_id, "amount": 20.0, "status": "delivered"}})


async def refund_order(order_id: str, amount: float) -> str:
    """Refund an order to the card it was paid with."""
    return json.dumps({{"refunded": amount, "order_id": order_id}})


@workflow.defn
class ReadmeGoogleAdk:
    @workflow.run
    async def run(self) -> dict[str, Any]:
        agent = Agent(name="support", model=TemporalModel("readme-scripted"), tools=[lookup_order, refund_order])
{body}
        return {{
            "stop_reason": ran.stop_reason,
            "output": ran.output,
            "verdicts": [(r.tool, r.action, r.by, r.check) for r in ran.verdicts],
        }}
'''


@pytest.mark.parametrize("duraguard_first", [False, True])
async def test_the_google_adk_snippet_runs_as_written(
    temporal_env: WorkflowEnvironment,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    duraguard_first: bool,
) -> None:
    body = textwrap.indent(block("adapter-google-adk").text, " " * 8)
    module = _module(tmp_path, monkeypatch, ADK_MODULE.format(body=body))
    guard = duraguard.DuraguardPlugin(approvers=APPROVERS)
    plugins = [guard, GoogleAdkPlugin()] if duraguard_first else [GoogleAdkPlugin(), guard]
    out, audited = await _approve_the_refund(
        connect(temporal_env, plugins), module.ReadmeGoogleAdk, f"ra-{uuid.uuid4().hex[:6]}",
        plugins,
    )  # fmt: skip
    assert (out["stop_reason"], out["output"]) == ("done", "Refunded order A-7.")
    _asked_then_allowed(out["verdicts"])
    _asked_then_allowed(audited)
