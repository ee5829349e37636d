"""Render a chat template as Hugging Face's transformers renders it
(`tokenizer.apply_chat_template(..., tokenize=False)`), to stdout, byte for
byte: the reference the embedded model's minijinja rendering
(agent-providers/src/embedded/template.rs) is compared with.

    render_qwen3.py INPUT.json [--template FILE]

INPUT.json: {"messages": [...], "tools": [...] (optional),
"add_generation_prompt": true|false (default false, as in transformers),
"enable_thinking": true|false (optional; left undefined when absent),
"special_tokens": {...} (optional; default Qwen3's special_tokens_map)}.
The template defaults to qwen3.jinja beside this file.

The environment is transformers' (utils/chat_template_utils.py,
_compile_jinja_template): an ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks and the loopcontrols extension (not its
AssistantTracker, whose {% generation %} tag Qwen3's template has no use
for), `tojson`
as json.dumps(ensure_ascii=False) with its indent/separators/sort_keys
options, and the globals raise_exception and strftime_now; rendered with
messages, tools (None when absent), documents=None,
add_generation_prompt, the tokenizer's special tokens and any other
template arguments (enable_thinking).

Run with tests-deps/python/gguf/.venv/bin/python (jinja2 pinned there).
"""

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = Path(__file__).resolve().parent

# Qwen3-0.6B's tokenizer.special_tokens_map (bos_token and unk_token are
# null there, so transformers passes neither).
QWEN3_SPECIAL_TOKENS = {
    "eos_token": "<|im_end|>",
    "pad_token": "<|endoftext|>",
    "additional_special_tokens": [
        "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
        "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
        "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
    ],
}


def compile_template(text: str) -> jinja2.Template:
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        # transformers' override: Jinja's own tojson escapes HTML characters.
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(text)


def render(template: str, request: dict) -> str:
    kwargs = dict(request.get("special_tokens", QWEN3_SPECIAL_TOKENS))
    if "enable_thinking" in request:
        kwargs["enable_thinking"] = request["enable_thinking"]
    return compile_template(template).render(
        messages=request["messages"],
        tools=request.get("tools"),
        documents=None,
        add_generation_prompt=request.get("add_generation_prompt", False),
        **kwargs,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", type=Path)
    parser.add_argument("--template", type=Path, default=HERE / "qwen3.jinja")
    args = parser.parse_args()
    request = json.loads(args.input.read_text(encoding="utf-8"))
    text = render(args.template.read_text(encoding="utf-8"), request)
    sys.stdout.buffer.write(text.encode("utf-8"))


if __name__ == "__main__":
    main()
