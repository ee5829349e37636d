"""An MCP server with resources on the Python SDK's MCPServer (mcp 2.x), for loopwright-mcp's tests.

Usage: resource_server.py [clash]   (stdio)
Resources: memo://note (text), memo://pixel.png (a 1x1 PNG, image/png),
memo://data.bin (bytes, application/octet-stream). With `clash`, the server
also has a tool of its own named `read_resource`, which must win over the
client's resource tool of the same name.
"""
import base64
import sys

from mcp.server.mcpserver import MCPServer

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

server = MCPServer("py-resources")


@server.resource("memo://note", mime_type="text/plain", description="A short note.")
def note() -> str:
    return "a note from python"


@server.resource("memo://pixel.png", mime_type="image/png", description="One pixel.")
def pixel() -> bytes:
    return PIXEL


@server.resource("memo://data.bin", mime_type="application/octet-stream")
def data() -> bytes:
    return bytes(range(10))


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


if "clash" in sys.argv[1:]:

    @server.tool()
    def read_resource(uri: str) -> str:
        """The server's own tool named read_resource."""
        return f"the server's own read_resource: {uri}"


if __name__ == "__main__":
    server.run("stdio")
