"""The README's Strands snippet runs as written (issue 28): the marked block's own text as the
body of a workflow's run method, on the real dev server with a scripted model, replayed with no
check run again. The names the snippet takes as the reader's own are given by the test:
``TemporalAgent`` and two ``@tool`` functions, ``lookup_order`` and ``refund_order``; the model
name ``claude`` is registered with ``StrandsPlugin(models=...)``. With ``policy()`` and no
catalogue the tools are known from their specs: the lookup runs, the refund is asked of a
person, and runs after her signed yes. Runs in ``.venv-strands`` (``dev.py test``)."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest

pytest.importorskip("strands", reason="install the extra: pip install 'duraguard[strands]'")
pytest.importorskip("temporalio.strands_agents")

from temporalio.strands_agents import StrandsPlugin
from temporalio.testing import WorkflowEnvironment

import duraguard
from tests._readme import block

from ._frameworks import connect
from ._readme_runs import APPROVERS, _approve_the_refund, _asked_then_allowed, _module

STRANDS_MODULE = '''
"""The README's Strands snippet as a workflow's body (written by the test)."""
import json
from datetime import timedelta
from typing import Any

from strands import tool
from strands.models import Model
from temporalio import workflow
from temporalio.strands_agents import TemporalAgent as _TemporalAgent

TURNS = [("lookup_order", {{"order_id": "A-7"}}), ("refund_order", {{"order_id": "A-7", "amount": 20.0}})]


class Scripted(Model):
    def update_config(self, **kw: Any) -> None:
        return None

    def get_config(self) -> Any:
        return {{}}

    def structured_output(self, *a: Any, **kw: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, *a: Any, **kw: Any) -> Any:
        made = sum(1 for m in messages for b in m["content"] if "toolResult" in b)
        yield {{"messageStart": {{"role": "assistant"}}}}
        if made < len(TURNS):
            name, args = TURNS[made]
            yield {{"contentBlockStart": {{"start": {{"toolUse": {{"toolUseId": f"c{{made}}", "name": name}}}}}}}}
            yield {{"contentBlockDelta": {{"delta": {{"toolUse": {{"input": json.dumps(args)}}}}}}}}
            yield {{"contentBlockStop": {{}}}}
            yield {{"messageStop": {{"stopReason": "tool_use"}}}}
        else:
            yield {{"contentBlockDelta": {{"delta": {{"text": "Refunded order A-7."}}}}}}
            yield {{"contentBlockStop": {{}}}}
            yield {{"messageStop": {{"stopReason": "end_turn"}}}}


def TemporalAgent(**kw: Any) -> Any:
    """Temporal's, with the test's activity timeout (the reader's own options)."""
    return _TemporalAgent(start_to_close_timeout=timedelta(seconds=30), callback_handler=None, **kw)


@tool
async def lookup_order(order_id: str) -> str:
    """Look up an order by id."""
    return json.dumps({{"order_id": order_id, "amount": 20.0, "status": "delivered"}})


@tool
async def refund_order(order_id: str, amount: float) -> str:
    """Refund an order to the card it was paid with."""
    return json.dumps({{"refunded": amount, "order_id": order_id}})


@workflow.defn
class ReadmeStrands:
    @workflow.run
    async def run(self) -> dict[str, Any]:
{body}
        return {{
            "stop_reason": ran.stop_reason,
            "output": ran.output,
            "verdicts": [(r.tool, r.action, r.by, r.check) for r in ran.verdicts],
        }}
'''


@pytest.mark.parametrize("duraguard_first", [False, True])
async def test_the_strands_snippet_runs_as_written(
    temporal_env: WorkflowEnvironment,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    duraguard_first: bool,
) -> None:
    body = textwrap.indent(block("adapter-strands").text, " " * 8)
    module = _module(tmp_path, monkeypatch, STRANDS_MODULE.format(body=body))
    strands = StrandsPlugin(models={"claude": module.Scripted})
    guard = duraguard.DuraguardPlugin(approvers=APPROVERS)
    plugins = [guard, strands] if duraguard_first else [strands, guard]
    out, audited = await _approve_the_refund(
        connect(temporal_env, plugins), module.ReadmeStrands, f"rs-{uuid.uuid4().hex[:6]}", plugins
    )
    assert (out["stop_reason"], out["output"]) == ("done", "Refunded order A-7.")
    _asked_then_allowed(out["verdicts"])
    _asked_then_allowed(audited)
