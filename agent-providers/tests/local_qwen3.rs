//! The embedded model on a Qwen3-architecture file made here
//! (tests/models/make_qwen3.py: Qwen3-0.6B's layout scaled down, random
//! weights, a byte-level BPE vocabulary with Qwen3's added tokens, and
//! Qwen3's own chat template): it loads and generates through the code that
//! runs Qwen3-0.6B, and the template renders byte for byte as Hugging
//! Face's jinja2 renders it (tests/models/render_qwen3.py, run here).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use loopwright_providers::LocalModel;

use crate::local::answer;
use loopwright_types::{
    ContentPart, FinishReason, Message, ModelRequest, Reasoning, Role, ToolCall, ToolDefinition,
    ToolOutputPart, ToolResult,
};
use serde_json::Value;

fn models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/models")
}

/// The pinned environment scripts/test.sh installs (gguf, jinja2).
fn python() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/python/gguf/.venv/bin/python")
}

fn run_python(args: &[&std::ffi::OsStr]) -> String {
    let out = std::process::Command::new(python()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A Qwen3 file written into `dir`.
fn make_qwen3(dir: &Path) -> PathBuf {
    let file = dir.join("qwen3-tiny.gguf");
    run_python(&[models().join("make_qwen3.py").as_os_str(), file.as_os_str()]);
    file
}

/// A Qwen3 file in Q4_K_M's mix, as the default model's: K-quant matrices
/// (Q4_K, the embedding Q6_K), written by candle from a wide Q8_0 file.
fn make_qwen3_q4k(dir: &Path) -> PathBuf {
    use candle_core::Device;
    use candle_core::quantized::{GgmlDType, QTensor, gguf_file};
    let wide = dir.join("qwen3-wide.gguf");
    run_python(&[
        models().join("make_qwen3.py").as_os_str(),
        wide.as_os_str(),
        "--wide".as_ref(),
    ]);
    let mut file = std::fs::File::open(&wide).unwrap();
    let content = gguf_file::Content::read(&mut file).unwrap();
    let mut tensors = Vec::new();
    for name in content.tensor_infos.keys() {
        let tensor = content.tensor(&mut file, name, &Device::Cpu).unwrap();
        let tensor = match tensor.dtype() {
            GgmlDType::Q8_0 => {
                let kind = if name == "token_embd.weight" {
                    GgmlDType::Q6K
                } else {
                    GgmlDType::Q4K
                };
                QTensor::quantize(&tensor.dequantize(&Device::Cpu).unwrap(), kind).unwrap()
            }
            _ => tensor,
        };
        tensors.push((name.as_str(), tensor));
    }
    let metadata: Vec<_> = content.metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensors: Vec<_> = tensors.iter().map(|(n, t)| (*n, t)).collect();
    let out = dir.join("qwen3-q4k.gguf");
    gguf_file::write(&mut std::fs::File::create(&out).unwrap(), &metadata, &tensors).unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_qwen3_file_made_here_loads_and_generates_through_the_same_path() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(
        LocalModel::load(make_qwen3(dir.path()))
            .await
            .unwrap()
            .with_seed(7),
    );
    assert_eq!(model.context_length(), 40_960);
    // Qwen3's added tokens are one token each; text is byte-level BPE.
    let im_start = model.tokens("<|im_start|>").unwrap();
    assert_eq!(im_start.len(), 1);
    assert!(model.tokens("héllo wörld").unwrap().len() < "héllo wörld".len());
    let mut request = ModelRequest::new(vec![Message::user("Say something.")]);
    request.max_output_tokens = Some(24);
    let (first, _, reason, (input, output)) = answer(&model, request.clone()).await;
    let (second, ..) = answer(&model, request.clone()).await;
    // Random weights say nothing sensible, but the same thing each time.
    assert_eq!(first, second);
    assert!(
        matches!(reason, FinishReason::Length | FinishReason::Stop),
        "{reason:?}"
    );
    assert!(output > 0 && output <= 24, "{output}");
    assert_eq!(
        input as usize,
        model.count_tokens(&model.prompt(&request).unwrap()).unwrap()
    );
    assert!(
        model
            .prompt(&request)
            .unwrap()
            .ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_models_k_quants_run_on_the_kernels_this_cpu_allows() {
    // Q4_K is where candle uses AVX-512 VNNI and AMX tiles when the CPU has
    // them and Linux grants them (these machines do: llama.cpp built for
    // the native CPU died here with an illegal instruction); the same
    // generation twice, on whichever kernels were picked at run time.
    let dir = tempfile::tempdir().unwrap();
    let model = LocalModel::load(make_qwen3_q4k(dir.path())).await.unwrap();
    let mut request = ModelRequest::new(vec![Message::user("Say something long.")]);
    request.max_output_tokens = Some(16);
    let (first, _, _, (_, output)) = answer(&model, request.clone()).await;
    let (second, ..) = answer(&model, request).await;
    assert_eq!(first, second);
    assert!(output > 0, "{output}");
}

/// A request as the loop would send the conversation of a chat file
/// (chats/NAME.json, in the OpenAI shape Hugging Face's templates read).
fn request_of(chat: &Value) -> ModelRequest {
    let mut system = None;
    let mut messages = Vec::new();
    for m in chat["messages"].as_array().unwrap() {
        let text = m["content"].as_str().unwrap_or_default().to_owned();
        match m["role"].as_str().unwrap() {
            "system" => system = Some(text),
            "user" => messages.push(Message::user(text)),
            "assistant" => {
                let mut parts = Vec::new();
                if let Some(reasoning) = m["reasoning_content"].as_str() {
                    parts.push(ContentPart::Reasoning(Reasoning {
                        text: reasoning.to_owned(),
                        signature: None,
                        provider_data: None,
                    }));
                }
                if !text.is_empty() {
                    parts.push(ContentPart::text(text));
                }
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    parts.push(ContentPart::ToolCall(ToolCall::new(
                        call["id"].as_str().unwrap(),
                        call["function"]["name"].as_str().unwrap(),
                        call["function"]["arguments"].clone(),
                    )));
                }
                messages.push(Message::new(Role::Assistant, parts));
            }
            "tool" => messages.push(Message::new(
                Role::Tool,
                vec![ContentPart::ToolResult(ToolResult {
                    call_id: m["tool_call_id"].as_str().unwrap().to_owned(),
                    parts: vec![ToolOutputPart::text(text)],
                    is_error: false,
                })],
            )),
            other => panic!("role {other}"),
        }
    }
    let mut request = ModelRequest::new(messages);
    request.system = system;
    request.tools = Arc::new(
        chat["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let f = &t["function"];
                ToolDefinition::new(
                    f["name"].as_str().unwrap(),
                    f["description"].as_str().unwrap(),
                    f["parameters"].clone(),
                )
            })
            .collect(),
    );
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_qwen3_template_renders_as_hugging_faces_jinja2() {
    let dir = tempfile::tempdir().unwrap();
    let model = LocalModel::load(make_qwen3(dir.path())).await.unwrap();
    let chats = models().join("chats");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&chats)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    for chat in names {
        let reference = run_python(&[models().join("render_qwen3.py").as_os_str(), chat.as_os_str()]);
        let parsed: Value = serde_json::from_str(&std::fs::read_to_string(&chat).unwrap()).unwrap();
        let ours = model.prompt(&request_of(&parsed)).unwrap();
        assert_eq!(ours, reference, "{}", chat.display());
    }
}
