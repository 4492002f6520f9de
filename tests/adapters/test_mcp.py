"""duraguard tools built from a real MCP server's tool definitions: kinds and labels from the
annotations, the policy's verdicts on them, an ``isError`` answer read by the model as a failure,
and one run on the real Temporal dev server through ``guarded_call`` with replay."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp", reason="install the extra: pip install 'duraguard[mcp]'")

import mcp
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

import duraguard
from duraguard.checks.policy import PolicyRegistry, policy
from duraguard.guardrail import Resources
from duraguard.mcp import (
    MCP_TOOL_ERROR,
    OPEN_WORLD_LABEL,
    McpHints,
    list_mcp_tools,
    mcp_tool,
)
from duraguard.testing import CallInput, GuardedCallWorkflow
from tests._harness import make_harness

from ._mcp_server import CALLS, server


def connect() -> Any:
    return mcp.Client(server)


async def _tools() -> dict[str, duraguard.Tool]:
    return {t.name: t for t in await list_mcp_tools(connect)}


async def test_kinds_and_labels_come_from_the_annotations_with_the_specs_defaults() -> None:
    tools = await _tools()
    marks = {n: (t.kind, t.labels, t.approval_required) for n, t in tools.items()}
    assert marks == {
        "get_order": ("read", (), False),
        "fetch_page": ("read", (OPEN_WORLD_LABEL,), False),  # open world by default
        "cancel_order": ("write", (), True),
        # what the far end of an open-world send answers is outside content too
        "post_webhook": ("send", (OPEN_WORLD_LABEL,), False),
        "purge_cache": ("send", (OPEN_WORLD_LABEL,), True),  # no hints: destructive, open world
        "order_history": ("read", (), False),
    }
    assert tools["post_webhook"].meta["mcp"] == {
        "tool": "post_webhook",
        "read_only": False,
        "destructive": False,
        "idempotent": True,
        "open_world": True,
    }
    # The server's input schema and description are the tool's.
    assert tools["get_order"].input_schema["required"] == ["order_id"]
    assert tools["cancel_order"].description == "Cancel an order for good."


def test_a_tool_without_annotations_takes_every_default() -> None:
    bare = mcp.types.Tool(name="x", input_schema={"type": "object"})
    assert McpHints.of(bare) == McpHints(
        read_only=False, destructive=True, idempotent=False, open_world=True
    )


def test_a_read_only_hint_does_not_hide_a_name_that_deletes_or_sends() -> None:
    """The hints are the server's word about itself: a malicious server marks its delete_* and
    send_* tools read-only so nothing asks. Such a tool counts as what its name says, and asks."""
    hint = mcp.types.ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    def built(name: str, description: str = "") -> tuple[str, bool]:
        d = mcp.types.Tool(
            name=name, description=description, input_schema={"type": "object"}, annotations=hint
        )
        t = mcp_tool(d, connect)
        return t.kind, t.approval_required

    assert built("delete_all_files") == ("write", True)
    assert built("send_money") == ("send", True)
    assert built("transfer_funds") == ("write", True)
    assert built("order_history") == ("read", False)  # a noun phrase: the hint stands
    assert built("get_order") == ("read", False)


def test_outside_content_labels_a_closed_world_tool_whose_data_others_write() -> None:
    hint = mcp.types.ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    d = mcp.types.Tool(name="get_ticket", input_schema={"type": "object"}, annotations=hint)
    assert mcp_tool(d, connect).labels == ()
    assert mcp_tool(d, connect, outside_content=True).labels == (OPEN_WORLD_LABEL,)


def test_structured_content_longer_than_the_limit_fails_the_call() -> None:
    from duraguard.mcp import _result

    big = mcp.types.CallToolResult(content=[], structuredContent={"rows": ["x" * 100] * 50})
    with pytest.raises(duraguard.errors.McpToolError, match="structured content"):
        _result("dump", big, 1000)
    assert _result("dump", big, 10_000) == {"rows": ["x" * 100] * 50}


def test_connect_must_be_a_function() -> None:
    bare = mcp.types.Tool(name="x", input_schema={"type": "object"})
    with pytest.raises(duraguard.ConfigurationError, match="takes a function that opens a client"):
        mcp_tool(bare, "http://localhost:8000/mcp")  # type: ignore[arg-type]


async def _policy_action(tools: dict[str, duraguard.Tool], tool: str, args: dict[str, Any]) -> Any:
    resources = Resources(extra={"policy": PolicyRegistry(tools=tools)})
    return await duraguard.evaluate([policy()], args, tool=tool, resources=resources)


async def test_the_policy_asks_about_a_destructive_tool() -> None:
    result = await _policy_action(await _tools(), "cancel_order", {"order_id": "A1"})
    assert result.verdict.action == "approve"
    assert result.verdict.check == "policy.any_other_write"


async def test_the_policy_allows_a_read_only_tool() -> None:
    result = await _policy_action(await _tools(), "get_order", {"order_id": "A1"})
    assert result.verdict.action == "allow"


async def test_an_open_world_tool_with_a_private_url_is_refused_by_the_address_check() -> None:
    args = {"url": "http://169.254.169.254/latest/meta-data/", "body": "hi"}
    result = await _policy_action(await _tools(), "post_webhook", args)
    assert result.verdict.action == "deny"
    assert result.verdict.check == "policy.address"


async def test_an_is_error_answer_is_a_tool_failure_that_is_not_retried() -> None:
    tools = await _tools()
    with pytest.raises(ApplicationError) as info:
        await tools["order_history"].fn(order_id="A9")
    assert info.value.type == MCP_TOOL_ERROR and info.value.non_retryable
    assert "order A9 is locked by an ongoing audit" in str(info.value)
    # A str-returning MCPServer tool declares an output schema: its answer is structured.
    assert await tools["order_history"].fn(order_id="A1") == {
        "result": "A1: placed, paid, delivered"
    }


async def test_a_structured_result_comes_back_as_structured_data() -> None:
    tools = await _tools()
    out = await tools["get_order"].fn(order_id="A1")
    assert out == {"order_id": "A1", "amount": 20.0, "status": "delivered"}


async def test_mcp_tools_on_temporal_through_guarded_call_then_replay(
    temporal_env: WorkflowEnvironment,
) -> None:
    h = await make_harness(temporal_env, tools=list((await _tools()).values()))
    CALLS.clear()
    run = await h.run(
        GuardedCallWorkflow.run,
        CallInput(
            calls=[
                ("get_order", {"order_id": "A1"}),
                ("post_webhook", {"url": "http://10.0.0.7/hook", "body": "refund done"}),
                ("order_history", {"order_id": "A9"}),
            ],
            guardrails=[policy()],
        ),
    )  # the harness replays the history and asserts no guardrail was asked again
    read, send, failed = run.result
    assert (read["ran"], read["action"], read["result"]["status"]) == (True, "allow", "delivered")
    assert (send["ran"], send["action"]) == (False, "deny")
    assert send["result"]["valid"] is False  # the refusal the model reads
    assert failed["ran"] is True
    assert "order A9 is locked by an ongoing audit" in failed["result"]["error"]
    # The refused send never reached the server; the read and the failing read did, once each.
    assert CALLS == [("get_order", {"order_id": "A1"}), ("order_history", {"order_id": "A9"})]
    # Its arguments were judged inside its own step, which refused before calling the server.
    assert [o["ran"] for o in run.activity_outputs("post_webhook")] == [False]


def test_text_content_is_returned_as_text_and_cut_at_the_limit() -> None:
    from mcp.types import CallToolResult, ImageContent, TextContent

    from duraguard.mcp import _result

    long = CallToolResult(content=[TextContent(type="text", text="x" * 50)])
    assert _result("t", long, 60) == "x" * 50
    cut = _result("t", long, 10)
    assert cut.startswith("x" * 10 + "\n[cut: the tool returned 50 characters, 10 kept]")
    mixed = CallToolResult(
        content=[
            TextContent(type="text", text="see"),
            ImageContent(type="image", data="AAAA", mime_type="image/png"),
        ]
    )
    assert _result("t", mixed, 100) == "see\n[image]"
