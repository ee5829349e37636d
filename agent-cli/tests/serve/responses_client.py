"""The official `openai` package's Responses API against `loopwright serve --openai`.

Usage: responses_client.py BASE_URL KEY   (BASE_URL ends in /v1)
Exits non-zero with the failing assertion on any difference.
"""
import sys
import time

import openai
import pydantic

base, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0)
ask = "Say hi through the echo tool."

# Not streamed: the answer, its reasoning as a summary, usage; stored.
done = client.responses.create(model="assistant", input=ask, instructions="Be brief.")
assert done.status == "completed", done
assert done.output_text == "The echo said hi.", done
assert done.model == "assistant" and done.instructions == "Be brief.", done
assert [item.type for item in done.output] == ["reasoning", "message"], done.output
assert done.output[0].summary[0].text == "Thinking about the echo.", done.output
assert done.usage.input_tokens > 0 and done.usage.output_tokens > 0, done.usage
assert done.usage.total_tokens == done.usage.input_tokens + done.usage.output_tokens, done.usage
again = client.responses.retrieve(done.id)
assert again.output_text == "The echo said hi." and again.output == done.output, again

# Streamed, raw: the event types in order, the text from its deltas.
events = list(client.responses.create(model="assistant", input=[{"role": "user", "content": ask}], stream=True))
kinds = [e.type for e in events]
assert kinds[:2] == ["response.created", "response.in_progress"], kinds
assert kinds[-1] == "response.completed", kinds
for kind in [
    "response.output_item.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]:
    assert kind in kinds, (kind, kinds)
assert [e.sequence_number for e in events] == list(range(len(events))), events
text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
reasoning = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
assert (text, reasoning) == ("The echo said hi.", "Thinking about the echo."), (text, reasoning)
final = events[-1].response
assert final.output_text == text and final.usage.total_tokens > 0, final

# The stored stream again, from any sequence number: the same events.
replayed = list(client.responses.retrieve(final.id, stream=True, starting_after=3))
assert [e.sequence_number for e in replayed] == list(range(4, len(events))), replayed
assert [e.type for e in replayed] == kinds[4:], replayed

# The SDK's own accumulator checks that every event fits its snapshot.
with client.responses.stream(model="assistant", input=ask) as stream:
    for _ in stream:
        pass
    accumulated = stream.get_final_response()
assert accumulated.output_text == "The echo said hi.", accumulated

# A previous_response_id chain of three turns (the model server's
# requests are checked by the Rust test).
first = client.responses.create(model="chatter", input="My name is Ada.")
second = client.responses.create(model="chatter", input="I am 36.", previous_response_id=first.id)
third = client.responses.create(model="chatter", input="Who am I?", previous_response_id=second.id)
assert third.previous_response_id == second.id, third
assert (first.output_text, second.output_text, third.output_text) == (
    "Noted, Ada.",
    "Noted, 36.",
    "You are Ada, 36.",
), (first, second, third)

# Background: answered at once, then retrieved until done.
background = client.responses.create(model="assistant", input=ask, background=True)
assert background.background and background.status in ("queued", "in_progress"), background
deadline = time.monotonic() + 20
while background.status in ("queued", "in_progress"):
    assert time.monotonic() < deadline, background
    time.sleep(0.05)
    background = client.responses.retrieve(background.id)
assert background.status == "completed" and background.output_text == "The echo said hi.", background

# Cancel: a background run in a one-minute tool call ends cancelled.
slow = client.responses.create(model="sleeper", input="sleep", background=True)
cancelled = client.responses.cancel(slow.id)
assert cancelled.status == "cancelled", cancelled
assert client.responses.retrieve(slow.id).status == "cancelled"
try:
    client.responses.cancel(slow.id)
    raise AssertionError("an ended response was cancelled again")
except openai.ConflictError as e:
    assert "already ended" in str(e), e


# Structured output: the SDK parses the answer into the model.
class City(pydantic.BaseModel):
    city: str
    population: int


parsed = client.responses.parse(model="extractor", input="The capital of France?", text_format=City)
assert parsed.output_parsed == City(city="Paris", population=2100000), parsed

# Not stored: answered, never retrievable.
unstored = client.responses.create(model="assistant", input=ask, store=False)
assert unstored.output_text == "The echo said hi.", unstored
try:
    client.responses.retrieve(unstored.id)
    raise AssertionError("a response with store=false was stored")
except openai.NotFoundError:
    pass

# Deleted: gone, and its chain with it.
client.responses.delete(first.id)
for call in (
    lambda: client.responses.retrieve(first.id),
    lambda: client.responses.create(model="chatter", input="Again?", previous_response_id=first.id),
    lambda: client.responses.retrieve("resp_nope"),
    lambda: client.responses.cancel("resp_nope"),
):
    try:
        call()
        raise AssertionError("an unknown response was found")
    except openai.NotFoundError as e:
        assert "not found" in str(e), e

try:
    client.responses.create(
        model="assistant",
        input=ask,
        tools=[{"type": "web_search"}],
    )
    raise AssertionError("a hosted tool was accepted")
except openai.BadRequestError as e:
    assert "only function tools" in str(e), e

try:
    client.responses.create(model="no-such-agent", input=ask)
    raise AssertionError("an unknown model was accepted")
except openai.NotFoundError as e:
    assert "no-such-agent" in str(e), e

# A run that fails: a response.failed event naming it, or a raised error.
events = list(client.responses.create(model="broken", input=ask, stream=True))
assert events[-1].type == "response.failed", [e.type for e in events]
assert "the agent's model failed" in events[-1].response.error.message, events[-1]
try:
    client.responses.create(model="broken", input=ask)
    raise AssertionError("a failed run answered")
except openai.InternalServerError as e:
    assert e.status_code == 502 and "the agent's model failed" in str(e), e

print("responses ok")
