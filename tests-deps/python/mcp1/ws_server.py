"""An MCP server over WebSocket (mcp 1.x, whose server side still has the
transport; it always accepts with the `mcp` subprotocol, so a client that did
not offer it rejects the handshake).

Usage: ws_server.py   (PORT from the environment, default 8000; endpoint ws://127.0.0.1:PORT/ws)
"""
import os

import uvicorn
from mcp.server.fastmcp import FastMCP
from mcp.server.websocket import websocket_server
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute

mcp = FastMCP("py-ws-demo", instructions="Python WebSocket demo server: add and echo.")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


async def endpoint(websocket):
    async with websocket_server(websocket.scope, websocket.receive, websocket.send) as (read, write):
        server = mcp._mcp_server  # the low-level server FastMCP wraps
        await server.run(read, write, server.create_initialization_options())


app = Starlette(routes=[WebSocketRoute("/ws", endpoint)])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")), log_level="warning")
