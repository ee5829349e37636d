"""A small MCP server on the Python SDK's MCPServer (mcp 2.x), for loopwright-mcp's tests.

Usage: mcp_server.py stdio | sse | streamable-http   (PORT from the environment, default 8000)
"""
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("py-demo", instructions="Python demo server: add and echo.")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run(transport, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
