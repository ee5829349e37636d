"""An MCP server on the Python SDK (mcp 2.x) whose tool asks the user, for loopwright-mcp's tests.

`book_table` elicits a guest (name, party size with a default) through the SDK's
resolver markers: on 2026-07-28 the question rides a multi-round-trip
`input_required` result, on 2025-11-25 an `elicitation/create` request.

Usage: elicit_server.py stdio | streamable-http   (PORT from the environment)
"""
import os
import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp.server.mcpserver.resolve import Elicit

server = MCPServer("py-elicit")


class Guest(BaseModel):
    name: str
    party: int = 2


def ask_guest() -> Elicit[Guest]:
    return Elicit("Who is the table for?", Guest)


@server.tool()
def book_table(guest: Annotated[ElicitationResult[Guest], Resolve(ask_guest)], ctx: Context) -> str:
    """Book a table; asks who for."""
    if isinstance(guest, AcceptedElicitation):
        return f"booked for {guest.data.name}, party of {guest.data.party} ({ctx.protocol_version})"
    return f"not booked: {guest.action} ({ctx.protocol_version})"


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run(transport, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
