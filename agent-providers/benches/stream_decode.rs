#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! Stream decoding throughput per provider: recorded streams (the fixtures in
//! tests/fixtures, from the production APIs) with
//! their content deltas repeated to about [`TARGET_BYTES`], framed as each
//! provider frames them, fed in [`CHUNK`]-byte pieces through
//! `loopwright_providers::decode::decode_stream` (the framing and decoder each
//! model's `stream` uses): bytes in, `ModelEvent`s out.
//!
//! The floor is `serde_json::from_str::<Value>` over the same payload lines,
//! without framing or decoding. Both report throughput in payload bytes, so
//! their times compare directly. Run with `cargo bench --bench stream_decode`.

use std::path::PathBuf;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use loopwright_providers::decode::{WireFormat, decode_stream};
use serde_json::Value;

/// About this much payload per decoded stream: a few MB, as the issue asks.
const TARGET_BYTES: usize = 4 * 1024 * 1024;
/// Bytes per chunk handed to the decoder: a typical TLS record.
const CHUNK: usize = 16 * 1024;

/// One provider's recorded stream, expanded.
struct Case {
    name: &'static str,
    format: WireFormat,
    /// Payload lines (JSON), in order.
    lines: Vec<String>,
}

fn fixture(path: &str) -> Vec<String> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .lines()
        .map(str::to_owned)
        .collect()
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or(Value::Null)
}

/// Keep the lines before the first repeatable one, the repeatable run
/// (repeated until the payload reaches the target), and the lines after it.
fn expand(lines: &[String], repeatable: impl Fn(&Value) -> bool) -> Vec<String> {
    let marks: Vec<bool> = lines.iter().map(|l| repeatable(&json(l))).collect();
    let first = marks.iter().position(|m| *m).unwrap_or(0);
    let last = marks.iter().rposition(|m| *m).unwrap_or(first);
    let body: Vec<&String> = lines[first..=last].iter().collect();
    let body_len: usize = body.iter().map(|l| l.len()).sum::<usize>().max(1);
    let mut out: Vec<String> = lines[..first].to_vec();
    for _ in 0..(TARGET_BYTES / body_len).max(1) {
        out.extend(body.iter().map(|l| (*l).clone()));
    }
    out.extend_from_slice(&lines[last + 1..]);
    out
}

fn cases() -> Vec<Case> {
    let chat = fixture("openai-chat/openai-text.chunks.txt");
    let responses: Vec<String> = fixture("openai-responses/openai-reasoning-calculator-3-calls.chunks.txt")
        .into_iter()
        .scan(false, |done, line| {
            // The file holds four responses; the first one is one stream.
            let keep = !*done;
            *done |= json(&line)["type"] == "response.completed";
            Some((keep, line))
        })
        .filter_map(|(keep, line)| keep.then_some(line))
        .collect();
    // Ollama has no recorded stream: its NDJSON lines (the shape of its
    // /api/chat docs and of tests/ollama.rs), one per token of the recorded
    // OpenAI answer, so token sizes are real.
    let ollama_line = |content: &str, done: bool| {
        serde_json::json!({"model": "qwen3", "created_at": "2025-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": content}, "done": done})
        .to_string()
    };
    let ollama: Vec<String> = chat
        .iter()
        .filter_map(|l| {
            json(l)["choices"][0]["delta"]["content"]
                .as_str()
                .map(|t| ollama_line(t, false))
        })
        .chain(std::iter::once(ollama_line("", true)))
        .collect();
    vec![
        Case {
            name: "ollama",
            format: WireFormat::Ollama,
            lines: expand(&ollama, |v| v["done"] == false),
        },
        Case {
            name: "openai_chat",
            format: WireFormat::OpenAiChat,
            lines: expand(&chat, |v| {
                v["choices"][0]["finish_reason"].is_null() && v["choices"][0]["delta"]["content"].is_string()
            }),
        },
        Case {
            name: "openai_responses",
            format: WireFormat::OpenAiResponses,
            lines: expand(&responses, |v| {
                v["type"] == "response.reasoning_summary_text.delta"
            }),
        },
        Case {
            name: "anthropic",
            format: WireFormat::Anthropic,
            lines: expand(&fixture("anthropic/anthropic-text.chunks.txt"), |v| {
                v["type"] == "content_block_delta"
            }),
        },
        Case {
            name: "gemini",
            format: WireFormat::Gemini,
            lines: expand(&fixture("gemini/google-text.chunks.txt"), |v| {
                v["candidates"][0]["finishReason"].is_null()
            }),
        },
    ]
}

/// The body as the provider sends it (see the fixtures' README for framing).
fn framed(case: &Case) -> Vec<u8> {
    let mut out = String::new();
    for line in &case.lines {
        match case.format {
            WireFormat::OpenAiResponses | WireFormat::Anthropic => {
                let kind = json(line)["type"].as_str().unwrap_or_default().to_owned();
                out.push_str(&format!("event: {kind}\ndata: {line}\n\n"));
            }
            WireFormat::Gemini => out.push_str(&format!("data: {line}\r\n\r\n")),
            WireFormat::Ollama => out.push_str(&format!("{line}\n")),
            _ => out.push_str(&format!("data: {line}\n\n")),
        }
    }
    if case.format == WireFormat::OpenAiChat {
        out.push_str("data: [DONE]\n\n");
    }
    out.into_bytes()
}

/// Frame a whole body only (SSE or NDJSON, no decoding); the number of frames.
async fn frame_only(format: WireFormat, chunks: &[Bytes]) -> usize {
    let owned: Vec<Result<Bytes, loopwright_core::ModelError>> = chunks.iter().cloned().map(Ok).collect();
    let body = futures::stream::iter(owned).boxed();
    let frames = match format {
        WireFormat::Ollama => loopwright_providers::sse::ndjson_frames(body),
        _ => loopwright_providers::sse::sse_frames(body),
    };
    frames.count().await
}

/// Decode a whole body; the number of events (an error fails the bench).
async fn decode(format: WireFormat, chunks: &[Bytes]) -> usize {
    // Bytes clones share the buffers; the stream must own its items.
    let owned: Vec<Result<Bytes, loopwright_core::ModelError>> = chunks.iter().cloned().map(Ok).collect();
    let body = futures::stream::iter(owned).boxed();
    let mut events = decode_stream(format, body);
    let mut n = 0;
    while let Some(event) = events.next().await {
        if let Err(e) = event {
            panic!("decoding failed: {e}");
        }
        n += 1;
    }
    n
}

fn bench_decode(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    let mut group = c.benchmark_group("stream_decode");
    group.sample_size(20);
    for case in cases() {
        let payload: usize = case.lines.iter().map(String::len).sum();
        let body = framed(&case);
        let chunks: Vec<Bytes> = body.chunks(CHUNK).map(Bytes::copy_from_slice).collect();
        let events = rt.block_on(decode(case.format, &chunks));
        println!(
            "{}: {} lines, payload {} bytes, framed {} bytes, {events} events",
            case.name,
            case.lines.len(),
            payload,
            body.len()
        );
        group.throughput(Throughput::Bytes(payload as u64));
        group.bench_with_input(BenchmarkId::new("decode", case.name), &chunks, |b, chunks| {
            b.to_async(&rt).iter(|| decode(case.format, chunks));
        });
        group.bench_with_input(
            BenchmarkId::new("framing_only", case.name),
            &chunks,
            |b, chunks| {
                b.to_async(&rt).iter(|| frame_only(case.format, chunks));
            },
        );
        group.bench_with_input(
            BenchmarkId::new("serde_json_floor", case.name),
            &case.lines,
            |b, lines| {
                b.iter(|| {
                    lines
                        .iter()
                        .map(|l| serde_json::from_str::<Value>(l).map(|_| 1).unwrap_or(0))
                        .sum::<usize>()
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench_decode);
criterion_main!(benches);
