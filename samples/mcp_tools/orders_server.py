"""A small MCP server over stdio: the shop's order tools, each with the hints MCP defines.

The sample starts it as a subprocess (``mcp.Client(StdioServerParameters(...))``): once to list
its tools, once for the worker's session, which every call then shares.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("orders")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def get_order(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id, "amount": 20.0, "status": "delivered"}


@server.tool(annotations=ToolAnnotations(destructiveHint=True, openWorldHint=False))
def cancel_order(order_id: str) -> str:
    """Cancel an order for good."""
    return f"order {order_id} cancelled"


@server.tool(annotations=ToolAnnotations(destructiveHint=False, openWorldHint=True))
def post_webhook(url: str, body: str) -> str:
    """Post a message to a webhook."""
    return "posted"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def order_history(order_id: str) -> str:
    """The history of an order."""
    if order_id == "A9":
        raise ToolError("order A9 is locked by an ongoing audit")
    return f"{order_id}: placed, paid, delivered"


if __name__ == "__main__":
    server.run("stdio")
