"""A served agent driven by A2A's official Python SDK (a2a-sdk, pinned in
tests-deps/python/clients): the card resolved from the agent's URL, a
message sent (a task that completes), the task read back, a second message
in the same context.

python a2a_client.py AGENT_URL
prints {"card", "sent", "task", "again"} (protobuf messages as JSON) on one
line; exits 1 with the error on stderr.
"""
import asyncio
import json
import sys

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest


def ask(text, message_id, context_id=None):
    message = Message(role=Role.ROLE_USER, parts=[Part(text=text)], message_id=message_id)
    if context_id:
        message.context_id = context_id
    return SendMessageRequest(message=message)


async def sent(client, request):
    responses = [MessageToDict(r) async for r in client.send_message(request)]
    if len(responses) != 1 or "task" not in responses[0]:
        raise SystemExit(f"expected one task, got {responses}")
    return responses[0]["task"]


async def main(url):
    async with httpx.AsyncClient() as http:
        resolved = await A2ACardResolver(http, url).get_agent_card()
    card = MessageToDict(resolved)
    client = await create_client(resolved, client_config=ClientConfig(streaming=False))
    try:
        first = await sent(client, ask("What is the weather in Lisbon?", "m-1"))
        task = MessageToDict(await client.get_task(GetTaskRequest(id=first["id"])))
        again = await sent(client, ask("And tomorrow?", "m-2", first["contextId"]))
    finally:
        await client.close()
    print(json.dumps({"card": card, "sent": first, "task": task, "again": again}))


asyncio.run(main(sys.argv[1]))
