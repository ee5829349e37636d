"""A served agent driven by A2A's official Python SDK (a2a-sdk, pinned in
tests-deps/python/clients).

python a2a_client.py basic AGENT_URL
    the card resolved from the agent's URL, a message sent (a task that
    completes), the task read back, a second message in the same context;
    prints {"card", "sent", "task", "again"}.
python a2a_client.py tasks AGENT_URL {jsonrpc|rest}
    over that binding: a streamed message; a task started without waiting,
    subscribed to, the connection cut, subscribed to again and cancelled;
    a task that asks for approval answered by a data part; the tasks
    listed; prints {"streamed", "slow", "cut", "resubscribed", "cancelled",
    "asked", "answered", "listed"}.

Protobuf messages are printed as JSON, on one line; exits 1 with the error
on stderr.
"""
import asyncio
import json
import sys
import uuid

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory, create_client
from a2a.helpers import new_data_part, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
)
from a2a.utils.constants import TransportProtocol


def message(*parts, task_id="", context_id=""):
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=list(parts),
                   task_id=task_id, context_id=context_id)


def ask(text, context_id=""):
    return SendMessageRequest(message=message(new_text_part(text), context_id=context_id))


async def sent(client, request):
    responses = [MessageToDict(r) async for r in client.send_message(request)]
    if len(responses) != 1 or "task" not in responses[0]:
        raise SystemExit(f"expected one task, got {responses}")
    return responses[0]["task"]


async def basic(url):
    async with httpx.AsyncClient() as http:
        resolved = await A2ACardResolver(http, url).get_agent_card()
    card = MessageToDict(resolved)
    client = await create_client(resolved, client_config=ClientConfig(streaming=False))
    try:
        first = await sent(client, ask("What is the weather in Lisbon?"))
        task = MessageToDict(await client.get_task(GetTaskRequest(id=first["id"])))
        again = await sent(client, ask("And tomorrow?", first["contextId"]))
    finally:
        await client.close()
    return {"card": card, "sent": first, "task": task, "again": again}


async def connect(url, binding, streaming):
    protocol = TransportProtocol.HTTP_JSON if binding == "rest" else TransportProtocol.JSONRPC
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=[protocol],
                          use_client_preference=True)
    return await ClientFactory(config).create_from_url(url)


async def events(stream, keep=None):
    """The stream's events as JSON, all of them or the first `keep`."""
    out = []
    async for event in stream:
        out.append(MessageToDict(event))
        if keep is not None and len(out) == keep:
            break
    return out


async def tasks(url, binding):
    blocking = await connect(url, binding, streaming=False)
    streaming = await connect(url, binding, streaming=True)
    out = {}
    try:
        out["streamed"] = await events(streaming.send_message(ask("What is the weather in Lisbon?")))
        # Started without waiting (its model never answers), then followed.
        later = SendMessageRequest(message=message(new_text_part("Write a long report.")),
                                   configuration=SendMessageConfiguration(return_immediately=True))
        slow = await sent(blocking, later)
        out["slow"] = slow
        # Cut after the first event; a new subscription picks the task up.
        out["cut"] = await events(streaming.subscribe(SubscribeToTaskRequest(id=slow["id"])), keep=1)
        follow = asyncio.create_task(events(streaming.subscribe(SubscribeToTaskRequest(id=slow["id"]))))
        await asyncio.sleep(0.3)
        out["cancelled"] = MessageToDict(await blocking.cancel_task(CancelTaskRequest(id=slow["id"])))
        out["resubscribed"] = await asyncio.wait_for(follow, 20)
        # A tool call waiting for approval, answered by the next message.
        asked = await sent(blocking, ask("What is the weather in Paris?"))
        out["asked"] = asked
        answer = message(new_data_part({"approve": True}), task_id=asked["id"],
                         context_id=asked["contextId"])
        out["answered"] = await events(streaming.send_message(SendMessageRequest(message=answer)))
        listed = await blocking.list_tasks(ListTasksRequest(page_size=10, include_artifacts=True))
        out["listed"] = MessageToDict(listed)
        out["got"] = MessageToDict(await blocking.get_task(GetTaskRequest(id=asked["id"])))
    finally:
        await blocking.close()
        await streaming.close()
    return out


async def main(mode, url, *rest):
    result = await (basic(url) if mode == "basic" else tasks(url, *rest))
    print(json.dumps(result))


asyncio.run(main(*sys.argv[1:]))
