"""A small MCP server on the Python SDK (mcp 1.x FastMCP) for agent-mcp's tests.

Tools: add(a: int, b: int) -> int, and echo(text: str) -> str.

Usage: mcp_test_server.py [stdio | sse | streamable-http | websocket]   (default stdio)

HTTP transports bind 127.0.0.1 on $PORT (default 8000; PORT=0 picks a free port)
and print "listening on <port>" to stderr once the socket accepts connections:
  sse              GET http://127.0.0.1:PORT/sse, whose `endpoint` event names
                   /messages/?session_id=<hex> for the client's POSTs
  streamable-http  http://127.0.0.1:PORT/mcp
  websocket        ws://127.0.0.1:PORT/ws, subprotocol `mcp` (mcp 1.x only;
                   the server answers every handshake with that subprotocol)
The Host header must be 127.0.0.1:PORT, localhost:PORT or [::1]:PORT (FastMCP's
DNS-rebinding protection, on by default for a loopback host): others get 421.
"""
import os
import sys
import warnings

import uvicorn
from mcp.server.fastmcp import FastMCP
from mcp.server.websocket import websocket_server
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute

mcp = FastMCP("py-test-server", instructions="Python test server: add and echo.", log_level="WARNING")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


async def ws_endpoint(websocket):
    with warnings.catch_warnings():  # the transport is deprecated (gone in mcp 2.x)
        warnings.simplefilter("ignore", DeprecationWarning)
        transport = websocket_server(websocket.scope, websocket.receive, websocket.send,
                                     security_settings=mcp.settings.transport_security)
    async with transport as (read, write):
        server = mcp._mcp_server  # the low-level server FastMCP wraps
        await server.run(read, write, server.create_initialization_options())


class Server(uvicorn.Server):
    async def startup(self, sockets=None):
        await super().startup(sockets)
        if not self.should_exit:
            port = self.servers[0].sockets[0].getsockname()[1]
            print(f"listening on {port}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        mcp.run("stdio")
        sys.exit()
    apps = {
        "sse": mcp.sse_app,
        "streamable-http": mcp.streamable_http_app,
        "websocket": lambda: Starlette(routes=[WebSocketRoute("/ws", ws_endpoint)]),
    }
    if transport not in apps:
        sys.exit(f"unknown transport {transport!r}: use stdio, sse, streamable-http or websocket")
    config = uvicorn.Config(apps[transport](), host="127.0.0.1", port=int(os.environ.get("PORT", "8000")),
                            log_level="warning", timeout_graceful_shutdown=1)
    Server(config).run()
