"""Faults over legacy SSE (which rmcp has no server for), for loopwright-mcp's tests.

Usage: fault_server.py   (serves legacy SSE on 127.0.0.1:$PORT)
Tools: echo; slow(ms) sleeps, and logs `cancelled slow` when the client
cancels it; crash() ends the whole server at once. Every call is logged
(`called NAME`) to the file TEST_SERVER_LOG names, if set.
"""
import os

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("py-faults")


def log(line: str) -> None:
    path = os.environ.get("TEST_SERVER_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    log("called echo")
    return text


@server.tool()
async def slow(ms: int) -> str:
    """Sleep for ms milliseconds."""
    log("called slow")
    try:
        await anyio.sleep(ms / 1000)
    except anyio.get_cancelled_exc_class():
        log("cancelled slow")
        raise
    return "done"


@server.tool()
def crash() -> str:
    """End the whole server at once."""
    log("called crash")
    os._exit(1)


if __name__ == "__main__":
    server.run("sse", host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
