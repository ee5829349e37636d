"""Write a small Qwen3 GGUF file: Qwen3-0.6B's layout scaled down, random
weights, a byte-level BPE vocabulary and Qwen3's own chat template.

    make_qwen3.py OUT.gguf [--seed N] [--f32] [--full | --wide]

It is what `candle_transformers::models::quantized_qwen3` and candle's
`TokenizerFromGguf` read from a real Qwen3 file (llama.cpp's converter's
keys and tensor names), so the embedded model loads it and generates
through the same code as for Qwen3-0.6B. The same seed writes the same
bytes.

Shapes (Qwen3-0.6B -> here): 28 -> 2 layers, hidden 1024 -> 64,
16/8 -> 4/2 query/key-value heads (grouped 2:1 as there), head_dim 128 -> 32
(so heads x head_dim = 2 x hidden, as there: q is 128 wide, o maps 128 back
to 64), ffn 3072 -> 192 (3 x hidden), tied embeddings (no output.weight:
candle falls back to token_embd.weight, as for the real file), rope base
1e6, rms eps 1e-6, context 40960. Matrices are Q8_0 (Qwen's own GGUF of
0.6B is Q8_0; every row length is a multiple of the 32-wide block), norms
F32, as llama.cpp writes them; --f32 writes every tensor as F32. --full
writes Qwen3-0.6B's own shapes (vocabulary padded to its 151936 rows;
about 630 MB, in Qwen's own Q8_0 format): the benches' stand-in for the
real file, which cannot be fetched where only package registries are
reachable.

Run with tests-deps/python/gguf/.venv/bin/python (requirements there).
"""

import argparse
import re
from collections import Counter
from pathlib import Path

import numpy as np

import gguf

HERE = Path(__file__).resolve().parent

# Qwen3-0.6B scaled down, and (--full) as it is.
TINY = {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 32, "ffn": 192, "vocab": None}
# Rows of 256 (Q4_K's block) and 16-row tiles, for the K-quant kernels.
WIDE = {"layers": 2, "hidden": 256, "heads": 4, "kv_heads": 2, "head_dim": 64, "ffn": 768, "vocab": None}
FULL = {"layers": 28, "hidden": 1024, "heads": 16, "kv_heads": 8, "head_dim": 128, "ffn": 3072, "vocab": 151936}
CONTEXT = 40960
ROPE_BASE = 1_000_000.0
RMS_EPS = 1e-6

# Qwen3's added tokens, in their order (ids 151643.. in the real vocabulary).
ADDED = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
]
# Those tokenizer_config.json marks "special": true; llama.cpp's converter
# makes them, and every other token that looks like <|...|>, CONTROL, and
# the rest of the added tokens USER_DEFINED.
SPECIAL = set(ADDED[:14])
MERGES = 200
# The real vocabulary (151669 tokens) is padded to the embedding's 151936
# rows with [PADn] tokens, UNUSED; here to a multiple of 64.
PAD_TO = 64

# The text the merges are learned from: chat and tool-calling English,
# JSON, and the template's own words, so prompts tokenize to fewer tokens
# than bytes.
CORPUS = """
You are a helpful assistant. What is the capital of France? The capital of France is Paris.
Hello! How can I help you today? What is the weather like in Paris today? It is sunny.
What is 2+2? The answer is 4. Please answer in one word. Thank you.
You may call one or more functions to assist with the user query.
You are provided with function signatures within <tools></tools> XML tags:
For each function call, return a json object with function name and arguments within XML tags:
{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
"parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}},
"required": ["city"]}}}
{"name": "get_weather", "arguments": {"city": "Paris"}}
{"temperature": 21, "unit": "celsius", "condition": "sunny"}
The user asked about the weather, so I should call the tool and then answer with the result.
system
user
assistant
tool
think
"""

# llama.cpp's and Qwen2's pre-tokenizer, in ASCII terms (Python's re has
# no \p{L}); only used to learn merges, the Rust side splits with its own.
WORDS = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table, in its order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def learn_merges(byte_chars: dict[int, str], count: int) -> list[tuple[str, str]]:
    """Byte-pair merges of CORPUS, most frequent pair first (ties by text)."""
    words = Counter(
        tuple(byte_chars[b] for b in piece.encode("utf-8")) for piece in WORDS.findall(CORPUS)
    )
    merges = []
    while len(merges) < count:
        pairs = Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        joined = best[0] + best[1]
        merged = Counter()
        for word, n in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(joined)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    return merges


def vocabulary(size: int | None) -> tuple[list[str], list[int], list[str]]:
    byte_chars = bytes_to_unicode()
    tokens = list(byte_chars.values())
    merges = learn_merges(byte_chars, MERGES)
    for a, b in merges:
        if a + b not in tokens:
            tokens.append(a + b)
    types = [gguf.TokenType.NORMAL] * len(tokens)
    for token in ADDED:
        tokens.append(token)
        looks_special = token.startswith("<|") and token.endswith("|>")
        types.append(gguf.TokenType.CONTROL if token in SPECIAL or looks_special else gguf.TokenType.USER_DEFINED)
    while len(tokens) % PAD_TO or (size is not None and len(tokens) < size):
        tokens.append(f"[PAD{len(tokens)}]")
        types.append(gguf.TokenType.UNUSED)
    return tokens, [int(t) for t in types], [f"{a} {b}" for a, b in merges]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--f32", action="store_true", help="every tensor F32 (default: matrices Q8_0)")
    parser.add_argument("--full", action="store_true", help="Qwen3-0.6B's own shapes (default: scaled down)")
    parser.add_argument("--wide", action="store_true", help="scaled down, rows a multiple of 256 (for Q4_K)")
    args = parser.parse_args()
    shape = FULL if args.full else WIDE if args.wide else TINY
    LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = (
        shape[k] for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn")
    )

    tokens, types, merges = vocabulary(shape["vocab"])
    template = (HERE / "qwen3.jinja").read_text(encoding="utf-8")
    rng = np.random.default_rng(args.seed)
    matrix_type = gguf.GGMLQuantizationType.F32 if args.f32 else gguf.GGMLQuantizationType.Q8_0

    w = gguf.GGUFWriter(str(args.out), "qwen3")
    w.add_type("model")
    w.add_name("Qwen3 0.6B Layout Test")
    w.add_size_label("0.6B" if args.full else "tiny")
    w.add_license("apache-2.0")
    w.add_context_length(CONTEXT)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_freq_base(ROPE_BASE)
    w.add_layer_norm_rms_eps(RMS_EPS)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if args.f32 else gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_eos_token_id(tokens.index("<|im_end|>"))
    w.add_pad_token_id(tokens.index("<|endoftext|>"))
    w.add_bos_token_id(tokens.index("<|endoftext|>"))
    w.add_add_bos_token(False)
    w.add_chat_template(template)

    def matrix(name: str, rows: int, cols: int) -> None:
        data = rng.normal(0.0, 0.02, size=(rows, cols)).astype(np.float32)
        if matrix_type == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, gguf.quantize(data, matrix_type), raw_dtype=matrix_type)

    def norm(name: str, size: int) -> None:
        w.add_tensor(name, (1.0 + rng.normal(0.0, 0.1, size=size)).astype(np.float32))

    # numpy shapes are (rows, row length); GGUF stores them reversed.
    matrix("token_embd.weight", len(tokens), HIDDEN)
    for i in range(LAYERS):
        blk = f"blk.{i}"
        norm(f"{blk}.attn_norm.weight", HIDDEN)
        matrix(f"{blk}.attn_q.weight", HEADS * HEAD_DIM, HIDDEN)
        matrix(f"{blk}.attn_k.weight", KV_HEADS * HEAD_DIM, HIDDEN)
        matrix(f"{blk}.attn_v.weight", KV_HEADS * HEAD_DIM, HIDDEN)
        norm(f"{blk}.attn_q_norm.weight", HEAD_DIM)
        norm(f"{blk}.attn_k_norm.weight", HEAD_DIM)
        matrix(f"{blk}.attn_output.weight", HIDDEN, HEADS * HEAD_DIM)
        norm(f"{blk}.ffn_norm.weight", HIDDEN)
        matrix(f"{blk}.ffn_gate.weight", FFN, HIDDEN)
        matrix(f"{blk}.ffn_up.weight", FFN, HIDDEN)
        matrix(f"{blk}.ffn_down.weight", HIDDEN, FFN)
    norm("output_norm.weight", HIDDEN)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
