"""MCP tool calls per second: one session per worker, reused, against a server process per call.

A stdio MCP server (``tests/adapters/_mcp_stdio_server.py``, a Python process of its own) is
called through the duraguard tools ``list_mcp_tools`` builds, ``--calls`` times each way, side by
side in one run:

* **pooled** (``reuse_session=True``, the default): the worker's session pool
  (:mod:`duraguard._mcp_sessions`) connects once, every call after reuses the session (the
  first ``--calls`` include the connect; the same again on the open session);
* **per call** (``reuse_session=False``, what ``duraguard.mcp`` did before): each call enters
  ``connect()``, so the server process is started, initialised and stopped per call.

Prints calls per second each way and the ratio, and how many sessions each opened. Nothing here
asserts a time. Run: ``python benchmarks/mcp_sessions.py [--calls 100] [--per-call 10]`` (the
per-call side defaults to fewer calls: each costs about a second; its rate is per call either
way).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import mcp
from mcp import StdioServerParameters

from duraguard import _mcp_sessions
from duraguard.mcp import mcp_tools

SERVER = Path(__file__).resolve().parents[1] / "tests" / "adapters" / "_mcp_stdio_server.py"
PARAMS = StdioServerParameters(command=sys.executable, args=[str(SERVER)])


def connect() -> Any:
    return mcp.Client(PARAMS)


async def _rate(tool: Any, calls: int) -> tuple[float, set[int]]:
    """Calls per second of ``calls`` calls, and the server processes that answered."""
    pids: set[int] = set()
    started = time.perf_counter()
    for _ in range(calls):
        pids.add((await tool.fn())["pid"])
    return calls / (time.perf_counter() - started), pids


async def measure(calls: int, per_call: int) -> dict[str, Any]:
    """Both ways, side by side: the pooled calls include the one connect."""
    async with connect() as client:
        (whoami,) = [d for d in (await client.list_tools()).tools if d.name == "whoami"]
    (pooled,) = mcp_tools([whoami], connect)
    (fresh,) = mcp_tools([whoami], connect, reuse_session=False)
    pool = _mcp_sessions.pool()
    before = pool.connects
    pooled_rate, pooled_pids = await _rate(pooled, calls)
    opened = pool.connects - before
    warm_rate, _ = await _rate(pooled, calls)  # the same session, already connected
    fresh_rate, fresh_pids = await _rate(fresh, per_call)
    await _mcp_sessions.close_sessions()
    return {
        "pooled_calls": calls,
        "pooled_per_second": pooled_rate,
        "pooled_sessions": opened,
        "pooled_processes": len(pooled_pids),
        "warm_per_second": warm_rate,
        "per_call_calls": per_call,
        "per_call_per_second": fresh_rate,
        "per_call_processes": len(fresh_pids),
        "ratio": pooled_rate / fresh_rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--per-call", type=int, default=10)
    args = parser.parse_args()
    r = asyncio.run(measure(args.calls, args.per_call))
    print(f"stdio MCP server {SERVER.name}, Python {sys.version.split()[0]}")
    print(
        f"pooled   {r['pooled_calls']:4d} calls: {r['pooled_per_second']:8.1f} calls/s "
        f"({r['pooled_sessions']} session, {r['pooled_processes']} server process)"
    )
    print(f"  again on the open session: {r['warm_per_second']:8.1f} calls/s")
    print(
        f"per call {r['per_call_calls']:4d} calls: {r['per_call_per_second']:8.2f} calls/s "
        f"({r['per_call_processes']} server processes)"
    )
    print(
        f"ratio: {r['ratio']:.0f}x (100 calls, the connect included); on the open session: "
        f"{r['warm_per_second'] / r['per_call_per_second']:.0f}x"
    )


if __name__ == "__main__":
    main()
