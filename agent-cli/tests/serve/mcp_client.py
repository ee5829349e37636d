"""The MCP Python SDK's client against `loopwright serve --mcp-http` or
`--mcp-stdio`.

Usage: mcp_client.py http LOG URL KEY
       mcp_client.py stdio LOG COMMAND ARG...

LOG is the log file of the MCP server the agents use (`TEST_SERVER_LOG`).
"""
import pathlib
import sys

import anyio
import jsonschema
from mcp import Client, StdioServerParameters


async def main() -> None:
    log = pathlib.Path(sys.argv[2])
    if sys.argv[1] == "http":
        import httpx2

        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {sys.argv[4]}"}, timeout=60)
        target = streamable_http_client(sys.argv[3], http_client=http)
    else:
        target = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:])
    async with Client(target) as client:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert sorted(tools) == ["assistant", "broken", "extractor", "sleeper"], sorted(tools)
        assert tools["assistant"].description == "Says hi through the echo tool.", tools["assistant"]
        assert tools["assistant"].input_schema["required"] == ["prompt"], tools["assistant"].input_schema
        schema = tools["extractor"].output_schema
        assert schema and schema["properties"]["population"]["type"] == "integer", schema

        found = await client.call_tool("extractor", {"prompt": "The capital of France?"})
        assert not found.is_error, found
        jsonschema.validate(found.structured_content, schema)
        assert found.structured_content == {"city": "Paris", "population": 2100000}, found

        failed = await client.call_tool("broken", {"prompt": "x"})
        assert failed.is_error and "did not complete" in failed.content[0].text, failed

        notes = []

        async def note(progress, total, message):
            notes.append(message)

        said = await client.call_tool("assistant", {"prompt": "hi"}, progress_callback=note)
        assert not said.is_error and said.content[0].text == "The echo said hi.", said
        assert notes == ["calling test__echo", "test__echo done"], notes

        # Cancelled once its tool call is under way: the client sends
        # notifications/cancelled, which cancels the run and so the MCP call
        # it made (a minute's sleep): the MCP server logs that, and this
        # client waits for it with the session still open, so nothing but
        # the notification can have caused it.
        def logged(start: str) -> bool:
            return log.exists() and any(l.startswith(start) for l in log.read_text().splitlines())

        async def until_logged(start: str) -> None:
            with anyio.fail_after(30):
                while not logged(start):
                    await anyio.sleep(0.02)

        assert not logged("cancelled slow"), "no call was cancelled yet"
        calling = anyio.Event()

        async def slow_note(progress, total, message):
            if message == "calling test__slow":
                calling.set()

        async with anyio.create_task_group() as group:

            async def call() -> None:
                await client.call_tool("sleeper", {"prompt": "sleep"}, progress_callback=slow_note)

            group.start_soon(call)
            with anyio.fail_after(30):
                await calling.wait()
            # The MCP server is in the sleep.
            await until_logged("called slow")
            group.cancel_scope.cancel()

        await until_logged("cancelled slow")
        # The session still works after a cancellation.
        again = await client.call_tool("extractor", {"prompt": "Again?"})
        assert again.structured_content["city"] == "Paris", again
    print("mcp ok")


anyio.run(main)
