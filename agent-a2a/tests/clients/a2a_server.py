"""A remote A2A agent made with A2A's official Python SDK (a2a-sdk, pinned in
tests-deps/python/clients), for the loopwright-a2a tests to call.

python a2a_server.py STREAMING MARKS_DIR
    STREAMING: "stream" (the card says it streams) or "poll" (it does not).
    Listens on a free port of 127.0.0.1 and prints {"url": ...} on one line.

The agent, by the message's text:
    "delete X"  asks for approval (input-required, "Approve deleting X?");
                the next message's data part {"approve": true} completes it
                with "Deleted X.", {"approve": false, "reason": R} with
                "Kept X: R."
    "slow"      works for a minute; cancelled, it writes MARKS_DIR/cancelled
    "deny"      fails the task ("No access to that.")
    else        completes with "Echo: TEXT" (and the context's earlier
                messages, counted: "(turn N)").
Its card is at /.well-known/agent-card.json; /elsewhere/.well-known/
agent-card.json is a card whose endpoint is on another origin.
"""
import asyncio
import json
import os
import socket
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from a2a.helpers import get_data_parts, get_message_text, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState
from google.protobuf.json_format import MessageToDict

STREAMING, MARKS = sys.argv[1] == "stream", sys.argv[2]
turns = {}


class Agent(AgentExecutor):
    async def execute(self, context, queue):
        message, task = context.message, context.current_task
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            updater = TaskUpdater(queue, task.id, task.context_id)
            target = task.metadata["target"]
            answers = [d for d in get_data_parts(message.parts) if isinstance(d, dict)]
            if answers and answers[0].get("approve") is True:
                said = f"Deleted {target}."
            else:
                said = f"Kept {target}: {answers[0].get('reason') if answers else 'no answer'}."
            await updater.add_artifact([new_text_part(said)], name="result")
            await updater.complete()
            return
        text = get_message_text(message)
        fresh = new_task_from_user_message(message)
        if text.startswith("delete "):
            fresh.metadata.update({"target": text[7:]})
        await queue.enqueue_event(fresh)
        updater = TaskUpdater(queue, fresh.id, fresh.context_id)
        if text.startswith("delete "):
            ask = updater.new_agent_message([new_text_part(f"Approve deleting {text[7:]}?")])
            await updater.requires_input(ask)
        elif text == "slow":
            await updater.start_work(updater.new_agent_message([new_text_part("Working.")]))
            await asyncio.sleep(60)
            await updater.complete()
        elif text == "deny":
            await updater.failed(updater.new_agent_message([new_text_part("No access to that.")]))
        else:
            turns[fresh.context_id] = turns.get(fresh.context_id, 0) + 1
            said = f"Echo: {text} (turn {turns[fresh.context_id]})"
            await updater.add_artifact([new_text_part(said)], name="result")
            await updater.complete()

    async def cancel(self, context, queue):
        with open(os.path.join(MARKS, "cancelled"), "a", encoding="utf-8") as f:
            f.write(context.task_id + "\n")
        updater = TaskUpdater(queue, context.task_id, context.context_id)
        await updater.cancel(updater.new_agent_message([new_text_part("Cancelled.")]))


def card(base, endpoint):
    return AgentCard(
        name="clerk", description="Files things away, and asks before deleting.", version="1.0.0",
        supported_interfaces=[AgentInterface(url=endpoint, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=STREAMING, push_notifications=False),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="file", name="file", description="Files a note.", tags=["files"])])


def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait from here on, before the server runs
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    real = card(base, f"{base}/rpc")
    other = MessageToDict(card(base, f"http://localhost:{port}/rpc"))
    handler = DefaultRequestHandler(agent_executor=Agent(), task_store=InMemoryTaskStore(), agent_card=real)
    routes = [Route("/elsewhere/.well-known/agent-card.json", lambda _: JSONResponse(other))]
    routes += create_agent_card_routes(real) + create_jsonrpc_routes(handler, rpc_url="/rpc")
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=routes), log_level="warning"))
    print(json.dumps({"url": base}), flush=True)
    asyncio.run(server.serve(sockets=[sock]))


main()
