"""MCP sessions per worker (issue 27, item 6): one session reused by every call, a killed server
reconnected, ``tools/list_changed`` followed (a tool whose definition changed is refused), a
connection per call where asked; and the same through ``guarded_call`` on the real dev server,
replayed with no check run again. The server is a real stdio process
(``_mcp_stdio_server.py``) or the in-process one (``_mcp_server.py``). Calls per second, pooled
against a process per call: ``benchmarks/mcp_sessions.py``."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="install the extra: pip install 'duraguard[mcp]'")

import mcp
from mcp import StdioServerParameters
from temporalio.testing import WorkflowEnvironment

import duraguard
from duraguard import _mcp_sessions
from duraguard.checks.policy import policy
from duraguard.errors import McpToolError
from duraguard.mcp import close_sessions, list_mcp_tools
from duraguard.testing import CallInput, GuardedCallWorkflow
from tests._harness import make_harness

from ._mcp_server import server as in_process

SERVER = Path(__file__).with_name("_mcp_stdio_server.py")


def stdio() -> Any:
    """A connect factory of its own (so a session of its own) for a fresh stdio server."""

    def connect() -> Any:
        return mcp.Client(StdioServerParameters(command=sys.executable, args=[str(SERVER)]))

    return connect


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child that exited but was not yet reaped by its parent still has a pid: read its state.
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split(") ", 1)[-1].startswith("Z"))


async def _tools(connect: Any, **options: Any) -> dict[str, duraguard.Tool]:
    return {t.name: t for t in await list_mcp_tools(connect, **options)}


async def test_one_session_serves_100_calls_and_concurrent_first_calls_share_its_connect() -> None:
    opened: list[int] = []

    def connect() -> Any:
        opened.append(1)
        return mcp.Client(in_process)

    tools = await _tools(connect)
    opened.clear()  # the listing's own connection
    first = await asyncio.gather(*(tools["get_order"].fn(order_id=f"A{i}") for i in range(5)))
    rest = [await tools["get_order"].fn(order_id=f"B{i}") for i in range(95)]
    assert [r["order_id"] for r in first] == [f"A{i}" for i in range(5)]
    assert len(rest) == 95 and rest[-1]["order_id"] == "B94"
    assert len(opened) == 1


async def test_a_stdio_server_answers_every_call_from_one_process() -> None:
    tools = await _tools(stdio())
    pids = {(await tools["whoami"].fn())["pid"] for _ in range(20)}
    assert len(pids) == 1
    await close_sessions()


async def test_a_killed_server_is_reconnected_by_the_next_call() -> None:
    tools = await _tools(stdio())
    (pid,) = {(await tools["whoami"].fn())["pid"] for _ in range(3)}
    os.kill(pid, signal.SIGKILL)  # the server process this test's session started
    await asyncio.sleep(0.2)
    try:
        after = (await tools["whoami"].fn())["pid"]  # the dead session fails this call...
    except Exception as err:
        assert not isinstance(err, McpToolError)  # a transport failure: Temporal retries it
        after = (await tools["whoami"].fn())["pid"]  # ...and the next one reconnects
    assert after != pid
    assert (await tools["whoami"].fn())["pid"] == after
    await close_sessions()


async def test_a_tool_whose_definition_changed_after_list_changed_is_refused() -> None:
    tools = await _tools(stdio())
    assert (await tools["get_order"].fn(order_id="A1"))["status"] == "delivered"
    await tools["reconfigure"].fn()  # get_order becomes destructive; the server says so
    refused: Exception | None = None
    for _ in range(50):  # the notification reaches the session soon after the call returns
        try:
            await tools["get_order"].fn(order_id="A1")
        except McpToolError as err:
            refused = err
            break
        await asyncio.sleep(0.05)
    assert refused is not None
    assert "changed on its server since this worker listed it" in str(refused)
    assert refused.non_retryable
    assert "pid" in await tools["whoami"].fn()  # the unchanged tools still run
    await close_sessions()


async def test_reuse_session_false_connects_per_call() -> None:
    opened: list[int] = []

    def connect() -> Any:
        opened.append(1)
        return mcp.Client(in_process)

    tools = await _tools(connect, reuse_session=False)
    opened.clear()
    for i in range(3):
        await tools["get_order"].fn(order_id=f"A{i}")
    assert len(opened) == 3


async def test_a_server_that_cannot_start_fails_the_call_and_a_later_call_tries_again() -> None:
    def broken() -> Any:
        return mcp.Client(StdioServerParameters(command="/nonexistent/mcp-server"))

    ok = await list_mcp_tools(lambda: mcp.Client(in_process))
    (tool,) = [t for t in duraguard.mcp.mcp_tools([_def(ok, "get_order")], broken)]
    for _ in range(2):
        with pytest.raises(Exception) as info:
            await tool.fn(order_id="A1")
        assert not isinstance(info.value, McpToolError)
    assert _mcp_sessions.pool().sessions.get(id(broken)) is None  # nothing dead kept


def _def(tools: list[duraguard.Tool], name: str) -> Any:
    t = next(x for x in tools if x.name == name)
    return mcp.types.Tool(name=name, description=t.description, input_schema=t.input_schema)


async def test_mcp_tools_share_one_session_across_guarded_calls_on_temporal_then_replay(
    temporal_env: WorkflowEnvironment,
) -> None:
    connect = stdio()
    tools = await list_mcp_tools(connect)
    h = await make_harness(temporal_env, tools=tools)
    run = await h.run(
        GuardedCallWorkflow.run,
        CallInput(
            calls=[("whoami", {}), ("get_order", {"order_id": "A1"}), ("whoami", {})],
            guardrails=[policy()],
        ),
    )  # the harness replays the history and asserts no guardrail was asked again
    first, order, last = run.result
    assert (first["ran"], order["ran"], last["ran"]) == (True, True, True)
    assert first["result"]["pid"] == last["result"]["pid"]  # one server process
    # The worker stopped: its session closed with it, and the server process ended.
    assert id(connect) not in _mcp_sessions.pool().sessions
    assert not _alive(first["result"]["pid"])
