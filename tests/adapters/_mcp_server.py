"""A real MCP server (the SDK's ``MCPServer``, formerly FastMCP) with one tool per kind of hint.

Run in-process by the tests (``mcp.Client(server)``: the SDK's in-memory transport, no network).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("orders")
CALLS: list[tuple[str, dict[str, Any]]] = []


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def get_order(order_id: str) -> dict[str, Any]:
    """Look up an order (reads this shop's database only)."""
    CALLS.append(("get_order", {"order_id": order_id}))
    return {"order_id": order_id, "amount": 20.0, "status": "delivered"}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def fetch_page(url: str) -> str:
    """Fetch a web page (read-only, but what it returns comes from the open world)."""
    CALLS.append(("fetch_page", {"url": url}))
    return f"<html>page at {url}</html>"


@server.tool(annotations=ToolAnnotations(destructiveHint=True, openWorldHint=False))
def cancel_order(order_id: str) -> str:
    """Cancel an order for good."""
    CALLS.append(("cancel_order", {"order_id": order_id}))
    return f"order {order_id} cancelled"


@server.tool(
    annotations=ToolAnnotations(destructiveHint=False, idempotentHint=True, openWorldHint=True)
)
def post_webhook(url: str, body: str) -> str:
    """Post a message to a webhook."""
    CALLS.append(("post_webhook", {"url": url, "body": body}))
    return "posted"


@server.tool()
def purge_cache(region: str) -> str:
    """No hints at all: the specification's defaults apply."""
    CALLS.append(("purge_cache", {"region": region}))
    return "purged"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def order_history(order_id: str) -> str:
    """The history of an order; order A9 is locked and the server says so with isError."""
    CALLS.append(("order_history", {"order_id": order_id}))
    if order_id == "A9":
        raise ToolError("order A9 is locked by an ongoing audit")
    if "internal-note" in order_id:  # an error carrying what a result would be masked for
        raise ToolError(f"order {order_id} is locked: internal-note: fraud check pending")
    return f"{order_id}: placed, paid, delivered"


if __name__ == "__main__":  # also runnable as a stdio server
    server.run("stdio")
