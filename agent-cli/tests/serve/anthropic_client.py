"""The official `anthropic` package against `loopwright serve --anthropic`.

Usage: anthropic_client.py BASE_URL KEY
"""
import sys

import anthropic
import pydantic

base, key = sys.argv[1], sys.argv[2]
client = anthropic.Anthropic(base_url=base, api_key=key, max_retries=0)
ask = [{"role": "user", "content": "Say hi through the echo tool."}]

models = sorted(m.id for m in client.models.list())
assert models == ["assistant", "broken", "extractor", "sleeper"], models

done = client.messages.create(model="assistant", max_tokens=1024, system="Be brief.", messages=ask)
kinds = [b.type for b in done.content]
assert kinds == ["thinking", "text"], done.content
assert done.content[0].thinking == "Thinking about the echo.", done.content
assert "".join(b.text for b in done.content if b.type == "text") == "The echo said hi.", done.content
assert done.stop_reason == "end_turn", done
assert done.usage.input_tokens > 0 and done.usage.output_tokens > 0, done.usage

with client.messages.stream(model="assistant", max_tokens=1024, messages=ask) as stream:
    streamed = "".join(stream.text_stream)
    final = stream.get_final_message()
assert streamed == "The echo said hi.", streamed
assert [b.type for b in final.content] == kinds, final.content
assert final.stop_reason == "end_turn" and final.usage.output_tokens > 0, final

class City(pydantic.BaseModel):
    city: str
    population: int


# The SDK's own structured output (it sends output_config.format).
parsed = client.messages.parse(
    model="extractor",
    max_tokens=1024,
    messages=[{"role": "user", "content": "The capital of France?"}],
    output_format=City,
)
assert parsed.parsed_output == City(city="Paris", population=2100000), parsed

try:
    client.messages.create(model="no-such-agent", max_tokens=10, messages=ask)
    raise AssertionError("an unknown model was accepted")
except anthropic.NotFoundError as e:
    assert "no-such-agent" in str(e), e

try:
    client.messages.create(
        model="assistant", max_tokens=10, messages=ask, tools=[{"type": "web_search_20250305", "name": "web_search"}]
    )
    raise AssertionError("a server tool was accepted")
except anthropic.BadRequestError as e:
    assert "server tool" in str(e), e

try:
    anthropic.Anthropic(base_url=base, api_key="wrong-key", max_retries=0).models.list()
    raise AssertionError("a wrong key was accepted")
except anthropic.AuthenticationError as e:
    assert "API key" in str(e), e

try:
    with client.messages.stream(model="broken", max_tokens=10, messages=ask) as stream:
        stream.get_final_message()
    raise AssertionError("a failed run streamed no error")
except anthropic.APIError as e:
    assert "the agent's model failed" in str(e), e
try:
    client.messages.create(model="broken", max_tokens=10, messages=ask)
    raise AssertionError("a failed run answered")
except anthropic.InternalServerError as e:
    assert e.status_code == 502, e

print("anthropic ok")
