"""The official `openai` package against `loopwright serve --openai`.

Usage: openai_client.py BASE_URL KEY   (BASE_URL ends in /v1)
Exits non-zero with the failing assertion on any difference.
"""
import sys

import openai
import pydantic

base, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0)
ask = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi through the echo tool."}]

models = sorted(m.id for m in client.models.list())
assert models == ["assistant", "broken", "extractor", "sleeper"], models

done = client.chat.completions.create(model="assistant", messages=ask)
choice = done.choices[0]
assert choice.message.content == "The echo said hi.", done
assert choice.finish_reason == "stop", done
assert done.usage.prompt_tokens > 0 and done.usage.completion_tokens > 0, done.usage
assert done.model == "assistant", done

text, reasoning, finish, usage = "", "", None, None
stream = client.chat.completions.create(
    model="assistant", messages=ask, stream=True, stream_options={"include_usage": True}
)
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage
    for c in chunk.choices:
        text += c.delta.content or ""
        reasoning += (c.delta.model_extra or {}).get("reasoning_content") or ""
        finish = c.finish_reason or finish
assert text == "The echo said hi.", text
assert reasoning == "Thinking about the echo.", reasoning
assert finish == "stop", finish
assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens > 0, usage


class City(pydantic.BaseModel):
    city: str
    population: int


parsed = client.chat.completions.parse(
    model="extractor", messages=[{"role": "user", "content": "The capital of France?"}], response_format=City
)
assert parsed.choices[0].message.parsed == City(city="Paris", population=2100000), parsed

try:
    client.chat.completions.create(model="no-such-agent", messages=ask)
    raise AssertionError("an unknown model was accepted")
except openai.NotFoundError as e:
    assert "no-such-agent" in str(e) and "assistant" in str(e), e

try:
    client.chat.completions.create(
        model="assistant",
        messages=ask,
        tools=[{"type": "function", "function": {"name": "f g", "parameters": {"type": "object"}}}],
    )
    raise AssertionError("a tool named with a space was accepted")
except openai.BadRequestError as e:
    assert 'tools[0] ("f g")' in str(e), e

try:
    openai.OpenAI(base_url=base, api_key="wrong-key", max_retries=0).models.list()
    raise AssertionError("a wrong key was accepted")
except openai.AuthenticationError as e:
    assert "API key" in str(e), e

# A run that fails: an error the SDK raises, streamed or not, never a
# silently short answer.
try:
    for _ in client.chat.completions.create(model="broken", messages=ask, stream=True):
        pass
    raise AssertionError("a failed run streamed no error")
except openai.APIError as e:
    assert "the agent's model failed" in str(e), e
try:
    client.chat.completions.create(model="broken", messages=ask)
    raise AssertionError("a failed run answered")
except openai.InternalServerError as e:
    assert e.status_code == 502 and "the agent's model failed" in str(e), e

print("openai ok")
