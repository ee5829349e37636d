"""Client tools on the served surfaces, with the official clients:

  client_tools.py chat BASE_URL     the `openai` package: a completion that
                                    ends with the client's tool call, the
                                    tool's result sent back, the answer;
                                    once whole, once streamed
  client_tools.py agents BASE_URL   the OpenAI Agents SDK: an agent whose
                                    model is the served agent (through Chat
                                    Completions) and which has a function
                                    tool of its own
  client_tools.py responses BASE_URL  the `openai` package's Responses API:
                                    a response ending with the function
                                    call, continued with previous_response_id
  client_tools.py agents-responses BASE_URL  the Agents SDK on its default
                                    model, the Responses API (it replays
                                    the input, no previous_response_id)

  client_tools.py anthropic BASE_URL  the `anthropic` package: a message
                                    ending with the tool_use block, the
                                    tool_result sent back; whole and
                                    streamed

BASE_URL ends in /v1 (for anthropic: the address alone). Prints "client tools ok"; exits non-zero with the
failing assertion on any difference.
"""
import asyncio
import json
import sys

import openai

mode, base = sys.argv[1], sys.argv[2]
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_location",
        "description": "The user's city, from the device.",
        "parameters": {"type": "object", "properties": {"precise": {"type": "boolean"}}},
    },
}]
ASK = [{"role": "user", "content": "What is the weather where I am?"}]


def chat():
    client = openai.OpenAI(base_url=base, api_key="unused", max_retries=0)
    # Whole: the completion ends with the client's call alone (the
    # agent's own weather tool ran on the server).
    first = client.chat.completions.create(model="assistant", messages=ASK, tools=TOOLS)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls", first
    calls = choice.message.tool_calls
    assert [c.function.name for c in calls] == ["get_location"], calls
    assert json.loads(calls[0].function.arguments) == {"precise": True}, calls
    answered = ASK + [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": calls[0].id, "content": "Lisbon"},
    ]
    second = client.chat.completions.create(model="assistant", messages=answered, tools=TOOLS)
    assert second.choices[0].message.content == "Sunny in Lisbon, where you are.", second
    assert second.choices[0].finish_reason == "stop", second

    # A result for a call nobody made: a 400 that says which.
    try:
        client.chat.completions.create(
            model="assistant",
            messages=answered[:-1] + [{"role": "tool", "tool_call_id": "call_x", "content": "?"}],
            tools=TOOLS,
        )
        raise AssertionError("a result for a call nobody made was accepted")
    except openai.BadRequestError as e:
        assert "call_x" in str(e), e

    # Streamed: the call comes as tool_calls deltas.
    stream = client.chat.completions.create(model="assistant", messages=ASK, tools=TOOLS, stream=True)
    ids, names, args, finish = [], [], "", None
    for chunk in stream:
        for c in chunk.choices:
            for call in c.delta.tool_calls or []:
                if call.id:
                    ids.append(call.id)
                if call.function and call.function.name:
                    names.append(call.function.name)
                args += (call.function.arguments or "") if call.function else ""
            finish = c.finish_reason or finish
    assert names == ["get_location"] and finish == "tool_calls", (names, finish)
    assert json.loads(args) == {"precise": True}, args
    streamed = ASK + [
        {"role": "assistant", "tool_calls": [
            {"id": ids[0], "type": "function", "function": {"name": "get_location", "arguments": args}}]},
        {"role": "tool", "tool_call_id": ids[0], "content": "Lisbon"},
    ]
    text = ""
    for chunk in client.chat.completions.create(
        model="assistant", messages=streamed, tools=TOOLS, stream=True
    ):
        for c in chunk.choices:
            text += c.delta.content or ""
    assert text == "Sunny in Lisbon, where you are.", text


async def agents():
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)
    asked = []

    @function_tool
    def get_location(precise: bool = False) -> str:
        """The user's city, from the device."""
        asked.append(precise)
        return "Lisbon"

    client = openai.AsyncOpenAI(base_url=base, api_key="unused", max_retries=0)
    agent = Agent(
        name="front",
        instructions="Help the user.",
        model=OpenAIChatCompletionsModel(model="assistant", openai_client=client),
        tools=[get_location],
    )
    result = await Runner.run(agent, "What is the weather where I am?")
    assert result.final_output == "Sunny in Lisbon, where you are.", result.final_output
    assert asked == [True], asked


RESPONSE_TOOLS = [{
    "type": "function",
    "name": "get_location",
    "description": "The user's city, from the device.",
    "parameters": {"type": "object", "properties": {"precise": {"type": "boolean"}}},
}]


def responses():
    client = openai.OpenAI(base_url=base, api_key="unused", max_retries=0)
    first = client.responses.create(model="assistant", input="What is the weather where I am?", tools=RESPONSE_TOOLS)
    assert first.status == "completed", first
    calls = [item for item in first.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["get_location"], first.output
    assert json.loads(calls[0].arguments) == {"precise": True}, calls
    second = client.responses.create(
        model="assistant",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "Lisbon"}],
        tools=RESPONSE_TOOLS,
    )
    assert second.output_text == "Sunny in Lisbon, where you are.", second
    # Both are stored, and read back alike.
    again = client.responses.retrieve(first.id)
    assert [i.type for i in again.output] == ["function_call"], again
    # The same calls answered again: the run went on already.
    try:
        client.responses.create(
            model="assistant",
            previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "Lisbon"}],
        )
        raise AssertionError("a continued response was continued again")
    except openai.APIStatusError as e:
        assert e.status_code == 409 and "only a paused run" in str(e), e


async def agents_responses():
    from agents import Agent, Runner, function_tool, set_default_openai_client, set_tracing_disabled

    set_tracing_disabled(True)
    set_default_openai_client(openai.AsyncOpenAI(base_url=base, api_key="unused", max_retries=0))
    asked = []

    @function_tool
    def get_location(precise: bool = False) -> str:
        """The user's city, from the device."""
        asked.append(precise)
        return "Lisbon"

    agent = Agent(name="front", instructions="Help the user.", model="assistant", tools=[get_location])
    result = await Runner.run(agent, "What is the weather where I am?")
    assert result.final_output == "Sunny in Lisbon, where you are.", result.final_output
    assert asked == [True], asked


def anthropic_messages():
    import anthropic

    client = anthropic.Anthropic(base_url=base, api_key="unused", max_retries=0)
    tools = [{
        "name": "get_location",
        "description": "The user's city, from the device.",
        "input_schema": {"type": "object", "properties": {"precise": {"type": "boolean"}}},
    }]
    for streamed in (False, True):
        if streamed:
            with client.messages.stream(model="assistant", max_tokens=200, messages=ASK, tools=tools) as s:
                first = s.get_final_message()
        else:
            first = client.messages.create(model="assistant", max_tokens=200, messages=ASK, tools=tools)
        assert first.stop_reason == "tool_use", first
        uses = [b for b in first.content if b.type == "tool_use"]
        assert [u.name for u in uses] == ["get_location"] and uses[0].input == {"precise": True}, first
        answered = ASK + [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "Lisbon"}]},
        ]
        if streamed:
            with client.messages.stream(model="assistant", max_tokens=200, messages=answered, tools=tools) as s:
                second = s.get_final_message()
        else:
            second = client.messages.create(model="assistant", max_tokens=200, messages=answered, tools=tools)
        text = "".join(b.text for b in second.content if b.type == "text")
        assert text == "Sunny in Lisbon, where you are." and second.stop_reason == "end_turn", second
    # A result for a call nobody made: a 400 that says which.
    try:
        client.messages.create(
            model="assistant",
            max_tokens=200,
            messages=ASK + [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x", "name": "get_location", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "?"}]},
            ],
            tools=tools,
        )
        raise AssertionError("a result for a call nobody made was accepted")
    except anthropic.BadRequestError as e:
        assert "toolu_x" in str(e), e


if mode == "chat":
    chat()
elif mode == "agents":
    asyncio.run(agents())
elif mode == "anthropic":
    anthropic_messages()
elif mode == "responses":
    responses()
elif mode == "agents-responses":
    asyncio.run(agents_responses())
else:
    raise SystemExit(f"unknown mode {mode}")
print("client tools ok")
